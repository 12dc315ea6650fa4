//! The project itself: docs links, standalone commands and help, the suite rules.

mod docs_links;
mod naming;
mod shell;
mod suite_rules;
