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
//! On object storage (`--workspace s3://bucket/prefix`, the `s3` feature) every lance
//! dataset lives under the prefix and nothing else is state: the BM25 index and the
//! last evaluation's failure list are derived data, kept (and rebuilt from the chunks)
//! in a local folder for that workspace. Writers on several machines cannot share a
//! file lock, so there lance's own commit protocol is the concurrency control: a
//! commit is a conditional `PUT` of the next manifest, which fails when another
//! writer took that version first; lance then re-reads, checks the two transactions
//! do not conflict (appends never do) and retries, and raglab retries a commit that
//! still lost (see [`retry_on_conflict`]).
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
    /// The workspace folder; for an object-store workspace, the local folder of its
    /// derived data (BM25 index, exports, the last failure list).
    root: PathBuf,
    /// Where the lance datasets live when not under `root`.
    remote: Option<Arc<Remote>>,
    durable: bool,
}

/// An object-store location of a workspace's datasets.
struct Remote {
    /// `s3://bucket/prefix`, without a trailing slash.
    uri: String,
    /// Lance storage options (endpoint, region, credentials); the usual `AWS_*`
    /// environment variables fill in whatever is not set here.
    options: HashMap<String, String>,
}

/// The location and the option names only: the options hold credentials
/// (`aws_secret_access_key`, session tokens), which a debug print or a panic message
/// must not carry.
impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut names: Vec<&String> = self.options.keys().collect();
        names.sort();
        f.debug_struct("Remote")
            .field("uri", &self.uri)
            .field("options", &names)
            .finish_non_exhaustive()
    }
}

/// Whether `location` names an object store rather than a folder.
pub fn is_object_store(location: &str) -> bool {
    location.starts_with("s3://")
}

/// Holds a dataset's writer lock until dropped: the file lock (other processes) and
/// this process's own queue for it (other tasks).
pub struct WriteGuard {
    // Field order is drop order: the file lock is released before the next task of
    // this process is let in.
    _file: Option<File>,
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
            remote: None,
            durable: true,
        })
    }

    /// A workspace whose datasets live on object storage at `uri` (`s3://bucket/prefix`),
    /// with its derived data in the local folder `local` (created if needed). Nothing
    /// is contacted until a dataset is read or written.
    pub fn open_remote(
        uri: &str,
        local: impl Into<PathBuf>,
        options: HashMap<String, String>,
    ) -> Result<Self> {
        if !is_object_store(uri) {
            return Err(StoreError::Invalid(format!(
                "{uri}: not an object-store location (expected s3://bucket/prefix)"
            )));
        }
        if !cfg!(feature = "s3") {
            return Err(StoreError::Invalid(format!(
                "{uri}: this raglab was built without the `s3` feature (cargo build --release --features s3)"
            )));
        }
        let bucket = uri["s3://".len()..].split('/').next().unwrap_or_default();
        if bucket.is_empty() {
            return Err(StoreError::Invalid(format!("{uri}: no bucket named")));
        }
        let mut ws = Self::open(local)?;
        ws.remote = Some(Arc::new(Remote {
            uri: uri.trim_end_matches('/').to_string(),
            options,
        }));
        ws.durable = false; // an acknowledged PUT is durable; there are no local files to sync
        Ok(ws)
    }

    /// The local folder: the workspace itself, or an object-store workspace's derived
    /// data.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the datasets are, as a user names it: the folder or the `s3://` URI.
    pub fn location(&self) -> String {
        match &self.remote {
            Some(r) => r.uri.clone(),
            None => self.root.display().to_string(),
        }
    }

    /// Whether the datasets live on object storage.
    pub fn is_remote(&self) -> bool {
        self.remote.is_some()
    }

    /// Local path of derived data (an index, an export) inside the workspace.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// Lance URI of a dataset (a local path, or a key prefix on the object store).
    pub fn uri(&self, name: &str) -> String {
        match &self.remote {
            Some(r) => format!("{}/{name}", r.uri),
            None => self.path(name).display().to_string(),
        }
    }

    /// Open dataset `name` (with the object store's options).
    pub async fn open_dataset(&self, name: &str) -> Result<lance::Dataset> {
        match self.load_dataset(name).await {
            Err(e) if self.remote.is_none() => {
                // A power cut between lance publishing a version's manifest and the
                // manifest's bytes reaching the disk leaves an empty newest manifest,
                // and lance then refuses the whole dataset. An empty manifest holds
                // nothing: it is set aside (renamed, never deleted) and the dataset
                // opens at the version before it, which is what was durable.
                let set_aside = self.set_aside_empty_manifests(name)?;
                if set_aside.is_empty() {
                    return Err(e);
                }
                tracing::warn!(
                    "{name}: the newest version's manifest was empty (a commit cut off by a crash); set aside as {}; reading the version before it",
                    set_aside.join(", ")
                );
                self.load_dataset(name).await
            }
            other => other,
        }
    }

    async fn load_dataset(&self, name: &str) -> Result<lance::Dataset> {
        let uri = self.uri(name);
        let builder = lance::dataset::builder::DatasetBuilder::from_uri(&uri);
        let builder = match &self.remote {
            Some(r) => builder.with_storage_options(r.options.clone()),
            None => builder,
        };
        builder.load().await.map_err(|e| StoreError::lance(uri, e))
    }

    /// Rename every empty `*.manifest` of local dataset `name` to
    /// `*.manifest.empty`; returns the new names.
    fn set_aside_empty_manifests(&self, name: &str) -> Result<Vec<String>> {
        let versions = self.path(name).join("_versions");
        let Ok(entries) = std::fs::read_dir(&versions) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for e in entries.flatten() {
            let p = e.path();
            let empty = e.metadata().is_ok_and(|m| m.is_file() && m.len() == 0);
            if empty && p.extension().is_some_and(|x| x == "manifest") {
                let to = p.with_extension("manifest.empty");
                std::fs::rename(&p, &to).map_err(|err| StoreError::io(&p, err))?;
                out.push(to.display().to_string());
            }
        }
        Ok(out)
    }

    /// Whether dataset `name` has been created (a committed version exists). Locally,
    /// a version is a manifest in `_versions`, not the folder alone: a first commit that
    /// failed after the folder was made left one with no manifest, and taking that for
    /// a dataset made every later append fail to open it, for good.
    pub async fn dataset_exists(&self, name: &str) -> Result<bool> {
        if self.remote.is_none() {
            let versions = self.path(name).join("_versions");
            return Ok(std::fs::read_dir(versions).is_ok_and(|entries| {
                entries
                    .flatten()
                    .any(|e| e.path().extension().is_some_and(|x| x == "manifest"))
            }));
        }
        match self.open_dataset(name).await {
            Ok(_) => Ok(true),
            Err(StoreError::Lance {
                source: lance::Error::DatasetNotFound { .. },
                ..
            }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Create dataset `name` holding `batch`; `None` when another writer created it
    /// first (then nothing was committed: append instead).
    ///
    /// Never a plain `WriteMode::Create`: lance's create is an overwrite, and when
    /// the dataset appears between its existence check and its commit, the create is
    /// committed over it, replacing what the other writer stored (measured: two
    /// writers starting at once on an object store lost the first label of one). Here
    /// the data is written uncommitted, then committed with no conflict resolution
    /// (lance's strict overwrite), which fails instead of replacing anything.
    pub async fn create_dataset(
        &self,
        name: &str,
        batch: arrow_array::RecordBatch,
    ) -> Result<Option<u64>> {
        use lance::dataset::{CommitBuilder, InsertBuilder, WriteMode};
        let uri = self.uri(name);
        let params = self.write_params(WriteMode::Create);
        let outcome = async {
            let txn = InsertBuilder::new(uri.as_str())
                .with_params(&params)
                .execute_uncommitted(vec![batch])
                .await?;
            let mut commit = CommitBuilder::new(uri.as_str()).with_max_retries(0);
            if let Some(store) = params.store_params.clone() {
                commit = commit.with_store_params(store);
            }
            commit.execute(txn).await
        }
        .await;
        match outcome {
            Ok(ds) => Ok(Some(ds.version().version)),
            // Whatever the error, a dataset that exists now was created by another
            // writer: this one committed nothing and appends instead.
            Err(e) => match self.dataset_exists(name).await {
                Ok(true) => {
                    tracing::info!("{uri}: created by another writer first ({e}); appending");
                    Ok(None)
                }
                _ => Err(StoreError::lance(uri, e)),
            },
        }
    }

    /// Write parameters for a commit to this workspace in `mode`.
    pub fn write_params(&self, mode: lance::dataset::WriteMode) -> lance::dataset::WriteParams {
        let store_params = self.remote.as_ref().map(|r| lance::io::ObjectStoreParams {
            storage_options_accessor: Some(Arc::new(
                lance::io::StorageOptionsAccessor::with_static_options(r.options.clone()),
            )),
            ..Default::default()
        });
        lance::dataset::WriteParams {
            mode,
            store_params,
            ..Default::default()
        }
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
    ///
    /// On object storage only this process's tasks queue here: a file lock cannot
    /// reach the other machines, and lance's conditional commits keep concurrent
    /// writers safe (see the module notes).
    pub async fn lock_for_write(&self, name: &str) -> Result<WriteGuard> {
        let path = self.lock_path(name);
        let local = local_queue(&path).lock_owned().await;
        if self.remote.is_some() {
            return Ok(WriteGuard {
                _file: None,
                _local: local,
            });
        }
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
            _file: Some(file),
            _local: local,
        })
    }

    /// The files of dataset `name` as they are now, to find what a commit changes.
    pub fn before_commit(&self, name: &str) -> Changes {
        let dir = self.path(name);
        let durable = self.durable && self.remote.is_none();
        Changes {
            files: if durable {
                listing(&dir)
            } else {
                HashSet::new()
            },
            existed: dir.exists(),
            dir,
            root: self.root.clone(),
            durable,
        }
    }
}

/// Commit attempts before a write that keeps losing to other writers is reported.
const COMMIT_ATTEMPTS: u32 = 8;

/// Run a commit, again when it lost to a concurrent writer: lance retries a
/// conflicting commit itself, but under heavy contention (many writers appending to
/// one dataset on an object store) it can give up. `commit(first)` is told whether
/// this is the first attempt.
pub async fn retry_on_conflict<T, F, Fut>(what: &str, mut commit: F) -> Result<T>
where
    F: FnMut(bool) -> Fut,
    Fut: std::future::Future<Output = Result<T>>,
{
    let mut attempt = 0;
    loop {
        // Boxed: a commit nests deep futures (lance's write, the retry, the caller's
        // queue), and unboxed their layout overflows the compiler's query depth in
        // every crate that awaits a save.
        match Box::pin(commit(attempt == 0)).await {
            Err(StoreError::Lance { source, path })
                if is_conflict(&source) && attempt + 1 < COMMIT_ATTEMPTS =>
            {
                attempt += 1;
                tracing::info!("{path}: commit lost to another writer ({source}); retry {attempt}");
                let pause = 20u64 * (1 << attempt.min(6)) + u64::from(std::process::id() % 17);
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
            }
            Err(e) => {
                if attempt > 0 {
                    tracing::warn!("{what}: commit failed after {attempt} retries");
                }
                return Err(e);
            }
            Ok(v) => return Ok(v),
        }
    }
}

/// Whether a lance error means another writer committed first (worth retrying).
fn is_conflict(e: &lance::Error) -> bool {
    matches!(
        e,
        lance::Error::CommitConflict { .. }
            | lance::Error::RetryableCommitConflict { .. }
            | lance::Error::TooMuchWriteContention { .. }
            | lance::Error::DatasetAlreadyExists { .. }
            | lance::Error::IncompatibleTransaction { .. }
    )
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

    /// A first commit that died after making `_versions` (no manifest): the dataset
    /// does not exist yet, and the next append creates it.
    #[tokio::test]
    async fn a_versions_folder_without_a_manifest_is_no_dataset() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = Workspace::open(dir.path()).expect("workspace");
        std::fs::create_dir_all(ws.path("t.lance").join("_versions")).expect("mkdir");
        assert!(!ws.dataset_exists("t.lance").await.expect("exists"));
        let table = Table::new(&ws, "t.lance", schema(&[("id", DataType::Utf8, false)]));
        table
            .append(&[Row { id: "r0".into() }])
            .await
            .expect("append after a failed first commit");
        assert!(ws.dataset_exists("t.lance").await.expect("exists"));
        assert_eq!(table.count_rows().await.expect("rows"), 1);
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
