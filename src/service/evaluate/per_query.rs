//! The per-query file of `eval retrieval --per-query FILE`: every query's targets with
//! their rank and score in each list, and each list's first chunk. The format follows
//! the extension:
//!
//! - `.jsonl`: one line per query, `{"qid", "top1": {list: id}, "targets": [{"id",
//!   list: {"rank", "score"}}]}` (`null` rank and score: not retrieved).
//! - `.csv`: one row per (query, target) (a query with several targets has several
//!   rows), columns `qid,target`, then `LIST_rank,LIST_score` and `LIST_top1` for each
//!   list (empty cells: not retrieved).
//! - `.parquet`: the CSV's rows and columns, typed: `qid`, `target` and `LIST_top1`
//!   strings, `LIST_rank` unsigned 64-bit integers, `LIST_score` doubles (null: not
//!   retrieved); one row group per block of queries, zstd-compressed.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

use crate::core::per_query::{PerQueryRow, PerQueryTable, TargetPlace, TargetPlaces};
use crate::store::parquet_table::{Cells, ColumnKind};

/// The formats of the per-query file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
    Parquet,
}

/// The format `path`'s extension asks for (an error for any other extension, so that
/// a command can refuse before it does the work).
pub fn format_of(path: &Path) -> Result<Format> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => Ok(Format::Csv),
        Some("jsonl") => Ok(Format::Jsonl),
        Some("parquet") => Ok(Format::Parquet),
        _ => bail!(
            "--per-query {}: the file must end in .csv, .jsonl or .parquet",
            path.display()
        ),
    }
}

fn place(p: &TargetPlace) -> Value {
    json!({"rank": p.rank, "score": p.score})
}

/// The rows of `table` as JSONL (one line per query).
pub(crate) fn jsonl(table: &PerQueryTable) -> Result<String> {
    let mut out = String::new();
    for row in &table.rows {
        let top1: Map<String, Value> = table
            .lists
            .iter()
            .zip(&row.top1)
            .map(|(l, t)| (l.clone(), json!(t)))
            .collect();
        let targets: Vec<Value> = row
            .targets
            .iter()
            .map(|t| {
                let mut m = Map::new();
                m.insert("id".into(), json!(t.id));
                for (l, p) in table.lists.iter().zip(&t.places) {
                    m.insert(l.clone(), place(p));
                }
                Value::Object(m)
            })
            .collect();
        let line = json!({"qid": row.qid, "top1": top1, "targets": targets});
        out.push_str(&serde_json::to_string(&line)?);
        out.push('\n');
    }
    Ok(out)
}

/// A CSV cell: quoted when it must be, formulas guarded.
fn cell(s: &str) -> String {
    crate::core::text::csv_cell(s)
}

/// `table` as CSV: the header line, then one line per (query, target).
pub(crate) fn csv(table: &PerQueryTable) -> String {
    let mut out = String::from("qid,target");
    for l in &table.lists {
        let _ = write!(out, ",{l}_rank,{l}_score");
    }
    for l in &table.lists {
        let _ = write!(out, ",{l}_top1");
    }
    out.push('\n');
    for row in &table.rows {
        for t in &row.targets {
            out.push_str(&cell(&row.qid));
            out.push(',');
            out.push_str(&cell(&t.id));
            for p in &t.places {
                let rank = p.rank.map_or(String::new(), |r| r.to_string());
                let score = p.score.map_or(String::new(), |s| format!("{s:.10}"));
                let _ = write!(out, ",{rank},{score}");
            }
            for top in &row.top1 {
                out.push(',');
                out.push_str(&cell(top.as_deref().unwrap_or("")));
            }
            out.push('\n');
        }
    }
    out
}

/// The Parquet file's columns: the CSV header's, each with its type.
pub(crate) fn parquet_columns(table: &PerQueryTable) -> Vec<(String, ColumnKind)> {
    let mut cols = vec![
        ("qid".to_string(), ColumnKind::Text),
        ("target".into(), ColumnKind::Text),
    ];
    for l in &table.lists {
        cols.push((format!("{l}_rank"), ColumnKind::Count));
        cols.push((format!("{l}_score"), ColumnKind::Real));
    }
    for l in &table.lists {
        cols.push((format!("{l}_top1"), ColumnKind::Text));
    }
    cols
}

/// The rows of `table` as the Parquet file's columns (one row per (query, target), as
/// the CSV's lines).
pub(crate) fn parquet_cells(table: &PerQueryTable) -> Vec<Cells> {
    let pairs: Vec<(&PerQueryRow, &TargetPlaces)> = table
        .rows
        .iter()
        .flat_map(|r| r.targets.iter().map(move |t| (r, t)))
        .collect();
    let text = |f: &dyn Fn(&PerQueryRow, &TargetPlaces) -> Option<String>| {
        Cells::Text(pairs.iter().map(|&(r, t)| f(r, t)).collect())
    };
    let mut cols = vec![
        text(&|r, _| Some(r.qid.clone())),
        text(&|_, t| Some(t.id.clone())),
    ];
    for i in 0..table.lists.len() {
        cols.push(Cells::Count(
            pairs
                .iter()
                .map(|(_, t)| t.places[i].rank.map(|r| r as u64))
                .collect(),
        ));
        cols.push(Cells::Real(
            pairs.iter().map(|(_, t)| t.places[i].score).collect(),
        ));
    }
    for i in 0..table.lists.len() {
        cols.push(text(&|r, _| r.top1[i].clone()));
    }
    cols
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_formats_by_hand() {
        let table = PerQueryTable {
            lists: vec!["bm25".into(), "hybrid-tfidf-a0.50".into()],
            rows: vec![PerQueryRow {
                qid: "q,1".into(),
                top1: vec![Some("a".into()), None],
                targets: vec![
                    TargetPlaces {
                        id: "t".into(),
                        places: vec![
                            TargetPlace {
                                rank: Some(2),
                                score: Some(1.5),
                            },
                            TargetPlace {
                                rank: None,
                                score: None,
                            },
                        ],
                    },
                    TargetPlaces {
                        id: "u".into(),
                        places: vec![
                            TargetPlace {
                                rank: None,
                                score: None,
                            },
                            TargetPlace {
                                rank: Some(1),
                                score: Some(0.25),
                            },
                        ],
                    },
                ],
            }],
        };
        assert_eq!(
            csv(&table),
            "qid,target,bm25_rank,bm25_score,hybrid-tfidf-a0.50_rank,hybrid-tfidf-a0.50_score,bm25_top1,hybrid-tfidf-a0.50_top1\n\
             \"q,1\",t,2,1.5000000000,,,a,\n\
             \"q,1\",u,,,1,0.2500000000,a,\n"
        );
        let line: Value =
            serde_json::from_str(jsonl(&table).expect("json").trim()).expect("one line");
        assert_eq!(line["qid"], "q,1");
        assert_eq!(line["top1"]["bm25"], "a");
        assert_eq!(line["top1"]["hybrid-tfidf-a0.50"], Value::Null);
        assert_eq!(line["targets"][1]["hybrid-tfidf-a0.50"]["rank"], 1);
        assert_eq!(line["targets"][0]["bm25"]["score"], 1.5);
        assert_eq!(
            line["targets"][0]["hybrid-tfidf-a0.50"]["rank"],
            Value::Null
        );

        // Parquet: the CSV's cells, typed, written in two blocks and read back.
        use arrow_array::{Array, Float64Array, StringArray, UInt64Array};
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("pq.parquet");
        let file = std::fs::File::create(&path).expect("create");
        let mut out = crate::store::parquet_table::ParquetTable::create(
            file,
            &parquet_columns(&table),
            "pq.parquet",
        )
        .expect("start");
        out.write(parquet_cells(&table)).expect("block 1");
        out.write(parquet_cells(&PerQueryTable {
            lists: table.lists.clone(),
            rows: vec![],
        }))
        .expect("empty block");
        out.write(parquet_cells(&table)).expect("block 2");
        out.finish().expect("finish");
        let reader =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).expect("open"))
                .expect("parquet")
                .build()
                .expect("reader");
        let batches: Vec<_> = reader.map(|b| b.expect("batch")).collect();
        let names: Vec<String> = batches[0]
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let header = csv(&PerQueryTable {
            lists: table.lists.clone(),
            rows: vec![],
        });
        assert_eq!(names.join(","), header.trim_end());
        assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 4);
        let b = &batches[0];
        fn column<A: Array + Clone + 'static>(b: &arrow_array::RecordBatch, i: usize) -> A {
            b.column(i)
                .as_any()
                .downcast_ref::<A>()
                .unwrap_or_else(|| panic!("column {i} has another type"))
                .clone()
        }
        let text = |i| column::<StringArray>(b, i);
        let rank = |i| column::<UInt64Array>(b, i);
        let score = |i| column::<Float64Array>(b, i);
        assert_eq!((text(0).value(0), text(1).value(1)), ("q,1", "u"));
        assert_eq!((rank(2).value(0), rank(2).is_null(1)), (2, true));
        assert_eq!((score(3).value(0), score(5).value(1)), (1.5, 0.25));
        assert!(rank(4).is_null(0) && score(5).is_null(0));
        assert_eq!((text(6).value(1), text(7).is_null(0)), ("a", true));
    }
}
