//! What an evaluation reports: each configuration's means and breakdowns, the alpha
//! sweep and its best alphas, the whole report as `eval retrieval --json` prints it, and
//! a shard's summary.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::core::incomplete::MeanJudged;
use crate::core::metrics::MeanMetrics;
use crate::core::question::{FailedQuestion, MissingTargets};
use crate::core::retrieval::{Breakdown, Method, Sparse};
use crate::core::shard::Shard;

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
