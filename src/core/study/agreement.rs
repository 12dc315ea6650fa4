//! Inter-rater agreement: Cohen's kappa, raw agreement and macro-F1 for any
//! categorical label set, with percentile-bootstrap confidence intervals over items.
//!
//! - kappa = (p_o - p_e) / (1 - p_e) with p_e from the two raters' marginals; when
//!   p_e = 1 kappa is undefined and reported as `None`, never as 0 or 1.
//! - macro-F1 treats the second rater as the reference and averages the per-class F1
//!   unweighted over the classes either rater used (scikit-learn's `average="macro"`;
//!   a class never predicted has F1 0).
//! - Bootstrap: resample items with replacement B times (seeded), recompute, take the
//!   2.5th and 97.5th percentiles (linear interpolation, numpy's default). Resamples
//!   where the statistic is undefined are skipped and counted.

use std::collections::BTreeSet;

use serde::Serialize;

use crate::core::rng::Rng;

/// Confusion counts of two raters over a label set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Confusion {
    pub labels: Vec<String>,
    /// `counts[i][j]`: rater A said labels[i], rater B said labels[j].
    pub counts: Vec<Vec<usize>>,
}

impl Confusion {
    pub fn new<S: AsRef<str>>(pairs: &[(S, S)]) -> Self {
        let labels: BTreeSet<String> = pairs
            .iter()
            .flat_map(|(a, b)| [a.as_ref().to_string(), b.as_ref().to_string()])
            .collect();
        Self::with_labels(pairs, labels.into_iter().collect())
    }

    /// Counts over a fixed label order (labels outside it are ignored).
    pub fn with_labels<S: AsRef<str>>(pairs: &[(S, S)], labels: Vec<String>) -> Self {
        let k = labels.len();
        let mut counts = vec![vec![0; k]; k];
        for (a, b) in pairs {
            let i = labels.iter().position(|l| l == a.as_ref());
            let j = labels.iter().position(|l| l == b.as_ref());
            if let (Some(i), Some(j)) = (i, j) {
                counts[i][j] += 1;
            }
        }
        Self { labels, counts }
    }

    pub fn total(&self) -> usize {
        self.counts.iter().flatten().sum()
    }
}

/// Observed agreement p_o.
pub fn raw_agreement(c: &Confusion) -> Option<f64> {
    let n = c.total();
    (n > 0).then(|| (0..c.labels.len()).map(|i| c.counts[i][i]).sum::<usize>() as f64 / n as f64)
}

/// Cohen's kappa; `None` when undefined (no items, or chance agreement p_e = 1).
pub fn cohen_kappa(c: &Confusion) -> Option<f64> {
    let n = c.total() as f64;
    if n == 0.0 {
        return None;
    }
    let k = c.labels.len();
    let p_o = (0..k).map(|i| c.counts[i][i]).sum::<usize>() as f64 / n;
    let p_e: f64 = (0..k)
        .map(|i| {
            let row: usize = c.counts[i].iter().sum();
            let col: usize = (0..k).map(|r| c.counts[r][i]).sum();
            (row as f64 / n) * (col as f64 / n)
        })
        .sum();
    if (1.0 - p_e).abs() < 1e-12 {
        return None;
    }
    Some((p_o - p_e) / (1.0 - p_e))
}

/// The disagreement weights of a weighted kappa over ordered labels (the
/// confusion's label order, lowest first): `|i - j|` or `(i - j)^2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Weights {
    Linear,
    Quadratic,
}

/// Weighted kappa = 1 - sum(w * observed) / sum(w * expected), the expected counts
/// from the two raters' marginals (scikit-learn's `cohen_kappa_score(weights=...)`);
/// `None` with no items or when the expected disagreement is 0.
pub fn weighted_kappa(c: &Confusion, weights: Weights) -> Option<f64> {
    let n = c.total() as f64;
    let k = c.labels.len();
    if n == 0.0 {
        return None;
    }
    let rows: Vec<f64> = (0..k)
        .map(|i| c.counts[i].iter().sum::<usize>() as f64)
        .collect();
    let cols: Vec<f64> = (0..k)
        .map(|j| (0..k).map(|i| c.counts[i][j]).sum::<usize>() as f64)
        .collect();
    let (mut observed, mut expected) = (0.0, 0.0);
    for (i, (row, &r)) in c.counts.iter().zip(&rows).enumerate() {
        for (j, (&o, &col)) in row.iter().zip(&cols).enumerate() {
            let d = i.abs_diff(j) as f64;
            let w = match weights {
                Weights::Linear => d,
                Weights::Quadratic => d * d,
            };
            observed += w * o as f64;
            expected += w * r * col / n;
        }
    }
    (expected > 0.0).then(|| 1.0 - observed / expected)
}

/// Macro-F1 with rater B (columns) as the reference; `None` with no items.
pub fn macro_f1(c: &Confusion) -> Option<f64> {
    let k = c.labels.len();
    let present: Vec<&str> = (0..k)
        .filter(|&i| {
            c.counts[i].iter().sum::<usize>() + (0..k).map(|r| c.counts[r][i]).sum::<usize>() > 0
        })
        .map(|i| c.labels[i].as_str())
        .collect();
    macro_f1_over(c, &present)
}

/// Macro-F1 over the given classes only (scikit-learn's `labels=` argument): other
/// labels still count as errors (a rater A label outside them is a false negative of
/// B's class) but get no F1 of their own. Per class F1 = 2 tp / (A's count + B's
/// count), 0 when both are 0. `None` with no classes.
pub fn macro_f1_over(c: &Confusion, classes: &[&str]) -> Option<f64> {
    let k = c.labels.len();
    if classes.is_empty() {
        return None;
    }
    let f1s = classes.iter().map(|class| {
        let Some(i) = c.labels.iter().position(|l| l == class) else {
            return 0.0;
        };
        let tp = c.counts[i][i] as f64;
        let predicted: usize = c.counts[i].iter().sum(); // A said i
        let actual: usize = (0..k).map(|r| c.counts[r][i]).sum(); // B said i
        let denom = predicted as f64 + actual as f64;
        if denom == 0.0 { 0.0 } else { 2.0 * tp / denom }
    });
    Some(f1s.sum::<f64>() / classes.len() as f64)
}

/// A point estimate with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Estimate {
    pub value: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Bootstrap resamples where the statistic was undefined (skipped).
    pub undefined_resamples: usize,
}

/// Bootstrap settings: B resamples (at least 1000 for stable 95% percentile
/// intervals; default 2000) and the seed that makes them reproducible.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bootstrap {
    pub resamples: usize,
    pub seed: u64,
}

impl Default for Bootstrap {
    fn default() -> Self {
        Self {
            resamples: 2000,
            seed: 20_240_601,
        }
    }
}

pub use crate::core::stats::percentile;

/// The bootstrap values of several statistics: the defined ones, and how many
/// resamples left each undefined (skipped and counted).
pub(crate) struct Resamples {
    values: Vec<Vec<f64>>,
    undefined: Vec<usize>,
}

impl Resamples {
    pub(crate) fn new(statistics: usize) -> Self {
        Self {
            values: vec![Vec::new(); statistics],
            undefined: vec![0; statistics],
        }
    }

    pub(crate) fn push(&mut self, stats: &[Option<f64>]) {
        for (s, v) in stats.iter().enumerate() {
            match v {
                Some(v) => self.values[s].push(*v),
                None => self.undefined[s] += 1,
            }
        }
    }

    /// Statistic `s`: its point value and 95% percentile interval.
    pub(crate) fn estimate(&mut self, s: usize, point: Option<f64>) -> Estimate {
        let mut v = std::mem::take(&mut self.values[s]);
        v.sort_by(f64::total_cmp);
        Estimate {
            value: point,
            lo: percentile(&v, 2.5),
            hi: percentile(&v, 97.5),
            undefined_resamples: self.undefined[s],
        }
    }
}

/// Kappa, macro-F1 and raw agreement of one comparison, each with a CI.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgreementReport {
    pub items: usize,
    pub units: usize,
    pub kappa: Estimate,
    pub macro_f1: Estimate,
    pub raw_agreement: Estimate,
    pub confusion: Confusion,
}

/// Agreement over items, each item holding one or more (A, B) label pairs (one per
/// criterion when criteria are pooled). Bootstrap resamples whole items.
pub fn agreement(items: &[Vec<(String, String)>], boot: Bootstrap) -> AgreementReport {
    let all: Vec<(String, String)> = items.iter().flatten().cloned().collect();
    let confusion = Confusion::new(&all);
    let labels = confusion.labels.clone();
    let stats = |c: &Confusion| [cohen_kappa(c), macro_f1(c), raw_agreement(c)];
    let point = stats(&confusion);
    let mut resamples = Resamples::new(3);
    if !items.is_empty() {
        let mut rng = Rng::new(boot.seed);
        let k = labels.len();
        // Per-item confusion contributions, summed per resample (fast for large B).
        let per_item: Vec<Vec<(usize, usize)>> = items
            .iter()
            .map(|pairs| {
                pairs
                    .iter()
                    .filter_map(|(a, b)| {
                        Some((
                            labels.iter().position(|l| l == a)?,
                            labels.iter().position(|l| l == b)?,
                        ))
                    })
                    .collect()
            })
            .collect();
        let mut c = Confusion {
            labels: labels.clone(),
            counts: vec![vec![0; k]; k],
        };
        for _ in 0..boot.resamples {
            for row in &mut c.counts {
                row.iter_mut().for_each(|x| *x = 0);
            }
            for _ in 0..items.len() {
                for &(i, j) in &per_item[rng.below(items.len())] {
                    c.counts[i][j] += 1;
                }
            }
            resamples.push(&stats(&c));
        }
    }
    let mut est = |s: usize| resamples.estimate(s, point[s]);
    AgreementReport {
        items: items.len(),
        units: all.len(),
        kappa: est(0),
        macro_f1: est(1),
        raw_agreement: est(2),
        confusion,
    }
}

/// Is the judge within human noise? The paired bootstrap difference
/// kappa(judge, human) - kappa(human 1, human 2), for each human, over the same item
/// resamples (so the two kappas share their sampling noise), with a 95% percentile CI.
/// The judge is "within noise" of a human when the CI contains 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct NoiseReport {
    /// Items on which both humans and the judge gave labels.
    pub items: usize,
    /// kappa(judge, human 1) - kappa(human 1, human 2).
    pub vs_first: Estimate,
    /// kappa(judge, human 2) - kappa(human 1, human 2).
    pub vs_second: Estimate,
}

impl Estimate {
    /// Whether the CI contains 0 (`None` when there is no CI).
    pub fn contains_zero(&self) -> Option<bool> {
        Some(self.lo? <= 0.0 && 0.0 <= self.hi?)
    }
}

/// [`NoiseReport`] over items, each holding one `[human 1, human 2, judge]` label
/// triple per criterion (pooled criteria give several per item). Resamples whole items.
pub fn judge_within_noise(items: &[Vec<[String; 3]>], boot: Bootstrap) -> NoiseReport {
    // kappa(h1, h2), kappa(judge, h1), kappa(judge, h2) on each resample.
    let (items, [vs_first, vs_second]) =
        paired_kappa_bootstrap(items, [(0, 1), (2, 0), (2, 1)], boot, |[hh, j1, j2]| {
            let d = |j: Option<f64>| Some(j? - hh?);
            [d(j1), d(j2)]
        });
    NoiseReport {
        items,
        vs_first,
        vs_second,
    }
}

/// A paired percentile bootstrap over items of statistics made from Cohen's kappas.
/// Each item holds label triples (one per criterion, several when criteria are
/// pooled); `pairs` names, per kappa, the two triple positions it compares; `combine`
/// turns the P kappas of one (re)sample into the S reported statistics. Every kappa is
/// recomputed on the same resample of whole items, so the kappas share their sampling
/// noise and a difference between them gets a paired CI. Items with no triple are left
/// out; the count returned is of the items used.
pub(crate) fn paired_kappa_bootstrap<const P: usize, const S: usize>(
    items: &[Vec<[String; 3]>],
    pairs: [(usize, usize); P],
    boot: Bootstrap,
    combine: impl Fn([Option<f64>; P]) -> [Option<f64>; S],
) -> (usize, [Estimate; S]) {
    let items: Vec<&Vec<[String; 3]>> = items.iter().filter(|v| !v.is_empty()).collect();
    let labels: Vec<String> = items
        .iter()
        .flat_map(|v| v.iter().flatten().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let k = labels.len();
    let idx = |l: &str| labels.iter().position(|x| x == l).unwrap_or(0);
    let per_item: Vec<Vec<[usize; 3]>> = items
        .iter()
        .map(|v| v.iter().map(|t| t.each_ref().map(|l| idx(l))).collect())
        .collect();
    let stats = |pick: &mut dyn FnMut() -> usize, n: usize| {
        let mut c = [(); P].map(|()| Confusion {
            labels: labels.clone(),
            counts: vec![vec![0; k]; k],
        });
        for _ in 0..n {
            for t in &per_item[pick()] {
                for (c, &(row, col)) in c.iter_mut().zip(&pairs) {
                    c.counts[t[row]][t[col]] += 1;
                }
            }
        }
        combine(c.each_ref().map(cohen_kappa))
    };
    let n = per_item.len();
    let mut i = 0;
    let point = stats(
        &mut || {
            i += 1;
            i - 1
        },
        n,
    );
    let mut resamples = Resamples::new(S);
    if n > 0 {
        let mut rng = Rng::new(boot.seed);
        for _ in 0..boot.resamples {
            resamples.push(&stats(&mut || rng.below(n), n));
        }
    }
    let mut s = 0;
    let estimates = point.map(|p| {
        s += 1;
        resamples.estimate(s - 1, p)
    });
    (n, estimates)
}

pub mod chance;
pub mod drift;
pub mod raters;

#[cfg(test)]
mod tests;
