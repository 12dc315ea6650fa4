//! A Parquet file written block by block from typed columns, for exports that stream
//! (the per-query file of `eval retrieval`): each block becomes one row group, so memory
//! stays that of one block however many queries there are. zstd-compressed, as the
//! labels export.

use std::fs::File;
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;

use super::StoreError;

/// The type of one column; every column is nullable (an empty cell: no value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    Text,
    Count,
    Real,
}

/// One column's cells of a block.
#[derive(Debug, Clone, PartialEq)]
pub enum Cells {
    Text(Vec<Option<String>>),
    Count(Vec<Option<u64>>),
    Real(Vec<Option<f64>>),
}

/// An open Parquet file taking blocks of rows.
pub struct ParquetTable {
    writer: ArrowWriter<File>,
    schema: SchemaRef,
    path: String,
}

impl ParquetTable {
    /// Start a file with these named columns; `path` names it in errors.
    pub fn create(
        file: File,
        columns: &[(String, ColumnKind)],
        path: &str,
    ) -> Result<Self, StoreError> {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(name, kind)| {
                let t = match kind {
                    ColumnKind::Text => DataType::Utf8,
                    ColumnKind::Count => DataType::UInt64,
                    ColumnKind::Real => DataType::Float64,
                };
                Field::new(name, t, true)
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let props = WriterProperties::builder()
            .set_compression(Compression::ZSTD(ZstdLevel::default()))
            .build();
        let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|source| {
            StoreError::Parquet {
                path: path.to_string(),
                source,
            }
        })?;
        Ok(Self {
            writer,
            schema,
            path: path.to_string(),
        })
    }

    /// Add one block: a column of cells per column of the table, all of one length.
    pub fn write(&mut self, columns: Vec<Cells>) -> Result<(), StoreError> {
        let arrays: Vec<ArrayRef> = columns
            .into_iter()
            .map(|c| -> ArrayRef {
                match c {
                    Cells::Text(v) => Arc::new(StringArray::from(v)),
                    Cells::Count(v) => Arc::new(UInt64Array::from(v)),
                    Cells::Real(v) => Arc::new(Float64Array::from(v)),
                }
            })
            .collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(|source| {
            StoreError::Arrow {
                what: self.path.clone(),
                source,
            }
        })?;
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.writer
            .write(&batch)
            .map_err(|source| StoreError::Parquet {
                path: self.path.clone(),
                source,
            })
    }

    /// Write the footer; the file is complete once this returns.
    pub fn finish(self) -> Result<File, StoreError> {
        let path = self.path;
        self.writer
            .into_inner()
            .map_err(|source| StoreError::Parquet { path, source })
    }
}
