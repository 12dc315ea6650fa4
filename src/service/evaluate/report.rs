//! The answer report: per run, pass rates per criterion and target-rank bucket,
//! latency and tokens; and the frugality of every RAG run against a no-retrieval
//! baseline run of the same model (see [`super::frugality`]).
//!
//! Rank buckets use the target's rank in the prompt, as MCQA does: a target retrieved
//! into the top k but cut by the token budget was never shown to the model, so it
//! counts as `dropped`, not by its fused rank.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use anyhow::{Result, bail};

use super::frugality::{Temperatures, answer_frugality};
use crate::service::answer::{AnswerRecord, JudgementRecord, answers, judgements};
use crate::service::base::Context;

/// How the report's rank buckets are defined (printed with every run).
pub const RANK_BUCKETS: &str = "target rank in the prompt: the best-ranked target chunk's fused rank among the chunks kept under the token budget; placed: put in the prompt by an oracle or distractor context without retrieval ranking it; dropped: retrieved into the top k but cut by the budget; not retrieved: not in the top k";

/// Where the first target chunk of an answer was in its prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptPlace {
    /// In the prompt, at this fused rank.
    Rank(u32),
    /// Retrieved into the top k, then dropped for the token budget.
    Dropped,
    /// Not in the top k (or no retrieval at all).
    NotRetrieved,
}

/// Where the first target was in the prompt of `a`. Answers stored before
/// `target_prompt_rank` existed have it null; for them the rank is read from the
/// stored `chunk_ids` and `chunk_ranks`, the chunks that were in the prompt, in order.
/// That gives the same value the field would hold (the budget drops chunks from the
/// end, so the kept chunks are the first of the top k), and a target with a
/// `target_rank` that is not among them was dropped.
pub fn prompt_place(a: &AnswerRecord) -> PromptPlace {
    let from_chunks = || {
        a.chunk_ids
            .iter()
            .zip(&a.chunk_ranks)
            .find(|(id, _)| a.target_ids.contains(id))
            .map(|(_, r)| *r)
    };
    match a.target_prompt_rank.or_else(from_chunks) {
        Some(r) => PromptPlace::Rank(r),
        None if a.target_rank.is_some() => PromptPlace::Dropped,
        None => PromptPlace::NotRetrieved,
    }
}

/// Target-rank buckets of the pass-rate report, by the rank in the prompt:
/// 1, 2-4, 5-7, 8-15, >15, dropped, not retrieved; `placed` is a target an oracle or
/// distractor context put in the prompt without retrieval ranking it.
pub fn rank_bucket(place: PromptPlace) -> &'static str {
    match place {
        PromptPlace::Rank(0) => "placed",
        PromptPlace::Rank(1) => "1",
        PromptPlace::Rank(2..=4) => "2-4",
        PromptPlace::Rank(5..=7) => "5-7",
        PromptPlace::Rank(8..=15) => "8-15",
        PromptPlace::Rank(_) => ">15",
        PromptPlace::Dropped => "dropped",
        PromptPlace::NotRetrieved => "not retrieved",
    }
}

/// Pass counts per criterion and bucket: criterion -> bucket ("overall" and the
/// answer's [`rank_bucket`]) -> (pass, total), and the judge models seen.
pub fn pass_counts<'a>(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&'a JudgementRecord>>,
) -> PassCounts<'a> {
    let mut pass: BTreeMap<String, BTreeMap<&'static str, (usize, usize)>> = BTreeMap::new();
    let mut judges: HashSet<&'a str> = HashSet::new();
    for a in answers {
        let bucket = rank_bucket(prompt_place(a));
        for j in by_answer.get(a.answer_id.as_str()).into_iter().flatten() {
            judges.insert(&j.judge_model);
            for (c, l) in j.criteria.iter().zip(&j.labels) {
                for b in ["overall", bucket] {
                    let e = pass.entry(c.clone()).or_default().entry(b).or_default();
                    e.1 += 1;
                    e.0 += usize::from(l == "pass");
                }
            }
        }
    }
    (pass, judges)
}

/// See [`pass_counts`].
pub type PassCounts<'a> = (
    BTreeMap<String, BTreeMap<&'static str, (usize, usize)>>,
    HashSet<&'a str>,
);

/// The stored answers of `run` (every run without one).
pub async fn list_answers(ctx: &Context, run: Option<&str>) -> Result<Vec<AnswerRecord>> {
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    if all.is_empty() {
        bail!("no answers yet: run `raglab generate --questions FILE` first");
    }
    Ok(all
        .into_iter()
        .filter(|a| run.is_none_or(|r| a.run == r))
        .collect())
}

/// The report of `run` (every run without one) as one JSON object keyed by run;
/// with `baseline`, also the frugality of every other run of the same model against
/// it (`frugality`, see [`super::frugality`]), whatever `run` selects: the
/// temperatures are computed across all of them.
pub async fn answer_report(
    ctx: &Context,
    run: Option<&str>,
    baseline: Option<&str>,
    temps: Temperatures,
    sight: &crate::core::blinding::Sight,
) -> Result<serde_json::Value> {
    if baseline.is_none() && temps != Temperatures::default() {
        bail!("--temp-accuracy and --temp-cost need --baseline");
    }
    let all = list_answers(ctx, None).await?;
    if let Some(r) = run.filter(|r| !all.iter().any(|a| a.run == *r)) {
        bail!("run `{r}` has no answers");
    }
    // Only the judge labels the viewer may see (blind study items left out).
    // A calibrated judge's labels are `calibrate`'s to report, not the pass rates'.
    let mut judg = sight.judgements_seen(judgements(&ctx.workspace).read_all().await?);
    judg.retain(|j| !crate::core::calibration::is_calibrated(&j.judge_model));
    let by_answer = crate::core::answer::by_answer(&judg);
    let cites = crate::service::answer::citation_records(ctx).await?;
    // Grounded verdicts are the judge's too: hidden with its labels.
    let grounded: Vec<crate::core::grounded::GroundedRecord> =
        crate::service::answer::grounded_records(ctx)
            .await?
            .into_iter()
            .filter(|r| sight.judgement(&r.answer_id))
            .collect();
    let mut runs: BTreeMap<&str, Vec<&AnswerRecord>> = BTreeMap::new();
    for a in &all {
        runs.entry(a.run.as_str()).or_default().push(a);
    }
    let mut out = serde_json::Map::new();
    for (name, answers) in &runs {
        if run.is_some_and(|r| r != *name) && baseline != Some(*name) {
            continue;
        }
        let mut summary = run_summary(answers, &by_answer)?;
        let ids: HashSet<&str> = answers.iter().map(|a| a.answer_id.as_str()).collect();
        let mine: Vec<&crate::core::citation::CitationRecord> = cites
            .iter()
            .filter(|c| ids.contains(c.answer_id.as_str()))
            .collect();
        if !mine.is_empty() {
            summary["citations"] = by_judge(citation_summary(&mine), |c| &c.judge_model)?;
        }
        let mine: Vec<crate::core::grounded::GroundedRecord> = grounded
            .iter()
            .filter(|g| ids.contains(g.answer_id.as_str()))
            .cloned()
            .collect();
        if !mine.is_empty() {
            summary["grounded"] =
                by_judge(crate::core::grounded::summarise(&mine), |g| &g.judge_model)?;
        }
        out.insert((*name).to_string(), summary);
    }
    if let Some(base) = baseline {
        let f = answer_frugality(&runs, &by_answer, base, run, temps)?;
        out.insert("frugality".into(), serde_json::to_value(f)?);
    }
    Ok(serde_json::Value::Object(out))
}

/// One run's summary: what made its answers (model, template, context policy, chunk
/// order, rerank), their mean costs, and the judge's pass rates per criterion and
/// target-rank bucket (with the spread across repeats for a run made with
/// `--repeats`).
fn run_summary(
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> Result<serde_json::Value> {
    let n = answers.len() as f64;
    let mean = |f: &dyn Fn(&AnswerRecord) -> f64| answers.iter().map(|a| f(a)).sum::<f64>() / n;
    let (pass, judges) = pass_counts(answers, by_answer);
    let first = answers[0];
    let mut summary = serde_json::json!({
        "answers": answers.len(),
        "model": first.model_file,
        "no_retrieval": first.no_retrieval,
        "template": first.template_label(),
        "context_policy": first.context_policy.as_deref().unwrap_or(if first.no_retrieval { "none" } else { "retrieved" }),
        "chunk_order": first.chunk_order.as_deref().unwrap_or("ranked"),
        "rerank": first.rerank,
        "mean_rerank_ms": mean(&|a| a.rerank_ms.unwrap_or(0.0)),
        "mean_total_ms": mean(&|a| a.total_ms),
        "mean_ttft_ms": mean(&|a| a.ttft_ms),
        "mean_prompt_tokens": mean(&|a| f64::from(a.prompt_tokens)),
        "mean_output_tokens": mean(&|a| f64::from(a.output_tokens)),
        "mean_input_words": mean(&|a| f64::from(a.input_words)),
        "mean_prompt_tokens_per_s": mean(&|a| a.prompt_tokens_per_s),
        "mean_gen_tokens_per_s": mean(&|a| a.gen_tokens_per_s),
        "stopped": answers.iter().filter(|a| a.stopped).count(),
        "judge_models": judges.iter().collect::<Vec<_>>(),
        "rank_buckets": RANK_BUCKETS,
        "pass_rates": pass.iter().map(|(c, b)| {
            let buckets: serde_json::Map<String, serde_json::Value> = b
                .iter()
                .map(|(k, (p, t))| (k.to_string(), serde_json::json!({"pass": p, "total": t, "rate": *p as f64 / *t as f64})))
                .collect();
            (c.clone(), serde_json::Value::Object(buckets))
        }).collect::<serde_json::Map<String, serde_json::Value>>(),
    });
    // Runs generated or judged with `--repeats`: the pass rates' spread across
    // generation repeats and the judge's self-consistency.
    if let Some(r) = super::repeats::repeats_of(answers, by_answer) {
        summary["repeats"] = serde_json::to_value(r)?;
    }
    Ok(summary)
}

/// `{judge model: summary}`: one run's per-judge summaries as a JSON object.
fn by_judge<T: serde::Serialize>(
    summaries: Vec<T>,
    judge: impl Fn(&T) -> &String,
) -> Result<serde_json::Value> {
    Ok(summaries
        .into_iter()
        .map(|s| {
            let name = judge(&s).clone();
            serde_json::to_value(s).map(|v| (name, v))
        })
        .collect::<Result<serde_json::Map<_, _>, _>>()?
        .into())
}

/// Citation recall and precision of one run's scored answers by one entailment judge
/// (`answers cite`): each mean over the answers where it is defined, and how many it
/// is undefined for (recall: an empty answer; precision: an answer with no citation).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct CitationSummary {
    #[serde(skip)]
    pub run: String,
    #[serde(skip)]
    pub judge_model: String,
    pub scored: usize,
    pub recall: Option<f64>,
    pub recall_undefined: usize,
    pub precision: Option<f64>,
    pub precision_undefined: usize,
    pub citations: usize,
    /// Cited ids that were not in the prompt, each once.
    pub outside_prompt: Vec<String>,
}

/// [`CitationSummary`] of `records` per (run, judge), in that order.
fn citation_summary(records: &[&crate::core::citation::CitationRecord]) -> Vec<CitationSummary> {
    let mut groups: BTreeMap<(&str, &str), Vec<&crate::core::citation::CitationRecord>> =
        BTreeMap::new();
    for c in records {
        groups
            .entry((c.run.as_str(), c.judge_model.as_str()))
            .or_default()
            .push(c);
    }
    let mean = |xs: &[f64]| (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64);
    groups
        .into_iter()
        .map(|((run, judge), cs)| {
            let recall: Vec<f64> = cs.iter().filter_map(|c| c.recall).collect();
            let precision: Vec<f64> = cs.iter().filter_map(|c| c.precision).collect();
            let outside: BTreeSet<&str> = cs
                .iter()
                .flat_map(|c| c.outside_prompt.iter().map(String::as_str))
                .collect();
            CitationSummary {
                run: run.to_string(),
                judge_model: judge.to_string(),
                scored: cs.len(),
                recall: mean(&recall),
                recall_undefined: cs.len() - recall.len(),
                precision: mean(&precision),
                precision_undefined: cs.len() - precision.len(),
                citations: cs.iter().map(|c| c.citations as usize).sum(),
                outside_prompt: outside.into_iter().map(str::to_string).collect(),
            }
        })
        .collect()
}

/// Every run's citation scores, per entailment judge (the Evaluation pane's table;
/// the numbers of `report answers --json`'s `citations`).
pub async fn citation_summaries(ctx: &Context) -> Result<Vec<CitationSummary>> {
    let cites = crate::service::answer::citation_records(ctx).await?;
    let all: Vec<&crate::core::citation::CitationRecord> = cites.iter().collect();
    Ok(citation_summary(&all))
}

/// Every run's grounded means per judge (the Evaluation pane's table; the numbers of
/// `report answers --json`'s `grounded`).
pub async fn grounded_summaries(
    ctx: &Context,
    sight: &crate::core::blinding::Sight,
) -> Result<Vec<crate::core::grounded::GroundedSummary>> {
    let records: Vec<crate::core::grounded::GroundedRecord> =
        crate::service::answer::grounded_records(ctx)
            .await?
            .into_iter()
            .filter(|r| sight.judgement(&r.answer_id))
            .collect();
    Ok(crate::core::grounded::summarise(&records))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: &str, chunks: &[(&str, u32)], dropped: &[&str]) -> AnswerRecord {
        AnswerRecord {
            answer_id: id.into(),
            target_ids: vec!["t".into()],
            chunk_ids: chunks.iter().map(|(c, _)| (*c).to_string()).collect(),
            chunk_ranks: chunks.iter().map(|(_, r)| *r).collect(),
            dropped_chunk_ids: dropped.iter().map(|c| (*c).to_string()).collect(),
            ..AnswerRecord::default()
        }
    }

    fn judged(id: &str, label: &str) -> JudgementRecord {
        JudgementRecord::of(id, &[("faithfulness", label)])
    }

    /// Hand-computed: a budget that kept only the chunk at fused rank 1 while the
    /// target was at fused rank 2 puts the answer in "dropped", not in "2-4"; an
    /// answer stored before `target_prompt_rank` existed lands in the same bucket,
    /// read from its stored chunk lists.
    #[test]
    fn pass_rates_bucket_by_the_rank_in_the_prompt() {
        // Target at fused rank 2, dropped by the budget (a new record).
        let mut dropped = answer("d", &[("a", 1)], &["t", "c"]);
        dropped.target_rank = Some(2);
        dropped.target_prompt_rank = None;
        dropped.target_list_rank = Some(2);
        // The same situation stored by an earlier release (no prompt rank field).
        let mut old_dropped = answer("od", &[("a", 1)], &["t"]);
        old_dropped.target_rank = Some(2);
        // Target kept at rank 3 (new), and kept at rank 1 (old record).
        let mut kept = answer("k", &[("a", 1), ("b", 2), ("t", 3)], &[]);
        kept.target_rank = Some(3);
        kept.target_prompt_rank = Some(3);
        let mut old_kept = answer("ok", &[("t", 1)], &[]);
        old_kept.target_rank = Some(1);
        // Not retrieved at all.
        let missing = answer("m", &[("a", 1)], &[]);

        assert_eq!(prompt_place(&dropped), PromptPlace::Dropped);
        assert_eq!(prompt_place(&old_dropped), PromptPlace::Dropped);
        assert_eq!(prompt_place(&kept), PromptPlace::Rank(3));
        assert_eq!(prompt_place(&old_kept), PromptPlace::Rank(1));
        assert_eq!(prompt_place(&missing), PromptPlace::NotRetrieved);

        let judgements = [
            judged("d", "fail"),
            judged("od", "pass"),
            judged("k", "pass"),
            judged("ok", "pass"),
            judged("m", "fail"),
        ];
        let by_answer = crate::core::answer::by_answer(&judgements);
        let answers = [&dropped, &old_dropped, &kept, &old_kept, &missing];
        let (pass, judges) = pass_counts(&answers, &by_answer);
        let f = &pass["faithfulness"];
        assert_eq!(f["overall"], (3, 5));
        assert_eq!(f["dropped"], (1, 2));
        assert_eq!(f["1"], (1, 1));
        assert_eq!(f["2-4"], (1, 1), "only the target kept at rank 3");
        assert_eq!(f["not retrieved"], (0, 1));
        assert_eq!(f.len(), 5);
        assert_eq!(judges.into_iter().collect::<Vec<_>>(), vec!["judge.gguf"]);
    }
}
