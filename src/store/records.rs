//! Append-only lance tables of serde records (answers, judgements, labels).
//!
//! A table's arrow schema is traced from its record type ([`schema_of`]): the struct
//! is the one definition of a stored record, and adding a column means adding a field
//! (an `Option`, at the end, so older datasets gain it as nulls). Rows are converted
//! to and from arrow with `arrow-json` against that schema, so each table has real
//! typed columns (lists, numbers, booleans) that lance, pandas or
//! DuckDB can read directly. Every append is one lance commit taken under the
//! workspace's writer lock: once `append` returns, the rows are in a committed version
//! (a killed process cannot lose them), and two processes appending at once are
//! serialised instead of racing.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use lance::Dataset;
use lance::dataset::WriteMode;
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

/// The arrow schema of a record type, traced from the type (serde_arrow). Strings are
/// `Utf8` and sequences `List` with nullable `item`s, the layout datasets were
/// written with before the schemas were derived, so those datasets stay readable.
pub fn schema_of<T: DeserializeOwned>() -> SchemaRef {
    use serde_arrow::schema::{SchemaLike, TracingOptions};
    let options = TracingOptions::default()
        .strings_as_large_utf8(false)
        .sequence_as_large_list(false);
    // A record type that cannot be traced is a defect of the program, not of its
    // input: every record type is traced by the tests.
    let fields = Vec::<arrow_schema::FieldRef>::from_type::<T>(options)
        .unwrap_or_else(|e| panic!("{}: no arrow schema: {e}", std::any::type_name::<T>()));
    let fields: Vec<Field> = fields
        .iter()
        .map(|f| match f.data_type() {
            DataType::List(item) => {
                Field::new(f.name(), list_of(item.data_type().clone()), f.is_nullable())
            }
            _ => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new(fields))
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

    /// The table `name` of records `T`, with the schema traced from `T`.
    pub fn of<T: DeserializeOwned>(ws: &'a Workspace, name: &'a str) -> Self {
        Self::new(ws, name, schema_of::<T>())
    }

    /// Whether anything was ever appended (a dataset exists).
    pub async fn exists(&self) -> Result<bool> {
        self.ws.dataset_exists(self.name).await
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
        self.append_batch(batch).await
    }

    /// Append rows converted by serde_arrow (exact for floats: no text in between)
    /// as one commit; returns the new dataset version.
    pub async fn append_exact<T: Serialize>(&self, rows: &[T]) -> Result<u64> {
        let batch = serde_arrow::to_record_batch(self.schema.fields(), &rows)
            .map_err(|e| StoreError::Invalid(format!("{}: cannot convert rows: {e}", self.name)))?;
        self.append_batch(batch).await
    }

    /// Every row, read by serde_arrow straight from the arrow columns (floats exact).
    pub async fn read_exact<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        let batch = self.read_batch().await?;
        serde_arrow::from_record_batch(&batch)
            .map_err(|e| StoreError::Invalid(format!("{}: unreadable rows: {e}", self.name)))
    }

    /// Append one arrow batch (with the table's schema) as one commit, retried when
    /// it loses to a concurrent writer (another process on an object store).
    pub async fn append_batch(&self, batch: RecordBatch) -> Result<u64> {
        let _guard = self.ws.lock_for_write(self.name).await?;
        let changes = self.ws.before_commit(self.name);
        let uri = self.ws.uri(self.name);
        let version = super::workspace::retry_on_conflict(&uri, |_| {
            let batch = batch.clone();
            let uri = uri.clone();
            async move {
                if !self.exists().await?
                    && let Some(v) = self.ws.create_dataset(self.name, batch.clone()).await?
                {
                    return Ok(v);
                }
                self.add_missing_columns().await?;
                let reader = RecordBatchIterator::new(vec![Ok(batch)], self.schema.clone());
                let params = self.ws.write_params(WriteMode::Append);
                let ds = Dataset::write(reader, uri.as_str(), Some(params))
                    .await
                    .map_err(|e| StoreError::lance(&uri, e))?;
                Ok(ds.version().version)
            }
        })
        .await?;
        changes.make_durable().await?;
        Ok(version)
    }

    /// Schema evolution: a table written by an older raglab lacks columns added since.
    /// Nullable ones are added as all-null columns (a metadata-only lance commit), so
    /// old rows read back as `None` and nothing stored is rewritten or lost. New
    /// columns are therefore always nullable and appended at the end of a schema.
    async fn add_missing_columns(&self) -> Result<()> {
        use lance::dataset::NewColumnTransform;

        let uri = self.ws.uri(self.name);
        let mut ds = self.ws.open_dataset(self.name).await?;
        let have: std::collections::HashSet<String> =
            ds.schema().fields.iter().map(|f| f.name.clone()).collect();
        let missing: Vec<Field> = self
            .schema
            .fields()
            .iter()
            .filter(|f| !have.contains(f.name()))
            .map(|f| f.as_ref().clone())
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if let Some(f) = missing.iter().find(|f| !f.is_nullable()) {
            return Err(StoreError::Invalid(format!(
                "{uri}: column `{}` is missing and cannot be added to existing rows (not nullable)",
                f.name()
            )));
        }
        tracing::info!(
            "{uri}: adding columns {:?}",
            missing.iter().map(|f| f.name()).collect::<Vec<_>>()
        );
        ds.add_columns(
            NewColumnTransform::AllNulls(Arc::new(Schema::new(missing))),
            None,
            None,
        )
        .await
        .map_err(|e| StoreError::lance(&uri, e))
    }

    /// Every stored row, in commit order, as one arrow batch with the table's schema
    /// (an empty batch when nothing was ever appended).
    pub async fn read_batch(&self) -> Result<RecordBatch> {
        if !self.exists().await? {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        super::scan_all(self.ws, self.name).await
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

    /// How many rows are stored (0 when nothing was ever appended).
    pub async fn count_rows(&self) -> Result<u64> {
        if !self.exists().await? {
            return Ok(0);
        }
        let ds = self.ws.open_dataset(self.name).await?;
        let n = ds
            .count_rows(None)
            .await
            .map_err(|e| StoreError::lance(self.ws.uri(self.name), e))?;
        Ok(n as u64)
    }

    /// Every row, in commit order.
    pub async fn read_all<T: DeserializeOwned>(&self) -> Result<Vec<T>> {
        if !self.exists().await? {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct V1 {
        id: String,
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    struct V2 {
        id: String,
        #[serde(default)]
        extra: Option<bool>,
    }

    /// A table written with an older schema gains the new nullable column on the next
    /// append; old rows read back with `None`, new rows with their value.
    #[tokio::test]
    async fn appending_with_a_newer_schema_adds_nullable_columns() {
        let dir = tempfile::tempdir().expect("tmp");
        let ws = Workspace::open(dir.path()).expect("workspace");
        let v1 = Table::new(&ws, "t.lance", schema(&[("id", DataType::Utf8, false)]));
        v1.append(&[V1 { id: "old".into() }])
            .await
            .expect("v1 append");
        let v2 = Table::new(
            &ws,
            "t.lance",
            schema(&[
                ("id", DataType::Utf8, false),
                ("extra", DataType::Boolean, true),
            ]),
        );
        v2.append(&[V2 {
            id: "new".into(),
            extra: Some(true),
        }])
        .await
        .expect("v2 append");
        let rows: Vec<V2> = v2.read_all().await.expect("read");
        assert_eq!(
            rows,
            vec![
                V2 {
                    id: "old".into(),
                    extra: None
                },
                V2 {
                    id: "new".into(),
                    extra: Some(true)
                }
            ]
        );
        // A missing column that is not nullable is refused, naming it.
        let strict = Table::new(
            &ws,
            "t.lance",
            schema(&[
                ("id", DataType::Utf8, false),
                ("extra", DataType::Boolean, true),
                ("must", DataType::Utf8, false),
            ]),
        );
        #[derive(Serialize)]
        struct V3 {
            id: String,
            extra: Option<bool>,
            must: String,
        }
        let err = strict
            .append(&[V3 {
                id: "x".into(),
                extra: None,
                must: "m".into(),
            }])
            .await
            .expect_err("not nullable");
        assert!(err.to_string().contains("`must`"), "{err}");
    }
}
