//! `raglab report study`: gather every section of the study report, each from the
//! service function of the command that produces it alone:
//!
//! | section | function | command |
//! |---|---|---|
//! | corpus | `corpus::chunks_or_empty` + `core::stats::corpus_stats` | `corpus stats --json` |
//! | retrieval, alpha sweep, breakdowns | `evaluate::last_retrieval` | `eval retrieval --json` (as it kept it) |
//! | significance | `evaluate::compare_last` (default settings) | `compare --json` |
//! | MCQA | `evaluate::last_mcqa`, `evaluate::mcqa_run_frugality` | `eval mcqa --report-only --json` |
//! | judge pass rates by rank | `evaluate::judge_pass_rates` | the Evaluation pane's judge box |
//! | pass rates per run, frugality | `evaluate::answer_report` | `report answers [--baseline RUN] --json` |
//! | agreement | `study::agreement_with` | `agree --json` |
//!
//! Blinding: the judge's labels and the agreement are computed for the viewer the
//! command was started as (`--role lead` or `--reviewer NAME`) through the same
//! [`crate::service::study::sight`] and `agreement_with` as `report answers` and
//! `agree`, so the report never shows more than those commands would show them.
//! Without an identity the agreement section says so (as `agree` refuses).
//!
//! A section whose data is missing (or cannot be read) is `None`, and [`Missing`]
//! says which command produces it, or what went wrong.

use std::time::Instant;

use crate::core::agreement::Bootstrap;
use crate::core::stats::{CorpusStats, corpus_stats};
use crate::service::base::Context;
use crate::service::evaluate::{
    CompareRequest, ComparisonReport, JudgePassRates, McqaFrugality, McqaSummary, RetrievalReport,
    Saved, Temperatures, answer_report, compare_last, judge_pass_rates, last_mcqa, last_retrieval,
    last_scores, list_answers, mcqa_run_frugality,
};
use crate::service::study::{self, Agreement, AgreementRequest, Viewer};
use anyhow::Result;

/// The command that produces each section, for the report's "missing" lines.
pub const STUDY_REPORT_COMMANDS: [(&str, &str); 7] = [
    ("corpus", "raglab ingest DIR"),
    (
        "retrieval",
        "raglab eval retrieval --queries FILE --alpha-sweep --methods bm25,tfidf,dense,hybrid,linear",
    ),
    (
        "significance",
        "raglab eval retrieval (then raglab compare)",
    ),
    ("mcqa", "raglab eval mcqa --questions FILE"),
    (
        "judge",
        "raglab generate --questions FILE --run RUN, then raglab judge",
    ),
    (
        "agreement",
        "raglab annotate ... and reviewers' labels (raglab agree), as the lead (--role lead)",
    ),
    (
        "frugality",
        "raglab generate --no-retrieval --run BASE and a run with retrieval, both judged",
    ),
];

/// What to gather and for whom.
#[derive(Debug, Clone)]
pub struct StudyRequest {
    /// Who is looking: the judge labels and agreement follow blinding for them.
    pub viewer: Viewer,
    /// The significance settings (default: `raglab compare`'s).
    pub compare: CompareRequest,
    /// The agreement's bootstrap (default: `raglab agree`'s).
    pub boot: Bootstrap,
}

impl Default for StudyRequest {
    fn default() -> Self {
        Self {
            viewer: Viewer::Nobody,
            compare: CompareRequest::default(),
            boot: Bootstrap::default(),
        }
    }
}

/// A section left out, and why: its producing command, or the error met reading it.
#[derive(Debug, Clone)]
pub struct Missing {
    pub section: &'static str,
    pub why: String,
}

/// Everything the study report shows.
#[derive(Debug, Clone)]
pub struct StudyReport {
    pub workspace: String,
    pub written_at: String,
    pub viewer: String,
    pub corpus: Option<CorpusStats>,
    pub retrieval: Option<Saved<RetrievalReport>>,
    /// When the per-query scores `compare` read were written.
    pub scores_written_at: Option<String>,
    pub comparison: Option<ComparisonReport>,
    pub mcqa: Option<Saved<McqaSummary>>,
    /// The last MCQA run's frugality (each k against k = 0) over its stored answers.
    pub mcqa_frugality: Option<McqaFrugality>,
    pub judge: Option<JudgePassRates>,
    /// `report answers --json` (with `--baseline` the no-retrieval run, when there is
    /// one): per run pass rates, latency, and the frugality section.
    pub answers: Option<serde_json::Value>,
    /// The no-retrieval run used as the frugality baseline.
    pub answers_baseline: Option<String>,
    pub agreement: Option<Agreement>,
    pub missing: Vec<Missing>,
    pub seconds: f64,
}

impl StudyReport {
    fn miss(&mut self, section: &'static str, why: impl Into<String>) {
        self.missing.push(Missing {
            section,
            why: why.into(),
        });
    }

    /// Why `section` is missing (None: it is present).
    pub fn why_missing(&self, section: &str) -> Option<&str> {
        self.missing
            .iter()
            .find(|m| m.section == section)
            .map(|m| m.why.as_str())
    }
}

/// The command that produces `section`.
fn command_for(section: &str) -> &'static str {
    STUDY_REPORT_COMMANDS
        .iter()
        .find(|(s, _)| *s == section)
        .map_or("", |(_, c)| c)
}

/// A missing section's line: run `command` (absent), or the error (damaged).
fn absent(section: &'static str) -> String {
    format!("no data yet: run `{}`", command_for(section))
}

/// Gather the study report for `req.viewer`.
pub async fn study_report(ctx: &Context, req: &StudyRequest) -> Result<StudyReport> {
    let started = Instant::now();
    let mut r = StudyReport {
        workspace: ctx.workspace.location(),
        written_at: crate::service::base::now_rfc3339(),
        viewer: match &req.viewer {
            Viewer::Lead => "the study lead".into(),
            Viewer::Reviewer(n) => format!("reviewer {n}"),
            Viewer::Nobody => "no identity".into(),
        },
        corpus: None,
        retrieval: None,
        scores_written_at: None,
        comparison: None,
        mcqa: None,
        mcqa_frugality: None,
        judge: None,
        answers: None,
        answers_baseline: None,
        agreement: None,
        missing: Vec::new(),
        seconds: 0.0,
    };
    match crate::service::corpus::chunks_or_empty(ctx).await {
        Ok(c) if c.is_empty() => r.miss("corpus", absent("corpus")),
        Ok(c) => r.corpus = Some(corpus_stats(&c)),
        Err(e) => r.miss("corpus", format!("{e:#}")),
    }
    retrieval_sections(ctx, req, &mut r).await;
    mcqa_section(ctx, &mut r).await;
    answer_sections(ctx, req, &mut r).await;
    agreement_section(ctx, req, &mut r).await;
    r.seconds = started.elapsed().as_secs_f64();
    Ok(r)
}

/// The last `eval retrieval` and the comparison of its configurations.
async fn retrieval_sections(ctx: &Context, req: &StudyRequest, r: &mut StudyReport) {
    match last_retrieval(ctx) {
        Ok(Some(s)) => r.retrieval = Some(s),
        Ok(None) => r.miss("retrieval", absent("retrieval")),
        Err(e) => r.miss("retrieval", format!("{e:#}")),
    }
    match last_scores(ctx) {
        Ok(Some(s)) => r.scores_written_at = Some(s.written_at),
        Ok(None) => {}
        Err(e) => r.miss("significance", format!("{e:#}")),
    }
    if r.scores_written_at.is_none() {
        if r.why_missing("significance").is_none() {
            r.miss("significance", absent("significance"));
        }
        return;
    }
    // Seconds of arithmetic on a large evaluation: off the async workers.
    let ctx2 = ctx.clone();
    let creq = req.compare.clone();
    match tokio::task::spawn_blocking(move || compare_last(&ctx2, &creq)).await {
        Ok(Ok(c)) if c.runs.len() >= 2 => r.comparison = Some(c),
        Ok(Ok(_)) => r.miss(
            "significance",
            "the last evaluation has one configuration: nothing to compare (evaluate two or more methods)",
        ),
        Ok(Err(e)) => r.miss("significance", format!("{e:#}")),
        Err(e) => r.miss("significance", format!("the comparison stopped: {e}")),
    }
}

/// The last MCQA report and its run's frugality.
async fn mcqa_section(ctx: &Context, r: &mut StudyReport) {
    let saved = match last_mcqa(ctx) {
        Ok(Some(s)) => s,
        Ok(None) => return r.miss("mcqa", absent("mcqa")),
        Err(e) => return r.miss("mcqa", format!("{e:#}")),
    };
    match mcqa_run_frugality(ctx, &saved.report.run).await {
        Ok(f) => r.mcqa_frugality = f,
        Err(e) => r.miss("frugality", format!("{e:#}")),
    }
    r.mcqa = Some(saved);
}

/// The judge's pass rates by target rank, per run, and the answers' frugality against
/// a no-retrieval run, as the viewer may see them.
async fn answer_sections(ctx: &Context, req: &StudyRequest, r: &mut StudyReport) {
    let sight = match study::sight(ctx, &req.viewer).await {
        Ok(s) => s,
        Err(e) => return r.miss("judge", format!("{e:#}")),
    };
    match judge_pass_rates(ctx, &sight).await {
        Ok(Some(j)) if j.answers > 0 => r.judge = Some(j),
        Ok(_) => r.miss("judge", absent("judge")),
        Err(e) => r.miss("judge", format!("{e:#}")),
    }
    let Ok(answers) = list_answers(ctx, None).await else {
        return r.miss("frugality", absent("frugality"));
    };
    let mut baselines: Vec<&str> = answers
        .iter()
        .filter(|a| a.no_retrieval)
        .map(|a| a.run.as_str())
        .collect();
    baselines.sort_unstable();
    baselines.dedup();
    let baseline = baselines.first().map(|b| (*b).to_string());
    let temps = Temperatures::default();
    let with_base = match &baseline {
        Some(b) => answer_report(ctx, None, Some(b.as_str()), temps, &sight).await,
        None => Err(anyhow::anyhow!("{}", absent("frugality"))),
    };
    match with_base {
        Ok(v) => {
            r.answers = Some(v);
            r.answers_baseline = baseline;
        }
        Err(e) => {
            r.miss("frugality", format!("answer runs: {e:#}"));
            match answer_report(ctx, None, None, temps, &sight).await {
                Ok(v) => r.answers = Some(v),
                Err(e) => r.miss("judge", format!("{e:#}")),
            }
        }
    }
}

/// The agreement table as `raglab agree` computes it for the viewer (its defaults:
/// the two reviewers with most labels, labels given before reveal, every judge model).
async fn agreement_section(ctx: &Context, req: &StudyRequest, r: &mut StudyReport) {
    match study::read_items(ctx).await {
        Ok(items) if items.is_empty() => return r.miss("agreement", absent("agreement")),
        Ok(_) => {}
        Err(e) => return r.miss("agreement", format!("{e:#}")),
    }
    let rubric = match study::study_rubric(ctx).await {
        Ok(rb) => rb,
        Err(e) => return r.miss("agreement", format!("{e:#}")),
    };
    let areq = AgreementRequest {
        boot: req.boot,
        viewer: req.viewer.clone(),
        ..AgreementRequest::default()
    };
    match study::agreement_with(ctx, &rubric, areq).await {
        Ok(a) => r.agreement = Some(a),
        Err(e) => r.miss("agreement", format!("{e:#}")),
    }
}
