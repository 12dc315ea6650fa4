//! Retrieval evaluation (the paper's table per method, the alpha sweep, breakdowns by
//! topic and target length, failed questions, TREC run files) and the abstention sweep.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::context::{Context, ModelChoice};
use super::jsonl::read_questions;
use super::retrieval::{DEFAULT_DEPTH, Progress, Retriever};
use crate::core::abstention::{SweepRow, best, grid, sweep};
use crate::core::fusion::alpha_grid;
use crate::core::metrics::{MeanMetrics, Qrel, recall_at};
use crate::core::question::{FailedQuestion, MissingTargets, Question};
use crate::core::retrieval::{
    Breakdown, METRICS, Method, QueryLists, QueryOutcome, breakdown, empty_results, evaluate,
    failures, judged, mean,
};
use crate::core::stats::{bucket_label, bucket_of};

/// Where `eval retrieval` leaves the failed questions of its headline method, for the
/// TUI's Query pane to step through (`n` / `p`).
pub const LAST_FAILURES: &str = "eval/last-failures.json";

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct RetrievalEval {
    /// JSONL questions `{id, text, relevant: [chunk ids], topic?}`.
    pub queries: PathBuf,
    /// TREC qrels (`qid 0 docid rel`), overriding `relevant` in the queries file.
    pub qrels: Option<PathBuf>,
    pub methods: Vec<Method>,
    /// Sweep alpha over 0.50, 0.55, ..., 0.95 for hybrid instead of using `alpha`.
    pub alpha_sweep: bool,
    pub alpha: f64,
    /// Recall cutoffs; the largest is the failure cutoff.
    pub k: Vec<usize>,
    /// Write one TREC run file per method into this folder.
    pub run_out: Option<PathBuf>,
    pub embed: ModelChoice,
    pub depth: usize,
    /// Dense lists from the lance ANN index, probing this many partitions.
    pub ann_nprobes: Option<usize>,
}

impl RetrievalEval {
    pub fn new(queries: PathBuf) -> Self {
        Self {
            queries,
            qrels: None,
            methods: vec![Method::Bm25, Method::Tfidf, Method::Dense, Method::Hybrid],
            alpha_sweep: false,
            alpha: crate::core::retrieval::Alpha::DEFAULT.get(),
            k: vec![1, 5, 10],
            run_out: None,
            embed: ModelChoice::default(),
            depth: DEFAULT_DEPTH,
            ann_nprobes: None,
        }
    }
}

/// One method's mean metrics.
#[derive(Debug, Clone, Serialize)]
pub struct MethodResult {
    pub method: String,
    pub alpha: Option<f64>,
    /// Means over `metrics.queries` queries: those with relevant chunks and results.
    pub metrics: MeanMetrics,
    pub recall_at: Vec<(usize, f64)>,
    /// Queries with relevant chunks for which this method retrieved nothing: absent
    /// from its run, dropped from its means (trec_eval without `-c`).
    pub dropped_empty_results: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    pub alpha: f64,
    pub metrics: MeanMetrics,
}

/// The alpha that maximises one metric in the sweep.
#[derive(Debug, Clone, Serialize)]
pub struct BestAlpha {
    pub metric: String,
    pub alpha: f64,
    pub value: f64,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct EvalSeconds {
    pub retrieval: f64,
    pub sweep_ms: f64,
    pub per_alpha_ms: f64,
}

/// The whole evaluation, as `eval retrieval --json` prints it.
#[derive(Debug, Clone, Serialize)]
pub struct RetrievalReport {
    pub queries: usize,
    /// Queries in the headline method's means.
    pub evaluated: usize,
    pub dropped_without_relevant: usize,
    /// Queries the headline method retrieved nothing for (absent from its run, dropped
    /// from its means; each method's own count is in its result).
    pub dropped_empty_results: usize,
    /// Relevant chunk ids that are not in the corpus (they count as not retrieved).
    pub missing_targets: MissingTargets,
    pub embedding_model: Option<String>,
    pub depth: usize,
    pub results: Vec<MethodResult>,
    pub alpha_sweep: Vec<SweepPoint>,
    pub best_alpha: Vec<BestAlpha>,
    pub breakdown_method: String,
    pub by_topic: Breakdown,
    pub by_target_length: Breakdown,
    pub failed: Vec<FailedQuestion>,
    pub failure_cutoff: usize,
    /// The file the failures were written to.
    pub failures_file: PathBuf,
    pub seconds: EvalSeconds,
}

/// Read the questions and their relevance judgements (the qrels file wins over the
/// questions' `relevant`).
fn read_queries(req: &RetrievalEval) -> Result<(Vec<Question>, HashMap<String, Qrel>)> {
    let queries = read_questions(&req.queries)?;
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    if let Some(path) = &req.qrels {
        let t = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
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

/// Name of a method's run file: the method, and its alpha when it fuses.
pub fn run_name(method: Method, alpha: f64) -> String {
    if method.uses_alpha() {
        format!("{method}-a{alpha:.2}")
    } else {
        method.to_string()
    }
}

fn write_run(
    dir: &Path,
    name: &str,
    lists: &[(String, QueryLists)],
    method: Method,
    alpha: f64,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = String::new();
    for (qid, l) in lists {
        for (i, (doc, score)) in l.scored(method, alpha).iter().enumerate() {
            let _ = writeln!(out, "{qid} Q0 {doc} {} {score:.10} raglab-{name}", i + 1);
        }
    }
    let path = dir.join(format!("{name}.run"));
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))
}

/// Mean recall at each cutoff over the queries that have relevant chunks and results.
fn recall_at_ks(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    ks: &[usize],
    method: Method,
    alpha: f64,
) -> Vec<(usize, f64)> {
    ks.iter()
        .map(|&k| {
            let vals: Vec<f64> = lists
                .iter()
                .filter_map(|(qid, l)| {
                    let q = judged(qrels, qid)?;
                    let ranking = l.ranking(method, alpha);
                    (!ranking.is_empty()).then(|| recall_at(&ranking, q, k))
                })
                .collect();
            let mean = if vals.is_empty() {
                0.0
            } else {
                vals.iter().sum::<f64>() / vals.len() as f64
            };
            (k, mean)
        })
        .collect()
}

/// The best alpha of the sweep for each metric (ties: the smaller alpha).
fn best_alphas(sweep: &[SweepPoint]) -> Vec<BestAlpha> {
    METRICS
        .iter()
        .filter_map(|(name, get)| {
            sweep
                .iter()
                .max_by(|a, b| {
                    get(&a.metrics)
                        .total_cmp(&get(&b.metrics))
                        .then(b.alpha.total_cmp(&a.alpha))
                })
                .map(|p| BestAlpha {
                    metric: (*name).to_string(),
                    alpha: p.alpha,
                    value: get(&p.metrics),
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

/// Hybrid's mean metrics at every alpha of the grid, re-fused from cached lists.
fn sweep_alphas(lists: &[(String, QueryLists)], qrels: &HashMap<String, Qrel>) -> Vec<SweepPoint> {
    alpha_grid()
        .into_iter()
        .map(|a| SweepPoint {
            alpha: a,
            metrics: mean(&evaluate(lists, qrels, Method::Hybrid, a)),
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

/// Topic and target-length breakdowns of one method's outcomes, and its failures at
/// cut-off `fail_k` (with the queries it retrieved nothing for, `empty`).
fn headline(
    r: &Retriever,
    queries: &[Question],
    qrels: &HashMap<String, Qrel>,
    outcomes: &[QueryOutcome],
    empty: &[&str],
    fail_k: usize,
) -> (Breakdown, Breakdown, Vec<FailedQuestion>) {
    let by_id: HashMap<&str, &Question> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
    let topic_of = |qid: &str| -> Option<String> {
        let q = by_id.get(qid)?;
        q.topic.clone().or_else(|| {
            q.relevant
                .first()
                .and_then(|d| r.chunk(d))
                .and_then(|c| c.topic.clone())
        })
    };
    let length_of = |qid: &str| -> Option<String> {
        let words = relevant_ids(qrels, qid)
            .iter()
            .filter_map(|d| r.chunk(d))
            .map(|c| c.word_count)
            .max()?;
        Some(bucket_label(bucket_of(words)))
    };
    let failed = failures(outcomes, fail_k)
        .into_iter()
        .map(|o| (o.qid.as_str(), o.metrics.first_relevant_rank))
        .chain(empty.iter().map(|&qid| (qid, None)))
        .filter_map(|(qid, rank)| {
            let q = by_id.get(qid)?;
            Some(FailedQuestion {
                question: Question {
                    relevant: relevant_ids(qrels, qid),
                    ..(*q).clone()
                },
                rank,
            })
        })
        .collect();
    (
        breakdown(outcomes, topic_of),
        breakdown(outcomes, length_of),
        failed,
    )
}

/// Evaluate retrieval: rank lists once per question, every method (and the sweep)
/// re-fused from them; writes the failures file and, if asked, the run files.
pub async fn evaluate_retrieval(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<RetrievalReport> {
    let (queries, qrels) = read_queries(req)?;
    let dense = req.methods.iter().any(|m| m.needs_dense());
    let cfg = dense.then(|| ctx.embed_config(&req.embed));
    let r = Retriever::open(&ctx.workspace, cfg.as_ref()).await?;
    r.ensure_fresh()?;
    if dense && !r.has_dense() {
        bail!("no embeddings for this model: run `raglab index`");
    }
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
    let lists = rank_all(ctx, &r, &queries, req, progress).await?;
    let retrieval_s = started.elapsed().as_secs_f64();

    let sweep_started = Instant::now();
    let sweep = if req.alpha_sweep && req.methods.contains(&Method::Hybrid) {
        sweep_alphas(&lists, &qrels)
    } else {
        Vec::new()
    };
    let sweep_ms = sweep_started.elapsed().as_secs_f64() * 1e3;
    let best = best_alphas(&sweep);
    let hybrid_alpha = best
        .iter()
        .find(|b| b.metric == "nDCG@10")
        .map_or(req.alpha, |b| b.alpha);

    let mut results = Vec::new();
    let mut outcomes_by: HashMap<Method, (Vec<QueryOutcome>, Vec<&str>)> = HashMap::new();
    for &m in &req.methods {
        let alpha = if m == Method::Hybrid {
            hybrid_alpha
        } else {
            req.alpha
        };
        let o = evaluate(&lists, &qrels, m, alpha);
        let empty = empty_results(&lists, &qrels, &o);
        results.push(MethodResult {
            method: m.to_string(),
            alpha: m.uses_alpha().then_some(alpha),
            metrics: mean(&o),
            recall_at: recall_at_ks(&lists, &qrels, &req.k, m, alpha),
            dropped_empty_results: empty.len(),
        });
        if let Some(dir) = &req.run_out {
            write_run(dir, &run_name(m, alpha), &lists, m, alpha)?;
        }
        outcomes_by.insert(m, (o, empty));
    }

    // Breakdowns and failures for the headline method (hybrid when evaluated).
    let head = [
        Method::Hybrid,
        Method::Dense,
        Method::Bm25,
        Method::Tfidf,
        Method::Linear,
    ]
    .into_iter()
    .find(|m| outcomes_by.contains_key(m))
    .unwrap_or(Method::Bm25);
    let (head_outcomes, head_empty) = outcomes_by.remove(&head).unwrap_or_default();
    let fail_k = req.k.iter().copied().max().unwrap_or(10);
    let (by_topic, by_length, failed) =
        headline(&r, &queries, &qrels, &head_outcomes, &head_empty, fail_k);
    let failures_file = write_failures(ctx, &failed)?;
    Ok(RetrievalReport {
        queries: queries.len(),
        evaluated: head_outcomes.len(),
        dropped_without_relevant: queries
            .iter()
            .filter(|q| judged(&qrels, &q.id).is_none())
            .count(),
        dropped_empty_results: head_empty.len(),
        missing_targets,
        embedding_model: r.model_name.clone(),
        depth: req.depth,
        results,
        best_alpha: best,
        breakdown_method: head.to_string(),
        by_topic,
        by_target_length: by_length,
        failed,
        failure_cutoff: fail_k,
        failures_file,
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
    })
}

/// Write the failed questions where the TUI finds them; returns the file.
fn write_failures(ctx: &Context, failed: &[FailedQuestion]) -> Result<PathBuf> {
    let path = ctx.workspace.path(LAST_FAILURES);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(failed)?)
        .with_context(|| format!("cannot write {}", path.display()))?;
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
    super::jsonl::read_texts(path)?
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
    let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(embed))).await?;
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
