//! raglab: a terminal workbench for evaluating retrieval-augmented generation over
//! public-health guidance.
//!
//! Layers, each importing only those below it:
//! - [`tui`] and [`cli`]: two thin sibling fronts. Each parses input, calls one
//!   [`service`] function and renders what it returns; neither imports the other, nor
//!   `store` or `infer`. `main.rs` picks the front.
//! - [`service`]: every use case once, one folder each (corpus, retrieval, answer,
//!   evaluate, evalset, study, assess), over a shared base whose [`service::Context`]
//!   resolves paths, config and models in one place. A folder imports only the
//!   folders below it (a unit test reads the imports and holds them to that order).
//! - [`store`]: lance datasets and the tantivy index, persisting core types.
//! - [`infer`]: llama.cpp (embedder, streaming generator, grammar-bound judge).
//! - [`core`]: the domain, pure and synchronous (questions, chunking, fusion, metrics,
//!   agreement, rubric, prompts, sampling). Knows nothing of storage, inference or UI.
//!
//! [`config`] holds paths and the TOML configuration file's format.
//!
//! Where a use case lives: ingesting and browsing the corpus in `service::corpus`;
//! ranking (search, fusion, the rerank stage, ranking on demand) in
//! `service::retrieval`; answers (batches, live answers, judging, grounded metrics,
//! citations, imported runs) in `service::answer`; every evaluation and report in
//! `service::evaluate`; the evaluation set in `service::evalset`; the blind study
//! (items, labels, roster, agreement, exports) in `service::study`; relevance
//! assessment (pools, signed grades, the grown qrels) in `service::assess`. Each `cli` file is
//! one command calling them; in the TUI, `tui::jobs` has one file per use case
//! (retrieval, generation, study, evaluation, assess) whose jobs each call one of those
//! functions, and each pane is a folder under `tui::panes` holding its state, its
//! view and its tests: adding a key to a pane touches that folder and
//! `tui::keymap`/`tui::action` only.
//!
//! The integration tests (`tests/it`, one binary) are grouped the same way, a folder
//! per use case (`corpus`, `ranking`, `evaluation`, `study`, `tui`, `store`, `project`),
//! except that every test that starts a model lives in `tests/it/models`, the folder
//! nextest runs one (or, in the README's test command, two) at a time.

// Lance commits nested in retry and lock futures make deep async state machines.
#![recursion_limit = "256"]

pub mod cli;
pub mod config;
pub mod core;
pub mod infer;
pub mod service;
pub mod store;
pub mod tui;
