//! Repetitions in the answer report: a run generated with `generate --repeats N` and
//! judged with `judge --repeats M`.
//!
//! - **Spread across generation repeats**: per criterion (and `overall`, all criteria
//!   pooled), the pass rate of each generation repeat over every judge label of that
//!   repeat's answers (all judges and judge repeats, as the report's pass rates
//!   count them), then the mean, the sample standard deviation (n - 1; none with one
//!   repeat), the minimum and the maximum of those rates.
//! - **Judge self-consistency**: per judge model with two or more repeats, Cohen's
//!   kappa between its first repeat and each other one, per criterion and overall, over
//!   the (answer, criterion) units both repeats labelled (each repeat's last judgement
//!   of an answer). Undefined kappas (chance agreement 1) are null, never 0 or 1.
//!
//! Answers and judgements stored without a repeat count as repeat 0.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use crate::core::agreement::{Confusion, cohen_kappa};
use crate::service::answer::{AnswerRecord, JudgementRecord};

/// How the spread is computed, printed with it.
pub const SPREAD_RULE: &str = "per generation repeat, the pass rate over every judge label of its answers; then mean, sample SD (n - 1), min and max of those rates";

/// A run's repeats: pass-rate spread and the judge's self-consistency.
#[derive(Debug, Clone, Serialize)]
pub struct Repeats {
    /// The generation repeats present.
    pub generation_repeats: Vec<u32>,
    pub spread_rule: &'static str,
    /// criterion (and `overall`) -> the spread of its pass rate across repeats.
    pub spread: BTreeMap<String, Spread>,
    /// Judges with two or more repeats.
    pub judge_consistency: Vec<JudgeConsistency>,
}

/// Pass rates of one criterion across generation repeats.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Spread {
    /// repeat -> pass rate (repeats with no label of the criterion left out).
    pub rates: BTreeMap<u32, f64>,
    pub mean: f64,
    /// Sample standard deviation (n - 1); None with one rate.
    pub sd: Option<f64>,
    pub min: f64,
    pub max: f64,
}

/// A judge's agreement with itself across its repeats.
#[derive(Debug, Clone, Serialize)]
pub struct JudgeConsistency {
    pub judge_model: String,
    pub repeats: Vec<u32>,
    pub pairs: Vec<RepeatPair>,
}

/// Cohen's kappa between two repeats of one judge.
#[derive(Debug, Clone, Serialize)]
pub struct RepeatPair {
    pub first: u32,
    pub second: u32,
    /// (answer, criterion) units both repeats labelled.
    pub units: usize,
    /// criterion (and `overall`) -> kappa (None: undefined).
    pub kappa: BTreeMap<String, Option<f64>>,
}

/// The spread of `rates` (at least one).
fn spread(rates: BTreeMap<u32, f64>) -> Option<Spread> {
    let v: Vec<f64> = rates.values().copied().collect();
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.len() > 1)
        .then(|| (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt());
    Some(Spread {
        mean,
        sd,
        min: v.iter().copied().reduce(f64::min)?,
        max: v.iter().copied().reduce(f64::max)?,
        rates,
    })
}

/// Pass rates per criterion (and overall) in each generation repeat.
fn spreads(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> BTreeMap<String, Spread> {
    // criterion -> repeat -> (pass, total)
    let mut counts: BTreeMap<String, BTreeMap<u32, (usize, usize)>> = BTreeMap::new();
    for a in answers {
        for j in by_answer.get(a.answer_id.as_str()).into_iter().flatten() {
            for (c, l) in j.criteria.iter().zip(&j.labels) {
                for key in [c.as_str(), "overall"] {
                    let e = counts
                        .entry(key.to_string())
                        .or_default()
                        .entry(a.repeat_index())
                        .or_default();
                    e.0 += usize::from(l == "pass");
                    e.1 += 1;
                }
            }
        }
    }
    counts
        .into_iter()
        .filter_map(|(c, by_repeat)| {
            let rates = by_repeat
                .into_iter()
                .map(|(r, (p, t))| (r, p as f64 / t as f64))
                .collect();
            spread(rates).map(|s| (c, s))
        })
        .collect()
}

/// Kappa between each judge's first repeat and its other ones.
fn consistency(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> Vec<JudgeConsistency> {
    // judge -> repeat -> answer -> its last judgement
    let mut by: BTreeMap<&str, BTreeMap<u32, HashMap<&str, &JudgementRecord>>> = BTreeMap::new();
    for a in answers {
        for j in by_answer.get(a.answer_id.as_str()).into_iter().flatten() {
            by.entry(j.judge_model.as_str())
                .or_default()
                .entry(j.repeat_index())
                .or_default()
                .insert(a.answer_id.as_str(), j);
        }
    }
    let mut out = Vec::new();
    for (judge, repeats) in by {
        let mut keys = repeats.keys().copied();
        let Some(first) = keys.next() else { continue };
        let others: Vec<u32> = keys.collect();
        if others.is_empty() {
            continue;
        }
        let pairs = others
            .iter()
            .map(|&second| pair(&repeats[&first], &repeats[&second], first, second))
            .collect();
        out.push(JudgeConsistency {
            judge_model: judge.to_string(),
            repeats: std::iter::once(first).chain(others).collect(),
            pairs,
        });
    }
    out
}

/// Kappa of two repeats' labels over the units both labelled.
fn pair(
    x: &HashMap<&str, &JudgementRecord>,
    y: &HashMap<&str, &JudgementRecord>,
    first: u32,
    second: u32,
) -> RepeatPair {
    let mut units: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    let ids: BTreeSet<&&str> = x.keys().filter(|id| y.contains_key(**id)).collect();
    for id in ids {
        let (jx, jy) = (x[*id], y[*id]);
        for (c, lx) in jx.criteria.iter().zip(&jx.labels) {
            let Some(ly) = jy
                .criteria
                .iter()
                .position(|d| d == c)
                .and_then(|i| jy.labels.get(i))
            else {
                continue;
            };
            for key in [c.as_str(), "overall"] {
                units
                    .entry(key.to_string())
                    .or_default()
                    .push((lx.clone(), ly.clone()));
            }
        }
    }
    RepeatPair {
        first,
        second,
        units: units.get("overall").map_or(0, Vec::len),
        kappa: units
            .iter()
            .map(|(c, p)| (c.clone(), cohen_kappa(&Confusion::new(p))))
            .collect(),
    }
}

/// The repeats of one run's answers, when it has more than one generation repeat or
/// a judge with more than one repeat (None otherwise: nothing to add to the report).
pub fn repeats_of(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> Option<Repeats> {
    let generation_repeats: BTreeSet<u32> = answers.iter().map(|a| a.repeat_index()).collect();
    let judge_consistency = consistency(answers, by_answer);
    if generation_repeats.len() < 2 && judge_consistency.is_empty() {
        return None;
    }
    Some(Repeats {
        generation_repeats: generation_repeats.into_iter().collect(),
        spread_rule: SPREAD_RULE,
        spread: spreads(answers, by_answer),
        judge_consistency,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: &str, repeat: Option<u32>) -> AnswerRecord {
        AnswerRecord {
            answer_id: id.into(),
            repeat,
            ..AnswerRecord::default()
        }
    }

    fn judged(id: &str, repeat: Option<u32>, labels: &[(&str, &str)]) -> JudgementRecord {
        JudgementRecord {
            repeat,
            ..JudgementRecord::of(id, labels)
        }
    }

    /// By hand: generation repeat 0 (a0 without a repeat mark, a1) and repeat 1 (b0,
    /// b1), each answer judged in judge repeats 0 and 1 (a0's first judgement without
    /// a mark). Judge repeats 0 and 1 on f over the four answers:
    /// (pass, pass), (fail, pass), (pass, pass), (pass, fail): p_o = 0.5, marginals
    /// pass 3/4 and 3/4, p_e = 0.5625 + 0.0625 = 0.625, kappa = -0.125 / 0.375 = -1/3.
    #[test]
    fn spread_and_kappa_by_hand() {
        let answers = [
            answer("a0", None),
            answer("a1", Some(0)),
            answer("b0", Some(1)),
            answer("b1", Some(1)),
        ];
        let js = vec![
            judged("a0", None, &[("f", "pass")]),
            judged("a1", Some(0), &[("f", "fail")]),
            judged("b0", Some(0), &[("f", "pass")]),
            judged("b1", Some(0), &[("f", "pass")]),
            judged("a0", Some(1), &[("f", "pass")]),
            judged("a1", Some(1), &[("f", "pass")]),
            judged("b0", Some(1), &[("f", "pass")]),
            judged("b1", Some(1), &[("f", "fail")]),
        ];
        let by_answer = crate::core::answer::by_answer(&js);
        let refs: Vec<&AnswerRecord> = answers.iter().collect();
        let r = repeats_of(&refs, &by_answer).expect("repeats");
        assert_eq!(r.generation_repeats, [0, 1]);
        // Repeat 0: a0 pass, pass; a1 fail, pass -> 3/4. Repeat 1: b0 pass, pass;
        // b1 pass, fail -> 3/4 (both judge repeats pooled).
        let f = &r.spread["f"];
        assert_eq!(f.rates, BTreeMap::from([(0, 0.75), (1, 0.75)]));
        assert_eq!((f.mean, f.sd, f.min, f.max), (0.75, Some(0.0), 0.75, 0.75));
        let c = &r.judge_consistency[0];
        assert_eq!(c.repeats, [0, 1]);
        let p = &c.pairs[0];
        assert_eq!(p.units, 4);
        let k = p.kappa["f"].expect("defined");
        assert!((k - (-1.0 / 3.0)).abs() < 1e-12, "{k}");
        assert_eq!(p.kappa["overall"], p.kappa["f"]);
    }

    #[test]
    fn sample_sd_and_undefined_kappa() {
        let s = spread(BTreeMap::from([(0, 0.5), (1, 1.0)])).expect("spread");
        assert_eq!((s.mean, s.min, s.max), (0.75, 0.5, 1.0));
        let sd = s.sd.expect("two rates");
        assert!((sd - 0.125f64.sqrt()).abs() < 1e-15, "{sd}");
        assert_eq!(spread(BTreeMap::from([(3, 0.25)])).and_then(|s| s.sd), None);
        // Every label pass in both repeats: p_e = 1, kappa undefined.
        let answers = [answer("a", None)];
        let js = vec![
            judged("a", Some(0), &[("f", "pass")]),
            judged("a", Some(1), &[("f", "pass")]),
        ];
        let by_answer = crate::core::answer::by_answer(&js);
        let refs: Vec<&AnswerRecord> = answers.iter().collect();
        let r = repeats_of(&refs, &by_answer).expect("judge repeats");
        assert_eq!(r.judge_consistency[0].pairs[0].kappa["f"], None);
        // No repeats at all: nothing to report.
        let plain = vec![judged("a", None, &[("f", "pass")])];
        let by_answer = crate::core::answer::by_answer(&plain);
        assert!(repeats_of(&refs, &by_answer).is_none());
    }
}
