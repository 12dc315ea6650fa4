//! raglab entry point: parse the command line; no subcommand opens the TUI.

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = raglab::cli::Cli::parse();
    match raglab::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
