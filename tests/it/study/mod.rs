//! Annotation studies: items, blinding, signing, pinned rubrics, agreement references, pairwise preferences.

mod annotation;
mod blind_views;
mod corrected_runs;
mod pairwise;
mod reference_agreement;
mod reference_preference;
mod reference_raters;
mod study_pinned;
mod study_raters;
mod study_replays;
