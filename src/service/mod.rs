//! The use cases, shared by the CLI and the TUI: each combines `store` and `infer`
//! around the pure `core`. A front parses its input, calls one function here and
//! renders what it returns; fronts never reach `store` or `infer` themselves.
//!
//! One folder per use case, each keeping its files private behind its `mod.rs`,
//! which names what the fronts call. A folder imports only folders below it:
//!
//! ```text
//!         report   assess         the study report; relevance assessment (pools, grades, qrels)
//!              /     \
//! evaluate   evalset   study      (side by side: none imports another)
//!        \      |      /
//!             answer              answers, judgements, live answering, replay
//!               |
//!           retrieval             sparse index, dense vectors, ranking
//!               |
//!             corpus              ingest, chunks, summaries, token counts
//!               |
//!              base               Context, back end, pool, provenance, files, JSONL, rubric
//! ```
//!
//! A piece two folders share goes down to the lowest folder both stand on; the
//! layering test below reads every `use` line and fails on an import against this
//! order.

pub mod answer;
pub mod assess;
pub mod base;
pub mod corpus;
pub mod evalset;
pub mod evaluate;
pub mod report;
pub mod retrieval;
pub mod study;

#[cfg(test)]
mod layering;

pub use base::{Context, ModelChoice};
