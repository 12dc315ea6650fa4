//! Ranking without a model: sparse retrieval against references, BEIR data, ranking on demand, the synthetic bench.

mod beir;
mod rank_on_demand;
mod reference_sparse;
mod sparse_stats;
mod synthetic_bench;
pub(crate) mod tfidf_pruning;
