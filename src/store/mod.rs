//! Adapters that read, persist or index core types: source files, the workspace
//! layout, lance datasets (chunks, embeddings, answers, judgements, labels) and the
//! tantivy index. Async where lance is async; never imported by `core`.

pub mod chunks;
pub mod dense_ivf;
pub mod dense_scan;
pub mod huge_pages;
pub mod keys;
pub mod lists;
pub mod parquet_table;
pub mod records;
pub mod sources;
pub mod sparse;
mod sparse_stats;
pub mod vectors;
pub mod workspace;

/// Errors from the storage layer. Each names the dataset or file involved.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("lance dataset {path}: {source}")]
    Lance {
        path: String,
        #[source]
        source: lance::Error,
    },
    #[error("arrow data in {what}: {source}")]
    Arrow {
        what: String,
        #[source]
        source: arrow_schema::ArrowError,
    },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("parquet file {path}: {source}")]
    Parquet {
        path: String,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("{0}")]
    Invalid(String),
}

impl StoreError {
    pub(crate) fn io(path: impl AsRef<std::path::Path>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.as_ref().display().to_string(),
            source,
        }
    }
    pub(crate) fn lance(path: impl Into<String>, source: lance::Error) -> Self {
        Self::Lance {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// Offer `on_batch` each batch of dataset `ds` (of `ws`, named `name`) in order, with
/// the dataset's row count (to reserve room at the first): a reader that keeps its own
/// rows never holds the whole dataset twice (one concatenated batch beside its rows),
/// which at a million chunks is gigabytes and seconds of copying.
pub(crate) async fn scan_batches(
    ws: &workspace::Workspace,
    name: &str,
    ds: &lance::Dataset,
    mut on_batch: impl FnMut(usize, &arrow_array::RecordBatch) -> Result<()>,
) -> Result<()> {
    use futures::TryStreamExt;
    let lance_err = |e| StoreError::lance(ws.uri(name), e);
    let rows = ds.count_rows(None).await.map_err(lance_err)?;
    let mut stream = ds.scan().try_into_stream().await.map_err(lance_err)?;
    while let Some(batch) = stream.try_next().await.map_err(lance_err)? {
        on_batch(rows, &batch)?;
    }
    Ok(())
}

/// Column `name` of `batch` as UTF-8 strings (`None`: absent or of another type).
pub(crate) fn string_column<'b>(
    batch: &'b arrow_array::RecordBatch,
    name: &str,
) -> Option<&'b arrow_array::StringArray> {
    use arrow_array::cast::AsArray;
    batch
        .column_by_name(name)
        .and_then(|c| c.as_string_opt::<i32>())
}

/// Open dataset `name` of `ws` and read it whole as one batch.
pub(crate) async fn scan_all(
    ws: &workspace::Workspace,
    name: &str,
) -> Result<arrow_array::RecordBatch> {
    let ds = ws.open_dataset(name).await?;
    ds.scan()
        .try_into_batch()
        .await
        .map_err(|e| StoreError::lance(ws.uri(name), e))
}
