//! The agreement of every reviewer at once (Fleiss' kappa, Krippendorff's alpha,
//! the pairwise kappa matrix, weighted kappa for ordered labels) over the labels a
//! viewer may see. Assignments name pairs; any further reviewer who labels an
//! item counts here, so a study of k reviewers per item is labelled by assigning
//! pairs and letting more reviewers label the same items.

use std::collections::{BTreeMap, BTreeSet};

use super::labels::{FINAL, JUDGE, Label};
use crate::core::agreement::Bootstrap;
use crate::core::agreement::drift::{Drift, ItemLabels, drift};
use crate::core::agreement::raters::{RaterReport, Ratings, rater_agreement};
use crate::core::rubric::Rubric;

/// Current labels: (item, reviewer, criterion) -> label.
type Current = BTreeMap<(String, String, String), Label>;

/// The human reviewers with a current label, in name order.
pub fn human_reviewers(cur: &Current) -> Vec<String> {
    let names: BTreeSet<&str> = cur
        .keys()
        .map(|(_, r, _)| r.as_str())
        .filter(|r| *r != JUDGE && *r != FINAL)
        .collect();
    names.into_iter().map(str::to_string).collect()
}

/// The agreement of `raters` over the current labels of the items `visible` to the
/// viewer, per criterion (by name) and Overall.
pub fn rater_report(
    rubric: &Rubric,
    cur: &Current,
    raters: &[String],
    visible: impl Fn(&str) -> bool,
    boot: Bootstrap,
) -> RaterReport {
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let names = rubric.criteria.iter().map(|c| c.name.clone()).collect();
    let mut ratings = Ratings::new(raters.to_vec(), rubric.all_labels(), rubric.ordered, names);
    let items: BTreeSet<&str> = cur
        .keys()
        .map(|(i, _, _)| i.as_str())
        .filter(|&i| visible(i))
        .collect();
    for item in items {
        ratings.push_item(|c, r| {
            cur.get(&(item.to_string(), raters[r].clone(), keys[c].to_string()))
                .and_then(|l| l.label.as_deref())
        });
    }
    rater_agreement(&ratings, boot)
}

/// Agreement per window of `window` items of `order` (item ids in labelling
/// order): alpha of `raters` and the kappa of `pair`, pooled over criteria.
pub fn drift_report(
    rubric: &Rubric,
    cur: &Current,
    raters: &[String],
    order: &[&str],
    pair: (&str, &str),
    window: usize,
) -> Drift {
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let names: Vec<String> = rubric.criteria.iter().map(|c| c.name.clone()).collect();
    let items: Vec<ItemLabels> = order
        .iter()
        .map(|item| {
            keys.iter()
                .map(|c| {
                    raters
                        .iter()
                        .map(|r| {
                            cur.get(&(item.to_string(), r.clone(), c.to_string()))
                                .and_then(|l| l.label.clone())
                        })
                        .collect()
                })
                .collect()
        })
        .collect();
    let at = |name: &str| raters.iter().position(|r| r == name).unwrap_or(usize::MAX);
    drift(
        raters,
        &rubric.all_labels(),
        &names,
        &items,
        (at(pair.0), at(pair.1)),
        window,
    )
}
