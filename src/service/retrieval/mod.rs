//! Retrieval: keeping the sparse index and the dense vectors of a workspace in step
//! with its chunks, and ranking a query by every method at once.

mod retriever;

pub use retriever::{
    CHECKPOINT_CHUNKS, DEFAULT_DEPTH, IndexReport, IndexRequest, IndexSummary, QueryTimings,
    Retriever, SearchRequest, SearchResult, SearchRow, build_index, open_for, open_for_browsing,
    open_variant_for, rank_on_demand, search,
};
