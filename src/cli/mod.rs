//! The headless front: clap parsing and text or JSON rendering. Each command calls
//! one service function; nothing here reaches `store` or `infer`.

/// Print a line of text output to stdout through the one terminal sanitiser
/// ([`crate::core::text::sanitize_for_terminal`]): every text printer of the CLI uses
/// it, so ids, topics, notes, reviewer names and corpus text cannot drive the
/// terminal. JSON output does not (it stays exact; serde escapes its controls).
macro_rules! say {
    () => { println!() };
    ($($arg:tt)*) => {
        println!("{}", $crate::core::text::sanitize_for_terminal(&format!($($arg)*)))
    };
}

/// [`say!`] without the newline.
macro_rules! say_part {
    ($($arg:tt)*) => {
        print!("{}", $crate::core::text::sanitize_for_terminal(&format!($($arg)*)))
    };
}

/// [`say!`] to stderr (progress notes and warnings).
macro_rules! tell {
    ($($arg:tt)*) => {
        eprintln!("{}", $crate::core::text::sanitize_for_terminal(&format!($($arg)*)))
    };
}

mod agree;
pub mod annotate;
mod answers;
mod args;
mod assess;
mod bench;
mod calibrate;
mod charts;
mod compare;
mod config_file;
mod corpus;
mod eval;
mod evalset;
mod gate;
mod generate;
mod index;
mod ingest;
pub mod json_schema;
mod mcqa;
mod preferences;
mod raters;
mod report_runs;
mod report_study;
mod search;
mod shell;
mod study;
mod summarise;

use std::path::PathBuf;

use anyhow::Result;
use clap::{Parser, Subcommand};

use crate::service::Context;

/// An ending with its own exit code, for commands a script reads by exit code (the
/// gate: 1 not shown non-inferior, 2 bad input or usage). The message, when there is
/// one, is printed as an error.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

impl Exit {
    /// Bad input or usage: exit 2 with `message`.
    pub fn usage(message: String) -> Self {
        Self { code: 2, message }
    }

    /// Exit `code` with nothing more to say (the report was printed).
    pub fn quiet(code: u8) -> Self {
        Self {
            code,
            message: String::new(),
        }
    }
}

/// The heading of the options every command takes: `raglab COMMAND --help` lists them
/// apart from the command's own flags, so a reader sees which flags the command adds.
pub const GLOBAL: &str = "Global options";

#[derive(Debug, Parser)]
#[command(
    name = "raglab",
    version,
    about = "A terminal workbench for evaluating RAG over public-health guidance"
)]
pub struct Cli {
    /// Workspace folder (default: from config, else DATA_DIR/workspaces/default).
    #[arg(long, global = true, help_heading = GLOBAL, env = "RAGLAB_WORKSPACE")]
    pub workspace: Option<PathBuf>,
    /// Theme for the TUI: dark, light, high-contrast, or a file in CONFIG_DIR/themes.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub theme: Option<String>,
    /// Questions JSONL listed in the TUI's query pane (default: config `questions`).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub questions: Option<PathBuf>,
    /// Your name in a study: the Annotate pane's reviewer (asked for when absent), the
    /// assessor of `assess next` and `assess grade`; `agree` shows a reviewer only what
    /// blinding allows them.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub reviewer: Option<String>,
    /// `lead`: the study lead sees every label, adjudicates disagreements and follows
    /// each reviewer's progress (named by `--reviewer`). In a study with a roster it
    /// needs the lead's key, as `--reviewer NAME` needs NAME's.
    #[arg(long, global = true, help_heading = GLOBAL, value_enum, default_value_t = StudyRole::Reviewer)]
    pub role: StudyRole,
    /// Rubric TOML of the Annotate pane, `judge`, `agree` and `labels` (default:
    /// config `[annotation] rubric`, else the paper's pass/fail rubric).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub rubric: Option<PathBuf>,
    /// Layers of every in-process model (generator, judge, embedder) offloaded to the
    /// GPU (default: config `[models] gpu_layers`, else all in a CUDA build, 0 in a
    /// CPU build). 0 keeps everything on the CPU.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub gpu_layers: Option<u32>,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Who is using raglab in an annotation study.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum StudyRole {
    Reviewer,
    Lead,
}

impl Cli {
    /// Who is looking at the study: the lead, the named reviewer, or (neither given)
    /// no one, who is shown no one's labels.
    pub fn viewer(&self) -> crate::service::study::Viewer {
        crate::service::study::Viewer::of(self.reviewer.as_deref(), self.role == StudyRole::Lead)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Read documents (.md .markdown .txt .html .jsonl) and store their chunks.
    Ingest(ingest::IngestArgs),
    /// Inspect the ingested corpus.
    Corpus {
        #[command(subcommand)]
        cmd: corpus::CorpusCmd,
    },
    /// Build or update the sparse index (BM25, TF-IDF) and the dense embeddings.
    Index(index::IndexArgs),
    /// Retrieve chunks for a question, with dense, sparse and fused ranks and scores.
    Search(search::SearchArgs),
    /// Write an LLM summary of every chunk (for the corpus variants C_S and C_R);
    /// resumable.
    Summarise(summarise::SummariseArgs),
    /// Evaluate retrieval (and later generation) against a query set.
    Eval {
        #[command(subcommand)]
        cmd: eval::EvalCmd,
    },
    /// Is one configuration really better? Paired tests (bootstrap CI, randomisation,
    /// t-test, Holm) over the per-query scores of the last `eval retrieval`.
    Compare(compare::TestArgs),
    /// May a candidate replace a baseline? A paired, clustered non-inferiority test on
    /// one metric for CI: exit 0 pass, 1 not shown non-inferior, 2 bad input.
    Gate(gate::GateArgs),
    /// Build an evaluation set: generate candidate questions, critique, filter.
    Evalset {
        #[command(subcommand)]
        cmd: evalset::EvalsetCmd,
    },
    /// Generate answers for a question set with retrieval and full provenance.
    Generate(generate::GenerateArgs),
    /// Judge stored answers on the rubric with a grammar-constrained model.
    Judge(generate::JudgeArgs),
    /// Answers from other systems (`import`), citation scores (`cite`) and grounded
    /// metrics (`ground`, `show-grounded`).
    Answers {
        #[command(subcommand)]
        cmd: answers::AnswersCmd,
    },
    /// Reports over stored answers.
    Report {
        #[command(subcommand)]
        cmd: ReportCmd,
    },
    /// Annotation items.
    Annotate {
        #[command(subcommand)]
        cmd: annotate::AnnotateCmd,
    },
    /// Reviewer labels: import, export, history.
    Labels {
        #[command(subcommand)]
        cmd: annotate::LabelsCmd,
    },
    /// Agreement table: kappa and macro-F1 with bootstrap CIs per criterion and overall.
    Agree(annotate::AgreeArgs),
    /// Calibrate the judge on the study's final labels: few-shot examples chosen by
    /// k-fold (no item judged by a prompt that saw it); kappa against the final
    /// labels before and after, their paired difference, judge within human noise.
    Calibrate(calibrate::CalibrateArgs),
    /// Rank the runs of a pairwise study (`annotate create --pairs A,B`): Bradley-Terry
    /// scores with bootstrap CIs, head-to-head records, reviewers' agreement on their
    /// preferences (the study lead's: `--role lead`).
    Preferences(preferences::PreferencesArgs),
    /// Relevance assessment: pool runs, grade pooled chunks 0/1/2 (signed, blind
    /// between assessors), follow progress.
    Assess {
        #[command(subcommand)]
        cmd: assess::AssessCmd,
    },
    /// The grown qrels: shipped targets plus the assessors' grades.
    Qrels {
        #[command(subcommand)]
        cmd: assess::QrelsCmd,
    },
    /// Who is who in a study: your signing key, the roster of reviewers' keys.
    Study {
        #[command(subcommand)]
        cmd: study::StudyCmd,
    },
    /// Benchmarks (report figures; they do not assert).
    Bench {
        #[command(subcommand)]
        cmd: BenchCmd,
    },
    /// Print where raglab keeps its config, signing key, data, models, workspace and
    /// log (creates none of them).
    Paths,
    /// The config file: `raglab config init` writes one with every default shown.
    Config {
        #[command(subcommand)]
        cmd: config_file::ConfigCmd,
    },
    /// Print a shell completion script: `raglab completions bash > ~/.local/share/bash-completion/completions/raglab`.
    Completions(shell::CompletionsArgs),
    /// Print the manual page, or write one per command with `--out DIR`.
    Man(shell::ManArgs),
}

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Per-stage hybrid query latency (p50/p95) and alpha-sweep cost, on the workspace
    /// or on a synthetic workspace of N chunks (`--synthetic N`).
    Retrieval(bench::BenchArgs),
    /// Generation tokens/s: raglab's wall clock against llama.cpp's own counters.
    Generate(bench::GenBenchArgs),
    /// Embedding speed (passages/s, query latency) of several embedder set-ups, interleaved in one run.
    Embed(bench::EmbedBenchArgs),
    /// A GGUF pointwise reranker's time per question, prompts decoded whole and with
    /// their common prefix shared, against llama.cpp's prompt-eval time, side by side.
    Rerank(bench::RerankBenchArgs),
}

#[derive(Debug, Subcommand)]
pub enum ReportCmd {
    /// Pass rates per criterion and target-rank bucket, latency and tokens, frugality.
    Answers(generate::ReportArgs),
    /// Every pipeline side by side: retrieval configurations and answer runs with
    /// quality (clustered 95% intervals), cost, Pareto marks and a pinned baseline.
    Runs(report_runs::RunsMatrixArgs),
    /// One self-contained study report (`DIR/report.md` and SVG charts): corpus,
    /// retrieval beside the paper, alpha sweep, breakdowns, significance, MCQA, judge
    /// pass rates, agreement and frugality, each from its command's numbers, as the
    /// viewer (`--role`, `--reviewer`) may see them.
    Study(report_study::StudyArgs),
}

/// Run a command that opens no workspace and loads no model (`paths`, completions,
/// manual pages, writing the config file); `None` when the command needs them. These
/// run before a workspace is opened, so a first look at a machine creates nothing.
pub fn run_standalone(cli: &Cli) -> Option<Result<()>> {
    match cli.command.as_ref()? {
        Command::Paths => Some(config_file::print_paths(cli.workspace.as_deref())),
        Command::Completions(args) => Some(shell::completions(args)),
        Command::Man(args) => Some(shell::man(args)),
        Command::Config { cmd } => Some(config_file::run(cmd)),
        _ => None,
    }
}

/// Run one headless command.
pub async fn run(
    ctx: &Context,
    command: Command,
    viewer: &crate::service::study::Viewer,
) -> Result<()> {
    match command {
        Command::Ingest(args) => ingest::run(ctx, args).await,
        Command::Corpus { cmd } => corpus::run(ctx, cmd).await,
        Command::Index(args) => index::run(ctx, args).await,
        Command::Search(args) => search::run(ctx, args).await,
        Command::Summarise(args) => summarise::run(ctx, args).await,
        Command::Eval { cmd } => eval::run(ctx, cmd).await,
        Command::Compare(args) => compare::run(ctx, args).await,
        Command::Gate(args) => gate::run(ctx, args).await,
        Command::Evalset { cmd } => evalset::run(ctx, cmd).await,
        Command::Annotate { cmd } => annotate::create(ctx, cmd).await,
        Command::Labels { cmd } => {
            crate::service::study::confirm(ctx, viewer).await?;
            annotate::labels(ctx, cmd, viewer).await
        }
        Command::Agree(args) => {
            crate::service::study::confirm(ctx, viewer).await?;
            annotate::agree(ctx, args, viewer).await
        }
        Command::Calibrate(args) => {
            crate::service::study::confirm(ctx, viewer).await?;
            calibrate::run(ctx, args, viewer).await
        }
        Command::Preferences(args) => {
            crate::service::study::confirm(ctx, viewer).await?;
            preferences::run(ctx, args, viewer).await
        }
        Command::Study { cmd } => study::run(ctx, cmd).await,
        Command::Assess { cmd } => {
            // The assessor is the reviewer named by `--reviewer` (as a reviewer).
            let who = match viewer {
                crate::service::study::Viewer::Reviewer(r) => Some(r.as_str()),
                _ => None,
            };
            assess::run(ctx, cmd, who).await
        }
        Command::Qrels { cmd } => assess::qrels(ctx, cmd).await,
        Command::Bench {
            cmd: BenchCmd::Retrieval(args),
        } => bench::run(ctx, args).await,
        Command::Bench {
            cmd: BenchCmd::Generate(args),
        } => bench::generate(ctx, args).await,
        Command::Bench {
            cmd: BenchCmd::Rerank(args),
        } => bench::rerank(ctx, args).await,
        Command::Bench {
            cmd: BenchCmd::Embed(args),
        } => bench::embed(ctx, args).await,
        Command::Generate(args) => generate::generate(ctx, args).await,
        Command::Judge(args) => generate::run_judge(ctx, args).await,
        Command::Answers { cmd } => answers::run(ctx, cmd, viewer).await,
        Command::Report {
            cmd: ReportCmd::Answers(args),
        } => {
            crate::service::study::confirm(ctx, viewer).await?;
            generate::report(ctx, args, viewer).await
        }
        Command::Report {
            cmd: ReportCmd::Runs(args),
        } => {
            crate::service::study::confirm(ctx, viewer).await?;
            report_runs::run(ctx, args, viewer).await
        }
        Command::Report {
            cmd: ReportCmd::Study(args),
        } => {
            crate::service::study::confirm(ctx, viewer).await?;
            report_study::run(ctx, args, viewer).await
        }
        Command::Paths | Command::Completions(_) | Command::Man(_) | Command::Config { .. } => {
            anyhow::bail!("this command runs before a workspace is opened: call run_standalone")
        }
    }
}

/// A progress bar on standard error for a long step.
pub(crate) fn progress_bar(what: &str) -> indicatif::ProgressBar {
    indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{bar:30}} {{pos}}/{{len}} {{per_sec}} eta {{eta}}"
        ))
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    )
}

/// A `(done, total)` progress callback drawing on `bar`.
pub(crate) fn on_progress(bar: &indicatif::ProgressBar) -> impl Fn(usize, usize) + '_ {
    move |done, total| {
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    }
}

/// Print `value` as pretty JSON on stdout. On a terminal, characters a terminal acts on
/// (C1 controls, bidi controls, DEL) are written as `\u` escapes, which parse to the
/// same value; piped or redirected output is serde's own, byte for byte.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    let json = serde_json::to_string_pretty(value)?;
    if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        println!("{}", crate::core::text::json_for_terminal(&json));
    } else {
        println!("{json}");
    }
    Ok(())
}
