//! Retrieval evaluation: run files, incomplete judgements, comparisons, trec_eval references.

mod compare_runs;
mod frugality;
mod judged;
mod reference_trec;
