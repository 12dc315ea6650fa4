//! Frugality of RAG configurations against the same model without retrieval:
//! whether an accuracy gain is worth its latency, computed as follows:
//!
//! ```text
//! dA = accuracy(RAG) - accuracy(LLM only)     dC = latency(RAG) - latency(LLM only)
//! A = sign(dA) (exp(|dA| / tA) - 1)           C = exp(dC / tC) - 1
//! F = tanh(A - C)  in (-1, 1)
//! ```
//!
//! - dA and dC of one configuration are paired: both runs are measured over the
//!   questions both answered (and, for judged answers, both had judged), never over
//!   two different question sets.
//! - tA, tC: the **sample** standard deviations (divide by n - 1) of dA and dC across
//!   the compared configurations, unless given. With fewer than
//!   two configurations the sample sd is undefined, and with every dA (or dC) equal it
//!   is 0: the temperature is then undefined, and so are A (or C) and F, reported as
//!   such (never as 0) until a temperature is given.
//! - Positive F: the accuracy gain is worth its cost. F is undefined when A or C is
//!   not finite (exp overflow on both sides).

use std::collections::BTreeMap;

use serde::Serialize;

/// One run's results on one question: judge labels (or MCQA grades) and latency.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tally {
    /// Labels that passed (MCQA: correct answers).
    pub pass: usize,
    /// Labels counted (MCQA: answers).
    pub labels: usize,
    /// Sum of the end-to-end latencies of the answers, in seconds.
    pub latency_s: f64,
    /// Answers whose latency is summed.
    pub answers: usize,
}

impl Tally {
    pub fn add(&mut self, other: Tally) {
        self.pass += other.pass;
        self.labels += other.labels;
        self.latency_s += other.latency_s;
        self.answers += other.answers;
    }

    /// Pass rate over every label (`None` with none).
    pub fn accuracy(&self) -> Option<f64> {
        (self.labels > 0).then(|| self.pass as f64 / self.labels as f64)
    }

    /// Mean latency per answer in seconds (`None` with no answers).
    pub fn latency(&self) -> Option<f64> {
        (self.answers > 0).then(|| self.latency_s / self.answers as f64)
    }
}

/// A RAG run and its baseline measured over the same questions.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Paired {
    /// Questions both runs answered (with at least one label each).
    pub n_questions: usize,
    pub accuracy_rag: f64,
    pub accuracy_base: f64,
    pub latency_rag_s: f64,
    pub latency_base_s: f64,
    pub d_accuracy: f64,
    pub d_latency_s: f64,
}

/// Pair `rag` with `base` over the questions both hold with labels and answers;
/// `None` when they share none.
pub fn paired(rag: &BTreeMap<String, Tally>, base: &BTreeMap<String, Tally>) -> Option<Paired> {
    let (mut r, mut b) = (Tally::default(), Tally::default());
    let mut n = 0;
    for (q, tr) in rag {
        let Some(tb) = base.get(q) else { continue };
        if tr.labels == 0 || tb.labels == 0 || tr.answers == 0 || tb.answers == 0 {
            continue;
        }
        n += 1;
        r.add(*tr);
        b.add(*tb);
    }
    let (ar, ab, lr, lb) = (r.accuracy()?, b.accuracy()?, r.latency()?, b.latency()?);
    Some(Paired {
        n_questions: n,
        accuracy_rag: ar,
        accuracy_base: ab,
        latency_rag_s: lr,
        latency_base_s: lb,
        d_accuracy: ar - ab,
        d_latency_s: lr - lb,
    })
}

/// A temperature and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Temperature {
    /// `None`: undefined (see `source`).
    pub value: Option<f64>,
    /// `given` or `computed`.
    pub source: &'static str,
    pub note: String,
}

/// The temperature for `diffs` (the dA or dC of every compared configuration):
/// `given` when there is one, else their sample standard deviation.
pub fn temperature(given: Option<f64>, diffs: &[f64], flag: &str) -> Temperature {
    if let Some(t) = given {
        let ok = t.is_finite() && t > 0.0;
        return Temperature {
            value: ok.then_some(t),
            source: "given",
            note: if ok {
                format!("{flag} {t}")
            } else {
                format!("{flag} {t} is not a positive number: undefined")
            },
        };
    }
    let (value, note) = match std_dev(diffs) {
        None => (
            None,
            format!(
                "undefined: the sample standard deviation needs at least 2 configurations, there are {}; give {flag}",
                diffs.len()
            ),
        ),
        Some(sd) if sd.is_finite() && sd > 0.0 => (
            Some(sd),
            format!(
                "sample standard deviation (n - 1) over {} configurations",
                diffs.len()
            ),
        ),
        Some(_) => (
            None,
            format!(
                "undefined: the {} configurations have equal differences (standard deviation 0); give {flag}",
                diffs.len()
            ),
        ),
    };
    Temperature {
        value,
        source: "computed",
        note,
    }
}

/// Accuracy utility A = sign(dA) (exp(|dA| / tA) - 1).
pub fn accuracy_utility(d_acc: f64, t_acc: f64) -> f64 {
    let a = (d_acc.abs() / t_acc).exp() - 1.0;
    if d_acc < 0.0 { -a } else { a }
}

/// Cost penalty C = exp(dC / tC) - 1.
pub fn cost_penalty(d_cost: f64, t_cost: f64) -> f64 {
    (d_cost / t_cost).exp() - 1.0
}

/// F = tanh(A - C); `None` when A - C is not a number (both infinite).
pub fn frugality(a: f64, c: f64) -> Option<f64> {
    let f = (a - c).tanh();
    f.is_finite().then_some(f)
}

/// One compared configuration: its paired differences and its score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrugalityScore {
    #[serde(flatten)]
    pub paired: Paired,
    pub t_accuracy: Option<f64>,
    pub t_latency_s: Option<f64>,
    #[serde(rename = "A")]
    pub a: Option<f64>,
    #[serde(rename = "C")]
    pub c: Option<f64>,
    #[serde(rename = "F")]
    pub f: Option<f64>,
}

/// The temperatures and each configuration's score.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FrugalityScores {
    pub t_accuracy: Temperature,
    pub t_latency_s: Temperature,
    pub configurations: Vec<FrugalityScore>,
}

/// Score every configuration; the temperatures are computed across all of them
/// unless given.
pub fn score(configs: &[Paired], t_acc: Option<f64>, t_cost: Option<f64>) -> FrugalityScores {
    let da: Vec<f64> = configs.iter().map(|p| p.d_accuracy).collect();
    let dc: Vec<f64> = configs.iter().map(|p| p.d_latency_s).collect();
    let ta = temperature(t_acc, &da, "--temp-accuracy");
    let tc = temperature(t_cost, &dc, "--temp-cost");
    let configurations = configs
        .iter()
        .map(|p| {
            let a = ta.value.map(|t| accuracy_utility(p.d_accuracy, t));
            let c = tc.value.map(|t| cost_penalty(p.d_latency_s, t));
            FrugalityScore {
                paired: *p,
                t_accuracy: ta.value,
                t_latency_s: tc.value,
                a,
                c,
                f: a.zip(c).and_then(|(a, c)| frugality(a, c)),
            }
        })
        .collect();
    FrugalityScores {
        t_accuracy: ta,
        t_latency_s: tc,
        configurations,
    }
}

/// The temperature factors of the sensitivity check: each temperature at 70%, 100%
/// and 130% of its value (seed 002 reports how F moves when they change by 30%).
pub const SENSITIVITY_FACTORS: [f64; 3] = [0.7, 1.0, 1.3];

/// The least and greatest F of one configuration over every pair of scaled
/// temperatures (tA x a, tC x c for a, c in `factors`); `None` when F is undefined
/// for one of them.
pub fn sensitivity(
    d_acc: f64,
    d_cost: f64,
    t_acc: f64,
    t_cost: f64,
    factors: &[f64],
) -> Option<(f64, f64)> {
    let mut range: Option<(f64, f64)> = None;
    for a in factors {
        for c in factors {
            let f = frugality(
                accuracy_utility(d_acc, t_acc * a),
                cost_penalty(d_cost, t_cost * c),
            )?;
            range = Some(range.map_or((f, f), |(lo, hi)| (lo.min(f), hi.max(f))));
        }
    }
    range
}

/// The F levels drawn as contours on the trade-off plane.
pub const CONTOUR_LEVELS: [f64; 3] = [-0.5, 0.0, 0.5];

/// F's range when both temperatures move by 30% ([`SENSITIVITY_FACTORS`]), as
/// `min..max` to 4 places, or `undefined` when a part of it is.
pub fn sensitivity_label(
    d_acc: Option<f64>,
    d_cost: Option<f64>,
    t_acc: Option<f64>,
    t_cost: Option<f64>,
) -> String {
    match (d_acc, d_cost, t_acc, t_cost) {
        (Some(a), Some(c), Some(ta), Some(tc)) => sensitivity(a, c, ta, tc, &SENSITIVITY_FACTORS)
            .map_or_else(
                || "undefined".into(),
                |(lo, hi)| format!("{lo:.4}..{hi:.4}"),
            ),
        _ => "undefined".into(),
    }
}

/// The accuracy difference at which a configuration whose latency cost is `d_cost`
/// scores exactly `f` (a point of the F = `f` contour of the trade-off plane): F =
/// tanh(A - C) gives A = atanh(f) + C, and A = sign(dA) (exp(|dA| / tA) - 1) gives
/// dA = sign(A) tA ln(1 + |A|). `None` for |f| >= 1 (F never reaches it).
pub fn contour_accuracy(f: f64, d_cost: f64, t_acc: f64, t_cost: f64) -> Option<f64> {
    if f.abs() >= 1.0 {
        return None;
    }
    let a = f.atanh() + cost_penalty(d_cost, t_cost);
    let d = t_acc * a.abs().ln_1p();
    d.is_finite().then_some(if a < 0.0 { -d } else { d })
}

/// Sample standard deviation (n - 1); `None` under two values.
pub fn std_dev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    Some((values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A point of a contour scores its level: the forward formula applied to it gives
    /// F back, on both sides of the plane and at a zero cost.
    #[test]
    fn contour_points_score_their_level() {
        for (t_acc, t_cost) in [(0.1, 2.0), (0.05, 0.5)] {
            for f in CONTOUR_LEVELS.into_iter().chain([0.9, -0.9]) {
                for d_cost in [-1.0, 0.0, 0.3, 1.5] {
                    let d_acc = contour_accuracy(f, d_cost, t_acc, t_cost).expect("defined");
                    let back =
                        frugality(accuracy_utility(d_acc, t_acc), cost_penalty(d_cost, t_cost))
                            .expect("F");
                    assert!((back - f).abs() < 1e-12, "f {f} dC {d_cost}: {back}");
                }
            }
        }
        assert_eq!(contour_accuracy(1.0, 0.0, 0.1, 1.0), None);
        // F = 0 at no cost: no accuracy change at all.
        assert_eq!(contour_accuracy(0.0, 0.0, 0.1, 1.0), Some(0.0));
    }

    /// The sensitivity range is the least and greatest F of the nine temperature
    /// pairs, each computed here from the formula: tanh(sign(dA)(e^(|dA|/tA) - 1) -
    /// (e^(dC/tC) - 1)).
    #[test]
    fn sensitivity_spans_the_nine_temperature_pairs() {
        let (d_acc, d_cost, t_acc, t_cost) = (0.12, 0.8, 0.1, 1.0);
        let by_hand = |a: f64, c: f64| {
            let big_a = (d_acc / (t_acc * a)).exp() - 1.0;
            let big_c = (d_cost / (t_cost * c)).exp() - 1.0;
            (big_a - big_c).tanh()
        };
        let all: Vec<f64> = [0.7, 1.0, 1.3]
            .iter()
            .flat_map(|a| [0.7, 1.0, 1.3].map(|c| by_hand(*a, c)))
            .collect();
        let lo = all.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = all.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let (l, h) = sensitivity(d_acc, d_cost, t_acc, t_cost, &SENSITIVITY_FACTORS).expect("F");
        assert!((l - lo).abs() < 1e-12 && (h - hi).abs() < 1e-12, "{l} {h}");
        // tA x 1.3 with tC x 0.7 is the least F here; tA x 0.7 with tC x 1.3 the greatest.
        assert!((l - by_hand(1.3, 0.7)).abs() < 1e-12);
        assert!((h - by_hand(0.7, 1.3)).abs() < 1e-12);
    }

    fn tally(pass: usize, labels: usize, latency_s: f64, answers: usize) -> Tally {
        Tally {
            pass,
            labels,
            latency_s,
            answers,
        }
    }

    #[test]
    fn hand_computed_utilities() {
        // dA = 0.1, tA = 0.1 -> A = e - 1; dC = 0 -> C = 0; F = tanh(e - 1)
        let e = std::f64::consts::E;
        assert!((accuracy_utility(0.1, 0.1) - (e - 1.0)).abs() < 1e-12);
        assert!((accuracy_utility(-0.1, 0.1) + (e - 1.0)).abs() < 1e-12);
        assert_eq!(accuracy_utility(0.0, 0.1), 0.0);
        assert!((cost_penalty(2.0, 1.0) - (e * e - 1.0)).abs() < 1e-12);
        assert!((cost_penalty(-1.0, 1.0) - (1.0 / e - 1.0)).abs() < 1e-12);
        let f = frugality(e - 1.0, 0.0).expect("defined");
        assert!((f - (e - 1.0).tanh()).abs() < 1e-12);
        assert_eq!(frugality(f64::INFINITY, f64::INFINITY), None);
        assert_eq!(frugality(f64::INFINITY, 1.0), Some(1.0));
    }

    /// Only questions both runs hold count; a question either run lacks, or whose
    /// answers were never labelled, is left out of both sides.
    #[test]
    fn pairs_over_the_shared_questions() {
        let rag: BTreeMap<String, Tally> = [
            ("q1".to_string(), tally(4, 4, 2.0, 1)),
            ("q2".to_string(), tally(2, 4, 4.0, 1)),
            ("q3".to_string(), tally(0, 4, 9.0, 1)), // base lacks it
            ("q4".to_string(), tally(0, 0, 9.0, 1)), // never judged
        ]
        .into();
        let base: BTreeMap<String, Tally> = [
            ("q1".to_string(), tally(1, 4, 1.0, 1)),
            ("q2".to_string(), tally(1, 4, 0.5, 1)),
            ("q4".to_string(), tally(4, 4, 0.1, 1)),
            ("q5".to_string(), tally(4, 4, 0.1, 1)), // RAG lacks it
        ]
        .into();
        let p = paired(&rag, &base).expect("shared questions");
        assert_eq!(p.n_questions, 2);
        assert!((p.accuracy_rag - 6.0 / 8.0).abs() < 1e-12);
        assert!((p.accuracy_base - 2.0 / 8.0).abs() < 1e-12);
        assert!((p.d_accuracy - 0.5).abs() < 1e-12);
        assert!((p.latency_rag_s - 3.0).abs() < 1e-12);
        assert!((p.latency_base_s - 0.75).abs() < 1e-12);
        assert!((p.d_latency_s - 2.25).abs() < 1e-12);
        assert_eq!(paired(&rag, &BTreeMap::new()), None);
    }

    fn pair(d_accuracy: f64, d_latency_s: f64) -> Paired {
        Paired {
            n_questions: 1,
            accuracy_rag: 0.0,
            accuracy_base: 0.0,
            latency_rag_s: 0.0,
            latency_base_s: 0.0,
            d_accuracy,
            d_latency_s,
        }
    }

    #[test]
    fn temperatures_are_sample_sds_across_configurations() {
        // dA = 0.1, 0.2, 0.3: mean 0.2, sample sd = sqrt(0.02 / 2) = 0.1.
        // dC = 1, 2, 4: mean 7/3, squares 16/9 + 1/9 + 25/9 = 42/9, / 2 -> sd sqrt(7/3).
        let s = score(
            &[pair(0.1, 1.0), pair(0.2, 2.0), pair(0.3, 4.0)],
            None,
            None,
        );
        let ta = s.t_accuracy.value.expect("tA");
        let tc = s.t_latency_s.value.expect("tC");
        assert!((ta - 0.1).abs() < 1e-12);
        assert!((tc - (7.0f64 / 3.0).sqrt()).abs() < 1e-12);
        assert_eq!(s.t_accuracy.source, "computed");
        let c0 = &s.configurations[0];
        // A = e^1 - 1, C = exp(1 / sqrt(7/3)) - 1.
        let e = std::f64::consts::E;
        let want_c = (1.0 / (7.0f64 / 3.0).sqrt()).exp() - 1.0;
        assert!((c0.a.expect("A") - (e - 1.0)).abs() < 1e-12);
        assert!((c0.c.expect("C") - want_c).abs() < 1e-12);
        assert!((c0.f.expect("F") - (e - 1.0 - want_c).tanh()).abs() < 1e-12);
    }

    #[test]
    fn degenerate_temperatures_are_undefined_not_zero() {
        // One configuration: no sample sd, so A, C and F are undefined...
        let s = score(&[pair(0.1, 1.0)], None, None);
        assert_eq!(s.t_accuracy.value, None);
        assert!(s.t_accuracy.note.contains("--temp-accuracy"));
        let c = &s.configurations[0];
        assert_eq!((c.a, c.c, c.f), (None, None, None));
        // ... until the temperatures are given.
        let s = score(&[pair(0.1, 1.0)], Some(0.1), Some(1.0));
        assert_eq!(s.t_accuracy.source, "given");
        let c = &s.configurations[0];
        let e = std::f64::consts::E;
        assert!((c.f.expect("F") - (e - 1.0 - (e - 1.0)).tanh()).abs() < 1e-12);
        // Equal dA: sd 0, A undefined; C still defined from the dC spread.
        let s = score(&[pair(0.1, 1.0), pair(0.1, 3.0)], None, None);
        assert_eq!(s.t_accuracy.value, None);
        assert!(s.t_latency_s.value.is_some());
        assert!(s.configurations[0].a.is_none() && s.configurations[0].c.is_some());
        assert!(s.configurations[0].f.is_none());
        // A non-positive given temperature is refused, not used.
        assert_eq!(temperature(Some(0.0), &[], "--temp-cost").value, None);
    }

    #[test]
    fn std_dev_sample() {
        assert!(
            (std_dev(&[1.0, 2.0, 3.0, 4.0]).expect("sd") - (5.0f64 / 3.0).sqrt()).abs() < 1e-12
        );
        assert_eq!(std_dev(&[1.0]), None);
    }
}
