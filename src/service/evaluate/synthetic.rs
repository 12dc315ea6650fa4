//! `raglab bench retrieval --synthetic N`: every retrieval stage timed on a synthetic
//! workspace of N chunks, so the figures reach a million chunks without embedding a
//! million passages. The text is Zipf-distributed pseudo-words and the vectors are
//! clustered random unit vectors ([`crate::core::synthetic`]): the figures are speeds
//! and memory, never quality, and every report says the vectors are synthetic.
//!
//! The workspace is built once under `DATA_DIR/bench/synthetic-N` and reused: chunks
//! through the ingest path's chunker and store, BM25/TF-IDF through the same tantivy
//! sync as `raglab index`, vectors through the same lance dataset, and an IVF_PQ index
//! for the ANN figures.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};

use super::bench::ivf_figures;
use crate::core::chunk::{Chunker, chunk_document};
use crate::core::fusion::{Fusion, RRF_C, alpha_grid};
use crate::core::retrieval::{Method, QueryLists};
use crate::core::rng::Rng;
use crate::core::stats::timing_quantile as pct;
use crate::core::synthetic::{SECTIONS_PER_DOC, TextGenerator, VectorGenerator};
use crate::service::base::Context;
use crate::store::chunks::ChunkStore;
use crate::store::sparse::{INDEX_DIR, SparseIndex, text_hash};
use crate::store::vectors::{AnnSearcher, VectorSet, VectorStore};
use crate::store::workspace::Workspace;

/// The vectors' model name in the synthetic workspace.
const MODEL: &str = "synthetic-clustered-384";
const DIM: usize = 384;
const SEED: u64 = 2024;
/// Bumped when the generated workspace changes, so an old one is rebuilt.
const FORMAT: u32 = 1;
/// Rows scored against the plain f32 scan (it takes ~0.3 s a query at 1M rows).
const SCALAR_CHECKS: usize = 20;
/// Depth of the exact dense and sparse lists, as a query in the TUI or `eval` asks.
const DEPTH: usize = 100;
/// The ANN figures' k.
const ANN_K: usize = 10;

/// What `bench retrieval --synthetic` runs.
#[derive(Debug, Clone)]
pub struct SyntheticBench {
    pub chunks: usize,
    pub queries: usize,
    /// Partitions probed by the ANN search, one row of figures each.
    pub nprobes: Vec<usize>,
    /// The ANN search rescores `k * refine` rows on their full vectors.
    pub refine: u32,
}

/// Where the synthetic workspace of `chunks` chunks lives.
fn workspace_dir(ctx: &Context, chunks: usize) -> PathBuf {
    ctx.paths
        .data_dir
        .join("bench")
        .join(format!("synthetic-{chunks}"))
}

/// Peak resident memory of this process so far (`VmHWM`), in MB.
fn peak_rss_mb() -> Option<f64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024.0)
}

/// Start `VmHWM` again from the current size (Linux: write 5 to `clear_refs`), so the
/// search phase's peak is not the build's. False where the kernel refuses.
fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

fn stage(name: &str, v: &[f64]) -> serde_json::Value {
    serde_json::json!({"stage": name, "p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)})
}

/// `n` chunks of [`SECTIONS_PER_DOC`]-section synthetic documents, through the ingest
/// path's header chunker, and the documents' ids.
fn generate_chunks(n: usize) -> (Vec<crate::core::chunk::Chunk>, HashSet<String>) {
    let mut text = TextGenerator::new(SEED);
    let docs = n.div_ceil(SECTIONS_PER_DOC);
    let mut chunks = Vec::with_capacity(n);
    let mut doc_ids = HashSet::with_capacity(docs);
    for d in 0..docs {
        let sections = SECTIONS_PER_DOC.min(n - d * SECTIONS_PER_DOC);
        let doc = text.document(d, sections);
        doc_ids.insert(doc.id.clone());
        chunks.extend(chunk_document(&doc, Chunker::Headers));
    }
    (chunks, doc_ids)
}

/// One clustered unit vector per chunk, a centre per document.
fn synthetic_vectors(chunks: &[crate::core::chunk::Chunk], docs: usize) -> VectorSet {
    let mut vectors = VectorGenerator::new(DIM, docs, SEED + 1);
    let mut data = Vec::with_capacity(chunks.len() * DIM);
    for i in 0..chunks.len() {
        data.extend(vectors.passage(i / SECTIONS_PER_DOC));
    }
    VectorSet::new(
        DIM,
        chunks.iter().map(|c| c.id.clone()).collect(),
        chunks.iter().map(text_hash).collect(),
        data,
    )
}

/// Build the synthetic workspace unless it is already there; returns the build's
/// figures (or the stored ones).
async fn ensure_workspace(
    ws: &Workspace,
    dir: &std::path::Path,
    req: &SyntheticBench,
    say: &dyn Fn(&str),
) -> Result<serde_json::Value> {
    let marker = dir.join("synthetic.json");
    if let Ok(text) = std::fs::read_to_string(&marker)
        && let Ok(v) = serde_json::from_str::<serde_json::Value>(&text)
        && v["format"] == FORMAT
        && v["chunks"] == req.chunks
    {
        say(&format!(
            "reusing the synthetic workspace {}",
            dir.display()
        ));
        return Ok(v);
    }
    say(&format!(
        "building a synthetic workspace of {} chunks in {} (once; SYNTHETIC text and vectors)",
        req.chunks,
        dir.display()
    ));
    let t = Instant::now();
    let (chunks, doc_ids) = generate_chunks(req.chunks);
    let docs = doc_ids.len();
    let generate_s = t.elapsed().as_secs_f64();
    say(&format!(
        "  {} chunks generated in {generate_s:.1} s; storing them",
        chunks.len()
    ));
    let t = Instant::now();
    ChunkStore::new(ws)
        .upsert_documents(chunks.clone(), &doc_ids)
        .await?;
    let store_s = t.elapsed().as_secs_f64();
    say(&format!(
        "  chunks stored in {store_s:.1} s; indexing BM25/TF-IDF"
    ));
    let t = Instant::now();
    let mut sparse = SparseIndex::open(&ws.path(INDEX_DIR))?;
    sparse.sync(&chunks)?;
    sparse.prepare()?;
    let sparse_s = t.elapsed().as_secs_f64();
    say(&format!(
        "  sparse index in {sparse_s:.1} s; writing vectors"
    ));
    let t = Instant::now();
    let store = VectorStore::new(ws, MODEL);
    store.save(&synthetic_vectors(&chunks, docs)).await?;
    drop(chunks);
    let vectors_s = t.elapsed().as_secs_f64();
    let partitions = ((req.chunks as f64).sqrt() as usize).clamp(4, 4096);
    say(&format!(
        "  vectors written in {vectors_s:.1} s; IVF_PQ index ({partitions} partitions)"
    ));
    let t = Instant::now();
    store.build_ivf_pq(DIM, partitions, 10).await?;
    let ann_s = t.elapsed().as_secs_f64();
    say(&format!("  IVF_PQ index in {ann_s:.1} s"));
    let built = serde_json::json!({
        "format": FORMAT, "chunks": req.chunks, "documents": docs,
        "generate_s": generate_s, "store_chunks_s": store_s, "sparse_index_s": sparse_s,
        "vectors_s": vectors_s, "ivf_pq_s": ann_s, "ivf_pq_partitions": partitions,
    });
    std::fs::write(&marker, serde_json::to_string_pretty(&built)?)
        .with_context(|| format!("writing {}", marker.display()))?;
    Ok(built)
}

/// The synthetic workspace as a search reads it.
struct Loaded {
    chunks: Vec<crate::core::chunk::Chunk>,
    sparse: SparseIndex,
    vectors: VectorSet,
    ann_index: AnnSearcher,
    load_s: f64,
    /// Reading the sparse index's chunk ids and TF-IDF statistics (part of `load_s`).
    sparse_stats_s: f64,
}

async fn load(ws: &Workspace) -> Result<Loaded> {
    let t = Instant::now();
    let chunks = ChunkStore::new(ws).load_all().await?;
    let sparse = SparseIndex::open(&ws.path(INDEX_DIR))?;
    let s = Instant::now();
    sparse.prepare()?;
    let sparse_stats_s = s.elapsed().as_secs_f64();
    let store = VectorStore::new(ws, MODEL);
    let vectors = store.load().await?;
    vectors.prepare_search();
    let ann_index = store.ann_searcher().await?;
    Ok(Loaded {
        chunks,
        sparse,
        vectors,
        ann_index,
        load_s: t.elapsed().as_secs_f64(),
        sparse_stats_s,
    })
}

/// `n` queries: a random target passage, five of its words, its vector plus noise.
fn make_queries(w: &Loaded, documents: usize, n: usize) -> Vec<(String, Vec<f32>)> {
    make_targeted_queries(w, documents, n)
        .into_iter()
        .map(|(t, v, _)| (t, v))
        .collect()
}

/// [`make_queries`] with each query's target chunk id.
fn make_targeted_queries(
    w: &Loaded,
    documents: usize,
    n: usize,
) -> Vec<(String, Vec<f32>, String)> {
    let by_id: HashMap<&str, usize> = w
        .chunks
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.as_str(), i))
        .collect();
    let mut rng = Rng::new(SEED + 2);
    let mut text = TextGenerator::new(SEED + 3);
    let mut qvec = VectorGenerator::new(DIM, documents, SEED + 4);
    (0..n)
        .map(|_| {
            let row = rng.below(w.vectors.len());
            let chunk = &w.chunks[by_id[w.vectors.ids[row].as_str()]];
            (
                text.query_from(&chunk.text, 5),
                qvec.query_near(w.vectors.row(row)),
                chunk.id.clone(),
            )
        })
        .collect()
}

/// Per-query times (ms) of every stage, and per `nprobes` the ANN times and recall.
#[derive(Default)]
struct Timings {
    dense: Vec<f64>,
    bm25: Vec<f64>,
    tfidf: Vec<f64>,
    fusion: Vec<f64>,
    sweep: Vec<f64>,
    rescored: Vec<f64>,
    /// (nprobes, times, recall@ANN_K against the exact top ANN_K).
    ann: Vec<(usize, Vec<f64>, Vec<f64>)>,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

async fn time_queries(
    w: &Loaded,
    queries: &[(String, Vec<f32>)],
    req: &SyntheticBench,
) -> Result<Timings> {
    let mut tm = Timings {
        ann: req.nprobes.iter().map(|&n| (n, vec![], vec![])).collect(),
        ..Timings::default()
    };
    if let Some((q, _)) = queries.first() {
        let _ = w.sparse.bm25(q, DEPTH)?; // warm-up (TF-IDF norms, caches)
        let _ = w.sparse.tfidf(q, DEPTH)?;
    }
    for (q_text, q) in queries {
        let t = Instant::now();
        let (d, stats) = w.vectors.search_with_stats(q, DEPTH);
        tm.dense.push(ms(t));
        tm.rescored.push(stats.rescored as f64);
        let exact: HashSet<String> = d.iter().take(ANN_K).map(|s| s.id.clone()).collect();
        let t = Instant::now();
        let b = w.sparse.bm25(q_text, DEPTH)?;
        tm.bm25.push(ms(t));
        let t = Instant::now();
        let f = w.sparse.tfidf(q_text, DEPTH)?;
        tm.tfidf.push(ms(t));
        let t = Instant::now();
        let lists = QueryLists::new(b, f, d);
        let _ = lists.candidates.fuse(Fusion::Rrf {
            alpha: Method::Hybrid.default_alpha().get(),
            c: RRF_C,
        });
        tm.fusion.push(ms(t));
        let t = Instant::now();
        for a in alpha_grid() {
            let _ = lists
                .candidates
                .fused_ids(Fusion::Rrf { alpha: a, c: RRF_C });
        }
        tm.sweep.push(ms(t));
        for (nprobes, times, recall) in &mut tm.ann {
            let t = Instant::now();
            let hits = w
                .ann_index
                .search_refined(q, ANN_K, *nprobes, Some(req.refine))
                .await?;
            times.push(ms(t));
            let found = hits.iter().filter(|h| exact.contains(&h.id)).count();
            recall.push(found as f64 / exact.len().max(1) as f64);
        }
    }
    Ok(tm)
}

/// The scan beside the plain f32 scan on a few queries (same answers? how much
/// faster?) and beside a copy of as many bytes as it reads (the bandwidth reference).
fn scan_figures(
    vectors: &VectorSet,
    queries: &[(String, Vec<f32>)],
    scan_p50: f64,
) -> serde_json::Value {
    let (mut scalar, mut fast) = (vec![], vec![]);
    let mut identical = true;
    for (_, q) in queries.iter().take(SCALAR_CHECKS) {
        let t = Instant::now();
        let a = vectors.search_scalar(q, DEPTH);
        scalar.push(ms(t));
        let t = Instant::now();
        let b = vectors.search(q, DEPTH);
        fast.push(ms(t));
        identical &= a == b;
    }
    let bytes = vectors.scanned_bytes();
    let copy_p50 = pct(&crate::store::huge_pages::copy_times_ms(bytes, 10), 0.5);
    let gbps = |t: f64| {
        if t > 0.0 {
            bytes as f64 / (t * 1e-3) / 1e9
        } else {
            0.0
        }
    };
    serde_json::json!({
        "scanned_bytes": bytes, "int8_p50_ms": scan_p50, "int8_gb_per_s": gbps(scan_p50),
        "memcpy_p50_ms": copy_p50, "memcpy_gb_per_s": gbps(copy_p50),
        "int8_over_memcpy": if scan_p50 > 0.0 { copy_p50 / scan_p50 } else { 0.0 },
        "scalar_checked": scalar.len(), "scalar_p50_ms": pct(&scalar, 0.5),
        "int8_on_those_p50_ms": pct(&fast, 0.5), "identical_top_k": identical,
    })
}

/// TF-IDF's pruned top-k beside the exhaustive pass that reads every posting (and
/// beside itself on one thread), on a few queries: same lists (ids and score bits)?
/// how much faster? what share of the query terms' postings did pruning read?
fn tfidf_figures(
    sparse: &SparseIndex,
    queries: &[(String, Vec<f32>)],
) -> Result<serde_json::Value> {
    let (mut whole, mut pruned, mut one_thread) = (vec![], vec![], vec![]);
    let (mut read, mut total, mut candidates) = (0usize, 0usize, vec![]);
    let mut identical = true;
    for (q, _) in queries.iter().take(SCALAR_CHECKS) {
        let t = Instant::now();
        let (a, _) = sparse.tfidf_ranked(q, DEPTH, &[])?;
        whole.push(ms(t));
        // The same pass on one thread: what splitting the segments over the cores adds.
        let t = Instant::now();
        let (c, _) = sparse.tfidf_pruned_split(q, DEPTH, 1)?;
        one_thread.push(ms(t));
        let t = Instant::now();
        let (b, reads) = sparse.tfidf_pruned(q, DEPTH)?;
        pruned.push(ms(t));
        identical &= a == b && a == c;
        read += reads.postings_read;
        total += reads.postings_total;
        candidates.push(reads.candidates as f64);
    }
    Ok(serde_json::json!({
        "checked": whole.len(), "exhaustive_p50_ms": pct(&whole, 0.5),
        "pruned_p50_ms": pct(&pruned, 0.5), "one_thread_p50_ms": pct(&one_thread, 0.5),
        "identical_top_k": identical,
        "postings_read_share": if total > 0 { read as f64 / total as f64 } else { 0.0 },
        "candidates_p50": pct(&candidates, 0.5),
    }))
}

/// What the Query pane bench opens: the synthetic workspace of `chunks` chunks (built
/// on first use, as `bench retrieval --synthetic` builds it), loaded, and `queries`
/// questions with their query vectors and target chunks.
pub struct PaneWorkload {
    pub chunks: Vec<crate::core::chunk::Chunk>,
    pub sparse: SparseIndex,
    pub vectors: VectorSet,
    /// (question, query vector, target chunk id).
    pub queries: Vec<(String, Vec<f32>, String)>,
    pub load_s: f64,
    pub workspace: String,
}

/// Load (building once) the synthetic workspace of `chunks` chunks for the Query
/// pane bench.
pub async fn pane_workload(
    ctx: &Context,
    chunks: usize,
    queries: usize,
    say: &dyn Fn(&str),
) -> Result<PaneWorkload> {
    let req = SyntheticBench {
        chunks,
        queries,
        nprobes: Vec::new(),
        refine: 1,
    };
    let dir = workspace_dir(ctx, chunks);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ws = Workspace::open(&dir)?;
    let built = ensure_workspace(&ws, &dir, &req, say).await?;
    say("loading the workspace");
    let w = load(&ws).await?;
    let documents = built["documents"].as_u64().unwrap_or(1) as usize;
    let queries = make_targeted_queries(&w, documents, queries);
    Ok(PaneWorkload {
        chunks: w.chunks,
        sparse: w.sparse,
        vectors: w.vectors,
        queries,
        load_s: w.load_s,
        workspace: dir.display().to_string(),
    })
}

/// Every retrieval stage on the synthetic workspace of `req.chunks` chunks (built on
/// first use): p50/p95 per stage, load time, peak memory, the exact scan's bandwidth
/// beside a copy of the same bytes, ANN recall against the exact scan, the sweep's
/// cost. Reports; does not assert.
pub async fn bench_synthetic(
    ctx: &Context,
    req: &SyntheticBench,
    say: &dyn Fn(&str),
) -> Result<serde_json::Value> {
    if req.chunks == 0 || req.queries == 0 {
        bail!("--synthetic and --limit must be at least 1");
    }
    let dir = workspace_dir(ctx, req.chunks);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let ws = Workspace::open(&dir)?;
    let built = ensure_workspace(&ws, &dir, req, say).await?;
    let rss_reset = reset_peak_rss();
    say("loading the workspace");
    let w = load(&ws).await?;
    let documents = built["documents"].as_u64().unwrap_or(1) as usize;
    let queries = make_queries(&w, documents, req.queries);
    say(&format!("timing {} queries", queries.len()));
    let tm = time_queries(&w, &queries, req).await?;
    say("clustering the vectors for the in-memory IVF");
    let vectors: Vec<Vec<f32>> = queries.iter().map(|(_, v)| v.clone()).collect();
    let ivf = ivf_figures(&w.vectors, &vectors, &req.nprobes);
    let scan = scan_figures(&w.vectors, &queries, pct(&tm.dense, 0.5));
    let tfidf = tfidf_figures(&w.sparse, &queries)?;
    let ann_rows: Vec<serde_json::Value> = tm
        .ann
        .iter()
        .map(|(n, times, recall)| {
            serde_json::json!({
                "nprobes": n, "refine": req.refine, "k": ANN_K,
                "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95),
                "recall_at_k": recall.iter().sum::<f64>() / recall.len().max(1) as f64,
            })
        })
        .collect();
    Ok(serde_json::json!({
        "synthetic": true,
        "note": "SYNTHETIC text (Zipf pseudo-words) and SYNTHETIC clustered random vectors: speeds and memory only, no quality",
        "workspace": dir.display().to_string(),
        "chunks": w.chunks.len(), "dim": DIM, "queries": queries.len(), "depth": DEPTH,
        "build": built,
        "load_s": w.load_s,
        "sparse_stats_s": w.sparse_stats_s,
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_is_search_phase": rss_reset,
        "stages": [
            stage("dense exact", &tm.dense), stage("bm25", &tm.bm25), stage("tf-idf", &tm.tfidf),
            stage("fusion", &tm.fusion), stage("alpha sweep (10)", &tm.sweep),
        ],
        "dense_rescored_p50": pct(&tm.rescored, 0.5),
        "dense_scan": scan,
        "tfidf_pruning": tfidf,
        "ann": ann_rows,
        "ivf": ivf,
    }))
}
