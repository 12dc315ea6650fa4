//! Retrieval: keeping the sparse index and the dense vectors of a workspace in step
//! with its chunks, and ranking a query by every method at once.

mod on_demand;
pub mod rerank;
mod retriever;

pub use on_demand::{lists_on_demand, places_on_demand, rank_on_demand};

pub use retriever::{
    CHECKPOINT_CHUNKS, DEFAULT_DEPTH, IndexReport, IndexRequest, IndexSummary, QueryTimings,
    Retriever, SearchRequest, SearchResult, SearchRow, build_index, open_for, open_for_browsing,
    open_ranking, open_variant_for, search,
};
