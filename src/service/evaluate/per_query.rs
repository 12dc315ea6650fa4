//! The per-query file of `eval retrieval --per-query FILE`: every query's targets with
//! their rank and score in each list, and each list's first chunk. The format follows
//! the extension:
//!
//! - `.jsonl`: one line per query, `{"qid", "top1": {list: id}, "targets": [{"id",
//!   list: {"rank", "score"}}]}` (`null` rank and score: not retrieved).
//! - `.csv`: one row per (query, target) (a query with several targets has several
//!   rows), columns `qid,target`, then `LIST_rank,LIST_score` and `LIST_top1` for each
//!   list (empty cells: not retrieved).

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Result, bail};
use serde_json::{Map, Value, json};

use crate::core::per_query::{PerQueryTable, Place};

/// The formats of the per-query file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Csv,
    Jsonl,
}

/// The format `path`'s extension asks for (an error for any other extension, so that
/// a command can refuse before it does the work).
pub fn format_of(path: &Path) -> Result<Format> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("csv") => Ok(Format::Csv),
        Some("jsonl") => Ok(Format::Jsonl),
        _ => bail!(
            "--per-query {}: the file must end in .csv or .jsonl",
            path.display()
        ),
    }
}

fn place(p: &Place) -> Value {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::per_query::{PerQueryRow, TargetPlaces};

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
                            Place {
                                rank: Some(2),
                                score: Some(1.5),
                            },
                            Place {
                                rank: None,
                                score: None,
                            },
                        ],
                    },
                    TargetPlaces {
                        id: "u".into(),
                        places: vec![
                            Place {
                                rank: None,
                                score: None,
                            },
                            Place {
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
    }
}
