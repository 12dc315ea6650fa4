//! The chunks dataset (lance): one row per chunk with its metadata.
//!
//! Writes are whole-dataset overwrites committed as a new lance version: lance commits
//! by atomically publishing a manifest, so a crash mid-write leaves the previous
//! version intact and readers never see a half-written dataset. Re-ingesting a
//! document replaces its chunks (keyed by document id), so chunks never duplicate.

use std::collections::HashSet;
use std::sync::Arc;

use arrow_array::builder::{ListBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::types::{UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, RecordBatch, RecordBatchIterator, StringArray, UInt32Array, UInt64Array,
};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lance::Dataset;
use lance::dataset::{WriteMode, WriteParams};

use super::workspace::Workspace;
use super::{Result, StoreError};
use crate::core::chunk::Chunk;

pub const DATASET: &str = "chunks.lance";

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("doc_id", DataType::Utf8, false),
        Field::new("title", DataType::Utf8, false),
        Field::new("topic", DataType::Utf8, true),
        Field::new(
            "header_path",
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            false,
        ),
        Field::new("text", DataType::Utf8, false),
        Field::new("byte_start", DataType::UInt64, false),
        Field::new("byte_end", DataType::UInt64, false),
        Field::new("word_count", DataType::UInt32, false),
        Field::new("ordinal", DataType::UInt32, false),
    ]))
}

fn to_batch(chunks: &[Chunk]) -> Result<RecordBatch> {
    let strings = |f: &dyn Fn(&Chunk) -> &str| -> ArrayRef {
        Arc::new(chunks.iter().map(|c| Some(f(c))).collect::<StringArray>())
    };
    let mut paths = ListBuilder::new(StringBuilder::new());
    for c in chunks {
        for h in &c.header_path {
            paths.values().append_value(h);
        }
        paths.append(true);
    }
    let u64s = |f: &dyn Fn(&Chunk) -> usize| -> ArrayRef {
        Arc::new(chunks.iter().map(|c| f(c) as u64).collect::<UInt64Array>())
    };
    let u32s = |f: &dyn Fn(&Chunk) -> usize| -> ArrayRef {
        Arc::new(
            chunks
                .iter()
                .map(|c| u32::try_from(f(c)).unwrap_or(u32::MAX))
                .collect::<UInt32Array>(),
        )
    };
    let columns: Vec<ArrayRef> = vec![
        strings(&|c| &c.id),
        strings(&|c| &c.doc_id),
        strings(&|c| &c.title),
        Arc::new(
            chunks
                .iter()
                .map(|c| c.topic.as_deref())
                .collect::<StringArray>(),
        ),
        Arc::new(paths.finish()),
        strings(&|c| &c.text),
        u64s(&|c| c.byte_start),
        u64s(&|c| c.byte_end),
        u32s(&|c| c.word_count),
        u32s(&|c| c.ordinal),
    ];
    RecordBatch::try_new(schema(), columns).map_err(|source| StoreError::Arrow {
        what: DATASET.into(),
        source,
    })
}

fn from_batch(batch: &RecordBatch) -> Result<Vec<Chunk>> {
    let bad =
        |name: &str| StoreError::Invalid(format!("{DATASET}: missing or mistyped column `{name}`"));
    let s = |name: &str| -> Result<&StringArray> {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_string_opt::<i32>())
            .ok_or_else(|| bad(name))
    };
    let (id, doc, title, topic, text) =
        (s("id")?, s("doc_id")?, s("title")?, s("topic")?, s("text")?);
    let paths = batch
        .column_by_name("header_path")
        .and_then(|c| c.as_list_opt::<i32>())
        .ok_or_else(|| bad("header_path"))?;
    let u64col = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<UInt64Type>())
            .ok_or_else(|| bad(name))
    };
    let u32col = |name: &str| {
        batch
            .column_by_name(name)
            .and_then(|c| c.as_primitive_opt::<UInt32Type>())
            .ok_or_else(|| bad(name))
    };
    let (bs, be, wc, ord) = (
        u64col("byte_start")?,
        u64col("byte_end")?,
        u32col("word_count")?,
        u32col("ordinal")?,
    );
    let mut out = Vec::with_capacity(batch.num_rows());
    for i in 0..batch.num_rows() {
        let p = paths.value(i);
        let p = p.as_string::<i32>();
        out.push(Chunk {
            id: id.value(i).to_string(),
            doc_id: doc.value(i).to_string(),
            title: title.value(i).to_string(),
            topic: (!topic.is_null(i)).then(|| topic.value(i).to_string()),
            header_path: (0..p.len()).map(|j| p.value(j).to_string()).collect(),
            text: text.value(i).to_string(),
            byte_start: usize::try_from(bs.value(i)).unwrap_or(usize::MAX),
            byte_end: usize::try_from(be.value(i)).unwrap_or(usize::MAX),
            word_count: wc.value(i) as usize,
            ordinal: ord.value(i) as usize,
        });
    }
    Ok(out)
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

    pub fn exists(&self) -> bool {
        self.ws.path(DATASET).join("_versions").is_dir()
    }

    /// Open the dataset, with a clear error when nothing was ingested yet.
    pub async fn open(&self) -> Result<Dataset> {
        if !self.exists() {
            return Err(StoreError::Invalid(format!(
                "no chunks in workspace {} yet: run `raglab ingest PATH` first",
                self.ws.root().display()
            )));
        }
        let uri = self.ws.uri(DATASET);
        Dataset::open(&uri)
            .await
            .map_err(|e| StoreError::lance(uri, e))
    }

    /// Every chunk, ordered by document id then position.
    pub async fn load_all(&self) -> Result<Vec<Chunk>> {
        if !self.exists() {
            return Ok(Vec::new());
        }
        let batch = super::scan_all(&self.ws.uri(DATASET)).await?;
        let mut chunks = from_batch(&batch)?;
        chunks.sort_by(|a, b| a.doc_id.cmp(&b.doc_id).then(a.ordinal.cmp(&b.ordinal)));
        Ok(chunks)
    }

    /// Current lance version of the dataset (0 when absent).
    pub async fn version(&self) -> Result<u64> {
        if !self.exists() {
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
        let _guard = self.ws.lock_for_write()?;
        let existing = self.load_all().await?;
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
        let batch = to_batch(&kept)?;
        let reader = RecordBatchIterator::new(vec![Ok(batch)], schema());
        let params = WriteParams {
            mode: WriteMode::Overwrite,
            ..Default::default()
        };
        let uri = self.ws.uri(DATASET);
        let ds = Dataset::write(reader, uri.as_str(), Some(params))
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        Ok(WriteSummary {
            added,
            replaced,
            total,
            version: ds.version().version,
        })
    }
}
