//! Files a use case writes into or reads from the workspace: whole-or-nothing
//! writes and a cheap stamp of a dataset's commits.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};

use super::context::Context;

/// A cheap stamp of one dataset's commits: its version files' count, first and last
/// names (None: no dataset). Reads a directory listing only.
pub fn dataset_stamp(ctx: &Context, name: &str) -> Option<String> {
    if ctx.workspace.is_remote() {
        // No local listing to read on object storage: a stamp that changes every
        // 10 s makes the panes re-read the study from the store at most that often.
        let tick = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() / 10);
        return Some(format!("remote {tick}"));
    }
    let dir = ctx.workspace.path(name).join("_versions");
    // The listing itself (count and names): lance names versions upward or, in
    // its newer scheme, downward, so no single name is "the newest".
    std::fs::read_dir(dir).ok().map(|entries| {
        let mut names: Vec<String> = entries
            .filter_map(|e| Some(e.ok()?.file_name().to_string_lossy().into_owned()))
            .collect();
        names.sort();
        format!(
            "{} {} {}",
            names.len(),
            names.first().cloned().unwrap_or_default(),
            names.last().cloned().unwrap_or_default()
        )
    })
}

/// Write `bytes` to a sibling temporary file and rename it over `path`, so an
/// interrupted export never leaves a truncated file where a good one was.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".partial");
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
}
