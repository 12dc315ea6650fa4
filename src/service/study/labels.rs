//! Annotation: items to label, labels from blind reviewers, and agreement reports.
//!
//! Labels are an append-only log in `labels.lance`: every confirmed label is one row
//! committed before the UI says "saved"; a change of mind appends a new version and an
//! undo appends a retraction, so nothing is ever overwritten and the whole history
//! stays readable. The current label of (item, reviewer, criterion) is its newest row.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::agreement::{AgreementReport, Bootstrap, agreement};
use crate::core::agreement::{NoiseReport, judge_within_noise};
pub use crate::core::annotation::{Assignment, Disagreement, FINAL, Item, JUDGE, Label};
use crate::core::rubric::Rubric;
use crate::core::signing::{self, Refusal, Roster};
use crate::service::base::now_rfc3339;
use crate::store::keys;
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub const ITEMS: &str = "items.lance";
pub const LABELS: &str = "labels.lance";
pub const ASSIGNMENTS: &str = "assignments.lance";

pub fn assignments_table(ws: &Workspace) -> Table<'_> {
    Table::of::<Assignment>(ws, ASSIGNMENTS)
}

/// item -> its newest assigned pair (the last in `assignments`, which are in log
/// order: the writer's clock plays no part).
pub fn pairs_of(assignments: &[Assignment]) -> HashMap<String, (String, String)> {
    assignments
        .iter()
        .map(|a| (a.item_id.clone(), (a.first.clone(), a.second.clone())))
        .collect()
}

pub fn items_table(ws: &Workspace) -> Table<'_> {
    Table::of::<Item>(ws, ITEMS)
}

/// The stored item rows as they count under `roster` ([`signing::check_items`]), and the
/// rows refused.
pub(super) fn items_under(rows: Vec<Item>, roster: &Roster) -> (Vec<Item>, Vec<Refusal>) {
    let checked = signing::check_items(rows, roster, &keys::verify_cached);
    (checked.kept, checked.refused)
}

pub fn labels_table(ws: &Workspace) -> Table<'_> {
    Table::of::<Label>(ws, LABELS)
}

pub use crate::service::base::now_nanos;

impl Label {
    pub fn new(
        item: &str,
        reviewer: &str,
        criterion: &str,
        label: Option<&str>,
        note: Option<&str>,
        rubric_version: &str,
    ) -> Self {
        // Ids are unique: a repeated id is refused on read, and two labels of one
        // process may share a clock reading.
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let seq = now_nanos();
        Self {
            label_id: format!("{reviewer}-{seq:x}-{}-{n}", std::process::id()),
            item_id: item.into(),
            reviewer: reviewer.into(),
            criterion: criterion.into(),
            label: label.map(str::to_string),
            note: note.map(str::to_string),
            timestamp: now_rfc3339(),
            seq,
            rubric_version: rubric_version.into(),
            adjudicator: None,
            signer: None,
            signature: None,
            log_rows: None,
            active_ms: None,
        }
    }
}

/// A label the study's rules refuse (an unknown item, criterion or label value, a
/// final label without adjudicator or rationale, another rubric version): it would be
/// refused again, unlike a store that failed, where trying again may work. Carried
/// inside the `anyhow::Error` [`save_labels`] returns, so a front tells the two apart
/// with `downcast_ref::<RefusedLabel>()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedLabel(pub String);

impl std::fmt::Display for RefusedLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RefusedLabel {}

/// Validate and commit labels (all or nothing): unknown items, criteria or label
/// values, and mixed rubric versions are rejected ([`RefusedLabel`]) before anything
/// is written.
pub async fn save_labels(
    ws: &Workspace,
    rubric: &Rubric,
    items: &[Item],
    labels: &[Label],
) -> Result<u64> {
    check_labels(rubric, items, labels).map_err(anyhow::Error::new)?;
    Ok(labels_table(ws).append(labels).await?)
}

/// The study's rules for a batch of labels, checked before anything is written.
fn check_labels(rubric: &Rubric, items: &[Item], labels: &[Label]) -> Result<(), RefusedLabel> {
    macro_rules! refuse {
        ($($t:tt)*) => { return Err(RefusedLabel(format!($($t)*))) };
    }
    let known: BTreeSet<&str> = items.iter().map(|i| i.item_id.as_str()).collect();
    let pairwise = rubric.pairwise();
    let versions: BTreeSet<&str> = labels.iter().map(|l| l.rubric_version.as_str()).collect();
    if versions.len() > 1 {
        refuse!("labels mix rubric versions {versions:?}; import one version at a time");
    }
    for l in labels {
        if l.reviewer == FINAL {
            // An adjudicated label: decided by a named lead, with a rationale.
            let Some(lead) = &l.adjudicator else {
                refuse!("final label {}: no adjudicator", l.label_id);
            };
            if let Err(e) = crate::core::annotation::check_reviewer(lead) {
                refuse!("final label {}: adjudicator {e}", l.label_id);
            }
            if l.label.is_some() && l.note.as_deref().is_none_or(|n| n.trim().is_empty()) {
                refuse!(
                    "final label {}: a rationale is required for every adjudicated label",
                    l.label_id
                );
            }
        } else if let Err(e) = crate::core::annotation::check_reviewer(&l.reviewer) {
            refuse!("label {}: {e}", l.label_id);
        }
        if !known.contains(l.item_id.as_str()) {
            refuse!("label {}: unknown item `{}`", l.label_id, l.item_id);
        }
        // A pair item is labelled first/second/tie on the rubric's criteria.
        let rubric = if crate::core::preference::is_pair_item(&l.item_id) {
            &pairwise
        } else {
            rubric
        };
        let Some(c) = rubric.criterion(&l.criterion) else {
            refuse!(
                "label {}: unknown criterion `{}` (rubric {} has {:?})",
                l.label_id,
                l.criterion,
                rubric.name,
                rubric.criteria.iter().map(|c| &c.key).collect::<Vec<_>>()
            );
        };
        if let Some(v) = &l.label
            && !rubric.labels_of(c).contains(v)
        {
            refuse!(
                "label {}: `{v}` is not a label of `{}` (allowed: {:?})",
                l.label_id,
                l.criterion,
                rubric.labels_of(c)
            );
        }
        if l.rubric_version != rubric.version {
            refuse!(
                "label {}: rubric version {} but the rubric is version {}",
                l.label_id,
                l.rubric_version,
                rubric.version
            );
        }
    }
    Ok(())
}

/// Current labels: (item, reviewer, criterion) -> newest label, the last in
/// `labels` (a log in its own order; retractions removed).
pub fn current(labels: &[Label]) -> BTreeMap<(String, String, String), Label> {
    let mut out: BTreeMap<(String, String, String), Label> = BTreeMap::new();
    for l in labels {
        let key = (l.item_id.clone(), l.reviewer.clone(), l.criterion.clone());
        out.insert(key, l.clone());
    }
    out.retain(|_, l| l.label.is_some());
    out
}

/// One row of the agreement table.
#[derive(Debug, Clone, Serialize)]
pub struct AgreementRow {
    pub criterion: String,
    pub pairs: Vec<(String, Option<AgreementReport>)>,
}

/// The agreement table: rows criteria + Overall, pairs R1-R2, Judge-R1, Judge-R2.
pub fn agreement_table(
    rubric: &Rubric,
    current: &BTreeMap<(String, String, String), Label>,
    reviewers: (&str, &str),
    boot: Bootstrap,
) -> Vec<AgreementRow> {
    let (r1, r2) = reviewers;
    let pairs = [(r1, r2), (JUDGE, r1), (JUDGE, r2)];
    // label of (reviewer, item, criterion)
    let mut by: HashMap<(&str, &str, &str), &str> = HashMap::new();
    let mut items: BTreeSet<&str> = BTreeSet::new();
    for ((item, reviewer, criterion), l) in current {
        if let Some(v) = &l.label {
            by.insert(
                (reviewer.as_str(), item.as_str(), criterion.as_str()),
                v.as_str(),
            );
            items.insert(item.as_str());
        }
    }
    let criteria: Vec<Option<&str>> = rubric
        .criteria
        .iter()
        .map(|c| Some(c.key.as_str()))
        .chain(std::iter::once(None))
        .collect();
    criteria
        .iter()
        .map(|crit| {
            let name = crit.map_or_else(
                || "Overall".to_string(),
                |k| {
                    rubric
                        .criterion(k)
                        .map_or(k.to_string(), |c| c.name.clone())
                },
            );
            let reports = pairs
                .iter()
                .map(|(a, b)| {
                    let keys: Vec<&str> = match crit {
                        Some(k) => vec![k],
                        None => rubric.criteria.iter().map(|c| c.key.as_str()).collect(),
                    };
                    let units: Vec<Vec<(String, String)>> = items
                        .iter()
                        .map(|item| {
                            keys.iter()
                                .filter_map(|k| {
                                    Some((
                                        by.get(&(*a, *item, *k))?.to_string(),
                                        by.get(&(*b, *item, *k))?.to_string(),
                                    ))
                                })
                                .collect::<Vec<_>>()
                        })
                        .filter(|v| !v.is_empty())
                        .collect();
                    let label = format!("{a} vs {b}");
                    (label, (!units.is_empty()).then(|| agreement(&units, boot)))
                })
                .collect();
            AgreementRow {
                criterion: name,
                pairs: reports,
            }
        })
        .collect()
}

/// The paper's published values (PubHealthBench-style study, Table 6; 100 items) as a reference row.
pub const PAPER_REFERENCE: &str = "paper (100 items): R1 vs R2 overall kappa 0.56 [0.48, 0.64], macro-F1 0.78 [0.74, 0.82]; Judge vs R1 0.42 / 0.71; Judge vs R2 0.55 / 0.78";

/// The two human reviewers to compare: given, else the two with most labels.
pub fn pick_reviewers(
    current: &BTreeMap<(String, String, String), Label>,
    given: Option<(String, String)>,
) -> Result<(String, String)> {
    if let Some(g) = given {
        return Ok(g);
    }
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for (_, r, _) in current.keys() {
        if r != JUDGE {
            *counts.entry(r.as_str()).or_default() += 1;
        }
    }
    counts.remove(FINAL);
    let mut v: Vec<(&str, usize)> = counts.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    match v.as_slice() {
        [a, b, ..] => {
            let mut pair = [a.0.to_string(), b.0.to_string()];
            pair.sort();
            let [x, y] = pair;
            Ok((x, y))
        }
        _ => bail!(
            "agreement needs labels from two reviewers (found {})",
            v.len()
        ),
    }
}

/// The rows of every agreement table: each criterion (its name and key), then
/// Overall with every key pooled.
pub fn criterion_rows(rubric: &Rubric) -> Vec<(String, Vec<&str>)> {
    rubric
        .criteria
        .iter()
        .map(|c| (c.name.clone(), vec![c.key.as_str()]))
        .chain(std::iter::once((
            "Overall".to_string(),
            rubric.criteria.iter().map(|c| c.key.as_str()).collect(),
        )))
        .collect()
}

/// Paired bootstrap "judge within human noise" per criterion and overall (same rows
/// as [`agreement_table`]), over the items where both reviewers and the judge labelled.
pub fn noise_table(
    rubric: &Rubric,
    current: &BTreeMap<(String, String, String), Label>,
    (r1, r2): (&str, &str),
    boot: Bootstrap,
) -> Vec<(String, NoiseReport)> {
    let get = |item: &str, who: &str, c: &str| {
        current
            .get(&(item.to_string(), who.to_string(), c.to_string()))
            .and_then(|l| l.label.clone())
    };
    let items: BTreeSet<&str> = current.keys().map(|(i, _, _)| i.as_str()).collect();
    criterion_rows(rubric)
        .into_iter()
        .map(|(name, keys)| {
            let units: Vec<Vec<[String; 3]>> = items
                .iter()
                .map(|item| {
                    keys.iter()
                        .filter_map(|k| {
                            Some([get(item, r1, k)?, get(item, r2, k)?, get(item, JUDGE, k)?])
                        })
                        .collect()
                })
                .collect();
            (name, judge_within_noise(&units, boot))
        })
        .collect()
}

/// Judge labels as label rows (reviewer `judge`), mapped to items via answer ids;
/// only the judgements of `model` (a judge model file name) when given.
pub fn judge_labels(
    items: &[Item],
    judg: &[crate::service::answer::JudgementRecord],
    model: Option<&str>,
) -> Vec<Label> {
    let by_answer: BTreeMap<&str, &Item> = items
        .iter()
        .filter_map(|i| Some((i.answer_id.as_deref()?, i)))
        .collect();
    let mut out = Vec::new();
    for (n, j) in judg.iter().enumerate() {
        // A named model, else every plain judge (a calibrated judge only by name).
        let counted = match model {
            Some(m) => m == j.judge_model,
            None => !crate::core::calibration::is_calibrated(&j.judge_model),
        };
        if !counted {
            continue;
        }
        if let Some(item) = by_answer.get(j.answer_id.as_str()) {
            for (c, l) in j.criteria.iter().zip(&j.labels) {
                let mut label =
                    Label::new(&item.item_id, JUDGE, c, Some(l), None, &j.rubric_version);
                label.seq = n as u64; // later judgements win
                out.push(label);
            }
        }
    }
    out
}

/// Items where `a` and `b` disagree, with their notes, the judge's label and the
/// adjudicated final label (from `latest`, every current label including finals).
pub fn disagreements(
    current: &BTreeMap<(String, String, String), Label>,
    latest: &BTreeMap<(String, String, String), Label>,
    a: &str,
    b: &str,
) -> Vec<Disagreement> {
    let key = |i: &str, r: &str, c: &str| (i.to_string(), r.to_string(), c.to_string());
    let mut out = Vec::new();
    for ((item, reviewer, criterion), la) in current {
        if reviewer != a {
            continue;
        }
        if let Some(lb) = current.get(&key(item, b, criterion))
            && la.label != lb.label
        {
            let fin = latest.get(&key(item, FINAL, criterion));
            out.push(Disagreement {
                item_id: item.clone(),
                criterion: criterion.clone(),
                first: la.label.clone().unwrap_or_default(),
                second: lb.label.clone().unwrap_or_default(),
                first_note: la.note.clone(),
                second_note: lb.note.clone(),
                judge: latest
                    .get(&key(item, JUDGE, criterion))
                    .and_then(|l| l.label.clone()),
                final_label: fin
                    .and_then(|f| Some((f.label.clone()?, f.note.clone().unwrap_or_default()))),
            });
        }
    }
    out
}

/// One row of the adjudicated set: the agreed label where the pair agreed (before
/// reveal), the lead's final label where they did not, or unresolved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FinalLabel {
    pub item_id: String,
    pub criterion: String,
    /// `None` while a disagreement is unresolved.
    pub label: Option<String>,
    /// `agreed`, `adjudicated` or `unresolved`.
    pub source: &'static str,
    pub first: String,
    pub second: String,
    pub rationale: Option<String>,
    pub adjudicator: Option<String>,
    /// Version of the final label in the label log (its `seq`).
    pub final_seq: Option<u64>,
}

/// The adjudicated set of the pair (r1, r2): every item and criterion both labelled.
pub fn final_labels(
    current: &BTreeMap<(String, String, String), Label>,
    latest: &BTreeMap<(String, String, String), Label>,
    (r1, r2): (&str, &str),
) -> Vec<FinalLabel> {
    let key = |i: &str, r: &str, c: &str| (i.to_string(), r.to_string(), c.to_string());
    let mut out = Vec::new();
    for ((item, reviewer, criterion), la) in current {
        if reviewer != r1 {
            continue;
        }
        let Some(lb) = current.get(&key(item, r2, criterion)) else {
            continue;
        };
        let (first, second) = (
            la.label.clone().unwrap_or_default(),
            lb.label.clone().unwrap_or_default(),
        );
        let fin = latest
            .get(&key(item, FINAL, criterion))
            .filter(|f| f.label.is_some());
        let (label, source) = match (&fin, first == second) {
            (Some(f), _) => (f.label.clone(), "adjudicated"),
            (None, true) => (Some(first.clone()), "agreed"),
            (None, false) => (None, "unresolved"),
        };
        out.push(FinalLabel {
            item_id: item.clone(),
            criterion: criterion.clone(),
            label,
            source,
            first,
            second,
            rationale: fin.and_then(|f| f.note.clone()),
            adjudicator: fin.and_then(|f| f.adjudicator.clone()),
            final_seq: fin.map(|f| f.seq),
        });
    }
    out
}
