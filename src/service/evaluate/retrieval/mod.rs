//! Retrieval evaluation (the paper's table per configuration, the alpha sweep of every
//! fused method, breakdowns by topic and target length for every configuration, failed
//! questions, TREC run files, per-query target ranks). The ranked lists between its
//! passes live in [`spill`], the failed questions it leaves in [`failures`].

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::core::fusion::alpha_grid;
use crate::core::incomplete::{JudgedDocs, MeanJudged, mean_judged};
use crate::core::metrics::{MeanMetrics, MeanSum, Qrel};
use crate::core::per_query::per_query;
use crate::core::question::{EvalConfig, FailedQuestion, MissingTargets, Question};
use crate::core::retrieval::{
    Breakdown, METRICS, Method, QueryLists, QueryOutcome, RunConfig, Sparse, breakdown, evaluate,
    evaluate_judged, failures, judged, mean, mean_at_k,
};
use crate::core::shard::Shard;
use crate::core::significance::{ScoreTable, score_table};
use crate::core::stats::{bucket_label, bucket_of};
use crate::service::base::{Context, ModelChoice, Progress, read_questions};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever};
use crate::store::lists::{self as lists_store, ListsRow};

mod failures;
mod spill;

use failures::write_failures;
pub use failures::{LAST_FAILURES, last_failures};

/// Where the questions and their relevance judgements come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuerySet {
    /// raglab's JSONL questions `{id, text, relevant: [chunk ids], topic?}`; a qrels
    /// file (TREC's `qid 0 docid rel` or BEIR's `query-id corpus-id score`), when
    /// given, overrides their `relevant`.
    Questions {
        file: PathBuf,
        qrels: Option<PathBuf>,
    },
    /// A BEIR folder: the queries of `queries.jsonl` that `qrels/SPLIT.tsv` judges,
    /// with its graded judgements.
    Beir { dir: PathBuf, split: String },
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct RetrievalEval {
    pub queries: QuerySet,
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
    /// Dense lists from the in-memory IVF ([`crate::store::vectors::VectorSet::ann_search`]), probing this many lists.
    pub ann_nprobes: Option<usize>,
    /// The corpus variant ranked (C_F by default).
    pub variant: crate::core::variant::Variant,
    /// The name under which shards store their ranked lists (`--batch`).
    pub batch: String,
    /// Rank nothing: compute the report from the lists the shards of `batch` stored.
    pub merge: bool,
    /// A rerank stage: every configuration is evaluated as it is and reranked.
    pub rerank: Option<crate::service::retrieval::rerank::RerankSetup>,
    /// Threads of a local rerank model.
    pub rerank_threads: Option<i32>,
}

/// The batch name shards use unless told otherwise.
pub const DEFAULT_BATCH: &str = "retrieval";

impl RetrievalEval {
    pub fn new(queries: PathBuf) -> Self {
        Self {
            queries: QuerySet::Questions {
                file: queries,
                qrels: None,
            },
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
            rerank: None,
            rerank_threads: None,
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
    /// The configuration's label (`hybrid-tfidf-a0.75`, `hybrid-bm25-a0.70+rerank10to5`).
    pub label: String,
    /// Its rerank stage, when it has one.
    #[serde(default)]
    pub rerank: Option<crate::core::rerank::RerankCut>,
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
    /// Mean bpref, Judged@k and Hole@k (at every k asked) over the same queries as
    /// `metrics`, when the judgements come from a qrels file (`--qrels`, `--beir`).
    #[serde(default)]
    pub judgements: Option<MeanJudged>,
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
    /// The rerank stage, described, when the evaluation had one.
    #[serde(default)]
    pub rerank: Option<String>,
    /// Pairs it scored and found cached, and its scoring time.
    #[serde(default)]
    pub rerank_stats: Option<crate::service::retrieval::rerank::RerankStats>,
}

/// Read the questions and their relevance judgements (a qrels file wins over the
/// questions' `relevant`).
fn read_queries(req: &RetrievalEval) -> Result<(Vec<Question>, HashMap<String, Qrel>)> {
    let (file, qrels_file) = match &req.queries {
        QuerySet::Questions { file, qrels } => (file, qrels),
        QuerySet::Beir { dir, split } => {
            return crate::service::base::beir::read_queries(dir, split);
        }
    };
    let queries = read_questions(file)?;
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    if let Some(path) = qrels_file {
        qrels = crate::service::base::read_qrels(path)?;
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

/// Whether the judgements come from a qrels file (`--qrels` or a BEIR folder): then
/// every configuration is also scored by bpref, Judged@k and Hole@k. Judgements made
/// from the questions' own targets judge nothing beyond them, so these measures are
/// not given.
fn judgements_from_file(req: &RetrievalEval) -> bool {
    match &req.queries {
        QuerySet::Questions { qrels, .. } => qrels.is_some(),
        QuerySet::Beir { .. } => true,
    }
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
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<Vec<(String, QueryLists)>> {
    let mut lists = Vec::with_capacity(queries.len());
    for block in queries.chunks(BLOCK) {
        let ranked = rank_block(r, block, req.depth, req.ann_nprobes)?;
        lists.extend(block.iter().map(|q| q.id.clone()).zip(ranked));
        progress(lists.len(), queries.len());
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

/// The configurations to evaluate: single-list methods once, fused ones with each
/// sparse side at the best nDCG@10 alpha of the sweep, else at `req.alpha`, else at
/// the method's default.
fn configurations(req: &RetrievalEval, best: &[BestAlpha]) -> Vec<RunConfig> {
    let first = first_stage_configurations(req, best);
    match &req.rerank {
        Some(stage) => first
            .iter()
            .flat_map(|&c| [c, c.reranked(stage.cut)])
            .collect(),
        None => first,
    }
}

/// [`configurations`] without their reranked copies.
fn first_stage_configurations(req: &RetrievalEval, best: &[BestAlpha]) -> Vec<RunConfig> {
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
/// With a rerank stage, the reranked copy of that configuration.
fn headline(configs: &[RunConfig]) -> Option<usize> {
    [
        Method::Hybrid,
        Method::Dense,
        Method::Bm25,
        Method::Tfidf,
        Method::Linear,
    ]
    .into_iter()
    .find_map(|m| {
        let of = |reranked: bool| {
            configs
                .iter()
                .position(|c| c.method == m && c.rerank.is_some() == reranked)
        };
        of(true).or_else(|| of(false))
    })
}

/// Queries handled per block: enough to keep both cores busy ranking, few enough that
/// a block's lists are a small, fixed amount of memory.
const BLOCK: usize = 64;

/// Evaluate retrieval: rank lists once per question, every configuration (and the
/// sweeps) re-fused from them; writes the failures file, the report for the TUI's
/// Evaluation pane (`eval/last-retrieval.json`) and, if asked, the run files and the
/// per-query file.
///
/// Memory does not grow with the number of queries beyond each configuration's
/// per-query metrics: the lists are ranked block by block into a spill file
/// ([`spill`]), then read back once for the alpha sweep (running sums) and once for
/// the configurations, whose run files and per-query file are written as the blocks
/// pass.
pub async fn evaluate_retrieval(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<RetrievalReport> {
    let (report, scores) = evaluate_scored(ctx, req, progress).await?;
    super::significance::save_scores(ctx, &scores)?;
    Ok(report)
}

/// [`evaluate_retrieval`] without keeping the per-query scores: the report and every
/// configuration's per-query scores (in the report's `results` order), for a caller
/// that evaluates several models or variants and keeps their scores as one table.
pub(super) async fn evaluate_scored(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<(RetrievalReport, ScoreTable)> {
    if let Some(p) = &req.per_query {
        super::per_query::format_of(p)?;
    }
    let (queries, qrels) = read_queries(req)?;
    // Merging ranks nothing: the corpus is read for topics and lengths only.
    let r = if req.merge {
        Retriever::open(&ctx.workspace, None).await?
    } else {
        open_ranker(ctx, req).await?
    };
    let missing_targets = find_missing_targets(&r, &queries, &qrels);
    let started = Instant::now();
    let mut ids = spill::Ids::new(&r.chunks, &r.by_id);
    let mut lists = spill::Spill::create(&ctx.workspace.path("eval"))?;
    let (model_name, has_dense) =
        rank_phase(ctx, &r, &queries, req, progress, &mut lists, &mut ids).await?;
    let retrieval_s = started.elapsed().as_secs_f64();

    let sweep_started = Instant::now();
    let sweep = if req.alpha_sweep {
        sweep_phase(&mut lists, &ids, &qrels, &fused_pairs(req))?
    } else {
        Vec::new()
    };
    let sweep_ms = sweep_started.elapsed().as_secs_f64() * 1e3;
    let best = best_alphas(&sweep);
    let configs = configurations(req, &best);
    let rerank_started = Instant::now();
    let stage = rerank_phase(ctx, &r, &queries, req, &best, &mut lists, &ids, progress).await?;
    let retrieval_s = retrieval_s + rerank_started.elapsed().as_secs_f64();
    let mut lists_of: Vec<RunConfig> = Vec::new();
    if has_dense {
        lists_of.push(RunConfig::single(Method::Dense));
    }
    lists_of.push(RunConfig::single(Method::Bm25));
    lists_of.push(RunConfig::single(Method::Tfidf));
    lists_of.extend(
        configs
            .iter()
            .filter(|c| c.method.uses_alpha() && c.rerank.is_none()),
    );
    let passed = config_phase(
        &mut lists,
        &ids,
        &qrels,
        req,
        &configs,
        &lists_of,
        model_name.as_deref(),
    )?;
    drop(lists);
    let seconds = EvalSeconds {
        retrieval: retrieval_s,
        sweep_ms,
        per_alpha_ms: if sweep.is_empty() {
            0.0
        } else {
            sweep_ms / sweep.len() as f64
        },
    };
    let scores = score_table_of(&queries, &qrels, &configs, &passed.outcomes, &req.k);
    let ranked = Ranked {
        r: &r,
        queries: &queries,
        qrels: &qrels,
        model_name,
        missing_targets,
    };
    let mut report = write_phase(ctx, req, &ranked, &configs, passed, (sweep, best), seconds)?;
    if let Some((described, stats)) = stage {
        report.rerank = Some(described);
        report.rerank_stats = Some(stats);
    }
    super::saved::save(ctx, super::saved::LAST_RETRIEVAL, &report)?;
    Ok((report, scores))
}

/// Every configuration's per-query scores over the judged queries, each once, sorted
/// by id (the order `eval runs` uses too, so the same scores give the same resamples
/// and permutations whichever command compares them).
fn score_table_of(
    queries: &[Question],
    qrels: &HashMap<String, Qrel>,
    configs: &[RunConfig],
    outcomes: &[Vec<QueryOutcome>],
    ks: &[usize],
) -> ScoreTable {
    let mut seen = std::collections::HashSet::new();
    let mut qids: Vec<String> = queries
        .iter()
        .filter(|q| judged(qrels, &q.id).is_some() && seen.insert(q.id.as_str()))
        .map(|q| q.id.clone())
        .collect();
    qids.sort();
    let runs: Vec<(String, &[QueryOutcome])> = configs
        .iter()
        .zip(outcomes)
        .map(|(c, o)| (c.label(), o.as_slice()))
        .collect();
    score_table(qids, ks, &runs)
}

/// Relevant chunk ids that are not in the corpus, sorted within a query
/// (`relevant_ids`: qrels are a hash map, and warnings must not vary).
fn find_missing_targets(
    r: &Retriever,
    queries: &[Question],
    qrels: &HashMap<String, Qrel>,
) -> MissingTargets {
    let relevant: Vec<Vec<String>> = queries.iter().map(|q| relevant_ids(qrels, &q.id)).collect();
    MissingTargets::find(
        relevant.iter().map(|ids| ids.iter().map(String::as_str)),
        |id| r.by_id.contains_key(id),
    )
}

/// Rank every query into `out` (or, merging, take the lists the shards stored);
/// returns the embedding model of the lists and whether they have dense lists.
async fn rank_phase(
    ctx: &Context,
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    progress: Progress<'_>,
    out: &mut spill::Spill,
    ids: &mut spill::Ids<'_>,
) -> Result<(Option<String>, bool)> {
    if req.merge {
        let (gathered, model) = gather(ctx, req, queries, r.chunks.len()).await?;
        if req.methods.iter().any(|m| m.needs_dense()) && model.is_none() {
            bail!(
                "batch `{}` was ranked without an embedding model: dense methods cannot be merged",
                req.batch
            );
        }
        for (qid, l) in &gathered {
            out.push(qid, ids, l)?;
        }
        let has_dense = model.is_some();
        return Ok((model, has_dense));
    }
    let mut done = 0;
    for block in queries.chunks(BLOCK) {
        let lists = rank_block(r, block, req.depth, req.ann_nprobes)?;
        for (q, l) in block.iter().zip(&lists) {
            out.push(&q.id, ids, l)?;
        }
        done += block.len();
        progress(done, queries.len());
    }
    Ok((r.model_name.clone(), r.has_dense()))
}

/// The rerank stage's scores of every query's candidates: the union of the first N
/// chunks of each first-stage configuration, read from the spilled lists, scored (or
/// found in the cache) and handed to the spill, which attaches them to the lists it
/// reads back. Returns the stage described and its figures; None without a stage.
#[allow(clippy::too_many_arguments)]
async fn rerank_phase(
    ctx: &Context,
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    best: &[BestAlpha],
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    progress: Progress<'_>,
) -> Result<Option<(String, crate::service::retrieval::rerank::RerankStats)>> {
    let Some(setup) = &req.rerank else {
        return Ok(None);
    };
    if req.depth < setup.cut.depth {
        bail!(
            "the rerank stage scores the first {} chunks, deeper than the ranking (--depth {})",
            setup.cut.depth,
            req.depth
        );
    }
    let first = first_stage_configurations(req, best);
    let mut wanted: Vec<(String, Vec<String>)> = Vec::with_capacity(queries.len());
    lists.for_each_block(ids, BLOCK, |block| {
        for (qid, l) in block {
            let mut union: Vec<String> = Vec::new();
            for c in &first {
                for id in l.ranking_for(*c).into_iter().take(setup.cut.depth) {
                    if !union.iter().any(|u| u == id) {
                        union.push(id.to_string());
                    }
                }
            }
            wanted.push((qid.clone(), union));
        }
        Ok(())
    })?;
    let text_of: HashMap<&str, &str> = queries
        .iter()
        .map(|q| (q.id.as_str(), q.text.as_str()))
        .collect();
    let choice = ModelChoice {
        model: None,
        threads: req.rerank_threads,
    };
    let mut rr =
        crate::service::retrieval::rerank::Reranker::open(ctx, setup.clone(), &choice).await?;
    let mut scores = HashMap::with_capacity(wanted.len());
    for (i, (qid, chunk_ids)) in wanted.iter().enumerate() {
        let question = text_of.get(qid.as_str()).copied().unwrap_or_default();
        let refs: Vec<&str> = chunk_ids.iter().map(String::as_str).collect();
        let scored = rr.scored_ids(ctx, r, question, &refs).await?;
        scores.insert(qid.clone(), scored);
        progress(i + 1, wanted.len());
    }
    lists.set_rerank(scores);
    Ok(Some((rr.describe(), rr.stats.clone())))
}

/// One block's lists in query order: the block's query embeddings in one request to
/// the embedding worker (which encodes several texts per model call), then the
/// searches on two threads.
fn rank_block(
    r: &Retriever,
    block: &[Question],
    depth: usize,
    ann_nprobes: Option<usize>,
) -> Result<Vec<QueryLists>> {
    let texts: Vec<String> = block.iter().map(|q| q.text.clone()).collect();
    let vectors = r.embed_queries(&texts)?;
    if ann_nprobes.is_some() && vectors.is_none() {
        bail!("ANN search needs an embedding model and the corpus's vectors (raglab index)");
    }
    let vector = |i: usize| vectors.as_ref().and_then(|v| v.get(i)).map(Vec::as_slice);
    let rank = |range: std::ops::Range<usize>| -> Result<Vec<QueryLists>> {
        range
            .map(|i| {
                Ok(
                    r.query_embedded(&block[i].text, vector(i), depth, ann_nprobes)?
                        .0,
                )
            })
            .collect()
    };
    let half = block.len().div_ceil(2);
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| rank(half..block.len()));
        (rank(0..half), other.join())
    });
    let mut lists = a?;
    lists.extend(b.map_err(|_| anyhow::anyhow!("a ranking thread panicked"))??);
    Ok(lists)
}

/// Each fused method's mean metrics at every alpha of the grid, re-fused from the
/// spilled lists.
fn sweep_phase(
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    qrels: &HashMap<String, Qrel>,
    pairs: &[(Method, Sparse)],
) -> Result<Vec<SweepPoint>> {
    let points: Vec<RunConfig> = pairs
        .iter()
        .flat_map(|&(m, s)| {
            alpha_grid()
                .into_iter()
                .map(move |a| RunConfig::new(m, s, a))
        })
        .collect();
    let mut sums = vec![MeanSum::default(); points.len()];
    lists.for_each_block(ids, BLOCK, |block| {
        for (cfg, sum) in points.iter().zip(&mut sums) {
            for o in evaluate(block, qrels, *cfg, &[]) {
                sum.add(&o.metrics);
            }
        }
        Ok(())
    })?;
    Ok(points
        .iter()
        .zip(sums)
        .map(|(c, s)| SweepPoint {
            method: c.method,
            sparse: c.sparse,
            alpha: c.alpha,
            metrics: s.mean(),
        })
        .collect())
}

/// What the pass over the configurations keeps: each one's per-query outcomes and
/// its run file.
struct Passed {
    outcomes: Vec<Vec<QueryOutcome>>,
    run_files: Vec<Option<PathBuf>>,
}

/// Every configuration's per-query outcomes from the spilled lists, writing its run
/// file (with `--run-out`) and the per-query file (with `--per-query`, placing the
/// targets in `lists_of`) block by block.
fn config_phase(
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    qrels: &HashMap<String, Qrel>,
    req: &RetrievalEval,
    configs: &[RunConfig],
    lists_of: &[RunConfig],
    model: Option<&str>,
) -> Result<Passed> {
    let mut runs = match &req.run_out {
        Some(dir) => Some(spill::RunFiles::create(dir, configs, model)?),
        None => None,
    };
    let mut per_query_file = match &req.per_query {
        Some(path) => Some(spill::PerQueryFile::create(
            path,
            &per_query(&[], qrels, lists_of),
        )?),
        None => None,
    };
    let docs = judgements_from_file(req).then(|| JudgedDocs::of(qrels));
    let mut outcomes: Vec<Vec<QueryOutcome>> = vec![Vec::new(); configs.len()];
    lists.for_each_block(ids, BLOCK, |block| {
        for (c, o) in configs.iter().zip(&mut outcomes) {
            o.extend(evaluate_judged(block, qrels, *c, &req.k, docs.as_ref()));
        }
        if let Some(runs) = runs.as_mut() {
            runs.write(block)?;
        }
        if let Some(f) = per_query_file.as_mut() {
            f.write(&per_query(block, qrels, lists_of))?;
        }
        Ok(())
    })?;
    let run_files = match runs {
        Some(runs) => runs.finish()?.into_iter().map(Some).collect(),
        None => vec![None; configs.len()],
    };
    if let Some(f) = per_query_file {
        f.finish()?;
    }
    Ok(Passed {
        outcomes,
        run_files,
    })
}

/// The judged queries a configuration retrieved nothing for (absent from its
/// `outcomes`), in the file's order.
fn empty_of<'a>(
    queries: &'a [Question],
    qrels: &HashMap<String, Qrel>,
    outcomes: &[QueryOutcome],
) -> Vec<&'a str> {
    let evaluated: std::collections::HashSet<&str> =
        outcomes.iter().map(|o| o.qid.as_str()).collect();
    queries
        .iter()
        .map(|q| q.id.as_str())
        .filter(|qid| judged(qrels, qid).is_some() && !evaluated.contains(qid))
        .collect()
}

/// What the report is computed from once every query is ranked.
struct Ranked<'a> {
    r: &'a Retriever,
    queries: &'a [Question],
    qrels: &'a HashMap<String, Qrel>,
    model_name: Option<String>,
    missing_targets: MissingTargets,
}

/// Each configuration's result (means, breakdowns, failures), the failures file and
/// the report.
fn write_phase(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    configs: &[RunConfig],
    passed: Passed,
    (sweep, best): (Vec<SweepPoint>, Vec<BestAlpha>),
    seconds: EvalSeconds,
) -> Result<RetrievalReport> {
    let Ranked {
        r, queries, qrels, ..
    } = *ranked;
    let fail_k = req.k.iter().copied().max().unwrap_or(10);
    let groups = Groups::new(r, queries, qrels);
    let head = headline(configs);
    let scored = results_phase(ctx, req, ranked, &groups, configs, passed, (head, fail_k));
    let failures_file = write_failures(ctx, &scored.all_failed)?;
    let (by_topic, by_target_length, breakdown_method) = head
        .and_then(|i| scored.results.get(i))
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
    Ok(RetrievalReport {
        queries: queries.len(),
        evaluated: scored.head_counts.0,
        dropped_without_relevant: queries
            .iter()
            .filter(|q| judged(qrels, &q.id).is_none())
            .count(),
        dropped_empty_results: scored.head_counts.1,
        missing_targets: ranked.missing_targets.clone(),
        embedding_model: ranked.model_name.clone(),
        variant: req.variant,
        summarised: r.summarised,
        depth: req.depth,
        results: scored.results,
        best_alpha: best,
        breakdown_method,
        by_topic,
        by_target_length,
        failed: scored.head_failed,
        failure_cutoff: fail_k,
        failures_file,
        per_query_file: req.per_query.clone(),
        seconds,
        alpha_sweep: sweep,
        rerank: None,
        rerank_stats: None,
    })
}

/// What the configurations' results are: each one's result, the headline's failures
/// and its counts (queries evaluated, judged queries it retrieved nothing for), and
/// every configuration's failures for the failures file.
struct Results {
    results: Vec<MethodResult>,
    head_failed: Vec<FailedQuestion>,
    all_failed: Vec<FailedQuestion>,
    head_counts: (usize, usize),
}

/// Each configuration's means, breakdowns and failures at cut-off `fail_k`; `head`
/// is the headline configuration's index.
fn results_phase(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    groups: &Groups<'_>,
    configs: &[RunConfig],
    passed: Passed,
    (head, fail_k): (Option<usize>, usize),
) -> Results {
    let (queries, qrels) = (ranked.queries, ranked.qrels);
    let mut out = Results {
        results: Vec::new(),
        head_failed: Vec::new(),
        // Every configuration's failures go to the failures file (each carries its
        // configuration), so the TUI's browser filters them by method.
        all_failed: Vec::new(),
        head_counts: (0, 0),
    };
    let runs = configs.iter().zip(passed.outcomes).zip(passed.run_files);
    for (i, ((c, o), run_file)) in runs.enumerate() {
        let empty = empty_of(queries, qrels, &o);
        let config = eval_config(ctx, req, ranked, c);
        let fails = groups.failed(qrels, &o, &empty, fail_k, &config);
        let (by_topic, by_target_length) = groups.breakdowns(&o);
        let at = mean_at_k(&o, &req.k);
        let judgements = judgements_from_file(req)
            .then(|| mean_judged(o.iter().filter_map(|q| q.judged.as_ref()), &req.k));
        out.results.push(MethodResult {
            method: c.method.to_string(),
            sparse: c.method.uses_alpha().then_some(c.sparse),
            alpha: c.method.uses_alpha().then_some(c.alpha),
            label: c.label(),
            rerank: c.rerank,
            run_file,
            metrics: mean(&o),
            recall_at: at.iter().map(|a| (a.k, a.recall)).collect(),
            ndcg_at: at.iter().map(|a| (a.k, a.ndcg)).collect(),
            dropped_empty_results: empty.len(),
            failed: fails.len(),
            judgements,
            by_topic,
            by_target_length,
        });
        if Some(i) == head {
            out.head_failed = fails.clone();
            out.head_counts = (o.len(), empty.len());
        }
        out.all_failed.extend(fails);
    }
    out
}

/// The configuration a failure is recorded with: method, fusion, model, corpus.
fn eval_config(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    c: &RunConfig,
) -> EvalConfig {
    EvalConfig {
        method: c.method,
        sparse: c.method.uses_alpha().then_some(c.sparse),
        alpha: c.method.uses_alpha().then_some(c.alpha),
        embedding_model: ranked.model_name.clone().filter(|_| c.method.needs_dense()),
        corpus: match req.variant {
            crate::core::variant::Variant::Full => ctx.workspace.location(),
            v => format!("{} ({})", ctx.workspace.location(), v.paper_name()),
        },
        chunks: ranked.r.chunks.len(),
        depth: req.depth,
    }
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
    let lists = rank_all(&r, &mine, req, progress).await?;
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
        return Err(missing_lists(req, queries.len(), &missing, &rows));
    }
    let used: Vec<&ListsRow> = queries.iter().map(|q| by_qid[q.id.as_str()]).collect();
    check_rows(req, &used, chunks)?;
    let model = used.first().and_then(|f| f.embedding_model.clone());
    Ok((
        used.iter().map(|r| (r.qid.clone(), r.lists())).collect(),
        model,
    ))
}

/// The error for queries the shards left without lists: how many, the first, and
/// the shards to run when every stored row came from one shard count.
fn missing_lists(
    req: &RetrievalEval,
    queries: usize,
    missing: &[&str],
    rows: &[ListsRow],
) -> anyhow::Error {
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
    anyhow::anyhow!(
        "batch `{}`: {} of {} queries have no ranked lists (first: {}){}; run those shards first",
        req.batch,
        missing.len(),
        queries,
        missing[0],
        if shards.is_empty() {
            String::new()
        } else {
            format!(
                ", missing shards {}",
                shards.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
    )
}

/// Every row used was ranked as this merge asks (depth, ANN search), over the corpus
/// as it is now, and with one embedding model.
fn check_rows(req: &RetrievalEval, used: &[&ListsRow], chunks: usize) -> Result<()> {
    let first = used.first().copied();
    let want_ann = req.ann_nprobes.map(|n| n as u64);
    for row in used {
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
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fusion::Scored;

    /// Lists read back from the spill are the lists written: ids (corpus chunks and
    /// others), scores bit for bit, and the order of queries, across blocks.
    #[test]
    fn spill_reads_back_what_it_wrote() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chunks: Vec<crate::core::chunk::Chunk> = Vec::new();
        let by_id: HashMap<String, usize> = HashMap::new();
        let mut ids = spill::Ids::new(&chunks, &by_id);
        let mut sp = spill::Spill::create(dir.path()).expect("spill");
        let l = |n: usize, salt: f64| -> Vec<Scored> {
            (0..n)
                .map(|i| Scored {
                    id: format!("doc-{}", (i * 7) % 11),
                    score: 1.0 / (i as f64 + salt) - 1e-300,
                })
                .collect()
        };
        let written: Vec<(String, QueryLists)> = (0..5)
            .map(|q| {
                (
                    format!("q{q}"),
                    QueryLists::new(l(q, 1.5), l(2 * q, 0.25), l(3, q as f64 + 0.1)),
                )
            })
            .collect();
        for (qid, lists) in &written {
            sp.push(qid, &mut ids, lists).expect("push");
        }
        let mut read = Vec::new();
        sp.for_each_block(&ids, 2, |block| {
            assert!(block.len() <= 2);
            read.extend(block.iter().cloned());
            Ok(())
        })
        .expect("read");
        assert_eq!(read.len(), written.len());
        for ((qa, a), (qb, b)) in read.iter().zip(&written) {
            assert_eq!(qa, qb);
            for (x, y) in [
                (&a.bm25, &b.bm25),
                (&a.tfidf, &b.tfidf),
                (&a.dense, &b.dense),
            ] {
                assert_eq!(x, y);
                assert!(
                    x.iter()
                        .zip(y)
                        .all(|(s, t)| s.score.to_bits() == t.score.to_bits())
                );
            }
        }
        drop(sp);
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            0,
            "spill removed"
        );
    }
}
