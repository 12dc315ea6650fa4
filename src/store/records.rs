//! Append-only lance tables of serde records (answers, judgements, labels).
//!
//! Rows are converted to and from arrow with `arrow-json` against an explicit schema,
//! so each table has real typed columns (lists, numbers, booleans) that lance, pandas or
//! DuckDB can read directly. Every append is one lance commit taken under the
//! workspace's writer lock: once `append` returns, the rows are in a committed version
//! (a killed process cannot lose them), and two processes appending at once are
//! serialised instead of racing.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lance::Dataset;
use lance::dataset::{WriteMode, WriteParams};
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::workspace::Workspace;
use super::{Result, StoreError};

/// Build a schema from `(name, type, nullable)` triples.
pub fn schema(fields: &[(&str, DataType, bool)]) -> SchemaRef {
    Arc::new(Schema::new(
        fields
            .iter()
            .map(|(n, t, null)| Field::new(*n, t.clone(), *null))
            .collect::<Vec<_>>(),
    ))
}

/// A list-of-strings column type.
pub fn list_of(t: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("item", t, true)))
}

pub struct Table<'a> {
    ws: &'a Workspace,
    name: &'a str,
    schema: SchemaRef,
}

impl<'a> Table<'a> {
    pub fn new(ws: &'a Workspace, name: &'a str, schema: SchemaRef) -> Self {
        Self { ws, name, schema }
    }

    pub fn exists(&self) -> bool {
        self.ws.path(self.name).join("_versions").is_dir()
    }

    fn to_batch<T: Serialize>(&self, rows: &[T]) -> Result<RecordBatch> {
        let arrow = |source| StoreError::Arrow {
            what: self.name.to_string(),
            source,
        };
        let mut decoder = arrow_json::ReaderBuilder::new(self.schema.clone())
            .build_decoder()
            .map_err(arrow)?;
        decoder.serialize(rows).map_err(arrow)?;
        Ok(decoder
            .flush()
            .map_err(arrow)?
            .unwrap_or_else(|| RecordBatch::new_empty(self.schema.clone())))
    }

    /// Append rows as one commit; returns the new dataset version.
    pub async fn append<T: Serialize>(&self, rows: &[T]) -> Result<u64> {
        let batch = self.to_batch(rows)?;
        let _guard = self.ws.lock_for_write()?;
        let mode = if self.exists() {
            WriteMode::Append
        } else {
            WriteMode::Create
        };
        let reader = RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone());
        let params = WriteParams {
            mode,
            ..Default::default()
        };
        let uri = self.ws.uri(self.name);
        let ds = Dataset::write(reader, uri.as_str(), Some(params))
            .await
            .map_err(|e| StoreError::lance(&uri, e))?;
        Ok(ds.version().version)
    }

    /// Every stored row, in commit order, as one arrow batch with the table's schema
    /// (an empty batch when nothing was ever appended).
    pub async fn read_batch(&self) -> Result<RecordBatch> {
        if !self.exists() {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        super::scan_all(&self.ws.uri(self.name)).await
    }

    /// Write every stored row to `out` as a parquet file (zstd-compressed, the
    /// table's own typed columns), for tools that read parquet but not lance.
    /// `dest` names the destination in errors. Returns the number of rows written.
    pub async fn export_parquet<W: std::io::Write + Send>(
        &self,
        out: W,
        dest: &str,
    ) -> Result<usize> {
        use parquet::arrow::ArrowWriter;
        use parquet::basic::{Compression, ZstdLevel};
        use parquet::file::properties::WriterProperties;

        let batch = self.read_batch().await?;
        let parquet = |source| StoreError::Parquet {
            path: dest.to_string(),
            source,
        };
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let mut writer = ArrowWriter::try_new(out, batch.schema(), Some(props)).map_err(parquet)?;
        writer.write(&batch).map_err(parquet)?;
        writer.close().map_err(parquet)?;
        Ok(batch.num_rows())
    }

    /// Every row, in commit order.
    pub async fn read_all<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        if !self.exists() {
            return Ok(Vec::new());
        }
        let batch = self.read_batch().await?;
        let arrow = |source| StoreError::Arrow {
            what: self.name.to_string(),
            source,
        };
        let mut writer = arrow_json::LineDelimitedWriter::new(Vec::new());
        writer.write_batches(&[&batch]).map_err(arrow)?;
        writer.finish().map_err(arrow)?;
        let bytes = writer.into_inner();
        let text = String::from_utf8_lossy(&bytes);
        text.lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                serde_json::from_str(l)
                    .map_err(|e| StoreError::Invalid(format!("{}: bad row: {e}", self.name)))
            })
            .collect()
    }
}
