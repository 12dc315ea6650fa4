//! The stored record of one answer's grounding, how it reads, a run's means over the
//! defined values, and two runs compared metric by metric.

use serde::{Deserialize, Serialize};

use super::{CorrectnessWeights, GroundedDetail, GroundedScores, StatementVerdict};

/// One answer's stored grounded scores by one judge.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GroundedRecord {
    pub answer_id: String,
    pub run: String,
    pub question_id: String,
    /// The judge model (GGUF file, or the servers' model).
    pub judge_model: String,
    /// [`GroundingTemplates::sha256`] of the prompts used.
    pub templates_sha256: String,
    pub faithfulness: Option<f64>,
    pub context_precision: Option<f64>,
    pub context_recall: Option<f64>,
    pub answer_correctness: Option<f64>,
    pub statement_f1: Option<f64>,
    pub similarity: Option<f64>,
    /// Answer correctness's weights, `F,S`.
    pub weights: String,
    /// `metric: reason` for each undefined metric.
    pub undefined: Vec<String>,
    /// Every verdict, as [`GroundedDetail`]'s JSON.
    pub detail: String,
    /// Each judge request's prompt and raw reply, in order.
    pub prompts: Vec<String>,
    pub replies: Vec<String>,
    /// Base URL of the server that judged; when an answer's requests were spread over
    /// several servers, each once in the order first used, joined by `, ` (None: the
    /// local model).
    pub endpoint: Option<String>,
    /// The judge's time on this answer: its requests' wall times plus the embedding,
    /// ms (time queued behind other answers' requests is not counted).
    pub judge_ms: f64,
    pub created_at: String,
    /// Each judge request's wall time, ms, in order.
    #[serde(default)]
    pub request_ms: Vec<f64>,
    /// Each judge request's server, in order (empty: the local model).
    #[serde(default)]
    pub request_endpoints: Vec<String>,
}

impl GroundedRecord {
    /// The verdicts behind the scores (empty when the stored JSON does not parse).
    pub fn detail(&self) -> GroundedDetail {
        serde_json::from_str(&self.detail).unwrap_or_default()
    }

    /// This record with `s` as its scores, made with `weights`: one place sets the
    /// score fields, whether the verdicts are new or stored ones scored again.
    pub fn with_scores(self, s: GroundedScores, weights: CorrectnessWeights) -> Self {
        GroundedRecord {
            faithfulness: s.faithfulness,
            context_precision: s.context_precision,
            context_recall: s.context_recall,
            answer_correctness: s.answer_correctness,
            statement_f1: s.statement_f1,
            similarity: s.similarity,
            weights: weights.to_string(),
            undefined: s.undefined,
            ..self
        }
    }
}

/// The four grounded scores of a record on one line, an undefined one said so.
pub fn scores_line(r: &GroundedRecord) -> String {
    let f = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |x| format!("{x:.3}"));
    format!(
        "faithfulness {} · context precision {} · context recall {} · answer correctness {}",
        f(r.faithfulness),
        f(r.context_precision),
        f(r.context_recall),
        f(r.answer_correctness),
    )
}

/// One record as lines a reader follows: the scores (undefined ones with their
/// reason), then each answer statement with its verdict and supporting context, each
/// context's usefulness, each reference statement with its verdict and whether the
/// answer holds it. Untrusted text (statements are model output): a front sanitises
/// the lines before a terminal shows them.
pub fn explain_lines(r: &GroundedRecord) -> Vec<String> {
    let d = r.detail();
    let f = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |x| format!("{x:.3}"));
    let mut out = vec![
        format!(
            "answer {} (run {}), judged by {}",
            r.answer_id, r.run, r.judge_model
        ),
        format!(
            "{} (F1 {}, similarity {}, weights {})",
            scores_line(r),
            f(r.statement_f1),
            f(r.similarity),
            r.weights
        ),
    ];
    out.extend(r.undefined.iter().map(|u| format!("  undefined: {u}")));
    let mark = |b: bool| if b { "✓" } else { "✗" };
    let verdict = |v: &StatementVerdict| match &v.source {
        Some(src) => format!("{} [{src}]", mark(v.supported)),
        None => mark(v.supported).to_string(),
    };
    if !d.answer_statements.is_empty() {
        out.push(
            "answer statements (supported by the prompt's contexts; in the reference):".into(),
        );
        for (i, v) in d.answer_statements.iter().enumerate() {
            let in_ref = d
                .answer_in_reference
                .get(i)
                .map_or(String::new(), |b| format!(" · reference {}", mark(*b)));
            out.push(format!("  {}. {} {}{in_ref}", i + 1, verdict(v), v.text));
        }
    }
    if !d.context_useful.is_empty() {
        out.push("contexts in prompt order (useful for the reference answer):".into());
        for (id, u) in d.contexts.iter().zip(&d.context_useful) {
            out.push(format!("  {} {id}", mark(*u)));
        }
    }
    if !d.reference_statements.is_empty() {
        out.push("reference statements (attributable to the contexts; in the answer):".into());
        for (i, v) in d.reference_statements.iter().enumerate() {
            let in_answer = d
                .reference_in_answer
                .get(i)
                .map_or(String::new(), |b| format!(" · answer {}", mark(*b)));
            out.push(format!("  {}. {} {}{in_answer}", i + 1, verdict(v), v.text));
        }
    }
    out
}

/// The mean of a metric over the defined values, and how many were undefined.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct DefinedMean {
    pub mean: Option<f64>,
    pub defined: usize,
    pub undefined: usize,
}

impl DefinedMean {
    pub fn of(values: impl IntoIterator<Item = Option<f64>>) -> Self {
        let (mut sum, mut defined, mut undefined) = (0.0, 0usize, 0usize);
        for v in values {
            match v {
                Some(x) => {
                    sum += x;
                    defined += 1;
                }
                None => undefined += 1,
            }
        }
        Self {
            mean: (defined > 0).then(|| sum / defined as f64),
            defined,
            undefined,
        }
    }

    /// `0.712 (12 undefined)`, or `-` with nothing defined.
    pub fn cell(&self) -> String {
        let m = self
            .mean
            .map_or_else(|| "-".to_string(), |m| format!("{m:.3}"));
        if self.undefined > 0 {
            format!("{m} ({} undefined)", self.undefined)
        } else {
            m
        }
    }
}

/// A run's grounded means by one judge.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroundedSummary {
    #[serde(skip)]
    pub run: String,
    #[serde(skip)]
    pub judge_model: String,
    pub answers: usize,
    pub faithfulness: DefinedMean,
    pub context_precision: DefinedMean,
    pub context_recall: DefinedMean,
    pub answer_correctness: DefinedMean,
}

/// Means per (run, judge), sorted by run then judge.
pub fn summarise(records: &[GroundedRecord]) -> Vec<GroundedSummary> {
    let mut groups: std::collections::BTreeMap<(String, String), Vec<&GroundedRecord>> =
        std::collections::BTreeMap::new();
    for r in records {
        groups
            .entry((r.run.clone(), r.judge_model.clone()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((run, judge_model), rs)| GroundedSummary {
            run,
            judge_model,
            answers: rs.len(),
            faithfulness: DefinedMean::of(rs.iter().map(|r| r.faithfulness)),
            context_precision: DefinedMean::of(rs.iter().map(|r| r.context_precision)),
            context_recall: DefinedMean::of(rs.iter().map(|r| r.context_recall)),
            answer_correctness: DefinedMean::of(rs.iter().map(|r| r.answer_correctness)),
        })
        .collect()
}

/// The four metrics by their report names.
pub const METRICS: [&str; 4] = [
    "faithfulness",
    "context_precision",
    "context_recall",
    "answer_correctness",
];

impl GroundedRecord {
    /// The value of the metric named `name` (one of [`METRICS`]).
    pub fn metric(&self, name: &str) -> Option<f64> {
        match name {
            "faithfulness" => self.faithfulness,
            "context_precision" => self.context_precision,
            "context_recall" => self.context_recall,
            "answer_correctness" => self.answer_correctness,
            _ => None,
        }
    }
}

/// Two runs compared on one grounded metric by one judge, over the questions where
/// both runs' answers have the metric defined.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GroundedComparison {
    pub judge_model: String,
    pub metric: &'static str,
    /// Questions answered by both runs and scored by the judge, where one run or both
    /// have the metric undefined (left out of the test).
    pub undefined: usize,
    /// The paired test (run A as baseline, B as candidate); None with no question.
    pub test: Option<crate::core::significance::PairedComparison>,
}

/// How [`compare_grounded`] pairs answers.
pub const GROUNDED_PAIRING: &str = "per run, question and judge the first stored answer with a grounded score by that judge; a question counts for a metric when both answers have it defined; the randomisation and t-test p-values Holm-adjusted over every (judge, metric) of the comparison";

/// Compare run A (`a`: each question's record) with run B on every grounded metric,
/// per judge: the paired differences B - A with a bootstrap CI, wins, ties and losses,
/// the sign-flip randomisation test and the paired t-test, Holm over the family.
pub fn compare_grounded(
    a: &[&GroundedRecord],
    b: &[&GroundedRecord],
    settings: &crate::core::significance::TestSettings,
) -> Vec<GroundedComparison> {
    use crate::core::significance::{adjust, bootstrap_means, compare_pair};
    use std::collections::{BTreeMap, BTreeSet};
    // (judge, question) -> the first record of that question by that judge.
    let index = |rs: &[&GroundedRecord]| {
        let mut m: BTreeMap<(String, String), GroundedRecord> = BTreeMap::new();
        for r in rs {
            m.entry((r.judge_model.clone(), r.question_id.clone()))
                .or_insert_with(|| (*r).clone());
        }
        m
    };
    let (ia, ib) = (index(a), index(b));
    let judges: BTreeSet<&String> = ia
        .keys()
        .map(|(j, _)| j)
        .filter(|j| ib.keys().any(|(k, _)| k == *j))
        .collect();
    let mut out = Vec::new();
    for judge in judges {
        for metric in METRICS {
            let (mut xa, mut xb, mut undefined) = (Vec::new(), Vec::new(), 0usize);
            for ((j, q), ra) in &ia {
                if j != judge {
                    continue;
                }
                let Some(rb) = ib.get(&(j.clone(), q.clone())) else {
                    continue;
                };
                match (ra.metric(metric), rb.metric(metric)) {
                    (Some(x), Some(y)) => {
                        xa.push(x);
                        xb.push(y);
                    }
                    _ => undefined += 1,
                }
            }
            let test = (!xa.is_empty()).then(|| {
                let boot = bootstrap_means(&[&xa, &xb], settings.resamples, settings.seed);
                compare_pair(&xa, &xb, (&boot[0], &boot[1]), settings)
            });
            out.push(GroundedComparison {
                judge_model: judge.clone(),
                metric,
                undefined,
                test,
            });
        }
    }
    let mut tested: Vec<crate::core::significance::PairedComparison> =
        out.iter().filter_map(|c| c.test.clone()).collect();
    adjust(&mut tested);
    let mut adjusted = tested.into_iter();
    for c in &mut out {
        if c.test.is_some() {
            c.test = adjusted.next();
        }
    }
    out
}
