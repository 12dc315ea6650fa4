//! Evaluating what the layers below produce: retrieval (by method, model and corpus
//! variant, with its per-query files and the abstention sweep), answers (judge pass
//! rates by target rank, frugality against a baseline), multiple-choice QA, speed
//! benchmarks, the last reports kept for the Evaluation pane, and paired significance
//! tests between configurations or TREC run files.

mod abstention;
mod answer_runs;
mod bench;
mod bench_embed;
mod bench_rerank;
mod frugality;
mod gate;
mod last;
mod mcqa;
mod models;
mod per_query;
mod repeats;
mod report;
mod retrieval;
mod saved;
mod significance;
mod synthetic;
mod variants;

pub use crate::core::mcqa::McqaRecord;
pub(crate) use abstention::abstention_sweep;
pub(crate) use answer_runs::{
    AnswerRunsComparison, CriterionComparison, PairedAnswer, QuestionComparison,
    compare_answer_runs, label_of, labels_by_question,
};
pub(crate) use bench::{GenBench, bench_generate, bench_retrieval};
pub(crate) use bench_embed::{EmbedBench, EmbedVariant, bench_embed};
pub(crate) use bench_rerank::{RerankBench, bench_rerank};
pub use frugality::Skipped;
pub(crate) use frugality::{McqaFrugality, Temperatures, mcqa_frugality};
pub use gate::{GateReport, GateRequest, gate};
pub use last::overview;
pub(crate) use last::{
    BUCKETS, EvalOverview, JudgePassRates, McqaSummary, fingerprint, judge_pass_rates, last_mcqa,
    last_retrieval, mcqa_run_frugality, save_mcqa,
};
pub use mcqa::{MCQA, mcqa_table, outcomes, read_mcq_questions};
pub(crate) use mcqa::{McqQuestion, McqaPipeline, McqaRequest, answer_questions, run_records};
pub(crate) use models::evaluate_models;
pub(crate) use report::{PromptPlace, RANK_BUCKETS, answer_report, list_answers, prompt_place};
pub use retrieval::last_failures;
pub(crate) use retrieval::{
    DEFAULT_BATCH, MethodResult, QuerySet, RetrievalEval, RetrievalReport, evaluate_retrieval,
    rank_shard,
};
pub(crate) use saved::Saved;
pub use significance::{CompareRequest, ComparisonReport, compare_table, compare_table_with};
pub(crate) use significance::{against_before, compare_last, evaluate_runs, last_scores};
pub use significance::{describe_clusters, read_clusters, save_scores};
pub use synthetic::{PaneWorkload, pane_workload};
pub(crate) use synthetic::{SyntheticBench, bench_synthetic};
pub(crate) use variants::{VariantBest, evaluate_variants};
