//! Answering: a resumable batch of answers for a question set and its judging, one
//! live answer or judgement for the TUI, the stored answer and judgement records,
//! which stored answer the Generate pane replays, and the grounded metrics (RAGAS
//! family) of stored answers.

mod batches;
mod citations;
mod generation;
mod grounded;
mod import;
mod live;
mod replay;

pub use crate::core::answer::{AnswerRecord, JudgementRecord};
pub use batches::{
    AnswerBatch, BatchRequest, BatchSummary, FewShot, JudgeBatch, JudgeRepeats, JudgeScope,
    Repeated, all_answers, judge_seed, save_answer,
};
pub use citations::{
    CITATIONS, CiteRequest, CiteSummary, ModelEntailment, citation_records, citations, cite_run,
};
pub use generation::{
    ANSWERS, Answerer, GenerationConfig, JUDGEMENTS, Prepared, answers, endpoint_judge_sampling,
    endpoint_judgement, existing_answer_ids, judge, judge_prompt, judge_prompt_with,
    judge_prompted, judge_streaming, judgements, prepare_prompt, record,
};
pub use grounded::{
    GROUNDED, GroundRequest, GroundSummary, ground_run, grounded, grounded_records,
};
pub use import::{ImportSummary, import_answers};
pub use live::{
    GeneratorSlot, LiveWatch, answer_live_and_save, judge_live_and_commit, live_on_endpoints,
};
pub use replay::pick_replay;
