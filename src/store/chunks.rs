//! The chunks dataset (lance): one row per chunk with its metadata.
//!
//! Writes are whole-dataset overwrites committed as a new lance version: lance commits
//! by atomically publishing a manifest, so a crash mid-write leaves the previous
//! version intact and readers never see a half-written dataset. Re-ingesting a
//! document replaces its chunks (keyed by document id), so chunks never duplicate.
//!
//! Every overwrite is conditional on the version it read: it is committed as exactly
//! the next version (lance's strict overwrite, no conflict resolution), so when another
//! writer committed in between — another machine ingesting into the same `s3://`
//! workspace, where no file lock reaches — the commit fails, and the update is done
//! again over what is there now. Without this, the later of two ingests replaced the
//! dataset with its own read of it and dropped the other's documents.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use lance::Dataset;
use lance::dataset::{CommitBuilder, InsertBuilder, WriteMode};

use super::workspace::Workspace;
use super::{Result, StoreError};
use crate::core::chunk::Chunk;

pub const DATASET: &str = "chunks.lance";

/// The dataset's schema, traced from [`Chunk`] itself (`usize` fields are `UInt64`).
fn schema() -> SchemaRef {
    super::records::schema_of::<Chunk>()
}

fn to_batch(chunks: &[Chunk]) -> Result<RecordBatch> {
    serde_arrow::to_record_batch(schema().fields(), &chunks)
        .map_err(|e| StoreError::Invalid(format!("{DATASET}: cannot convert chunks: {e}")))
}

/// Chunks from a batch. Datasets written before the schema was traced from the type
/// hold `word_count` and `ordinal` as `UInt32`; they read back the same. Columns added
/// since (all nullable: the token counts) are read as nulls where a dataset lacks them.
fn from_batch(batch: &RecordBatch) -> Result<Vec<Chunk>> {
    let invalid = |e: &dyn std::fmt::Display| {
        StoreError::Invalid(format!("{DATASET}: unreadable chunks: {e}"))
    };
    let have = batch.schema();
    let mut fields = have.fields().to_vec();
    let mut columns = batch.columns().to_vec();
    for f in schema().fields() {
        if have.field_with_name(f.name()).is_err() && f.is_nullable() {
            fields.push(f.clone());
            columns.push(arrow_array::new_null_array(f.data_type(), batch.num_rows()));
        }
    }
    let full = RecordBatch::try_new(
        std::sync::Arc::new(arrow_schema::Schema::new(fields)),
        columns,
    )
    .map_err(|e| invalid(&e))?;
    serde_arrow::from_record_batch(&full).map_err(|e| invalid(&e))
}

/// Handle to a workspace's chunks dataset.
pub struct ChunkStore<'a> {
    ws: &'a Workspace,
}

/// What a write changed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct WriteSummary {
    pub added: usize,
    pub replaced: usize,
    pub total: usize,
    pub version: u64,
}

impl<'a> ChunkStore<'a> {
    pub fn new(ws: &'a Workspace) -> Self {
        Self { ws }
    }

    /// Whether anything was ingested (the dataset exists).
    pub async fn exists(&self) -> Result<bool> {
        self.ws.dataset_exists(DATASET).await
    }

    /// Open the dataset, with a clear error when nothing was ingested yet.
    pub async fn open(&self) -> Result<Dataset> {
        if !self.exists().await? {
            return Err(StoreError::Invalid(format!(
                "no chunks in workspace {} yet: run `raglab ingest PATH` first",
                self.ws.location()
            )));
        }
        self.ws.open_dataset(DATASET).await
    }

    /// Every chunk, ordered by document id then position.
    pub async fn load_all(&self) -> Result<Vec<Chunk>> {
        self.load_all_counting(&mut |_, _| {}).await
    }

    /// [`Self::load_all`], calling `on_rows(read, total)` after each batch read (a
    /// million chunks take seconds: the TUI shows how far it got).
    pub async fn load_all_counting(
        &self,
        on_rows: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<Vec<Chunk>> {
        Ok(self.snapshot_counting(on_rows).await?.1)
    }

    /// The dataset as it is now (`None` before the first ingest) and its chunks,
    /// ordered by document id then position: the base of a read-modify-write.
    async fn snapshot(&self) -> Result<(Option<Arc<Dataset>>, Vec<Chunk>)> {
        self.snapshot_counting(&mut |_, _| {}).await
    }

    async fn snapshot_counting(
        &self,
        on_rows: &mut (dyn FnMut(usize, usize) + Send),
    ) -> Result<(Option<Arc<Dataset>>, Vec<Chunk>)> {
        if !self.exists().await? {
            return Ok((None, Vec::new()));
        }
        let ds = Arc::new(self.ws.open_dataset(DATASET).await?);
        let mut chunks = Vec::new();
        super::scan_batches(self.ws, DATASET, &ds, |rows, batch| {
            if chunks.capacity() == 0 {
                chunks.reserve_exact(rows);
            }
            chunks.extend(from_batch(batch)?);
            on_rows(chunks.len(), rows);
            Ok(())
        })
        .await?;
        chunks.sort_by(|a, b| a.doc_id.cmp(&b.doc_id).then(a.ordinal.cmp(&b.ordinal)));
        Ok((Some(ds), chunks))
    }

    /// Current lance version of the dataset (0 when absent).
    pub async fn version(&self) -> Result<u64> {
        if !self.exists().await? {
            return Ok(0);
        }
        Ok(self.open().await?.version().version)
    }

    /// Replace the chunks of every document in `new_chunks` (and of `replaced_docs`,
    /// documents re-read that now yield no chunk) and keep all others. One atomic commit.
    pub async fn upsert_documents(
        &self,
        new_chunks: Vec<Chunk>,
        replaced_docs: &HashSet<String>,
    ) -> Result<WriteSummary> {
        let _guard = self.ws.lock_for_write(DATASET).await?;
        let changes = self.ws.before_commit(DATASET);
        let uri = self.ws.uri(DATASET);
        let summary = super::workspace::retry_on_conflict(&uri, |_| {
            self.try_upsert(new_chunks.clone(), replaced_docs)
        })
        .await?;
        changes.make_durable().await?;
        Ok(summary)
    }

    /// One attempt of [`Self::upsert_documents`] over the dataset as it is now.
    async fn try_upsert(
        &self,
        new_chunks: Vec<Chunk>,
        replaced_docs: &HashSet<String>,
    ) -> Result<WriteSummary> {
        let (base, existing) = self.snapshot().await?;
        let before = existing.len();
        let mut kept: Vec<Chunk> = existing
            .into_iter()
            .filter(|c| !replaced_docs.contains(&c.doc_id))
            .collect();
        let replaced = before - kept.len();
        let added = new_chunks.len();
        kept.extend(new_chunks);
        kept.sort_by(|a, b| a.doc_id.cmp(&b.doc_id).then(a.ordinal.cmp(&b.ordinal)));
        let mut ids = HashSet::with_capacity(kept.len());
        if let Some(dup) = kept.iter().find(|c| !ids.insert(c.id.as_str())) {
            return Err(StoreError::Invalid(format!(
                "duplicate chunk id `{}`",
                dup.id
            )));
        }
        let total = kept.len();
        let version = self.overwrite(base, &kept).await?;
        Ok(WriteSummary {
            added,
            replaced,
            total,
            version,
        })
    }

    /// Record the token counts `counts` (chunk id -> tokens) taken with `model`'s
    /// tokenizer; chunks not named keep theirs. One atomic commit (none when nothing
    /// changes); returns how many chunks changed.
    pub async fn set_token_counts(
        &self,
        counts: &std::collections::HashMap<String, usize>,
        model: &str,
    ) -> Result<usize> {
        let _guard = self.ws.lock_for_write(DATASET).await?;
        let changes = self.ws.before_commit(DATASET);
        let uri = self.ws.uri(DATASET);
        let changed =
            super::workspace::retry_on_conflict(&uri, |_| self.try_set_token_counts(counts, model))
                .await?;
        if changed > 0 {
            changes.make_durable().await?;
        }
        Ok(changed)
    }

    /// One attempt of [`Self::set_token_counts`] over the dataset as it is now.
    async fn try_set_token_counts(
        &self,
        counts: &std::collections::HashMap<String, usize>,
        model: &str,
    ) -> Result<usize> {
        let (base, mut chunks) = self.snapshot().await?;
        let mut changed = 0;
        for c in &mut chunks {
            if let Some(&n) = counts.get(&c.id)
                && (c.token_count != Some(n) || c.token_model.as_deref() != Some(model))
            {
                c.token_count = Some(n);
                c.token_model = Some(model.to_string());
                changed += 1;
            }
        }
        if changed > 0 {
            self.overwrite(base, &chunks).await?;
        }
        Ok(changed)
    }

    /// Write `chunks` as the version right after `base` (the version they were read
    /// from; `None`: the dataset did not exist). Fails with a commit conflict when any
    /// other writer committed after `base`, so the caller can redo its update.
    async fn overwrite(&self, base: Option<Arc<Dataset>>, chunks: &[Chunk]) -> Result<u64> {
        let batch = to_batch(chunks)?;
        let uri = self.ws.uri(DATASET);
        let Some(base) = base else {
            return self
                .ws
                .create_dataset(DATASET, batch)
                .await?
                .ok_or_else(|| {
                    StoreError::lance(&uri, lance::Error::dataset_already_exists(&uri))
                });
        };
        let params = self.ws.write_params(WriteMode::Overwrite);
        let txn = InsertBuilder::new(base.clone())
            .with_params(&params)
            .execute_uncommitted(vec![batch])
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        let mut commit = CommitBuilder::new(base).with_max_retries(0);
        if let Some(store) = params.store_params.clone() {
            commit = commit.with_store_params(store);
        }
        let ds = commit
            .execute(txn)
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        Ok(ds.version().version)
    }
}
