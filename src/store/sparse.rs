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
use tantivy::postings::Postings;
use tantivy::query::{BooleanQuery, Occur, Query, Scorer, TermQuery};
use tantivy::schema::{Field, IndexRecordOption, STORED, STRING, Schema, TEXT, Value};
use tantivy::{
    DocSet, Index, IndexReader, IndexWriter, ReloadPolicy, TERMINATED, TantivyDocument, Term,
};

use super::{Result, StoreError};
use crate::core::chunk::Chunk;
use crate::core::fusion::Scored;

pub const INDEX_DIR: &str = "index/bm25";

/// The place (rank from 1, score) of each of some chunks in a whole ranking, in the
/// order they were asked for (`None`: the ranking does not hold the chunk).
pub type Ranks = Vec<Option<(usize, f64)>>;

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

    /// The BM25 weights of a query: the disjunction of its analysed terms (each
    /// once), which prunes, and each term's own weight, which scores (`None`: no term).
    fn bm25_query(&self, query: &str, searcher: &tantivy::Searcher) -> Result<Option<Bm25Query>> {
        let mut terms = self.analyse(query)?;
        let mut seen = HashSet::new();
        terms.retain(|t| seen.insert(t.clone()));
        if terms.is_empty() {
            return Ok(None);
        }
        let scoring = tantivy::query::EnableScoring::enabled_from_searcher(searcher);
        let queries: Vec<TermQuery> = terms
            .into_iter()
            .map(|t| TermQuery::new(t, IndexRecordOption::WithFreqs))
            .collect();
        let each = queries
            .iter()
            .map(|q| q.weight(scoring))
            .collect::<tantivy::Result<Vec<_>>>()
            .map_err(|e| err(&self.path, e))?;
        let clauses: Vec<(Occur, Box<dyn Query>)> = queries
            .into_iter()
            .map(|q| (Occur::Should, Box::new(q) as Box<dyn Query>))
            .collect();
        let union = BooleanQuery::new(clauses)
            .weight(scoring)
            .map_err(|e| err(&self.path, e))?;
        Ok(Some(Bm25Query { union, each }))
    }

    /// One scorer per query term on `seg`, in the query's order (what
    /// [`fixed_order_score`] sums).
    fn term_scorers(
        &self,
        q: &Bm25Query,
        seg: &tantivy::SegmentReader,
    ) -> Result<Vec<Box<dyn Scorer>>> {
        q.each
            .iter()
            .map(|w| w.scorer(seg, 1.0))
            .collect::<tantivy::Result<Vec<_>>>()
            .map_err(|e| err(&self.path, e))
    }

    /// Offer `on_doc` every live document of `seg` whose BM25 score may reach the
    /// floor (starting at `floor`; `on_doc` returns the new one), with its score
    /// added term by term in the query's order. Tantivy's block-WAND pass prunes, but
    /// its sum's order depends on how far each term's postings have moved, so a
    /// score could differ in its last bit between a top-10 and a top-1000 pass; the
    /// score offered is recomputed in one fixed order (documents come in increasing
    /// order, so each term's scorer only moves forward), and the pruning threshold
    /// sits a hair below the floor so that no document the fixed order places at
    /// the floor is pruned.
    fn bm25_pass(
        &self,
        q: &Bm25Query,
        seg: &tantivy::SegmentReader,
        mut floor: f32,
        mut on_doc: impl FnMut(u32, f32) -> f32,
    ) -> Result<()> {
        let mut terms = self.term_scorers(q, seg)?;
        let hair = |f: f32| {
            if f.is_finite() {
                f - f.abs() * 1e-4 - f32::MIN_POSITIVE
            } else {
                f
            }
        };
        q.union
            .for_each_pruning(hair(floor), seg, &mut |doc, _| {
                if !seg.is_deleted(doc) {
                    floor = on_doc(doc, fixed_order_score(&mut terms, doc));
                }
                hair(floor)
            })
            .map_err(|e| err(&self.path, e))
    }

    /// Top `k` chunks by BM25, best first; equal scores by chunk id descending, also
    /// at the cut (tantivy's own top-k breaks a tie at the k-th place by document
    /// address, so its list could differ from the first `k` of the whole ranking).
    pub fn bm25(&self, query: &str, k: usize) -> Result<Vec<Scored>> {
        let searcher = self.reader.searcher();
        let Some(q) = self.bm25_query(query, &searcher)? else {
            return Ok(Vec::new());
        };
        if k == 0 {
            return Ok(Vec::new());
        }
        let ids = self.doc_ids()?;
        let mut best = TopK::new(k);
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let of_seg = &ids.ids[ord];
            let floor = best.floor().unwrap_or(f32::NEG_INFINITY);
            self.bm25_pass(&q, seg, floor, |doc, score| {
                best.offer(f64::from(score), &of_seg[doc as usize]);
                best.floor().unwrap_or(f32::NEG_INFINITY)
            })?;
        }
        Ok(best.into_sorted())
    }

    /// The (segment ord, doc id) of a live document holding chunk `id`.
    fn locate(&self, searcher: &tantivy::Searcher, id: &str) -> Result<Option<(usize, u32)>> {
        let term = Term::from_field_text(self.fields.id, id);
        for (ord, seg) in searcher.segment_readers().iter().enumerate() {
            let inv = seg
                .inverted_index(self.fields.id)
                .map_err(|e| err(&self.path, e))?;
            let Some(mut postings) = inv
                .read_postings(&term, IndexRecordOption::Basic)
                .map_err(|e| err(&self.path, e))?
            else {
                continue;
            };
            let mut d = postings.doc();
            while d != TERMINATED {
                if !seg.is_deleted(d) {
                    return Ok(Some((ord, d)));
                }
                d = postings.advance();
            }
        }
        Ok(None)
    }

    /// The place (rank from 1, score) of each of `wanted` in the whole BM25 ranking
    /// [`SparseIndex::bm25`] cuts at k (`None`: the chunk shares no term with the
    /// query, or is not indexed), without ranking every document: each chunk's
    /// score is read by moving the terms' scorers to its document, then one pruned
    /// pass counts, for each chunk, the documents scoring above it (or the same with
    /// a greater id), without collecting or sorting them (scores added in the same
    /// fixed order as the top-k pass adds them).
    pub fn bm25_ranks(&self, query: &str, wanted: &[&str]) -> Result<Ranks> {
        let searcher = self.reader.searcher();
        let none = vec![None; wanted.len()];
        let Some(q) = self.bm25_query(query, &searcher)? else {
            return Ok(none);
        };
        let segments = searcher.segment_readers();
        let mut scores: Vec<Option<f32>> = vec![None; wanted.len()];
        let mut at: Vec<(usize, u32, usize)> = Vec::new();
        for (i, id) in wanted.iter().enumerate() {
            if let Some((ord, doc)) = self.locate(&searcher, id)? {
                at.push((ord, doc, i));
            }
        }
        at.sort_unstable();
        for (ord, seg) in segments.iter().enumerate() {
            let mut terms = self.term_scorers(&q, seg)?;
            for &(_, doc, i) in at.iter().filter(|a| a.0 == ord) {
                let s = fixed_order_score(&mut terms, doc);
                // A document sharing no term with the query scores 0: not ranked.
                scores[i] = (s > 0.0).then_some(s);
            }
        }
        let Some(lowest) = scores.iter().flatten().copied().reduce(f32::min) else {
            return Ok(none);
        };
        // The wanted scores ascending; a document scoring above the `n` lowest adds
        // one to each of them (a difference array), ties compare ids.
        let mut targets: Vec<(f32, &str, usize)> = scores
            .iter()
            .zip(wanted)
            .enumerate()
            .filter_map(|(i, (s, id))| s.map(|s| (s, *id, i)))
            .collect();
        targets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut diff = vec![0isize; targets.len() + 1];
        let ids = self.doc_ids()?;
        for (ord, seg) in segments.iter().enumerate() {
            self.bm25_pass(&q, seg, lowest, |doc, score| {
                if score >= lowest {
                    let id = ids.ids[ord][doc as usize].as_str();
                    let n = targets.partition_point(|t| t.0.total_cmp(&score).is_lt());
                    diff[0] += 1;
                    diff[n] -= 1;
                    for (j, t) in targets.iter().enumerate().skip(n) {
                        if t.0.total_cmp(&score).is_gt() {
                            break;
                        }
                        if id > t.1 {
                            diff[j] += 1;
                            diff[j + 1] -= 1;
                        }
                    }
                }
                lowest
            })?;
        }
        let mut places = vec![None; wanted.len()];
        let mut before = 0isize;
        for (j, &(score, _, i)) in targets.iter().enumerate() {
            before += diff[j];
            places[i] = Some((before.unsigned_abs() + 1, f64::from(score)));
        }
        Ok(places)
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
    /// document's sum in the order of the query's terms sorted by their bytes, the
    /// same on every call); only the k best ids are cloned.
    pub fn tfidf(&self, query: &str, k: usize) -> Result<Vec<Scored>> {
        Ok(self.tfidf_ranked(query, k, &[])?.0)
    }

    /// [`SparseIndex::tfidf`], and the place (rank from 1, score) of each of `wanted`
    /// in the whole ranking (`None`: no shared term, or not indexed), counted over the
    /// same accumulator: a document comes before a wanted one if it scores higher, or
    /// the same with a greater chunk id.
    pub fn tfidf_ranked(
        &self,
        query: &str,
        k: usize,
        wanted: &[&str],
    ) -> Result<(Vec<Scored>, Ranks)> {
        let cache = self.tfidf_cache()?;
        let ids = self.doc_ids()?;
        let searcher = self.reader.searcher();
        let mut qtf: HashMap<Term, u32> = HashMap::new();
        for t in self.analyse(query)? {
            *qtf.entry(t).or_default() += 1;
        }
        // One order of the terms, whatever the map's: the sums' rounding is then the
        // same for the same query.
        let mut qtf: Vec<(Term, u32)> = qtf.into_iter().collect();
        qtf.sort_by(|a, b| {
            a.0.serialized_value_bytes()
                .cmp(b.0.serialized_value_bytes())
        });
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
        let score = |ord: usize, d: u32, sum: f64| {
            let norm = cache.norms[ord][d as usize];
            (norm > 0.0 && qnorm > 0.0).then(|| sum / (norm * qnorm))
        };
        // The wanted chunks' scores, read before the accumulators are cleared.
        let mut places: Vec<Option<(usize, f64)>> = Vec::with_capacity(wanted.len());
        let mut targets: Vec<(f64, &str, usize)> = Vec::new();
        for (i, id) in wanted.iter().enumerate() {
            let s = self.locate(&searcher, id)?.and_then(|(ord, d)| {
                score(ord, d, dot[ord][d as usize]).filter(|_| dot[ord][d as usize] > 0.0)
            });
            places.push(s.map(|s| (1, s)));
            if let Some(s) = s {
                targets.push((s, id, i));
            }
        }
        targets.sort_by(|a, b| a.0.total_cmp(&b.0));
        let mut before = vec![0usize; targets.len()];
        // `hist[n]`: documents scoring above exactly the `n` lowest wanted scores.
        let mut hist = vec![0usize; targets.len() + 1];
        let mut best = TopK::new(k);
        for &(ord, d) in &touched {
            let slot = &mut dot[ord][d as usize];
            let sum = *slot;
            *slot = 0.0;
            let Some(s) = score(ord, d, sum) else {
                continue;
            };
            let id = &ids.ids[ord][d as usize];
            best.offer(s, id);
            if targets.is_empty() {
                continue;
            }
            let n = targets.partition_point(|t| t.0.total_cmp(&s).is_lt());
            hist[n] += 1;
            // Equal scores: before a wanted chunk if its id is greater.
            for (j, t) in targets.iter().enumerate().skip(n) {
                if t.0.total_cmp(&s).is_gt() {
                    break;
                }
                before[j] += usize::from(id.as_str() > t.1);
            }
        }
        self.give_scratch(dot);
        let mut higher = 0;
        for j in (0..targets.len()).rev() {
            higher += hist[j + 1];
            let (s, _, i) = targets[j];
            places[i] = Some((higher + before[j] + 1, s));
        }
        Ok((best.into_sorted(), places))
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

/// A query's BM25 weights (see [`SparseIndex::bm25_query`]).
struct Bm25Query {
    union: Box<dyn tantivy::query::Weight>,
    each: Vec<Box<dyn tantivy::query::Weight>>,
}

/// The BM25 score of `doc`: its terms' scores added in the query's order, from 0.
/// Each scorer moves forward to `doc` (documents must come in increasing order).
fn fixed_order_score(terms: &mut [Box<dyn Scorer>], doc: u32) -> f32 {
    let mut score = 0.0f32;
    for t in terms.iter_mut() {
        if t.doc() < doc {
            t.seek(doc);
        }
        if t.doc() == doc {
            score += t.score();
        }
    }
    score
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

    /// The k-th best score once k are held (as f32: the BM25 pass offers f32 scores).
    fn floor(&self) -> Option<f32> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|Reverse((s, _))| s.0 as f32))
            .flatten()
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
