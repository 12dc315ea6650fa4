//! Ranking on demand, in two steps: the lists of a query cut at a depth first, then
//! where each chunk they hold, and each target, sits in every whole-corpus list.
//!
//! The Query pane draws the first step at once (a fraction of the second's cost at a
//! million chunks: the second is a pass over most of the corpus per list) and fills in
//! the places when the second arrives; together they give exactly what lists of every
//! chunk would (ties by id descending), without ranking or sorting the corpus.

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use anyhow::Result;

use super::QueryTimings;
use crate::core::compare::{ListPlaces, Place, WholePlaces};
use crate::core::fusion::Scored;
use crate::core::retrieval::QueryLists;
use crate::store::dense_scan::PARALLEL_ROWS;
use crate::store::sparse::SparseIndex;
use crate::store::vectors::VectorSet;

fn ms(s: Instant) -> f64 {
    s.elapsed().as_secs_f64() * 1e3
}

/// The first step: the dense, BM25 and TF-IDF lists of `query` cut at `depth` (TF-IDF's
/// pruned top k, equal to its exhaustive one), and the places the lists give their own
/// chunks and `extra` (a question's targets); places outside the lists are pending.
/// `vector`: the query's embedding (`None`: no dense list).
///
/// The sparse lists are ranked on a second thread while the dense scan runs: the scan
/// waits on memory bandwidth, the sparse passes on the latency of postings not in cache
/// (after a reader's pause), so overlapping them drew the Query pane's first frame at
/// 1M chunks 10-17% sooner (the timings are then each stage's own, and overlap). Below
/// [`PARALLEL_ROWS`] vectors the scan is short and one thread ranks all three in turn.
pub fn lists_on_demand(
    sparse: &SparseIndex,
    vectors: &VectorSet,
    query: &str,
    vector: Option<&[f32]>,
    depth: usize,
    extra: &[String],
) -> Result<(QueryLists, WholePlaces, QueryTimings)> {
    let mut t = QueryTimings::default();
    let sparse_lists = || -> Result<_> {
        let s = Instant::now();
        let bm25 = sparse.bm25(query, depth)?;
        let bm25_ms = ms(s);
        let s = Instant::now();
        let tfidf = sparse.tfidf(query, depth)?;
        Ok((bm25, bm25_ms, tfidf, ms(s)))
    };
    let dense_list = || {
        let s = Instant::now();
        let dense = vector.map_or_else(Vec::new, |q| vectors.search(q, depth));
        (dense, ms(s))
    };
    let ((dense, dense_ms), sparse_lists) = if vector.is_some() && vectors.len() >= PARALLEL_ROWS {
        std::thread::scope(|scope| {
            let sparse_side = scope.spawn(sparse_lists);
            let dense = dense_list();
            (dense, sparse_side.join().expect("the sparse lists' thread"))
        })
    } else {
        (dense_list(), sparse_lists())
    };
    let (bm25, bm25_ms, tfidf, tfidf_ms) = sparse_lists?;
    (t.dense_ms, t.bm25_ms, t.tfidf_ms) = (dense_ms, bm25_ms, tfidf_ms);
    let s = Instant::now();
    let lists = QueryLists::new(bm25, tfidf, dense);
    t.fusion_ms = ms(s);
    let within = WholePlaces::within(&lists, extra);
    Ok((lists, within, t))
}

/// The second step: where each chunk of `lists` (the first step's) and each of `extra`
/// sits in every whole-corpus list. A chunk inside a list has its place there; one
/// outside it is counted by the list's `rank_of` (dense: [`VectorSet::ranks_of`], one
/// int8 pre-scan; BM25: [`SparseIndex::bm25_ranks`], one pruned pass; TF-IDF:
/// [`SparseIndex::tfidf_ranked`]'s accumulator over every posting of the query's terms).
pub fn places_on_demand(
    sparse: &SparseIndex,
    vectors: &VectorSet,
    query: &str,
    vector: Option<&[f32]>,
    lists: &QueryLists,
    extra: &[String],
) -> Result<(WholePlaces, QueryTimings)> {
    let mut t = QueryTimings::default();
    // Every chunk whose places are wanted, each once, in a stable order.
    let mut seen: HashSet<&str> = HashSet::new();
    let mut wanted: Vec<&str> = Vec::new();
    let ids = lists.dense.iter().chain(&lists.bm25).map(|h| h.id.as_str());
    for id in ids.chain(extra.iter().map(String::as_str)) {
        if seen.insert(id) {
            wanted.push(id);
        }
    }
    let s = Instant::now();
    let (_, tfidf_places) = sparse.tfidf_ranked(query, 0, &wanted)?;
    t.tfidf_ms = ms(s);
    let mut tfidf_at: At = wanted.iter().copied().zip(tfidf_places).collect();
    for (i, h) in lists.tfidf.iter().enumerate() {
        if seen.insert(h.id.as_str()) {
            wanted.push(h.id.as_str());
        }
        tfidf_at.insert(h.id.as_str(), Some((i + 1, h.score)));
    }
    // Places inside a list, and the chunks each list must rank on demand.
    let (in_dense, in_bm25) = (inside(&lists.dense), inside(&lists.bm25));
    let outside = |within: &HashMap<&str, (usize, f64)>| -> Vec<&str> {
        wanted
            .iter()
            .copied()
            .filter(|id| !within.contains_key(id))
            .collect()
    };
    let s = Instant::now();
    let bm25_out = outside(&in_bm25);
    let bm25_at: At = bm25_out
        .iter()
        .copied()
        .zip(sparse.bm25_ranks(query, &bm25_out)?)
        .collect();
    t.bm25_ms = ms(s);
    let s = Instant::now();
    let dense_out = outside(&in_dense);
    let dense_at: At = match vector {
        Some(q) => dense_out
            .iter()
            .copied()
            .zip(vectors.ranks_of(q, &dense_out))
            .collect(),
        None => HashMap::new(),
    };
    t.dense_ms = ms(s);
    let places = whole_places(
        &wanted,
        (&in_dense, &dense_at),
        (&in_bm25, &bm25_at),
        &tfidf_at,
    );
    Ok((places, t))
}

/// (rank, score) of each chunk of `list`, by id.
fn inside(list: &[Scored]) -> HashMap<&str, (usize, f64)> {
    list.iter()
        .enumerate()
        .map(|(i, h)| (h.id.as_str(), (i + 1, h.score)))
        .collect()
}

/// A chunk's (rank, score) in one list, if any, by id.
type At<'a> = HashMap<&'a str, Option<(usize, f64)>>;

/// The places of `wanted` in each list: for dense and BM25 the place inside the list,
/// else the one ranked on demand; for TF-IDF the one found for every chunk.
fn whole_places(
    wanted: &[&str],
    (in_dense, dense_at): (&HashMap<&str, (usize, f64)>, &At),
    (in_bm25, bm25_at): (&HashMap<&str, (usize, f64)>, &At),
    tfidf_at: &At,
) -> WholePlaces {
    let place = |p: Option<(usize, f64)>| p.map(|(rank, score)| Place { rank, score });
    let places = wanted
        .iter()
        .map(|&id| {
            let from = |within: &HashMap<&str, (usize, f64)>, ranked: &At| {
                place(
                    within
                        .get(id)
                        .copied()
                        .or_else(|| ranked.get(id).copied().flatten()),
                )
            };
            let p = ListPlaces {
                dense: from(in_dense, dense_at),
                bm25: from(in_bm25, bm25_at),
                tfidf: place(tfidf_at.get(id).copied().flatten()),
            };
            (id.to_string(), p)
        })
        .collect();
    WholePlaces::new(places)
}

/// Both steps at once: the lists of `query` cut at `depth` and the whole-corpus
/// places of their chunks and of `extra`, with the two steps' times added.
pub fn rank_on_demand(
    sparse: &SparseIndex,
    vectors: &VectorSet,
    query: &str,
    vector: Option<&[f32]>,
    depth: usize,
    extra: &[String],
) -> Result<(QueryLists, WholePlaces, QueryTimings)> {
    let (lists, _, first) = lists_on_demand(sparse, vectors, query, vector, depth, extra)?;
    let (places, second) = places_on_demand(sparse, vectors, query, vector, &lists, extra)?;
    Ok((lists, places, first.plus(&second)))
}
