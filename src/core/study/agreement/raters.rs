//! Agreement of any number of raters on any label scale: Fleiss' kappa,
//! Krippendorff's alpha (nominal; ordinal and interval when the labels are
//! ordered), the pairwise Cohen's kappa matrix and, for ordered labels, linear and
//! quadratic weighted kappa; each with a percentile bootstrap CI over items, per
//! criterion and Overall. Beside them Gwet's AC1 and Brennan-Prediger, which hold on
//! skewed labels, with their analytic intervals ([`super::chance`]).
//!
//! - A unit is one (item, criterion); any rater's label on it may be missing.
//! - Krippendorff's alpha = 1 - (n - 1) sum(o_ck d_ck) / sum(n_c n_k d_ck) over the
//!   coincidence matrix o: a unit with m >= 2 labels adds 1/(m - 1) to o_ck for every
//!   ordered pair of its labels (c, k) from two different raters; n_c are o's
//!   marginals and n their sum. A unit with fewer than two labels is not pairable
//!   and adds nothing. Distances d_ck: nominal 1 when c != k; ordinal
//!   (sum of n_g for g from c to k - (n_c + n_k) / 2)^2 over the label order;
//!   interval (v_c - v_k)^2, v the labels' numbers when every label is a number,
//!   else their ranks 0, 1, 2, ... Undefined when there is no expected disagreement.
//! - Fleiss' kappa needs the same number of raters on every unit: it is computed
//!   over the units every rater labelled, and undefined when chance agreement is 1.
//! - Cohen's kappa of a pair (and its weighted kappa) is over the units both labelled.
//! - Overall pools every (item, criterion) unit: its sums are the criteria's sums.
//! - The bootstrap resamples items, each with all its criteria (so Overall's CI
//!   keeps an item's criteria together), over the items with a pairable unit; the
//!   same settings, percentile rule and undefined-resample count as two raters.
//! - Every statistic is a function of sums over units, and a unit's share of them
//!   depends only on its pattern of labels: a resample counts how often each
//!   pattern is drawn and adds each pattern's share once, so B resamples of many
//!   items cost little more than the draws.

use std::collections::HashMap;

use serde::Serialize;

use super::chance::{Chance, ChanceCorrected, chance_corrected};
use super::{Bootstrap, Confusion, Estimate, Resamples, Weights, cohen_kappa, weighted_kappa};
use crate::core::rng::Rng;

/// The code of a missing label.
const MISSING: u8 = u8::MAX;

/// The labels of some raters on items, per criterion (missing labels allowed).
#[derive(Debug, Clone, PartialEq)]
pub struct Ratings {
    pub raters: Vec<String>,
    /// Every label, lowest first when `ordered` (at most 254).
    pub labels: Vec<String>,
    /// Whether the labels are ordered (ordinal and interval statistics then apply).
    pub ordered: bool,
    /// The criteria (the rows besides Overall).
    pub criteria: Vec<String>,
    /// Label codes, item by item, criterion by criterion, rater by rater.
    codes: Vec<u8>,
}

impl Ratings {
    pub fn new(
        raters: Vec<String>,
        labels: Vec<String>,
        ordered: bool,
        criteria: Vec<String>,
    ) -> Self {
        Self {
            raters,
            labels,
            ordered,
            criteria,
            codes: Vec::new(),
        }
    }

    /// Add one item: `label(criterion, rater)` (indices); a label that is not one of
    /// `labels` counts as missing.
    pub fn push_item<'a>(&mut self, label: impl Fn(usize, usize) -> Option<&'a str>) {
        let mut codes = Vec::with_capacity(self.criteria.len() * self.raters.len());
        for c in 0..self.criteria.len() {
            for r in 0..self.raters.len() {
                let code = label(c, r)
                    .and_then(|l| self.labels.iter().position(|x| x == l))
                    .and_then(|i| u8::try_from(i).ok())
                    .filter(|&i| i != MISSING);
                codes.push(code.unwrap_or(MISSING));
            }
        }
        self.codes.extend(codes);
    }

    pub fn items(&self) -> usize {
        self.codes.len() / (self.criteria.len() * self.raters.len()).max(1)
    }

    fn unit(&self, item: usize, criterion: usize) -> &[u8] {
        let r = self.raters.len();
        let start = (item * self.criteria.len() + criterion) * r;
        &self.codes[start..start + r]
    }

    /// The labels' values for interval alpha: their numbers when every label is a
    /// number, else their ranks.
    pub fn interval_values(&self) -> Vec<f64> {
        let numbers: Option<Vec<f64>> = self
            .labels
            .iter()
            .map(|l| l.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
            .collect();
        numbers.unwrap_or_else(|| (0..self.labels.len()).map(|i| i as f64).collect())
    }
}

/// Whether a unit has two labels or more.
fn pairable(unit: &[u8]) -> bool {
    unit.iter().filter(|&&c| c != MISSING).count() >= 2
}

/// Cohen's kappa of two raters, and their weighted kappas when the labels are ordered.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PairKappa {
    pub first: String,
    pub second: String,
    /// Units both labelled.
    pub units: usize,
    pub kappa: Estimate,
    pub linear: Option<Estimate>,
    pub quadratic: Option<Estimate>,
}

/// One criterion (or Overall): every statistic with its CI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaterRow {
    pub criterion: String,
    /// Items with a pairable unit in this row.
    pub items: usize,
    /// Pairable units (two labels or more).
    pub units: usize,
    /// Units every rater labelled (Fleiss' kappa is over these).
    pub complete_units: usize,
    pub fleiss_kappa: Estimate,
    pub alpha_nominal: Estimate,
    pub alpha_ordinal: Option<Estimate>,
    pub alpha_interval: Option<Estimate>,
    /// Gwet's AC1 over every unit with a label, with its analytic interval
    /// ([`super::chance`]).
    pub ac1: ChanceCorrected,
    /// Brennan-Prediger's coefficient, likewise.
    pub brennan_prediger: ChanceCorrected,
    /// Every pair of raters, in rater order.
    pub pairs: Vec<PairKappa>,
}

/// The agreement of every rater: per criterion, then Overall.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RaterReport {
    pub raters: Vec<String>,
    pub labels: Vec<String>,
    pub ordered: bool,
    /// The values interval alpha uses (one per label).
    pub interval_values: Vec<f64>,
    /// Items resampled (those with a pairable unit).
    pub items: usize,
    pub bootstrap: Bootstrap,
    pub rows: Vec<RaterRow>,
}

impl RaterRow {
    /// The kappa of raters `a` and `b` (either order).
    pub fn pair(&self, a: &str, b: &str) -> Option<&PairKappa> {
        self.pairs
            .iter()
            .find(|p| (p.first == a && p.second == b) || (p.first == b && p.second == a))
    }
}

/// Where each sum lies in a row's sum vector: the coincidence matrix (k x k), one
/// confusion matrix per pair (k x k each), then Fleiss' category totals (k), the
/// sum of squared category counts, complete units, and pairable units.
struct Layout {
    k: usize,
    raters: usize,
    pairs: Vec<(usize, usize)>,
}

impl Layout {
    fn new(k: usize, raters: usize) -> Self {
        let pairs = (0..raters)
            .flat_map(|a| (a + 1..raters).map(move |b| (a, b)))
            .collect();
        Self { k, raters, pairs }
    }

    fn pair(&self, p: usize) -> usize {
        self.k * self.k * (1 + p)
    }

    fn fleiss(&self) -> usize {
        self.pair(self.pairs.len())
    }

    fn len(&self) -> usize {
        self.fleiss() + self.k + 3
    }

    /// One unit's share of the sums, as (position, value) for the nonzero ones.
    fn share(&self, unit: &[u8]) -> Vec<(u32, f64)> {
        let k = self.k;
        let mut counts = vec![0usize; k];
        for &c in unit.iter().filter(|&&c| c != MISSING) {
            counts[usize::from(c)] += 1;
        }
        let m: usize = counts.iter().sum();
        let mut dense = vec![0.0; self.len()];
        if m >= 2 {
            for (c, &nc) in counts.iter().enumerate() {
                for (d, &nd) in counts.iter().enumerate() {
                    let pairs = nc * nd - if c == d { nc } else { 0 };
                    dense[c * k + d] = pairs as f64 / (m - 1) as f64;
                }
            }
            dense[self.len() - 1] = 1.0;
        }
        for (p, &(a, b)) in self.pairs.iter().enumerate() {
            if unit[a] != MISSING && unit[b] != MISSING {
                dense[self.pair(p) + usize::from(unit[a]) * k + usize::from(unit[b])] += 1.0;
            }
        }
        if m == self.raters && m >= 2 {
            let f = self.fleiss();
            for (c, &n) in counts.iter().enumerate() {
                dense[f + c] = n as f64;
            }
            dense[f + k] = counts.iter().map(|&n| (n * n) as f64).sum();
            dense[f + k + 1] = 1.0;
        }
        dense
            .into_iter()
            .enumerate()
            .filter(|(_, v)| *v != 0.0)
            .map(|(i, v)| (i as u32, v))
            .collect()
    }

    /// The confusion matrix of pair `p` in a row's sums.
    fn confusion(&self, sums: &[f64], p: usize, labels: &[String]) -> Confusion {
        let at = self.pair(p);
        Confusion {
            labels: labels.to_vec(),
            counts: (0..self.k)
                .map(|i| {
                    (0..self.k)
                        .map(|j| sums[at + i * self.k + j].round() as usize)
                        .collect()
                })
                .collect(),
        }
    }

    /// Fleiss' kappa from a row's sums.
    fn fleiss_kappa(&self, sums: &[f64]) -> Option<f64> {
        let (f, k, r) = (self.fleiss(), self.k, self.raters as f64);
        let units = sums[f + k + 1];
        if units < 0.5 || r < 2.0 {
            return None;
        }
        let p_bar = (sums[f + k] - units * r) / (units * r * (r - 1.0));
        let p_e: f64 = (0..k).map(|j| (sums[f + j] / (units * r)).powi(2)).sum();
        ((1.0 - p_e).abs() > 1e-12).then(|| (p_bar - p_e) / (1.0 - p_e))
    }
}

/// The distance of Krippendorff's alpha.
#[derive(Clone, Copy)]
enum Metric<'a> {
    Nominal,
    Ordinal,
    Interval(&'a [f64]),
}

/// Krippendorff's alpha from the coincidence matrix (the first k x k sums).
fn alpha(k: usize, sums: &[f64], metric: Metric) -> Option<f64> {
    let o = &sums[..k * k];
    let marginals: Vec<f64> = (0..k).map(|c| o[c * k..(c + 1) * k].iter().sum()).collect();
    let n: f64 = marginals.iter().sum();
    // cumulative[g] = marginals of labels below g.
    let cumulative: Vec<f64> = std::iter::once(0.0)
        .chain(marginals.iter().scan(0.0, |acc, m| {
            *acc += m;
            Some(*acc)
        }))
        .collect();
    let distance = |c: usize, d: usize| -> f64 {
        match metric {
            Metric::Nominal => f64::from(u8::from(c != d)),
            Metric::Ordinal => {
                let (lo, hi) = (c.min(d), c.max(d));
                let between = cumulative[hi + 1] - cumulative[lo];
                (between - (marginals[lo] + marginals[hi]) / 2.0).powi(2)
            }
            Metric::Interval(v) => (v[c] - v[d]).powi(2),
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for (c, &mc) in marginals.iter().enumerate() {
        for (d, &md) in marginals.iter().enumerate() {
            let delta = distance(c, d);
            observed += o[c * k + d] * delta;
            expected += mc * md * delta;
        }
    }
    (n >= 2.0 && expected > 0.0).then(|| 1.0 - (n - 1.0) * observed / expected)
}

/// The statistics of one row, in report order: Fleiss, alpha nominal, (alpha
/// ordinal, alpha interval), then per pair kappa (linear, quadratic).
fn statistics(layout: &Layout, sums: &[f64], r: &Ratings, values: &[f64]) -> Vec<Option<f64>> {
    let mut v = vec![
        layout.fleiss_kappa(sums),
        alpha(layout.k, sums, Metric::Nominal),
    ];
    if r.ordered {
        v.push(alpha(layout.k, sums, Metric::Ordinal));
        v.push(alpha(layout.k, sums, Metric::Interval(values)));
    }
    for p in 0..layout.pairs.len() {
        let c = layout.confusion(sums, p, &r.labels);
        v.push(cohen_kappa(&c));
        if r.ordered {
            v.push(weighted_kappa(&c, Weights::Linear));
            v.push(weighted_kappa(&c, Weights::Quadratic));
        }
    }
    v
}

/// Every resampled item's pattern per criterion, and each pattern's share.
struct Patterns {
    criteria: usize,
    /// The pattern of (item, criterion), item by item.
    of_unit: Vec<u32>,
    /// shares[criterion][pattern].
    shares: Vec<Vec<Vec<(u32, f64)>>>,
}

impl Patterns {
    fn new(r: &Ratings, items: &[usize], layout: &Layout) -> Self {
        let n = r.criteria.len();
        let mut ids: Vec<HashMap<&[u8], u32>> = vec![HashMap::new(); n];
        let mut shares: Vec<Vec<Vec<(u32, f64)>>> = vec![Vec::new(); n];
        let mut of_unit = Vec::with_capacity(items.len() * n);
        for &i in items {
            for (c, (ids, shares)) in ids.iter_mut().zip(shares.iter_mut()).enumerate() {
                let unit = r.unit(i, c);
                let next = ids.len() as u32;
                let id = *ids.entry(unit).or_insert_with(|| {
                    shares.push(layout.share(unit));
                    next
                });
                of_unit.push(id);
            }
        }
        Self {
            criteria: n,
            of_unit,
            shares,
        }
    }

    /// Count the patterns of item `i` (an index into the resampled items).
    fn draw(&self, counts: &mut [Vec<u32>], i: usize) {
        let units = &self.of_unit[i * self.criteria..(i + 1) * self.criteria];
        for (c, &p) in units.iter().enumerate() {
            counts[c][p as usize] += 1;
        }
    }

    /// Every row's sums (criteria, then Overall) for the pattern counts.
    fn sums(&self, counts: &[Vec<u32>], out: &mut [Vec<f64>]) {
        for row in out.iter_mut() {
            row.fill(0.0);
        }
        for (c, shares) in self.shares.iter().enumerate() {
            for (share, &h) in shares.iter().zip(&counts[c]) {
                if h > 0 {
                    let h = f64::from(h);
                    for &(i, v) in share {
                        out[c][i as usize] += h * v;
                    }
                }
            }
        }
        let (criteria, overall) = out.split_at_mut(self.criteria);
        for row in criteria.iter() {
            for (o, x) in overall[0].iter_mut().zip(row) {
                *o += x;
            }
        }
    }
}

/// Every statistic of every rater, per criterion and Overall, with bootstrap CIs.
pub fn rater_agreement(r: &Ratings, boot: Bootstrap) -> RaterReport {
    let layout = Layout::new(r.labels.len(), r.raters.len());
    let values = r.interval_values();
    let items: Vec<usize> = (0..r.items())
        .filter(|&i| (0..r.criteria.len()).any(|c| pairable(r.unit(i, c))))
        .collect();
    let patterns = Patterns::new(r, &items, &layout);
    let mut sums = vec![vec![0.0; layout.len()]; r.criteria.len() + 1];
    let mut counts: Vec<Vec<u32>> = patterns.shares.iter().map(|s| vec![0; s.len()]).collect();
    for i in 0..items.len() {
        patterns.draw(&mut counts, i);
    }
    patterns.sums(&counts, &mut sums);
    let point_sums = sums.clone();
    let point: Vec<Vec<Option<f64>>> = sums
        .iter()
        .map(|s| statistics(&layout, s, r, &values))
        .collect();
    let mut resamples: Vec<Resamples> = point.iter().map(|p| Resamples::new(p.len())).collect();
    if !items.is_empty() {
        let mut rng = Rng::new(boot.seed);
        for _ in 0..boot.resamples {
            counts.iter_mut().for_each(|c| c.fill(0));
            for _ in 0..items.len() {
                patterns.draw(&mut counts, rng.below(items.len()));
            }
            patterns.sums(&counts, &mut sums);
            for (row, s) in sums.iter().enumerate() {
                resamples[row].push(&statistics(&layout, s, r, &values));
            }
        }
    }
    let rows = point
        .iter()
        .zip(resamples.iter_mut())
        .zip(&point_sums)
        .enumerate()
        .map(|(row, ((point, res), s))| {
            let row_items = items
                .iter()
                .filter(|&&i| row >= r.criteria.len() || pairable(r.unit(i, row)))
                .count();
            row_report(row, row_items, &layout, r, s, point, res)
        })
        .collect();
    RaterReport {
        raters: r.raters.clone(),
        labels: r.labels.clone(),
        ordered: r.ordered,
        interval_values: values,
        items: items.len(),
        bootstrap: boot,
        rows,
    }
}

/// Each unit's count of each label, for row `row` (a criterion, or Overall past the
/// last one: every criterion's units).
fn label_counts(r: &Ratings, row: usize) -> Vec<Vec<u32>> {
    let criteria: Vec<usize> = if row < r.criteria.len() {
        vec![row]
    } else {
        (0..r.criteria.len()).collect()
    };
    let k = r.labels.len();
    let mut out = Vec::with_capacity(r.items() * criteria.len());
    for i in 0..r.items() {
        for &c in &criteria {
            let mut counts = vec![0u32; k];
            for &code in r.unit(i, c) {
                if code != MISSING {
                    counts[usize::from(code)] += 1;
                }
            }
            out.push(counts);
        }
    }
    out
}

/// One row of the report (criterion `row`, or Overall past the last) from its point
/// sums, point values and resamples.
fn row_report(
    row: usize,
    items: usize,
    layout: &Layout,
    r: &Ratings,
    sums: &[f64],
    point: &[Option<f64>],
    res: &mut Resamples,
) -> RaterRow {
    let mut next = 0;
    let mut est = || {
        next += 1;
        res.estimate(next - 1, point[next - 1])
    };
    let fleiss_kappa = est();
    let alpha_nominal = est();
    let (alpha_ordinal, alpha_interval) = if r.ordered {
        (Some(est()), Some(est()))
    } else {
        (None, None)
    };
    let pairs = layout
        .pairs
        .iter()
        .enumerate()
        .map(|(p, &(a, b))| {
            let at = layout.pair(p);
            let kappa = est();
            let (linear, quadratic) = if r.ordered {
                (Some(est()), Some(est()))
            } else {
                (None, None)
            };
            PairKappa {
                first: r.raters[a].clone(),
                second: r.raters[b].clone(),
                units: sums[at..at + layout.k * layout.k]
                    .iter()
                    .sum::<f64>()
                    .round() as usize,
                kappa,
                linear,
                quadratic,
            }
        })
        .collect();
    let f = layout.fleiss() + layout.k;
    let counts = label_counts(r, row);
    RaterRow {
        criterion: r
            .criteria
            .get(row)
            .cloned()
            .unwrap_or_else(|| "Overall".to_string()),
        ac1: chance_corrected(&counts, layout.k, Chance::Ac1),
        brennan_prediger: chance_corrected(&counts, layout.k, Chance::BrennanPrediger),
        items,
        units: sums[layout.len() - 1].round() as usize,
        complete_units: sums[f + 1].round() as usize,
        fleiss_kappa,
        alpha_nominal,
        alpha_ordinal,
        alpha_interval,
        pairs,
    }
}

#[cfg(test)]
mod tests;
