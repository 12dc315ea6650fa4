//! BEIR's dataset format, as BEIR's own loader reads it. A BEIR folder holds
//! `corpus.jsonl` (one passage a line: `{"_id", "title", "text", "metadata"?}`),
//! `queries.jsonl` (`{"_id", "text", "metadata"?}`, every split's queries in one file)
//! and `qrels/SPLIT.tsv` (a header line, then `query-id corpus-id score` a line, tab
//! separated; the score is a non-negative integer grade, 0 judged not relevant).
//!
//! Ids: a passage becomes one chunk whose id is its `_id` unchanged, and so is its
//! document id, so BEIR's qrels and the TREC runs raglab writes name the same ids and
//! trec_eval reads both without a mapping. An `_id` must therefore be non-empty and
//! hold no whitespace (TREC files separate their columns by whitespace).
//!
//! Only parsing lives here; the folder is read by the service.

use std::collections::HashMap;

use serde::Deserialize;

use crate::core::metrics::Qrel;

/// The corpus file of a BEIR folder.
pub const CORPUS: &str = "corpus.jsonl";
/// The queries file of a BEIR folder.
pub const QUERIES: &str = "queries.jsonl";
/// The folder of a BEIR folder's qrels, one `SPLIT.tsv` per split.
pub const QRELS: &str = "qrels";
/// The split evaluated unless another is named.
pub const DEFAULT_SPLIT: &str = "test";

/// What a corpus line must be, for error messages.
pub const PASSAGE_SHAPE: &str = "a BEIR passage {\"_id\", \"title\", \"text\", \"metadata\"?}";
/// What a queries line must be, for error messages.
pub const QUERY_SHAPE: &str = "a BEIR query {\"_id\", \"text\", \"metadata\"?}";
/// What a qrels line must be, for error messages.
pub const QRELS_SHAPE: &str = "`query-id corpus-id score` (score a non-negative integer)";

/// One passage of a corpus: its `_id`, title (empty when the dataset has none) and
/// text. `metadata` is read and dropped; any other field is an error.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawPassage")]
pub struct Passage {
    pub id: String,
    pub title: String,
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPassage {
    #[serde(rename = "_id")]
    id: String,
    #[serde(default)]
    title: String,
    text: String,
    #[serde(default, rename = "metadata")]
    _metadata: Option<serde_json::Value>,
}

impl TryFrom<RawPassage> for Passage {
    type Error = String;
    fn try_from(raw: RawPassage) -> Result<Self, String> {
        Ok(Self {
            id: checked_id(raw.id)?,
            title: raw.title,
            text: raw.text,
        })
    }
}

/// One query: its `_id` and text. `metadata` is read and dropped; any other field is
/// an error.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawQuery")]
pub struct Query {
    pub id: String,
    pub text: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawQuery {
    #[serde(rename = "_id")]
    id: String,
    text: String,
    #[serde(default, rename = "metadata")]
    _metadata: Option<serde_json::Value>,
}

impl TryFrom<RawQuery> for Query {
    type Error = String;
    fn try_from(raw: RawQuery) -> Result<Self, String> {
        Ok(Self {
            id: checked_id(raw.id)?,
            text: raw.text,
        })
    }
}

/// An `_id` fit for TREC files: non-empty, without whitespace.
fn checked_id(id: String) -> Result<String, String> {
    if id.is_empty() {
        return Err("`_id` is empty".into());
    }
    if id.chars().any(char::is_whitespace) {
        return Err(format!(
            "`_id` {id:?} holds whitespace, which TREC qrels and runs cannot carry"
        ));
    }
    Ok(id)
}

/// One line of a qrels file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BeirJudgement {
    /// 1-based line number.
    pub line: usize,
    pub query: String,
    pub doc: String,
    pub score: u32,
}

/// The columns of a qrels line: tab separated (BEIR writes tabs), or separated by
/// whitespace when the line holds no tab.
fn columns(line: &str) -> Vec<&str> {
    if line.contains('\t') {
        line.split('\t').map(str::trim).collect()
    } else {
        line.split_whitespace().collect()
    }
}

/// Whether qrels text is BEIR's three columns rather than TREC's four: its first
/// non-blank line has three columns.
pub fn is_beir_qrels(text: &str) -> bool {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .is_some_and(|l| columns(l).len() == 3)
}

/// Every judgement of qrels text, in file order (`Err(line)`: a malformed line). The
/// first non-blank line is the header when its score column is not an integer
/// (`query-id corpus-id score`, whatever the names); a file without a header loses no
/// judgement (BEIR's loader drops its first line unseen).
pub fn parse_judgements(text: &str) -> Result<Vec<BeirJudgement>, usize> {
    let mut out = Vec::new();
    let mut first = true;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let f = columns(line);
        let score = f.get(2).and_then(|s| s.parse::<u32>().ok());
        if std::mem::take(&mut first) && f.len() == 3 && score.is_none() {
            continue;
        }
        match (f.as_slice(), score) {
            ([q, d, _], Some(score)) if !q.is_empty() && !d.is_empty() => out.push(BeirJudgement {
                line: i + 1,
                query: (*q).to_string(),
                doc: (*d).to_string(),
                score,
            }),
            _ => return Err(i + 1),
        }
    }
    Ok(out)
}

/// Judgements by query, as raglab's evaluation takes them (a pair judged twice keeps
/// its last grade, as BEIR's loader does).
pub fn qrels_of(judgements: &[BeirJudgement]) -> HashMap<String, Qrel> {
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    for j in judgements {
        qrels
            .entry(j.query.clone())
            .or_default()
            .insert(j.doc.clone(), j.score);
    }
    qrels
}

/// [`parse_judgements`] by query.
pub fn parse_qrels(text: &str) -> Result<HashMap<String, Qrel>, usize> {
    parse_judgements(text).map(|j| qrels_of(&j))
}

/// Whether `split` can name a qrels file: letters, digits, `.`, `_` and `-`, not only
/// dots (never a path).
pub fn valid_split(split: &str) -> bool {
    !split.is_empty()
        && split.chars().any(|c| c != '.')
        && split
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn passage(line: &str) -> Result<Passage, String> {
        serde_json::from_str(line).map_err(|e| e.to_string())
    }

    #[test]
    fn passages_by_hand() {
        let p = passage(r#"{"_id": "d1", "title": "T", "text": "x", "metadata": {"a": 1}}"#);
        assert_eq!(
            p,
            Ok(Passage {
                id: "d1".into(),
                title: "T".into(),
                text: "x".into()
            })
        );
        assert_eq!(
            passage(r#"{"_id": "d1", "text": "x"}"#)
                .expect("no title")
                .title,
            ""
        );
        for (bad, why) in [
            (r#"{"id": "d1", "text": "x"}"#, "unknown field `id`"),
            (r#"{"_id": "d1", "title": "T"}"#, "missing field `text`"),
            (r#"{"_id": 7, "text": "x"}"#, "invalid type: integer `7`"),
            (r#"{"_id": "", "text": "x"}"#, "`_id` is empty"),
            (r#"{"_id": "a b", "text": "x"}"#, "holds whitespace"),
            (
                r#"{"_id": "d", "text": "x", "url": "u"}"#,
                "unknown field `url`",
            ),
        ] {
            let err = passage(bad).expect_err(bad);
            assert!(err.contains(why), "{bad}: {err}");
        }
        let q: Query = serde_json::from_str(r#"{"_id": "q1", "text": "why?"}"#).expect("a query");
        assert_eq!((q.id.as_str(), q.text.as_str()), ("q1", "why?"));
        assert!(serde_json::from_str::<Query>(r#"{"_id": "q1", "title": "t"}"#).is_err());
    }

    #[test]
    fn qrels_by_hand() {
        let text = "query-id\tcorpus-id\tscore\nq1\td1\t2\n\nq1\td2\t0\nq2 d9 1\nq1\td1\t1\n";
        assert!(is_beir_qrels(text));
        assert!(!is_beir_qrels("q1 0 d1 1\n"));
        let j = parse_judgements(text).expect("qrels");
        assert_eq!(j.len(), 4);
        assert_eq!((j[0].line, j[0].score), (2, 2));
        let q = qrels_of(&j);
        assert_eq!(q["q1"]["d1"], 1, "the last grade of a pair judged twice");
        assert_eq!(q["q1"]["d2"], 0);
        assert_eq!(q["q2"]["d9"], 1);
        // No header: the first line is a judgement, not dropped.
        assert_eq!(parse_judgements("q1\td1\t1\n").expect("ok").len(), 1);
        assert_eq!(parse_judgements("h\th\th\nq1\td1\tyes\n"), Err(2));
        assert_eq!(parse_judgements("h\th\th\nq1\td1\t-1\n"), Err(2));
        assert_eq!(parse_judgements("h\th\th\nq1\td1\n"), Err(2));
        assert_eq!(parse_judgements("h\th\th\nq1\t0\td1\t1\n"), Err(2));
        assert_eq!(parse_judgements("h\th\th\nh\th\th\n"), Err(2));
    }

    #[test]
    fn splits_are_names_not_paths() {
        for ok in ["test", "dev", "train", "test-v2", "v1.1"] {
            assert!(valid_split(ok), "{ok}");
        }
        for bad in ["", "..", "../x", "a/b", "a b", "."] {
            assert!(!valid_split(bad), "{bad}");
        }
    }
}
