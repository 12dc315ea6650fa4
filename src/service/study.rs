//! The annotation study's use cases: creating items, saving, importing and exporting
//! labels, and the agreement table. Every label goes through [`save_labels`]'s
//! validation, from the TUI as from `labels import`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::annotation::{
    AgreementRow, Disagreement, Item, Label, agreement_table, current, disagreements, items_table,
    judge_labels, labels_table, pick_reviewers, save_labels,
};
use super::context::Context;
use super::generation::{AnswerRecord, answers, judgements};
use crate::core::agreement::Bootstrap;
pub use crate::core::annotation::RaterPair;
use crate::core::question::MissingTargets;
use crate::core::rng::Rng;
use crate::core::rubric::Rubric;

/// Where new items come from.
#[derive(Debug, Clone)]
pub enum ItemSource {
    /// The answers of a generation run.
    Run(String),
    /// A JSONL file `{item_id, question, reference_answer, target_chunk, answer}`.
    File(PathBuf),
}

/// What [`create_items`] did.
#[derive(Debug, Clone, Default)]
pub struct CreatedItems {
    pub created: usize,
    /// Target chunks of the run's answers that are not in the corpus (their items
    /// have no target text).
    pub missing_targets: MissingTargets,
}

/// Create items (optionally a seeded random sample); items already present are kept
/// as they are.
pub async fn create_items(
    ctx: &Context,
    source: &ItemSource,
    set: Option<String>,
    sample: Option<(usize, u64)>,
) -> Result<CreatedItems> {
    let existing: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let (mut items, missing_targets) = match source {
        ItemSource::Run(run) => items_from_run(ctx, run, set).await?,
        ItemSource::File(f) => (items_from_file(f, set)?, MissingTargets::default()),
    };
    if let Some((n, seed)) = sample {
        let idx = Rng::new(seed).sample_indices(items.len(), n);
        items = idx.into_iter().map(|i| items[i].clone()).collect();
    }
    items.retain(|i| !existing.iter().any(|e| e.item_id == i.item_id));
    if !items.is_empty() {
        items_table(&ctx.workspace).append(&items).await?;
    }
    Ok(CreatedItems {
        created: items.len(),
        missing_targets,
    })
}

async fn items_from_run(
    ctx: &Context,
    run: &str,
    set: Option<String>,
) -> Result<(Vec<Item>, MissingTargets)> {
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let chunks = super::corpus::chunks_or_empty(ctx).await?;
    let known: std::collections::HashSet<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let missing = MissingTargets::find(
        all.iter()
            .filter(|a| a.run == run)
            .map(|a| a.target_ids.iter().map(String::as_str)),
        |id| known.contains(id),
    );
    let set = set.unwrap_or_else(|| run.to_string());
    let v: Vec<Item> = all
        .into_iter()
        .filter(|a| a.run == run)
        .map(|a| Item {
            item_id: a.answer_id.clone(),
            set: set.clone(),
            target_chunk: a
                .target_ids
                .iter()
                .filter_map(|t| chunks.iter().find(|c| &c.id == t))
                .map(|c| c.text.clone())
                .collect::<Vec<_>>()
                .join("\n\n"),
            question: a.question,
            reference_answer: a.reference_answer.unwrap_or_default(),
            answer: a.answer,
            answer_id: Some(a.answer_id),
        })
        .collect();
    if v.is_empty() {
        bail!("no answers in run `{run}` (see `raglab report answers`)");
    }
    Ok((v, missing))
}

/// An item as written in an items file; the set comes from `--set` or the file name.
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ItemRow {
    item_id: String,
    question: String,
    #[serde(default)]
    reference_answer: String,
    #[serde(default)]
    target_chunk: String,
    answer: String,
    #[serde(default)]
    answer_id: Option<String>,
}

/// The items of an items file (strict: unknown fields are errors, with `FILE:LINE`).
pub fn items_from_file(f: &Path, set: Option<String>) -> Result<Vec<Item>> {
    let set = set.unwrap_or_else(|| {
        f.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default()
    });
    let rows: Vec<ItemRow> = super::jsonl::read_jsonl(
        f,
        "an item {item_id, question, answer, reference_answer?, target_chunk?, answer_id?}",
    )?;
    Ok(rows
        .into_iter()
        .map(|r| Item {
            item_id: r.item_id,
            set: set.clone(),
            question: r.question,
            reference_answer: r.reference_answer,
            target_chunk: r.target_chunk,
            answer: r.answer,
            answer_id: r.answer_id,
        })
        .collect())
}

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
    let items: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let labels = read_label_file(file, rubric)?;
    let version = save_labels(&ctx.workspace, rubric, &items, &labels)
        .await
        .with_context(|| format!("nothing imported from {}", file.display()))?;
    Ok((labels.len(), version))
}

/// The labels of a label file, parsed strictly (see [`ImportRow`]); validated against
/// the study by [`save_labels`] when they are committed.
pub fn read_label_file(file: &Path, rubric: &Rubric) -> Result<Vec<Label>> {
    let rows: Vec<ImportRow> = super::jsonl::read_jsonl(
        file,
        "a label row {item_id, reviewer, criterion, label (null retracts), note?, rubric_version?}",
    )?;
    Ok(rows
        .iter()
        .map(|r| {
            let version = r.rubric_version.as_deref().unwrap_or(&rubric.version);
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
    let t = std::time::Instant::now();
    save_labels(&ctx.workspace, rubric, items, std::slice::from_ref(label)).await?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// File formats of a label export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    Csv,
    Jsonl,
    Parquet,
}

/// Every label version in `format`; `dest` names the destination in errors.
pub async fn export_labels(ctx: &Context, format: ExportFormat, dest: &str) -> Result<Vec<u8>> {
    let table = labels_table(&ctx.workspace);
    Ok(match format {
        ExportFormat::Jsonl => table
            .read_all::<Label>()
            .await?
            .iter()
            .map(|l| serde_json::to_string(l).map(|s| s + "\n"))
            .collect::<Result<String, _>>()?
            .into_bytes(),
        ExportFormat::Csv => labels_csv(&table.read_all::<Label>().await?).into_bytes(),
        ExportFormat::Parquet => {
            let mut buf = Vec::new();
            table.export_parquet(&mut buf, dest).await?;
            buf
        }
    })
}

/// Every label version as CSV (all fields quoted, RFC 4180 escaping).
fn labels_csv(all: &[Label]) -> String {
    let esc = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let mut s = String::from(
        "label_id,item_id,reviewer,criterion,label,note,timestamp,seq,rubric_version\n",
    );
    for l in all {
        let _ = writeln!(
            s,
            "{},{},{},{},{},{},{},{},{}",
            esc(&l.label_id),
            esc(&l.item_id),
            esc(&l.reviewer),
            esc(&l.criterion),
            esc(l.label.as_deref().unwrap_or("")),
            esc(l.note.as_deref().unwrap_or("")),
            esc(&l.timestamp),
            l.seq,
            esc(&l.rubric_version)
        );
    }
    s
}

/// Write `bytes` to a sibling temporary file and rename it over `path`, so an
/// interrupted export never leaves a truncated file where a good one was.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}

/// Every version of one item's labels, oldest first.
pub async fn label_history(ctx: &Context, item_id: &str) -> Result<Vec<Label>> {
    let mut rows: Vec<Label> = labels_table(&ctx.workspace)
        .read_all::<Label>()
        .await?
        .into_iter()
        .filter(|l| l.item_id == item_id)
        .collect();
    rows.sort_by_key(|l| l.seq);
    Ok(rows)
}

/// Items, every label version (the judge's included, as reviewer `judge`) and the
/// stored answers: what the Annotate pane shows.
#[derive(Debug, Clone, Default)]
pub struct Study {
    pub items: Vec<Item>,
    pub labels: Vec<Label>,
    pub answers: Vec<AnswerRecord>,
}

pub async fn load_study(ctx: &Context) -> Result<Study> {
    let (items, labels) = items_and_labels(ctx).await?;
    let answers = answers(&ctx.workspace).read_all().await?;
    Ok(Study {
        items,
        labels,
        answers,
    })
}

/// The items and every label version, the judge's included (reviewer `judge`).
async fn items_and_labels(ctx: &Context) -> Result<(Vec<Item>, Vec<Label>)> {
    let items: Vec<Item> = items_table(&ctx.workspace).read_all().await?;
    let mut labels: Vec<Label> = labels_table(&ctx.workspace).read_all().await?;
    labels.extend(judge_labels(
        &items,
        &judgements(&ctx.workspace).read_all().await?,
    ));
    Ok((items, labels))
}

/// The agreement table of two reviewers (given, else the two with most labels).
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub reviewers: (String, String),
    pub bootstrap: Bootstrap,
    pub rows: Vec<AgreementRow>,
    pub seconds: f64,
    /// Items on which the selected pair disagrees (filled by [`agreement_with`]).
    #[serde(skip)]
    pub disagreements: Vec<Disagreement>,
}

/// Kappa and macro-F1 with bootstrap CIs per criterion and overall, and the
/// disagreements of `pair`.
pub async fn agreement_with(
    ctx: &Context,
    rubric: &Rubric,
    reviewers: Option<(String, String)>,
    boot: Bootstrap,
    pair: RaterPair,
) -> Result<Agreement> {
    let (_, labels) = items_and_labels(ctx).await?;
    let rubric = rubric.clone();
    tokio::task::spawn_blocking(move || {
        let cur = current(&labels);
        let (r1, r2) = pick_reviewers(&cur, reviewers)?;
        let started = std::time::Instant::now();
        let rows = agreement_table(&rubric, &cur, (&r1, &r2), boot);
        let seconds = started.elapsed().as_secs_f64();
        let (a, b) = pair.raters((&r1, &r2));
        Ok(Agreement {
            disagreements: disagreements(&cur, &a, &b),
            reviewers: (r1, r2),
            bootstrap: boot,
            rows,
            seconds,
        })
    })
    .await
    .context("the agreement computation stopped")?
}
