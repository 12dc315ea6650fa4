//! One pane per file.

pub mod annotate;
pub mod agreement;
pub mod corpus;
pub mod generate;
pub mod query;
