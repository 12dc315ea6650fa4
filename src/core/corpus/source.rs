//! Source documents and the checks that decide whether a file can be ingested.
//!
//! Everything here works on bytes already in memory; reading files is the store's job.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// How a document's text is structured, which decides how it is chunked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocFormat {
    Markdown,
    Text,
    /// HTML already converted to markdown-like text (headers kept as `#` lines).
    Html,
    /// One JSONL record; its text may contain markdown headers.
    Record,
    /// One passage of a BEIR corpus: one chunk whatever the chunker (never split, even
    /// at a markdown header), its header path the title.
    Passage,
}

/// One document to chunk: a file, or one JSONL record.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceDoc {
    /// Stable id: the path under the ingest root without extension, or the record id.
    pub id: String,
    pub title: String,
    pub topic: Option<String>,
    pub format: DocFormat,
    /// The text the chunker sees (for markdown: the whole file, front matter included,
    /// so byte offsets point into the source file).
    pub text: String,
    /// Where it came from (file path, plus `:LINE` for records).
    pub origin: String,
    /// Extra string metadata (front matter, JSONL fields).
    pub metadata: BTreeMap<String, String>,
}

impl SourceDoc {
    /// A BEIR passage read from `origin` (`FILE:LINE`): document id = `_id` (so the
    /// chunk id is the `_id` too), no topic, no metadata.
    pub fn passage(p: crate::core::beir::Passage, origin: String) -> Self {
        Self {
            id: p.id,
            title: p.title,
            topic: None,
            format: DocFormat::Passage,
            text: p.text,
            origin,
            metadata: BTreeMap::new(),
        }
    }
}

/// How `raglab ingest` reads the paths it is given.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InputFormat {
    /// A folder holding `corpus.jsonl`, `queries.jsonl` and `qrels/` is read as BEIR;
    /// every other path as files.
    #[default]
    Auto,
    /// raglab's own inputs: markdown, text, HTML and JSONL record files, and folders
    /// of them.
    Files,
    /// Every path is a BEIR folder; only its `corpus.jsonl` is read.
    Beir,
}

impl std::fmt::Display for InputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Auto => "auto",
            Self::Files => "files",
            Self::Beir => "beir",
        })
    }
}

impl std::str::FromStr for InputFormat {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "auto" => Ok(Self::Auto),
            "files" => Ok(Self::Files),
            "beir" => Ok(Self::Beir),
            other => Err(format!(
                "unknown input format `{other}` (expected auto, files or beir)"
            )),
        }
    }
}

/// Limits applied before a file is accepted.
#[derive(Debug, Clone, Copy)]
pub struct InputLimits {
    pub max_file_bytes: usize,
    pub max_line_bytes: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self {
            max_file_bytes: 64 << 20,
            max_line_bytes: 1 << 20,
        }
    }
}

/// Why an input was rejected. The message names the problem; the caller adds the path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejection {
    #[error("empty file")]
    Empty,
    #[error("binary file (NUL byte at offset {0})")]
    Binary(usize),
    #[error("not valid UTF-8 (invalid byte at offset {0})")]
    NotUtf8(usize),
    #[error("file too large ({size} bytes, limit {limit})")]
    TooLarge { size: usize, limit: usize },
    #[error("line {line} is {len} bytes long (limit {limit}); minified or generated data?")]
    LineTooLong {
        line: usize,
        len: usize,
        limit: usize,
    },
}

/// Validate raw bytes as an ingestible text document.
pub fn check_text(bytes: &[u8], limits: InputLimits) -> Result<&str, Rejection> {
    if bytes.len() > limits.max_file_bytes {
        return Err(Rejection::TooLarge {
            size: bytes.len(),
            limit: limits.max_file_bytes,
        });
    }
    if let Some(pos) = bytes.iter().take(8192).position(|&b| b == 0) {
        return Err(Rejection::Binary(pos));
    }
    let text = std::str::from_utf8(bytes).map_err(|e| Rejection::NotUtf8(e.valid_up_to()))?;
    if text.trim().is_empty() {
        return Err(Rejection::Empty);
    }
    if let Some((i, line)) = text
        .split('\n')
        .enumerate()
        .find(|(_, l)| l.len() > limits.max_line_bytes)
    {
        return Err(Rejection::LineTooLong {
            line: i + 1,
            len: line.len(),
            limit: limits.max_line_bytes,
        });
    }
    Ok(text)
}

/// Split simple `---` front matter (`key: value` lines) off a markdown document.
/// Returns the fields and the byte offset where the body starts (0 when absent).
pub fn front_matter(text: &str) -> (BTreeMap<String, String>, usize) {
    let mut fields = BTreeMap::new();
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (fields, 0);
    };
    let mut offset = text.len() - rest.len();
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        let trimmed = line.trim();
        if trimmed == "---" {
            return (fields, offset);
        }
        match trimmed.split_once(':') {
            Some((k, v)) if !k.trim().is_empty() && !k.contains(' ') => {
                fields.insert(k.trim().to_string(), v.trim().to_string());
            }
            _ if trimmed.is_empty() => {}
            // Not front matter after all (e.g. a thematic break opening the file).
            _ => return (BTreeMap::new(), 0),
        }
    }
    (BTreeMap::new(), 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_inputs() {
        let l = InputLimits {
            max_file_bytes: 100,
            max_line_bytes: 10,
        };
        assert_eq!(check_text(b"", l), Err(Rejection::Empty));
        assert_eq!(check_text(b" \n\t", l), Err(Rejection::Empty));
        assert_eq!(check_text(b"ab\0cd", l), Err(Rejection::Binary(2)));
        assert_eq!(check_text(b"ok \xff", l), Err(Rejection::NotUtf8(3)));
        assert_eq!(
            check_text(b"short\n0123456789abc\n", l),
            Err(Rejection::LineTooLong {
                line: 2,
                len: 13,
                limit: 10
            })
        );
        assert!(matches!(
            check_text(&[b'a'; 101], l),
            Err(Rejection::TooLarge { .. })
        ));
        assert_eq!(check_text(b"fine\ntext", l), Ok("fine\ntext"));
    }

    #[test]
    fn front_matter_fields_and_offset() {
        let doc = "---\ntitle: A: B\ntopic: tb\n---\n# H\n";
        let (f, off) = front_matter(doc);
        assert_eq!(f["title"], "A: B");
        assert_eq!(f["topic"], "tb");
        assert_eq!(&doc[off..], "# H\n");
        assert_eq!(front_matter("---\nnot front matter\n---\n").1, 0);
        assert_eq!(front_matter("# no fm").1, 0);
    }
}
