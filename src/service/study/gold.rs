//! Gold items ([`crate::core::gold`]): the lead sets expected labels
//! (`annotate gold FILE`, signed by the lead's key, in `gold.lance`), `annotate
//! assign` puts every gold item in every named reviewer's queue, and the lead's
//! agreement report gives each reviewer's accuracy on them. No reviewer view reads
//! the gold rows, so a gold item looks like any other item to a reviewer.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{Result, bail};

use super::labels::Label;
use super::trust;
use super::trust::read_items;
use crate::core::agreement::Bootstrap;
use crate::core::gold::{GoldAccuracy, GoldLabel, accuracy, expected};
use crate::core::rubric::Rubric;
use crate::core::signing::{self, Refusal};
use crate::service::base::{Context, now_rfc3339};
use crate::store::keys;
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub const GOLD: &str = "gold.lance";

pub fn gold_table(ws: &Workspace) -> Table<'_> {
    Table::of::<GoldLabel>(ws, GOLD)
}

/// One row of a gold file. Strict: an unknown field is an error, and `label` must
/// be present (`"label": null` withdraws an expected label).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct GoldRow {
    item_id: String,
    criterion: String,
    #[serde(deserialize_with = "Option::deserialize")]
    label: Option<String>,
}

/// Set expected labels from a JSONL file `{item_id, criterion, label}` (the lead
/// only; validated as a whole against the items and the rubric, then committed at
/// once, or nothing is written). Returns how many rows.
pub async fn mark_gold(ctx: &Context, rubric: &Rubric, file: &Path) -> Result<usize> {
    let rows: Vec<GoldRow> = crate::service::base::read_jsonl(
        file,
        "a gold row {item_id, criterion, label (null withdraws)}",
    )?;
    let items: BTreeSet<String> = read_items(ctx)
        .await?
        .into_iter()
        .map(|i| i.item_id)
        .collect();
    for (n, r) in rows.iter().enumerate() {
        let at = format!("{}:{}", file.display(), n + 1);
        if !items.contains(&r.item_id) {
            bail!("{at}: no item {} in the study", r.item_id);
        }
        let Some(c) = rubric.criterion(&r.criterion) else {
            bail!("{at}: the rubric has no criterion {}", r.criterion);
        };
        if let Some(l) = &r.label
            && !rubric.labels_of(c).contains(l)
        {
            bail!("{at}: {l} is not a label of {}", r.criterion);
        }
    }
    if rows.is_empty() {
        bail!("{}: no gold rows", file.display());
    }
    let key = trust::require_lead(ctx, "annotate gold").await?;
    super::rubric::check_writing(ctx, rubric).await?;
    let (roster, _) = trust::roster(ctx).await?;
    let read = gold_table(&ctx.workspace).count_rows().await?;
    let out: Vec<GoldLabel> = rows
        .into_iter()
        .map(|r| {
            let mut g = GoldLabel {
                item_id: r.item_id,
                criterion: r.criterion,
                label: r.label,
                set_at: now_rfc3339(),
                seq: super::labels::now_nanos(),
                signer: Some(key.public_hex()),
                signature: None,
                log_rows: Some(read),
            };
            g.signature = Some(key.sign_hex(&signing::gold_bytes(&g, roster.binding())));
            g
        })
        .collect();
    gold_table(&ctx.workspace).append(&out).await?;
    Ok(out.len())
}

/// The gold rows that count (signed by the lead under a roster) and those refused.
pub async fn gold_rows(ctx: &Context) -> Result<(Vec<GoldLabel>, Vec<Refusal>)> {
    let rows: Vec<GoldLabel> = gold_table(&ctx.workspace).read_all().await?;
    let (roster, _) = trust::roster(ctx).await?;
    let checked = signing::check_gold(rows, &roster, &keys::verify_cached);
    Ok((checked.kept, checked.refused))
}

/// The gold items: those with at least one expected label in force.
pub async fn gold_items(ctx: &Context) -> Result<BTreeSet<String>> {
    let (rows, _) = gold_rows(ctx).await?;
    Ok(expected(&rows).into_keys().map(|(item, _)| item).collect())
}

/// Each of `reviewers`' accuracy on the gold units they labelled, from `cur`
/// ((item, reviewer, criterion) -> label in the chosen version).
pub fn gold_report(
    cur: &BTreeMap<(String, String, String), Label>,
    gold: &[GoldLabel],
    reviewers: &[String],
    boot: Bootstrap,
) -> Vec<GoldAccuracy> {
    let want = expected(gold);
    let items: BTreeSet<&str> = want.keys().map(|(i, _)| i.as_str()).collect();
    reviewers
        .iter()
        .map(|r| {
            let per_item: Vec<(usize, usize)> = items
                .iter()
                .map(|&item| {
                    want.range((item.to_string(), String::new())..)
                        .take_while(|((i, _), _)| i == item)
                        .filter_map(|((i, c), expected)| {
                            let given = cur.get(&(i.clone(), r.clone(), c.clone()))?;
                            Some(given.label.as_deref() == Some(expected.as_str()))
                        })
                        .fold((0, 0), |(c, n), right| (c + usize::from(right), n + 1))
                })
                .collect();
            accuracy(r, &per_item, boot)
        })
        .collect()
}
