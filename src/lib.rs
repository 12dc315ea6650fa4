//! raglab: a terminal workbench for evaluating retrieval-augmented generation over
//! public-health guidance.
//!
//! Layers, each importing only those below it:
//! - [`tui`] and [`cli`]: two thin sibling fronts. Each parses input, calls one
//!   [`service`] function and renders what it returns; neither imports the other, nor
//!   `store` or `infer`. `main.rs` picks the front.
//! - [`service`]: every use case once, one folder each (corpus, retrieval, answer,
//!   evaluate, evalset, study), over a shared base whose [`service::Context`]
//!   resolves paths, config and models in one place. A folder imports only the
//!   folders below it (a unit test reads the imports and holds them to that order).
//! - [`store`]: lance datasets and the tantivy index, persisting core types.
//! - [`infer`]: llama.cpp (embedder, streaming generator, grammar-bound judge).
//! - [`core`]: the domain, pure and synchronous (questions, chunking, fusion, metrics,
//!   agreement, rubric, prompts, sampling). Knows nothing of storage, inference or UI.
//!
//! [`config`] holds paths and the TOML configuration file's format.

// Lance commits nested in retry and lock futures make deep async state machines.
#![recursion_limit = "256"]

pub mod cli;
pub mod config;
pub mod core;
pub mod infer;
pub mod service;
pub mod store;
pub mod tui;
