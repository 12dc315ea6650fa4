//! Pairwise preference: a reviewer sees two answers to one question (from two runs,
//! in an order drawn at random and recorded, the run names hidden) and says, per
//! criterion, which is better or that they tie. The runs are ranked by Bradley-Terry
//! scores with percentile bootstrap CIs over items.
//!
//! Rules:
//! - A pair item's labels are [`FIRST`], [`SECOND`] and [`TIE`], whatever the
//!   study's rubric labels are: its criteria are the rubric's.
//! - Bradley-Terry: P(i beats j) = p_i / (p_i + p_j). A tie counts as half a win for
//!   each side (so n_ij counts every comparison of i and j, ties included). Fitted by
//!   Hunter's (2004) MM iteration, p_i <- W_i / sum_j n_ij / (p_i + p_j), to the
//!   maximum-likelihood point.
//! - A score is the log strength, centred so the runs' scores average 0: a difference
//!   of d means odds of e^d to 1. A run's score exists only when the maximum-likelihood
//!   estimate does (Ford 1957): the graph with an edge i -> j when i won (or tied) a
//!   comparison with j is strongly connected. Otherwise (a run that never won, or two
//!   groups never compared) every score is undefined rather than infinite.
//! - CIs: whole items resampled with replacement (an item keeps all its
//!   comparisons: every reviewer and criterion), B resamples, the 2.5th and 97.5th
//!   percentiles of the defined resamples; resamples with no estimate are counted.

use serde::{Deserialize, Serialize};

use crate::core::agreement::{Bootstrap, Estimate, Resamples};
use crate::core::rng::Rng;

/// The label for "the first answer shown is better".
pub const FIRST: &str = "first";
/// The label for "the second answer shown is better".
pub const SECOND: &str = "second";
/// The label for "neither is better".
pub const TIE: &str = "tie";
/// Every pair-item label, in the order the Annotate pane lists them.
pub const PAIR_LABELS: [&str; 3] = [FIRST, SECOND, TIE];

/// The prefix of every pair item's id: a pair item is recognised by its id alone,
/// so every check (label validation, the Annotate pane) knows it without a lookup.
pub const PAIR_ITEM_PREFIX: &str = "pair-";

/// Whether the item with this id is a pair item.
pub fn is_pair_item(item_id: &str) -> bool {
    item_id.starts_with(PAIR_ITEM_PREFIX)
}

/// Which run a pair item shows first and second (a row of `pair_items.lance`): the
/// record the ranking reads to turn `first`/`second` back into runs. Fixed when the
/// item is made: the first row for an item is its order, and a later one is refused
/// ([`crate::core::signing::check_pair_orders`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairItem {
    pub item_id: String,
    pub question_id: String,
    pub first_run: String,
    pub first_answer_id: String,
    pub second_run: String,
    pub second_answer_id: String,
    /// The seed of the order draw (`annotate create --pairs ... --seed`).
    pub seed: u64,
    /// The lead's public key and signature
    /// ([`crate::core::signing::pair_order_bytes`]). Added with signed pair orders, so
    /// nullable and last: rows of an unsigned study may carry none.
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
}

/// The text a reviewer reads for a pair item: both answers, headed "Answer 1" and
/// "Answer 2" in the order shown, nothing of the runs they came from.
pub fn pair_text(first: &str, second: &str) -> String {
    format!("── Answer 1 ──\n{first}\n\n── Answer 2 ──\n{second}")
}

/// One comparison of two runs (indices into the runs) on one item: the winner and
/// the loser, or a tie between them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairComparison {
    /// The resampling unit (the pair item), an index.
    pub item: usize,
    pub winner: usize,
    pub loser: usize,
    pub tie: bool,
}

/// The comparison a pair-item label makes: `first` and `second` are the runs shown
/// first and second. `None` for a label that is not a pair label.
pub fn comparison(item: usize, first: usize, second: usize, label: &str) -> Option<PairComparison> {
    let (winner, loser, tie) = match label {
        FIRST => (first, second, false),
        SECOND => (second, first, false),
        TIE => (first, second, true),
        _ => return None,
    };
    Some(PairComparison {
        item,
        winner,
        loser,
        tie,
    })
}

/// Bradley-Terry scores (centred log strengths) of `runs` runs from `comparisons`;
/// `None` when the maximum-likelihood estimate does not exist (see the module rules).
pub fn bradley_terry(runs: usize, comparisons: &[PairComparison]) -> Option<Vec<f64>> {
    let mut t = Tally::new(runs);
    for c in comparisons {
        t.add(c);
    }
    t.fit()
}

/// Wins and games between every two runs, both doubled (a win counts 2, a tie 1 for
/// each side, a game 2) so every count is an integer; the factor cancels in the fit.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tally {
    /// `won[i][j]`: twice i's wins over j (ties counted half).
    won: Vec<Vec<u64>>,
}

impl Tally {
    fn new(runs: usize) -> Self {
        Self {
            won: vec![vec![0; runs]; runs],
        }
    }

    fn add(&mut self, c: &PairComparison) {
        let n = self.won.len();
        let (w, l) = (c.winner, c.loser);
        if w >= n || l >= n || w == l {
            return;
        }
        if c.tie {
            self.won[w][l] += 1;
            self.won[l][w] += 1;
        } else {
            self.won[w][l] += 2;
        }
    }

    /// Add `times` copies of `other`.
    fn add_tally(&mut self, other: &[(usize, usize, u64)], times: u64) {
        for &(i, j, v) in other {
            self.won[i][j] += v * times;
        }
    }

    /// The maximum-likelihood scores, by Hunter's MM iteration.
    fn fit(&self) -> Option<Vec<f64>> {
        let runs = self.won.len();
        if runs < 2 {
            return None;
        }
        let beat: Vec<Vec<bool>> = self
            .won
            .iter()
            .map(|row| row.iter().map(|&v| v > 0).collect())
            .collect();
        if !strongly_connected(&beat) {
            return None;
        }
        let wins: Vec<f64> = self
            .won
            .iter()
            .map(|r| r.iter().sum::<u64>() as f64)
            .collect();
        let played = |i: usize, j: usize| (self.won[i][j] + self.won[j][i]) as f64;
        let mut p = vec![1.0f64; runs];
        for _ in 0..100_000 {
            let mut next: Vec<f64> = (0..runs)
                .map(|i| {
                    let denom: f64 = (0..runs)
                        .filter(|&j| j != i)
                        .map(|j| played(i, j) / (p[i] + p[j]))
                        .sum();
                    wins[i] / denom
                })
                .collect();
            // Normalise to a geometric mean of 1 (the scale is not identified).
            let mean_log = next.iter().map(|v| v.ln()).sum::<f64>() / runs as f64;
            for v in &mut next {
                *v /= mean_log.exp();
            }
            let change = next
                .iter()
                .zip(&p)
                .map(|(a, b)| (a.ln() - b.ln()).abs())
                .fold(0.0, f64::max);
            p = next;
            if change < 1e-13 {
                break;
            }
        }
        let scores: Vec<f64> = p.iter().map(|v| v.ln()).collect();
        scores.iter().all(|s| s.is_finite()).then_some(scores)
    }
}

/// Whether every node reaches every other along `edge[i][j]`.
fn strongly_connected(edge: &[Vec<bool>]) -> bool {
    let n = edge.len();
    let reach = |forward: bool| {
        let mut seen = vec![false; n];
        let mut stack = vec![0];
        seen[0] = true;
        while let Some(i) = stack.pop() {
            for j in 0..n {
                let e = if forward { edge[i][j] } else { edge[j][i] };
                if e && !seen[j] {
                    seen[j] = true;
                    stack.push(j);
                }
            }
        }
        seen.into_iter().all(|s| s)
    };
    n > 0 && reach(true) && reach(false)
}

/// Wins, ties and losses of run `a` against run `b`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// The record of `a` against `b` over `comparisons`.
pub fn record(comparisons: &[PairComparison], a: usize, b: usize) -> Record {
    let mut r = Record::default();
    for c in comparisons {
        let pair = (c.winner, c.loser);
        if pair != (a, b) && pair != (b, a) {
            continue;
        }
        if c.tie {
            r.ties += 1;
        } else if c.winner == a {
            r.wins += 1;
        } else {
            r.losses += 1;
        }
    }
    r
}

/// Each run's Bradley-Terry score with its percentile bootstrap CI over items. Each
/// item's comparisons are tallied once; a resample adds each drawn item's tally as
/// often as it was drawn, so a resample costs the items and the fit, not every label.
pub fn scores_with_ci(
    runs: usize,
    comparisons: &[PairComparison],
    boot: Bootstrap,
) -> Vec<Estimate> {
    let point = bradley_terry(runs, comparisons);
    let mut by_item: std::collections::BTreeMap<usize, Tally> = std::collections::BTreeMap::new();
    for c in comparisons {
        by_item
            .entry(c.item)
            .or_insert_with(|| Tally::new(runs))
            .add(c);
    }
    // Each item's tally as its non-zero cells.
    let cells: Vec<Vec<(usize, usize, u64)>> = by_item
        .values()
        .map(|t| {
            let mut v = Vec::new();
            for (i, row) in t.won.iter().enumerate() {
                for (j, &w) in row.iter().enumerate() {
                    if w > 0 {
                        v.push((i, j, w));
                    }
                }
            }
            v
        })
        .collect();
    let mut resamples = Resamples::new(runs);
    let n = cells.len();
    if n > 0 {
        let mut rng = Rng::new(boot.seed);
        let mut drawn = vec![0u64; n];
        for _ in 0..boot.resamples {
            drawn.fill(0);
            for _ in 0..n {
                drawn[rng.below(n)] += 1;
            }
            let mut t = Tally::new(runs);
            for (item, &times) in cells.iter().zip(&drawn) {
                if times > 0 {
                    t.add_tally(item, times);
                }
            }
            match t.fit() {
                Some(s) => resamples.push(&s.into_iter().map(Some).collect::<Vec<_>>()),
                None => resamples.push(&vec![None; runs]),
            }
        }
    }
    (0..runs)
        .map(|r| resamples.estimate(r, point.as_ref().map(|p| p[r])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn games(item: usize, w: usize, l: usize, n: usize, tie: bool) -> Vec<PairComparison> {
        vec![
            PairComparison {
                item,
                winner: w,
                loser: l,
                tie,
            };
            n
        ]
    }

    /// Two runs: the MLE has p_a / p_b = W_a / W_b, so with ties as half wins
    /// 6 wins, 2 ties, 2 losses give W = 7 and 3: scores +-ln(7/3)/2.
    #[test]
    fn two_runs_match_the_closed_form() {
        let mut c = games(0, 0, 1, 6, false);
        c.extend(games(1, 1, 0, 2, false));
        c.extend(games(2, 0, 1, 2, true));
        let s = bradley_terry(2, &c).expect("defined");
        let half = (7.0f64 / 3.0).ln() / 2.0;
        assert!((s[0] - half).abs() < 1e-12, "{s:?}");
        assert!((s[1] + half).abs() < 1e-12, "{s:?}");
        assert_eq!(
            record(&c, 0, 1),
            Record {
                wins: 6,
                ties: 2,
                losses: 2
            }
        );
        assert_eq!(
            record(&c, 1, 0),
            Record {
                wins: 2,
                ties: 2,
                losses: 6
            }
        );
    }

    /// Three runs in a cycle of equal records are equal; the likelihood's score
    /// equations hold at the fit (expected wins equal observed wins for every run).
    #[test]
    fn the_fit_solves_the_likelihood_equations() {
        let mut c = games(0, 0, 1, 5, false);
        c.extend(games(0, 1, 0, 1, false));
        c.extend(games(1, 1, 2, 3, false));
        c.extend(games(1, 2, 1, 2, false));
        c.extend(games(2, 0, 2, 4, false));
        c.extend(games(2, 2, 0, 3, false));
        c.extend(games(3, 0, 2, 2, true));
        let s = bradley_terry(3, &c).expect("defined");
        assert!(s.iter().sum::<f64>().abs() < 1e-12);
        let p: Vec<f64> = s.iter().map(|v| v.exp()).collect();
        for i in 0..3 {
            let mut observed = 0.0;
            let mut expected = 0.0;
            for g in &c {
                let (w, l) = (g.winner, g.loser);
                if w != i && l != i {
                    continue;
                }
                let j = if w == i { l } else { w };
                expected += p[i] / (p[i] + p[j]);
                observed += if g.tie {
                    0.5
                } else if w == i {
                    1.0
                } else {
                    0.0
                };
            }
            assert!(
                (observed - expected).abs() < 1e-9,
                "run {i}: {observed} vs {expected}"
            );
        }
        let cycle = [
            games(0, 0, 1, 2, false),
            games(0, 1, 2, 2, false),
            games(0, 2, 0, 2, false),
        ]
        .concat();
        let s = bradley_terry(3, &cycle).expect("defined");
        assert!(s.iter().all(|v| v.abs() < 1e-12), "{s:?}");
    }

    /// No MLE: a run that never wins, or runs never compared with the rest.
    #[test]
    fn scores_are_undefined_without_an_estimate() {
        assert_eq!(bradley_terry(2, &games(0, 0, 1, 3, false)), None);
        let apart = [games(0, 0, 1, 1, true), games(1, 2, 3, 1, true)].concat();
        assert_eq!(bradley_terry(4, &apart), None);
        assert_eq!(bradley_terry(2, &[]), None);
        // One tie makes the two-run estimate exist (0 wins vs 0.5 is not enough).
        let with_tie = [games(0, 0, 1, 3, false), games(1, 0, 1, 1, true)].concat();
        let s = bradley_terry(2, &with_tie).expect("defined");
        assert!((s[0] - s[1] - 7f64.ln()).abs() < 1e-12, "{s:?}");
    }

    #[test]
    fn labels_map_to_comparisons_by_the_order_shown() {
        assert_eq!(
            comparison(3, 1, 0, SECOND).map(|c| (c.winner, c.loser)),
            Some((0, 1))
        );
        assert_eq!(
            comparison(3, 1, 0, FIRST).map(|c| (c.winner, c.loser)),
            Some((1, 0))
        );
        assert!(comparison(3, 1, 0, TIE).is_some_and(|c| c.tie));
        assert_eq!(comparison(3, 1, 0, "pass"), None);
        assert!(is_pair_item("pair-1a2b") && !is_pair_item("a-pair-"));
    }

    /// The CI holds the point, shrinks with more items, and is reproducible by seed.
    #[test]
    fn bootstrap_cis_over_items() {
        let boot = Bootstrap {
            resamples: 400,
            seed: 7,
        };
        // n items, a third won by the first run and two thirds by the second.
        let items = |n: usize| -> Vec<PairComparison> {
            (0..n)
                .flat_map(|i| {
                    games(
                        i,
                        usize::from(i % 3 == 0),
                        usize::from(i % 3 != 0),
                        1,
                        false,
                    )
                })
                .collect()
        };
        let (small, large) = (items(9), items(90));
        let a = scores_with_ci(2, &small, boot);
        let b = scores_with_ci(2, &large, boot);
        assert_eq!(a, scores_with_ci(2, &small, boot));
        for e in a.iter().chain(&b) {
            let (v, lo, hi) = (e.value.expect("v"), e.lo.expect("lo"), e.hi.expect("hi"));
            assert!(lo <= v && v <= hi, "{e:?}");
        }
        let width = |e: &Estimate| e.hi.unwrap_or(0.0) - e.lo.unwrap_or(0.0);
        assert!(width(&b[0]) < width(&a[0]), "{a:?} {b:?}");
        // Same win share (1 in 3) in both: the same point.
        assert!((a[0].value.unwrap_or(0.0) - b[0].value.unwrap_or(1.0)).abs() < 1e-9);
    }
}
