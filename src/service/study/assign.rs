//! `annotate assign`: the lead gives each item to its reviewers (a pair, or k of
//! n, balanced and seeded by [`crate::core::assignment::design`]), signed by the
//! lead's key like every assignment. Gold items (with an expected label in force
//! when the command runs) go to every named reviewer, so each reviewer meets every
//! gold item somewhere in their own shuffled queue.

use anyhow::{Result, bail};

use super::labels::{Assignment, Item, assignments_table, labels_table};
use super::trust;
use super::trust::read_items;
use crate::service::base::Context;

/// What `assign` did: how many items, and each reviewer's share.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Assigned {
    pub items: usize,
    /// Of them, gold items (each given to every reviewer).
    pub gold: usize,
    /// Reviewers per item.
    pub per_item: usize,
    /// (reviewer, items assigned to them), in the given order.
    pub loads: Vec<(String, usize)>,
}

/// Assign items (all, or one set) to `per_item` of `reviewers` each (all of them
/// when `None`: the pair of a two-reviewer study), balanced and seeded by
/// [`crate::core::assignment::design`]. Each reviewer's queue then holds their
/// items only, and an item is revealed once all its reviewers have submitted it.
pub async fn assign(
    ctx: &Context,
    reviewers: &[String],
    per_item: Option<usize>,
    seed: u64,
    set: Option<&str>,
) -> Result<Assigned> {
    for r in reviewers {
        crate::core::annotation::check_reviewer(r).map_err(anyhow::Error::msg)?;
    }
    let k = per_item.unwrap_or(reviewers.len());
    // Checked before the lead's key, so a mistyped command says what is wrong.
    crate::core::assignment::design(0, reviewers, k, seed)?;
    let key = trust::require_lead(ctx, "annotate assign").await?;
    let (roster, _) = trust::roster(ctx).await?;
    if let Some(r) = reviewers
        .iter()
        .find(|r| roster.is_signed() && roster.key_of(r).is_none())
    {
        bail!("{r} is not on the study roster: add them first (`raglab study roster add {r} KEY`)");
    }
    let gold = super::gold::gold_items(ctx).await?;
    let (gold_items, items): (Vec<Item>, Vec<Item>) = read_items(ctx)
        .await?
        .into_iter()
        .filter(|i| set.is_none_or(|s| i.set == s))
        .partition(|i| gold.contains(&i.item_id));
    let mut design = crate::core::assignment::design(items.len(), reviewers, k, seed)?;
    let everyone: Vec<usize> = (0..reviewers.len()).collect();
    design.extend(gold_items.iter().map(|_| everyone.clone()));
    let gold_items_count = gold_items.len();
    let items: Vec<Item> = items.into_iter().chain(gold_items).collect();
    // In force from the label log's present end on: it never reaches back over a
    // label already given, nor moves a reveal that has happened.
    let label_rows = labels_table(&ctx.workspace).count_rows().await?;
    let rows: Vec<Assignment> = items
        .iter()
        .zip(&design)
        .map(|(i, picked)| {
            let names: Vec<String> = picked.iter().map(|&r| reviewers[r].clone()).collect();
            let mut a = Assignment {
                item_id: i.item_id.clone(),
                first: names[0].clone(),
                second: names[1].clone(),
                assigned_at: crate::service::base::now_rfc3339(),
                seq: super::labels::now_nanos(),
                label_rows: Some(label_rows),
                signer: None,
                signature: None,
                more_reviewers: Assignment::more_of(&names),
            };
            trust::sign_assignment(&mut a, &key, roster.binding());
            a
        })
        .collect();
    if rows.is_empty() {
        bail!(
            "no items{} to assign (see `raglab annotate create`)",
            set.map(|s| format!(" in set `{s}`")).unwrap_or_default()
        );
    }
    assignments_table(&ctx.workspace).append(&rows).await?;
    let loads = reviewers
        .iter()
        .enumerate()
        .map(|(n, r)| (r.clone(), design.iter().filter(|p| p.contains(&n)).count()))
        .collect();
    Ok(Assigned {
        items: rows.len(),
        gold: gold_items_count,
        per_item: k,
        loads,
    })
}
