//! One pane per file.

pub mod corpus;
pub mod placeholder;
