//! Retrieval evaluation: run files, incomplete judgements, comparisons, trec_eval references, relevance assessment and pooling.

mod assess;
mod compare_runs;
mod frugality;
mod judged;
mod reference_trec;
