//! The study report: one document over everything the workspace holds (corpus,
//! retrieval, significance, MCQA, judge, agreement, frugality), each part computed by
//! the same function as the headless command that prints it, so the report and the
//! commands cannot disagree. It stands on the floor above `evaluate` and `study`
//! because it gathers from both (they stand side by side and import neither).

mod runs;
mod study;

pub use runs::{
    Pipeline, QualityEstimate, RunRow, RunsMatrix, RunsRequest, latency_of, runs_matrix, sort_rows,
};
pub use study::{Missing, STUDY_REPORT_COMMANDS, StudyReport, StudyRequest, study_report};
