//! The judge's pass rate corrected by the humans who labelled some of the same answers
//! (pure: labels in, estimates out).
//!
//! A judge with 85% sensitivity and 75% specificity reports a true 60% pass rate as
//! 61% (0.85 x 0.60 + 0.25 x 0.40), and a true 30% as 43%. A blind study's final
//! labels over a sample of the judged answers say how the judge errs, and two
//! estimators use them:
//!
//! - **Prediction-powered inference** (Angelopoulos et al. 2023; PPI++ 2024), as
//!   `ppi_py`'s `ppi_mean_pointestimate` and `ppi_mean_ci` define it. With n labelled
//!   answers (human label Y, judge label f) and N judged-only answers (f~):
//!   `theta = lam * mean(f~) + mean(Y - lam * f)`; the interval is
//!   `theta +- z_{1-alpha/2} sqrt(sd(lam f~)^2 / N + sd(Y - lam f)^2 / n)` (standard
//!   deviations with divisor N and n). Classic PPI takes lam = 1; PPI++ tunes it: with
//!   p0 = theta(1), `lam = cov(Y, f) / ((1 + n/N) var(f, f~))`, the covariance over the
//!   labelled answers with divisor n, the variance over all n + N judge labels with
//!   divisor n + N - 1, clipped to [0, 1] (0 when the judge's labels do not vary).
//! - **Rogan-Gladen**: sens = P(f = 1 | Y = 1) and spec = P(f = 0 | Y = 0) on the
//!   labelled answers, p the judge's pass rate over all n + N answers;
//!   `theta = (p + spec - 1) / (sens + spec - 1)`, clipped to [0, 1]; undefined when
//!   sens + spec <= 1. Its interval by the delta method over p, sens and spec taken as
//!   independent binomial proportions:
//!   `Var = (Var p + theta^2 Var sens + (1 - theta)^2 Var spec) / (sens + spec - 1)^2`,
//!   each `Var = q(1 - q)/m`; the interval is clipped to [0, 1].
//! - Sensitivity and specificity carry Wilson score intervals.
//!
//! Fewer than [`FEW_HUMAN_LABELS`] human labels are too few to trust a correction:
//! the estimates are still given, and the report says so.

use serde::{Deserialize, Serialize};

use crate::core::significance::normal_quantile;

/// Below this many human labels a correction is reported with a warning.
pub const FEW_HUMAN_LABELS: usize = 30;

/// An estimate with its two-sided interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub estimate: f64,
    pub low: f64,
    pub high: f64,
}

/// A PPI estimate: the interval and the lam it used.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ppi {
    #[serde(flatten)]
    pub interval: Interval,
    pub lam: f64,
}

/// Everything a corrected pass rate reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Corrected {
    /// Answers with a human final label (and a judge label).
    pub n_human: usize,
    /// Answers with a judge label only.
    pub n_judge_only: usize,
    /// The judge's raw pass rate over all its labels.
    pub raw_judge: f64,
    /// The humans' pass rate over the labelled answers.
    pub human: f64,
    /// P(judge pass | human pass), Wilson interval (None: no human pass).
    pub sensitivity: Option<Interval>,
    /// P(judge fail | human fail), Wilson interval (None: no human fail).
    pub specificity: Option<Interval>,
    /// Classic PPI (lam = 1).
    pub ppi: Option<Ppi>,
    /// PPI++ (lam tuned).
    pub ppi_plus: Option<Ppi>,
    /// Rogan-Gladen (None: sens + spec <= 1, or either undefined).
    pub rogan_gladen: Option<Interval>,
    /// The interval level's alpha.
    pub alpha: f64,
    /// Fewer than [`FEW_HUMAN_LABELS`] human labels: the correction is not to be trusted.
    pub too_few: bool,
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// Standard deviation with divisor m (numpy's default).
fn sd_pop(v: &[f64]) -> f64 {
    let m = mean(v);
    (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
}

/// The PPI point estimate at `lam`.
pub fn ppi_point(y: &[f64], f: &[f64], f_unlabelled: &[f64], lam: f64) -> f64 {
    let rect: Vec<f64> = y.iter().zip(f).map(|(y, f)| y - lam * f).collect();
    lam * mean(f_unlabelled) + mean(&rect)
}

/// PPI++'s tuned lam (see the module's rule).
pub fn ppi_lambda(y: &[f64], f: &[f64], f_unlabelled: &[f64]) -> f64 {
    let (n, big_n) = (y.len() as f64, f_unlabelled.len() as f64);
    let p0 = ppi_point(y, f, f_unlabelled, 1.0);
    let g: Vec<f64> = y.iter().map(|v| v - p0).collect();
    let gh: Vec<f64> = f.iter().map(|v| v - p0).collect();
    let (mg, mgh) = (mean(&g), mean(&gh));
    let cov = g
        .iter()
        .zip(&gh)
        .map(|(a, b)| (a - mg) * (b - mgh))
        .sum::<f64>()
        / n;
    let all: Vec<f64> = f.iter().chain(f_unlabelled).map(|v| v - p0).collect();
    let m = mean(&all);
    let var = all.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (all.len() as f64 - 1.0);
    if var <= 0.0 || !var.is_finite() {
        return 0.0;
    }
    (cov / ((1.0 + n / big_n) * var)).clamp(0.0, 1.0)
}

/// The PPI estimate and its (1 - alpha) interval at `lam` (None: no labelled or no
/// unlabelled answers, or lengths that differ).
pub fn ppi_mean(y: &[f64], f: &[f64], f_unlabelled: &[f64], lam: f64, alpha: f64) -> Option<Ppi> {
    if y.is_empty() || f_unlabelled.is_empty() || y.len() != f.len() {
        return None;
    }
    let theta = ppi_point(y, f, f_unlabelled, lam);
    let imputed: Vec<f64> = f_unlabelled.iter().map(|v| lam * v).collect();
    let rect: Vec<f64> = y.iter().zip(f).map(|(y, f)| y - lam * f).collect();
    let se = (sd_pop(&imputed).powi(2) / f_unlabelled.len() as f64
        + sd_pop(&rect).powi(2) / y.len() as f64)
        .sqrt();
    let z = normal_quantile(1.0 - alpha / 2.0);
    Some(Ppi {
        interval: Interval {
            estimate: theta,
            low: theta - z * se,
            high: theta + z * se,
        },
        lam,
    })
}

/// The Wilson score interval of `k` successes in `m` trials (None: no trials).
pub fn wilson(k: usize, m: usize, alpha: f64) -> Option<Interval> {
    if m == 0 {
        return None;
    }
    let (k, m) = (k as f64, m as f64);
    let z = normal_quantile(1.0 - alpha / 2.0);
    let p = k / m;
    let denom = 1.0 + z * z / m;
    let centre = (p + z * z / (2.0 * m)) / denom;
    let half = z * (p * (1.0 - p) / m + z * z / (4.0 * m * m)).sqrt() / denom;
    Some(Interval {
        estimate: p,
        low: centre - half,
        high: centre + half,
    })
}

/// The Rogan-Gladen corrected rate with its delta-method interval: `p` the judge's
/// rate over `n_all` answers, `sens` over `n_pos` human passes, `spec` over `n_neg`
/// human fails (None: sens + spec <= 1).
pub fn rogan_gladen(
    (p, n_all): (f64, usize),
    (sens, n_pos): (f64, usize),
    (spec, n_neg): (f64, usize),
    alpha: f64,
) -> Option<Interval> {
    let j = sens + spec - 1.0;
    if j <= 0.0 || n_all == 0 || n_pos == 0 || n_neg == 0 {
        return None;
    }
    let theta = (p + spec - 1.0) / j;
    let var_of = |q: f64, m: usize| q * (1.0 - q) / m as f64;
    let var = (var_of(p, n_all)
        + theta * theta * var_of(sens, n_pos)
        + (1.0 - theta).powi(2) * var_of(spec, n_neg))
        / (j * j);
    let half = normal_quantile(1.0 - alpha / 2.0) * var.sqrt();
    let clip = |x: f64| x.clamp(0.0, 1.0);
    Some(Interval {
        estimate: clip(theta),
        low: clip(theta - half),
        high: clip(theta + half),
    })
}

/// The corrected pass rate from `labelled` (human final label, judge label) pairs and
/// the judge's labels of the other answers.
pub fn correct(labelled: &[(bool, bool)], judge_only: &[bool], alpha: f64) -> Option<Corrected> {
    if labelled.is_empty() {
        return None;
    }
    let to_f = |b: bool| f64::from(u8::from(b));
    let y: Vec<f64> = labelled.iter().map(|(h, _)| to_f(*h)).collect();
    let f: Vec<f64> = labelled.iter().map(|(_, j)| to_f(*j)).collect();
    let fu: Vec<f64> = judge_only.iter().map(|j| to_f(*j)).collect();
    let n_pos = labelled.iter().filter(|(h, _)| *h).count();
    let n_neg = labelled.len() - n_pos;
    let tp = labelled.iter().filter(|(h, j)| *h && *j).count();
    let tn = labelled.iter().filter(|(h, j)| !*h && !*j).count();
    let sensitivity = wilson(tp, n_pos, alpha);
    let specificity = wilson(tn, n_neg, alpha);
    let n_all = labelled.len() + judge_only.len();
    let raw_judge = (f.iter().sum::<f64>() + fu.iter().sum::<f64>()) / n_all as f64;
    let rogan_gladen = match (sensitivity, specificity) {
        (Some(se), Some(sp)) => rogan_gladen(
            (raw_judge, n_all),
            (se.estimate, n_pos),
            (sp.estimate, n_neg),
            alpha,
        ),
        _ => None,
    };
    Some(Corrected {
        n_human: labelled.len(),
        n_judge_only: judge_only.len(),
        raw_judge,
        human: mean(&y),
        sensitivity,
        specificity,
        ppi: ppi_mean(&y, &f, &fu, 1.0, alpha),
        ppi_plus: (!fu.is_empty())
            .then(|| ppi_mean(&y, &f, &fu, ppi_lambda(&y, &f, &fu), alpha))
            .flatten(),
        rogan_gladen,
        alpha,
        too_few: labelled.len() < FEW_HUMAN_LABELS,
    })
}

#[cfg(test)]
mod tests;
