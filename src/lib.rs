//! raglab: a terminal workbench for evaluating retrieval-augmented generation over
//! public-health guidance.
//!
//! Four layers, arrows pointing inward:
//! - [`core`]: the domain, pure and synchronous (chunking, fusion, metrics, agreement,
//!   rubric, prompts). Knows nothing of storage, inference or UI.
//! - [`store`]: lance datasets and the tantivy index, persisting core types.
//! - [`infer`]: llama.cpp (embedder, streaming generator, grammar-bound judge).
//! - [`tui`] and [`cli`]: two thin front ends over the same services; everything the
//!   TUI shows can be produced headless.
//!
//! [`config`] holds paths and the TOML configuration shared by both front ends.

pub mod cli;
pub mod config;
pub mod core;
pub mod infer;
pub mod service;
pub mod store;
pub mod tui;
