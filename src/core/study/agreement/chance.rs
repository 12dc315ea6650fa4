//! Gwet's AC1 and the Brennan-Prediger coefficient: chance-corrected agreement that
//! stays meaningful when one label dominates. Kappa's chance agreement grows with the
//! skew of the labels, so at pass rates of 0.9 and more two reviewers who agree on
//! nearly every item can get a kappa near zero; AC1's chance agreement shrinks with
//! the skew instead, and Brennan-Prediger's is fixed at 1/q.
//!
//! Any number of raters, labels missing allowed; unweighted (nominal) labels. A unit
//! is one (item, criterion); r_ik counts its labels equal to label k, r_i = sum_k r_ik,
//! and only units with at least one label take part (n of them; n' have two or more).
//! - Observed agreement pa = (1/n') sum over units with r_i >= 2 of
//!   sum_k r_ik (r_ik - 1) / (r_i (r_i - 1)).
//! - AC1: pi_k = (1/n) sum_i r_ik / r_i over all n units; pe = sum_k pi_k (1 - pi_k) /
//!   (q - 1). Brennan-Prediger: pe = 1/q. q is the number of labels on the scale (the
//!   rubric's), not the number seen.
//! - Coefficient = (pa - pe) / (1 - pe).
//! - Standard error (Gwet's linearisation, no finite-population correction): per unit
//!   c_i = (n / n') (pa_i - pe [r_i >= 2]) / (1 - pe), pa_i = 0 when r_i = 1; for AC1
//!   c*_i = c_i - 2 (1 - coef) (pe_i - pe) / (1 - pe) with pe_i = (1/(q - 1)) sum_k
//!   (r_ik / r_i)(1 - pi_k); for Brennan-Prediger c*_i = c_i. var = sum_i (c*_i -
//!   coef)^2 / (n (n - 1)).
//! - 95% CI: coef -+ t(0.975, n - 1) se, the upper end capped at 1.
//!
//! These are the formulas of Gwet's irrCAC (R package and Python port); a test
//! checks every value, the standard error and the interval against irrCAC 0.4.4 on
//! Fleiss' diagnoses, the anxiety ratings and the PubMedQA raters.

use serde::Serialize;

use crate::core::significance::t_two_sided;

/// Which chance agreement corrects the observed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chance {
    /// Gwet's AC1: chance agreement from the labels' shares, small when they are skewed.
    Ac1,
    /// Brennan and Prediger: chance agreement 1/q, whatever the shares.
    BrennanPrediger,
}

/// A chance-corrected coefficient with its parts, its standard error and its 95%
/// Student t interval (analytic, unlike the bootstrap intervals of kappa and alpha).
/// Every number is undefined (None) without a unit labelled twice, with fewer than
/// two labels on the scale, or, for the standard error and interval, with fewer than
/// two units.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChanceCorrected {
    pub value: Option<f64>,
    /// Observed agreement.
    pub pa: Option<f64>,
    /// Chance agreement.
    pub pe: Option<f64>,
    pub se: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
    /// Units with at least one label (n).
    pub units: usize,
}

impl ChanceCorrected {
    /// The value and interval in the shape every agreement table prints.
    pub fn as_estimate(&self) -> super::Estimate {
        super::Estimate {
            value: self.value,
            lo: self.lo,
            hi: self.hi,
            undefined_resamples: 0,
        }
    }

    fn undefined(units: usize) -> Self {
        Self {
            value: None,
            pa: None,
            pe: None,
            se: None,
            lo: None,
            hi: None,
            units,
        }
    }
}

/// The coefficient over `units`, each the count of each of the `q` labels on it.
pub fn chance_corrected(units: &[Vec<u32>], q: usize, kind: Chance) -> ChanceCorrected {
    let units: Vec<&Vec<u32>> = units.iter().filter(|u| total(u) > 0).collect();
    let n = units.len();
    let paired: Vec<f64> = units
        .iter()
        .filter(|u| total(u) >= 2)
        .map(|u| unit_agreement(u))
        .collect();
    let n2 = paired.len();
    if n2 == 0 || q < 2 {
        return ChanceCorrected::undefined(n);
    }
    let pa = paired.iter().sum::<f64>() / n2 as f64;
    let mut pi = vec![0.0; q];
    for u in &units {
        let r = total(u) as f64;
        for (k, &c) in u.iter().enumerate().take(q) {
            pi[k] += f64::from(c) / r / n as f64;
        }
    }
    let pe = match kind {
        Chance::Ac1 => pi.iter().map(|p| p * (1.0 - p)).sum::<f64>() / (q - 1) as f64,
        Chance::BrennanPrediger => 1.0 / q as f64,
    };
    if pe >= 1.0 {
        return ChanceCorrected::undefined(n);
    }
    let coef = (pa - pe) / (1.0 - pe);
    let mut out = ChanceCorrected {
        value: Some(coef),
        pa: Some(pa),
        pe: Some(pe),
        ..ChanceCorrected::undefined(n)
    };
    if n < 2 {
        return out;
    }
    let scale = n as f64 / n2 as f64;
    let spread: f64 = units
        .iter()
        .map(|u| {
            let r = total(u);
            let c = if r >= 2 {
                scale * (unit_agreement(u) - pe) / (1.0 - pe)
            } else {
                0.0
            };
            let c_star = match kind {
                Chance::Ac1 => {
                    let pe_i = u
                        .iter()
                        .zip(&pi)
                        .map(|(&c, p)| f64::from(c) / f64::from(r) * (1.0 - p))
                        .sum::<f64>()
                        / (q - 1) as f64;
                    c - 2.0 * (1.0 - coef) * (pe_i - pe) / (1.0 - pe)
                }
                Chance::BrennanPrediger => c,
            };
            (c_star - coef).powi(2)
        })
        .sum();
    let se = (spread / (n as f64 * (n - 1) as f64)).sqrt();
    let t = t_quantile_975((n - 1) as f64);
    out.se = Some(se);
    out.lo = Some(coef - t * se);
    out.hi = Some((coef + t * se).min(1.0));
    out
}

fn total(u: &[u32]) -> u32 {
    u.iter().sum()
}

/// A unit's observed agreement: the share of its ordered pairs of labels that agree.
fn unit_agreement(u: &[u32]) -> f64 {
    let r = f64::from(total(u));
    u.iter()
        .map(|&c| f64::from(c) * (f64::from(c) - 1.0))
        .sum::<f64>()
        / (r * (r - 1.0))
}

/// The 97.5th percentile of Student's t with `df` degrees of freedom: the t at which
/// the two-sided tail is 0.05, by bisection on the tail (monotone in t).
pub fn t_quantile_975(df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while t_two_sided(hi, df) > 0.05 {
        hi *= 2.0;
    }
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if t_two_sided(mid, df) > 0.05 {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-15 * hi.max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// scipy.stats.t.ppf(0.975, df), as the irrCAC reference lists them.
    #[test]
    fn the_t_quantile_is_scipys() {
        for (df, want) in [
            (18.0, 2.10092204024096),
            (19.0, 2.093024054408263),
            (29.0, 2.045229642132703),
            (999.0, 1.9623414611334487),
        ] {
            let got = t_quantile_975(df);
            assert!((got - want).abs() < 1e-10, "df {df}: {got} vs {want}");
        }
    }

    /// Two raters, 10 items, 9 agree on "pass", 1 disagrees: kappa would be 0 or
    /// below, AC1 and Brennan-Prediger are high. By hand: pa = 0.9; pi = (0.95, 0.05),
    /// AC1 pe = 2 * 0.95 * 0.05 = 0.095, AC1 = 0.805 / 0.905; BP pe = 0.5, BP = 0.8.
    #[test]
    fn skewed_labels_keep_a_high_coefficient() {
        let mut units = vec![vec![2, 0]; 9];
        units.push(vec![1, 1]);
        let ac1 = chance_corrected(&units, 2, Chance::Ac1);
        assert!((ac1.pa.expect("pa") - 0.9).abs() < 1e-12);
        assert!((ac1.pe.expect("pe") - 0.095).abs() < 1e-12);
        assert!((ac1.value.expect("ac1") - 0.805 / 0.905).abs() < 1e-12);
        let bp = chance_corrected(&units, 2, Chance::BrennanPrediger);
        assert!((bp.value.expect("bp") - 0.8).abs() < 1e-12);
        assert!(bp.lo.expect("lo") < 0.8 && bp.hi.expect("hi") <= 1.0);
        // No unit labelled twice: undefined.
        let single = vec![vec![1, 0], vec![0, 1], vec![0, 0]];
        let none = chance_corrected(&single, 2, Chance::Ac1);
        assert_eq!((none.value, none.units), (None, 2));
    }
}
