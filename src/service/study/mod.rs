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
pub use agree::{Agreement, AgreementRequest, DRIFT_WINDOW, agreement_of, final_label, finals_of};
pub(crate) use agree::{NO_IDENTITY, agreement_with, export_final};
pub(crate) use agreement::{export_to_workspace, fmt_est, noise_verdict, to_csv, to_markdown};
pub use assign::assign;
pub(crate) use calibrate::CalibrateRequest;
pub use calibrate::{Judged, calibrate};
pub use founding::{FOUNDED, memory_file};
pub use gold::{GOLD, gold_table};
pub(crate) use gold::{gold_report, gold_rows, mark_gold};
pub use items::{
    AnswerSigners, AnswersTaken, CreatedItems, ItemSource, add_answer_item, create_items,
    items_from_file,
};
pub(crate) use label_io::{ExportFormat, export_labels, final_csv};
pub use label_io::{
    SaveError, commit_labels, history_of, import_labels, label_history, labels_csv, labels_jsonl,
    read_label_file, save_label, save_label_batch, visible_label_rows,
};
pub(crate) use labels::PAPER_REFERENCE;
pub use labels::{
    ASSIGNMENTS, AgreementRow, Assignment, Disagreement, FINAL, ITEMS, Item, JUDGE, LABELS, Label,
    agreement_table, assignments_table, current, disagreements, items_table, labels_table,
    pairs_of, save_labels,
};
pub use pairwise::{PairItem, pair_items_table, preferences};
pub(crate) use pairwise::{Preferences, create_pair_items, is_pairwise};
pub use pin::pins_table;
pub use rubric::rubric_toml;
pub(crate) use rubric::{judge_live, pin_rubric, rubric_show, study_rubric};
pub(crate) use study_read::study_fingerprint;
pub use study_read::{Study, load_study, sight};
pub use trust::{
    ROSTER, binding, checked_items, my_key, read_items, roster, roster_add, roster_table,
    seal_item, seal_items, sign_assignment, sign_label, trusted_log,
};
pub(crate) use trust::{
    UNBOUND, UNSIGNED, confirm, key_file, require_lead, roster_list, roster_remove, roster_rotate,
};
