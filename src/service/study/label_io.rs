//! Labels in and out: saved from a live front (one commit per batch, each label once),
//! imported from a file, exported for a viewer, and one item's history. Every label
//! goes through [`save_labels`]'s validation, from the TUI as from `labels import`.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::labels::{FINAL, FinalLabel, Item, Label, RefusedLabel, labels_table, save_labels};
use super::trust;
use crate::core::blinding::{Blinding, Schedule, Viewer};
use crate::core::rubric::Rubric;
use crate::core::signing::Refusal;
use crate::service::base::Context;

/// One row of a label import. Strict: an unknown (or misspelled) field is an error,
/// and `label` must be present: a retraction is an explicit `"label": null`, never
/// the accident of a missing key.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ImportRow {
    item_id: String,
    reviewer: String,
    criterion: String,
    #[serde(deserialize_with = "Option::deserialize")]
    label: Option<String>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    rubric_version: Option<String>,
}

/// Import a JSONL file of labels: validated as a whole and committed at once, or
/// nothing is written. Returns (labels, labels dataset version).
pub async fn import_labels(ctx: &Context, rubric: &Rubric, file: &Path) -> Result<(usize, u64)> {
    super::rubric::check_writing(ctx, rubric)
        .await
        .with_context(|| format!("nothing imported from {}", file.display()))?;
    let mut labels = read_label_file(file, rubric)?;
    // Signed by the importer: under a roster, only their own labels would count.
    let key = trust::my_key(ctx)?;
    let (roster, _) = trust::roster(ctx).await?;
    let (items, _) = trust::items_under_roster(ctx, &roster).await?;
    trust::check_authorship(&roster, &labels, &key)
        .with_context(|| format!("nothing imported from {}", file.display()))?;
    let read = labels_table(&ctx.workspace).count_rows().await?;
    for l in &mut labels {
        l.log_rows = Some(read);
        trust::sign_label(l, &key, roster.binding());
    }
    let version = save_labels(&ctx.workspace, rubric, &items, &labels)
        .await
        .with_context(|| format!("nothing imported from {}", file.display()))?;
    Ok((labels.len(), version))
}

/// The labels of a label file, parsed strictly (see [`ImportRow`]); validated against
/// the study by [`save_labels`] when they are committed.
pub fn read_label_file(file: &Path, rubric: &Rubric) -> Result<Vec<Label>> {
    let rows: Vec<ImportRow> = crate::service::base::read_jsonl(
        file,
        "a label row {item_id, reviewer, criterion, label (null retracts), note?, rubric_version?}",
    )?;
    let pairwise = rubric.pairwise();
    Ok(rows
        .iter()
        .map(|r| {
            let default = if crate::core::preference::is_pair_item(&r.item_id) {
                &pairwise.version
            } else {
                &rubric.version
            };
            let version = r.rubric_version.as_deref().unwrap_or(default);
            Label::new(
                &r.item_id,
                &r.reviewer,
                &r.criterion,
                r.label.as_deref(),
                r.note.as_deref(),
                version,
            )
        })
        .collect())
}

/// Save one label given in the TUI (validated against the study's `items` and the
/// rubric, like an import); returns the milliseconds from the call to the commit.
pub async fn save_label(
    ctx: &Context,
    rubric: &Rubric,
    items: &[Item],
    label: &Label,
) -> Result<f64> {
    save_label_batch(ctx, rubric, items, std::slice::from_ref(label)).await
}

/// Save labels given together in the TUI as one commit (validated as a whole),
/// each signed with this user's key; returns the milliseconds from the call to the
/// commit (signing included).
pub async fn save_label_batch(
    ctx: &Context,
    rubric: &Rubric,
    items: &[Item],
    labels: &[Label],
) -> Result<f64> {
    let t = std::time::Instant::now();
    let key = trust::my_key(ctx)?;
    let study = trust::binding(&ctx.workspace).await?;
    // The rows read before this commit (signed with the labels): the commit lands
    // at that position or later in any untouched log.
    let read = labels_table(&ctx.workspace).count_rows().await?;
    let mut signed = labels.to_vec();
    // An adjudication names the roster's lead, whatever name the front gave it (a TUI
    // started with `--role lead` but no `--reviewer` knows no name): signed by the
    // lead's key under another name, it would show "saved" and be refused on reload.
    if signed.iter().any(|l| l.reviewer == FINAL) {
        let (roster, _) = trust::roster(ctx).await?;
        if let Some((lead, lead_key)) = roster.lead().filter(|_| roster.is_signed())
            && lead_key == key.public_hex()
        {
            for l in signed.iter_mut().filter(|l| l.reviewer == FINAL) {
                l.adjudicator = Some(lead.to_string());
            }
        }
    }
    for l in &mut signed {
        l.log_rows = Some(read);
        trust::sign_label(l, &key, &study);
    }
    save_labels(&ctx.workspace, rubric, items, &signed).await?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// Commit `labels` one at a time after their batch commit failed, each label whose
/// id is already stored skipped (reported as saved). Why: a batch commit can fail
/// with its outcome unknown (an object store took the write and the reply was
/// lost), and a plain retry would then store each of its labels twice. Returns each
/// label's outcome in order: the milliseconds of its commit, or why it was refused.
pub async fn save_labels_each_once(
    ctx: &Context,
    rubric: &Rubric,
    items: &[Item],
    labels: &[Label],
) -> Vec<Result<f64>> {
    let stored: std::collections::HashSet<String> =
        match labels_table(&ctx.workspace).read_all::<Label>().await {
            Ok(rows) => rows.into_iter().map(|l| l.label_id).collect(),
            Err(e) => {
                let why = format!("{e:#}");
                return labels
                    .iter()
                    .map(|_| Err(anyhow::anyhow!("reading the stored labels: {why}")))
                    .collect();
            }
        };
    let mut out = Vec::with_capacity(labels.len());
    for l in labels {
        out.push(if stored.contains(&l.label_id) {
            Ok(0.0)
        } else {
            save_label(ctx, rubric, items, l).await
        });
    }
    out
}

/// Why a label given in a live front was not stored: the study's rules refused it
/// (it would be refused again: the front says so and keeps nothing to retry), or
/// storing it failed (the store, the key, the network: giving it again may work).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SaveError {
    Refused(String),
    Failed(String),
}

impl SaveError {
    /// The kind of `e`: refused when a [`RefusedLabel`] is inside it.
    pub fn of(e: &anyhow::Error) -> Self {
        if e.downcast_ref::<RefusedLabel>().is_some() {
            SaveError::Refused(format!("{e:#}"))
        } else {
            SaveError::Failed(format!("{e:#}"))
        }
    }
}

impl std::fmt::Display for SaveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SaveError::Refused(why) => write!(f, "refused: {why}"),
            SaveError::Failed(why) => write!(f, "storing it failed: {why}"),
        }
    }
}

/// Commit labels given together in a live front: one commit for the batch; should it
/// fail (one bad label refuses all, or the store's reply was lost), each is committed
/// alone, those already stored skipped ([`save_labels_each_once`]), so the good ones are
/// kept, none is stored twice, and only the bad one is reported. Returns each label's
/// outcome in order: the milliseconds to its commit, or why it was not stored.
pub async fn commit_labels(
    ctx: &Context,
    rubric: &Rubric,
    items: &[Item],
    labels: &[Label],
) -> Vec<Result<f64, SaveError>> {
    let each = match save_label_batch(ctx, rubric, items, labels).await {
        Ok(ms) => labels.iter().map(|_| Ok(ms)).collect(),
        Err(e) if labels.len() == 1 => vec![Err(e)],
        Err(_) => save_labels_each_once(ctx, rubric, items, labels).await,
    };
    each.into_iter()
        .map(|r| r.map_err(|e| SaveError::of(&e)))
        .collect()
}

/// File formats of a label export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Jsonl,
    Parquet,
}

/// A label export for one viewer: the bytes, how many label versions the viewer
/// may not see were left out, and the stored rows that do not count.
#[derive(Debug, Clone)]
pub struct LabelExport {
    pub bytes: Vec<u8>,
    pub withheld: usize,
    pub refused: Vec<Refusal>,
    /// Whether the study has a roster.
    pub signed: bool,
}

/// Every label version `viewer` may see, in `format`; `dest` names the destination
/// in errors. The lead's parquet export is the dataset as stored (refused rows
/// included, with their signer and signature columns to check); a reviewer's is
/// refused (it would be written from the raw table), their jsonl and csv are not.
/// Jsonl and csv hold only the rows that count.
pub async fn export_labels(
    ctx: &Context,
    rubric: &Rubric,
    format: ExportFormat,
    dest: &str,
    viewer: &Viewer,
) -> Result<LabelExport> {
    let table = labels_table(&ctx.workspace);
    if format == ExportFormat::Parquet {
        if *viewer != Viewer::Lead {
            bail!(
                "a parquet export is the whole labels dataset, for the study lead; export jsonl or csv (your labels and the items revealed to you)"
            );
        }
        let log = trust::trusted_log(ctx).await?;
        let mut buf = Vec::new();
        table.export_parquet(&mut buf, dest).await?;
        return Ok(LabelExport {
            bytes: buf,
            withheld: 0,
            signed: log.signed(),
            refused: log.refused,
        });
    }
    let log = trust::trusted_log(ctx).await?;
    let rubric = log.rubric_or(rubric);
    let shown = visible_label_rows(&rubric, &log.labels, &log.schedule, viewer);
    let withheld = log.labels.len() - shown.len();
    let bytes = match format {
        ExportFormat::Jsonl => labels_jsonl(&shown)?.into_bytes(),
        _ => labels_csv(&shown).into_bytes(),
    };
    Ok(LabelExport {
        bytes,
        withheld,
        signed: log.signed(),
        refused: log.refused,
    })
}

/// The label versions of `labels` (a log in commit order) that `viewer` may see,
/// in the same order.
pub fn visible_label_rows(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    viewer: &Viewer,
) -> Vec<Label> {
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(labels, &keys, schedule);
    blinding
        .visible_labels(viewer, labels)
        .into_iter()
        .cloned()
        .collect()
}

/// Label versions as JSON lines.
pub fn labels_jsonl(rows: &[Label]) -> Result<String> {
    Ok(rows
        .iter()
        .map(|l| serde_json::to_string(l).map(|s| s + "\n"))
        .collect::<Result<String, _>>()?)
}

/// Label versions as CSV (all fields quoted, RFC 4180 escaping).
pub fn labels_csv(all: &[Label]) -> String {
    let esc = crate::core::text::csv_quoted;
    let mut s = String::from(
        "label_id,item_id,reviewer,criterion,label,note,timestamp,seq,rubric_version,active_ms\n",
    );
    for l in all {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{},{}",
            esc(&l.label_id),
            esc(&l.item_id),
            esc(&l.reviewer),
            esc(&l.criterion),
            esc(l.label.as_deref().unwrap_or("")),
            esc(l.note.as_deref().unwrap_or("")),
            esc(&l.timestamp),
            l.seq,
            esc(&l.rubric_version),
            l.active_ms.map(|ms| ms.to_string()).unwrap_or_default()
        );
    }
    s
}

/// The adjudicated set as CSV (all fields quoted, RFC 4180 escaping).
pub fn final_csv(rows: &[FinalLabel]) -> String {
    let esc = crate::core::text::csv_quoted;
    let mut s = String::from(
        "item_id,criterion,label,source,first,second,rationale,adjudicator,final_seq\n",
    );
    for f in rows {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            esc(&f.item_id),
            esc(&f.criterion),
            esc(f.label.as_deref().unwrap_or("")),
            esc(f.source),
            esc(&f.first),
            esc(&f.second),
            esc(f.rationale.as_deref().unwrap_or("")),
            esc(f.adjudicator.as_deref().unwrap_or("")),
            f.final_seq.map(|s| s.to_string()).unwrap_or_default()
        );
    }
    s
}

/// One item's label history as a viewer may see it.
#[derive(Debug, Clone)]
pub struct History {
    /// The versions shown, oldest first (log order).
    pub rows: Vec<Label>,
    /// Versions left out by blinding.
    pub withheld: usize,
    /// The item's stored rows that do not count.
    pub refused: Vec<Refusal>,
    pub signed: bool,
}

/// Every version of one item's labels that `viewer` may see, oldest first, how many
/// were left out, and the item's rows that do not count.
pub async fn label_history(
    ctx: &Context,
    rubric: &Rubric,
    item_id: &str,
    viewer: &Viewer,
) -> Result<History> {
    let log = trust::trusted_log(ctx).await?;
    let rubric = log.rubric_or(rubric);
    let (rows, withheld) = history_of(&rubric, &log.labels, &log.schedule, item_id, viewer);
    Ok(History {
        rows,
        withheld,
        signed: log.signed(),
        refused: log
            .refused
            .into_iter()
            .filter(|r| r.item.as_deref() == Some(item_id))
            .collect(),
    })
}

/// [`label_history`] over a label log already read.
pub fn history_of(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    item_id: &str,
    viewer: &Viewer,
) -> (Vec<Label>, usize) {
    let of_item = labels.iter().filter(|l| l.item_id == item_id).count();
    let rows: Vec<Label> = visible_label_rows(rubric, labels, schedule, viewer)
        .into_iter()
        .filter(|l| l.item_id == item_id)
        .collect();
    let withheld = of_item - rows.len();
    (rows, withheld)
}
