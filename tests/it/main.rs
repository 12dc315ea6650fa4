//! Every integration test in one binary, one module per area, so that lance, datafusion,
//! tantivy and llama.cpp are linked once instead of once per file. nextest runs each test
//! in its own process all the same, and `.config/nextest.toml` picks the model tests by
//! module name (`test(/^retrieval::/)`) to run them one at a time.

// Spawned label saves nest deep async state machines (save, lock, commit, sync).
#![recursion_limit = "256"]

mod common;

mod abstention;
mod annotation;
mod assess;
mod beir;
mod blind_views;
mod calibrate;
mod compare_answers;
mod compare_runs;
mod data_safety;
mod docs_links;
mod embed_endpoint;
mod embed_reference;
mod endpoints;
mod evalset;
mod fast_index;
mod frugality;
mod fuzz_readers;
mod generate_batch;
mod generation;
mod gpu_layers;
mod hostile_servers;
mod ingest_bad_files;
mod ingest_sample;
mod judged;
mod mcqa;
mod object_store;
mod pairwise;
mod persona;
mod pipelines;
mod rank_on_demand;
mod ray_shards;
mod record_schemas;
mod reference_agreement;
mod reference_preference;
mod reference_raters;
mod reference_sparse;
mod reference_trec;
mod repeats;
mod rerank;
mod retrieval;
mod sample_data;
mod secrets;
mod shards;
mod shell;
mod sparse_stats;
mod study_keys;
mod study_pinned;
mod study_raters;
mod study_report;
mod study_tmux;
mod suite_rules;
mod synthetic_bench;
mod terminal_safety;
mod tfidf_pruning;
mod tui_annotate;
mod tui_compare;
mod tui_compare_answers;
mod tui_corpus;
mod tui_endpoint;
mod tui_evalset;
mod tui_evaluation;
mod tui_failures;
mod tui_first_contact;
mod tui_replay;
mod tui_study;
mod variants;
