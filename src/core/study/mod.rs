//! The blind study: items and labels, the rubric and the lead's pinned copy of it,
//! blinding and assignment of reviewers, agreement statistics (Cohen's kappa, macro-F1,
//! bootstrap intervals), gold items, judge calibration, pairwise preferences, relevance
//! assessment, and the signatures that hold every study record against its own members.

pub mod agreement;
pub mod annotation;
pub mod answer_signing;
pub mod assessment;
pub mod assignment;
pub mod blinding;
pub mod calibration;
pub mod correction;
pub mod gold;
pub mod pinned;
pub mod preference;
pub mod rubric;
pub mod signing;
