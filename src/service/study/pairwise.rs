//! Pairwise preference studies: items that show a reviewer two answers to one
//! question, from two runs, in an order drawn at random (seeded) and recorded, with
//! the run names hidden; reviewers label each criterion `first`, `second` or `tie`
//! through the same signed, blind label log as every other label; the lead ranks the
//! runs by Bradley-Terry scores with bootstrap CIs ([`crate::core::preference`]) and
//! sees the reviewers' agreement on their preferences.
//!
//! Pair items and single-answer items may share a workspace: a pair item is known by
//! its id ([`crate::core::preference::is_pair_item`]), its labels are checked against
//! the rubric's pairwise form, and the single-answer agreement table leaves pair items
//! out (their agreement is part of [`preferences`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Result, bail};
use serde::Serialize;
use sha2::{Digest, Sha256};

use super::items::{AnswerSigners, CreatedItems};
use super::raters::{human_reviewers, rater_report};
use crate::core::agreement::raters::RaterReport;
use crate::core::agreement::{Bootstrap, Estimate};
use crate::core::annotation::Label;
use crate::core::blinding::{Blinding, LabelVersion, Viewer};
pub use crate::core::preference::PairItem;
use crate::core::preference::{
    self, PAIR_ITEM_PREFIX, PairComparison, Record, comparison, pair_text, scores_with_ci,
};
use crate::core::rng::Rng;
use crate::core::rubric::Rubric;
use crate::core::signing::{self, Refusal, Roster};
use crate::service::answer::AnswerRecord;
use crate::service::base::Context;
use crate::store::keys::{self, Keypair};
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub const PAIR_ITEMS: &str = "pair_items.lance";

pub fn pair_items_table(ws: &Workspace) -> Table<'_> {
    Table::of::<PairItem>(ws, PAIR_ITEMS)
}

/// Whether the workspace holds pair items (a pairwise study).
pub async fn is_pairwise(ws: &Workspace) -> Result<bool> {
    let t = pair_items_table(ws);
    Ok(t.exists().await? && t.count_rows().await? > 0)
}

/// The id of the pair of two answers: the same whichever is shown first, so running
/// `create --pairs` again adds nothing, and nothing in it tells the order.
fn pair_id(a: &str, b: &str) -> String {
    let (x, y) = if a <= b { (a, b) } else { (b, a) };
    let digest = Sha256::digest(format!("{x}\n{y}").as_bytes());
    let hex: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("{PAIR_ITEM_PREFIX}{hex}")
}

/// Each question's answer in `run` (the first repeat when the run has several).
fn answers_by_question<'a>(
    all: &'a [AnswerRecord],
    run: &str,
) -> BTreeMap<&'a str, &'a AnswerRecord> {
    let mut out: BTreeMap<&str, &AnswerRecord> = BTreeMap::new();
    for a in all.iter().filter(|a| a.run == run) {
        let e = out.entry(a.question_id.as_str()).or_insert(a);
        if a.repeat.unwrap_or(0) < e.repeat.unwrap_or(0) {
            *e = a;
        }
    }
    out
}

/// The pair orders that count ([`signing::check_pair_orders`]: first-wins, signed by
/// the lead under a roster) and those refused.
async fn pair_orders(ws: &Workspace, roster: &Roster) -> Result<(Vec<PairItem>, Vec<Refusal>)> {
    let rows: Vec<PairItem> = pair_items_table(ws).read_all().await?;
    let checked = signing::check_pair_orders(rows, roster, &keys::verify_cached);
    Ok((checked.kept, checked.refused))
}

/// The pair order of `item_id` showing `first` then `second`, signed with `key` for
/// the study bound as `roster`'s.
fn signed_order(
    item_id: String,
    question_id: &str,
    (first, second): (&AnswerRecord, &AnswerRecord),
    seed: u64,
    key: &Keypair,
    roster: &Roster,
) -> PairItem {
    let mut p = PairItem {
        item_id,
        question_id: question_id.to_string(),
        first_run: first.run.clone(),
        first_answer_id: first.answer_id.clone(),
        second_run: second.run.clone(),
        second_answer_id: second.answer_id.clone(),
        seed,
        signer: Some(key.public_hex()),
        signature: None,
    };
    p.signature = Some(key.sign_hex(&signing::pair_order_bytes(&p, roster.binding())));
    p
}

/// The questions both runs answered, in question order (a seeded sample of `n` of
/// them when `sample` is given); an error when they share none.
fn shared_questions<'q>(
    (run_a, a): (&str, &BTreeMap<&'q str, &AnswerRecord>),
    (run_b, b): (&str, &BTreeMap<&'q str, &AnswerRecord>),
    sample: Option<(usize, u64)>,
) -> Result<Vec<&'q str>> {
    let shared: Vec<&str> = a.keys().filter(|q| b.contains_key(*q)).copied().collect();
    if shared.is_empty() {
        bail!("runs `{run_a}` and `{run_b}` answered no question in common");
    }
    let Some((n, s)) = sample else {
        return Ok(shared);
    };
    let mut idx = Rng::new(s).sample_indices(shared.len(), n);
    idx.sort_unstable();
    Ok(idx.into_iter().map(|i| shared[i]).collect())
}

/// Create a pair item for every question both runs answered (or a seeded sample of
/// `n` of them); the order of each pair is drawn with `seed`. Pairs already present
/// are kept as they are. Returns how many were created.
///
/// Each order is signed by this user's key; under a roster only the lead's counts,
/// so only the lead creates pair items there (an unsigned study lets anyone, as
/// before). A pair whose order counts already but whose item is missing (an earlier
/// run stopped between the two writes) gets its item in that order, and no second
/// order: an item's first order is the one the ranking reads.
pub async fn create_pair_items(
    ctx: &Context,
    (run_a, run_b): (&str, &str),
    set: Option<String>,
    sample: Option<(usize, u64)>,
    seed: u64,
    accept: &AnswerSigners,
) -> Result<CreatedItems> {
    if run_a == run_b {
        bail!("--pairs needs two different runs (got `{run_a}` twice)");
    }
    let (roster, _) = super::trust::roster(ctx).await?;
    let key = super::trust::lead_key(ctx, &roster, "annotate create --pairs")?;
    let (existing, refused_items) = super::trust::items_under_roster(ctx, &roster).await?;
    let which = |a: &AnswerRecord| a.run == run_a || a.run == run_b;
    let (all, said) = super::items::answers_taken(ctx, &roster, &which, accept).await?;
    let (a, b) = (
        answers_by_question(&all, run_a),
        answers_by_question(&all, run_b),
    );
    for (run, got) in [(run_a, &a), (run_b, &b)] {
        if got.is_empty() {
            bail!("{}", super::items::no_answers_taken(run, &said));
        }
    }
    let (orders, _) = pair_orders(&ctx.workspace, &roster).await?;
    let ordered: HashMap<&str, &PairItem> =
        orders.iter().map(|o| (o.item_id.as_str(), o)).collect();
    let shared = shared_questions((run_a, &a), (run_b, &b), sample)?;
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    // Reviewers see the set's name: by default it names the pair of runs without
    // their names (which runs are compared may sway a reviewer as much as which
    // answer is whose).
    let set = set.unwrap_or_else(|| pair_id(run_a, run_b).replacen(PAIR_ITEM_PREFIX, "pairs-", 1));
    let known: BTreeSet<&str> = existing.iter().map(|i| i.item_id.as_str()).collect();
    let mut rng = Rng::new(seed);
    let (mut items, mut records) = (Vec::new(), Vec::new());
    for q in shared {
        let swap = rng.below(2) == 1;
        let (first, second) = if swap { (b[q], a[q]) } else { (a[q], b[q]) };
        let item_id = pair_id(&first.answer_id, &second.answer_id);
        if known.contains(item_id.as_str()) {
            continue;
        }
        let (first, second) = match ordered.get(item_id.as_str()) {
            Some(o) if o.first_answer_id == second.answer_id => (second, first),
            Some(_) => (first, second),
            None => {
                let order = (first, second);
                records.push(signed_order(item_id.clone(), q, order, seed, &key, &roster));
                order
            }
        };
        let mut item = super::items::item_of_answer(first.clone(), &chunks, &set);
        item.item_id = item_id;
        item.answer = pair_text(&first.answer, &second.answer);
        item.answer_id = None;
        items.push(item);
    }
    super::trust::seal_new_items(&mut items, &key, &roster);
    if !records.is_empty() {
        // The records first: an order record without its item is never read (and
        // gives the item its order when it is made), an item without its record
        // could not be ranked.
        pair_items_table(&ctx.workspace).append(&records).await?;
    }
    if !items.is_empty() {
        super::labels::items_table(&ctx.workspace)
            .append(&items)
            .await?;
    }
    Ok(CreatedItems {
        created: items.len(),
        answers: said,
        refused_items,
        ..CreatedItems::default()
    })
}

/// A run's Bradley-Terry score with its CI.
#[derive(Debug, Clone, Serialize)]
pub struct RunScore {
    pub run: String,
    pub score: Estimate,
}

/// How two runs fared against each other.
#[derive(Debug, Clone, Serialize)]
pub struct HeadToHead {
    pub run: String,
    pub against: String,
    #[serde(flatten)]
    pub record: Record,
}

/// The ranking on one criterion, or Overall (every criterion pooled).
#[derive(Debug, Clone, Serialize)]
pub struct PreferenceRow {
    pub criterion: String,
    /// Labels counted: one comparison per reviewer, item and criterion.
    pub comparisons: usize,
    /// Highest score first (undefined scores last, in run order).
    pub scores: Vec<RunScore>,
    pub head_to_head: Vec<HeadToHead>,
}

/// What [`preferences`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Preferences {
    pub runs: Vec<String>,
    /// Pair items with at least one label.
    pub items: usize,
    pub reviewers: Vec<String>,
    pub bootstrap: Bootstrap,
    pub rows: Vec<PreferenceRow>,
    /// The reviewers' agreement on their preferences (None with fewer than two).
    pub agreement: Option<RaterReport>,
    /// Stored rows that do not count, named: pair orders (a later row for an item,
    /// or under a roster one not signed by the lead's key), then labels and
    /// assignments.
    pub refused: Vec<Refusal>,
}

/// Each criterion's comparisons (run indices into `runs`) from the human reviewers'
/// current labels of the pair items, and the items with at least one.
fn comparisons<'k>(
    records: &[PairItem],
    current: &BTreeMap<(String, String, String), Label>,
    reviewers: &[String],
    runs: &[String],
    keys: &[&'k str],
) -> (BTreeMap<&'k str, Vec<PairComparison>>, BTreeSet<String>) {
    let run_ix = |r: &str| runs.iter().position(|x| x == r);
    let unit_of: HashMap<&str, (usize, &PairItem)> = records
        .iter()
        .enumerate()
        .map(|(i, r)| (r.item_id.as_str(), (i, r)))
        .collect();
    let mut per_criterion: BTreeMap<&str, Vec<PairComparison>> = BTreeMap::new();
    let mut labelled = BTreeSet::new();
    for ((item, reviewer, criterion), l) in current {
        let (Some(&(unit, rec)), Some(label)) = (unit_of.get(item.as_str()), l.label.as_deref())
        else {
            continue;
        };
        if !reviewers.contains(reviewer) {
            continue;
        }
        let (Some(f), Some(s)) = (run_ix(&rec.first_run), run_ix(&rec.second_run)) else {
            continue;
        };
        if let Some(c) = comparison(unit, f, s, label) {
            labelled.insert(item.clone());
            if let Some(k) = keys.iter().find(|k| **k == criterion.as_str()) {
                per_criterion.entry(k).or_default().push(c);
            }
        }
    }
    (per_criterion, labelled)
}

/// One criterion's row: the runs' Bradley-Terry scores with their intervals (highest
/// first) and every two runs' head-to-head record.
fn preference_row(
    name: &str,
    runs: &[String],
    comparisons: &[PairComparison],
    boot: Bootstrap,
) -> PreferenceRow {
    let estimates = scores_with_ci(runs.len(), comparisons, boot);
    let mut scores: Vec<RunScore> = runs
        .iter()
        .zip(estimates)
        .map(|(run, score)| RunScore {
            run: run.clone(),
            score,
        })
        .collect();
    scores.sort_by(|a, b| {
        let v = |s: &RunScore| s.score.value.unwrap_or(f64::NEG_INFINITY);
        v(b).total_cmp(&v(a))
    });
    let mut head_to_head = Vec::new();
    for (i, a) in runs.iter().enumerate() {
        for (j, b) in runs.iter().enumerate().skip(i + 1) {
            let record = preference::record(comparisons, i, j);
            if record != Record::default() {
                head_to_head.push(HeadToHead {
                    run: a.clone(),
                    against: b.clone(),
                    record,
                });
            }
        }
    }
    PreferenceRow {
        criterion: name.to_string(),
        comparisons: comparisons.len(),
        scores,
        head_to_head,
    }
}

/// Rank the runs of the pairwise study from every human reviewer's own labels (each
/// as given before any reveal), the lead's view only.
pub async fn preferences(
    ctx: &Context,
    rubric: &Rubric,
    viewer: &Viewer,
    boot: Bootstrap,
) -> Result<Preferences> {
    if *viewer != Viewer::Lead {
        bail!(
            "the ranking reads every reviewer's preferences: it is the study lead's (`--role lead`)"
        );
    }
    let rubric = rubric.pairwise();
    if !is_pairwise(&ctx.workspace).await? {
        bail!(
            "this workspace has no pair items: create them with `raglab annotate create --pairs RUN_A,RUN_B`"
        );
    }
    let log = super::trust::trusted_log(ctx).await?;
    // First-wins: each item's first counted order, so no appended row can swap runs.
    let (records, mut refused) = pair_orders(&ctx.workspace, &log.roster).await?;
    refused.extend(log.refused.iter().cloned());
    let by_item: HashMap<&str, &PairItem> =
        records.iter().map(|r| (r.item_id.as_str(), r)).collect();
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(&log.labels, &keys, &log.schedule);
    let seen = blinding.visible_labels(&Viewer::Lead, &log.labels);
    let current = blinding.current(&seen, LabelVersion::BeforeReveal);
    let reviewers = human_reviewers(&current);
    let runs: Vec<String> = records
        .iter()
        .flat_map(|r| [r.first_run.clone(), r.second_run.clone()])
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let (per_criterion, labelled) = comparisons(&records, &current, &reviewers, &runs, &keys);
    let mut rows: Vec<PreferenceRow> = rubric
        .criteria
        .iter()
        .map(|c| {
            let of: &[PairComparison] =
                per_criterion.get(c.key.as_str()).map_or(&[], Vec::as_slice);
            preference_row(&c.name, &runs, of, boot)
        })
        .collect();
    let pooled: Vec<PairComparison> = per_criterion.values().flatten().copied().collect();
    rows.push(preference_row("Overall", &runs, &pooled, boot));
    let agreement = (reviewers.len() >= 2).then(|| {
        rater_report(
            &rubric,
            &current,
            &reviewers,
            |i| by_item.contains_key(i),
            boot,
        )
    });
    Ok(Preferences {
        runs,
        items: labelled.len(),
        reviewers,
        bootstrap: boot,
        rows,
        agreement,
        refused,
    })
}
