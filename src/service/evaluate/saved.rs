//! Reports kept in the workspace for the Evaluation pane: each a JSON file with the
//! time it was written, written whole then renamed so a reader never sees half a
//! report. Generic over the report, so the evaluations that write one and the
//! overview that reads them all both stand above this file.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use serde::{Deserialize, Serialize, de::DeserializeOwned};

use crate::service::base::{Context, now_rfc3339, write_whole};

/// Keep `report` at `rel` in the workspace with the time it is written.
pub fn save<T: Serialize>(ctx: &Context, rel: &str, report: T) -> Result<PathBuf> {
    let path = ctx.workspace.path(rel);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let saved = Saved {
        written_at: now_rfc3339(),
        report,
    };
    write_whole(&path, serde_json::to_string_pretty(&saved)?.as_bytes())?;
    Ok(path)
}

/// The report kept at `rel` (None: none was written; a damaged file names `cmd` to
/// write it again).
pub fn load<T: DeserializeOwned>(ctx: &Context, rel: &str, cmd: &str) -> Result<Option<Saved<T>>> {
    let path = ctx.workspace.path(rel);
    match std::fs::read_to_string(&path) {
        Ok(t) => serde_json::from_str(&t)
            .map(Some)
            .with_context(|| format!("{} is damaged: run `{cmd}` again", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Where `eval retrieval` leaves its report for the Evaluation pane.
pub const LAST_RETRIEVAL: &str = "eval/last-retrieval.json";
/// Where `eval retrieval` leaves every configuration's per-query scores for
/// `raglab compare`.
pub const LAST_SCORES: &str = "eval/last-scores.json";
/// Where `eval mcqa` leaves its report for the Evaluation pane.
pub const LAST_MCQA: &str = "eval/last-mcqa.json";

/// A report with the time it was written.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Saved<T> {
    pub written_at: String,
    pub report: T,
}
