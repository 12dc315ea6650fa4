//! The annotation study: items to label (from stored answers or a file), raters'
//! labels and their history, reviewer assignment, adjudicated final labels, the
//! agreement between raters and the judge, its reports, and the judge calibrated on
//! the final labels; who is who (the roster, remembered per workspace) and the
//! study's own rubric, pinned by its lead.

mod agreement;
mod assign;
mod calibrate;
mod founding;
mod gold;
mod labels;
mod pairwise;
mod pin;
mod raters;
mod rubric;
mod steps;
mod trust;

pub use agreement::{
    PAPER_OVERALL, export_to_workspace, fmt_est, noise_verdict, to_csv, to_markdown,
};
pub use assign::{Assigned, assign};
pub use calibrate::{CalibrateRequest, Calibration, CalibrationRow, Judged, calibrate};
pub use founding::{FOUNDED, founded_table, memory_file};
pub use gold::{GOLD, gold_report, gold_rows, gold_table, mark_gold};
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
pub use steps::{
    Agreement, AgreementRequest, Blinding, CreatedItems, DRIFT_WINDOW, ExportFormat, History,
    ItemSource, LabelExport, LabelVersion, NO_IDENTITY, RaterPair, Refusal, Schedule, Sight, Study,
    Viewer, add_answer_item, agreement_of, agreement_with, commit_labels, create_items,
    export_final, export_labels, final_csv, final_label, finals_of, history_of, import_labels,
    items_from_file, label_history, labels_csv, labels_jsonl, load_study, read_label_file,
    save_label, save_label_batch, sight, study_fingerprint, visible_judgements, visible_label_rows,
};
pub use trust::{
    ROSTER, RosterAdded, RosterView, TrustedLog, UNBOUND, UNSIGNED, binding, check_authorship,
    confirm, key_file, my_key, pinned_rubric, require_lead, roster, roster_add, roster_list,
    roster_remove, roster_rotate, roster_table, sign_assignment, sign_label, trusted_log,
};
