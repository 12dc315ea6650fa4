//! Building an evaluation set from the corpus: the generation tasks and their prompts,
//! the critic's scores and the filter that keeps or drops a candidate question, the
//! stored candidate records, and synthetic corpora for throughput benchmarks (never for
//! quality figures).

pub mod candidates;
mod stages;
pub mod synthetic;

pub use stages::*;
