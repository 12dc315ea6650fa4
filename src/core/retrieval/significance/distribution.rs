//! The two tail probabilities the paired tests need, computed here rather than taken
//! from a statistics crate so the domain core keeps its dependencies to serde:
//!
//! - Student's t, two-sided: P(|T_df| >= |t|) = I_x(df/2, 1/2) with x = df / (df + t^2),
//!   I the regularized incomplete beta function, evaluated by its continued fraction
//!   (modified Lentz) on the side of the symmetry relation I_x(a, b) = 1 - I_{1-x}(b, a)
//!   where the fraction converges fast (x < (a + 1) / (a + b + 2)). Both x and 1 - x are
//!   formed from df and t^2 directly, so neither loses digits to a subtraction.
//! - Binomial(n, 1/2), two-sided: min(1, 2 P(X <= min(k, n - k))), which is what an
//!   exact two-sided binomial test gives for p = 1/2 (the distribution is symmetric).

/// ln Gamma(x) for x > 0 (Lanczos, g = 7, nine coefficients: about 15 significant
/// digits of Gamma; enough, since the tails below combine these by exp of a sum).
pub fn ln_gamma(x: f64) -> f64 {
    const G: f64 = 7.0;
    const COEF: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Gamma(x) Gamma(1 - x) = pi / sin(pi x).
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let t = x + G + 0.5;
    let sum = COEF[1..]
        .iter()
        .enumerate()
        .fold(COEF[0], |acc, (i, c)| acc + c / (x + (i + 1) as f64));
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// The continued fraction of the incomplete beta function (modified Lentz), valid and
/// fast for x < (a + 1) / (a + b + 2).
fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    const MAX_TERMS: usize = 100_000;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_TERMS {
        let m = m as f64;
        let m2 = 2.0 * m;
        let even = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + even * d);
        c = guard(1.0 + even / c);
        h *= d * c;
        let odd = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + odd * d);
        c = guard(1.0 + odd / c);
        let step = d * c;
        h *= step;
        if (step - 1.0).abs() <= f64::EPSILON {
            break;
        }
    }
    h
}

/// I_x(a, b) given x and y = 1 - x computed separately by the caller.
fn regularized_beta_xy(x: f64, y: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if y <= 0.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * y.ln();
    if x < (a + 1.0) / (a + b + 2.0) {
        ln_front.exp() * beta_fraction(x, a, b) / a
    } else {
        1.0 - ln_front.exp() * beta_fraction(y, b, a) / b
    }
}

/// The regularized incomplete beta function I_x(a, b) for a, b > 0 and x in [0, 1].
pub fn regularized_beta(x: f64, a: f64, b: f64) -> f64 {
    regularized_beta_xy(x, 1.0 - x, a, b)
}

/// Two-sided tail of Student's t with `df` degrees of freedom: P(|T| >= |t|).
pub fn t_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    if t.is_infinite() {
        return 0.0;
    }
    let t2 = t * t;
    let x = df / (df + t2);
    let y = t2 / (df + t2);
    regularized_beta_xy(x, y, df / 2.0, 0.5).clamp(0.0, 1.0)
}

/// Two-sided exact binomial test of k successes in n trials against p = 1/2:
/// min(1, 2 P(X <= min(k, n - k))); 1 when n = 0.
///
/// The tail is summed from its largest term, C(n, m) 2^-n with m = min(k, n - k),
/// downward by the ratio C(n, i - 1) / C(n, i) = i / (n - i + 1), so no term underflows
/// before it stops mattering.
pub fn binomial_two_sided_half(k: u64, n: u64) -> f64 {
    if n == 0 {
        return 1.0;
    }
    let m = k.min(n - k);
    let (nf, mf) = (n as f64, m as f64);
    let ln_top = ln_gamma(nf + 1.0)
        - ln_gamma(mf + 1.0)
        - ln_gamma(nf - mf + 1.0)
        - nf * std::f64::consts::LN_2;
    let mut term = 1.0;
    let mut sum = 1.0;
    for i in (1..=m).rev() {
        term *= i as f64 / (nf - i as f64 + 1.0);
        sum += term;
        if term < sum * f64::EPSILON * 1e-3 {
            break;
        }
    }
    (2.0 * (ln_top.exp() * sum)).min(1.0)
}
