//! The verdicts behind one answer's grounded scores, and the scores they give.

use serde::{Deserialize, Serialize};

use super::{
    CorrectnessWeights, answer_correctness, context_precision, context_recall, faithfulness,
    statement_f1,
};

/// A statement and its verdict: supported by (attributable to) the passages, and the
/// passage that supports it (a context id, or `reference` / `answer` when the passage
/// was one of the two texts). An unsupported statement has no source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatementVerdict {
    pub text: String,
    pub supported: bool,
    pub source: Option<String>,
}

/// Every verdict behind one answer's grounded scores.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroundedDetail {
    /// Ids of the contexts the prompt held, in prompt order (those still in the corpus).
    pub contexts: Vec<String>,
    /// The answer's statements, each judged against the contexts (faithfulness).
    pub answer_statements: Vec<StatementVerdict>,
    /// Whether each context was useful for the reference answer (context precision).
    pub context_useful: Vec<bool>,
    /// The reference's statements, each judged against the contexts (context recall).
    pub reference_statements: Vec<StatementVerdict>,
    /// Per answer statement: supported by the reference answer (TP) or not (FP).
    pub answer_in_reference: Vec<bool>,
    /// Per reference statement: present in the answer, or not (FN).
    pub reference_in_answer: Vec<bool>,
    /// Ids of the prompt's contexts no longer in the corpus: the judge could not read
    /// them, so every metric that reads the contexts is undefined.
    #[serde(default)]
    pub contexts_missing: Vec<String>,
}

/// One answer's grounded scores, None where undefined (`undefined` says why).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroundedScores {
    pub faithfulness: Option<f64>,
    pub context_precision: Option<f64>,
    pub context_recall: Option<f64>,
    pub answer_correctness: Option<f64>,
    pub statement_f1: Option<f64>,
    pub similarity: Option<f64>,
    /// `metric: reason` for each undefined metric.
    pub undefined: Vec<String>,
}

/// Why a metric has no value.
pub const NO_REFERENCE: &str = "no reference answer";
pub const NO_CONTEXT: &str = "no context in the prompt";
pub const NO_ANSWER_STATEMENT: &str = "no statement in the answer";
pub const NO_REFERENCE_STATEMENT: &str = "no statement in the reference";

impl GroundedDetail {
    /// The scores these verdicts give; `has_reference` whether the answer had a
    /// reference answer, `similarity` the cosine of the two texts' embeddings.
    pub fn scores(
        &self,
        has_reference: bool,
        similarity: Option<f64>,
        w: CorrectnessWeights,
    ) -> GroundedScores {
        let mut why: Vec<String> = Vec::new();
        let mut undefined = |metric: &str, reason: &str| why.push(format!("{metric}: {reason}"));
        // A context the judge could not read (gone from the corpus) leaves every metric
        // that reads the contexts unknown, not scored on the rest.
        let gone = self.contexts_gone();
        let context_reason = match &gone {
            Some(g) => Some(g.as_str()),
            None if self.contexts.is_empty() => Some(NO_CONTEXT),
            None => None,
        };
        let supported: Vec<bool> = self.answer_statements.iter().map(|v| v.supported).collect();
        let attributed: Vec<bool> = self
            .reference_statements
            .iter()
            .map(|v| v.supported)
            .collect();
        let faithful = match (context_reason, faithfulness(&supported)) {
            (Some(r), _) => {
                undefined("faithfulness", r);
                None
            }
            (None, None) => {
                undefined("faithfulness", NO_ANSWER_STATEMENT);
                None
            }
            (None, v) => v,
        };
        let (precision, recall) = match (has_reference, context_reason) {
            (false, _) => {
                undefined("context precision", NO_REFERENCE);
                undefined("context recall", NO_REFERENCE);
                (None, None)
            }
            (true, Some(r)) => {
                undefined("context precision", r);
                undefined("context recall", r);
                (None, None)
            }
            (true, None) => {
                let recall = context_recall(&attributed);
                if recall.is_none() {
                    undefined("context recall", NO_REFERENCE_STATEMENT);
                }
                (context_precision(&self.context_useful), recall)
            }
        };
        let (f1, correctness) = if has_reference {
            let f1 = self.statement_f1();
            let correctness = answer_correctness(f1, similarity, w);
            if correctness.is_none() {
                undefined(
                    "answer correctness",
                    "no embedding similarity (an empty embedding)",
                );
            }
            (Some(f1), correctness)
        } else {
            undefined("answer correctness", NO_REFERENCE);
            (None, None)
        };
        GroundedScores {
            faithfulness: faithful,
            context_precision: precision,
            context_recall: recall,
            answer_correctness: correctness,
            statement_f1: f1,
            similarity: if has_reference { similarity } else { None },
            undefined: why,
        }
    }

    /// Why the contexts cannot be read, when some are gone from the corpus: how many
    /// and which, the reason given for every metric that reads them.
    fn contexts_gone(&self) -> Option<String> {
        (!self.contexts_missing.is_empty()).then(|| {
            format!(
                "{} of the prompt's contexts no longer in the corpus ({})",
                self.contexts_missing.len(),
                self.contexts_missing.join(", ")
            )
        })
    }

    /// Answer correctness's statement F1. TP and FP come from the answer's statements
    /// judged against the reference's text, and only when the reference has
    /// statements (else each is an FP); FN from the reference's statements judged
    /// against the answer.
    fn statement_f1(&self) -> f64 {
        let (answer, reference) = (
            self.answer_statements.len(),
            self.reference_statements.len(),
        );
        let tp = if reference == 0 {
            0
        } else {
            self.answer_in_reference.iter().filter(|v| **v).count()
        };
        let fn_ = self.reference_in_answer.iter().filter(|v| !**v).count();
        statement_f1(answer, reference, tp, answer - tp, fn_)
    }
}
