//! Is one configuration really better than another? Paired tests over per-query scores
//! and over paired pass/fail outcomes (pure: values in, statistics out).
//!
//! - **Pairs and sign**: each query gives a (baseline, candidate) pair of values of one
//!   metric; a difference is candidate - baseline, so a positive mean difference
//!   favours the candidate. A win is a query where the candidate scores higher, a loss
//!   lower, a tie equal (exactly equal values).
//! - **Bootstrap CI**: B resamples of the n queries with replacement (seeded); the 95%
//!   interval of the mean difference is the 2.5th and 97.5th percentiles of the B
//!   resampled mean differences (linear interpolation between order statistics,
//!   numpy's default). The resampled queries are drawn once per resample and shared by
//!   every column of a table, so a pair's interval does not depend on which other
//!   columns were resampled with it.
//! - **Randomisation test** (Fisher's, sign flip): under the null hypothesis a query's
//!   two values are exchangeable, so each difference keeps or flips its sign with
//!   probability 1/2. With S = sum of the differences and P seeded permutations,
//!   two-sided p = (1 + #{|S*| >= |S|}) / (1 + P): the observed assignment counts as
//!   one of the permutations, so p is never 0. Queries with a zero difference are left
//!   out of the flips (flipping a zero changes no sum). Sums equal up to rounding
//!   (within 1e-10 of sum |d_i|) count as extreme, as exact ties must.
//! - **Paired t-test**: t = mean(d) / (sd(d) / sqrt(n)), sd with n - 1, df = n - 1,
//!   two-sided p from Student's t (scipy's `ttest_rel`). Undefined (None) when n < 2
//!   or every difference is the same value (sd = 0).
//! - **Holm-Bonferroni**: the m p-values of a family sorted ascending, p_(i) becomes
//!   min(1, (m - i + 1) p_(i)), then made monotone by taking the running maximum in
//!   that order (step-down); reject at level a where the adjusted p <= a.
//! - **McNemar's exact test** for paired pass/fail outcomes of runs A and B: only the
//!   discordant pairs inform it; with b = A passes and B fails, c = the reverse,
//!   p = min(1, 2 P(X <= min(b, c))) for X ~ Binomial(b + c, 1/2) (1 when b + c = 0).

mod clustered;
mod distribution;
mod pareto;
mod table;

use serde::{Deserialize, Serialize};

use crate::core::rng::Rng;
use crate::core::stats::percentile;

pub use clustered::{
    ClusteredInterval, ClusteredMean, GateError, GateVerdict, cluster_numbers,
    clustered_difference, clustered_mean, mde_80, non_inferiority, normal_quantile,
    normal_upper_tail,
};
pub use distribution::{binomial_two_sided_half, ln_gamma, regularized_beta, t_two_sided};
pub use pareto::{ParetoPoint, dominated_by};
pub use table::{
    ComparisonRow, RunScores, ScoreTable, is_judged_metric, judged_metric_names, metric_names,
    score_table,
};

/// Resampling settings of a comparison, reported with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestSettings {
    /// Bootstrap resamples for the CI of the mean difference (at least 1000 for a
    /// stable 95% percentile interval).
    pub resamples: usize,
    /// Sign-flip permutations of the randomisation test.
    pub permutations: usize,
    /// Seeds both: the same seed gives the same intervals and p-values everywhere.
    pub seed: u64,
}

impl Default for TestSettings {
    fn default() -> Self {
        Self {
            resamples: 2000,
            permutations: 10_000,
            seed: 20_240_601,
        }
    }
}

/// Queries where the candidate scored higher, equal, lower than the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WinsTiesLosses {
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
}

/// Wins, ties and losses of `candidate` against `baseline`, query by query.
pub fn wins_ties_losses(baseline: &[f64], candidate: &[f64]) -> WinsTiesLosses {
    let mut w = WinsTiesLosses::default();
    for (b, c) in baseline.iter().zip(candidate) {
        match c.total_cmp(b) {
            std::cmp::Ordering::Greater => w.wins += 1,
            std::cmp::Ordering::Equal => w.ties += 1,
            std::cmp::Ordering::Less => w.losses += 1,
        }
    }
    w
}

/// The per-query differences candidate - baseline.
pub fn differences(baseline: &[f64], candidate: &[f64]) -> Vec<f64> {
    baseline.iter().zip(candidate).map(|(b, c)| c - b).collect()
}

fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

/// A paired t-test's statistic, degrees of freedom and two-sided p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TTest {
    pub t: f64,
    pub df: usize,
    pub p: f64,
}

/// The paired t-test on the differences (None: fewer than two, or all equal).
pub fn paired_t(diffs: &[f64]) -> Option<TTest> {
    let n = diffs.len();
    let first = *diffs.first()?;
    if n < 2 || diffs.iter().all(|&d| d == first) {
        return None;
    }
    let m = mean(diffs);
    let var = diffs.iter().map(|d| (d - m) * (d - m)).sum::<f64>() / (n - 1) as f64;
    let t = m / (var / n as f64).sqrt();
    Some(TTest {
        t,
        df: n - 1,
        p: t_two_sided(t, (n - 1) as f64),
    })
}

/// The nonzero differences (the only ones a sign flip changes), their sum S and the
/// threshold |S| minus the rounding allowance that a permuted |S*| must reach.
fn flip_setup(diffs: &[f64]) -> (Vec<f64>, f64, f64) {
    let d: Vec<f64> = diffs.iter().copied().filter(|&x| x != 0.0).collect();
    let total: f64 = d.iter().sum();
    let scale: f64 = d.iter().map(|x| x.abs()).sum();
    (d, total, total.abs() - 1e-10 * scale)
}

/// Queries per lookup table of the sampled test: GROUP random bits pick which of
/// GROUP differences flip, and a table of 2^GROUP entries holds the sum of each subset,
/// so a permutation costs n / GROUP additions instead of n. The grouping does not
/// change which bit flips which difference, so it changes no p-value.
const GROUP: usize = 4;
const TABLE: usize = 1 << GROUP;

/// The sum of every subset of each group of [`GROUP`] differences (entry `m` of group
/// `g`: the differences `g * GROUP + j` whose bit `j` of `m` is set).
fn subset_sums(d: &[f64]) -> Vec<f64> {
    let groups = d.len().div_ceil(GROUP);
    let mut table = vec![0.0; groups * TABLE];
    for (g, t) in table.chunks_exact_mut(TABLE).enumerate() {
        for m in 1..TABLE {
            let low = m.trailing_zeros() as usize;
            let value = d.get(g * GROUP + low).copied().unwrap_or(0.0);
            t[m] = t[m & (m - 1)] + value;
        }
    }
    table
}

/// Permutations drawn and summed together by [`sign_flip_p`]: their random words are
/// drawn first (in the stream's order), then each word's table rows are read for all
/// of them while they sit in L1, instead of once per permutation from L2.
const BATCH: usize = 64;

/// Groups per random word: each group takes [`GROUP`] of its bits.
const PER_WORD: usize = 64 / GROUP;

/// The table rows of one random word.
const WORD_TABLE: usize = PER_WORD * TABLE;

/// Two-sided p-value of the paired randomisation (sign-flip) test with `permutations`
/// seeded permutations: p = (1 + #{|S*| >= |S|}) / (1 + permutations).
///
/// Permutation r takes ceil(k / 64) words of the generator seeded by `seed` (k the
/// nonzero differences, in query order); bit j of that stream flips difference j.
///
/// [`BATCH`] permutations are summed side by side, a word at a time: each
/// permutation's four partial sums stay in registers while the word's sixteen groups
/// are added (group g into partial sum g mod 4), so every partial sum receives the
/// same additions in the same order as in [`sign_flip_p_one_by_one`], and the four are
/// then added left to right as there: every permuted sum, and so the p-value, is the
/// same to the last bit; only the memory traffic and the instructions per group
/// differ. The table is padded with zero rows to whole words; adding +0.0 changes no
/// partial sum (none can be -0.0: they start at +0.0 and add sums of nonzero values).
pub fn sign_flip_p(diffs: &[f64], permutations: usize, seed: u64) -> f64 {
    let (d, total, threshold) = flip_setup(diffs);
    if d.is_empty() {
        return 1.0; // every permutation gives S* = 0 = S
    }
    let mut table = subset_sums(&d);
    let words = (table.len() / TABLE).div_ceil(PER_WORD);
    table.resize(words * WORD_TABLE, 0.0);
    let mut rng = Rng::new(seed);
    // bits[w * BATCH + p]: word w of permutation p of the batch.
    let mut bits = vec![0u64; words * BATCH];
    let mut extreme = 0usize;
    let mut done = 0usize;
    while done < permutations {
        let batch = BATCH.min(permutations - done);
        for p in 0..batch {
            for w in 0..words {
                bits[w * BATCH + p] = rng.next_u64();
            }
        }
        // sums[p][j]: partial sum j of permutation p.
        let mut sums = [[0.0f64; 4]; BATCH];
        for (w, rows) in table.as_chunks::<WORD_TABLE>().0.iter().enumerate() {
            for (s, &b) in sums.iter_mut().zip(&bits[w * BATCH..][..batch]) {
                for j in 0..PER_WORD {
                    s[j & 3] += rows[j * TABLE + (((b >> (GROUP * j)) as usize) & (TABLE - 1))];
                }
            }
        }
        for s in &sums[..batch] {
            let flipped = s[0] + s[1] + s[2] + s[3];
            if (total - 2.0 * flipped).abs() >= threshold {
                extreme += 1;
            }
        }
        done += batch;
    }
    (extreme + 1) as f64 / (permutations + 1) as f64
}

/// [`sign_flip_p`] one permutation at a time, the table read whole for each: the
/// implementation it replaced, kept as the reference that the batched one must equal
/// bit for bit (a unit test and `benches/compare.rs`, which times both).
pub fn sign_flip_p_one_by_one(diffs: &[f64], permutations: usize, seed: u64) -> f64 {
    let (d, total, threshold) = flip_setup(diffs);
    if d.is_empty() {
        return 1.0;
    }
    let table = subset_sums(&d);
    let mut rng = Rng::new(seed);
    let mut extreme = 0usize;
    for _ in 0..permutations {
        // Four partial sums: additions that do not wait on each other.
        let mut flipped = [0.0f64; 4];
        for word in table.chunks(WORD_TABLE) {
            let bits = rng.next_u64();
            for (j, t) in word.chunks_exact(TABLE).enumerate() {
                flipped[j & 3] += t[((bits >> (GROUP * j)) as usize) & (TABLE - 1)];
            }
        }
        let s = total - 2.0 * (flipped[0] + flipped[1] + flipped[2] + flipped[3]);
        if s.abs() >= threshold {
            extreme += 1;
        }
    }
    (extreme + 1) as f64 / (permutations + 1) as f64
}

/// The exact randomisation p-value: the share of all 2^k sign assignments of the k
/// nonzero differences with |S*| >= |S| (None for k > 24: too many to enumerate).
pub fn sign_flip_exact_p(diffs: &[f64]) -> Option<f64> {
    let (d, total, threshold) = flip_setup(diffs);
    if d.len() > 24 {
        return None;
    }
    let all = 1usize << d.len();
    let extreme = (0..all)
        .filter(|&mask| {
            let flipped: f64 = (0..d.len())
                .filter(|j| (mask >> j) & 1 == 1)
                .map(|j| d[j])
                .sum();
            (total - 2.0 * flipped).abs() >= threshold
        })
        .count();
    Some(extreme as f64 / all as f64)
}

/// The bootstrap means of each column: `out[c][r]` is the mean of column `c` over
/// resample `r`. Resample r draws n query indices uniformly with replacement from the
/// generator seeded by `seed`, the same draws for every column, so a column's means
/// depend only on its values, n and the seed (columns may be split over threads).
/// Every column must have the same length.
pub fn bootstrap_means(columns: &[&[f64]], resamples: usize, seed: u64) -> Vec<Vec<f64>> {
    let width = columns.len();
    let n = columns.first().map_or(0, |c| c.len());
    if n == 0 || columns.iter().any(|c| c.len() != n) {
        return vec![Vec::new(); width];
    }
    // Row-major: one draw adds one contiguous row of every column.
    let mut rows = vec![0.0; n * width];
    for (c, col) in columns.iter().enumerate() {
        for (i, v) in col.iter().enumerate() {
            rows[i * width + c] = *v;
        }
    }
    let mut out: Vec<Vec<f64>> = (0..width).map(|_| Vec::with_capacity(resamples)).collect();
    let mut rng = Rng::new(seed);
    let mut acc = vec![0.0; width];
    for _ in 0..resamples {
        acc.fill(0.0);
        for _ in 0..n {
            let i = rng.below(n);
            for (a, v) in acc.iter_mut().zip(&rows[i * width..(i + 1) * width]) {
                *a += v;
            }
        }
        for (o, a) in out.iter_mut().zip(&acc) {
            o.push(a / n as f64);
        }
    }
    out
}

/// The 95% percentile interval of resampled values (None without values).
pub fn percentile_interval(mut values: Vec<f64>) -> Option<(f64, f64)> {
    values.sort_by(f64::total_cmp);
    Some((percentile(&values, 2.5)?, percentile(&values, 97.5)?))
}

/// Holm-Bonferroni adjusted p-values, in the order given (step-down, monotone).
pub fn holm(p: &[f64]) -> Vec<f64> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]));
    let mut out = vec![0.0; m];
    let mut running = 0.0f64;
    for (rank, &i) in order.iter().enumerate() {
        running = running.max(((m - rank) as f64 * p[i]).min(1.0));
        out[i] = running;
    }
    out
}

/// One paired comparison of a candidate with a baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparison {
    pub queries: usize,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// candidate_mean - baseline_mean (the mean of the per-query differences).
    pub difference: f64,
    /// 95% percentile bootstrap interval of the difference (None: no queries).
    pub ci: Option<(f64, f64)>,
    #[serde(flatten)]
    pub record: WinsTiesLosses,
    pub randomisation_p: f64,
    pub t_test: Option<TTest>,
    /// Holm-adjusted p-values over the family the report names (filled by [`adjust`]).
    pub randomisation_p_holm: f64,
    pub t_test_p_holm: Option<f64>,
}

/// Compare `candidate` with `baseline` (the same queries, in the same order), given
/// the two columns' bootstrap means (from one [`bootstrap_means`] call or two with the
/// same seed). Holm-adjusted p-values are left equal to the raw ones until [`adjust`].
pub fn compare_pair(
    baseline: &[f64],
    candidate: &[f64],
    boot: (&[f64], &[f64]),
    settings: &TestSettings,
) -> PairedComparison {
    compare_pair_with(baseline, candidate, boot, settings, sign_flip_p)
}

/// A randomisation test: (differences, permutations, seed) to a two-sided p-value.
pub type SignFlip = fn(&[f64], usize, u64) -> f64;

/// [`compare_pair`] with the randomisation test `flip` ([`sign_flip_p`] or the
/// implementation it replaced, [`sign_flip_p_one_by_one`], which the bench times
/// beside it).
pub fn compare_pair_with(
    baseline: &[f64],
    candidate: &[f64],
    boot: (&[f64], &[f64]),
    settings: &TestSettings,
    flip: SignFlip,
) -> PairedComparison {
    let diffs = differences(baseline, candidate);
    let resampled: Vec<f64> = boot.0.iter().zip(boot.1).map(|(b, c)| c - b).collect();
    let t_test = paired_t(&diffs);
    let randomisation_p = flip(&diffs, settings.permutations, settings.seed);
    PairedComparison {
        queries: diffs.len(),
        baseline_mean: mean(baseline),
        candidate_mean: mean(candidate),
        difference: mean(&diffs),
        ci: percentile_interval(resampled),
        record: wins_ties_losses(baseline, candidate),
        randomisation_p,
        t_test,
        randomisation_p_holm: randomisation_p,
        t_test_p_holm: t_test.map(|t| t.p),
    }
}

/// Holm-adjust a family of comparisons, each test on its own: the randomisation
/// p-values together, the t-test p-values together (an undefined t-test counts in the
/// family as p = 1, and its adjusted value stays undefined).
pub fn adjust(family: &mut [PairedComparison]) {
    let rand = holm(&family.iter().map(|c| c.randomisation_p).collect::<Vec<_>>());
    let t = holm(
        &family
            .iter()
            .map(|c| c.t_test.map_or(1.0, |t| t.p))
            .collect::<Vec<_>>(),
    );
    for ((c, r), t) in family.iter_mut().zip(rand).zip(t) {
        c.randomisation_p_holm = r;
        c.t_test_p_holm = c.t_test.map(|_| t);
    }
}

/// The pairs (baseline index, candidate index) of a comparison of `runs` runs: every
/// other run against `baseline`, else every pair (i, j) with i < j.
pub fn pairs(runs: usize, baseline: Option<usize>) -> Vec<(usize, usize)> {
    match baseline {
        Some(b) => (0..runs).filter(|&c| c != b).map(|c| (b, c)).collect(),
        None => (0..runs)
            .flat_map(|i| (i + 1..runs).map(move |j| (i, j)))
            .collect(),
    }
}

/// McNemar's exact test of two runs' paired pass/fail outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    pub both_pass: usize,
    /// A passes, B fails (b).
    pub only_a: usize,
    /// B passes, A fails (c).
    pub only_b: usize,
    pub both_fail: usize,
    pub p: f64,
}

/// McNemar's exact (binomial) test on paired outcomes `(a passed, b passed)`.
pub fn mcnemar_exact(outcomes: &[(bool, bool)]) -> McNemar {
    let count = |want: (bool, bool)| outcomes.iter().filter(|o| **o == want).count();
    let (only_a, only_b) = (count((true, false)), count((false, true)));
    McNemar {
        both_pass: count((true, true)),
        only_a,
        only_b,
        both_fail: count((false, false)),
        p: binomial_two_sided_half(only_a as u64, (only_a + only_b) as u64),
    }
}

#[cfg(test)]
mod tests;
