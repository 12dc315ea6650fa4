//! Retrieval evaluation (the paper's table per configuration, the alpha sweep of every
//! fused method, breakdowns by topic and target length for every configuration, failed
//! questions, TREC run files, per-query target ranks) and the abstention sweep.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use crate::core::abstention::{SweepRow, best, grid, sweep};
use crate::core::fusion::alpha_grid;
use crate::core::metrics::{MeanMetrics, Qrel};
use crate::core::per_query::per_query;
use crate::core::question::{EvalConfig, FailedQuestion, MissingTargets, Question};
use crate::core::retrieval::{
    Breakdown, METRICS, Method, QueryLists, QueryOutcome, RunConfig, Sparse, breakdown,
    empty_results, evaluate, failures, judged, mean, mean_at_k,
};
use crate::core::shard::Shard;
use crate::core::stats::{bucket_label, bucket_of};
use crate::service::base::{Context, ModelChoice, Progress, read_questions};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever};
use crate::store::lists::{self as lists_store, ListsRow};

/// Where `eval retrieval` leaves the failed questions of every configuration it
/// evaluated, each with its configuration, for the TUI's failures browser (`f`) and
/// the Query pane's `n` / `p`.
pub const LAST_FAILURES: &str = "eval/last-failures.json";

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct RetrievalEval {
    /// JSONL questions `{id, text, relevant: [chunk ids], topic?}`.
    pub queries: PathBuf,
    /// TREC qrels (`qid 0 docid rel`), overriding `relevant` in the queries file.
    pub qrels: Option<PathBuf>,
    pub methods: Vec<Method>,
    /// The sparse sides hybrid and linear fuse with (each is evaluated).
    pub sparse: Vec<Sparse>,
    /// Sweep alpha over 0.50, 0.55, ..., 0.95 for hybrid and linear instead of using
    /// `alpha`.
    pub alpha_sweep: bool,
    /// The dense weight (flag or config); `None`: each method's default
    /// ([`Method::default_alpha`]: 0.7 for hybrid, equal weights for linear).
    pub alpha: Option<f64>,
    /// Recall and nDCG cutoffs; the largest is the failure cutoff.
    pub k: Vec<usize>,
    /// Write one TREC run file per configuration into this folder.
    pub run_out: Option<PathBuf>,
    /// Write every query's target ranks here (`.csv` or `.jsonl`).
    pub per_query: Option<PathBuf>,
    pub embed: ModelChoice,
    pub depth: usize,
    /// Dense lists from the lance ANN index, probing this many partitions.
    pub ann_nprobes: Option<usize>,
    /// The corpus variant ranked (C_F by default).
    pub variant: crate::core::variant::Variant,
    /// The name under which shards store their ranked lists (`--batch`).
    pub batch: String,
    /// Rank nothing: compute the report from the lists the shards of `batch` stored.
    pub merge: bool,
}

/// The batch name shards use unless told otherwise.
pub const DEFAULT_BATCH: &str = "retrieval";

impl RetrievalEval {
    pub fn new(queries: PathBuf) -> Self {
        Self {
            queries,
            qrels: None,
            methods: vec![Method::Bm25, Method::Tfidf, Method::Dense, Method::Hybrid],
            sparse: vec![Sparse::Bm25],
            alpha_sweep: false,
            alpha: None,
            k: vec![1, 5, 10],
            run_out: None,
            per_query: None,
            embed: ModelChoice::default(),
            depth: DEFAULT_DEPTH,
            ann_nprobes: None,
            variant: crate::core::variant::Variant::Full,
            batch: DEFAULT_BATCH.to_string(),
            merge: false,
        }
    }
}

/// What one shard of `eval retrieval --shard i/n` did.
#[derive(Debug, Clone, Serialize)]
pub struct ShardSummary {
    pub batch: String,
    pub shard: Shard,
    /// This shard's queries, all ranked and stored.
    pub ranked: usize,
    /// Queries in the whole file.
    pub queries: usize,
    pub dataset: String,
    pub seconds: f64,
}

/// One configuration's mean metrics and breakdowns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct MethodResult {
    pub method: String,
    /// The sparse side (hybrid and linear only).
    pub sparse: Option<Sparse>,
    pub alpha: Option<f64>,
    /// The configuration's label (`hybrid-tfidf-a0.75`).
    pub label: String,
    /// Its TREC run file, when `--run-out` asked for them.
    pub run_file: Option<PathBuf>,
    /// Means over `metrics.queries` queries: those with relevant chunks and results.
    pub metrics: MeanMetrics,
    pub recall_at: Vec<(usize, f64)>,
    pub ndcg_at: Vec<(usize, f64)>,
    /// Queries with relevant chunks for which this method retrieved nothing: absent
    /// from its run, dropped from its means (trec_eval without `-c`).
    pub dropped_empty_results: usize,
    /// Questions whose target is not in the top `failure_cutoff` (or not retrieved).
    pub failed: usize,
    pub by_topic: Breakdown,
    pub by_target_length: Breakdown,
}

impl MethodResult {
    /// The Recall@k then nDCG@k columns for every k asked: (name, value).
    pub fn at_k_columns(&self) -> Vec<(String, f64)> {
        let r = self.recall_at.iter().map(|(k, v)| (format!("R@{k}"), *v));
        let n = self.ndcg_at.iter().map(|(k, v)| (format!("nDCG@{k}"), *v));
        r.chain(n).collect()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SweepPoint {
    pub method: Method,
    pub sparse: Sparse,
    pub alpha: f64,
    pub metrics: MeanMetrics,
}

/// The alpha that maximises one metric in the sweep of one fused method.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BestAlpha {
    pub method: Method,
    pub sparse: Sparse,
    pub metric: String,
    pub alpha: f64,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct EvalSeconds {
    pub retrieval: f64,
    pub sweep_ms: f64,
    pub per_alpha_ms: f64,
}

/// The whole evaluation, as `eval retrieval --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RetrievalReport {
    pub queries: usize,
    /// Queries in the headline configuration's means.
    pub evaluated: usize,
    pub dropped_without_relevant: usize,
    /// Queries the headline configuration retrieved nothing for (absent from its run,
    /// dropped from its means; each configuration's own count is in its result).
    pub dropped_empty_results: usize,
    /// Relevant chunk ids that are not in the corpus (they count as not retrieved).
    pub missing_targets: MissingTargets,
    pub embedding_model: Option<String>,
    /// The corpus variant ranked (reports written before variants existed: C_F).
    #[serde(default)]
    pub variant: crate::core::variant::Variant,
    /// Chunks indexed under their summary in that variant.
    #[serde(default)]
    pub summarised: usize,
    pub depth: usize,
    pub results: Vec<MethodResult>,
    pub alpha_sweep: Vec<SweepPoint>,
    pub best_alpha: Vec<BestAlpha>,
    /// The headline configuration's label: its breakdowns are repeated below and its
    /// failures are the ones written to the failures file.
    pub breakdown_method: String,
    pub by_topic: Breakdown,
    pub by_target_length: Breakdown,
    pub failed: Vec<FailedQuestion>,
    pub failure_cutoff: usize,
    /// The file the failures were written to.
    pub failures_file: PathBuf,
    /// The per-query file, when asked for.
    pub per_query_file: Option<PathBuf>,
    pub seconds: EvalSeconds,
}

/// Read the questions and their relevance judgements (the qrels file wins over the
/// questions' `relevant`).
fn read_queries(req: &RetrievalEval) -> Result<(Vec<Question>, HashMap<String, Qrel>)> {
    let queries = read_questions(&req.queries)?;
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    if let Some(path) = &req.qrels {
        let t = crate::service::base::read_text(path)?;
        for (i, line) in t.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(q), Some(d), Some(r)) = (
                f.first(),
                f.get(2),
                f.get(3).and_then(|r| r.parse::<u32>().ok()),
            ) else {
                bail!("{}:{}: expected `qid 0 docid rel`", path.display(), i + 1);
            };
            qrels
                .entry((*q).to_string())
                .or_default()
                .insert((*d).to_string(), r);
        }
    } else {
        for q in &queries {
            qrels.insert(
                q.id.clone(),
                q.relevant.iter().map(|d| (d.clone(), 1)).collect(),
            );
        }
    }
    Ok((queries, qrels))
}

/// The best alpha of each fused method's sweep for each metric (ties: the smaller
/// alpha).
fn best_alphas(sweep: &[SweepPoint]) -> Vec<BestAlpha> {
    let mut pairs: Vec<(Method, Sparse)> = Vec::new();
    for p in sweep {
        if !pairs.contains(&(p.method, p.sparse)) {
            pairs.push((p.method, p.sparse));
        }
    }
    pairs
        .into_iter()
        .flat_map(|(method, sparse)| {
            let points: Vec<&SweepPoint> = sweep
                .iter()
                .filter(|p| p.method == method && p.sparse == sparse)
                .collect();
            METRICS.iter().filter_map(move |(name, get)| {
                points
                    .iter()
                    .max_by(|a, b| {
                        get(&a.metrics)
                            .total_cmp(&get(&b.metrics))
                            .then(b.alpha.total_cmp(&a.alpha))
                    })
                    .map(|p| BestAlpha {
                        method,
                        sparse,
                        metric: (*name).to_string(),
                        alpha: p.alpha,
                        value: get(&p.metrics),
                    })
            })
        })
        .collect()
}

/// Every rank list of every question, `req.depth` deep (exact or ANN dense lists).
async fn rank_all(
    ctx: &Context,
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<Vec<(String, QueryLists)>> {
    let mut lists = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        let (l, _) = match req.ann_nprobes {
            Some(nprobes) => {
                r.query_ann(&ctx.workspace, &q.text, req.depth, nprobes)
                    .await?
            }
            None => r.query(&q.text, req.depth)?,
        };
        lists.push((q.id.clone(), l));
        progress(i + 1, queries.len());
    }
    Ok(lists)
}

/// The fused methods asked for, each with every sparse side asked for.
fn fused_pairs(req: &RetrievalEval) -> Vec<(Method, Sparse)> {
    let sparse = if req.sparse.is_empty() {
        vec![Sparse::default()]
    } else {
        req.sparse.clone()
    };
    req.methods
        .iter()
        .filter(|m| m.uses_alpha())
        .flat_map(|&m| sparse.iter().map(move |&s| (m, s)))
        .collect()
}

/// Each fused method's mean metrics at every alpha of the grid, re-fused from cached
/// lists.
fn sweep_alphas(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    pairs: &[(Method, Sparse)],
) -> Vec<SweepPoint> {
    pairs
        .iter()
        .flat_map(|&(method, sparse)| {
            alpha_grid().into_iter().map(move |alpha| SweepPoint {
                method,
                sparse,
                alpha,
                metrics: mean(&evaluate(
                    lists,
                    qrels,
                    RunConfig::new(method, sparse, alpha),
                    &[],
                )),
            })
        })
        .collect()
}

/// The configurations to evaluate: single-list methods once, fused ones with each
/// sparse side at the best nDCG@10 alpha of the sweep, else at `req.alpha`, else at
/// the method's default.
fn configurations(req: &RetrievalEval, best: &[BestAlpha]) -> Vec<RunConfig> {
    let pairs = fused_pairs(req);
    req.methods
        .iter()
        .flat_map(|&m| {
            if !m.uses_alpha() {
                return vec![RunConfig::single(m)];
            }
            pairs
                .iter()
                .filter(|(pm, _)| *pm == m)
                .map(|&(_, s)| {
                    let alpha = best
                        .iter()
                        .find(|b| b.method == m && b.sparse == s && b.metric == "nDCG@10")
                        .map(|b| b.alpha)
                        .or(req.alpha)
                        .unwrap_or_else(|| m.default_alpha().get());
                    RunConfig::new(m, s, alpha)
                })
                .collect()
        })
        .collect()
}

/// The relevant chunk ids of a question, sorted.
fn relevant_ids(qrels: &HashMap<String, Qrel>, qid: &str) -> Vec<String> {
    let mut ids: Vec<String> = qrels
        .get(qid)
        .map(|q| {
            q.iter()
                .filter(|(_, r)| **r > 0)
                .map(|(d, _)| d.clone())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// What the breakdowns and failures of every configuration need to know about the
/// questions: their topic and target-length bucket.
struct Groups<'a> {
    by_id: HashMap<&'a str, &'a Question>,
    topic: HashMap<&'a str, String>,
    length: HashMap<&'a str, String>,
}

impl<'a> Groups<'a> {
    fn new(r: &Retriever, queries: &'a [Question], qrels: &HashMap<String, Qrel>) -> Self {
        let by_id: HashMap<&str, &Question> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
        let topic = queries
            .iter()
            .filter_map(|q| {
                let t = q.topic.clone().or_else(|| {
                    q.relevant
                        .first()
                        .and_then(|d| r.chunk(d))
                        .and_then(|c| c.topic.clone())
                })?;
                Some((q.id.as_str(), t))
            })
            .collect();
        let length = queries
            .iter()
            .filter_map(|q| {
                let words = relevant_ids(qrels, &q.id)
                    .iter()
                    .filter_map(|d| r.chunk(d))
                    .map(|c| c.word_count)
                    .max()?;
                Some((q.id.as_str(), bucket_label(bucket_of(words))))
            })
            .collect();
        Self {
            by_id,
            topic,
            length,
        }
    }

    fn breakdowns(&self, outcomes: &[QueryOutcome]) -> (Breakdown, Breakdown) {
        (
            breakdown(outcomes, |q| self.topic.get(q).cloned()),
            breakdown(outcomes, |q| self.length.get(q).cloned()),
        )
    }

    /// The failures at cut-off `fail_k` (with the queries retrieved nothing for,
    /// `empty`), each recorded with the configuration that ranked it.
    fn failed(
        &self,
        qrels: &HashMap<String, Qrel>,
        outcomes: &[QueryOutcome],
        empty: &[&str],
        fail_k: usize,
        config: &EvalConfig,
    ) -> Vec<FailedQuestion> {
        failures(outcomes, fail_k)
            .into_iter()
            .map(|o| (o.qid.as_str(), o.metrics.first_relevant_rank))
            .chain(empty.iter().map(|&qid| (qid, None)))
            .filter_map(|(qid, rank)| {
                let q = self.by_id.get(qid)?;
                Some(FailedQuestion {
                    question: Question {
                        relevant: relevant_ids(qrels, qid),
                        topic: self.topic.get(qid).cloned(),
                        ..(*q).clone()
                    },
                    rank,
                    config: Some(config.clone()),
                    target_length: self.length.get(qid).cloned(),
                })
            })
            .collect()
    }
}

/// The headline configuration, whose failures go to the failures file: the first of
/// hybrid, dense, BM25, TF-IDF, linear that was evaluated.
fn headline(configs: &[RunConfig]) -> Option<usize> {
    [
        Method::Hybrid,
        Method::Dense,
        Method::Bm25,
        Method::Tfidf,
        Method::Linear,
    ]
    .into_iter()
    .find_map(|m| configs.iter().position(|c| c.method == m))
}

/// Evaluate retrieval: rank lists once per question, every configuration (and the
/// sweeps) re-fused from them; writes the failures file, the report for the TUI's
/// Evaluation pane (`eval/last-retrieval.json`) and, if asked, the run files and the
/// per-query file.
pub async fn evaluate_retrieval(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<RetrievalReport> {
    if let Some(p) = &req.per_query {
        super::per_query::format_of(p)?;
    }
    let (queries, qrels) = read_queries(req)?;
    let dense = req.methods.iter().any(|m| m.needs_dense());
    // Merging ranks nothing: the corpus is read for topics and lengths only.
    let r = if req.merge {
        Retriever::open(&ctx.workspace, None).await?
    } else {
        open_ranker(ctx, req).await?
    };
    // Sorted within a query (`relevant_ids`): qrels are a hash map, and warnings
    // must not vary.
    let relevant: Vec<Vec<String>> = queries
        .iter()
        .map(|q| relevant_ids(&qrels, &q.id))
        .collect();
    let missing_targets = MissingTargets::find(
        relevant.iter().map(|ids| ids.iter().map(String::as_str)),
        |id| r.by_id.contains_key(id),
    );
    let started = Instant::now();
    let (lists, model_name) = if req.merge {
        gather(ctx, req, &queries, r.chunks.len()).await?
    } else {
        (
            rank_all(ctx, &r, &queries, req, progress).await?,
            r.model_name.clone(),
        )
    };
    if req.merge && dense && model_name.is_none() {
        bail!(
            "batch `{}` was ranked without an embedding model: dense methods cannot be merged",
            req.batch
        );
    }
    let has_dense = if req.merge {
        model_name.is_some()
    } else {
        r.has_dense()
    };
    let retrieval_s = started.elapsed().as_secs_f64();

    let sweep_started = Instant::now();
    let sweep = if req.alpha_sweep {
        sweep_alphas(&lists, &qrels, &fused_pairs(req))
    } else {
        Vec::new()
    };
    let sweep_ms = sweep_started.elapsed().as_secs_f64() * 1e3;
    let best = best_alphas(&sweep);
    let configs = configurations(req, &best);
    let fail_k = req.k.iter().copied().max().unwrap_or(10);
    let groups = Groups::new(&r, &queries, &qrels);
    let record = |c: &RunConfig| EvalConfig {
        method: c.method,
        sparse: c.method.uses_alpha().then_some(c.sparse),
        alpha: c.method.uses_alpha().then_some(c.alpha),
        embedding_model: model_name.clone().filter(|_| c.method.needs_dense()),
        corpus: match req.variant {
            crate::core::variant::Variant::Full => ctx.workspace.location(),
            v => format!("{} ({})", ctx.workspace.location(), v.paper_name()),
        },
        chunks: r.chunks.len(),
        depth: req.depth,
    };
    let head = headline(&configs);

    let mut results = Vec::new();
    let mut failed = Vec::new();
    // Every configuration's failures go to the failures file (each carries its
    // configuration), so the TUI's browser filters them by method.
    let mut all_failed = Vec::new();
    let mut head_counts = (0, 0);
    for (i, c) in configs.iter().enumerate() {
        let o = evaluate(&lists, &qrels, *c, &req.k);
        let empty = empty_results(&lists, &qrels, &o);
        let fails = groups.failed(&qrels, &o, &empty, fail_k, &record(c));
        let (by_topic, by_target_length) = groups.breakdowns(&o);
        let at = mean_at_k(&o, &req.k);
        let run_file = match &req.run_out {
            Some(dir) => Some(write_run(dir, c, model_name.as_deref(), &lists)?),
            None => None,
        };
        results.push(MethodResult {
            method: c.method.to_string(),
            sparse: c.method.uses_alpha().then_some(c.sparse),
            alpha: c.method.uses_alpha().then_some(c.alpha),
            label: c.label(),
            run_file,
            metrics: mean(&o),
            recall_at: at.iter().map(|a| (a.k, a.recall)).collect(),
            ndcg_at: at.iter().map(|a| (a.k, a.ndcg)).collect(),
            dropped_empty_results: empty.len(),
            failed: fails.len(),
            by_topic,
            by_target_length,
        });
        if Some(i) == head {
            failed = fails.clone();
            head_counts = (o.len(), empty.len());
        }
        all_failed.extend(fails);
    }
    let failures_file = write_failures(ctx, &all_failed)?;
    let per_query_file = match &req.per_query {
        Some(path) => {
            let mut lists_of: Vec<RunConfig> = Vec::new();
            if has_dense {
                lists_of.push(RunConfig::single(Method::Dense));
            }
            lists_of.push(RunConfig::single(Method::Bm25));
            lists_of.push(RunConfig::single(Method::Tfidf));
            lists_of.extend(configs.iter().filter(|c| c.method.uses_alpha()));
            super::per_query::write(path, &per_query(&lists, &qrels, &lists_of))?;
            Some(path.clone())
        }
        None => None,
    };
    let (by_topic, by_target_length, breakdown_method) = head
        .and_then(|i| results.get(i))
        .map(|h| {
            (
                h.by_topic.clone(),
                h.by_target_length.clone(),
                h.label.clone(),
            )
        })
        .unwrap_or_else(|| {
            let (t, l) = groups.breakdowns(&[]);
            (t, l, "-".into())
        });
    let report = RetrievalReport {
        queries: queries.len(),
        evaluated: head_counts.0,
        dropped_without_relevant: queries
            .iter()
            .filter(|q| judged(&qrels, &q.id).is_none())
            .count(),
        dropped_empty_results: head_counts.1,
        missing_targets,
        embedding_model: model_name.clone(),
        variant: req.variant,
        summarised: r.summarised,
        depth: req.depth,
        results,
        best_alpha: best,
        breakdown_method,
        by_topic,
        by_target_length,
        failed,
        failure_cutoff: fail_k,
        failures_file,
        per_query_file,
        seconds: EvalSeconds {
            retrieval: retrieval_s,
            sweep_ms,
            per_alpha_ms: if sweep.is_empty() {
                0.0
            } else {
                sweep_ms / sweep.len() as f64
            },
        },
        alpha_sweep: sweep,
    };
    super::saved::save(ctx, super::saved::LAST_RETRIEVAL, &report)?;
    Ok(report)
}

/// The retriever that ranks for `req`: indexes current, dense vectors present when a
/// method needs them.
async fn open_ranker(ctx: &Context, req: &RetrievalEval) -> Result<Retriever> {
    let dense = req.methods.iter().any(|m| m.needs_dense());
    let cfg = dense.then(|| ctx.embed_config(&req.embed)).transpose()?;
    let r = Retriever::open_variant(&ctx.workspace, cfg.as_ref(), req.variant).await?;
    r.ensure_fresh()?;
    if dense && !r.has_dense() {
        bail!("no embeddings for this model: run `raglab index`");
    }
    Ok(r)
}

/// One shard of an evaluation (`--shard i/n`): rank this shard's queries and store
/// their lists in the workspace under `req.batch`, as one commit. No report: the
/// report is `--merge`'s, over every shard's rows.
pub async fn rank_shard(
    ctx: &Context,
    req: &RetrievalEval,
    shard: Shard,
    progress: Progress<'_>,
) -> Result<ShardSummary> {
    let started = Instant::now();
    let (queries, _) = read_queries(req)?;
    let total = queries.len();
    let mine = shard.select(queries, |q| q.id.as_str());
    let r = open_ranker(ctx, req).await?;
    let lists = rank_all(ctx, &r, &mine, req, progress).await?;
    let created = crate::service::base::now_rfc3339();
    let rows: Vec<ListsRow> = lists
        .iter()
        .map(|(qid, l)| {
            let mut row = ListsRow {
                batch: req.batch.clone(),
                shard: shard.to_string(),
                qid: qid.clone(),
                depth: req.depth as u64,
                chunks: r.chunks.len() as u64,
                embedding_model: r.model_name.clone(),
                ann_nprobes: req.ann_nprobes.map(|n| n as u64),
                dense_ids: Vec::new(),
                dense_scores: Vec::new(),
                bm25_ids: Vec::new(),
                bm25_scores: Vec::new(),
                tfidf_ids: Vec::new(),
                tfidf_scores: Vec::new(),
                created: created.clone(),
            };
            row.set_lists(l);
            row
        })
        .collect();
    if !rows.is_empty() {
        lists_store::save(&ctx.workspace, &rows).await?;
    }
    Ok(ShardSummary {
        batch: req.batch.clone(),
        shard,
        ranked: rows.len(),
        queries: total,
        dataset: ctx.workspace.uri(lists_store::DATASET),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The lists every query of the file got from the shards of `req.batch`, in the
/// file's order (as one process ranks them), and the embedding model they used. A
/// query ranked twice (a shard run again) takes its last row. Every query must have
/// lists, and all of them the same depth, corpus size, model and search.
async fn gather(
    ctx: &Context,
    req: &RetrievalEval,
    queries: &[Question],
    chunks: usize,
) -> Result<(Vec<(String, QueryLists)>, Option<String>)> {
    let rows = lists_store::load(&ctx.workspace, &req.batch).await?;
    let mut by_qid: HashMap<&str, &ListsRow> = HashMap::new();
    for row in &rows {
        by_qid.insert(row.qid.as_str(), row);
    }
    let missing: Vec<&str> = queries
        .iter()
        .map(|q| q.id.as_str())
        .filter(|id| !by_qid.contains_key(id))
        .collect();
    if !missing.is_empty() {
        let counts: std::collections::BTreeSet<u32> = rows
            .iter()
            .filter_map(|r| r.shard.parse::<Shard>().ok())
            .map(Shard::count)
            .collect();
        let shards: std::collections::BTreeSet<String> = match counts.iter().next() {
            Some(&n) if counts.len() == 1 => missing
                .iter()
                .map(|id| format!("{}/{n}", Shard::of(id, n)))
                .collect(),
            _ => std::collections::BTreeSet::new(),
        };
        bail!(
            "batch `{}`: {} of {} queries have no ranked lists (first: {}){}; run those shards first",
            req.batch,
            missing.len(),
            queries.len(),
            missing[0],
            if shards.is_empty() {
                String::new()
            } else {
                format!(
                    ", missing shards {}",
                    shards.into_iter().collect::<Vec<_>>().join(", ")
                )
            }
        );
    }
    let used: Vec<&ListsRow> = queries.iter().map(|q| by_qid[q.id.as_str()]).collect();
    let first = used.first().copied();
    for row in &used {
        let want_ann = req.ann_nprobes.map(|n| n as u64);
        if row.depth != req.depth as u64 || row.ann_nprobes != want_ann {
            bail!(
                "batch `{}`: query {} was ranked {} deep{}, this merge asks for {} deep{}",
                req.batch,
                row.qid,
                row.depth,
                row.ann_nprobes
                    .map_or(String::new(), |n| format!(" (ANN, nprobes {n})")),
                req.depth,
                want_ann.map_or(String::new(), |n| format!(" (ANN, nprobes {n})")),
            );
        }
        if row.chunks != chunks as u64 {
            bail!(
                "batch `{}`: query {} was ranked over {} chunks, the corpus has {chunks} now: rank the batch again",
                req.batch,
                row.qid,
                row.chunks
            );
        }
        if let Some(f) = first
            && f.embedding_model != row.embedding_model
        {
            bail!(
                "batch `{}` mixes embedding models ({:?} and {:?})",
                req.batch,
                f.embedding_model,
                row.embedding_model
            );
        }
    }
    let model = first.and_then(|f| f.embedding_model.clone());
    Ok((
        used.iter().map(|r| (r.qid.clone(), r.lists())).collect(),
        model,
    ))
}

/// Write one configuration's TREC run file, named by the whole configuration
/// (`hybrid-tfidf-a0.75-all-MiniLM-L6-v2.trec`); returns its path.
fn write_run(
    dir: &Path,
    cfg: &RunConfig,
    model: Option<&str>,
    lists: &[(String, QueryLists)],
) -> Result<PathBuf> {
    use std::fmt::Write as _;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let name = cfg.file_stem(model);
    let mut out = String::new();
    for (qid, l) in lists {
        for (i, (doc, score)) in l.scored(*cfg).iter().enumerate() {
            let _ = writeln!(out, "{qid} Q0 {doc} {} {score:.10} raglab-{name}", i + 1);
        }
    }
    let path = dir.join(format!("{name}.trec"));
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// Write the failed questions where the TUI finds them (whole or not at all: a
/// temporary file renamed over the old one); returns the file.
fn write_failures(ctx: &Context, failed: &[FailedQuestion]) -> Result<PathBuf> {
    let path = ctx.workspace.path(LAST_FAILURES);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::service::base::write_whole(&path, serde_json::to_string_pretty(failed)?.as_bytes())?;
    Ok(path)
}

/// The failed questions of the last `eval retrieval` (an empty list when none was
/// run; a damaged file is an error, not an empty list).
pub fn last_failures(ctx: &Context) -> Result<Vec<FailedQuestion>> {
    let path = ctx.workspace.path(LAST_FAILURES);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).with_context(|| {
            format!(
                "{} is damaged: run `raglab eval retrieval` again",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The abstention sweep over two question sets.
#[derive(Debug, Clone, Serialize)]
pub struct AbstentionReport {
    pub model: Option<String>,
    pub answerable: usize,
    pub unanswerable: usize,
    pub median_best_cosine: MedianCosines,
    pub rows: Vec<SweepRow>,
    pub best: Option<SweepRow>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct MedianCosines {
    pub answerable: f64,
    pub unanswerable: f64,
}

/// Best dense cosine of each question in a questions file (`{text}` suffices).
fn best_cosines(r: &Retriever, path: &Path) -> Result<Vec<f64>> {
    crate::service::base::read_texts(path)?
        .iter()
        .map(|text| {
            let (lists, _) = r.query(text, 1)?;
            lists
                .dense
                .first()
                .map(|s| s.score)
                .context("no dense list: build the embeddings with `raglab index`")
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    crate::core::stats::quantile(v, 0.5).unwrap_or(f64::NAN)
}

/// How often answerable and unanswerable questions fall below each threshold of
/// `from..=to` by `step`, and the threshold with the best Youden's J.
pub async fn abstention_sweep(
    ctx: &Context,
    answerable: &Path,
    unanswerable: &Path,
    (from, to, step): (f64, f64, f64),
    embed: &ModelChoice,
) -> Result<AbstentionReport> {
    let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(embed)?)).await?;
    if !r.is_fresh() || !r.has_dense() {
        bail!("the embeddings are missing or out of date: run `raglab index` first");
    }
    let a = best_cosines(&r, answerable)?;
    let u = best_cosines(&r, unanswerable)?;
    let rows = sweep(&a, &u, &grid(from, to, step));
    let top = best(&rows).cloned();
    Ok(AbstentionReport {
        model: r.model_name.clone(),
        answerable: a.len(),
        unanswerable: u.len(),
        median_best_cosine: MedianCosines {
            answerable: median(&a),
            unanswerable: median(&u),
        },
        rows,
        best: top,
    })
}
