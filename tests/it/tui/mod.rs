//! The TUI driven through keys (TestBackend), without a model.

mod hangup;
mod terminal_safety;
mod tui_annotate;
mod tui_assess;
mod tui_compare;
mod tui_corpus;
mod tui_first_contact;
mod tui_grade;
mod tui_runs;
mod tui_study;
