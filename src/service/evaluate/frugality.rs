//! Frugality of stored runs: every RAG configuration against the same model
//! without retrieval, over the questions both answered, with the temperatures computed
//! across the compared configurations (`core::frugality` holds the formula).
//!
//! - Free-form answers: a configuration is a run (its k, method, alpha and model); the
//!   baseline is a `--no-retrieval` run of the same model. Accuracy is the judge's
//!   pass rate over every (judgement, criterion) label of the compared answers (the
//!   PubHealthBench paper's "Overall, all criteria pooled" row; with one judgement per
//!   answer it equals the mean of the per-criterion pass rates). Only answers with at
//!   least one judgement count, on both sides, so a question is compared when both
//!   runs answered it and the judge labelled both answers.
//! - MCQA: a configuration is one k > 0 of a run, the baseline is k = 0 of the same
//!   run (same model, same questions); accuracy is the share of correct answers.
//! - Cost: mean end-to-end latency per answer in seconds (retrieval + prompt
//!   processing + generation: `total_ms`). An MCQA run retrieves once per question for
//!   every k; that time is not part of the k = 0 answer's cost.

use std::collections::{BTreeMap, HashMap};

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::frugality::{FrugalityScores, Paired, Tally, Temperature, paired, score};
use crate::core::mcqa::McqaRecord;
use crate::service::answer::{AnswerRecord, JudgementRecord};

/// Given temperatures (`None`: computed across the configurations).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Temperatures {
    pub accuracy: Option<f64>,
    pub cost_s: Option<f64>,
}

/// What accuracy and cost mean in an answer report.
pub const ANSWER_ACCURACY: &str = "judge pass rate over every (judgement, criterion) label of the compared answers (criteria pooled); only judged answers count";
/// What accuracy means in an MCQA report.
pub const MCQA_ACCURACY: &str = "share of correct answers";
/// The cost measure of both reports.
pub const COST: &str =
    "mean end-to-end latency per answer in seconds (retrieval + prompt processing + generation)";

/// The settings that make a run one configuration.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunConfiguration {
    pub k: u32,
    pub method: String,
    pub alpha: f64,
    pub no_retrieval: bool,
    pub model_file: String,
    #[serde(skip)]
    pub model_sha256: String,
}

impl RunConfiguration {
    fn of(a: &AnswerRecord) -> Self {
        Self {
            k: a.k,
            method: a.method.clone(),
            alpha: a.alpha,
            no_retrieval: a.no_retrieval,
            model_file: a.model_file.clone(),
            model_sha256: a.model_sha256.clone(),
        }
    }

    /// The same model: by checksum when both have one, else by file name.
    fn same_model(&self, other: &Self) -> bool {
        if self.model_sha256.is_empty() || other.model_sha256.is_empty() {
            self.model_file == other.model_file
        } else {
            self.model_sha256 == other.model_sha256
        }
    }
}

/// The one configuration of a run's answers; an error names what differs.
fn configuration(run: &str, answers: &[&AnswerRecord]) -> Result<RunConfiguration, String> {
    let Some(first) = answers.first() else {
        return Err(format!("run `{run}` has no answers"));
    };
    let c = RunConfiguration::of(first);
    if let Some(other) = answers
        .iter()
        .map(|a| RunConfiguration::of(a))
        .find(|o| *o != c)
    {
        return Err(format!(
            "run `{run}` mixes configurations (k={} {} a={} {} and k={} {} a={} {})",
            c.k,
            c.method,
            c.alpha,
            c.model_file,
            other.k,
            other.method,
            other.alpha,
            other.model_file
        ));
    }
    Ok(c)
}

/// Per question: the pass labels of its judged answers and their latency.
pub fn answer_tallies(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> BTreeMap<String, Tally> {
    let mut out: BTreeMap<String, Tally> = BTreeMap::new();
    for a in answers {
        let Some(js) = by_answer.get(a.answer_id.as_str()) else {
            continue;
        };
        let mut t = Tally {
            latency_s: a.total_ms / 1e3,
            answers: 1,
            ..Tally::default()
        };
        for l in js.iter().flat_map(|j| &j.labels) {
            t.labels += 1;
            t.pass += usize::from(l == "pass");
        }
        if t.labels > 0 {
            out.entry(a.question_id.clone()).or_default().add(t);
        }
    }
    out
}

/// One compared run in the answer report.
#[derive(Debug, Clone, Serialize)]
pub struct ComparedRun {
    pub run: String,
    #[serde(flatten)]
    pub configuration: RunConfiguration,
    #[serde(flatten)]
    pub score: crate::core::frugality::FrugalityScore,
}

/// The frugality section of `report answers --baseline`.
#[derive(Debug, Clone, Serialize)]
pub struct AnswerFrugality {
    pub baseline: String,
    pub model_file: String,
    pub accuracy: &'static str,
    pub cost: &'static str,
    pub formula: &'static str,
    pub t_accuracy: Temperature,
    pub t_latency_s: Temperature,
    pub configurations: Vec<ComparedRun>,
    /// Runs not compared, with the reason.
    pub skipped: Vec<Skipped>,
}

/// A run left out of the comparison.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub run: String,
    pub reason: String,
}

pub const FORMULA: &str = "A = sign(dA)(exp(|dA|/tA) - 1), C = exp(dC/tC) - 1, F = tanh(A - C); tA, tC: sample standard deviations (n - 1) of dA and dC across the compared configurations unless given";

/// Run `run` paired with the baseline (its name, configuration and tallies), or why
/// the two cannot be compared: another model, no retrieval, no judged question in
/// common.
fn pair_with_baseline(
    run: &str,
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
    (base, base_conf, base_tally): (&str, &RunConfiguration, &BTreeMap<String, Tally>),
) -> Result<(RunConfiguration, Paired), String> {
    let c = configuration(run, answers)?;
    if !c.same_model(base_conf) {
        return Err(format!(
            "run `{run}` was answered by {}, the baseline `{base}` by {}: frugality compares the same model with and without retrieval",
            c.model_file, base_conf.model_file
        ));
    }
    if c.no_retrieval {
        return Err(format!("run `{run}` has no retrieval either"));
    }
    match paired(&answer_tallies(answers, by_answer), base_tally) {
        Some(p) => Ok((c, p)),
        None => Err(format!(
            "run `{run}` and the baseline `{base}` share no judged question (run `raglab judge`)"
        )),
    }
}

/// Compare every run of `runs` (run -> its answers) with the baseline `base`; `only`
/// names the one run the user asked for, which must be comparable.
pub fn answer_frugality(
    runs: &BTreeMap<&str, Vec<&AnswerRecord>>,
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
    base: &str,
    only: Option<&str>,
    temps: Temperatures,
) -> Result<AnswerFrugality> {
    let Some(base_answers) = runs.get(base) else {
        bail!("baseline run `{base}` has no answers");
    };
    let base_conf = configuration(base, base_answers).map_err(anyhow::Error::msg)?;
    if !base_conf.no_retrieval {
        bail!(
            "baseline run `{base}` was answered with retrieval (k={} {}); the baseline is the same model without retrieval: `raglab generate --no-retrieval --run {base}`",
            base_conf.k,
            base_conf.method
        );
    }
    let base_tally = answer_tallies(base_answers, by_answer);
    let mut compared: Vec<(String, RunConfiguration, Paired)> = Vec::new();
    let mut skipped = Vec::new();
    for (run, answers) in runs {
        if *run == base {
            continue;
        }
        let baseline = (base, &base_conf, &base_tally);
        match pair_with_baseline(run, answers, by_answer, baseline) {
            Ok((c, p)) => compared.push(((*run).to_string(), c, p)),
            Err(reason) if only == Some(*run) => bail!("{reason}"),
            Err(reason) => skipped.push(Skipped {
                run: (*run).to_string(),
                reason,
            }),
        }
    }
    if compared.is_empty() {
        bail!(
            "no run to compare with the baseline `{base}` ({}): {}",
            base_conf.model_file,
            if skipped.is_empty() {
                "generate a run with retrieval and the same model, then judge it".to_string()
            } else {
                skipped
                    .iter()
                    .map(|s| s.reason.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            }
        );
    }
    let pairs: Vec<Paired> = compared.iter().map(|(_, _, p)| *p).collect();
    let FrugalityScores {
        t_accuracy,
        t_latency_s,
        configurations,
    } = score(&pairs, temps.accuracy, temps.cost_s);
    Ok(AnswerFrugality {
        baseline: base.to_string(),
        model_file: base_conf.model_file,
        accuracy: ANSWER_ACCURACY,
        cost: COST,
        formula: FORMULA,
        t_accuracy,
        t_latency_s,
        configurations: compared
            .into_iter()
            .zip(configurations)
            .map(|((run, configuration, _), score)| ComparedRun {
                run,
                configuration,
                score,
            })
            .collect(),
        skipped,
    })
}

/// One k of an MCQA run against its k = 0.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ComparedK {
    pub k: u32,
    #[serde(flatten)]
    pub score: crate::core::frugality::FrugalityScore,
}

/// The frugality section of an MCQA report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct McqaFrugality {
    pub baseline: &'static str,
    pub accuracy: &'static str,
    pub cost: &'static str,
    pub formula: &'static str,
    pub t_accuracy: Temperature,
    pub t_latency_s: Temperature,
    pub configurations: Vec<ComparedK>,
}

/// Latency of one MCQA answer in seconds: k = 0 needs no retrieval, so the shared
/// retrieval time stored with it (by releases that added it) is not its cost.
fn mcqa_latency_s(r: &McqaRecord) -> f64 {
    let ms = if r.k == 0 {
        r.total_ms - r.retrieval_ms
    } else {
        r.total_ms
    };
    ms / 1e3
}

/// Each k > 0 of one run's records against its k = 0 (`None` without k = 0 or any
/// k > 0 sharing a question with it).
pub fn mcqa_frugality(records: &[McqaRecord], temps: Temperatures) -> Option<McqaFrugality> {
    let mut by_k: BTreeMap<u32, BTreeMap<String, Tally>> = BTreeMap::new();
    for r in records {
        by_k.entry(r.k)
            .or_default()
            .entry(r.question_id.clone())
            .or_default()
            .add(Tally {
                pass: usize::from(r.correct),
                labels: 1,
                latency_s: mcqa_latency_s(r),
                answers: 1,
            });
    }
    let base = by_k.get(&0)?;
    let compared: Vec<(u32, Paired)> = by_k
        .iter()
        .filter(|(k, _)| **k > 0)
        .filter_map(|(k, t)| Some((*k, paired(t, base)?)))
        .collect();
    if compared.is_empty() {
        return None;
    }
    let pairs: Vec<Paired> = compared.iter().map(|(_, p)| *p).collect();
    let s = score(&pairs, temps.accuracy, temps.cost_s);
    Some(McqaFrugality {
        baseline: "k = 0 (no retrieval) of the same run",
        accuracy: MCQA_ACCURACY,
        cost: COST,
        formula: FORMULA,
        t_accuracy: s.t_accuracy,
        t_latency_s: s.t_latency_s,
        configurations: compared
            .into_iter()
            .zip(s.configurations)
            .map(|((k, _), score)| ComparedK { k, score })
            .collect(),
    })
}
