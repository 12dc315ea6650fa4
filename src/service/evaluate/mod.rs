//! Evaluating what the layers below produce: retrieval (by method, model and corpus
//! variant, with its per-query files and the abstention sweep), answers (judge pass
//! rates by target rank, frugality against a baseline), multiple-choice QA, speed
//! benchmarks, the last reports kept for the Evaluation pane, and paired significance
//! tests between configurations or TREC run files.

mod abstention;
mod answer_runs;
mod bench;
mod bench_embed;
mod frugality;
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
pub use abstention::{AbstentionReport, MedianCosines, abstention_sweep};
pub use answer_runs::{
    AnswerRunsComparison, CriterionComparison, PairedAnswer, QuestionComparison,
    compare_answer_runs, place_text,
};
pub use bench::{GenBench, bench_generate, bench_retrieval};
pub use bench_embed::{EmbedBench, EmbedVariant, bench_embed};
pub use frugality::{
    ANSWER_ACCURACY, AnswerFrugality, COST, ComparedK, ComparedRun, FORMULA, MCQA_ACCURACY,
    McqaFrugality, RunConfiguration, Skipped, Temperatures, answer_frugality, answer_tallies,
    mcqa_frugality,
};
pub use last::{
    BUCKETS, BucketRate, CriterionRates, EvalOverview, JudgePassRates, McqaSummary, fingerprint,
    judge_pass_rates, last_mcqa, last_retrieval, mcqa_run_frugality, overview, save_mcqa,
};
pub use mcqa::{
    MCQA, McqInput, McqQuestion, McqaPipeline, McqaPrompt, McqaReply, McqaRequest, McqaRunner,
    NO_TOPIC, OptionsInput, answer_locally, answer_questions, mcqa_table, outcomes,
    read_mcq_questions, run_records, user_prompt,
};
pub use models::{BestConfig, ModelsReport, best_configs, evaluate_models};
pub use repeats::{JudgeConsistency, RepeatPair, Repeats, SPREAD_RULE, Spread, repeats_of};
pub use report::{
    CitationSummary, PassCounts, PromptPlace, RANK_BUCKETS, answer_report, citation_summaries,
    grounded_summaries, list_answers, pass_counts, prompt_place, rank_bucket,
};
pub use retrieval::{
    BestAlpha, DEFAULT_BATCH, EvalSeconds, LAST_FAILURES, MethodResult, QuerySet, RetrievalEval,
    RetrievalReport, ShardSummary, SweepPoint, evaluate_retrieval, last_failures, rank_shard,
};
pub use saved::{LAST_MCQA, LAST_RETRIEVAL, LAST_SCORES, Saved};
pub use significance::{
    CompareRequest, ComparisonReport, RunSummary, against_before, compare_last, compare_table,
    compare_table_with, evaluate_runs, last_scores,
};
pub use synthetic::{PaneWorkload, SyntheticBench, bench_synthetic, pane_workload};
pub use variants::{VariantBest, VariantsReport, evaluate_variants};
