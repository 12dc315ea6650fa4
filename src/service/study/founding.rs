//! The study a workspace holds, remembered, so that a signed study never reads as
//! unsigned: a workspace without a roster is an *unsigned* study where every label
//! counts under the name it carries and anyone may lead, so deleting `roster.lance`
//! would otherwise undo every signature check at once.
//!
//! Two memories of the founding entry (the lead's first roster row; its signature
//! is the study id):
//! - In the workspace, `study.lance`: a copy of the founding entry, appended when the
//!   roster is founded (and by the lead's next roster or rubric write for a study
//!   founded before this memory existed). The first row that verifies as a founding
//!   entry counts; later rows change nothing.
//! - In each reader's data folder, `DATA_DIR/studies/HASH.txt` (HASH from the
//!   workspace's location): the founding signature, written the first time this user
//!   reads the study's roster.
//!
//! The rule: a workspace whose roster is missing, empty or has no founding entry,
//! while either memory holds a founding, is an error naming the roster file; a roster
//! founded by another entry than the one remembered (the roster replaced) is an error
//! naming both. What is detected: the roster deleted or replaced while `study.lance`
//! stays, or by anyone once this user has read the study. What is not: someone who
//! deletes (or rewrites) both `roster.lance` and `study.lance` resets the workspace
//! to an unsigned study for every reader who never read it before (a new reviewer, a
//! fresh machine, a cleared data folder); the remembered signature holds only on the
//! machines that read the study.

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};

use crate::core::signing::{Roster, RosterEntry, short};
use crate::store::keys;
use crate::store::records::Table;
use crate::store::workspace::Workspace;

/// The study's roster, written by its lead.
pub const ROSTER: &str = "roster.lance";

/// The workspace's copy of the study's founding roster entry.
pub const FOUNDED: &str = "study.lance";

pub fn founded_table(ws: &Workspace) -> Table<'_> {
    Table::of::<RosterEntry>(ws, FOUNDED)
}

/// The founding signature `study.lance` holds: that of its first row that verifies
/// as a founding entry.
pub(super) fn recorded(rows: &[RosterEntry]) -> Option<String> {
    rows.iter().find_map(|r| {
        let (roster, _) = Roster::from_rows(std::slice::from_ref(r), &keys::verify_cached);
        roster.founding().map(str::to_string)
    })
}

/// Record the founding entry of `roster` (read from `rows`) in the workspace when
/// `study.lance` holds none yet.
pub(super) async fn record(ws: &Workspace, rows: &[RosterEntry], roster: &Roster) -> Result<()> {
    let Some(founding) = roster.founding() else {
        return Ok(());
    };
    let table = founded_table(ws);
    if recorded(&table.read_all::<RosterEntry>().await?).is_some() {
        return Ok(());
    }
    if let Some(entry) = rows
        .iter()
        .find(|r| r.signature.as_deref() == Some(founding))
    {
        table.append(std::slice::from_ref(entry)).await?;
    }
    Ok(())
}

/// Where this user remembers the study of the workspace at `location`.
pub fn memory_file(data_dir: &Path, location: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    let hash = Sha256::digest(location.trim_end_matches('/').as_bytes());
    let hex: String = hash.iter().take(8).map(|b| format!("{b:02x}")).collect();
    data_dir.join("studies").join(format!("{hex}.txt"))
}

/// The founding signature remembered in `file` (its second line; the first names
/// the workspace, for people).
fn remembered(file: &Path) -> Option<String> {
    let text = std::fs::read_to_string(file).ok()?;
    text.lines()
        .nth(1)
        .map(|l| l.trim().to_string())
        .filter(|l| !l.is_empty())
}

/// Refuse a roster that is not the study's the workspace (`founded`: the rows of
/// `study.lance`) or this user (`memory`: their memory file, if any) remembers; a
/// roster read for the first time by this user is remembered in `memory`.
pub(super) fn guard(
    ws: &Workspace,
    roster: &Roster,
    founded: &[RosterEntry],
    memory: Option<&Path>,
) -> Result<()> {
    let roster_file = ws.uri(ROSTER);
    let in_workspace = recorded(founded).map(|id| (id, ws.uri(FOUNDED)));
    let in_memory = memory.and_then(|m| Some((remembered(m)?, m.display().to_string())));
    let now = roster.founding();
    for (id, kept_in) in in_workspace.iter().chain(in_memory.iter()) {
        match now {
            None => bail!(
                "the study roster {roster_file} is missing, empty or without its founding entry, but this workspace holds a signed study (study id {}, remembered in {kept_in}): a study once signed never reads as unsigned; restore roster.lance (from a backup, or the object store's earlier versions)",
                short(id)
            ),
            Some(f) if f != id.as_str() => bail!(
                "the study roster {roster_file} was replaced: it is founded as study {}, but this workspace's study is {} (remembered in {kept_in}); restore the study's own roster.lance",
                short(f),
                short(id)
            ),
            Some(_) => {}
        }
    }
    if let (Some(file), Some(f), None) = (memory, now, &in_memory) {
        remember(file, &ws.location(), f);
    }
    Ok(())
}

/// Write this user's memory of the study (best effort: a data folder that cannot be
/// written leaves the workspace's own memory as the only one, and is logged).
fn remember(file: &Path, location: &str, founding: &str) {
    let written = file
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .map_err(anyhow::Error::from)
        .and_then(|()| {
            crate::service::base::write_whole(file, format!("{location}\n{founding}\n").as_bytes())
        });
    if let Err(e) = written {
        tracing::warn!("cannot remember the study in {}: {e:#}", file.display());
    }
}
