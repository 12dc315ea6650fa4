//! The corpus: ingesting documents into chunks, browsing them, summarising each chunk
//! (for the summary variants) and counting its tokens under an embedding model.

mod chunks;
mod ingest;
mod summarise;
mod token_counts;

pub use crate::core::summary::SummaryRecord;
pub use chunks::{
    chunks, chunks_or_empty, chunks_or_empty_counting, find, of_document, summaries, summary_of,
};
pub use ingest::{IngestRequest, IngestSummary, SkippedInput, ingest};
pub use summarise::{
    SUMMARIES, SummaryBatch, SummaryReport, SummaryRequest, all_summaries, current_summaries,
    summaries_table, summary_prompt, summary_texts,
};
pub use token_counts::update_token_counts;
