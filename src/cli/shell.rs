//! Shell completions and manual pages. Both are made from the clap definition the
//! parser itself uses, so they list exactly the commands and flags raglab accepts.
//! They need no workspace, config or model: `main` runs them before any of those is
//! opened, so `raglab completions bash` works on a machine that has never run raglab.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::CommandFactory;

use super::Cli;

#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write raglab.1 and one page per subcommand (raglab-eval-retrieval.1, ...) into
    /// this folder, created if missing. Without it, raglab.1 goes to stdout.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Print the completion script for `args.shell` on stdout.
pub fn completions(args: &CompletionsArgs) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "raglab", &mut script);
    to_stdout(&script)
}

/// Write to stdout; a reader that stops early (`| head`) ends raglab quietly with the
/// status of a broken pipe, as every other printing command does.
fn to_stdout(bytes: &[u8]) -> Result<()> {
    match std::io::Write::write_all(&mut std::io::stdout(), bytes) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(141),
        other => Ok(other?),
    }
}

/// Print raglab.1, or write every page into `args.out`.
pub fn man(args: &ManArgs) -> Result<()> {
    match &args.out {
        None => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command()).render(&mut page)?;
            to_stdout(&page)
        }
        Some(dir) => write_pages(dir),
    }
}

/// One page per command, hidden commands left out (they are not for users), named as
/// `man` looks them up: `man raglab-eval-retrieval`.
fn write_pages(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("writing manual pages into {}", dir.display()))?;
    let pages = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "1"))
        .count();
    tell!(
        "{pages} manual pages in {} (try `man -l {}/raglab.1`)",
        dir.display(),
        dir.display()
    );
    Ok(())
}
