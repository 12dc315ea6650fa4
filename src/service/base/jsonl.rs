//! Reading JSONL files: one reader for every record type, so that every error names
//! the file and the line, and no bad line is skipped in silence.

use std::collections::HashMap;
use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::de::DeserializeOwned;

use crate::core::metrics::Qrel;
use crate::core::question::Question;

/// The largest JSONL input read (questions, items, labels): checked before reading.
pub const MAX_JSONL_BYTES: usize = 256 << 20;

/// Descriptive fields of the public question sets raglab reads (MedQuAD's `qtype`,
/// PubMedQA's `split` and `final_decision`, source links): they stay in their files
/// and raglab ignores them. Every other field a record type does not know is an error,
/// so a misspelled `relevant` cannot silently leave a question without targets.
pub const DESCRIPTIVE_FIELDS: &[&str] = &[
    "qtype",
    "source_ids",
    "split",
    "final_decision",
    "url",
    "source",
    "subset",
];

/// Parse every non-blank line of `path` as a `T`. The first bad line is an error with
/// `FILE:LINE` and what was expected (`what`). Record types read from users' files
/// deny unknown fields, so a typo is an error, not a default.
pub fn read_jsonl<T: DeserializeOwned>(path: &Path, what: &str) -> Result<Vec<T>> {
    read_jsonl_ignoring(path, what, &[])
}

/// [`read_jsonl`], dropping the top-level fields `ignored` of each record first.
pub fn read_jsonl_ignoring<T: DeserializeOwned>(
    path: &Path,
    what: &str,
    ignored: &[&str],
) -> Result<Vec<T>> {
    parse_jsonl_ignoring(
        &read_text(path)?,
        &path.display().to_string(),
        what,
        ignored,
    )
}

/// The qrels file at `path`: TREC's four columns (`qid 0 docid rel`), or BEIR's three
/// (`query-id corpus-id score`, its header line skipped) when its first line has three.
pub fn read_qrels(path: &Path) -> Result<HashMap<String, Qrel>> {
    use crate::core::beir;
    let text = read_text(path)?;
    if beir::is_beir_qrels(&text) {
        return beir::parse_qrels(&text).map_err(|line| {
            anyhow::anyhow!("{}:{line}: expected {}", path.display(), beir::QRELS_SHAPE)
        });
    }
    crate::core::trec::parse_qrels(&text)
        .map_err(|line| anyhow::anyhow!("{}:{line}: expected `qid 0 docid rel`", path.display()))
}

/// The TREC run file at `path` (`qid Q0 docid rank score tag`): each query's
/// `(docid, score)` pairs. A malformed line, or a document ranked twice for one query
/// (trec_eval refuses it), is an error naming the file and the line(s).
pub fn read_run(path: &Path) -> Result<HashMap<String, Vec<(String, f64)>>> {
    use crate::core::trec::RunError;
    crate::core::trec::parse_run(&read_text(path)?).map_err(|e| match e {
        RunError::Malformed(line) => anyhow::anyhow!(
            "{}:{line}: expected `qid Q0 docid rank score tag`",
            path.display()
        ),
        RunError::Duplicate {
            query,
            doc,
            first,
            line,
        } => anyhow::anyhow!(
            "{}:{line}: document `{doc}` is ranked twice for query `{query}` (lines {first} and {line}); trec_eval refuses such a run, so raglab does not score it",
            path.display()
        ),
    })
}

/// A whole text file of at most [`MAX_JSONL_BYTES`], its size checked before reading.
pub fn read_text(path: &Path) -> Result<String> {
    let bytes = crate::store::sources::read_bounded(path, MAX_JSONL_BYTES)
        .with_context(|| format!("cannot read {}", path.display()))?;
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "{}: not UTF-8 text (invalid byte at offset {})",
            path.display(),
            e.utf8_error().valid_up_to()
        )
    })
}

/// [`read_jsonl`] over text already read; `origin` names it in errors.
pub fn parse_jsonl<T: DeserializeOwned>(text: &str, origin: &str, what: &str) -> Result<Vec<T>> {
    parse_jsonl_ignoring(text, origin, what, &[])
}

fn parse_jsonl_ignoring<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    what: &str,
    ignored: &[&str],
) -> Result<Vec<T>> {
    Ok(parse_jsonl_numbered(text, origin, what, ignored)?
        .into_iter()
        .map(|(_, record)| record)
        .collect())
}

/// [`parse_jsonl`] keeping each record's 1-based line number, for checks across
/// records (a duplicate id names both lines); fields `ignored` are dropped first.
pub fn parse_jsonl_numbered<T: DeserializeOwned>(
    text: &str,
    origin: &str,
    what: &str,
    ignored: &[&str],
) -> Result<Vec<(usize, T)>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            parse_record(l, ignored)
                .map(|record| (i + 1, record))
                .with_context(|| format!("{origin}:{}: not {what}", i + 1))
        })
        .collect()
}

/// One JSON record as a `T`, its top-level fields `ignored` dropped first.
pub fn parse_record<T: DeserializeOwned>(line: &str, ignored: &[&str]) -> serde_json::Result<T> {
    let mut value: serde_json::Value = serde_json::from_str(line)?;
    if let Some(record) = value.as_object_mut() {
        for field in ignored {
            record.remove(*field);
        }
    }
    T::deserialize(value)
}

/// A questions file `{id, text, relevant?, answer?, topic?}`; an empty file is an error.
pub fn read_questions(path: &Path) -> Result<Vec<Question>> {
    let qs: Vec<Question> = read_jsonl_ignoring(
        path,
        "a question {id, text, relevant?, answer?, topic?}",
        DESCRIPTIVE_FIELDS,
    )?;
    if qs.is_empty() {
        bail!("{} holds no questions", path.display());
    }
    Ok(qs)
}

/// The question texts of a file whose lines need only `text` (or `question`): for
/// sets that only ask, such as the abstention and benchmark sets (a questions file or
/// a multiple-choice file alike).
pub fn read_texts(path: &Path) -> Result<Vec<String>> {
    /// A question of which only the text is used; its other fields are known.
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Text {
        #[serde(alias = "question")]
        text: String,
        #[serde(default, alias = "qid")]
        id: Option<String>,
        #[serde(default)]
        relevant: Option<Vec<String>>,
        #[serde(default, alias = "reference_answer")]
        answer: Option<String>,
        #[serde(default)]
        topic: Option<String>,
        #[serde(default)]
        answerable: Option<bool>,
        /// A multiple-choice question's options: an MCQA file asks as well as any.
        #[serde(default)]
        options: Option<serde_json::Value>,
    }
    let texts: Vec<Text> = read_jsonl_ignoring(path, "a question {text}", DESCRIPTIVE_FIELDS)?;
    if texts.is_empty() {
        bail!("{} holds no questions", path.display());
    }
    Ok(texts.into_iter().map(|t| t.text).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A multiple-choice file (PubMedQA's, as shipped) serves as a set of questions
    /// that only ask; a misspelt field is still refused.
    #[test]
    fn texts_read_from_a_multiple_choice_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path().join("mcqa.jsonl");
        std::fs::write(
            &p,
            "{\"id\": \"1\", \"text\": \"Is it?\", \"options\": [\"yes\", \"no\"], \"answer\": \"yes\", \"relevant\": [\"1\"]}\n",
        )
        .expect("write");
        assert_eq!(read_texts(&p).expect("texts"), vec!["Is it?".to_string()]);
        std::fs::write(&p, "{\"text\": \"Is it?\", \"optoins\": []}\n").expect("write");
        assert!(read_texts(&p).is_err());
    }

    #[test]
    fn errors_name_the_file_and_line() {
        let text = "{\"id\": \"a\", \"text\": \"x\"}\n\n{\"id\": 3}\n";
        let err = parse_jsonl::<Question>(text, "q.jsonl", "a question")
            .expect_err("line 3 is bad")
            .to_string();
        assert_eq!(err, "q.jsonl:3: not a question");
        let ok: Vec<Question> =
            parse_jsonl("{\"id\": \"a\", \"text\": \"x\"}\n", "q", "a question").expect("ok");
        assert_eq!(ok.len(), 1);
    }

    /// A misspelled field is an error naming it, not a default; the descriptive
    /// fields of the public datasets are ignored.
    #[test]
    fn unknown_fields_are_errors() {
        let typo = "{\"id\": \"a\", \"text\": \"x\", \"relevent\": [\"c1\"]}\n";
        let err = parse_jsonl::<Question>(typo, "q.jsonl", "a question").expect_err("typo");
        assert!(
            format!("{err:#}").contains("unknown field `relevent`"),
            "{err:#}"
        );
        let medquad =
            "{\"id\": \"a\", \"text\": \"x\", \"qtype\": \"symptoms\", \"relevant\": [\"c1\"]}\n";
        let qs: Vec<Question> =
            parse_jsonl_ignoring(medquad, "q", "a question", DESCRIPTIVE_FIELDS).expect("ok");
        assert_eq!(qs[0].relevant, vec!["c1".to_string()]);
        // Not an object at all: an error, never a panic.
        assert!(parse_jsonl::<Question>("[1,2]\n", "q", "a question").is_err());
    }
}
