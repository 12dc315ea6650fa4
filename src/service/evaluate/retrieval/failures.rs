//! The failed questions of the last `eval retrieval`, kept in the workspace for the
//! TUI's failures browser (`f`) and the Query pane's `n` / `p`.

use std::path::PathBuf;

use anyhow::{Context as _, Result};

use crate::core::question::FailedQuestion;
use crate::service::base::Context;

/// Where `eval retrieval` leaves the failed questions of every configuration it
/// evaluated, each with its configuration.
pub const LAST_FAILURES: &str = "eval/last-failures.json";

/// Write the failed questions where the TUI finds them (whole or not at all: a
/// temporary file renamed over the old one); returns the file.
pub(super) fn write_failures(ctx: &Context, failed: &[FailedQuestion]) -> Result<PathBuf> {
    let path = ctx.workspace.path(LAST_FAILURES);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::service::base::write_whole(&path, serde_json::to_string_pretty(failed)?.as_bytes())?;
    Ok(path)
}

/// The failed questions of the last `eval retrieval` (an empty list when none was
/// run; a damaged file is an error, not an empty list).
pub fn last_failures(ctx: &Context) -> Result<Vec<FailedQuestion>> {
    let path = ctx.workspace.path(LAST_FAILURES);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t).with_context(|| {
            format!(
                "{} is damaged: run `raglab eval retrieval` again",
                path.display()
            )
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}
