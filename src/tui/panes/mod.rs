//! One pane per file.

pub mod agreement;
pub mod annotate;
pub mod corpus;
pub mod generate;
pub mod query;
