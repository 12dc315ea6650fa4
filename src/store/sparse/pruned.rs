//! TF-IDF's top k without reading every posting: document at a time with max-score
//! pruning, the segments split over the cores.
//!
//! Document at a time, not term at a time: every read moves forward through one
//! segment's postings and norms, where accumulating term by term wrote at random into
//! a million-slot array and rescanned the documents touched for each new floor.

use std::sync::atomic::{AtomicU64, Ordering};

use tantivy::postings::{Postings, SegmentPostings};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, SegmentReader, TERMINATED};

use super::{QueryTerm, Result, Scored, SparseIndex, TfIdfReads, TopK, err};
use crate::store::dense_scan::{on_each, scan_threads};
use crate::store::sparse_stats::{DocIds, TfIdfCache};

/// `bound < floor`, with a relative margin of 1e-9: far above the rounding of the
/// bounds' own arithmetic, so a document that could tie the floor is never dropped.
fn below(bound: f64, floor: f64) -> bool {
    bound < floor - floor.abs() * 1e-9
}

/// The best k-th score any of a query's threads holds: a floor for all of them (k
/// documents score at least this much). Kept as the bits of a non-negative f64, whose
/// order is the values' order; 0 until a thread holds k, which prunes nothing since
/// every score is above 0.
struct SharedFloor(AtomicU64);

impl SharedFloor {
    fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    fn raise(&self, to: f64) {
        if to > 0.0 {
            self.0.fetch_max(to.to_bits(), Ordering::Relaxed);
        }
    }
}

/// One query's pruned pass: its terms in the fixed order (largest bound first, see
/// `tfidf_terms`), their bounds, and the floor its threads share.
struct Pass<'a> {
    terms: &'a [QueryTerm],
    qnorm: f64,
    k: usize,
    cache: &'a TfIdfCache,
    ids: &'a DocIds,
    /// `left[i]`: what the terms from the i-th on can add to a cosine at most.
    left: Vec<f64>,
    floor: SharedFloor,
}

/// One thread's state: its k best, what it read, and how many leading terms are
/// still essential (only shrinks: the floor only rises).
struct Progress<'a> {
    best: TopK<'a>,
    reads: TfIdfReads,
    essential: usize,
}

impl SparseIndex {
    /// Top `k` chunks by tf-idf cosine, as [`SparseIndex::tfidf`], with what it read.
    /// The segments are split over the cores once the index is large enough for a
    /// thread's start-up to vanish (as the dense scan splits its rows).
    pub fn tfidf_pruned(&self, query: &str, k: usize) -> Result<(Vec<Scored>, TfIdfReads)> {
        self.tfidf_pruned_split(query, k, scan_threads(self.num_docs() as usize))
    }

    /// [`SparseIndex::tfidf_pruned`] with the segments split over `parts` threads
    /// (at most one per segment). Within a segment, the documents of the "essential"
    /// terms are walked in doc-id order (a merge of their postings); the other terms
    /// are only moved forward to a document that could still enter the top k.
    /// Essential are the fewest leading terms of the fixed order such that the bounds
    /// of the terms after them add up to less than the floor, the best k-th exact
    /// score any thread holds: a document none of the essential terms holds scores at
    /// most that sum, below k others, so it cannot be in the top k, ties included. A
    /// walked document's sum is added in the fixed order, each term `qw * tf * idf`,
    /// exactly as the exhaustive pass adds it, so the scores have its bits; it is
    /// dropped as soon as its partial score plus the bounds left falls below the
    /// floor. Each thread keeps its own k best; the k best of theirs are the answer.
    pub fn tfidf_pruned_split(
        &self,
        query: &str,
        k: usize,
        parts: usize,
    ) -> Result<(Vec<Scored>, TfIdfReads)> {
        let cache = self.tfidf_cache()?;
        let ids = self.doc_ids()?;
        let searcher = self.reader.searcher();
        let (terms, qnorm) = self.tfidf_terms(cache, query)?;
        let mut reads = TfIdfReads {
            postings_total: terms
                .iter()
                .map(|t| cache.df[t.term.serialized_value_bytes()] as usize)
                .sum(),
            ..TfIdfReads::default()
        };
        if k == 0 || terms.is_empty() || qnorm <= 0.0 {
            return Ok((Vec::new(), reads));
        }
        let mut left = vec![0.0f64; terms.len() + 1];
        for i in (0..terms.len()).rev() {
            left[i] = left[i + 1] + terms[i].qw * terms[i].max_weight / qnorm;
        }
        let pass = Pass {
            terms: &terms,
            qnorm,
            k,
            cache,
            ids,
            left,
            floor: SharedFloor(AtomicU64::new(0.0f64.to_bits())),
        };
        let segments = searcher.segment_readers();
        let groups = split_segments(segments, parts);
        let mut best = TopK::new(k);
        for found in on_each(&groups, |ords| self.prune_segments(&pass, segments, ords)) {
            let (theirs, read) = found?;
            best.merge(theirs);
            reads.postings_read += read.postings_read;
            reads.candidates += read.candidates;
        }
        Ok((best.into_sorted(), reads))
    }

    /// The k best of the segments `ords` (see [`SparseIndex::tfidf_pruned_split`]):
    /// first each segment's documents of the first term (largest bound, most often
    /// the rarest) are scored, which raises the floor before the frequent terms'
    /// long lists are walked; then the walk over the essential terms skips them.
    fn prune_segments<'p>(
        &self,
        pass: &Pass<'p>,
        segments: &[SegmentReader],
        ords: &[usize],
    ) -> Result<(TopK<'p>, TfIdfReads)> {
        let mut walk = Progress {
            best: TopK::new(pass.k),
            reads: TfIdfReads::default(),
            essential: pass.terms.len(),
        };
        for seed in [true, false] {
            for &ord in ords {
                if !self.walk_segment(pass, segments, ord, seed, &mut walk)? {
                    return Ok((walk.best, walk.reads));
                }
            }
        }
        Ok((walk.best, walk.reads))
    }

    /// Walk segment `ord` in doc-id order: the documents of the first term
    /// (`seed`), or those of the essential terms but the first's. Returns false
    /// once no document of any segment can reach the floor.
    fn walk_segment<'p>(
        &self,
        pass: &Pass<'p>,
        segments: &[SegmentReader],
        ord: usize,
        seed: bool,
        walk: &mut Progress<'p>,
    ) -> Result<bool> {
        let terms = pass.terms;
        let seg = &segments[ord];
        let norms = &pass.cache.norms[ord];
        let mut postings = self.segment_postings(seg, terms)?;
        let mut tf = vec![0u32; terms.len()];
        loop {
            let floor = walk.best.worst().unwrap_or(0.0).max(pass.floor.get());
            while walk.essential > 0 && below(pass.left[walk.essential - 1], floor) {
                walk.essential -= 1;
            }
            if walk.essential == 0 {
                // Not even every term together reaches the floor: no document can.
                return Ok(false);
            }
            let walked = if seed { 1 } else { walk.essential };
            let d = postings[..walked]
                .iter()
                .flatten()
                .map(|p| p.doc())
                .min()
                .unwrap_or(TERMINATED);
            if d == TERMINATED {
                return Ok(true);
            }
            for (f, p) in tf[..walked].iter_mut().zip(&mut postings) {
                *f = 0;
                if let Some(p) = p.as_mut().filter(|p| p.doc() == d) {
                    *f = p.term_freq();
                    p.advance();
                }
            }
            // The first term's documents were scored by the seed walk.
            if (!seed && tf[0] > 0) || seg.is_deleted(d) {
                continue;
            }
            let scale = norms[d as usize] * pass.qnorm;
            let mut sum = 0.0f64;
            for (t, &f) in terms[..walked].iter().zip(&tf) {
                if f > 0 {
                    walk.reads.postings_read += 1;
                    sum += t.qw * f64::from(f) * t.idf;
                }
            }
            let mut reachable = true;
            for i in walked..terms.len() {
                if below(sum / scale + pass.left[i], floor) {
                    reachable = false;
                    break;
                }
                if let Some(p) = postings[i].as_mut() {
                    if p.doc() < d {
                        p.seek(d);
                    }
                    if p.doc() == d {
                        walk.reads.postings_read += 1;
                        sum += terms[i].qw * f64::from(p.term_freq()) * terms[i].idf;
                    }
                }
            }
            let score = sum / scale;
            // Below the k-th best: out (an equal score may still enter by id).
            if reachable && score >= floor {
                walk.reads.candidates += 1;
                walk.best.offer(score, pass.ids.id(ord, d));
                if let Some(worst) = walk.best.worst() {
                    pass.floor.raise(worst);
                }
            }
        }
    }

    /// Each term's postings in `seg` with their frequencies (`None`: not in it).
    fn segment_postings(
        &self,
        seg: &SegmentReader,
        terms: &[QueryTerm],
    ) -> Result<Vec<Option<SegmentPostings>>> {
        let inv = seg
            .inverted_index(self.fields.text)
            .map_err(|e| err(&self.path, e))?;
        terms
            .iter()
            .map(|t| {
                inv.read_postings(&t.term, IndexRecordOption::WithFreqs)
                    .map_err(|e| err(&self.path, e))
            })
            .collect()
    }
}

/// The segments' ords in at most `parts` groups of about equal documents (largest
/// first, each to the group with the fewest so far).
fn split_segments(segments: &[SegmentReader], parts: usize) -> Vec<Vec<usize>> {
    let mut by_size: Vec<usize> = (0..segments.len()).collect();
    by_size.sort_by_key(|&ord| std::cmp::Reverse(segments[ord].max_doc()));
    let mut groups: Vec<(u64, Vec<usize>)> =
        vec![(0, Vec::new()); parts.clamp(1, segments.len().max(1))];
    for ord in by_size {
        if let Some(g) = groups.iter_mut().min_by_key(|g| g.0) {
            g.0 += u64::from(segments[ord].max_doc());
            g.1.push(ord);
        }
    }
    groups
        .into_iter()
        .map(|(_, mut ords)| {
            ords.sort_unstable();
            ords
        })
        .filter(|ords| !ords.is_empty())
        .collect()
}
