//! Read ingestible documents from files and folders.
//!
//! Accepted: `.md`/`.markdown`, `.txt`, `.html`/`.htm` and `.jsonl` (records
//! `{id, title, text, ...metadata}`). Every rejected file or record is reported with its
//! path and reason; the rest still ingests. Folder walks are sorted so that the same
//! input always yields the same documents in the same order.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use crate::core::corpus::{DocFormat, InputLimits, SourceDoc, check_text, front_matter};

/// An input that was not ingested, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SkippedInput {
    pub path: String,
    pub reason: String,
}

/// The outcome of reading a set of paths.
#[derive(Debug, Default)]
pub struct SourceSet {
    pub docs: Vec<SourceDoc>,
    pub skipped: Vec<SkippedInput>,
    /// Files visited (accepted or not), for progress and summaries.
    pub files_seen: usize,
}

impl SourceSet {
    /// Record that the input at `path` is skipped, and why.
    fn skip(&mut self, path: String, reason: String) {
        self.skipped.push(SkippedInput { path, reason });
    }
}

const EXTENSIONS: &[&str] = &["md", "markdown", "txt", "html", "htm", "jsonl"];

/// List the candidate files under `paths`: files are taken as given (the user named
/// them), folders walked recursively with hidden entries and symlinked folders skipped,
/// and symlinked files inside them skipped unless `follow_symlinks` (a link planted in
/// a corpus folder can point at any file the user can read).
pub fn collect_files(
    paths: &[PathBuf],
    follow_symlinks: bool,
    skipped: &mut Vec<SkippedInput>,
) -> Vec<(PathBuf, PathBuf)> {
    let mut out = Vec::new();
    for p in paths {
        match std::fs::metadata(p) {
            Ok(m) if m.is_dir() => walk(p, p, follow_symlinks, &mut out, skipped),
            Ok(_) => {
                let root = p
                    .parent()
                    .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
                out.push((root, p.clone()));
            }
            Err(e) => skipped.push(SkippedInput {
                path: p.display().to_string(),
                reason: e.to_string(),
            }),
        }
    }
    out
}

fn walk(
    root: &Path,
    dir: &Path,
    follow_symlinks: bool,
    out: &mut Vec<(PathBuf, PathBuf)>,
    skipped: &mut Vec<SkippedInput>,
) {
    let entries = match std::fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) => {
            skipped.push(SkippedInput {
                path: dir.display().to_string(),
                reason: e.to_string(),
            });
            return;
        }
    };
    let mut entries: Vec<_> = entries.filter_map(std::result::Result::ok).collect();
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(ft) = entry.file_type() else { continue };
        if ft.is_dir() {
            walk(root, &path, follow_symlinks, out, skipped);
        } else if ft.is_symlink() && !follow_symlinks {
            skipped.push(SkippedInput {
                path: path.display().to_string(),
                reason: "a symbolic link, not followed (--follow-symlinks reads what it points to)"
                    .into(),
            });
        } else if ft.is_file() || (ft.is_symlink() && path.is_file()) {
            let ext = extension(&path);
            if EXTENSIONS.contains(&ext.as_str()) {
                out.push((root.to_path_buf(), path));
            } else {
                skipped.push(SkippedInput {
                    path: path.display().to_string(),
                    reason: format!("unsupported file type `.{ext}`"),
                });
            }
        }
    }
}

fn extension(path: &Path) -> String {
    path.extension()
        .map(|e| e.to_string_lossy().to_lowercase())
        .unwrap_or_default()
}

/// Document id of a file: its path under the ingest root, without extension, with `/`
/// separators, so the same tree gives the same ids on every machine.
pub fn doc_id_for(root: &Path, path: &Path) -> String {
    let rel = path.strip_prefix(root).unwrap_or(path);
    let rel = rel.with_extension("");
    rel.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// Why [`read_bounded`] returned no bytes.
#[derive(Debug, thiserror::Error)]
pub enum BoundedReadError {
    /// The OS error is part of the message and deliberately not the error's source:
    /// an error chain printed whole (`{:#}`) would name it twice.
    #[error("unreadable: {0}")]
    Io(std::io::Error),
    #[error("file too large ({size} bytes, limit {limit})")]
    TooLarge { size: u64, limit: usize },
}

impl From<std::io::Error> for BoundedReadError {
    fn from(e: std::io::Error) -> Self {
        Self::Io(e)
    }
}

/// Read a whole file, but never more than `limit` bytes into memory: the size is
/// checked before reading (a 5 GB file is refused without being read), and the read
/// itself stops one byte past the limit (a file that grows while it is read, or a
/// device that reports no size).
pub fn read_bounded(path: &Path, limit: usize) -> Result<Vec<u8>, BoundedReadError> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let size = file.metadata()?.len();
    let too_large = |size| BoundedReadError::TooLarge { size, limit };
    if size > limit as u64 {
        return Err(too_large(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(limit));
    file.take(limit as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > limit {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Read one file into documents (one for text formats, one per record for JSONL).
/// `seen_records` maps record ids already read to where they came from.
pub fn read_file(
    root: &Path,
    path: &Path,
    limits: InputLimits,
    seen_records: &mut HashMap<String, String>,
    set: &mut SourceSet,
) {
    set.files_seen += 1;
    let shown = path.display().to_string();
    let bytes = match read_bounded(path, limits.max_file_bytes) {
        Ok(b) => b,
        Err(e) => return set.skip(shown, e.to_string()),
    };
    let text = match check_text(&bytes, limits) {
        Ok(t) => t,
        Err(r) => return set.skip(shown, r.to_string()),
    };
    if extension(path) == "jsonl" {
        return read_records(path, text, seen_records, set);
    }
    match document(root, path, text, &shown) {
        Ok(doc) => set.docs.push(doc),
        Err(reason) => set.skip(shown, reason),
    }
}

/// The document of one HTML, text or markdown file (`text`, checked), or why it is
/// skipped (an HTML page the converter refuses).
fn document(root: &Path, path: &Path, text: &str, shown: &str) -> Result<SourceDoc, String> {
    let id = doc_id_for(root, path);
    // Topic: the first folder under the ingest root, unless the document says otherwise.
    let folder_topic = id.split_once('/').map(|(t, _)| t.to_string());
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let doc = |title, topic, format, text, metadata| SourceDoc {
        id: id.clone(),
        title,
        topic,
        format,
        text,
        origin: shown.to_string(),
        metadata,
    };
    Ok(match extension(path).as_str() {
        "html" | "htm" => {
            let page = crate::core::html::html_to_markdown(text)?;
            let md = page.markdown;
            // The page's first header names it best; its <title> often carries the
            // site's name too ("Measles | CDC").
            let title = first_h1(&md).or(page.title).unwrap_or(stem);
            doc(title, folder_topic, DocFormat::Html, md, BTreeMap::new())
        }
        "txt" => doc(
            stem,
            folder_topic,
            DocFormat::Text,
            text.to_string(),
            BTreeMap::new(),
        ),
        _ => {
            let (meta, body) = front_matter(text);
            let title = meta
                .get("title")
                .cloned()
                .or_else(|| first_h1(&text[body..]))
                .unwrap_or(stem);
            let topic = meta.get("topic").cloned().or(folder_topic);
            doc(title, topic, DocFormat::Markdown, text.to_string(), meta)
        }
    })
}

fn first_h1(md: &str) -> Option<String> {
    crate::core::chunk::markdown::headers(md, 0)
        .into_iter()
        .find(|h| h.level == 1 && !h.title.is_empty())
        .map(|h| h.title)
}

fn read_records(path: &Path, text: &str, seen: &mut HashMap<String, String>, set: &mut SourceSet) {
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let origin = format!("{}:{}", path.display(), i + 1);
        let value: serde_json::Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => {
                set.skip(origin, format!("invalid JSON: {e}"));
                continue;
            }
        };
        let Some(obj) = value.as_object() else {
            set.skip(origin, "record is not a JSON object".into());
            continue;
        };
        let id = match obj.get("id") {
            Some(serde_json::Value::String(s)) if !s.trim().is_empty() => s.clone(),
            Some(serde_json::Value::Number(n)) => n.to_string(),
            _ => {
                set.skip(origin, "record has no `id`".into());
                continue;
            }
        };
        let Some(body) = obj
            .get("text")
            .and_then(|t| t.as_str())
            .filter(|t| !t.trim().is_empty())
        else {
            set.skip(origin, format!("record `{id}` has no `text`"));
            continue;
        };
        if let Some(first) = seen.get(&id) {
            set.skip(
                origin,
                format!("duplicate record id `{id}` (first seen at {first})"),
            );
            continue;
        }
        seen.insert(id.clone(), origin.clone());
        let mut metadata = BTreeMap::new();
        for (k, v) in obj {
            if k == "text" {
                continue;
            }
            let v = v.as_str().map_or_else(|| v.to_string(), str::to_string);
            metadata.insert(k.clone(), v);
        }
        let title = metadata
            .get("title")
            .filter(|t| !t.trim().is_empty())
            .cloned()
            .unwrap_or_else(|| id.clone());
        let topic = metadata.get("topic").cloned();
        set.docs.push(SourceDoc {
            id,
            title,
            topic,
            format: DocFormat::Record,
            text: body.to_string(),
            origin,
            metadata,
        });
    }
}

impl SourceSet {
    /// Drop documents whose id was already taken by an earlier one (e.g. `a.md` and
    /// `a.txt` in one folder), reporting each.
    pub fn dedupe_ids(&mut self) {
        let mut first: HashMap<String, String> = HashMap::new();
        let mut kept = Vec::with_capacity(self.docs.len());
        for doc in std::mem::take(&mut self.docs) {
            if let Some(origin) = first.get(&doc.id) {
                self.skipped.push(SkippedInput {
                    path: doc.origin.clone(),
                    reason: format!(
                        "duplicate document id `{}` (first seen at {origin})",
                        doc.id
                    ),
                });
            } else {
                first.insert(doc.id.clone(), doc.origin.clone());
                kept.push(doc);
            }
        }
        self.docs = kept;
    }
}
