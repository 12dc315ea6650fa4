//! What every use case stands on: the [`Context`] (paths, configuration, workspace,
//! models), the choice between the local model and the endpoint pool, provenance
//! (clock, file hashes, which model answered), whole-or-nothing file writes, JSONL,
//! TREC and BEIR reading and the rubric. Nothing here imports a use case.

pub mod beir;
mod context;
mod files;
mod jsonl;
mod pool;
mod provenance;
mod rubric;
mod run;

pub use crate::store::workspace::is_object_store;
pub use context::{Context, ModelChoice, init_logging, runtime};
pub use files::{create_temporary, dataset_stamp, publish, write_whole};
pub use jsonl::{
    DESCRIPTIVE_FIELDS, MAX_JSONL_BYTES, parse_jsonl, parse_jsonl_numbered, parse_record,
    read_jsonl, read_jsonl_ignoring, read_qrels, read_questions, read_run, read_text, read_texts,
};
pub use pool::{MAX_ATTEMPTS, Pool, PoolReport, run_chains_on_pool, run_on_pool, spec_of};
pub use provenance::{Provenance, file_sha256, model_sha256, my_key, now_nanos, now_rfc3339};
pub use rubric::{DEFAULT_RUBRIC, default_rubric, load_rubric, parse_rubric};
pub use run::{Backend, Progress, Resumable, Role, load_generator, split_done};
