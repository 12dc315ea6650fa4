//! `report answers --compare RUN_A RUN_B`: two answer runs compared criterion by
//! criterion over the questions both answered and the judge labelled, with McNemar's
//! exact test on the paired pass/fail outcomes ([`crate::core::significance`]).
//!
//! Pairing rule: for each run and question, the first stored answer that has a
//! judgement the viewer may see; of that answer's judgements, the last stored; a
//! question counts for a criterion when both runs' answers have a label for it. A label
//! is a pass when it is `pass`. The criteria's p-values are Holm-adjusted together.
//!
//! Beside the statistics, every question either run answered, with the answer each run
//! had picked by the same rule (a run's first stored answer when none is judged), its
//! target's place in the prompt and its labels, and the criteria whose labels differ:
//! the per-question view of the TUI's Compare view and of `--json`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::significance::{McNemar, holm, mcnemar_exact};
use crate::service::answer::{AnswerRecord, JudgementRecord, judgements};
use crate::service::base::Context;

use super::report::{PromptPlace, prompt_place};

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
    /// Each run's prompt template, `name@sha256-prefix` (two runs that differ only in
    /// their template are told apart by it).
    pub template_a: String,
    pub template_b: String,
    pub judge_models: Vec<String>,
    pub pairing: &'static str,
    pub criteria: Vec<CriterionComparison>,
    /// How the grounded comparison pairs answers.
    pub grounded_pairing: &'static str,
    /// Every grounded metric per judge that scored answers of both runs (`answers
    /// ground`): paired differences B - A, as `raglab compare` tests them.
    pub grounded: Vec<crate::core::grounded::GroundedComparison>,
    /// Every question either run answered, by question id.
    pub questions: Vec<QuestionComparison>,
}

/// One question of the comparison: each run's answer as the pairing rule picks it.
#[derive(Debug, Clone, Serialize)]
pub struct QuestionComparison {
    pub question_id: String,
    pub question: String,
    /// None: the run did not answer the question.
    pub a: Option<PairedAnswer>,
    pub b: Option<PairedAnswer>,
    /// Criteria both answers have a label for, labelled differently.
    pub differ: Vec<String>,
}

/// A run's answer to one question, with the judgement the pairing picked.
#[derive(Debug, Clone, Serialize)]
pub struct PairedAnswer {
    pub answer_id: String,
    pub seed: u32,
    /// Where the first target chunk sat in the prompt: `#r` (its fused rank among the
    /// chunks kept), `dropped` (cut by the token budget) or `not retrieved`.
    pub target_in_prompt: String,
    pub answer: String,
    /// The judge that gave `labels` (None: the answer is not judged, or not visible).
    pub judge_model: Option<String>,
    /// (criterion, label) in the judgement's order.
    pub labels: Vec<(String, String)>,
}

/// How the per-question view writes a [`PromptPlace`].
pub fn place_text(place: PromptPlace) -> String {
    match place {
        PromptPlace::Rank(r) => format!("#{r}"),
        PromptPlace::Dropped => "dropped".into(),
        PromptPlace::NotRetrieved => "not retrieved".into(),
    }
}

/// Each question's answer in one run by the pairing rule: the first stored answer
/// with a judgement and its last judgement, else (none judged) the first stored answer.
fn picks<'a>(
    answers: &[&'a AnswerRecord],
    by_answer: &HashMap<&str, Vec<&'a JudgementRecord>>,
) -> BTreeMap<&'a str, (&'a AnswerRecord, Option<&'a JudgementRecord>)> {
    let mut out: BTreeMap<&str, (&AnswerRecord, Option<&JudgementRecord>)> = BTreeMap::new();
    for a in answers {
        let judged = by_answer
            .get(a.answer_id.as_str())
            .and_then(|js| js.last())
            .copied();
        match out.get(a.question_id.as_str()) {
            Some((_, Some(_))) => {}
            Some((_, None)) if judged.is_none() => {}
            _ => {
                out.insert(a.question_id.as_str(), (*a, judged));
            }
        }
    }
    out
}

/// Each question's judgement in one run, by the pairing rule.
pub(crate) fn labels_by_question<'a>(
    answers: &[&'a AnswerRecord],
    by_answer: &HashMap<&str, Vec<&'a JudgementRecord>>,
) -> BTreeMap<&'a str, &'a JudgementRecord> {
    picks(answers, by_answer)
        .into_iter()
        .filter_map(|(q, (_, j))| j.map(|j| (q, j)))
        .collect()
}

/// The label of criterion `c` in `j`, if it has one.
pub(crate) fn label_of<'a>(j: &'a JudgementRecord, c: &str) -> Option<&'a str> {
    j.criteria
        .iter()
        .position(|x| x == c)
        .and_then(|i| j.labels.get(i))
        .map(String::as_str)
}

/// Every question either run answered, each run's picked answer beside the other's.
pub fn question_pairs(
    a: &[&AnswerRecord],
    b: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> Vec<QuestionComparison> {
    let (pa, pb) = (picks(a, by_answer), picks(b, by_answer));
    let ids: BTreeSet<&str> = pa.keys().chain(pb.keys()).copied().collect();
    let paired = |p: Option<&(&AnswerRecord, Option<&JudgementRecord>)>| {
        p.map(|(x, j)| PairedAnswer {
            answer_id: x.answer_id.clone(),
            seed: x.seed,
            target_in_prompt: place_text(prompt_place(x)),
            answer: x.answer.clone(),
            judge_model: j.map(|j| j.judge_model.clone()),
            labels: j.map_or_else(Vec::new, |j| {
                j.criteria
                    .iter()
                    .cloned()
                    .zip(j.labels.iter().cloned())
                    .collect()
            }),
        })
    };
    ids.into_iter()
        .map(|q| {
            let (xa, xb) = (pa.get(q), pb.get(q));
            let differ = match (xa.and_then(|x| x.1), xb.and_then(|x| x.1)) {
                (Some(ja), Some(jb)) => ja
                    .criteria
                    .iter()
                    .filter(|c| {
                        matches!((label_of(ja, c), label_of(jb, c)), (Some(x), Some(y)) if x != y)
                    })
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            };
            let question = xa.or(xb).map(|x| x.0.question.clone()).unwrap_or_default();
            QuestionComparison {
                question_id: q.to_string(),
                question,
                a: paired(xa),
                b: paired(xb),
                differ,
            }
        })
        .collect()
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
    let label = |j: &JudgementRecord, c: &str| label_of(j, c).map(|l| l == "pass");
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
    let grounded: Vec<crate::core::grounded::GroundedRecord> =
        crate::service::answer::grounded_records(ctx)
            .await?
            .into_iter()
            .filter(|g| sight.judgement(&g.answer_id))
            .collect();
    // Stored answer order: each question's first answer with a score comes first.
    let order: std::collections::HashMap<&str, usize> = all
        .iter()
        .enumerate()
        .map(|(i, x)| (x.answer_id.as_str(), i))
        .collect();
    let grounded_of = |r: &str| -> Vec<&crate::core::grounded::GroundedRecord> {
        let mut v: Vec<&crate::core::grounded::GroundedRecord> =
            grounded.iter().filter(|g| g.run == r).collect();
        v.sort_by_key(|g| {
            order
                .get(g.answer_id.as_str())
                .copied()
                .unwrap_or(usize::MAX)
        });
        v
    };
    let (ga, gb) = (grounded_of(a), grounded_of(b));
    let judge_models: BTreeSet<String> = ra
        .iter()
        .chain(&rb)
        .flat_map(|x| by_answer.get(x.answer_id.as_str()).into_iter().flatten())
        .map(|j| j.judge_model.clone())
        .collect();
    Ok(AnswerRunsComparison {
        run_a: a.to_string(),
        run_b: b.to_string(),
        template_a: ra[0].template_label(),
        template_b: rb[0].template_label(),
        judge_models: judge_models.into_iter().collect(),
        pairing: PAIRING,
        grounded_pairing: crate::core::grounded::GROUNDED_PAIRING,
        grounded: crate::core::grounded::compare_grounded(
            &ga,
            &gb,
            &crate::core::significance::TestSettings::default(),
        ),
        criteria: compare_outcomes(&paired_outcomes(&ra, &rb, &by_answer)),
        questions: question_pairs(&ra, &rb, &by_answer),
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

        // Per question: the answers the pairing picked, side by side.
        let qs = question_pairs(&ra, &rb, &by_answer);
        let ids: Vec<&str> = qs.iter().map(|q| q.question_id.as_str()).collect();
        assert_eq!(ids, ["q1", "q2", "q3", "q4", "q5", "q6"]);
        let side = |q: &QuestionComparison, b: bool| {
            let x = if b { q.b.as_ref() } else { q.a.as_ref() };
            x.map(|x| x.answer_id.clone())
        };
        assert_eq!(side(&qs[0], false).as_deref(), Some("a1"));
        assert_eq!(qs[0].differ, ["c"]);
        // q2: A's last judgement (f pass) against B's f fail; c pass against fail.
        assert_eq!(qs[1].differ, ["f", "c"]);
        assert_eq!(
            qs[1].a.as_ref().map(|x| x.labels.clone()),
            Some(vec![
                (String::from("f"), String::from("pass")),
                (String::from("c"), String::from("pass"))
            ])
        );
        // q4: B has no "c" label, so only "f" could differ, and it does not.
        assert!(qs[3].differ.is_empty());
        assert!(qs[4].b.is_none() && side(&qs[4], false).is_some());
        // q6: B's answer is shown though not judged.
        let b6 = qs[5].b.as_ref().expect("b6 shown");
        assert_eq!(
            (b6.answer_id.as_str(), b6.judge_model.clone()),
            ("b6", None)
        );
        assert!(b6.labels.is_empty() && qs[5].differ.is_empty());
    }

    /// A run's unjudged first answer gives way to a later judged one; with none judged
    /// the first stored answer is shown.
    #[test]
    fn the_first_judged_answer_wins_over_an_earlier_unjudged_one() {
        let a = [
            answer("A", "q1", "x1"),
            answer("A", "q1", "x2"),
            answer("A", "q1", "x3"),
            answer("A", "q2", "y1"),
            answer("A", "q2", "y2"),
        ];
        let js = vec![
            judged("x2", &[("f", "pass")]),
            judged("x3", &[("f", "fail")]),
        ];
        let by_answer = crate::core::answer::by_answer(&js);
        let ra: Vec<&AnswerRecord> = a.iter().collect();
        let qs = question_pairs(&ra, &[], &by_answer);
        let picked: Vec<&str> = qs
            .iter()
            .filter_map(|q| q.a.as_ref().map(|x| x.answer_id.as_str()))
            .collect();
        assert_eq!(picked, ["x2", "y1"]);
    }
}
