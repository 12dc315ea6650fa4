//! Sparse retrieval over a tantivy index of the chunks (text with its header path).
//!
//! - **BM25**: tantivy's own scorer (k1 = 1.2, b = 0.75) over a disjunction of the
//!   query's analysed terms (each term once; no query syntax, so `?`, `:` or `(` in a
//!   question never fails to parse).
//! - **TF-IDF**: cosine between tf-idf vectors, computed from tantivy's postings with
//!   scikit-learn's `TfidfVectorizer` defaults (raw tf, smooth idf
//!   `ln((1 + N) / (1 + df)) + 1`, L2 norm) over tantivy's tokens. N and df count live
//!   documents only (tantivy's own `doc_freq` still counts deleted ones until a merge),
//!   and query terms no live document holds are out of the vocabulary and ignored, as
//!   `TfidfVectorizer.transform` ignores them. Document frequencies and norms need one
//!   pass over the whole inverted index; they are computed on first use and kept.
//!
//! Chunk ids come from a table read once from the stored documents (per segment, by
//! doc id), so a query reads no stored document.
//!
//! The index is updated incrementally: each document stores its chunk id and a hash of
//! its indexed text; `sync` deletes and re-adds only what changed.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use sha2::{Digest, Sha256};
use tantivy::collector::TopDocs;
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

use super::{Result, StoreError};
use crate::core::chunk::Chunk;
use crate::core::fusion::Scored;

pub const INDEX_DIR: &str = "index/bm25";

fn err(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Invalid(format!("tantivy index {}: {e}", path.display()))
}

/// Hash of the text a chunk is indexed under (changes when text or header path do).
pub fn text_hash(chunk: &Chunk) -> String {
    let digest = Sha256::digest(chunk.indexed_text().as_bytes());
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

struct Fields {
    id: Field,
    hash: Field,
    text: Field,
}

/// The chunk id of every live document, by segment ord then doc id (empty for a
/// deleted doc): read from the stored documents once, so a query reads none.
struct DocIds {
    ids: Vec<Vec<String>>,
}

/// TF-IDF data of the live documents: document frequencies and document norms.
struct TfIdfCache {
    /// Live documents.
    n: f64,
    /// Term (its value bytes) -> number of live documents holding it (> 0).
    df: HashMap<Vec<u8>, u64>,
    /// Segment ord -> doc id -> L2 norm of its tf-idf vector (0 for a deleted doc).
    norms: Vec<Vec<f64>>,
}

pub struct SparseIndex {
    path: PathBuf,
    index: Index,
    reader: IndexReader,
    fields: Fields,
    doc_ids: OnceLock<DocIds>,
    tfidf: OnceLock<TfIdfCache>,
    /// Dense TF-IDF accumulators (one per segment, all zeros between queries) kept for
    /// the next query: no per-query allocation of corpus size.
    scratch: Mutex<Vec<Vec<Vec<f64>>>>,
}

/// What a sync changed.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct SyncSummary {
    pub added: usize,
    pub removed: usize,
    pub unchanged: usize,
}

impl SparseIndex {
    fn schema() -> Schema {
        let mut b = Schema::builder();
        b.add_text_field("chunk_id", STRING | STORED);
        b.add_text_field("hash", STRING | STORED);
        b.add_text_field("text", TEXT);
        b.build()
    }

    /// Open the index in `dir`, creating an empty one if absent.
    pub fn open(dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let index = if dir.join("meta.json").is_file() {
            Index::open_in_dir(dir).map_err(|e| err(dir, e))?
        } else {
            Index::create_in_dir(dir, Self::schema()).map_err(|e| err(dir, e))?
        };
        let schema = index.schema();
        let field = |n: &str| schema.get_field(n).map_err(|e| err(dir, e));
        let fields = Fields {
            id: field("chunk_id")?,
            hash: field("hash")?,
            text: field("text")?,
        };
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| err(dir, e))?;
        Ok(Self {
            path: dir.to_path_buf(),
            index,
            reader,
            fields,
            doc_ids: OnceLock::new(),
            tfidf: OnceLock::new(),
            scratch: Mutex::new(Vec::new()),
        })
    }

    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// (chunk id, hash) of every live document.
    fn indexed(&self) -> Result<HashMap<String, String>> {
        let searcher = self.reader.searcher();
        let mut out = HashMap::new();
        for seg in searcher.segment_readers() {
            let store = seg.get_store_reader(64).map_err(|e| err(&self.path, e))?;
            for doc in seg.doc_ids_alive() {
                let d: TantivyDocument = store.get(doc).map_err(|e| err(&self.path, e))?;
                let get = |f: Field| {
                    d.get_first(f)
                        .and_then(|v| v.as_str())
                        .unwrap_or_default()
                        .to_string()
                };
                out.insert(get(self.fields.id), get(self.fields.hash));
            }
        }
        Ok(out)
    }

    /// Make the index hold exactly `chunks`, touching only what changed.
    ///
    /// Several processes may sync one index (shards of an object-store workspace on
    /// one machine): an index that already holds `chunks` is left alone without
    /// taking tantivy's writer lock, and a busy lock is waited for (up to 2 minutes),
    /// then the index re-read, since the holder may have done the work.
    pub fn sync(&mut self, chunks: &[Chunk]) -> Result<SyncSummary> {
        let wanted: HashMap<&str, String> = chunks
            .iter()
            .map(|c| (c.id.as_str(), text_hash(c)))
            .collect();
        let current = |indexed: &HashMap<String, String>| {
            indexed.len() == wanted.len()
                && indexed
                    .iter()
                    .all(|(id, h)| wanted.get(id.as_str()) == Some(h))
        };
        if current(&self.indexed()?) {
            return Ok(SyncSummary {
                unchanged: chunks.len(),
                ..Default::default()
            });
        }
        let mut writer = self.writer_waiting()?;
        self.reader.reload().map_err(|e| err(&self.path, e))?;
        let indexed = self.indexed()?;
        let mut summary = SyncSummary::default();
        for (id, hash) in &indexed {
            if wanted.get(id.as_str()) != Some(hash) {
                writer.delete_term(Term::from_field_text(self.fields.id, id));
                summary.removed += 1;
            }
        }
        for c in chunks {
            let hash = &wanted[c.id.as_str()];
            if indexed.get(&c.id) == Some(hash) {
                summary.unchanged += 1;
                continue;
            }
            let mut doc = TantivyDocument::default();
            doc.add_text(self.fields.id, &c.id);
            doc.add_text(self.fields.hash, hash);
            doc.add_text(self.fields.text, c.indexed_text());
            writer.add_document(doc).map_err(|e| err(&self.path, e))?;
            summary.added += 1;
        }
        if summary.added + summary.removed > 0 {
            writer.commit().map_err(|e| err(&self.path, e))?;
        }
        writer
            .wait_merging_threads()
            .map_err(|e| err(&self.path, e))?;
        self.reader.reload().map_err(|e| err(&self.path, e))?;
        self.doc_ids = OnceLock::new();
        self.tfidf = OnceLock::new();
        self.scratch = Mutex::new(Vec::new());
        Ok(summary)
    }

    /// Tantivy's index writer, waiting while another process holds its lock.
    fn writer_waiting(&self) -> Result<IndexWriter> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        loop {
            match self.index.writer(64 << 20) {
                Err(tantivy::TantivyError::LockFailure(
                    tantivy::directory::error::LockError::LockBusy,
                    _,
                )) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
                other => return other.map_err(|e| err(&self.path, e)),
            }
        }
    }

    /// The query's terms as the index analyses them (with repeats).
    fn analyse(&self, text: &str) -> Result<Vec<Term>> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(self.fields.text)
            .map_err(|e| err(&self.path, e))?;
        let mut stream = analyzer.token_stream(text);
        let mut terms = Vec::new();
        while stream.advance() {
            terms.push(Term::from_field_text(
                self.fields.text,
                &stream.token().text,
            ));
        }
        Ok(terms)
    }

    /// Every live document's chunk id (built on first use, kept until the next sync).
    fn doc_ids(&self) -> Result<&DocIds> {
        if let Some(d) = self.doc_ids.get() {
            return Ok(d);
        }
        let searcher = self.reader.searcher();
        let mut ids = Vec::new();
        for seg in searcher.segment_readers() {
            let store = seg.get_store_reader(64).map_err(|e| err(&self.path, e))?;
            let mut of_seg = vec![String::new(); seg.max_doc() as usize];
            for doc in seg.doc_ids_alive() {
                let d: TantivyDocument = store.get(doc).map_err(|e| err(&self.path, e))?;
                of_seg[doc as usize] = d
                    .get_first(self.fields.id)
                    .and_then(|v| v.as_str())
                    .unwrap_or_default()
                    .to_string();
            }
            ids.push(of_seg);
        }
        Ok(self.doc_ids.get_or_init(|| DocIds { ids }))
    }

    /// The chunk id of a hit (a document the index's searcher returned).
    fn chunk_id<'a>(&self, ids: &'a DocIds, addr: tantivy::DocAddress) -> Result<&'a str> {
        ids.ids
            .get(addr.segment_ord as usize)
            .and_then(|s| s.get(addr.doc_id as usize))
            .map(String::as_str)
            .ok_or_else(|| err(&self.path, format!("no document {addr:?}")))
    }

    /// Top `k` chunks by BM25, best first.
    pub fn bm25(&self, query: &str, k: usize) -> Result<Vec<Scored>> {
        let mut terms = self.analyse(query)?;
        let mut seen = HashSet::new();
        terms.retain(|t| seen.insert(t.clone()));
        if terms.is_empty() || k == 0 {
            return Ok(Vec::new());
        }
        let clauses: Vec<(Occur, Box<dyn Query>)> = terms
            .into_iter()
            .map(|t| {
                (
                    Occur::Should,
                    Box::new(TermQuery::new(t, IndexRecordOption::WithFreqs)) as Box<dyn Query>,
                )
            })
            .collect();
        let q = BooleanQuery::new(clauses);
        let ids = self.doc_ids()?;
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&q, &TopDocs::with_limit(k).order_by_score())
            .map_err(|e| err(&self.path, e))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            out.push(Scored {
                id: self.chunk_id(ids, addr)?.to_string(),
                score: f64::from(score),
            });
        }
        // Equal scores: chunk id descending, like trec_eval.
        out.sort_by(|a, b| b.score.total_cmp(&a.score).then_with(|| b.id.cmp(&a.id)));
        Ok(out)
    }

    fn idf(n: f64, df: f64) -> f64 {
        ((1.0 + n) / (1.0 + df)).ln() + 1.0
    }

    fn tfidf_cache(&self) -> Result<&TfIdfCache> {
        if let Some(c) = self.tfidf.get() {
            return Ok(c);
        }
        let searcher = self.reader.searcher();
        let n = searcher.num_docs() as f64;
        // Global document frequencies first (a term's df spans segments).
        let mut df: HashMap<Vec<u8>, u64> = HashMap::new();
        for seg in searcher.segment_readers() {
            let inv = seg
                .inverted_index(self.fields.text)
                .map_err(|e| err(&self.path, e))?;
            let mut stream = inv.terms().stream().map_err(|e| err(&self.path, e))?;
            while stream.advance() {
                let ti = stream.value();
                let mut postings = inv
                    .read_postings_from_terminfo(ti, IndexRecordOption::Basic)
                    .map_err(|e| err(&self.path, e))?;
                let mut count = 0u64;
                let mut d = postings.doc();
                while d != TERMINATED {
                    if !seg.is_deleted(d) {
                        count += 1;
                    }
                    d = postings.advance();
                }
                if count > 0 {
                    *df.entry(stream.key().to_vec()).or_default() += count;
                }
            }
        }
        let mut norms = Vec::new();
        for seg in searcher.segment_readers() {
            let inv = seg
                .inverted_index(self.fields.text)
                .map_err(|e| err(&self.path, e))?;
            let mut sq = vec![0.0f64; seg.max_doc() as usize];
            let mut stream = inv.terms().stream().map_err(|e| err(&self.path, e))?;
            while stream.advance() {
                let idf = Self::idf(n, df.get(stream.key()).copied().unwrap_or(0) as f64);
                let mut postings = inv
                    .read_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqs)
                    .map_err(|e| err(&self.path, e))?;
                let mut d = postings.doc();
                while d != TERMINATED {
                    if !seg.is_deleted(d) {
                        let w = f64::from(postings.term_freq()) * idf;
                        sq[d as usize] += w * w;
                    }
                    d = postings.advance();
                }
            }
            norms.push(sq.into_iter().map(f64::sqrt).collect());
        }
        Ok(self.tfidf.get_or_init(|| TfIdfCache { n, df, norms }))
    }

    /// Top `k` chunks by tf-idf cosine, best first; equal scores by chunk id
    /// descending. Dot products accumulate in a dense per-segment array (each
    /// document's sum in the same term order as a map would add them); only the k
    /// best ids are cloned.
    pub fn tfidf(&self, query: &str, k: usize) -> Result<Vec<Scored>> {
        let cache = self.tfidf_cache()?;
        let ids = self.doc_ids()?;
        let searcher = self.reader.searcher();
        let mut qtf: HashMap<Term, u32> = HashMap::new();
        for t in self.analyse(query)? {
            *qtf.entry(t).or_default() += 1;
        }
        let segments = searcher.segment_readers();
        let mut dot = self.take_scratch(&cache.norms);
        let mut touched: Vec<(usize, u32)> = Vec::new();
        let mut qnorm = 0.0;
        for (term, tf) in &qtf {
            // Out of the vocabulary (no live document holds it): no weight, no norm.
            let Some(&df) = cache.df.get(term.serialized_value_bytes()) else {
                continue;
            };
            let idf = Self::idf(cache.n, df as f64);
            let qw = f64::from(*tf) * idf;
            qnorm += qw * qw;
            for (ord, seg) in segments.iter().enumerate() {
                let inv = seg
                    .inverted_index(self.fields.text)
                    .map_err(|e| err(&self.path, e))?;
                let Some(mut postings) = inv
                    .read_postings(term, IndexRecordOption::WithFreqs)
                    .map_err(|e| err(&self.path, e))?
                else {
                    continue;
                };
                let acc = &mut dot[ord];
                let mut d = postings.doc();
                while d != TERMINATED {
                    if !seg.is_deleted(d) {
                        let slot = &mut acc[d as usize];
                        // Every contribution is > 0: a zero slot is one not yet touched.
                        if *slot == 0.0 {
                            touched.push((ord, d));
                        }
                        *slot += qw * f64::from(postings.term_freq()) * idf;
                    }
                    d = postings.advance();
                }
            }
        }
        let qnorm = qnorm.sqrt();
        let mut best = TopK::new(k);
        for &(ord, d) in &touched {
            let slot = &mut dot[ord][d as usize];
            let (sum, norm) = (*slot, cache.norms[ord][d as usize]);
            *slot = 0.0;
            if norm > 0.0 && qnorm > 0.0 {
                best.offer(sum / (norm * qnorm), &ids.ids[ord][d as usize]);
            }
        }
        self.give_scratch(dot);
        Ok(best.into_sorted())
    }

    /// Zeroed accumulators shaped like `norms` (a kept set, or new ones).
    fn take_scratch(&self, norms: &[Vec<f64>]) -> Vec<Vec<f64>> {
        let kept = self.scratch.lock().ok().and_then(|mut s| s.pop());
        kept.unwrap_or_else(|| norms.iter().map(|n| vec![0.0; n.len()]).collect())
    }

    /// Keep zeroed accumulators for the next query.
    fn give_scratch(&self, dot: Vec<Vec<f64>>) {
        if let Ok(mut s) = self.scratch.lock() {
            s.push(dot);
        }
    }
}

/// The `k` best (score, id) pairs, larger first: score by `total_cmp`, then id.
struct TopK<'a> {
    k: usize,
    heap: BinaryHeap<Reverse<(TotalF64, &'a str)>>,
}

/// An f64 ordered by `total_cmp`.
#[derive(Debug, Clone, Copy)]
struct TotalF64(f64);

impl PartialEq for TotalF64 {
    fn eq(&self, other: &Self) -> bool {
        self.0.total_cmp(&other.0).is_eq()
    }
}

impl Eq for TotalF64 {}

impl PartialOrd for TotalF64 {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TotalF64 {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.total_cmp(&other.0)
    }
}

impl<'a> TopK<'a> {
    fn new(k: usize) -> Self {
        Self {
            k,
            heap: BinaryHeap::with_capacity(k + 1),
        }
    }

    fn offer(&mut self, score: f64, id: &'a str) {
        let e = (TotalF64(score), id);
        if self.heap.len() < self.k {
            self.heap.push(Reverse(e));
        } else if self.heap.peek().is_some_and(|Reverse(worst)| e > *worst) {
            self.heap.pop();
            self.heap.push(Reverse(e));
        }
    }

    /// Best first, ids cloned.
    fn into_sorted(self) -> Vec<Scored> {
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|Reverse((s, id))| Scored {
                id: id.to_string(),
                score: s.0,
            })
            .collect()
    }
}
