//! The use cases, shared by the CLI and the TUI: each combines `store` and `infer`
//! around the pure `core`. A front parses its input, calls one function here and
//! renders what it returns; fronts never reach `store` or `infer` themselves.

pub mod agreement_report;
pub mod annotation;
pub mod answering;
pub mod bench;
pub mod context;
pub mod corpus;
pub mod evalset;
pub mod evaluation;
pub mod frugality;
pub mod generation;
pub mod ingest;
pub mod jsonl;
pub mod last_eval;
pub mod live;
pub mod mcqa;
pub mod models_eval;
pub mod per_query;
pub mod pool;
pub mod replay;
pub mod report;
pub mod retrieval;
pub mod rubric;
pub mod study;
pub mod summaries;
pub mod token_counts;
pub mod variants_eval;

pub use context::{Context, ModelChoice};
