//! `raglab answers import|cite`: another system's answers as a run, and the citation
//! recall and precision of a run's answers.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::progress_bar;
use crate::core::template::TemplateKind;
use crate::service::answer::{CiteRequest, cite_run, import_answers};
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

pub async fn run(ctx: &Context, cmd: AnswersCmd) -> Result<()> {
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
    }
}
