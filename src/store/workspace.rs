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
//!   write.lock                 advisory lock serialising writers of shared datasets
//! ```

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};

use super::{Result, StoreError};

#[derive(Debug, Clone)]
pub struct Workspace {
    root: PathBuf,
}

/// Holds the workspace's writer lock until dropped.
pub struct WriteGuard {
    _file: File,
}

impl Workspace {
    /// Open (creating the folder if needed) a workspace at `root`.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(|e| StoreError::io(&root, e))?;
        let root = root.canonicalize().map_err(|e| StoreError::io(&root, e))?;
        Ok(Self { root })
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

    /// Take the exclusive writer lock (blocks while another process holds it). Lance
    /// commits are atomic on their own; the lock prevents two read-modify-write
    /// updates (re-ingest, index rebuild) from losing each other's changes.
    pub fn lock_for_write(&self) -> Result<WriteGuard> {
        let path = self.path("write.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| StoreError::io(&path, e))?;
        file.lock().map_err(|e| StoreError::io(&path, e))?;
        Ok(WriteGuard { _file: file })
    }
}
