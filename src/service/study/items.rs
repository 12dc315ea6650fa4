//! Items to label: from a stored run's answers (optionally a seeded sample), from an
//! items file (strict fields), or one answer sent from a live front.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use super::labels::{Item, items_table};
use super::trust::read_items;
use crate::core::question::MissingTargets;
use crate::core::rng::Rng;
use crate::service::answer::{AnswerRecord, answers};
use crate::service::base::Context;

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
    let existing: Vec<Item> = read_items(ctx).await?;
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
        super::trust::seal_new_items(ctx, "annotate create", &mut items).await?;
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
    let existing: Vec<Item> = read_items(ctx).await?;
    if existing.iter().any(|i| i.item_id == answer_id) {
        return Ok(false);
    }
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let Some(a) = all.into_iter().find(|a| a.answer_id == answer_id) else {
        bail!("answer `{answer_id}` is not stored");
    };
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    let mut item = [item_of_answer(a, &chunks, "tui")];
    super::trust::seal_new_items(ctx, "sending an answer to annotation", &mut item).await?;
    items_table(&ctx.workspace).append(&item).await?;
    Ok(true)
}
