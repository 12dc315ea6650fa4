//! Gold items: items whose expected label per criterion the study lead has set, mixed
//! unmarked into every reviewer's queue, so each reviewer's accuracy on them shows
//! how well they apply the rubric.
//!
//! - A gold row sets (or with `label: None`, withdraws) the expected label of one
//!   (item, criterion); the newest row of each wins, in the log's own order. Gold
//!   rows are signed by the lead's key like assignments, and a row that repeats an
//!   earlier counted one (a copy of an old expected label, appended to bring it back
//!   after the lead changed it) is refused before this reads them
//!   ([`crate::core::signing::check_gold`]).
//! - Unmarked: nothing a reviewer sees depends on gold rows. Items carry no gold
//!   flag, the Annotate pane and every reviewer's view never read the gold rows, and
//!   only the lead's agreement report computes accuracy on them. (The gold dataset
//!   itself lies in the workspace like the label log: someone who reads the
//!   workspace's files directly can read it, and the assignments, where a gold item
//!   lists every reviewer, as they can read every raw label.)
//! - Accuracy of a reviewer = correct / scored over the gold (item, criterion) units
//!   they labelled (their label in the chosen version: by default the last given
//!   before the item's reveal). Its 95% CI is a percentile bootstrap over
//!   items: resample the reviewer's gold items with replacement (each with all its
//!   criteria), B times with the report's seed, and take the 2.5th and 97.5th
//!   percentiles of the pooled accuracy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::agreement::{Bootstrap, Estimate, Resamples};
use crate::core::rng::Rng;

/// One expected label set by the lead (a row of the gold dataset).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GoldLabel {
    pub item_id: String,
    /// The criterion's key.
    pub criterion: String,
    /// The expected label; `None` withdraws an earlier one.
    pub label: Option<String>,
    pub set_at: String,
    /// The writer's wall clock (nanoseconds), kept for people; order is the log's.
    pub seq: u64,
    /// The lead's public key and signature ([`crate::core::signing::gold_bytes`]).
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    /// Gold rows stored when the lead wrote this one (signed): appends never land
    /// before that, so a row stored earlier was moved forward and is refused. None in
    /// rows written before gold rows carried it.
    #[serde(default)]
    pub log_rows: Option<u64>,
}

/// The expected labels in force: (item, criterion) -> label, the newest row of
/// each winning (rows in log order; a withdrawn one is absent).
pub fn expected(rows: &[GoldLabel]) -> BTreeMap<(String, String), String> {
    let mut out: BTreeMap<(String, String), Option<String>> = BTreeMap::new();
    for g in rows {
        out.insert((g.item_id.clone(), g.criterion.clone()), g.label.clone());
    }
    out.into_iter().filter_map(|(k, v)| Some((k, v?))).collect()
}

/// One reviewer's accuracy on the gold units they labelled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoldAccuracy {
    pub reviewer: String,
    /// Gold items with at least one scored unit.
    pub items: usize,
    /// Scored (item, criterion) units, and how many matched the expected label.
    pub units: usize,
    pub correct: usize,
    /// correct / units, with its percentile bootstrap CI over items.
    pub accuracy: Estimate,
}

/// The accuracy of a reviewer from their scored units, grouped by item:
/// `per_item[i] = (correct, scored)`.
pub fn accuracy(reviewer: &str, per_item: &[(usize, usize)], boot: Bootstrap) -> GoldAccuracy {
    let items: Vec<(usize, usize)> = per_item.iter().copied().filter(|p| p.1 > 0).collect();
    let (correct, units) = items
        .iter()
        .fold((0, 0), |(c, n), &(ci, ni)| (c + ci, n + ni));
    let ratio = |c: usize, n: usize| (n > 0).then(|| c as f64 / n as f64);
    let mut res = Resamples::new(1);
    if !items.is_empty() {
        let mut rng = Rng::new(boot.seed);
        for _ in 0..boot.resamples {
            let (mut c, mut n) = (0, 0);
            for _ in 0..items.len() {
                let (ci, ni) = items[rng.below(items.len())];
                c += ci;
                n += ni;
            }
            res.push(&[ratio(c, n)]);
        }
    }
    GoldAccuracy {
        reviewer: reviewer.to_string(),
        items: items.len(),
        units,
        correct,
        accuracy: res.estimate(0, ratio(correct, units)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(item: &str, c: &str, label: Option<&str>) -> GoldLabel {
        GoldLabel {
            item_id: item.into(),
            criterion: c.into(),
            label: label.map(str::to_string),
            set_at: String::new(),
            seq: 0,
            signer: None,
            signature: None,
            log_rows: None,
        }
    }

    #[test]
    fn the_newest_row_wins_and_none_withdraws() {
        let rows = [
            row("g1", "a", Some("pass")),
            row("g1", "b", Some("fail")),
            row("g1", "a", Some("fail")),
            row("g2", "a", Some("pass")),
            row("g2", "a", None),
        ];
        let want = BTreeMap::from([
            (("g1".to_string(), "a".to_string()), "fail".to_string()),
            (("g1".to_string(), "b".to_string()), "fail".to_string()),
        ]);
        assert_eq!(expected(&rows), want);
    }

    #[test]
    fn accuracy_and_its_interval_by_hand() {
        let boot = Bootstrap {
            resamples: 2000,
            seed: 5,
        };
        // 3 of 4 units right on item 1, 4 of 4 on item 2: 7 / 8.
        let a = accuracy("ann", &[(3, 4), (4, 4), (0, 0)], boot);
        assert_eq!((a.items, a.units, a.correct), (2, 8, 7));
        assert_eq!(a.accuracy.value, Some(0.875));
        // Every resample of two items is {1,1}: 6/8, {1,2}: 7/8 or {2,2}: 8/8, so
        // the interval lies in [0.75, 1] and, with B = 2000, reaches both ends
        // (each end has probability 1/4).
        assert_eq!((a.accuracy.lo, a.accuracy.hi), (Some(0.75), Some(1.0)));
        // All right: the interval is the point.
        let b = accuracy("bob", &[(4, 4), (2, 2)], boot);
        assert_eq!(
            (b.accuracy.value, b.accuracy.lo, b.accuracy.hi),
            (Some(1.0), Some(1.0), Some(1.0))
        );
        // Nothing scored: undefined, never 0.
        let c = accuracy("carol", &[], boot);
        assert_eq!((c.units, c.accuracy.value, c.accuracy.lo), (0, None, None));
    }
}
