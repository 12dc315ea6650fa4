//! raglab entry point: parse the command line, build the service context, and pick
//! the front: the TUI without a subcommand, the headless CLI with one.
// The CLI dispatch awaits one large future per command; computing their layout
// needs more than the default 128 levels.
#![recursion_limit = "256"]

use anyhow::Result;
use clap::Parser;

use raglab::cli::Cli;
use raglab::service::base::{Context, init_logging, runtime};

fn main() -> std::process::ExitCode {
    // `raglab corpus list | head` closes stdout early: end quietly as other Unix tools
    // do, instead of printing a panic.
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if msg.contains("Broken pipe") {
            std::process::exit(141);
        }
        default_hook(info);
    }));
    match run(Cli::parse()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            if let Some(exit) = e.downcast_ref::<raglab::cli::Exit>() {
                if !exit.message.is_empty() {
                    let msg = raglab::core::text::sanitize_for_terminal(&exit.message);
                    use std::io::Write as _;
                    let _ = writeln!(std::io::stderr(), "error: {msg}");
                }
                return std::process::ExitCode::from(exit.code);
            }
            // Errors quote file names, ids and lines of input: cleaned like all text.
            let msg = raglab::core::text::sanitize_for_terminal(&format!("{e:#}"));
            // Not `eprintln!`: after a hang-up stderr is gone, and a failed write would
            // panic (the error is in the log as well).
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "error: {msg}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<()> {
    if let Some(done) = raglab::cli::run_standalone(&cli) {
        return done;
    }
    let viewer = cli.viewer();
    let mut ctx = Context::new(cli.workspace)?;
    if let Some(r) = cli.rubric.clone() {
        ctx.config.annotation.rubric = Some(r); // the flag wins over the config
    }
    if let Some(n) = cli.gpu_layers {
        ctx.config.models.gpu_layers = Some(n); // the flag wins over the config
    }
    init_logging(&ctx.paths);
    let rt = runtime()?;
    match cli.command {
        None => rt.block_on(raglab::tui::run(
            ctx,
            raglab::tui::TuiOptions {
                theme: cli.theme,
                questions: cli.questions,
                reviewer: cli.reviewer,
                lead: cli.role == raglab::cli::StudyRole::Lead,
            },
        )),
        Some(command) => rt.block_on(raglab::cli::run(&ctx, command, &viewer)),
    }
}
