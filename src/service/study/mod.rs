//! The annotation study: items to label (from stored answers or a file), raters'
//! labels and their history, reviewer assignment, adjudicated final labels, the
//! agreement between raters and the judge, its reports, and the judge calibrated on
//! the final labels; who is who (the roster, remembered per workspace) and the
//! study's own rubric, pinned by its lead.

mod agree;
mod agreement;
mod assign;
mod calibrate;
mod founding;
mod gold;
mod items;
mod label_io;
mod labels;
mod pairwise;
mod pin;
mod raters;
mod rubric;
mod study_read;
mod trust;

pub use crate::core::annotation::RaterPair;
pub use crate::core::blinding::{Blinding, LabelVersion, Schedule, Sight, Viewer};
pub use crate::core::signing::Refusal;
pub use agree::{
    Agreement, AgreementRequest, DRIFT_WINDOW, NO_IDENTITY, agreement_of, agreement_with,
    export_final, final_label, finals_of,
};
pub use agreement::{
    PAPER_OVERALL, export_to_workspace, fmt_est, noise_verdict, to_csv, to_markdown,
};
pub use assign::{Assigned, assign};
pub use calibrate::{CalibrateRequest, Calibration, CalibrationRow, Judged, calibrate};
pub use founding::{FOUNDED, founded_table, memory_file};
pub use gold::{GOLD, gold_report, gold_rows, gold_table, mark_gold};
pub use items::{CreatedItems, ItemSource, add_answer_item, create_items, items_from_file};
pub use label_io::{
    ExportFormat, History, LabelExport, commit_labels, export_labels, final_csv, history_of,
    import_labels, label_history, labels_csv, labels_jsonl, read_label_file, save_label,
    save_label_batch, visible_label_rows,
};
pub use labels::{
    ASSIGNMENTS, AgreementRow, Assignment, Disagreement, FINAL, FinalLabel, ITEMS, Item, JUDGE,
    LABELS, Label, PAPER_REFERENCE, agreement_table, assignments_table, criterion_rows, current,
    disagreements, final_labels, items_table, judge_labels, labels_table, noise_table, now_nanos,
    pairs_of, pick_reviewers, read_items, save_labels,
};
pub use pairwise::{
    PAIR_ITEMS, PairItem, Preferences, create_pair_items, is_pairwise, pair_items_table,
    preferences,
};
pub use pin::{RUBRIC_PINS, pins_table};
pub use raters::{drift_report, human_reviewers, rater_report};
pub use rubric::{
    RubricPinned, RubricView, judge_live, pin_rubric, rubric_show, rubric_toml, study_rubric,
};
pub use study_read::{Study, load_study, sight, study_fingerprint, visible_judgements};
pub use trust::{
    ROSTER, RosterAdded, RosterView, TrustedLog, UNBOUND, UNSIGNED, binding, check_authorship,
    confirm, key_file, my_key, pinned_rubric, require_lead, roster, roster_add, roster_list,
    roster_remove, roster_rotate, roster_table, sign_assignment, sign_label, trusted_log,
};
