//! Evaluation: run files, incomplete judgements, comparisons, trec_eval references, relevance assessment and pooling, and the grounded metrics against ragas.

mod assess;
mod compare_runs;
mod frugality;
mod gate;
mod grounded_reference;
mod judged;
mod reference_trec;
mod runs_matrix;
