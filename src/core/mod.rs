//! The domain, pure and synchronous: one folder per concept, as `service` has one per
//! use case, so that a rule found through a use case is found under the same name here.
//! `base` holds what many concepts use; `corpus`, `retrieval`, `answer`, `study` and
//! `evalset` hold the rules of each. Depends on serde/thiserror only: no async runtime,
//! no UI, no storage, no inference crates.
//!
//! Each concept's files are also reachable by their short path (`core::fusion`,
//! `core::signing`), which the layers above have always used.

pub mod answer;
pub mod base;
pub mod corpus;
pub mod evalset;
pub mod retrieval;
pub mod study;

pub use answer::{
    abstention, citation, context_policy, external, frugality, grounded, mcqa, prompt,
    prompt_marks, replay, sampling, template,
};
pub use base::{paper, question, rng, shard, stats, timing};
pub use corpus::{chunk, html, summary, text, variant};
pub use evalset::{candidates, synthetic};
pub use retrieval::{
    beir, compare, conclusions, fusion, incomplete, metrics, per_query, rerank, significance, trec,
};
pub use study::{
    agreement, annotation, answer_signing, assessment, assignment, blinding, calibration, gold,
    pinned, preference, rubric, signing,
};
