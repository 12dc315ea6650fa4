//! Chunking: split source documents into retrievable chunks with stable ids.
//!
//! Three strategies: markdown headers (default; each chunk carries its header
//! path, which is prepended to the text that gets indexed), fixed character windows
//! (500 characters with 50 overlapping by default) and `none` (one chunk per document or JSONL record).
//! A BEIR passage is one chunk whatever the chunker, its header path the title.
//! Ids depend only on the input, never on run order or machine:
//! headers `DOC#SLUG` (slug of the section header, `-2`, `-3`... for repeats, `top` for
//! text before the first header), windows `DOC@BYTE`, none and BEIR passages: the
//! document/record/passage id.

pub mod markdown;

use std::collections::HashSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::core::corpus::{DocFormat, SourceDoc, front_matter};
use crate::core::text::{slug, word_count};

/// Separator used to display and index header paths.
pub const PATH_SEPARATOR: &str = " > ";

/// One retrievable unit of text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    pub id: String,
    pub doc_id: String,
    pub title: String,
    pub topic: Option<String>,
    /// Header hierarchy, outermost first (e.g. `["Measles", "Vaccination"]`).
    pub header_path: Vec<String>,
    /// The chunk's own text, exactly `source[byte_start..byte_end]`.
    pub text: String,
    pub byte_start: usize,
    pub byte_end: usize,
    pub word_count: usize,
    /// Position of the chunk within its document, from 0.
    pub ordinal: usize,
    /// Tokens of the indexed text ([`Chunk::indexed_text`], with the embedder's
    /// document prefix) in `token_model`'s tokenizer, special tokens included and
    /// nothing cut: what `raglab index` counted with the active embedding model.
    /// `None` until counted (chunks written before counts existed read back as `None`).
    #[serde(default)]
    pub token_count: Option<usize>,
    /// The embedding model whose tokenizer counted `token_count`.
    #[serde(default)]
    pub token_model: Option<String>,
}

impl Chunk {
    /// The header path as one string (`A > B > C`); the title when there is no header.
    pub fn path_label(&self) -> String {
        if self.header_path.is_empty() {
            self.title.clone()
        } else {
            self.header_path.join(PATH_SEPARATOR)
        }
    }

    /// What retrieval indexes and generation sees: header path, blank line, text.
    pub fn indexed_text(&self) -> String {
        format!("{}\n\n{}", self.path_label(), self.text)
    }
}

/// Which chunker to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Chunker {
    #[default]
    Headers,
    Window {
        size: usize,
        overlap: usize,
    },
    None,
}

impl Chunker {
    /// The default window: 500 characters, 50 overlapping.
    pub const DEFAULT_WINDOW: Self = Self::Window {
        size: 500,
        overlap: 50,
    };
}

impl fmt::Display for Chunker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Headers => write!(f, "headers"),
            Self::Window { size, overlap } => write!(f, "window({size}/{overlap})"),
            Self::None => write!(f, "none"),
        }
    }
}

impl FromStr for Chunker {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "headers" => Ok(Self::Headers),
            "window" => Ok(Self::DEFAULT_WINDOW),
            "none" => Ok(Self::None),
            other => Err(format!(
                "unknown chunker `{other}` (expected headers, window or none)"
            )),
        }
    }
}

/// A section of a document: its header path and the trimmed byte range of its body.
#[derive(Debug, Clone)]
struct Section {
    path: Vec<String>,
    leaf: Option<String>,
    start: usize,
    end: usize,
}

/// Split a document into sections at its markdown headers (text documents have none).
fn sections(doc: &SourceDoc) -> Vec<Section> {
    let text = doc.text.as_str();
    let body_start = match doc.format {
        DocFormat::Markdown => front_matter(text).1,
        _ => 0,
    };
    let heads = match doc.format {
        DocFormat::Text => Vec::new(),
        _ => markdown::headers(text, body_start),
    };
    let mut out = Vec::with_capacity(heads.len() + 1);
    let first = heads.first().map_or(text.len(), |h| h.start);
    out.push(Section {
        path: Vec::new(),
        leaf: None,
        start: body_start,
        end: first,
    });
    let mut stack: Vec<(usize, String)> = Vec::new();
    for (i, h) in heads.iter().enumerate() {
        while stack.last().is_some_and(|(level, _)| *level >= h.level) {
            stack.pop();
        }
        stack.push((h.level, h.title.clone()));
        let end = heads.get(i + 1).map_or(text.len(), |n| n.start);
        out.push(Section {
            path: stack.iter().map(|(_, t)| t.clone()).collect(),
            leaf: Some(h.title.clone()),
            start: h.end,
            end,
        });
    }
    out
}

/// Shrink `[start, end)` to exclude surrounding whitespace.
fn trim_range(text: &str, start: usize, end: usize) -> (usize, usize) {
    let s = &text[start..end];
    let lead = s.len() - s.trim_start().len();
    let trail = s.len() - s.trim_end().len();
    if lead == s.len() {
        (start, start)
    } else {
        (start + lead, end - trail)
    }
}

/// Chunk one document.
pub fn chunk_document(doc: &SourceDoc, chunker: Chunker) -> Vec<Chunk> {
    let make = |id: String, path: Vec<String>, start: usize, end: usize, ordinal: usize| {
        let text = doc.text[start..end].to_string();
        Chunk {
            id,
            doc_id: doc.id.clone(),
            title: doc.title.clone(),
            topic: doc.topic.clone(),
            header_path: path,
            word_count: word_count(&text),
            text,
            byte_start: start,
            byte_end: end,
            ordinal,
            token_count: None,
            token_model: None,
        }
    };
    if doc.format == DocFormat::Passage {
        return passage_chunk(doc, make);
    }
    match chunker {
        Chunker::None => {
            let body = if doc.format == DocFormat::Markdown {
                front_matter(&doc.text).1
            } else {
                0
            };
            let (s, e) = trim_range(&doc.text, body, doc.text.len());
            if s == e {
                Vec::new()
            } else {
                vec![make(doc.id.clone(), Vec::new(), s, e, 0)]
            }
        }
        Chunker::Headers => {
            let mut used: HashSet<String> = HashSet::new();
            let mut out = Vec::new();
            for sec in sections(doc) {
                let (s, e) = trim_range(&doc.text, sec.start, sec.end);
                if s == e {
                    continue; // an empty section (e.g. a title directly followed by a subheader)
                }
                let base = sec
                    .leaf
                    .as_deref()
                    .map_or_else(|| "top".to_string(), |l| slug(l, 64));
                let mut id = format!("{}#{base}", doc.id);
                let mut n = 1;
                while used.contains(&id) {
                    n += 1;
                    id = format!("{}#{base}-{n}", doc.id);
                }
                used.insert(id.clone());
                let ordinal = out.len();
                out.push(make(id, sec.path, s, e, ordinal));
            }
            out
        }
        Chunker::Window { size, overlap } => window_chunks(doc, size, overlap, make),
    }
}

/// A BEIR passage's one chunk: its trimmed text under its title (the header path),
/// id the passage id. A passage with a title and no text is still a chunk (BEIR
/// ranks it by its title); one with neither gives none.
fn passage_chunk(
    doc: &SourceDoc,
    make: impl Fn(String, Vec<String>, usize, usize, usize) -> Chunk,
) -> Vec<Chunk> {
    let (s, e) = trim_range(&doc.text, 0, doc.text.len());
    let title = doc.title.trim();
    if s == e && title.is_empty() {
        return Vec::new();
    }
    let path = if title.is_empty() {
        Vec::new()
    } else {
        vec![title.to_string()]
    };
    vec![make(doc.id.clone(), path, s, e, 0)]
}

fn window_chunks(
    doc: &SourceDoc,
    size: usize,
    overlap: usize,
    make: impl Fn(String, Vec<String>, usize, usize, usize) -> Chunk,
) -> Vec<Chunk> {
    let size = size.max(1);
    let step = size.saturating_sub(overlap).max(1);
    let secs = sections(doc);
    let body = secs.first().map_or(0, |s| s.start);
    // Byte offset of every char boundary in the body, plus the end.
    let bounds: Vec<usize> = doc.text[body..]
        .char_indices()
        .map(|(i, _)| body + i)
        .chain(std::iter::once(doc.text.len()))
        .collect();
    let n_chars = bounds.len() - 1;
    let mut out = Vec::new();
    let mut c = 0;
    while c < n_chars {
        let (s, e) = (bounds[c], bounds[(c + size).min(n_chars)]);
        if !doc.text[s..e].trim().is_empty() {
            // The header path of the section the window starts in.
            let path = secs
                .iter()
                .rev()
                .find(|sec| sec.start <= s || sec.leaf.is_none())
                .map(|sec| sec.path.clone())
                .unwrap_or_default();
            let ordinal = out.len();
            out.push(make(format!("{}@{s}", doc.id), path, s, e, ordinal));
        }
        if c + size >= n_chars {
            break;
        }
        c += step;
    }
    out
}

#[cfg(test)]
mod tests;
