//! `raglab evalset generate | critique | filter | list | decide`: building an evaluation
//! set from the corpus. Generation and critique resume where they stopped;
//! progress goes to stderr, one line per stored record.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use super::args::SamplingArgs;
use super::json_schema;
use crate::core::evalset::{AXES, Decision, EvalsetTemplates, Kind, Thresholds};
use crate::core::template::TemplateKind;
use crate::service::evalset::{
    CritiqueBatch, FilterReport, FilterSettings, GenerateBatch, GenerateRequest, StageSummary,
    decide, filter_to_file, review,
};
use crate::service::{Context, ModelChoice};

#[derive(Debug, Subcommand)]
pub enum EvalsetCmd {
    /// Write candidate questions from chunks: fact questions from one chunk, reasoning
    /// questions from two consecutive chunks of one document.
    Generate(EvalsetGenerateArgs),
    /// Score each candidate 1-5 on groundedness, answer groundedness, feasibility,
    /// stand-alone, usefulness and tautology (grammar-constrained).
    Critique(CritiqueArgs),
    /// Keep candidates at or above the thresholds, honour analysts' decisions, drop
    /// near-duplicates, and write a questions file.
    Filter(FilterArgs),
    /// Every candidate with its scores, decision and verdict under the default filter.
    List {
        /// Print the result as one JSON document (its fields: docs/reference/json.md).
        #[arg(long)]
        json: bool,
    },
    /// Accept or reject a candidate by hand (`clear` removes the decision).
    Decide {
        /// The candidate id, as `evalset list` prints it.
        candidate: String,
        /// accept, reject, or clear (back to the filter's verdict).
        #[arg(value_parser = ["accept", "reject", "clear"])]
        decision: String,
    },
}

#[derive(Debug, Args)]
pub struct EvalsetGenerateArgs {
    /// Only the first N tasks of the seeded order (a rerun with the same N finishes
    /// them; a larger N adds more).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Skip chunks shorter than this many words.
    #[arg(long, default_value_t = 30)]
    pub min_words: usize,
    /// Kinds of question: fact, reasoning, or both.
    #[arg(long, value_delimiter = ',', default_values_t = [String::from("fact"), String::from("reasoning")])]
    pub kinds: Vec<String>,
    /// GGUF generator (default: config, else SmolLM2 from setup).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Threads of the local generator (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Use the local model even when `[[endpoints]]` are configured.
    #[arg(long)]
    pub local: bool,
    /// The fact question's template (slots {chunk} and {path}; default: `[prompts]
    /// evalset_fact`, else the shipped text).
    #[arg(long, value_name = "FILE")]
    pub fact_prompt: Option<PathBuf>,
    /// The reasoning question's template (slots {chunk_a}, {chunk_b}, {path_a},
    /// {path_b}; default: `[prompts] evalset_reasoning`, else the shipped text).
    #[arg(long, value_name = "FILE")]
    pub reasoning_prompt: Option<PathBuf>,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

#[derive(Debug, Args)]
pub struct CritiqueArgs {
    /// GGUF critic (default: config `models.judge`, else the generator).
    #[arg(long)]
    pub critic_model: Option<PathBuf>,
    /// Critique at most N candidates not yet critiqued by this critic (a rerun goes on).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Threads of a local critic model (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Use the local model even when `[[endpoints]]` are configured.
    #[arg(long)]
    pub local: bool,
    /// The critique's template (slots {criteria}, {question}, {answer}, {context};
    /// default: `[prompts] evalset_critique`, else the shipped text).
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct FilterArgs {
    /// Questions file to write (JSONL `{id, text, relevant, answer, topic?, qtype}`).
    #[arg(long)]
    pub out: PathBuf,
    /// Minimum groundedness (question answerable from its chunks); 0 turns it off.
    #[arg(long, default_value_t = 3)]
    pub min_groundedness: u8,
    /// Minimum answer groundedness (the reference answer supported by its chunks).
    #[arg(long, default_value_t = 3)]
    pub min_answer_groundedness: u8,
    /// Minimum feasibility (a user could ask it without having seen the chunk).
    #[arg(long, default_value_t = 3)]
    pub min_feasibility: u8,
    /// Minimum stand-alone score (understandable without the chunk's context).
    #[arg(long, default_value_t = 3)]
    pub min_stand_alone: u8,
    /// Minimum usefulness (to someone reading public-health guidance).
    #[arg(long, default_value_t = 3)]
    pub min_usefulness: u8,
    /// Tautology is scored and shown but not filtered on by default (0).
    #[arg(long, default_value_t = 0)]
    pub min_tautology: u8,
    /// TF-IDF cosine at which a question of the same chunks is a near-duplicate.
    #[arg(long, default_value_t = crate::core::evalset::DEDUP_WITHIN)]
    pub dedup_within: f64,
    /// TF-IDF cosine at which a question anywhere in the set is a near-duplicate.
    #[arg(long, default_value_t = crate::core::evalset::DEDUP_ACROSS)]
    pub dedup_across: f64,
    /// Use only this critic's scores (default: each candidate's latest critique).
    #[arg(long)]
    pub critic: Option<String>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, cmd: EvalsetCmd) -> Result<()> {
    match cmd {
        EvalsetCmd::Generate(a) => generate(ctx, a).await,
        EvalsetCmd::Critique(a) => critique(ctx, a).await,
        EvalsetCmd::Filter(a) => filter(ctx, a).await,
        EvalsetCmd::List { json } => list(ctx, json).await,
        EvalsetCmd::Decide {
            candidate,
            decision,
        } => {
            decide(ctx, &candidate, Decision::parse(&decision), None).await?;
            say!("{candidate}: {decision}");
            Ok(())
        }
    }
}

fn report_stage(what: &str, s: &StageSummary) {
    tell!(
        "done: {} {what} in {:.1} s ({:.1} per minute), {} tokens",
        s.written,
        s.seconds,
        if s.seconds > 0.0 {
            s.written as f64 * 60.0 / s.seconds
        } else {
            0.0
        },
        s.tokens
    );
    if let Some(p) = &s.pool {
        tell!(
            "per endpoint: {:?}; {} request(s) retried",
            p.served,
            p.retries
        );
    }
}

async fn generate(ctx: &Context, a: EvalsetGenerateArgs) -> Result<()> {
    let mut kinds = Vec::new();
    for k in &a.kinds {
        match Kind::parse(k) {
            Some(k) => kinds.push(k),
            None => bail!("unknown kind `{k}` (fact, reasoning)"),
        }
    }
    // The templates first: a bad slot is one clear error before any model loads.
    let templates = EvalsetTemplates {
        fact: ctx.template(TemplateKind::EvalsetFact, a.fact_prompt.as_deref())?,
        reasoning: ctx.template(
            TemplateKind::EvalsetReasoning,
            a.reasoning_prompt.as_deref(),
        )?,
    };
    let req = GenerateRequest {
        generator: ModelChoice {
            model: a.model,
            threads: a.threads,
        },
        local: a.local,
        sampling: a.sampling.sampling(),
        limit: a.limit,
        min_words: a.min_words,
        kinds,
        templates,
    };
    let batch = GenerateBatch::prepare(ctx, req).await?;
    let l = batch.limits();
    tell!(
        "evalset generate: {} candidates to write ({} already stored) with {}; questions up to {} characters, answers up to {}",
        batch.work().todo(),
        batch.work().already_done(),
        batch.work().model(),
        l.question_max,
        l.answer_max
    );
    let s = batch
        .run(ctx, &|n, total| tell!("evalset generate: {n}/{total}"))
        .await?;
    report_stage("candidates", &s);
    Ok(())
}

async fn critique(ctx: &Context, a: CritiqueArgs) -> Result<()> {
    let choice = ModelChoice {
        model: a.critic_model,
        threads: a.threads,
    };
    let template = ctx.template(TemplateKind::EvalsetCritique, a.prompt.as_deref())?;
    let batch = CritiqueBatch::prepare(ctx, &choice, a.local, a.limit, template).await?;
    tell!(
        "evalset critique: {} candidates to score ({} already scored) with {}",
        batch.work().todo(),
        batch.work().already_done(),
        batch.work().model()
    );
    let s = batch
        .run(ctx, &|n, total| tell!("evalset critique: {n}/{total}"))
        .await?;
    report_stage("critiques", &s);
    Ok(())
}

async fn filter(ctx: &Context, a: FilterArgs) -> Result<()> {
    for t in [a.dedup_within, a.dedup_across] {
        if !(0.0..=1.0).contains(&t) {
            bail!("a deduplication threshold is a cosine in [0, 1], not {t}");
        }
    }
    let mins = [
        a.min_groundedness,
        a.min_answer_groundedness,
        a.min_feasibility,
        a.min_stand_alone,
        a.min_usefulness,
        a.min_tautology,
    ];
    if let Some(m) = mins.iter().find(|m| **m > 5) {
        bail!("a threshold is a score 0-5, not {m}");
    }
    let settings = FilterSettings {
        thresholds: Thresholds(mins),
        within: a.dedup_within,
        across: a.dedup_across,
    };
    let r = filter_to_file(ctx, settings, a.critic.as_deref(), &a.out).await?;
    if a.json {
        return json_schema::print(json_schema::EVALSET_FILTER, &r);
    }
    print_report(&r);
    Ok(())
}

fn counts(m: &std::collections::BTreeMap<String, usize>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn print_report(r: &FilterReport) {
    say!(
        "generated  {:>5}  ({})",
        r.generated,
        counts(&r.generated_by_kind)
    );
    say!(
        "critiqued  {:>5}  (critics: {})",
        r.critiqued,
        if r.critics.is_empty() {
            "none".into()
        } else {
            r.critics.join(", ")
        }
    );
    say!(
        "by hand    accepted {}, rejected {} ({} kept against their scores)",
        r.accepted_by_hand,
        r.rejected_by_hand,
        r.kept_against_scores
    );
    say!("dropped:");
    for (reason, n) in &r.dropped {
        say!("  {reason:<24} {n:>5}");
    }
    if !r.below_by_axis.is_empty() {
        say!("  below threshold by axis: {}", counts(&r.below_by_axis));
    }
    say!(
        "thresholds {}; near-duplicates: cosine >= {} within a source, >= {} across the set",
        r.thresholds
            .iter()
            .map(|(k, v)| format!("{k}>={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        r.dedup_within,
        r.dedup_across
    );
    say!(
        "kept       {:>5}  ({}) -> {}",
        r.kept,
        counts(&r.kept_by_kind),
        r.out
    );
}

async fn list(ctx: &Context, json: bool) -> Result<()> {
    let (views, _) = review(ctx, FilterSettings::default(), None).await?;
    if json {
        return json_schema::print_list(json_schema::EVALSET_LIST, &views);
    }
    let axes: Vec<&str> = AXES.iter().map(|(k, _)| *k).collect();
    say!("# scores: {}", axes.join(" "));
    for v in &views {
        let scores = v.critique.as_ref().map_or_else(
            || "-".to_string(),
            |c| {
                c.scores()
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            },
        );
        say!(
            "{}  [{}]  {}  {}  | {}",
            v.candidate.candidate_id,
            scores,
            v.decision.map_or("-", Decision::as_str),
            v.verdict,
            v.candidate.question
        );
    }
    Ok(())
}
