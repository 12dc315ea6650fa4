//! Reading a BEIR folder (the format is in [`crate::core::beir`]): its corpus as
//! documents for ingest, its queries and one split's qrels for evaluation. Reading is
//! strict: the first bad line is an error naming the file and the line, and nothing
//! is ingested or evaluated from a folder with one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};

use super::jsonl::{parse_jsonl_numbered, read_text};
use crate::core::beir::{
    CORPUS, PASSAGE_SHAPE, Passage, QRELS, QRELS_SHAPE, QUERIES, QUERY_SHAPE, Query,
    parse_judgements, qrels_of, valid_split,
};
use crate::core::corpus::{InputLimits, SourceDoc, check_text};
use crate::core::metrics::Qrel;
use crate::core::question::Question;

/// Whether `dir` is a BEIR folder: it holds `corpus.jsonl`, `queries.jsonl` and a
/// `qrels/` folder (what `raglab ingest` detects without `--format beir`).
pub fn is_beir_folder(dir: &Path) -> bool {
    dir.join(CORPUS).is_file() && dir.join(QUERIES).is_file() && dir.join(QRELS).is_dir()
}

/// Every passage of `dir/corpus.jsonl` as a document, in file order, under ingest's
/// input caps (file size, line length, UTF-8, no NUL bytes). A malformed line or a
/// repeated `_id` is an error with `FILE:LINE`.
pub fn read_corpus(dir: &Path, limits: InputLimits) -> Result<Vec<SourceDoc>> {
    let path = dir.join(CORPUS);
    if !path.is_file() {
        bail!("{}: not a BEIR folder (no {CORPUS})", dir.display());
    }
    let shown = path.display().to_string();
    let bytes = crate::store::sources::read_bounded(&path, limits.max_file_bytes)
        .with_context(|| format!("cannot read {shown}"))?;
    let text = check_text(&bytes, limits).map_err(|r| anyhow::anyhow!("{shown}: {r}"))?;
    let passages: Vec<(usize, Passage)> = parse_jsonl_numbered(text, &shown, PASSAGE_SHAPE, &[])?;
    no_repeated_ids(&shown, passages.iter().map(|(l, p)| (*l, p.id.as_str())))?;
    Ok(passages
        .into_iter()
        .map(|(line, p)| SourceDoc::passage(p, format!("{shown}:{line}")))
        .collect())
}

/// The first id met twice is an error naming both lines.
fn no_repeated_ids<'a>(
    origin: &str,
    ids: impl IntoIterator<Item = (usize, &'a str)>,
) -> Result<()> {
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (line, id) in ids {
        if let Some(at) = first.insert(id, line) {
            bail!("{origin}:{line}: `_id` {id:?} repeats line {at}");
        }
    }
    Ok(())
}

/// The qrels file of `split` in `dir`; a split without one is an error listing the
/// splits there.
pub fn qrels_file(dir: &Path, split: &str) -> Result<PathBuf> {
    if !valid_split(split) {
        bail!("split {split:?}: expected a name such as test, dev or train");
    }
    let path = dir.join(QRELS).join(format!("{split}.tsv"));
    if path.is_file() {
        return Ok(path);
    }
    let mut splits: Vec<String> = std::fs::read_dir(dir.join(QRELS))
        .map(|entries| {
            entries
                .filter_map(std::result::Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".tsv").map(str::to_string)
                })
                .collect()
        })
        .unwrap_or_default();
    splits.sort();
    bail!(
        "no {} (splits there: {})",
        path.display(),
        if splits.is_empty() {
            "none".into()
        } else {
            splits.join(", ")
        }
    )
}

/// The queries of one split and their judgements: the queries of `queries.jsonl`
/// that `qrels/SPLIT.tsv` judges, in the queries file's order (as BEIR's loader keeps
/// them), each with its relevant (score > 0) passages, sorted. A judged query missing
/// from `queries.jsonl` is an error naming the qrels line.
pub fn read_queries(dir: &Path, split: &str) -> Result<(Vec<Question>, HashMap<String, Qrel>)> {
    let qrels_path = qrels_file(dir, split)?;
    let path = dir.join(QUERIES);
    let shown = path.display().to_string();
    let queries: Vec<(usize, Query)> =
        parse_jsonl_numbered(&read_text(&path)?, &shown, QUERY_SHAPE, &[])?;
    no_repeated_ids(&shown, queries.iter().map(|(l, q)| (*l, q.id.as_str())))?;
    let judgements = parse_judgements(&read_text(&qrels_path)?).map_err(|line| {
        anyhow::anyhow!("{}:{line}: expected {QRELS_SHAPE}", qrels_path.display())
    })?;
    let known: std::collections::HashSet<&str> =
        queries.iter().map(|(_, q)| q.id.as_str()).collect();
    if let Some(j) = judgements
        .iter()
        .find(|j| !known.contains(j.query.as_str()))
    {
        bail!(
            "{}:{}: query {:?} is not in {shown}",
            qrels_path.display(),
            j.line,
            j.query
        );
    }
    let qrels = qrels_of(&judgements);
    if qrels.is_empty() {
        bail!("{} holds no judgements", qrels_path.display());
    }
    let questions = queries
        .into_iter()
        .filter_map(|(_, q)| {
            let judged = qrels.get(&q.id)?;
            let mut relevant: Vec<String> = judged
                .iter()
                .filter(|(_, s)| **s > 0)
                .map(|(d, _)| d.clone())
                .collect();
            relevant.sort();
            Some(Question {
                id: q.id,
                text: q.text,
                relevant,
                ..Question::default()
            })
        })
        .collect();
    Ok((questions, qrels))
}
