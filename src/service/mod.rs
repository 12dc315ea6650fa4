//! Services shared by the CLI and the TUI: they combine `store` and `infer` around the
//! pure `core` (e.g. building indexes, answering a query with every retriever).

pub mod annotation;
pub mod generation;
pub mod mcqa;
pub mod retrieval;
pub mod rubric;
