//! `report answers --compare RUN_A RUN_B`: two answer runs compared criterion by
//! criterion over the questions both answered and the judge labelled, with McNemar's
//! exact test on the paired pass/fail outcomes ([`crate::core::significance`]).
//!
//! Pairing rule: for each run and question, the first stored answer that has a
//! judgement the viewer may see; of that answer's judgements, the last stored; a
//! question counts for a criterion when both runs' answers have a label for it. A label
//! is a pass when it is `pass`. The criteria's p-values are Holm-adjusted together.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::significance::{McNemar, holm, mcnemar_exact};
use crate::service::answer::{AnswerRecord, JudgementRecord, judgements};
use crate::service::base::Context;

/// The pairing rule, printed with the comparison.
pub const PAIRING: &str = "per run and question the first stored answer with a judgement, its last judgement; a question counts for a criterion when both answers have a label for it";

/// One criterion: pass rates of both runs over the paired questions, McNemar's test.
#[derive(Debug, Clone, Serialize)]
pub struct CriterionComparison {
    pub criterion: String,
    /// Questions paired for this criterion.
    pub questions: usize,
    pub pass_rate_a: f64,
    pub pass_rate_b: f64,
    /// both_pass, only_a (A passes, B fails), only_b, both_fail and the exact p.
    pub mcnemar: McNemar,
    /// B's wins (only B passes), ties (both pass or both fail), losses (only A passes).
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    /// McNemar's p Holm-adjusted over the criteria.
    pub p_holm: f64,
}

/// Two answer runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerRunsComparison {
    pub run_a: String,
    pub run_b: String,
    pub judge_models: Vec<String>,
    pub pairing: &'static str,
    pub criteria: Vec<CriterionComparison>,
}

/// Each question's label per criterion in one run, by the pairing rule.
fn labels_by_question<'a>(
    answers: &[&'a AnswerRecord],
    by_answer: &HashMap<&str, Vec<&'a JudgementRecord>>,
) -> BTreeMap<&'a str, &'a JudgementRecord> {
    let mut out = BTreeMap::new();
    for a in answers {
        if out.contains_key(a.question_id.as_str()) {
            continue;
        }
        if let Some(j) = by_answer.get(a.answer_id.as_str()).and_then(|js| js.last()) {
            out.insert(a.question_id.as_str(), *j);
        }
    }
    out
}

/// Paired (A passed, B passed) outcomes per criterion.
pub fn paired_outcomes(
    a: &[&AnswerRecord],
    b: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> BTreeMap<String, Vec<(bool, bool)>> {
    let (la, lb) = (
        labels_by_question(a, by_answer),
        labels_by_question(b, by_answer),
    );
    let label = |j: &JudgementRecord, c: &str| {
        j.criteria
            .iter()
            .position(|x| x == c)
            .and_then(|i| j.labels.get(i))
            .map(|l| l == "pass")
    };
    let mut out: BTreeMap<String, Vec<(bool, bool)>> = BTreeMap::new();
    for (q, ja) in &la {
        let Some(jb) = lb.get(q) else { continue };
        for c in &ja.criteria {
            if let (Some(pa), Some(pb)) = (label(ja, c), label(jb, c)) {
                out.entry(c.clone()).or_default().push((pa, pb));
            }
        }
    }
    out
}

/// The comparison of the paired outcomes, Holm over the criteria.
pub fn compare_outcomes(
    outcomes: &BTreeMap<String, Vec<(bool, bool)>>,
) -> Vec<CriterionComparison> {
    let tests: Vec<McNemar> = outcomes.values().map(|o| mcnemar_exact(o)).collect();
    let adjusted = holm(&tests.iter().map(|t| t.p).collect::<Vec<_>>());
    outcomes
        .iter()
        .zip(tests)
        .zip(adjusted)
        .map(|(((c, o), m), p_holm)| {
            let n = o.len().max(1) as f64;
            CriterionComparison {
                criterion: c.clone(),
                questions: o.len(),
                pass_rate_a: (m.both_pass + m.only_a) as f64 / n,
                pass_rate_b: (m.both_pass + m.only_b) as f64 / n,
                wins: m.only_b,
                ties: m.both_pass + m.both_fail,
                losses: m.only_a,
                mcnemar: m,
                p_holm,
            }
        })
        .collect()
}

/// Compare runs `a` and `b` over the judge labels `sight` allows.
pub async fn compare_answer_runs(
    ctx: &Context,
    a: &str,
    b: &str,
    sight: &crate::core::blinding::Sight,
) -> Result<AnswerRunsComparison> {
    let all = super::report::list_answers(ctx, None).await?;
    for r in [a, b] {
        if !all.iter().any(|x| x.run == r) {
            bail!("run `{r}` has no answers");
        }
    }
    let judg = sight.judgements_seen(judgements(&ctx.workspace).read_all().await?);
    let by_answer = crate::core::answer::by_answer(&judg);
    let of = |r: &str| -> Vec<&AnswerRecord> { all.iter().filter(|x| x.run == r).collect() };
    let (ra, rb) = (of(a), of(b));
    let judge_models: BTreeSet<String> = ra
        .iter()
        .chain(&rb)
        .flat_map(|x| by_answer.get(x.answer_id.as_str()).into_iter().flatten())
        .map(|j| j.judge_model.clone())
        .collect();
    Ok(AnswerRunsComparison {
        run_a: a.to_string(),
        run_b: b.to_string(),
        judge_models: judge_models.into_iter().collect(),
        pairing: PAIRING,
        criteria: compare_outcomes(&paired_outcomes(&ra, &rb, &by_answer)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(run: &str, q: &str, id: &str) -> AnswerRecord {
        AnswerRecord {
            answer_id: id.into(),
            run: run.into(),
            question_id: q.into(),
            ..AnswerRecord::default()
        }
    }

    fn judged(id: &str, labels: &[(&str, &str)]) -> JudgementRecord {
        JudgementRecord::of(id, labels)
    }

    /// By hand: q1 both pass, q2 only A, q3 only B, q4 both fail on "f"; q5 only in A;
    /// q6's B answer has no judgement; A's second answer to q1 is ignored (the first
    /// judged one counts), and of A's two judgements of q2 the last counts.
    #[test]
    fn pairs_follow_the_rule_and_mcnemar_counts_by_hand() {
        let a = [
            answer("A", "q1", "a1"),
            answer("A", "q1", "a1bis"),
            answer("A", "q2", "a2"),
            answer("A", "q3", "a3"),
            answer("A", "q4", "a4"),
            answer("A", "q5", "a5"),
            answer("A", "q6", "a6"),
        ];
        let b = [
            answer("B", "q1", "b1"),
            answer("B", "q2", "b2"),
            answer("B", "q3", "b3"),
            answer("B", "q4", "b4"),
            answer("B", "q6", "b6"),
        ];
        let js = vec![
            judged("a1", &[("f", "pass"), ("c", "pass")]),
            judged("a1bis", &[("f", "fail"), ("c", "fail")]),
            judged("a2", &[("f", "fail"), ("c", "pass")]),
            judged("a2", &[("f", "pass"), ("c", "pass")]),
            judged("a3", &[("f", "fail"), ("c", "pass")]),
            judged("a4", &[("f", "fail"), ("c", "fail")]),
            judged("a5", &[("f", "pass"), ("c", "pass")]),
            judged("a6", &[("f", "pass"), ("c", "pass")]),
            judged("b1", &[("f", "pass"), ("c", "fail")]),
            judged("b2", &[("f", "fail"), ("c", "fail")]),
            judged("b3", &[("f", "pass"), ("c", "fail")]),
            judged("b4", &[("f", "fail")]),
        ];
        let by_answer = crate::core::answer::by_answer(&js);
        let (ra, rb): (Vec<&AnswerRecord>, Vec<&AnswerRecord>) =
            (a.iter().collect(), b.iter().collect());
        let o = paired_outcomes(&ra, &rb, &by_answer);
        assert_eq!(
            o["f"],
            vec![(true, true), (true, false), (false, true), (false, false)]
        );
        // "c": q4's B judgement has no "c" label: three pairs, A passes all, B none.
        assert_eq!(o["c"], vec![(true, false); 3]);
        let cmp = compare_outcomes(&o);
        let c = &cmp[0];
        assert_eq!((c.criterion.as_str(), c.questions), ("c", 3));
        assert_eq!((c.wins, c.ties, c.losses), (0, 0, 3));
        // b = 3, c = 0: p = 2 / 8.
        assert!((c.mcnemar.p - 0.25).abs() < 1e-15);
        let f = &cmp[1];
        assert_eq!((f.pass_rate_a, f.pass_rate_b), (0.5, 0.5));
        assert_eq!(f.mcnemar.p, 1.0);
        // Holm over the two criteria: 0.25 x 2 = 0.5, then max(0.5, 1.0 x 1).
        assert!((c.p_holm - 0.5).abs() < 1e-15);
        assert_eq!(f.p_holm, 1.0);
    }
}
