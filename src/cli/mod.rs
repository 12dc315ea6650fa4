//! Headless commands. Each reuses `core`, `store` and `infer`; the TUI is one more
//! front end started when no subcommand is given.

pub mod annotate;
mod bench;
mod corpus;
pub mod eval;
pub mod generate;
pub mod index;
mod ingest;
mod mcqa;
mod search;

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Parser, Subcommand};

use crate::config::{Config, Paths};
use crate::store::workspace::Workspace;

#[derive(Debug, Parser)]
#[command(
    name = "raglab",
    version,
    about = "A terminal workbench for evaluating RAG over public-health guidance"
)]
pub struct Cli {
    /// Workspace folder (default: from config, else DATA_DIR/workspaces/default).
    #[arg(long, global = true, env = "RAGLAB_WORKSPACE")]
    pub workspace: Option<PathBuf>,
    /// Theme for the TUI: dark, light, high-contrast, or a file in CONFIG_DIR/themes.
    #[arg(long, global = true)]
    pub theme: Option<String>,
    /// Questions JSONL listed in the TUI's query pane (default: config `questions`).
    #[arg(long, global = true)]
    pub questions: Option<PathBuf>,
    /// Reviewer name for the Annotate pane (asked for when absent).
    #[arg(long, global = true)]
    pub reviewer: Option<String>,
    #[command(subcommand)]
    pub command: Option<Command>,
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
    /// Evaluate retrieval (and later generation) against a query set.
    Eval {
        #[command(subcommand)]
        cmd: eval::EvalCmd,
    },
    /// Generate answers for a question set with retrieval and full provenance.
    Generate(generate::GenerateArgs),
    /// Judge stored answers on the rubric with a grammar-constrained model.
    Judge(generate::JudgeArgs),
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
    /// Benchmarks (report figures; they do not assert).
    Bench {
        #[command(subcommand)]
        cmd: BenchCmd,
    },
    /// Print where raglab keeps config, data, models and the workspace.
    Paths,
}

#[derive(Debug, Subcommand)]
pub enum BenchCmd {
    /// Per-stage hybrid query latency (p50/p95) and alpha-sweep cost.
    Retrieval(bench::BenchArgs),
    /// Generation tokens/s: raglab's wall clock against llama.cpp's own counters.
    Generate(bench::GenBenchArgs),
}

#[derive(Debug, Subcommand)]
pub enum ReportCmd {
    /// Pass rates per criterion and target-rank bucket, latency and tokens, frugality.
    Answers(generate::ReportArgs),
}

/// What every command needs: resolved paths, config and the workspace.
pub struct Context {
    pub paths: Paths,
    pub config: Config,
    pub workspace: Workspace,
}

impl Context {
    pub fn new(workspace: Option<PathBuf>) -> Result<Self> {
        let paths = Paths::discover()?;
        let config = Config::load(&paths)?;
        let dir = workspace.unwrap_or_else(|| config.workspace_dir(&paths));
        let workspace = Workspace::open(&dir)
            .with_context(|| format!("cannot open workspace {}", dir.display()))?;
        Ok(Self {
            paths,
            config,
            workspace,
        })
    }
}

/// Send logs to DATA_DIR/logs/raglab.log: stdout and stderr belong to the user (and
/// to the TUI's screen). `RAGLAB_LOG` sets the filter (default `info`).
fn init_logging(paths: &Paths) {
    let file = paths.log_file();
    if let Some(dir) = file.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let Ok(f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&file)
    else {
        return;
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("RAGLAB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,lance=warn,tantivy=warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(std::sync::Mutex::new(f))
        .try_init();
}

pub fn run(cli: Cli) -> Result<()> {
    let ctx = Context::new(cli.workspace)?;
    init_logging(&ctx.paths);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    match cli.command {
        None => rt.block_on(crate::tui::run(
            ctx,
            crate::tui::TuiOptions {
                theme: cli.theme,
                questions: cli.questions,
                reviewer: cli.reviewer,
            },
        )),
        Some(Command::Ingest(args)) => rt.block_on(ingest::run(&ctx, args)),
        Some(Command::Corpus { cmd }) => rt.block_on(corpus::run(&ctx, cmd)),
        Some(Command::Index(args)) => rt.block_on(index::run(&ctx, args)),
        Some(Command::Search(args)) => rt.block_on(search::run(&ctx, args)),
        Some(Command::Eval { cmd }) => rt.block_on(eval::run(&ctx, cmd)),
        Some(Command::Annotate { cmd }) => rt.block_on(annotate::create(&ctx, cmd)),
        Some(Command::Labels { cmd }) => rt.block_on(annotate::labels(&ctx, cmd)),
        Some(Command::Agree(args)) => rt.block_on(annotate::agree(&ctx, args)),
        Some(Command::Bench {
            cmd: BenchCmd::Retrieval(args),
        }) => rt.block_on(bench::run(&ctx, args)),
        Some(Command::Bench {
            cmd: BenchCmd::Generate(args),
        }) => rt.block_on(bench::generate(&ctx, args)),
        Some(Command::Generate(args)) => rt.block_on(generate::generate(&ctx, args)),
        Some(Command::Judge(args)) => rt.block_on(generate::run_judge(&ctx, args)),
        Some(Command::Report {
            cmd: ReportCmd::Answers(args),
        }) => rt.block_on(generate::report(&ctx, args)),
        Some(Command::Paths) => {
            println!("config:    {}", ctx.paths.config_file().display());
            println!("data:      {}", ctx.paths.data_dir.display());
            println!("models:    {}", ctx.paths.models_dir().display());
            println!("workspace: {}", ctx.workspace.root().display());
            println!("log:       {}", ctx.paths.log_file().display());
            Ok(())
        }
    }
}

/// Print `value` as pretty JSON on stdout.
pub(crate) fn print_json<T: serde::Serialize>(value: &T) -> Result<()> {
    println!("{}", serde_json::to_string_pretty(value)?);
    Ok(())
}
