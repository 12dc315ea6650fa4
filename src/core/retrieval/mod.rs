//! Retrieval: a run's configuration (method, sparse side, fusion weight, rerank stage),
//! the rank lists it fuses (weighted reciprocal-rank fusion, min-max linear), the
//! pointwise rerank cut, the measures (P@k, Recall@k, MRR, nDCG, judged-only measures
//! for incomplete qrels), TREC and BEIR files, per-query target ranks, paired
//! significance tests with Holm's adjustment, and what an analyst compares when a
//! query failed.

pub mod beir;
pub mod compare;
pub mod conclusions;
pub mod fusion;
pub mod incomplete;
pub mod metrics;
pub mod per_query;
pub mod rerank;
mod run;
pub mod significance;
pub mod trec;

pub use run::*;
