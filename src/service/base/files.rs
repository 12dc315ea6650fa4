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

/// Write `bytes` to `path` whole or not at all. The bytes go into a temporary file of
/// their own in the same folder, created exclusively under a name no one can predict
/// (`O_EXCL`: a file or symbolic link planted at the name makes the create fail instead
/// of redirecting the write), synced, renamed over `path`, and the folder synced so the
/// rename survives a crash. An interrupted export never leaves a truncated file where a
/// good one was, and two writers never write into one temporary file.
pub fn write_whole(path: &Path, bytes: &[u8]) -> Result<()> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .with_context(|| format!("{}: not a file name", path.display()))?;
    let (mut file, tmp) = create_temporary(&dir, &name)?;
    let written = file
        .write_all(bytes)
        .with_context(|| format!("cannot write {}", tmp.display()));
    match written {
        Ok(()) => publish(file, &tmp, path),
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Finish a file written through [`create_temporary`]: sync it, rename it over `path`
/// and sync the folder, so that `path` holds the whole file or what it held before.
pub fn publish(file: std::fs::File, tmp: &Path, path: &Path) -> Result<()> {
    let done = file
        .sync_all()
        .with_context(|| format!("cannot write {}", tmp.display()))
        .and_then(|()| {
            std::fs::rename(tmp, path)
                .with_context(|| format!("cannot move {} to {}", tmp.display(), path.display()))
        });
    if done.is_err() {
        let _ = std::fs::remove_file(tmp);
        return done;
    }
    // The rename is durable once the folder's entry is on disk.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))
}

/// A new file `.NAME.PID.RANDOM.tmp` in `dir`, created exclusively (a file or link
/// already at the name is an error, never followed): where a whole-or-nothing file is
/// written before [`publish`] puts it in place.
pub fn create_temporary(dir: &Path, name: &str) -> Result<(std::fs::File, PathBuf)> {
    use std::hash::{BuildHasher as _, Hasher as _};
    let mut last = None;
    for _ in 0..16 {
        // RandomState is seeded from the OS's randomness for every new state.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let tmp = dir.join(format!(
            ".{name}.{}.{:016x}.tmp",
            std::process::id(),
            h.finish()
        ));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(f) => return Ok((f, tmp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", tmp.display())),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no name")))
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planted_link_at_the_old_temporary_name_redirects_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        let target = dir.path().join("out.json");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").expect("write");
        // Where the old code wrote its temporary file.
        std::os::unix::fs::symlink(&victim, dir.path().join("out.json.partial")).expect("link");
        write_whole(&target, b"{\"ok\": true}").expect("write");
        assert_eq!(std::fs::read(&target).expect("read"), b"{\"ok\": true}");
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        // Overwriting replaces the whole file and leaves no temporary behind.
        write_whole(&target, b"2").expect("again");
        assert_eq!(std::fs::read(&target).expect("read"), b"2");
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .expect("dir")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn a_planted_link_at_the_target_is_replaced_not_followed() {
        let dir = tempfile::tempdir().expect("tmp");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").expect("write");
        let target = dir.path().join("export.csv");
        std::os::unix::fs::symlink(&victim, &target).expect("link");
        write_whole(&target, b"a,b\n").expect("write");
        assert_eq!(std::fs::read(&victim).expect("read"), b"precious");
        assert!(
            !std::fs::symlink_metadata(&target)
                .expect("meta")
                .file_type()
                .is_symlink()
        );
    }
}
