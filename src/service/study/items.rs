//! Items to label: from a stored run's answers (optionally a seeded sample), from an
//! items file (strict fields), or one answer sent from a live front.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::labels::{Item, items_table};
use super::trust;
use crate::core::answer_signing::{Signers, answer_fault, take_answers};
use crate::core::question::MissingTargets;
use crate::core::rng::Rng;
use crate::core::signing::{Refusal, Roster};
use crate::service::answer::{AnswerRecord, answers};
use crate::service::base::Context;

/// Where new items come from.
#[derive(Debug, Clone)]
pub enum ItemSource {
    /// The answers of a generation run, those of the signers the lead accepts.
    Run(String, AnswerSigners),
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
    /// Whose answers were taken, and those left out.
    pub answers: AnswersTaken,
    /// Item rows already in the workspace that do not count (named, as every view
    /// of the study names them).
    pub refused_items: Vec<Refusal>,
}

/// Whose stored answers a signed study's lead makes items from, besides the lead's
/// own (`--answers-by`, `--unsigned-answers`).
#[derive(Debug, Clone, Default)]
pub struct AnswerSigners {
    /// Names on the roster, or public keys (a machine that generated a shard).
    pub by: Vec<String>,
    /// Answers with no signature (stored before answers were signed) count too.
    pub unsigned: bool,
}

/// Which answers items were made from: under a roster, whose signatures were taken
/// (`lena (lead), ben`) and the answers left out, each named with why.
#[derive(Debug, Clone, Default)]
pub struct AnswersTaken {
    /// None: the study has no roster, and every stored answer counts.
    pub signed_by: Option<String>,
    pub left_out: Vec<Refusal>,
}

/// The stored answers `which` picks that items may be made from (each answer id
/// once, its first taken row, in stored order), and which were taken and left out:
/// under a roster only those signed by the lead or by the signers the lead accepts
/// ([`crate::core::answer_signing`]).
pub(super) async fn answers_taken(
    ctx: &Context,
    roster: &Roster,
    which: &(dyn Fn(&AnswerRecord) -> bool + Sync),
    accept: &AnswerSigners,
) -> Result<(Vec<AnswerRecord>, AnswersTaken)> {
    let signers = Signers::of(roster, &accept.by, accept.unsigned).map_err(anyhow::Error::msg)?;
    let rows: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let rows = rows.into_iter().filter(|a| which(a)).collect();
    let taken = take_answers(rows, &signers, roster, &crate::store::keys::verify_cached);
    let said = AnswersTaken {
        signed_by: signers.applies().then(|| signers.describe()),
        left_out: taken.left_out,
    };
    Ok((taken.answers, said))
}

/// Create items (optionally a seeded random sample); items already present are kept
/// as they are.
pub async fn create_items(
    ctx: &Context,
    source: &ItemSource,
    set: Option<String>,
    sample: Option<(usize, u64)>,
) -> Result<CreatedItems> {
    let (roster, _) = trust::roster(ctx).await?;
    let key = trust::lead_key(ctx, &roster, "annotate create")?;
    let (existing, refused_items) = trust::items_under_roster(ctx, &roster).await?;
    let (mut items, missing_targets, answers) = match source {
        ItemSource::Run(run, accept) => {
            let made = |id: &str| existing.iter().any(|e| e.item_id == id);
            items_from_run(ctx, &roster, (run, &made), accept, set).await?
        }
        ItemSource::File(f) => (
            items_from_file(f, set)?,
            MissingTargets::default(),
            AnswersTaken::default(),
        ),
    };
    if let Some((n, seed)) = sample {
        let idx = Rng::new(seed).sample_indices(items.len(), n);
        items = idx.into_iter().map(|i| items[i].clone()).collect();
    }
    items.retain(|i| !existing.iter().any(|e| e.item_id == i.item_id));
    if !items.is_empty() {
        trust::seal_new_items(&mut items, &key, &roster);
        items_table(&ctx.workspace).append(&items).await?;
    }
    Ok(CreatedItems {
        created: items.len(),
        missing_targets,
        answers,
        refused_items,
    })
}

/// The items of run `run`'s answers that the study takes; answers left out are named
/// unless their id is an item already (`made`: an item is fixed when it is made, so
/// such an answer would change nothing).
async fn items_from_run(
    ctx: &Context,
    roster: &Roster,
    (run, made): (&str, &dyn Fn(&str) -> bool),
    accept: &AnswerSigners,
    set: Option<String>,
) -> Result<(Vec<Item>, MissingTargets, AnswersTaken)> {
    let (all, mut said) = answers_taken(ctx, roster, &|a| a.run == run, accept).await?;
    let stored = !all.is_empty() || !said.left_out.is_empty();
    said.left_out
        .retain(|r| !r.item.as_deref().is_some_and(made));
    if all.is_empty() && (!stored || !said.left_out.is_empty()) {
        bail!("{}", no_answers_taken(run, &said));
    }
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    let known: std::collections::HashSet<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
    let missing = MissingTargets::find(
        all.iter().map(|a| a.target_ids.iter().map(String::as_str)),
        |id| known.contains(id),
    );
    let set = set.unwrap_or_else(|| run.to_string());
    let v: Vec<Item> = all
        .into_iter()
        .map(|a| item_of_answer(a, &chunks, &set))
        .collect();
    Ok((v, missing, said))
}

/// Why run `run` gives no items: it has no answers, or none the study takes (the
/// first reason one was left out).
pub(super) fn no_answers_taken(run: &str, said: &AnswersTaken) -> String {
    let of_run = format!(" of run {run} ");
    let mine = said.left_out.iter().find(|r| r.why.contains(&of_run));
    match (mine, &said.signed_by) {
        (Some(r), Some(by)) => format!(
            "no answers in run `{run}` signed by {by} ({} left out; the first: {r})",
            said.left_out.len()
        ),
        _ => format!("no answers in run `{run}` (see `raglab report answers`)"),
    }
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
        signer: None,
        signature: None,
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
            signer: None,
            signature: None,
        })
        .collect())
}

/// Send one stored answer to annotation as an item (set `tui`); returns whether it
/// was new.
pub async fn add_answer_item(ctx: &Context, answer_id: &str) -> Result<bool> {
    let (roster, _) = trust::roster(ctx).await?;
    let (existing, _) = trust::items_under_roster(ctx, &roster).await?;
    if existing.iter().any(|i| i.item_id == answer_id) {
        return Ok(false);
    }
    let key = trust::lead_key(ctx, &roster, "sending an answer to annotation")?;
    let rows: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let signers = Signers::of(&roster, &[], false).map_err(anyhow::Error::msg)?;
    let verify = &crate::store::keys::verify_cached;
    let mut faults = Vec::new();
    let taken = rows
        .into_iter()
        .filter(|a| a.answer_id == answer_id)
        .find(|a| {
            let fault = answer_fault(a, &signers, &roster, verify);
            faults.extend(fault.clone());
            fault.is_none()
        });
    let Some(a) = taken else {
        match faults.first() {
            None => bail!("answer `{answer_id}` is not stored"),
            Some(why) => bail!("this answer {why}"),
        }
    };
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    let mut item = [item_of_answer(a, &chunks, "tui")];
    trust::seal_new_items(&mut item, &key, &roster);
    items_table(&ctx.workspace).append(&item).await?;
    Ok(true)
}
