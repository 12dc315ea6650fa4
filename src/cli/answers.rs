//! `raglab answers import|cite|ground`: another system's answers as a run, the
//! citation recall and precision of a run's answers, and their grounded metrics.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::args::ShardArg;
use super::progress_bar;
use crate::core::grounded::{CorrectnessWeights, GroundingTemplates};
use crate::core::template::TemplateKind;
use crate::service::answer::{CiteRequest, GroundRequest, cite_run, ground_run, import_answers};
use crate::service::base::read_questions;
use crate::service::{Context, ModelChoice};

#[derive(Debug, Subcommand)]
pub enum AnswersCmd {
    /// Import another system's answers (an agentic pipeline, a hosted RAG) as a run:
    /// JSONL `{question_id, answer, contexts?, latency_ms?, prompt_tokens?,
    /// output_tokens?}`, `contexts` the ids of the corpus chunks its prompt held. The
    /// run is then judged, compared, annotated, cited and scored for frugality like
    /// raglab's own. Strict: one bad line imports nothing; a second import of the same
    /// file adds nothing.
    Import(ImportArgs),
    /// Citation recall and precision of a run's answers (ALCE): each sentence's
    /// `[chunk ID]` citations judged for entailment by the judge model (yes or no,
    /// grammar-constrained); resumable. `report answers` shows the means.
    Cite(CiteArgs),
    /// Grounded metrics of a run's answers (RAGAS): faithfulness against the contexts
    /// that were in each prompt, context precision and recall, answer correctness.
    /// The judge splits the answer and the reference into statements and gives a
    /// verdict per statement (with the passage that supports it) or per context, each
    /// reply grammar-constrained; resumable and sharded like `judge`, on the endpoint
    /// pool when one is configured. `report answers` shows the means with the
    /// undefined counts, `raglab answers show-grounded ID` one answer's verdicts.
    Ground(GroundArgs),
    /// One answer's grounded verdicts: each statement of the answer and of the
    /// reference with its verdict and supporting passage, each context's usefulness,
    /// the scores and why any is undefined.
    ShowGrounded(ShowGroundedArgs),
}

#[derive(Debug, Args)]
pub struct GroundArgs {
    /// The run whose answers are scored.
    #[arg(long)]
    pub run: String,
    /// GGUF judge (default: config `[models] judge`, else the endpoint pool when
    /// `[[endpoints]]` are configured, else the generator).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Judge with the local model even when `[[endpoints]]` are configured.
    #[arg(long)]
    pub local: bool,
    /// Answer correctness's weights `F,S`: statement F1 and embedding similarity
    /// (`1,0` needs no embedding model).
    #[arg(long, default_value_t = CorrectnessWeights::default())]
    pub weights: CorrectnessWeights,
    /// Score at most N answers not yet scored by this judge (a rerun goes on).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Score only this shard's answers (by answer id).
    #[command(flatten)]
    pub shard: ShardArg,
    /// Threads of a local judge model (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Statement-splitting template with {text} (and {question}) (default: config
    /// `[prompts] grounded_statements`, else the shipped one).
    #[arg(long, value_name = "FILE")]
    pub statements_prompt: Option<PathBuf>,
    /// Verification template with {passages} and {statements} (default: config
    /// `[prompts] grounded_verify`, else the shipped one).
    #[arg(long, value_name = "FILE")]
    pub verify_prompt: Option<PathBuf>,
    /// Context-usefulness template with {reference} and {passages} (and {question})
    /// (default: config `[prompts] grounded_useful`, else the shipped one).
    #[arg(long, value_name = "FILE")]
    pub useful_prompt: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ShowGroundedArgs {
    /// The answer id (`raglab report answers --run NAME --json` lists them).
    pub answer_id: String,
    /// Print the record as JSON (verdicts, prompts and raw replies included).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The answers JSONL.
    pub file: PathBuf,
    /// The run the answers are stored under.
    #[arg(long)]
    pub run: String,
    /// The questions they answer (text, reference answer and targets come from here).
    #[arg(long)]
    pub questions: PathBuf,
    /// The system's name, stored as the answers' model (`external:NAME`; default: the
    /// run's name).
    #[arg(long)]
    pub system: Option<String>,
}

#[derive(Debug, Args)]
pub struct CiteArgs {
    /// The run whose answers are scored.
    #[arg(long)]
    pub run: String,
    /// GGUF judge of entailment (default: config `[models] judge`, else the generator).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Entailment prompt template with {premise} and {claim} (default: the shipped
    /// one).
    #[arg(long = "prompt", value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Score at most this many answers.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Threads of a local judge model (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
}

pub async fn run(
    ctx: &Context,
    cmd: AnswersCmd,
    viewer: &crate::service::study::Viewer,
) -> Result<()> {
    match cmd {
        AnswersCmd::Import(args) => {
            let questions = read_questions(&args.questions)?;
            let system = args.system.as_deref().unwrap_or(&args.run);
            let s = import_answers(ctx, &args.file, &questions, &args.run, system).await?;
            say!(
                "run `{}`: {} answer(s) imported, {} already there{}",
                s.run,
                s.imported,
                s.already,
                if s.without_contexts > 0 {
                    format!(
                        "; {} without contexts (stored as answered without retrieval)",
                        s.without_contexts
                    )
                } else {
                    String::new()
                }
            );
            Ok(())
        }
        AnswersCmd::Cite(args) => {
            let template = ctx.template(TemplateKind::Entailment, args.template.as_deref())?;
            let req = CiteRequest {
                run: args.run.clone(),
                judge: ModelChoice {
                    model: args.judge_model.clone(),
                    threads: args.threads,
                },
                template,
                limit: args.limit,
            };
            let bar = progress_bar("scoring citations");
            let s = cite_run(ctx, req, &super::on_progress(&bar)).await;
            bar.finish_and_clear();
            let s = s?;
            say!(
                "run `{}`: {} answer(s) scored ({} already), {} entailment judgement(s) by {}; `raglab report answers --run {}` shows the means",
                args.run,
                s.scored,
                s.already,
                s.judge_calls,
                s.judge_model,
                args.run
            );
            Ok(())
        }
        AnswersCmd::Ground(args) => ground(ctx, args).await,
        AnswersCmd::ShowGrounded(args) => show_grounded(ctx, &args, viewer).await,
    }
}

async fn ground(ctx: &Context, args: GroundArgs) -> Result<()> {
    // Every template is read and its slots checked before any model loads.
    let templates = GroundingTemplates {
        statements: ctx.template(
            TemplateKind::GroundedStatements,
            args.statements_prompt.as_deref(),
        )?,
        verify: ctx.template(TemplateKind::GroundedVerify, args.verify_prompt.as_deref())?,
        useful: ctx.template(TemplateKind::GroundedUseful, args.useful_prompt.as_deref())?,
    };
    let req = GroundRequest {
        run: args.run.clone(),
        judge: ModelChoice {
            model: args.judge_model.clone(),
            threads: args.threads,
        },
        local: args.local,
        templates,
        weights: args.weights,
        limit: args.limit,
        shard: args.shard.shard,
    };
    let bar = progress_bar("grounding answers");
    let s = ground_run(ctx, req, &super::on_progress(&bar)).await;
    bar.finish_and_clear();
    let s = s?;
    let mut notes = Vec::new();
    if s.without_reference > 0 {
        notes.push(format!(
            "{} without a reference answer (context precision, context recall and answer correctness undefined)",
            s.without_reference
        ));
    }
    if s.contexts_missing > 0 {
        notes.push(format!(
            "{} context(s) of their prompts no longer in the corpus (left out of what the judge saw)",
            s.contexts_missing
        ));
    }
    if s.rescored > 0 {
        notes.push(format!(
            "{} scored earlier with other weights, scored again from their stored verdicts with {}",
            s.rescored, args.weights
        ));
    }
    say!(
        "run `{}`: {} answer(s) scored ({} already), {} judge request(s) by {}{}; `raglab report answers --run {}` shows the means",
        args.run,
        s.scored,
        s.already,
        s.requests,
        s.judge_model,
        if notes.is_empty() {
            String::new()
        } else {
            format!("; {}", notes.join("; "))
        },
        args.run
    );
    Ok(())
}

/// One answer's grounded records, as blinding lets `viewer` see them: the verdicts
/// are the judge's, hidden with its labels while the answer is a study item not yet
/// revealed to the viewer.
async fn show_grounded(
    ctx: &Context,
    args: &ShowGroundedArgs,
    viewer: &crate::service::study::Viewer,
) -> Result<()> {
    crate::service::study::confirm(ctx, viewer).await?;
    let sight = crate::service::study::sight(ctx, viewer).await?;
    let records: Vec<_> = crate::service::answer::grounded_records(ctx)
        .await?
        .into_iter()
        .filter(|r| r.answer_id == args.answer_id)
        .collect();
    if !records.is_empty() && !sight.judgement(&args.answer_id) {
        anyhow::bail!(
            "answer `{}` is a study item not yet revealed to you: its grounded verdicts are the judge's, hidden until then",
            args.answer_id
        );
    }
    if records.is_empty() {
        anyhow::bail!(
            "answer `{}` has no grounded scores (`raglab answers ground --run RUN` scores a run)",
            args.answer_id
        );
    }
    if args.json {
        return super::json_schema::print_list(super::json_schema::GROUNDED_RECORDS, &records);
    }
    for r in &records {
        for line in crate::core::grounded::explain_lines(r) {
            println!("{}", crate::core::text::sanitize_for_terminal(&line));
        }
    }
    Ok(())
}
