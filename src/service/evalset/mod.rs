//! Building an evaluation set from the corpus: a model generates candidate questions
//! from chunks, a critic scores each one, a person reviews and decides, and a filter
//! writes the kept questions to a file. Each stage is a resumable batch.

mod stages;

pub use crate::core::candidates::{CandidateRecord, CritiqueRecord, DecisionRecord};
pub use stages::{
    CANDIDATES, CRITIQUES, CandidateView, CritiqueBatch, DECISIONS, FilterReport, FilterSettings,
    GenerateBatch, GenerateRequest, MIN_GENERATION_TOKENS, StageSummary, Verdict, all_candidates,
    all_critiques, current_decisions, decide, filter_to_file, review,
};
