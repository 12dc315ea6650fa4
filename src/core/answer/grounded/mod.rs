//! Grounded answer metrics, the RAGAS family (Es et al. 2024; ragas 0.4.3's scoring
//! code), judged statement by statement so a reader can see why each score is what it
//! is.
//!
//! An answer and its reference answer are split into self-contained statements by the
//! judge model; the judge then gives a verdict per statement or per context, each reply
//! held to a fixed JSON shape by a grammar (a local model) or a JSON schema (a model
//! server), so every reply parses. The metrics:
//! - **faithfulness** = answer statements supported by the contexts that were in the
//!   prompt / answer statements (each verdict names the passage that supports it);
//! - **context precision** = sum over ranks k of (precision@k x v_k) / useful
//!   contexts, v_k = 1 when the k-th context of the prompt was useful for the
//!   reference answer; 0 when none was;
//! - **context recall** = reference statements attributable to the contexts /
//!   reference statements;
//! - **answer correctness** = w_f x F1 + w_s x cosine(embed(answer),
//!   embed(reference)), divided by w_f + w_s (ragas' `np.average`), weights 0.75 and
//!   0.25 by default; F1 over TP (answer statements the reference supports), FP (answer
//!   statements it does not) and FN (reference statements the answer does not hold),
//!   with ragas' conventions: a precision or recall with an empty denominator is 0, an
//!   F1 with both 0 is 0, and an F1 with no statement on either side is 1.
//!
//! Undefined is never a silent 0 or 1: faithfulness with no answer statement, context
//! recall with no reference statement, every metric that needs a reference answer when
//! there is none, and every metric that needs contexts when the prompt held none (ragas
//! scores that last case 0; an answer given without retrieval has no context to be
//! precise or faithful about). Each undefined value carries its reason, and a run's
//! mean is taken over the defined values with the undefined count beside it.
//!
//! [`Grounding`] is the whole procedure for one answer as a sequence of judge requests,
//! pure: a back end only sends each request's prompt under its reply shape and hands
//! the reply back, so a local model and a pool of servers run the same steps.

mod detail;
mod procedure;
mod record;
mod reply;

use serde::{Deserialize, Serialize};

pub use detail::{
    GroundedDetail, GroundedScores, NO_ANSWER_STATEMENT, NO_CONTEXT, NO_REFERENCE,
    NO_REFERENCE_STATEMENT, StatementVerdict,
};
pub use procedure::{Grounding, GroundingInput, GroundingTemplates, Premise};
pub use record::{
    DefinedMean, GROUNDED_PAIRING, GroundedComparison, GroundedRecord, GroundedSummary, METRICS,
    compare_grounded, explain_lines, scores_line, summarise,
};
pub use reply::{JudgeReply, JudgeRequest, ReplyError, Shape, Step};

/// At most this many statements are taken from one text: the reply's grammar stops
/// there, so a reply always fits its token limit.
pub const MAX_STATEMENTS: usize = 8;

/// The weights of answer correctness: statement F1 and embedding similarity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CorrectnessWeights {
    pub factuality: f64,
    pub similarity: f64,
}

impl Default for CorrectnessWeights {
    /// ragas' defaults: 0.75 and 0.25.
    fn default() -> Self {
        Self {
            factuality: 0.75,
            similarity: 0.25,
        }
    }
}

impl std::str::FromStr for CorrectnessWeights {
    type Err = String;

    /// `F,S`, both finite and at least 0, not both 0 (ragas' checks).
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || format!("weights `{s}`: expected two numbers `F,S` (e.g. 0.75,0.25)");
        let (f, w) = s.split_once(',').ok_or_else(bad)?;
        let f: f64 = f.trim().parse().map_err(|_| bad())?;
        let w: f64 = w.trim().parse().map_err(|_| bad())?;
        if !(f.is_finite() && w.is_finite()) || f < 0.0 || w < 0.0 {
            return Err(format!("weights `{s}`: each must be a number >= 0"));
        }
        if f == 0.0 && w == 0.0 {
            return Err(format!("weights `{s}`: at least one must be above 0"));
        }
        Ok(Self {
            factuality: f,
            similarity: w,
        })
    }
}

impl std::fmt::Display for CorrectnessWeights {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{},{}", self.factuality, self.similarity)
    }
}

/// Supported statements / statements; None with no statement.
pub fn faithfulness(supported: &[bool]) -> Option<f64> {
    share(supported)
}

/// Attributed reference statements / reference statements; None with none.
pub fn context_recall(attributed: &[bool]) -> Option<f64> {
    share(attributed)
}

fn share(verdicts: &[bool]) -> Option<f64> {
    (!verdicts.is_empty())
        .then(|| verdicts.iter().filter(|v| **v).count() as f64 / verdicts.len() as f64)
}

/// Average precision of the useful contexts, in prompt order: sum over ranks k of
/// (useful among the first k / k) x v_k, over the number of useful contexts; 0 when
/// none is useful, None with no context.
pub fn context_precision(useful: &[bool]) -> Option<f64> {
    if useful.is_empty() {
        return None;
    }
    let mut hits = 0usize;
    let mut sum = 0.0;
    for (i, u) in useful.iter().enumerate() {
        if *u {
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    Some(if hits == 0 { 0.0 } else { sum / hits as f64 })
}

/// ragas' F-beta over statement counts: precision (recall) 0 when its denominator is
/// 0, and 0 when both are 0.
pub fn f_beta(tp: usize, fp: usize, fn_: usize, beta: f64) -> f64 {
    let ratio = |a: usize, b: usize| {
        if a + b == 0 {
            0.0
        } else {
            a as f64 / (a + b) as f64
        }
    };
    let (p, r) = (ratio(tp, fp), ratio(tp, fn_));
    if p == 0.0 && r == 0.0 {
        return 0.0;
    }
    let b2 = beta * beta;
    (1.0 + b2) * p * r / (b2 * p + r)
}

/// The statement F1 of answer correctness over `answer` and `reference` statements:
/// 1 when neither text has a statement (ragas skips its classification then), else
/// [`f_beta`] with beta 1 over the TP, FP and FN counts.
pub fn statement_f1(answer: usize, reference: usize, tp: usize, fp: usize, fn_: usize) -> f64 {
    if answer == 0 && reference == 0 {
        1.0
    } else {
        f_beta(tp, fp, fn_, 1.0)
    }
}

/// Cosine similarity of two embeddings; None when either is all zeros (or their
/// lengths differ).
pub fn cosine(a: &[f32], b: &[f32]) -> Option<f64> {
    if a.len() != b.len() {
        return None;
    }
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    let (na, nb) = (norm(a), norm(b));
    (na > 0.0 && nb > 0.0).then(|| dot / (na * nb))
}

/// Answer correctness: the weighted average of the statement F1 and the similarity;
/// None when the similarity has weight and is missing (never a silent 0). The
/// similarity is not needed when its weight is 0.
pub fn answer_correctness(f1: f64, similarity: Option<f64>, w: CorrectnessWeights) -> Option<f64> {
    let s = if w.similarity == 0.0 {
        0.0
    } else {
        similarity?
    };
    Some((w.factuality * f1 + w.similarity * s) / (w.factuality + w.similarity))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::template::{Template, TemplateKind};

    fn templates() -> GroundingTemplates {
        GroundingTemplates {
            statements: Template::shipped(TemplateKind::GroundedStatements),
            verify: Template::shipped(TemplateKind::GroundedVerify),
            useful: Template::shipped(TemplateKind::GroundedUseful),
        }
    }

    fn ctx(id: &str) -> Premise {
        Premise {
            id: id.into(),
            heading: format!("Guide > {id}"),
            text: format!("text of {id}"),
        }
    }

    #[test]
    fn hand_computed_scores() {
        // Useful at ranks 1 and 3 of 3: (1/1 + 2/3) / 2.
        assert!(
            (context_precision(&[true, false, true]).expect("test value") - 5.0 / 6.0).abs()
                < 1e-12
        );
        assert_eq!(context_precision(&[false, false]), Some(0.0));
        assert_eq!(context_precision(&[]), None);
        assert_eq!(faithfulness(&[]), None);
        assert_eq!(faithfulness(&[true, false, false, true]), Some(0.5));
        // TP 3, FP 1, FN 2: precision 3/4, recall 3/5, F1 = 2pr/(p+r) = 2/3.
        assert!((f_beta(3, 1, 2, 1.0) - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!(f_beta(0, 2, 0, 1.0), 0.0);
        assert_eq!(statement_f1(0, 0, 0, 0, 0), 1.0);
        // Statements on both sides but no TP: ragas' F-beta gives 0, not 1.
        assert_eq!(statement_f1(2, 3, 0, 0, 0), 0.0);
        assert!(
            (cosine(&[1.0, 0.0], &[1.0, 1.0]).expect("test value") - 0.5f64.sqrt()).abs() < 1e-7
        );
        assert_eq!(cosine(&[0.0, 0.0], &[1.0, 1.0]), None);
        let w = CorrectnessWeights::default();
        assert!((answer_correctness(0.5, Some(1.0), w).expect("defined") - 0.625).abs() < 1e-12);
        assert_eq!(
            answer_correctness(0.5, None, w),
            None,
            "a missing similarity is not 0"
        );
        let f1_only: CorrectnessWeights = "1,0".parse().expect("test value");
        assert_eq!(answer_correctness(0.5, None, f1_only), Some(0.5));
        assert!("0,0".parse::<CorrectnessWeights>().is_err());
        assert!("-1,2".parse::<CorrectnessWeights>().is_err());
        assert!("0.75".parse::<CorrectnessWeights>().is_err());
    }

    #[test]
    fn a_full_grounding_runs_its_seven_steps_and_scores_them() {
        let input = GroundingInput {
            question: "How is flu spread?".into(),
            answer: "Flu spreads by droplets. Wash hands.".into(),
            reference: Some("Flu spreads mainly by droplets.".into()),
            contexts: vec![ctx("c1"), ctx("c2")],
            contexts_missing: Vec::new(),
        };
        let mut g = Grounding::new(input, templates());
        let replies = [
            (
                Step::AnswerStatements,
                r#"{"statements": ["Flu spreads by droplets.", "Wash hands."]}"#,
            ),
            (
                Step::Faithfulness,
                // The unsupported verdict names a passage: dropped, it supports nothing.
                r#"{"verdicts": [{"supported": true, "source": 2}, {"supported": false, "source": 1}]}"#,
            ),
            (
                Step::ReferenceStatements,
                r#"{"statements": ["Flu spreads mainly by droplets."]}"#,
            ),
            (
                Step::ContextRecall,
                r#"{"verdicts": [{"supported": true, "source": 1}]}"#,
            ),
            (Step::ContextPrecision, r#"{"useful": [false, true]}"#),
            (
                Step::AnswerInReference,
                r#"{"verdicts": [{"supported": true, "source": 1}, {"supported": false, "source": 0}]}"#,
            ),
            (
                Step::ReferenceInAnswer,
                r#"{"verdicts": [{"supported": true, "source": 1}]}"#,
            ),
        ];
        for (step, raw) in replies {
            let req = g.next_request().expect("a request");
            assert_eq!(req.step, step);
            g.answer(raw).expect("test value");
        }
        assert!(g.next_request().is_none());
        assert_eq!(g.prompts.len(), 7);
        let d = g.detail().clone();
        assert_eq!(d.answer_statements[0].source.as_deref(), Some("c2"));
        assert_eq!(d.answer_statements[1].source, None);
        assert_eq!(d.reference_statements[0].source.as_deref(), Some("c1"));
        let s = d.scores(true, Some(0.8), CorrectnessWeights::default());
        assert_eq!(s.faithfulness, Some(0.5));
        assert_eq!(s.context_recall, Some(1.0));
        // Useful only at rank 2: (1/2) / 1.
        assert_eq!(s.context_precision, Some(0.5));
        // TP 1, FP 1, FN 0: p 1/2, r 1, F1 2/3; 0.75 x 2/3 + 0.25 x 0.8.
        assert!((s.answer_correctness.expect("test value") - (0.5 + 0.2)).abs() < 1e-12);
        assert!(s.undefined.is_empty());
    }

    #[test]
    fn no_reference_and_no_context_skip_their_steps_and_say_why() {
        let input = GroundingInput {
            question: "q".into(),
            answer: "An answer.".into(),
            reference: None,
            contexts: Vec::new(),
            contexts_missing: Vec::new(),
        };
        let mut g = Grounding::new(input, templates());
        assert_eq!(
            g.next_request().expect("test value").step,
            Step::AnswerStatements
        );
        g.answer(r#"{"statements": ["An answer."]}"#)
            .expect("test value");
        assert!(g.next_request().is_none(), "nothing else can be judged");
        let s = g
            .detail()
            .scores(false, None, CorrectnessWeights::default());
        assert_eq!(
            (
                s.faithfulness,
                s.context_precision,
                s.context_recall,
                s.answer_correctness
            ),
            (None, None, None, None)
        );
        assert!(s.undefined.contains(&format!("faithfulness: {NO_CONTEXT}")));
        assert!(
            s.undefined
                .contains(&format!("answer correctness: {NO_REFERENCE}"))
        );
    }

    #[test]
    fn a_context_gone_from_the_corpus_leaves_the_context_metrics_undefined() {
        let input = GroundingInput {
            question: "q".into(),
            answer: "An answer.".into(),
            reference: Some("A reference.".into()),
            contexts: vec![ctx("c1")],
            contexts_missing: vec!["gone".into()],
        };
        let mut g = Grounding::new(input, templates());
        let mut steps = Vec::new();
        while let Some(r) = g.next_request() {
            steps.push(r.step);
            let raw = match r.shape {
                Shape::Statements => r#"{"statements": ["One."]}"#.to_string(),
                Shape::Verdicts { .. } => {
                    r#"{"verdicts": [{"supported": true, "source": 1}]}"#.into()
                }
                Shape::Useful { .. } => unreachable!("no context step"),
            };
            g.answer(&raw).expect("parses");
        }
        assert_eq!(
            steps,
            [
                Step::AnswerStatements,
                Step::ReferenceStatements,
                Step::AnswerInReference,
                Step::ReferenceInAnswer
            ]
        );
        let s = g
            .detail()
            .scores(true, Some(1.0), CorrectnessWeights::default());
        assert_eq!(
            (s.faithfulness, s.context_precision, s.context_recall),
            (None, None, None)
        );
        assert!(
            s.undefined.iter().all(|u| !u.starts_with("faithfulness")
                || u.contains("1 of the prompt's contexts no longer in the corpus (gone)")),
            "{:?}",
            s.undefined
        );
        assert_eq!(s.answer_correctness, Some(1.0));
    }

    #[test]
    fn replies_off_their_shape_are_refused() {
        let v = Shape::Verdicts { n: 2, passages: 3 };
        assert!(
            v.parse(r#"{"verdicts": [{"supported": true, "source": 1}]}"#)
                .is_err()
        );
        assert!(v.parse(r#"{"verdicts": [{"supported": true, "source": 4}, {"supported": true, "source": 0}]}"#).is_err());
        assert!(v.parse("yes").is_err());
        assert!(
            Shape::Useful { n: 1 }
                .parse(r#"{"useful": [true, false]}"#)
                .is_err()
        );
        let many = format!(
            r#"{{"statements": [{}]}}"#,
            ["\"s\""; MAX_STATEMENTS + 1].join(", ")
        );
        assert!(Shape::Statements.parse(&many).is_err());
        assert_eq!(
            Shape::Statements
                .parse(r#"{"statements": [" a ", "", "...", " - "]}"#)
                .expect("test value"),
            JudgeReply::Statements(vec!["a".into()])
        );
    }

    #[test]
    fn a_statements_reply_cut_off_keeps_its_complete_statements() {
        let cut = r#"{"statements": ["Flu spreads by droplets.", "Wash your hands of"#;
        assert_eq!(
            Shape::Statements.parse(cut).expect("salvaged"),
            JudgeReply::Statements(vec!["Flu spreads by droplets.".into()])
        );
        assert_eq!(
            Shape::Statements
                .parse(r#"{"statements": ["Flu sp"#)
                .expect("salvaged"),
            JudgeReply::Statements(Vec::new())
        );
        assert!(Shape::Statements.parse("no json").is_err());
        assert!(
            Shape::Useful { n: 1 }.parse(r#"{"useful": [tr"#).is_err(),
            "only statements are salvaged"
        );
    }

    #[test]
    fn grammars_state_the_exact_shape() {
        let g = Shape::Verdicts { n: 2, passages: 1 }.grammar();
        assert!(
            g.contains("root ::= \"{\\\"verdicts\\\": [\" v \", \" v \"]}\""),
            "{g}"
        );
        assert!(g.contains("src ::= \"0\" | \"1\""), "{g}");
        let s = Shape::Statements.grammar();
        assert!(s.contains("item ::= \"\\\"\" char+ \"\\\"\""), "{s}");
        assert!(s.contains("{0,7}"), "{s}");
    }

    #[test]
    fn runs_are_compared_per_question_over_defined_values() {
        let rec = |run: &str, q: &str, f: Option<f64>| GroundedRecord {
            run: run.into(),
            question_id: q.into(),
            judge_model: "j".into(),
            faithfulness: f,
            ..GroundedRecord::default()
        };
        let a = [
            rec("a", "q1", Some(0.5)),
            rec("a", "q2", Some(1.0)),
            rec("a", "q3", None),
        ];
        let b = [
            rec("b", "q1", Some(1.0)),
            rec("b", "q2", Some(1.0)),
            rec("b", "q3", Some(0.0)),
        ];
        let ra: Vec<&GroundedRecord> = a.iter().collect();
        let rb: Vec<&GroundedRecord> = b.iter().collect();
        let c = compare_grounded(
            &ra,
            &rb,
            &crate::core::significance::TestSettings::default(),
        );
        assert_eq!(c.len(), 4, "one row per metric of the one judge");
        let f = &c[0];
        assert_eq!((f.metric, f.undefined), ("faithfulness", 1));
        let t = f.test.as_ref().expect("two questions paired");
        // Differences 0.5 and 0: mean 0.25, one win, one tie.
        assert_eq!((t.queries, t.difference, t.record.wins), (2, 0.25, 1));
        assert!(
            c[1].test.is_none(),
            "context precision undefined everywhere"
        );
        assert_eq!(c[1].undefined, 3);
    }

    #[test]
    fn means_skip_undefined_values_and_count_them() {
        let m = DefinedMean::of([Some(1.0), None, Some(0.5), None]);
        assert_eq!((m.mean, m.defined, m.undefined), (Some(0.75), 2, 2));
        assert_eq!(m.cell(), "0.750 (2 undefined)");
        assert_eq!(DefinedMean::of([None]).cell(), "- (1 undefined)");
    }
}
