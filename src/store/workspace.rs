//! A workspace: one folder holding every dataset and index of one corpus.
//!
//! ```text
//! WORKSPACE/
//!   chunks.lance/              chunks with metadata (lance)
//!   index/bm25/                tantivy index over chunk text + header path
//!   embeddings/MODEL.lance/    one vector dataset per embedding model (+ IVF index)
//!   answers.lance/             generated answers with full provenance
//!   judgements.lance/          rubric judgements of answers by the LLM judge
//!   mcqa.lance/                multiple-choice answers of `eval mcqa`
//!   items.lance/               annotation items
//!   labels.lance/              reviewer labels (append-only log of versions)
//!   eval/last-failures.json    failed questions of the last `eval retrieval`
//!   .locks/NAME.lock           advisory lock serialising the writers of dataset NAME
//! ```
//!
//! Durability: lance's local store writes its files without `fsync`, so a commit it
//! reports could still be lost to an OS crash or power cut. Every commit raglab makes
//! is followed by [`Changes::make_durable`]: the files the commit created or changed,
//! and the folders that name them, are synced before the caller is told "saved".

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};

use super::{Result, StoreError};

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
    durable: bool,
}

/// Holds a dataset's writer lock until dropped: the file lock (other processes) and
/// this process's own queue for it (other tasks).
pub struct WriteGuard {
    // Field order is drop order: the file lock is released before the next task of
    // this process is let in.
    _file: File,
    _local: tokio::sync::OwnedMutexGuard<()>,
}

/// One async queue per lock file in this process: tasks wait for a dataset's lock
/// here, without occupying a thread, and only the task at the head blocks (on a
/// blocking-pool thread, never a runtime worker) for the file lock.
fn local_queue(path: &Path) -> Arc<tokio::sync::Mutex<()>> {
    static QUEUES: LazyLock<Mutex<HashMap<PathBuf, Arc<tokio::sync::Mutex<()>>>>> =
        LazyLock::new(Default::default);
    let mut queues = QUEUES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    queues.entry(path.to_path_buf()).or_default().clone()
}

impl Workspace {
    /// Open (creating the folder if needed) a workspace at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| StoreError::io(&root, e))?;
        let root = root.canonicalize().map_err(|e| StoreError::io(&root, e))?;
        Ok(Self {
            root,
            durable: true,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Path of a dataset or index inside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Lance URI of a dataset (a local path).
    pub fn uri(&self, name: &str) -> String {
        self.path(name).display().to_string()
    }

    /// Whether commits are synced to disk (on unless turned off to measure its cost).
    pub fn with_durability(mut self, durable: bool) -> Self {
        self.durable = durable;
        self
    }

    /// The lock file of dataset `name`.
    pub fn lock_path(&self, name: &str) -> PathBuf {
        self.root.join(".locks").join(format!("{name}.lock"))
    }

    /// Take dataset `name`'s exclusive writer lock (waits while another task or
    /// process holds it). Lance commits are atomic on their own; the lock keeps two
    /// read-modify-write updates (re-ingest, schema evolution, creating a dataset)
    /// from losing each other's changes. Waiting never blocks a runtime worker, so
    /// any number of saves can be pending on a 2-worker runtime while the UI runs.
    pub async fn lock_for_write(&self, name: &str) -> Result<WriteGuard> {
        let path = self.lock_path(name);
        let local = local_queue(&path).lock_owned().await;
        let file = tokio::task::spawn_blocking(move || -> Result<File> {
            if let Some(dir) = path.parent() {
                std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
            }
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| StoreError::io(&path, e))?;
            file.lock().map_err(|e| StoreError::io(&path, e))?;
            Ok(file)
        })
        .await
        .map_err(|e| StoreError::Invalid(format!("waiting for the writer lock: {e}")))??;
        Ok(WriteGuard {
            _file: file,
            _local: local,
        })
    }

    /// The files of dataset `name` as they are now, to find what a commit changes.
    pub fn before_commit(&self, name: &str) -> Changes {
        let dir = self.path(name);
        Changes {
            files: if self.durable {
                listing(&dir)
            } else {
                HashSet::new()
            },
            existed: dir.exists(),
            dir,
            root: self.root.clone(),
            durable: self.durable,
        }
    }
}

/// The state of a dataset's files before a commit (see [`Workspace::before_commit`]).
pub struct Changes {
    dir: PathBuf,
    root: PathBuf,
    existed: bool,
    files: HashSet<PathBuf>,
    durable: bool,
}

impl Changes {
    /// Sync every file the commit created or changed, then the folders holding them
    /// (a new file's name is durable only once its folder is), on a blocking thread.
    /// Returns how many files were synced.
    pub async fn make_durable(self) -> Result<usize> {
        if !self.durable {
            return Ok(0);
        }
        tokio::task::spawn_blocking(move || self.sync_blocking())
            .await
            .map_err(|e| StoreError::Invalid(format!("syncing a commit: {e}")))?
    }

    fn sync_blocking(&self) -> Result<usize> {
        let sync = |p: &Path| -> Result<()> {
            File::open(p)
                .and_then(|f| f.sync_all())
                .map_err(|e| StoreError::io(p, e))
        };
        let mut dirs = std::collections::BTreeSet::new();
        let mut n = 0;
        // Lance never rewrites a file in place (every commit writes new data,
        // manifest and transaction files), except the `_latest.manifest` pointer of
        // older dataset versions: new names, plus that one, are what a commit changed.
        for path in listing(&self.dir) {
            let pointer = path.file_name().is_some_and(|n| n == "_latest.manifest");
            if pointer || !self.files.contains(&path) {
                sync(&path)?;
                n += 1;
                if let Some(d) = path.parent() {
                    dirs.insert(d.to_path_buf());
                }
            }
        }
        // Folders up to the dataset's own, and the workspace's when it was created.
        let mut parents = std::collections::BTreeSet::new();
        for d in &dirs {
            let mut d = d.as_path();
            while d.starts_with(&self.dir) && d != self.dir {
                parents.insert(d.to_path_buf());
                d = d.parent().unwrap_or(&self.dir);
            }
        }
        dirs.extend(parents);
        dirs.insert(self.dir.clone());
        if !self.existed {
            dirs.insert(self.root.clone());
        }
        for d in &dirs {
            sync(d)?;
        }
        Ok(n)
    }
}

/// Every file under `dir`, by name only (directory entries, no `stat` per file: a
/// labels dataset holds three files per commit, and this runs twice per commit).
fn listing(dir: &Path) -> HashSet<PathBuf> {
    let mut out = HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(e.path()),
                Ok(_) => {
                    out.insert(e.path());
                }
                Err(_) => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::records::{Table, schema};
    use arrow_schema::DataType;

    #[derive(serde::Serialize)]
    struct Row {
        id: String,
    }

    /// What a commit created is found (and synced) exactly: the synced count equals
    /// the files that appeared in the dataset, counted independently.
    #[tokio::test]
    async fn a_commit_syncs_exactly_the_files_it_created() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = Workspace::open(dir.path()).expect("workspace");
        let table = Table::new(&ws, "t.lance", schema(&[("id", DataType::Utf8, false)]));
        let count = |p: &Path| walk(p).len();
        for n in 0..3 {
            let before = ws.before_commit("t.lance");
            let files_before = count(&ws.path("t.lance"));
            table
                .append(&[Row {
                    id: format!("r{n}"),
                }])
                .await
                .expect("append");
            let created = count(&ws.path("t.lance")) - files_before;
            assert!(
                created >= 2,
                "a commit writes data and a manifest: {created}"
            );
            assert_eq!(before.make_durable().await.expect("sync"), created);
        }
        // Measuring mode syncs nothing.
        let off = ws.clone().with_durability(false);
        let before = off.before_commit("t.lance");
        assert_eq!(before.make_durable().await.expect("no sync"), 0);
    }

    fn walk(p: &Path) -> Vec<PathBuf> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(p) else {
            return out; // not created yet
        };
        for e in entries.flatten() {
            let path = e.path();
            if path.is_dir() {
                out.extend(walk(&path));
            } else {
                out.push(path);
            }
        }
        out
    }
}
