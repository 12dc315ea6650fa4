//! Every integration test in one binary, so that lance, datafusion, tantivy and
//! llama.cpp are linked once instead of once per file; nextest runs each test in its
//! own process all the same. The tests are grouped in folders by use case, and every
//! test that starts a model (llama.cpp in process, a llama-server, an embedding index)
//! lives in `models/`: `.config/nextest.toml` runs that folder (`test(/^models::/)`)
//! one test at a time, two in the `ci` profile (`project::suite_rules` checks both).

// Spawned label saves nest deep async state machines (save, lock, commit, sync).
#![recursion_limit = "256"]

mod common;

mod corpus;
mod evaluation;
mod models;
mod project;
mod ranking;
mod store;
mod study;
mod tui;
