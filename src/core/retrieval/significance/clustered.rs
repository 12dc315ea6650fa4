//! Intervals that hold when questions cluster, what a question set can detect, and the
//! non-inferiority gate a CI job calls (pure: values and clusters in, statistics out).
//!
//! Questions drawn from one guidance document are not independent: a pipeline that
//! misreads a document misses all of its questions together, so a mean over n
//! questions carries less information than n independent draws. The rules:
//!
//! - **Clustered standard error of a mean** (statsmodels' `OLS(y, ones).fit(
//!   cov_type="cluster", cov_kwds={"groups": g}).bse[0]`, CR1): with n values in G
//!   clusters and e_i = y_i - mean, `V = G/(G-1) * sum_g (sum_{i in g} e_i)^2 / n^2`
//!   (statsmodels' small-sample factor; with one regressor its (n-1)/(n-k) part is 1)
//!   and SE = sqrt(V). Undefined with fewer than two clusters.
//! - **Naive standard error**: `sqrt(sum_i e_i^2) / n`, which on 0/1 values is
//!   `sqrt(p(1-p)/n)`. The **design effect** is the clustered variance over the naive
//!   one (1 when clusters carry no shared error; larger when they do).
//! - A paired difference is the mean of the per-question differences d_i = candidate -
//!   baseline, with the same two standard errors of that mean.
//! - **Intervals** use the normal quantile: mean +- z_{1 - alpha/2} SE (clustered).
//! - **Minimum detectable effect** at 80% power, two-sided 5%:
//!   `mde_80 = (1.959964 + 0.841621) * SE_diff`.
//! - **Non-inferiority** of a candidate B against a baseline A with margin D >= 0: pass
//!   when the lower end of the (1 - alpha) two-sided interval of mean(B - A) lies above
//!   -D. Its one-sided p is `1 - Phi((mean + D) / SE)`.

use serde::{Deserialize, Serialize};

use super::distribution::ln_gamma;

/// z_{0.975}, as the rule for the minimum detectable effect writes it.
pub const Z_975: f64 = 1.959964;
/// z_{0.80}, as the rule for the minimum detectable effect writes it.
pub const Z_80: f64 = 0.841621;

/// A mean with its naive and clustered standard errors.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredMean {
    /// Values (questions) the mean is over.
    pub n: usize,
    pub mean: f64,
    /// `sqrt(sum e_i^2) / n`: the standard error if every question were independent.
    pub se_naive: f64,
    /// CR1 cluster-robust standard error (None: fewer than two clusters).
    pub se_clustered: Option<f64>,
    /// Distinct clusters among the values.
    pub clusters: usize,
    /// Clustered variance / naive variance (None when either is undefined or the naive
    /// variance is 0).
    pub design_effect: Option<f64>,
}

impl ClusteredMean {
    /// The standard error intervals use: the clustered one, else the naive one (one
    /// cluster, or one value per cluster where the two agree up to G/(G-1)).
    pub fn se(&self) -> f64 {
        self.se_clustered.unwrap_or(self.se_naive)
    }

    /// The two-sided (1 - alpha) normal interval of the mean.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let half = normal_quantile(1.0 - alpha / 2.0) * self.se();
        (self.mean - half, self.mean + half)
    }

    /// The minimum difference this set detects at 80% power, two-sided 5%.
    pub fn mde_80(&self) -> f64 {
        mde_80(self.se())
    }
}

/// A paired difference's clustered summary, as a comparison row carries it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClusteredInterval {
    /// `sqrt(sum e_i^2) / n` of the per-question differences.
    pub se_naive: f64,
    /// CR1 cluster-robust standard error of the mean difference (None: one cluster).
    pub se_clustered: Option<f64>,
    /// Distinct clusters.
    pub clusters: usize,
    /// Clustered variance / naive variance.
    pub design_effect: Option<f64>,
    /// The normal 95% interval of the mean difference with the clustered SE.
    pub ci: (f64, f64),
    /// The smallest difference this question set detects at 80% power, two-sided 5%.
    pub mde_80: f64,
}

impl From<ClusteredMean> for ClusteredInterval {
    fn from(m: ClusteredMean) -> Self {
        Self {
            se_naive: m.se_naive,
            se_clustered: m.se_clustered,
            clusters: m.clusters,
            design_effect: m.design_effect,
            ci: m.interval(0.05),
            mde_80: m.mde_80(),
        }
    }
}

/// Cluster numbers (0, 1, ... in order of first appearance) of the cluster names given
/// per value, so that equal names share a number.
pub fn cluster_numbers<S: AsRef<str>>(names: &[S]) -> Vec<usize> {
    let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    names
        .iter()
        .map(|n| {
            let next = seen.len();
            *seen.entry(n.as_ref()).or_insert(next)
        })
        .collect()
}

/// The mean of `values` with its naive and clustered standard errors; `clusters[i]`
/// is the cluster number of value i (see [`cluster_numbers`]). None when there are no
/// values or the two slices differ in length.
pub fn clustered_mean(values: &[f64], clusters: &[usize]) -> Option<ClusteredMean> {
    if values.is_empty() || values.len() != clusters.len() {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    let groups = clusters.iter().max().map_or(0, |m| m + 1);
    let mut sums = vec![0.0; groups];
    let mut present = vec![false; groups];
    let mut squares = 0.0;
    for (&y, &g) in values.iter().zip(clusters) {
        let e = y - mean;
        sums[g] += e;
        present[g] = true;
        squares += e * e;
    }
    let g = present.iter().filter(|p| **p).count();
    let naive_var = squares / (n * n);
    let clustered_var = (g >= 2).then(|| {
        let g = g as f64;
        g / (g - 1.0) * sums.iter().map(|s| s * s).sum::<f64>() / (n * n)
    });
    Some(ClusteredMean {
        n: values.len(),
        mean,
        se_naive: naive_var.sqrt(),
        se_clustered: clustered_var.map(f64::sqrt),
        clusters: g,
        design_effect: clustered_var
            .filter(|_| naive_var > 0.0)
            .map(|v| v / naive_var),
    })
}

/// The mean of the paired differences `candidate - baseline` (the same questions in
/// the same order) with its standard errors.
pub fn clustered_difference(
    baseline: &[f64],
    candidate: &[f64],
    clusters: &[usize],
) -> Option<ClusteredMean> {
    if baseline.len() != candidate.len() {
        return None;
    }
    let d: Vec<f64> = baseline.iter().zip(candidate).map(|(b, c)| c - b).collect();
    clustered_mean(&d, clusters)
}

/// The minimum detectable effect at 80% power, two-sided 5%, of a difference whose
/// standard error is `se`.
pub fn mde_80(se: f64) -> f64 {
    (Z_975 + Z_80) * se
}

/// What the gate decides, with everything it decided from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct GateVerdict {
    /// The mean difference candidate - baseline and its standard errors.
    pub difference: ClusteredMean,
    /// The non-inferiority margin D (>= 0).
    pub margin: f64,
    /// The interval is two-sided at level 1 - alpha.
    pub alpha: f64,
    /// The (1 - alpha) interval of the difference.
    pub lower: f64,
    pub upper: f64,
    /// One-sided p of the null "B is worse than A by D or more".
    pub p_one_sided: f64,
    pub mde_80: f64,
    /// lower > -margin.
    pub pass: bool,
}

/// Why the gate cannot decide.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GateError {
    #[error("the margin must be a finite number >= 0 (got {0})")]
    Margin(f64),
    #[error("alpha must lie strictly between 0 and 1 (got {0})")]
    Alpha(f64),
    #[error("no questions to compare")]
    Empty,
    #[error("{0} scores against {1} cluster labels")]
    Lengths(usize, usize),
}

/// The paired, clustered non-inferiority test of `candidate` against `baseline`.
pub fn non_inferiority(
    baseline: &[f64],
    candidate: &[f64],
    clusters: &[usize],
    margin: f64,
    alpha: f64,
) -> Result<GateVerdict, GateError> {
    if !margin.is_finite() || margin < 0.0 {
        return Err(GateError::Margin(margin));
    }
    if !(alpha > 0.0 && alpha < 1.0) {
        return Err(GateError::Alpha(alpha));
    }
    if baseline.len() != candidate.len() || baseline.len() != clusters.len() {
        return Err(GateError::Lengths(baseline.len(), clusters.len()));
    }
    let difference = clustered_difference(baseline, candidate, clusters).ok_or(GateError::Empty)?;
    let (lower, upper) = difference.interval(alpha);
    let se = difference.se();
    let p_one_sided = if se > 0.0 {
        normal_upper_tail((difference.mean + margin) / se)
    } else if difference.mean + margin > 0.0 {
        0.0
    } else {
        1.0
    };
    Ok(GateVerdict {
        difference,
        margin,
        alpha,
        lower,
        upper,
        p_one_sided,
        mde_80: mde_80(se),
        pass: lower > -margin,
    })
}

/// The standard normal quantile (inverse CDF) of `p` in (0, 1): Wichura's algorithm
/// AS 241 (PPND16), accurate to about 1e-16. Infinite at 0 and 1, NaN outside.
pub fn normal_quantile(p: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) {
        return f64::NAN;
    }
    if p == 0.0 {
        return f64::NEG_INFINITY;
    }
    if p == 1.0 {
        return f64::INFINITY;
    }
    let q = p - 0.5;
    if q.abs() <= 0.425 {
        let r = 0.180_625 - q * q;
        return q * poly(&A, r) / poly(&B, r);
    }
    let r = if q < 0.0 { p } else { 1.0 - p };
    let r = (-r.ln()).sqrt();
    let x = if r <= 5.0 {
        let r = r - 1.6;
        poly(&C, r) / poly(&D, r)
    } else {
        let r = r - 5.0;
        poly(&E, r) / poly(&F, r)
    };
    if q < 0.0 { -x } else { x }
}

/// P(Z > z) for a standard normal Z: `Q(1/2, z^2/2) / 2` for z >= 0 (the regularised
/// upper incomplete gamma function), by symmetry below 0.
pub fn normal_upper_tail(z: f64) -> f64 {
    if z.is_nan() {
        return f64::NAN;
    }
    let half = 0.5 * upper_gamma_q(0.5, z * z / 2.0);
    if z >= 0.0 { half } else { 1.0 - half }
}

/// The regularised upper incomplete gamma function Q(a, x): its series below a + 1,
/// Lentz's continued fraction above (as Numerical Recipes' `gammq`).
fn upper_gamma_q(a: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 1.0;
    }
    let front = (-x + a * x.ln() - ln_gamma(a)).exp();
    if x < a + 1.0 {
        let (mut term, mut sum, mut ap) = (1.0 / a, 1.0 / a, a);
        for _ in 0..1000 {
            ap += 1.0;
            term *= x / ap;
            sum += term;
            if term.abs() < sum.abs() * 1e-17 {
                break;
            }
        }
        return 1.0 - sum * front;
    }
    let tiny = 1e-300;
    let mut b = x + 1.0 - a;
    let mut c = 1.0 / tiny;
    let mut d = 1.0 / b;
    let mut h = d;
    for i in 1..1000 {
        let an = -(i as f64) * (i as f64 - a);
        b += 2.0;
        d = an * d + b;
        if d.abs() < tiny {
            d = tiny;
        }
        c = b + an / c;
        if c.abs() < tiny {
            c = tiny;
        }
        d = 1.0 / d;
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() < 1e-17 {
            break;
        }
    }
    front * h
}

/// `coefficients[0] + coefficients[1] x + ...` by Horner's rule.
fn poly(coefficients: &[f64; 8], x: f64) -> f64 {
    coefficients.iter().rev().fold(0.0, |acc, c| acc * x + c)
}

// AS 241's coefficients, lowest power first.
const A: [f64; 8] = [
    3.387_132_872_796_366_5,
    133.141_667_891_784_38,
    1_971.590_950_306_551_3,
    13_731.693_765_509_46,
    45_921.953_931_549_87,
    67_265.770_927_008_7,
    33_430.575_583_588_13,
    2_509.080_928_730_122_7,
];
const B: [f64; 8] = [
    1.0,
    42.313_330_701_600_91,
    687.187_007_492_057_9,
    5_394.196_021_424_751,
    21_213.794_301_586_597,
    39_307.895_800_092_71,
    28_729.085_735_721_943,
    5_226.495_278_852_545,
];
const C: [f64; 8] = [
    1.423_437_110_749_683_5,
    4.630_337_846_156_546,
    5.769_497_221_460_691,
    3.647_848_324_763_204_5,
    1.270_458_252_452_368_4,
    0.241_780_725_177_450_6,
    0.022_723_844_989_269_184,
    7.745_450_142_783_414e-4,
];
const D: [f64; 8] = [
    1.0,
    2.053_191_626_637_759,
    1.676_384_830_183_803_8,
    0.689_767_334_985_1,
    0.148_103_976_427_480_08,
    0.015_198_666_563_616_457,
    5.475_938_084_995_345e-4,
    1.050_750_071_644_416_9e-9,
];
const E: [f64; 8] = [
    6.657_904_643_501_103,
    5.463_784_911_164_114,
    1.784_826_539_917_291_3,
    0.296_560_571_828_504_9,
    0.026_532_189_526_576_124,
    0.001_242_660_947_388_078_4,
    2.711_555_568_743_487_6e-5,
    2.010_334_399_292_288_1e-7,
];
const F: [f64; 8] = [
    1.0,
    0.599_832_206_555_888,
    0.136_929_880_922_735_8,
    0.014_875_361_290_850_615,
    7.868_691_311_456_133e-4,
    1.846_318_317_510_054_8e-5,
    1.421_511_758_316_446e-7,
    2.044_263_103_389_939_7e-15,
];

#[cfg(test)]
mod tests;
