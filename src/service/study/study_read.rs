//! The study as a front reads it: items, the label log as it counts, assignments,
//! answers and the judge's verdicts, its fingerprint (to know when to read again), and
//! what a viewer may see of the stored answers.

use anyhow::Result;

use super::labels::{
    ASSIGNMENTS, Assignment, ITEMS, Item, LABELS, Label, items_table, items_under, judge_labels,
};
use super::trust::{self, TrustedLog};
use crate::core::blinding::{Blinding, Schedule, Sight, Viewer};
use crate::core::rubric::Rubric;
use crate::core::signing::Refusal;
use crate::service::answer::{AnswerRecord, answers, judgements};
use crate::service::base::{Context, dataset_stamp};

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
pub(super) async fn study_log(
    ctx: &Context,
    judge_model: Option<&str>,
) -> Result<(Vec<Item>, TrustedLog, Vec<Label>)> {
    let rows = async { anyhow::Ok(items_table(&ctx.workspace).read_all::<Item>().await?) };
    let (rows, mut log) = futures::try_join!(rows, trust::trusted_log(ctx))?;
    let (items, refused) = items_under(rows, &log.roster);
    log.refused.extend(refused);
    let mut labels = log.labels.clone();
    labels.extend(judge_labels(
        &items,
        &judgements(&ctx.workspace).read_all().await?,
        judge_model,
    ));
    Ok((items, log, labels))
}

/// What `viewer` may see of the study in the workspace (for views that start from
/// stored answers: the judge's labels, pass rates).
pub async fn sight(ctx: &Context, viewer: &Viewer) -> Result<Sight> {
    let rubric = ctx.rubric(None)?;
    let items: Vec<Item> = trust::read_items(ctx).await?;
    if *viewer == Viewer::Lead || items.is_empty() {
        return Ok(Sight::new(viewer.clone(), Blinding::default(), &items));
    }
    let log = trust::trusted_log(ctx).await?;
    let rubric = log.rubric_or(&rubric);
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(&log.labels, &keys, &log.schedule);
    Ok(Sight::new(viewer.clone(), blinding, &items))
}
