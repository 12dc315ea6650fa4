//! What a sparse query needs besides tantivy's postings, built once from the whole
//! index and kept in files beside it: the chunk id of every document (both methods
//! name their hits by it) and TF-IDF's term statistics and document norms.
//!
//! Building them reads every stored document (the ids) or walks every posting three
//! times (TF-IDF): seconds at a million chunks, which a one-shot `raglab search`, each
//! `eval` process and the TUI's first question would otherwise pay on every start.
//! Each file carries the key of the index state it was built from (every segment's
//! id, document count, deleted count and delete opstamp, in the searcher's order):
//! a file from any other state is never used, but rebuilt and rewritten. A file is
//! written under a temporary name and renamed into place, so a reader sees a whole
//! file or none; a file that does not decode is treated as absent. Tantivy's garbage
//! collection only deletes the files it created, so these stay beside the index (after
//! a change, stale until the next process's first query rewrites them). Floats are
//! stored as their bits: a loaded cache scores exactly as a built one.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// The chunk id of every document, by segment ord then doc id (empty for a deleted
/// document), each segment's ids in one buffer: a million ids are a few allocations.
pub(super) struct DocIds {
    segments: Vec<SegmentIds>,
}

struct SegmentIds {
    text: String,
    /// `ends[d]`: where doc `d`'s id ends in `text` (it starts where `d - 1`'s ends).
    ends: Vec<u32>,
}

impl DocIds {
    /// Ids of segments given one document at a time, by doc id.
    pub(super) fn from_segments(segments: Vec<Vec<String>>) -> Self {
        Self {
            segments: segments
                .into_iter()
                .map(|ids| {
                    let mut text = String::with_capacity(ids.iter().map(String::len).sum());
                    let mut ends = Vec::with_capacity(ids.len());
                    for id in &ids {
                        text.push_str(id);
                        ends.push(text.len() as u32);
                    }
                    SegmentIds { text, ends }
                })
                .collect(),
        }
    }

    /// The chunk id of document `doc` of segment `ord` (empty if deleted).
    pub(super) fn id(&self, ord: usize, doc: u32) -> &str {
        let seg = &self.segments[ord];
        let d = doc as usize;
        let start = if d == 0 { 0 } else { seg.ends[d - 1] as usize };
        &seg.text[start..seg.ends[d] as usize]
    }
}

/// TF-IDF data of the live documents: document frequencies and document norms.
pub(super) struct TfIdfCache {
    /// Live documents.
    pub n: f64,
    /// Term (its value bytes) -> number of live documents holding it (> 0).
    pub df: HashMap<Vec<u8>, u64>,
    /// Term (its value bytes) -> its largest weight in a unit document vector,
    /// `tf * idf / norm` over the live documents: a query term of weight `qw` adds at
    /// most `qw * max_weight / |q|` to any document's cosine (what pruning bounds by).
    pub max_weight: HashMap<Vec<u8>, f64>,
    /// Segment ord -> doc id -> L2 norm of its tf-idf vector (0 for a deleted doc).
    pub norms: Vec<Vec<f64>>,
}

const DOC_IDS_FILE: &str = "raglab-doc-ids.bin";
const TFIDF_FILE: &str = "raglab-tfidf.bin";
/// The first line of each file, with the version of what it holds: bump the version
/// whenever what is computed changes (the idf, the norms, the tokens), or files of
/// the old computation would be read as current ones.
const DOC_IDS_MAGIC: &[u8] = b"raglab doc ids v1\n";
const TFIDF_MAGIC: &[u8] = b"raglab tf-idf v1\n";

/// The key of the state a searcher reads: each segment's id, document count, deleted
/// count and delete opstamp, in the searcher's order (the order segment ords follow).
pub(super) fn state_key(searcher: &tantivy::Searcher) -> Vec<u8> {
    let mut key = String::new();
    for seg in searcher.segment_readers() {
        key.push_str(&format!(
            "{}:{}:{}:{:?};",
            seg.segment_id().uuid_string(),
            seg.max_doc(),
            seg.num_deleted_docs(),
            seg.delete_opstamp()
        ));
    }
    key.into_bytes()
}

/// Each segment's document count (deleted ones included), in the searcher's order:
/// the shape every per-document table must have.
pub(super) fn shape(searcher: &tantivy::Searcher) -> Vec<usize> {
    searcher
        .segment_readers()
        .iter()
        .map(|s| s.max_doc() as usize)
        .collect()
}

/// The ids stored in `dir` for state `key` (segments of `shape`), if a whole file of
/// that state is there.
pub(super) fn load_doc_ids(dir: &Path, key: &[u8], shape: &[usize]) -> Option<DocIds> {
    let bytes = std::fs::read(dir.join(DOC_IDS_FILE)).ok()?;
    let mut r = Decoder::open(&bytes, DOC_IDS_MAGIC, key)?;
    r.len_of(shape.len())?;
    let mut segments = Vec::with_capacity(shape.len());
    for &max_doc in shape {
        let n = r.len_of(max_doc)?;
        let mut ends = Vec::with_capacity(n);
        for _ in 0..n {
            ends.push(r.u32()?);
        }
        let text = String::from_utf8(r.bytes()?.to_vec()).ok()?;
        // Ends must rise within the text and fall on character boundaries.
        let mut start = 0;
        for &end in &ends {
            let end = end as usize;
            if end < start || !text.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        segments.push(SegmentIds { text, ends });
    }
    r.finished().then_some(DocIds { segments })
}

/// Keep `ids` of state `key` in `dir` (best effort: a failure is logged, queries go on).
pub(super) fn save_doc_ids(dir: &Path, key: &[u8], ids: &DocIds) {
    let mut w = Encoder::new(DOC_IDS_MAGIC, key);
    w.u64(ids.segments.len() as u64);
    for seg in &ids.segments {
        w.u64(seg.ends.len() as u64);
        for &end in &seg.ends {
            w.u32(end);
        }
        w.bytes(seg.text.as_bytes());
    }
    w.save(&dir.join(DOC_IDS_FILE));
}

/// The TF-IDF data stored in `dir` for state `key` (segments of `shape`), if a whole
/// file of it is there.
pub(super) fn load_tfidf(dir: &Path, key: &[u8], shape: &[usize]) -> Option<TfIdfCache> {
    let bytes = std::fs::read(dir.join(TFIDF_FILE)).ok()?;
    let mut r = Decoder::open(&bytes, TFIDF_MAGIC, key)?;
    let n = r.f64()?;
    let terms = r.len()?;
    // Each term takes at least 24 bytes: a damaged count asks for no more than the
    // file could hold.
    let room = terms.min(r.left() / 24);
    let mut df = HashMap::with_capacity(room);
    let mut max_weight = HashMap::with_capacity(room);
    for _ in 0..terms {
        let term = r.bytes()?.to_vec();
        let (d, m) = (r.u64()?, r.f64()?);
        if m > 0.0 {
            max_weight.insert(term.clone(), m);
        }
        df.insert(term, d);
    }
    r.len_of(shape.len())?;
    let mut norms = Vec::with_capacity(shape.len());
    for &max_doc in shape {
        let len = r.len_of(max_doc)?;
        let mut seg = Vec::with_capacity(len);
        for _ in 0..len {
            seg.push(r.f64()?);
        }
        norms.push(seg);
    }
    r.finished().then_some(TfIdfCache {
        n,
        df,
        max_weight,
        norms,
    })
}

/// Keep `cache` of state `key` in `dir` (best effort, as [`save_doc_ids`]).
pub(super) fn save_tfidf(dir: &Path, key: &[u8], cache: &TfIdfCache) {
    let mut w = Encoder::new(TFIDF_MAGIC, key);
    w.f64(cache.n);
    w.u64(cache.df.len() as u64);
    for (term, &df) in &cache.df {
        w.bytes(term);
        w.u64(df);
        w.f64(cache.max_weight.get(term).copied().unwrap_or(0.0));
    }
    w.u64(cache.norms.len() as u64);
    for seg in &cache.norms {
        w.u64(seg.len() as u64);
        for &x in seg {
            w.f64(x);
        }
    }
    w.save(&dir.join(TFIDF_FILE));
}

/// Little-endian fields after a magic line and the state key.
struct Encoder(Vec<u8>);

impl Encoder {
    fn new(magic: &[u8], key: &[u8]) -> Self {
        let mut w = Self(magic.to_vec());
        w.bytes(key);
        w
    }

    fn u32(&mut self, x: u32) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    fn u64(&mut self, x: u64) {
        self.0.extend_from_slice(&x.to_le_bytes());
    }

    fn f64(&mut self, x: f64) {
        self.u64(x.to_bits());
    }

    fn bytes(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.0.extend_from_slice(b);
    }

    /// Write to a temporary file beside `path` (named for this process and this
    /// write, so that two writers never share one), then rename it over `path`.
    fn save(self, path: &Path) {
        static WRITES: AtomicU64 = AtomicU64::new(0);
        let tmp = PathBuf::from(format!(
            "{}.{}-{}.tmp",
            path.display(),
            std::process::id(),
            WRITES.fetch_add(1, Ordering::Relaxed)
        ));
        let written = std::fs::write(&tmp, &self.0).and_then(|()| std::fs::rename(&tmp, path));
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            tracing::warn!(
                "could not keep {} (the next start rebuilds it): {e}",
                path.display()
            );
        }
    }
}

/// Reads what [`Encoder`] wrote; every read is `None` past the end.
struct Decoder<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Decoder<'a> {
    /// A decoder past the magic and key, if both are those expected.
    fn open(buf: &'a [u8], magic: &[u8], key: &[u8]) -> Option<Self> {
        let mut r = Self {
            buf: buf.strip_prefix(magic)?,
            at: 0,
        };
        (r.bytes()? == key).then_some(r)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.buf.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }

    fn f64(&mut self) -> Option<f64> {
        self.u64().map(f64::from_bits)
    }

    /// A count of items that follow, each at least one byte: larger than what is
    /// left is a damaged file (and no huge allocation).
    fn len(&mut self) -> Option<usize> {
        let n = usize::try_from(self.u64()?).ok()?;
        (n <= self.left()).then_some(n)
    }

    /// A count that must equal `want` (a segment's documents): another is a file of
    /// another shape.
    fn len_of(&mut self, want: usize) -> Option<usize> {
        self.len().filter(|&n| n == want)
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.take(n)
    }

    fn left(&self) -> usize {
        self.buf.len() - self.at
    }

    fn finished(&self) -> bool {
        self.left() == 0
    }
}
