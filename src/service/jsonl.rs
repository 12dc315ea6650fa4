//! Reading JSONL files: one reader for every record type, so that every error names
//! the file and the line, and no bad line is skipped in silence.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::de::DeserializeOwned;

use crate::core::question::Question;

/// Parse every non-blank line of `path` as a `T`. The first bad line is an error with
/// `FILE:LINE` and what was expected (`what`).
pub fn read_jsonl<T: DeserializeOwned>(path: &Path, what: &str) -> Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_jsonl(&text, &path.display().to_string(), what)
}

/// [`read_jsonl`] over text already read; `origin` names it in errors.
pub fn parse_jsonl<T: DeserializeOwned>(text: &str, origin: &str, what: &str) -> Result<Vec<T>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).with_context(|| format!("{origin}:{}: not {what}", i + 1))
        })
        .collect()
}

/// A questions file `{id, text, relevant?, answer?, topic?}`; an empty file is an error.
pub fn read_questions(path: &Path) -> Result<Vec<Question>> {
    let qs: Vec<Question> = read_jsonl(path, "a question {id, text, relevant?, answer?}")?;
    if qs.is_empty() {
        bail!("{} holds no questions", path.display());
    }
    Ok(qs)
}

/// The question texts of a file whose lines need only `text` (or `question`): for
/// sets that only ask, such as the abstention and benchmark sets.
pub fn read_texts(path: &Path) -> Result<Vec<String>> {
    #[derive(serde::Deserialize)]
    struct Text {
        #[serde(alias = "question")]
        text: String,
    }
    let texts: Vec<Text> = read_jsonl(path, "a question {text}")?;
    if texts.is_empty() {
        bail!("{} holds no questions", path.display());
    }
    Ok(texts.into_iter().map(|t| t.text).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
