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
//!   `TfidfVectorizer.transform` ignores them. Document frequencies, norms and each
//!   term's largest weight in a unit document vector take three passes over the whole
//!   inverted index; they are computed on first use and kept, in memory and in a file
//!   beside the index for its state (`sparse_stats`), so the next process reads them.
//!   A top-k query prunes (see [`SparseIndex::tfidf`]): frequent terms' long posting
//!   lists are read only where they can still change the top k.
//!
//! Chunk ids come from a table read once from the stored documents (per segment, by
//! doc id) and kept beside the index the same way, so a query reads no stored document.
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

use super::sparse_stats::{self as stats, DocIds, TfIdfCache};
use super::{Result, StoreError};
use crate::core::chunk::Chunk;
use crate::core::fusion::Scored;

pub const INDEX_DIR: &str = "index/bm25";

/// The place (rank from 1, score) of each of some chunks in a whole ranking, in the
/// order they were asked for (`None`: the ranking does not hold the chunk).
pub type Ranks = Vec<Option<(usize, f64)>>;

mod pruned;

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

    /// Build (or read) and keep what queries need besides the postings, the chunk
    /// ids and TF-IDF's statistics, so that the next process's first query does not
    /// pay for them (`index` calls this after a sync).
    pub fn prepare(&self) -> Result<()> {
        self.doc_ids()?;
        self.tfidf_cache()?;
        Ok(())
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

    /// Every live document's chunk id (on first use: read from the file kept beside
    /// the index for its state, or built and kept there; held until the next sync).
    fn doc_ids(&self) -> Result<&DocIds> {
        self.kept_or_built(
            &self.doc_ids,
            stats::load_doc_ids,
            |s| self.read_doc_ids(s),
            stats::save_doc_ids,
        )
    }

    /// The table in `cell`, else the one kept beside the index for its state (`load`),
    /// else one built from the searcher and kept there (`build`, `save`).
    fn kept_or_built<'s, T>(
        &'s self,
        cell: &'s OnceLock<T>,
        load: impl FnOnce(&Path, &[u8], &[usize]) -> Option<T>,
        build: impl FnOnce(&tantivy::Searcher) -> Result<T>,
        save: impl FnOnce(&Path, &[u8], &T),
    ) -> Result<&'s T> {
        if let Some(t) = cell.get() {
            return Ok(t);
        }
        let searcher = self.reader.searcher();
        let (key, shape) = (stats::state_key(&searcher), stats::shape(&searcher));
        let table = match load(&self.path, &key, &shape) {
            Some(t) => t,
            None => {
                let t = build(&searcher)?;
                save(&self.path, &key, &t);
                t
            }
        };
        Ok(cell.get_or_init(|| table))
    }

    /// Every live document's chunk id, read from the stored documents.
    fn read_doc_ids(&self, searcher: &tantivy::Searcher) -> Result<DocIds> {
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
        Ok(DocIds::from_segments(ids))
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
            let floor = best.floor().unwrap_or(f32::NEG_INFINITY);
            self.bm25_pass(&q, seg, floor, |doc, score| {
                best.offer(f64::from(score), ids.id(ord, doc));
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
                    let id = ids.id(ord, doc);
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

    /// The TF-IDF data of the live documents (on first use: read from the file kept
    /// beside the index for its state, or built and kept there).
    fn tfidf_cache(&self) -> Result<&TfIdfCache> {
        self.kept_or_built(
            &self.tfidf,
            stats::load_tfidf,
            |s| self.build_tfidf(s),
            stats::save_tfidf,
        )
    }

    /// Document frequencies, norms and largest unit weights: three passes over every
    /// posting.
    fn build_tfidf(&self, searcher: &tantivy::Searcher) -> Result<TfIdfCache> {
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
        let mut max_weight: HashMap<Vec<u8>, f64> = HashMap::new();
        for seg in searcher.segment_readers() {
            let mut sq = vec![0.0f64; seg.max_doc() as usize];
            self.walk_weights(seg, n, &df, |step| {
                if let Walk::Posting(d, w) = step {
                    sq[d as usize] += w * w;
                }
            })?;
            let seg_norms: Vec<f64> = sq.into_iter().map(f64::sqrt).collect();
            // Each term's largest unit-vector weight (needs the norms: a second pass).
            let mut most = 0.0f64;
            self.walk_weights(seg, n, &df, |step| match step {
                Walk::Posting(d, w) => {
                    let norm = seg_norms[d as usize];
                    if norm > 0.0 {
                        most = most.max(w / norm);
                    }
                }
                Walk::TermDone(key) => {
                    if most > 0.0 {
                        let m = max_weight.entry(key.to_vec()).or_default();
                        *m = m.max(most);
                    }
                    most = 0.0;
                }
            })?;
            norms.push(seg_norms);
        }
        Ok(TfIdfCache {
            n,
            df,
            max_weight,
            norms,
        })
    }

    /// Every live posting of `seg`'s text, term by term: its document and its tf-idf
    /// weight `tf * idf` (`Walk::Posting`), then the term's bytes (`Walk::TermDone`).
    fn walk_weights(
        &self,
        seg: &tantivy::SegmentReader,
        n: f64,
        df: &HashMap<Vec<u8>, u64>,
        mut on: impl FnMut(Walk<'_>),
    ) -> Result<()> {
        let inv = seg
            .inverted_index(self.fields.text)
            .map_err(|e| err(&self.path, e))?;
        let mut stream = inv.terms().stream().map_err(|e| err(&self.path, e))?;
        while stream.advance() {
            let idf = Self::idf(n, df.get(stream.key()).copied().unwrap_or(0) as f64);
            let mut postings = inv
                .read_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqs)
                .map_err(|e| err(&self.path, e))?;
            let mut d = postings.doc();
            while d != TERMINATED {
                if !seg.is_deleted(d) {
                    on(Walk::Posting(d, f64::from(postings.term_freq()) * idf));
                }
                d = postings.advance();
            }
            on(Walk::TermDone(stream.key()));
        }
        Ok(())
    }

    /// Top `k` chunks by tf-idf cosine, best first; equal scores by chunk id
    /// descending: the first `k` of [`SparseIndex::tfidf_ranked`]'s whole ranking, with
    /// the same score bits, without reading every posting.
    pub fn tfidf(&self, query: &str, k: usize) -> Result<Vec<Scored>> {
        Ok(self.tfidf_pruned(query, k)?.0)
    }

    /// The query's terms in the vocabulary in the one order every document's dot
    /// product is added in, whatever the path: largest bound (`qw * max_weight`)
    /// first, equal bounds by their bytes. A pruned pass reads terms whole in this
    /// order, so its partial sums are the first additions of every full sum, and the
    /// terms it did not read are added after them, in the same order. Also the query
    /// vector's norm (its squares added in byte order).
    fn tfidf_terms(&self, cache: &TfIdfCache, query: &str) -> Result<(Vec<QueryTerm>, f64)> {
        let mut qtf: HashMap<Term, u32> = HashMap::new();
        for t in self.analyse(query)? {
            *qtf.entry(t).or_default() += 1;
        }
        let mut qtf: Vec<(Term, u32)> = qtf.into_iter().collect();
        qtf.sort_by(|a, b| {
            a.0.serialized_value_bytes()
                .cmp(b.0.serialized_value_bytes())
        });
        let mut terms = Vec::with_capacity(qtf.len());
        let mut qnorm = 0.0;
        for (term, tf) in qtf {
            // Out of the vocabulary (no live document holds it): no weight, no norm.
            let bytes = term.serialized_value_bytes();
            let Some(&df) = cache.df.get(bytes) else {
                continue;
            };
            let idf = Self::idf(cache.n, df as f64);
            let qw = f64::from(tf) * idf;
            qnorm += qw * qw;
            let max_weight = cache.max_weight.get(bytes).copied().unwrap_or(0.0);
            terms.push(QueryTerm {
                term,
                qw,
                idf,
                max_weight,
            });
        }
        // Stable: equal bounds keep the byte order.
        terms.sort_by(|a, b| (b.qw * b.max_weight).total_cmp(&(a.qw * a.max_weight)));
        Ok((terms, qnorm.sqrt()))
    }

    /// Add `qw * tf * idf` of `term` to `acc[doc]` for each live document holding it
    /// in `seg`, noting each document first touched; returns the postings read.
    fn accumulate(
        &self,
        seg: &tantivy::SegmentReader,
        ord: usize,
        t: &QueryTerm,
        acc: &mut [f64],
        touched: &mut Vec<(usize, u32)>,
    ) -> Result<usize> {
        let inv = seg
            .inverted_index(self.fields.text)
            .map_err(|e| err(&self.path, e))?;
        let Some(mut postings) = inv
            .read_postings(&t.term, IndexRecordOption::WithFreqs)
            .map_err(|e| err(&self.path, e))?
        else {
            return Ok(0);
        };
        let mut read = 0;
        let mut d = postings.doc();
        while d != TERMINATED {
            if !seg.is_deleted(d) {
                read += 1;
                let slot = &mut acc[d as usize];
                // Every contribution is > 0: a zero slot is one not yet touched.
                if *slot == 0.0 {
                    touched.push((ord, d));
                }
                *slot += t.qw * f64::from(postings.term_freq()) * t.idf;
            }
            d = postings.advance();
        }
        Ok(read)
    }

    /// Top `k` by tf-idf cosine with every posting of every query term read (the
    /// reference [`SparseIndex::tfidf`] prunes against), and the place (rank from 1,
    /// score) of each of `wanted` in the whole ranking (`None`: no shared term, or not
    /// indexed), counted over the same accumulator: a document comes before a wanted
    /// one if it scores higher, or the same with a greater chunk id. Dot products
    /// accumulate in a dense per-segment array, each document's sum in the query
    /// terms' fixed order (see `tfidf_terms`); only the k best ids are cloned.
    pub fn tfidf_ranked(
        &self,
        query: &str,
        k: usize,
        wanted: &[&str],
    ) -> Result<(Vec<Scored>, Ranks)> {
        let cache = self.tfidf_cache()?;
        let ids = self.doc_ids()?;
        let searcher = self.reader.searcher();
        let (terms, qnorm) = self.tfidf_terms(cache, query)?;
        let segments = searcher.segment_readers();
        let mut dot = self.take_scratch(&cache.norms);
        let mut touched: Vec<(usize, u32)> = Vec::new();
        for t in &terms {
            for (ord, seg) in segments.iter().enumerate() {
                self.accumulate(seg, ord, t, &mut dot[ord], &mut touched)?;
            }
        }
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
            let id = ids.id(ord, d);
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
                before[j] += usize::from(id > t.1);
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

/// One step of [`SparseIndex::walk_weights`].
enum Walk<'a> {
    /// A live document of the term and its weight `tf * idf`.
    Posting(u32, f64),
    /// The term (its value bytes) whose postings were just walked.
    TermDone(&'a [u8]),
}

/// A query term in the TF-IDF vocabulary: its weight in the query (`tf * idf`), its
/// idf, and its largest weight in any unit document vector.
struct QueryTerm {
    term: Term,
    qw: f64,
    idf: f64,
    max_weight: f64,
}

/// What a pruned TF-IDF query read: live postings read (walked, or found by moving a
/// list forward to a document), the live postings all the query's terms hold, and the
/// documents whose exact score was offered to the top k.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TfIdfReads {
    pub postings_read: usize,
    pub postings_total: usize,
    pub candidates: usize,
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

    /// The k-th best score once k are held.
    fn worst(&self) -> Option<f64> {
        (self.heap.len() >= self.k)
            .then(|| self.heap.peek().map(|Reverse((s, _))| s.0))
            .flatten()
    }

    /// [`TopK::worst`] as f32 (the BM25 pass offers f32 scores).
    fn floor(&self) -> Option<f32> {
        self.worst().map(|s| s as f32)
    }

    /// Offer every pair `other` holds.
    fn merge(&mut self, other: TopK<'a>) {
        for Reverse((s, id)) in other.heap {
            self.offer(s.0, id);
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
