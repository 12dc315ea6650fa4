//! The annotation study's use cases: creating items, saving, importing and exporting
//! labels, and the agreement table. Every label goes through [`save_labels`]'s
//! validation, from the TUI as from `labels import`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::labels::{
    ASSIGNMENTS, AgreementRow, Assignment, Disagreement, FINAL, FinalLabel, ITEMS, Item, JUDGE,
    LABELS, Label, agreement_table, disagreements, final_labels, items_table, judge_labels,
    labels_table, noise_table, pick_reviewers, read_items, save_labels,
};
use super::trust::{self, TrustedLog};
use crate::core::agreement::raters::RaterReport;
use crate::core::agreement::{AgreementReport, Bootstrap, NoiseReport};
pub use crate::core::annotation::RaterPair;
pub use crate::core::blinding::{Blinding, LabelVersion, Schedule, Sight, Viewer};
use crate::core::question::MissingTargets;
use crate::core::rng::Rng;
use crate::core::rubric::Rubric;
pub use crate::core::signing::Refusal;
use crate::service::answer::{AnswerRecord, answers, judgements};
use crate::service::base::{Context, dataset_stamp};

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
    let existing: Vec<Item> = read_items(&ctx.workspace).await?;
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
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
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
        .map(|a| item_of_answer(a, &chunks, &set))
        .collect();
    if v.is_empty() {
        bail!("no answers in run `{run}` (see `raglab report answers`)");
    }
    Ok((v, missing))
}

/// The item of one stored answer: its question, reference, target chunks' text and
/// the answer; the item id is the answer id.
pub(super) fn item_of_answer(
    a: AnswerRecord,
    chunks: &[crate::core::chunk::Chunk],
    set: &str,
) -> Item {
    Item {
        item_id: a.answer_id.clone(),
        set: set.to_string(),
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
    }
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
    let rows: Vec<ItemRow> = crate::service::base::read_jsonl(
        f,
        "an item {item_id, question, answer, reference_answer?, target_chunk?, answer_id?}",
    )?;
    if let Some(r) = rows
        .iter()
        .find(|r| crate::core::preference::is_pair_item(&r.item_id))
    {
        bail!(
            "item id `{}` starts with `{}`, which marks pair items (made by `annotate create --pairs`); rename it",
            crate::core::text::sanitize_for_terminal(&r.item_id),
            crate::core::preference::PAIR_ITEM_PREFIX
        );
    }
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
    super::rubric::check_writing(ctx, rubric)
        .await
        .with_context(|| format!("nothing imported from {}", file.display()))?;
    let items: Vec<Item> = read_items(&ctx.workspace).await?;
    let mut labels = read_label_file(file, rubric)?;
    // Signed by the importer: under a roster, only their own labels would count.
    let key = trust::my_key(ctx)?;
    let (roster, _) = trust::roster(ctx).await?;
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

/// Commit labels given together in a live front: one commit for the batch; should it
/// fail (one bad label refuses all, or the store's reply was lost), each is committed
/// alone, those already stored skipped ([`save_labels_each_once`]), so the good ones are
/// kept, none is stored twice, and only the bad one is reported. Returns each label's
/// outcome in order: the milliseconds to its commit, or why it was refused.
pub async fn commit_labels(
    ctx: &Context,
    rubric: &Rubric,
    items: &[Item],
    labels: &[Label],
) -> Vec<Result<f64>> {
    match save_label_batch(ctx, rubric, items, labels).await {
        Ok(ms) => labels.iter().map(|_| Ok(ms)).collect(),
        Err(e) if labels.len() == 1 => vec![Err(e)],
        Err(_) => save_labels_each_once(ctx, rubric, items, labels).await,
    }
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

/// Items, every label version that counts (the judge's included, as reviewer
/// `judge`), the assignments and the stored answers: what the Annotate pane shows.
#[derive(Debug, Clone, Default)]
pub struct Study {
    pub items: Vec<Item>,
    pub labels: Vec<Label>,
    pub answers: Vec<AnswerRecord>,
    pub assignments: Vec<Assignment>,
    /// The assignments over `labels`' positions (who reviews what from when on).
    pub schedule: Schedule,
    /// Every judge's labels (the Query pane links a question's answers to them).
    pub judgements: Vec<crate::service::answer::JudgementRecord>,
    /// Every answer's grounded scores, the latest per judge (`answers ground`).
    pub grounded: Vec<crate::core::grounded::GroundedRecord>,
    /// Stored rows that do not count (unsigned or forged), named.
    pub refused: Vec<Refusal>,
    /// Whether the study has a roster (else it is an unsigned study).
    pub signed: bool,
    /// The roster and this user's public key (for checking a typed name).
    pub roster: crate::core::signing::Roster,
    pub my_key: Option<String>,
    /// The study's pinned rubric, if its lead pinned one: the Annotate pane labels
    /// with it, whatever rubric the session started with.
    pub rubric: Option<Rubric>,
}

pub async fn load_study(ctx: &Context) -> Result<Study> {
    let (items, log, labels) = study_log(ctx, None).await?;
    let answers = answers(&ctx.workspace).read_all().await?;
    let judgements = crate::service::answer::judgements(&ctx.workspace)
        .read_all()
        .await?;
    let grounded = crate::service::answer::grounded_records(ctx).await?;
    let signed = log.signed();
    Ok(Study {
        items,
        labels,
        answers,
        assignments: log.assignments,
        schedule: log.schedule,
        judgements,
        grounded,
        refused: log.refused,
        signed,
        rubric: log.rubric,
        roster: log.roster,
        my_key: signed
            .then(|| trust::my_key(ctx).map(|k| k.public_hex()))
            .transpose()?,
    })
}

/// A cheap fingerprint of the study's datasets (the version files of items, labels,
/// the roster, the study's founding record, the rubric pins,
/// judgements, assignments, answers and grounded scores): when it changes, another process
/// committed, and the panes reload. Reads directory listings only.
pub fn study_fingerprint(ctx: &Context) -> Vec<Option<String>> {
    [
        ITEMS,
        LABELS,
        ASSIGNMENTS,
        trust::ROSTER,
        super::founding::FOUNDED,
        super::pin::RUBRIC_PINS,
        crate::service::answer::JUDGEMENTS,
        crate::service::answer::ANSWERS,
        crate::service::answer::GROUNDED,
    ]
    .iter()
    .map(|name| dataset_stamp(ctx, name))
    .collect()
}

/// The items, the study's logs as they count, and every label version that counts
/// with the judge's after them (reviewer `judge`; only `judge_model`'s judgements
/// when given).
async fn study_log(
    ctx: &Context,
    judge_model: Option<&str>,
) -> Result<(Vec<Item>, TrustedLog, Vec<Label>)> {
    let items: Vec<Item> = read_items(&ctx.workspace).await?;
    let log = trust::trusted_log(ctx).await?;
    let mut labels = log.labels.clone();
    labels.extend(judge_labels(
        &items,
        &judgements(&ctx.workspace).read_all().await?,
        judge_model,
    ));
    Ok((items, log, labels))
}

/// What an agreement is computed over, and for whom.
#[derive(Debug, Clone)]
pub struct AgreementRequest {
    /// The two reviewers (default: the two with most labels the viewer may see).
    pub reviewers: Option<(String, String)>,
    /// The reviewers of the all-reviewer agreement (default: every reviewer with
    /// labels the viewer may see); computed for more than two reviewers, or two
    /// when the rubric's labels are ordered.
    pub raters: Option<Vec<String>>,
    pub boot: Bootstrap,
    /// The pair whose disagreements are listed.
    pub pair: RaterPair,
    /// A reviewer sees per-item detail and statistics only over items revealed to
    /// them and submitted by them; the lead sees everything.
    pub viewer: Viewer,
    pub version: LabelVersion,
    /// The judge model file whose judgements are compared (default: every plain
    /// judge, the newest judgement of an answer winning; a calibrated judge's only
    /// when named).
    pub judge_model: Option<String>,
    /// The gold rows that count ([`super::gold_rows`]); scored only for the lead
    /// ([`agreement_with`] reads them for the lead alone).
    pub gold: Vec<crate::core::gold::GoldLabel>,
    /// Items per window of the agreement over time ([`DRIFT_WINDOW`] by default).
    pub window: usize,
}

/// The default window of the agreement over time, in items.
pub const DRIFT_WINDOW: usize = 20;

impl Default for AgreementRequest {
    fn default() -> Self {
        Self {
            reviewers: None,
            raters: None,
            boot: Bootstrap::default(),
            pair: RaterPair::Reviewers,
            viewer: Viewer::Nobody,
            version: LabelVersion::BeforeReveal,
            judge_model: None,
            gold: Vec::new(),
            window: DRIFT_WINDOW,
        }
    }
}

/// The agreement table of two reviewers with the judge, for one viewer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Agreement {
    pub reviewers: (String, String),
    pub bootstrap: Bootstrap,
    pub rows: Vec<AgreementRow>,
    /// Judge within human noise, per criterion and overall.
    pub noise: Vec<(String, NoiseReport)>,
    /// The judge against the adjudicated final labels (agreed + adjudicated).
    pub judge_vs_final: Vec<(String, Option<AgreementReport>)>,
    pub version: LabelVersion,
    /// Labels changed after their item was revealed (item, reviewer, criterion whose
    /// newest label differs from the one given blind).
    pub changed_after_reveal: usize,
    /// Label versions given after reveal (each kept, marked).
    pub labels_after_reveal: usize,
    pub judge_model: Option<String>,
    /// Every judge model with judgements on these items.
    pub judge_models: Vec<String>,
    /// Human reviewers the viewer may compare.
    pub reviewer_names: Vec<String>,
    /// Items left out because they are not revealed to the viewer.
    pub hidden_items: usize,
    pub seconds: f64,
    /// Stored rows left out because they are unsigned or forged, named.
    pub refused: Vec<Refusal>,
    /// Whether the study has a roster (else it is an unsigned study).
    pub signed: bool,
    /// Every reviewer's agreement at once (more than two reviewers, or ordered labels).
    pub raters: Option<RaterReport>,
    /// Each reviewer's accuracy on the gold items (the lead's report only; absent
    /// for a reviewer, so nothing they read tells gold items apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold: Option<Vec<crate::core::gold::GoldAccuracy>>,
    /// Agreement per window of items in the order they were revealed (every
    /// rater's alpha and the pair's kappa), over the items the viewer may see.
    pub drift: Option<crate::core::agreement::drift::Drift>,
    /// Each reviewer's active time per item (the lead's report only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Vec<crate::core::timing::ReviewerTime>>,
    /// Items on which the selected pair disagrees (only items the viewer may see).
    #[serde(skip)]
    pub disagreements: Vec<Disagreement>,
}

/// Kappa and macro-F1 with bootstrap CIs per criterion and overall, judge within
/// noise, the judge against the final labels, and the disagreements of the pair.
pub async fn agreement_with(
    ctx: &Context,
    rubric: &Rubric,
    mut req: AgreementRequest,
) -> Result<Agreement> {
    if req.viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let mut gold_refused = Vec::new();
    if req.viewer == Viewer::Lead {
        (req.gold, gold_refused) = super::gold_rows(ctx).await?;
    }
    let (items, log, labels) = study_log(ctx, req.judge_model.as_deref()).await?;
    let judge_models: Vec<String> = judgements(&ctx.workspace)
        .read_all::<crate::service::answer::JudgementRecord>()
        .await?
        .into_iter()
        .filter(|j| {
            items
                .iter()
                .any(|i| i.answer_id.as_deref() == Some(&j.answer_id))
        })
        .map(|j| j.judge_model)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let rubric = log.rubric_or(rubric);
    let signed = log.signed();
    let (schedule, refused) = (log.schedule, log.refused);
    let mut a = tokio::task::spawn_blocking(move || {
        agreement_of(&rubric, &labels, &schedule, judge_models, req)
    })
    .await
    .context("the agreement computation stopped")??;
    a.signed = signed;
    a.refused = refused;
    a.refused.extend(gold_refused);
    Ok(a)
}

/// What a view says to a viewer without an identity (it shows no one's labels).
pub const NO_IDENTITY: &str = "no labels are shown without an identity: give your reviewer name (`--reviewer NAME`, or type it in the Annotate pane) to see your labels and the items revealed to you";

/// The agreement of [`agreement_with`] over a label log already read (every label
/// version, the judge's included): only what `req.viewer` may see counts.
pub fn agreement_of(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    judge_models: Vec<String>,
    req: AgreementRequest,
) -> Result<Agreement> {
    if req.viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(labels, &keys, schedule);
    // Pair items' first/second/tie labels count only in a pairwise rubric's table
    // (`preferences` gives their agreement), single answers' only in the others.
    let kind = |item: &str| crate::core::preference::is_pair_item(item) == rubric.is_pairwise();
    let visible: Vec<&Label> = blinding
        .visible_labels(&req.viewer, labels)
        .into_iter()
        .filter(|l| kind(&l.item_id))
        .collect();
    let all_items: std::collections::BTreeSet<&str> = labels
        .iter()
        .map(|l| l.item_id.as_str())
        .filter(|i| kind(i))
        .collect();
    let hidden_items = all_items
        .iter()
        .filter(|i| !blinding.visible(&req.viewer, i))
        .count();
    let cur = blinding.current(&visible, req.version);
    let latest = blinding.current(&visible, LabelVersion::Latest);
    let pair_labels = labels.iter().any(|l| !kind(&l.item_id)) && !rubric.is_pairwise();
    let (r1, r2) = pair_to_compare(&cur, &req, hidden_items, pair_labels)?;
    let started = std::time::Instant::now();
    let rows = agreement_table(rubric, &cur, (&r1, &r2), req.boot);
    let noise = noise_table(rubric, &cur, (&r1, &r2), req.boot);
    let finals = final_labels(&cur, &latest, (&r1, &r2));
    let judge_vs_final = judge_against_final(rubric, &cur, &finals, req.boot);
    let reviewer_names = super::raters::human_reviewers(&cur);
    // Two reviewers named with `--reviewers` get the all-reviewer table too (AC1 and
    // Brennan-Prediger for a pair); unnamed, two reviewers get it for ordered labels.
    let named_pair = req.raters.as_ref().is_some_and(|r| r.len() == 2);
    let raters = req.raters.clone().unwrap_or_else(|| reviewer_names.clone());
    let drift = {
        let order = reveal_order(&all_items, &blinding, &req.viewer);
        (raters.len() >= 2 && !order.is_empty()).then(|| {
            super::raters::drift_report(
                rubric,
                &cur,
                &raters,
                &order,
                (r1.as_str(), r2.as_str()),
                req.window,
            )
        })
    };
    let raters =
        (raters.len() > 2 || ((rubric.ordered || named_pair) && raters.len() == 2)).then(|| {
            let visible = |item: &str| blinding.visible(&req.viewer, item);
            super::raters::rater_report(rubric, &cur, &raters, visible, req.boot)
        });
    let gold = (req.viewer == Viewer::Lead && !req.gold.is_empty())
        .then(|| super::gold_report(&cur, &req.gold, &reviewer_names, req.boot));
    let time = (req.viewer == Viewer::Lead)
        .then(|| crate::core::timing::time_per_item(&visible, &reviewer_names));
    let seconds = started.elapsed().as_secs_f64();
    let (a, b) = req.pair.raters((&r1, &r2));
    Ok(Agreement {
        raters,
        drift,
        gold,
        time,
        disagreements: disagreements(&cur, &latest, &a, &b),
        changed_after_reveal: blinding.changed_after_reveal(&visible),
        labels_after_reveal: visible.iter().filter(|l| blinding.after_reveal(l)).count(),
        reviewers: (r1, r2),
        bootstrap: req.boot,
        rows,
        noise,
        judge_vs_final,
        version: req.version,
        judge_model: req.judge_model,
        judge_models,
        reviewer_names,
        hidden_items,
        seconds,
        refused: Vec::new(),
        signed: false,
    })
}

/// The two reviewers the table compares, or why there are none to show this viewer.
fn pair_to_compare(
    cur: &std::collections::BTreeMap<(String, String, String), Label>,
    req: &AgreementRequest,
    hidden_items: usize,
    pair_labels: bool,
) -> Result<(String, String)> {
    match pick_reviewers(cur, req.reviewers.clone()) {
        Ok(pair) => Ok(pair),
        // Said without naming any way around it: waiting is the only way.
        Err(_) if hidden_items > 0 && req.viewer != Viewer::Lead => bail!(
            "blind: none of the {hidden_items} labelled items is revealed to you yet (an item is revealed to you once all of its assigned reviewers have submitted it and you have submitted it too)"
        ),
        Err(e) if pair_labels => bail!(
            "{e:#}; the labels here are on pair items (first/second/tie): their ranking and agreement are `raglab --role lead preferences`"
        ),
        Err(e) => Err(e),
    }
}

/// Labelling order: each item visible to `viewer` where it was revealed (all its
/// reviewers had submitted it) in the label log; items not yet revealed are left out.
fn reveal_order<'a>(
    items: &std::collections::BTreeSet<&'a str>,
    blinding: &Blinding,
    viewer: &Viewer,
) -> Vec<&'a str> {
    let mut order: Vec<(usize, &str)> = items
        .iter()
        .filter(|i| blinding.visible(viewer, i))
        .filter_map(|&i| Some((blinding.reveal_at(i)?, i)))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

/// Kappa and macro-F1 of the judge against the resolved final labels, per criterion
/// and overall.
fn judge_against_final(
    rubric: &Rubric,
    cur: &std::collections::BTreeMap<(String, String, String), Label>,
    finals: &[FinalLabel],
    boot: Bootstrap,
) -> Vec<(String, Option<AgreementReport>)> {
    let judge = |item: &str, c: &str| {
        cur.get(&(item.to_string(), JUDGE.to_string(), c.to_string()))
            .and_then(|l| l.label.clone())
    };
    super::labels::criterion_rows(rubric)
        .into_iter()
        .map(|(name, keys)| {
            let mut by_item: std::collections::BTreeMap<&str, Vec<(String, String)>> =
                Default::default();
            for f in finals
                .iter()
                .filter(|f| keys.contains(&f.criterion.as_str()))
            {
                if let (Some(fl), Some(j)) = (&f.label, judge(&f.item_id, &f.criterion)) {
                    by_item.entry(&f.item_id).or_default().push((j, fl.clone()));
                }
            }
            let units: Vec<Vec<(String, String)>> = by_item.into_values().collect();
            (
                name,
                (!units.is_empty()).then(|| crate::core::agreement::agreement(&units, boot)),
            )
        })
        .collect()
}

/// A lead's final label for one item and criterion, with its rationale.
pub fn final_label(
    rubric: &Rubric,
    lead: &str,
    item: &str,
    criterion: &str,
    label: &str,
    rationale: &str,
) -> Label {
    let mut l = Label::new(
        item,
        FINAL,
        criterion,
        Some(label),
        Some(rationale),
        &rubric.version,
    );
    l.label_id = l.label_id.replacen("final-", &format!("final-{lead}-"), 1);
    l.adjudicator = Some(lead.to_string());
    l
}

/// The adjudicated set of the two reviewers (default: the two with most labels),
/// as `viewer` may see it (a reviewer: the items revealed to them), with how many
/// disagreements are still unresolved.
pub async fn export_final(
    ctx: &Context,
    rubric: &Rubric,
    reviewers: Option<(String, String)>,
    viewer: &Viewer,
) -> Result<(Vec<FinalLabel>, usize, Vec<Refusal>)> {
    let (_, log, labels) = study_log(ctx, None).await?;
    let rubric = log.rubric_or(rubric);
    let (finals, unresolved) = finals_of(&rubric, &labels, &log.schedule, reviewers, viewer)?;
    Ok((finals, unresolved, log.refused))
}

/// [`export_final`] over a label log already read.
pub fn finals_of(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    reviewers: Option<(String, String)>,
    viewer: &Viewer,
) -> Result<(Vec<FinalLabel>, usize)> {
    if *viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(labels, &keys, schedule);
    let seen = blinding.visible_labels(viewer, labels);
    let cur = blinding.current(&seen, LabelVersion::BeforeReveal);
    let latest = blinding.current(&seen, LabelVersion::Latest);
    let (r1, r2) = pick_reviewers(&cur, reviewers)?;
    let finals = final_labels(&cur, &latest, (&r1, &r2));
    let unresolved = finals.iter().filter(|f| f.label.is_none()).count();
    Ok((finals, unresolved))
}

/// What `viewer` may see of the study in the workspace (for views that start from
/// stored answers: the judge's labels, pass rates).
pub async fn sight(ctx: &Context, viewer: &Viewer) -> Result<Sight> {
    let rubric = ctx.rubric(None)?;
    let items: Vec<Item> = read_items(&ctx.workspace).await?;
    if *viewer == Viewer::Lead || items.is_empty() {
        return Ok(Sight::new(viewer.clone(), Blinding::default(), &items));
    }
    let log = trust::trusted_log(ctx).await?;
    let rubric = log.rubric_or(&rubric);
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(&log.labels, &keys, &log.schedule);
    Ok(Sight::new(viewer.clone(), blinding, &items))
}

/// The judgements whose labels `viewer` may see: those of answers that are no study
/// item, or whose items are revealed to the viewer (all of them for the lead).
pub async fn visible_judgements(
    ctx: &Context,
    viewer: &Viewer,
    judgements: Vec<crate::core::answer::JudgementRecord>,
) -> Result<Vec<crate::core::answer::JudgementRecord>> {
    if *viewer == Viewer::Lead {
        return Ok(judgements);
    }
    Ok(sight(ctx, viewer).await?.judgements_seen(judgements))
}

/// Send one stored answer to annotation as an item (set `tui`); returns whether it
/// was new.
pub async fn add_answer_item(ctx: &Context, answer_id: &str) -> Result<bool> {
    let existing: Vec<Item> = read_items(&ctx.workspace).await?;
    if existing.iter().any(|i| i.item_id == answer_id) {
        return Ok(false);
    }
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let Some(a) = all.into_iter().find(|a| a.answer_id == answer_id) else {
        bail!("answer `{answer_id}` is not stored");
    };
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    let item = item_of_answer(a, &chunks, "tui");
    items_table(&ctx.workspace).append(&[item]).await?;
    Ok(true)
}
