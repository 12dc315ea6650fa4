//! The last evaluations, as the TUI's Evaluation pane shows them: the last
//! `eval retrieval` report and the last `eval mcqa` report, each kept as JSON in the
//! workspace (`eval/last-retrieval.json`, `eval/last-mcqa.json`, written whole then
//! renamed, so a reader never sees half a report), and the judge's pass rates by
//! target-rank bucket, computed from the stored answers and judgements when asked.

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::report::{RANK_BUCKETS, pass_counts};
use super::retrieval::RetrievalReport;
use super::saved::{LAST_MCQA, LAST_RETRIEVAL, Saved, load, save};
use crate::core::blinding::Sight;
use crate::core::mcqa::McqaRecord;
use crate::core::mcqa::Report;
use crate::service::answer::{AnswerRecord, JudgementRecord, answers, judgements};
use crate::service::base::{Context, dataset_stamp};

/// The MCQA report of one run with what produced it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct McqaSummary {
    pub run: String,
    pub model_file: Option<String>,
    pub method: Option<String>,
    pub alpha: Option<f64>,
    /// Distinct questions answered.
    pub questions: usize,
    pub report: Report,
}

/// The judge's pass rates per criterion and target-rank bucket over every stored
/// answer it judged (all runs pooled; the bucket is the target's rank in the prompt,
/// see [`RANK_BUCKETS`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JudgePassRates {
    pub answers: usize,
    pub judgements: usize,
    pub judge_models: Vec<String>,
    /// One row per criterion.
    pub rows: Vec<CriterionRates>,
}

/// One criterion's pass counts per bucket, in [`BUCKETS`] order (buckets with no
/// label left out).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CriterionRates {
    pub criterion: String,
    pub buckets: Vec<BucketRate>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct BucketRate {
    pub bucket: &'static str,
    pub pass: usize,
    pub total: usize,
}

/// The buckets in the order shown (the paper's four, then ours, then all).
pub const BUCKETS: [&str; 8] = [
    "1",
    "2-4",
    "5-7",
    "8-15",
    ">15",
    "dropped",
    "not retrieved",
    "overall",
];

/// Everything the Evaluation pane shows; what could not be read is in `problems`
/// (a damaged file is named, never shown as "no evaluation").
#[derive(Debug, Clone, Default)]
pub struct EvalOverview {
    pub retrieval: Option<Saved<RetrievalReport>>,
    pub mcqa: Option<Saved<McqaSummary>>,
    pub judge: Option<JudgePassRates>,
    /// Every pair of the last evaluation's configurations compared (`raglab compare`
    /// without `--baseline`, default settings); None without per-query scores.
    pub comparison: Option<super::significance::ComparisonReport>,
    /// Citation recall and precision per run and entailment judge (`answers cite`).
    pub citations: Vec<super::report::CitationSummary>,
    /// Grounded means per run and judge (`answers ground`), as `sight` allows.
    pub grounded: Vec<crate::core::grounded::GroundedSummary>,
    /// The last MCQA run's frugality, each k against k = 0 (None: no MCQA run, or
    /// one without k = 0).
    pub mcqa_frugality: Option<super::frugality::McqaFrugality>,
    pub problems: Vec<String>,
    /// How the judge's rank buckets are defined.
    pub buckets_note: &'static str,
}

/// The last retrieval evaluation (None: none was run in this workspace).
pub fn last_retrieval(ctx: &Context) -> Result<Option<Saved<RetrievalReport>>> {
    load(ctx, LAST_RETRIEVAL, "raglab eval retrieval")
}

/// The MCQA summary of a run's stored answers (model and retrieval settings from its
/// first answer with retrieval), kept as the last MCQA evaluation.
pub fn save_mcqa(ctx: &Context, run: &str, records: &[McqaRecord]) -> Result<McqaSummary> {
    let first = records.iter().find(|r| r.k > 0).or(records.first());
    let mut answered: Vec<&str> = records.iter().map(|r| r.question_id.as_str()).collect();
    answered.sort_unstable();
    answered.dedup();
    let summary = McqaSummary {
        run: run.to_string(),
        model_file: first.map(|r| r.model_file.clone()),
        method: first.map(|r| r.method.clone()),
        alpha: first.map(|r| r.alpha),
        questions: answered.len(),
        report: crate::core::mcqa::report(&super::mcqa::outcomes(records)),
    };
    save(ctx, LAST_MCQA, &summary)?;
    Ok(summary)
}

/// The frugality of MCQA run `run`, each k against k = 0, over every stored answer
/// of the run, at the temperatures computed across its configurations.
pub async fn mcqa_run_frugality(
    ctx: &Context,
    run: &str,
) -> Result<Option<super::frugality::McqaFrugality>> {
    let records: Vec<McqaRecord> = super::mcqa::mcqa_table(&ctx.workspace)
        .read_all::<McqaRecord>()
        .await
        .map_err(|e| anyhow::anyhow!("cannot read the MCQA answers: {e:#}"))?
        .into_iter()
        .filter(|x| x.run == run)
        .collect();
    Ok(super::frugality::mcqa_frugality(
        &records,
        super::frugality::Temperatures::default(),
    ))
}

/// The last MCQA evaluation (None: none was run in this workspace).
pub fn last_mcqa(ctx: &Context) -> Result<Option<Saved<McqaSummary>>> {
    load(ctx, LAST_MCQA, "raglab eval mcqa")
}

/// The judge's pass rates by target-rank bucket (None: no answer is judged yet),
/// over the judge labels `sight` allows (blind study items left out; the study decides
/// who sees what, and a front asks it for the viewer's [`Sight`]).
pub async fn judge_pass_rates(ctx: &Context, sight: &Sight) -> Result<Option<JudgePassRates>> {
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let judg: Vec<JudgementRecord> = judgements(&ctx.workspace).read_all().await?;
    if judg.is_empty() {
        return Ok(None);
    }
    let mut judg = sight.judgements_seen(judg);
    judg.retain(|j| !crate::core::calibration::is_calibrated(&j.judge_model));
    let by_answer = crate::core::answer::by_answer(&judg);
    let judged: Vec<&AnswerRecord> = all
        .iter()
        .filter(|a| by_answer.contains_key(a.answer_id.as_str()))
        .collect();
    let (pass, judges) = pass_counts(&judged, &by_answer);
    let mut judge_models: Vec<String> = judges.into_iter().map(str::to_string).collect();
    judge_models.sort();
    let rows = pass
        .into_iter()
        .map(|(criterion, by)| CriterionRates {
            criterion,
            buckets: BUCKETS
                .iter()
                .filter_map(|b| {
                    by.get(b).map(|&(pass, total)| BucketRate {
                        bucket: b,
                        pass,
                        total,
                    })
                })
                .collect(),
        })
        .collect();
    Ok(Some(JudgePassRates {
        answers: judged.len(),
        judgements: judged
            .iter()
            .map(|a| by_answer.get(a.answer_id.as_str()).map_or(0, Vec::len))
            .sum(),
        judge_models,
        rows,
    }))
}

/// Everything the Evaluation pane shows, as `sight` allows.
pub async fn overview(ctx: &Context, sight: &Sight) -> EvalOverview {
    let mut out = EvalOverview {
        buckets_note: RANK_BUCKETS,
        ..EvalOverview::default()
    };
    match last_retrieval(ctx) {
        Ok(r) => out.retrieval = r,
        Err(e) => out.problems.push(format!("{e:#}")),
    }
    match last_mcqa(ctx) {
        Ok(r) => out.mcqa = r,
        Err(e) => out.problems.push(format!("{e:#}")),
    }
    if let Some(saved) = &out.mcqa {
        match mcqa_run_frugality(ctx, &saved.report.run).await {
            Ok(f) => out.mcqa_frugality = f,
            Err(e) => out.problems.push(format!("{e:#}")),
        }
    }
    match all_pairs(ctx).await {
        Ok(c) => out.comparison = c,
        Err(e) => out.problems.push(format!("{e:#}")),
    }
    match judge_pass_rates(ctx, sight).await {
        Ok(r) => out.judge = r,
        Err(e) => out
            .problems
            .push(format!("cannot read the judgements: {e:#}")),
    }
    match super::report::citation_summaries(ctx).await {
        Ok(c) => out.citations = c,
        Err(e) => out
            .problems
            .push(format!("cannot read the citation scores: {e:#}")),
    }
    match super::report::grounded_summaries(ctx, sight).await {
        Ok(g) => out.grounded = g,
        Err(e) => out
            .problems
            .push(format!("cannot read the grounded scores: {e:#}")),
    }
    out
}

/// Every pair of the last evaluation's configurations compared, on a blocking thread
/// (seconds of arithmetic for a large evaluation); None without per-query scores.
async fn all_pairs(ctx: &Context) -> Result<Option<super::significance::ComparisonReport>> {
    let Some(saved) = super::significance::last_scores(ctx)? else {
        return Ok(None);
    };
    let ctx = ctx.clone();
    tokio::task::spawn_blocking(move || {
        super::significance::compare_saved(
            &ctx,
            &saved,
            &super::significance::CompareRequest::default(),
        )
    })
    .await?
    .map(Some)
}

/// A cheap fingerprint of what [`overview`] reads: the report files (size and
/// modification time) and the answers and judgements datasets' commits. When it
/// changes, a new evaluation was written and the pane reloads.
pub fn fingerprint(ctx: &Context) -> Vec<Option<String>> {
    let file = |rel: &str| {
        let m = std::fs::metadata(ctx.workspace.path(rel)).ok()?;
        let t = m
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        Some(format!("{} {t}", m.len()))
    };
    vec![
        file(LAST_RETRIEVAL),
        file(super::saved::LAST_SCORES),
        file(LAST_MCQA),
        dataset_stamp(ctx, crate::service::answer::ANSWERS),
        dataset_stamp(ctx, crate::service::answer::JUDGEMENTS),
    ]
}
