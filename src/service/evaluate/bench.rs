//! Benchmarks (they report figures, they do not assert): per-stage latency of hybrid
//! retrieval and the alpha sweep's cost; generation tokens/s against llama.cpp's own
//! perf counters.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::core::fusion::{Fusion, RRF_C, alpha_grid};
use crate::core::prompt::ChatMessage;
use crate::core::retrieval::{Method, RunConfig, Sparse};
use crate::core::sampling::Sampling;
use crate::core::stats::timing_quantile as pct;
use crate::infer::generate::{GenStats, Generator};
use crate::service::answer::{Answerer, GenerationConfig};
use crate::service::base::{Context, ModelChoice, read_questions, read_texts};
use crate::service::retrieval::rerank::{RerankSetup, Reranker};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever};
use crate::store::vectors::VectorSet;

/// Per-stage latency of hybrid queries (p50/p95) over at most `limit` questions, and
/// the cost of the alpha sweep against one alpha. Reports; does not assert.
pub async fn bench_retrieval(
    ctx: &Context,
    queries: &Path,
    limit: usize,
    threads: i32,
    nprobes: &[usize],
    rerank: Option<RerankSetup>,
) -> Result<serde_json::Value> {
    let queries: Vec<String> = read_texts(queries)?.into_iter().take(limit).collect();
    if queries.is_empty() {
        bail!("--limit 0 leaves no query to time");
    }
    let embed = ModelChoice {
        threads: Some(threads),
        ..ModelChoice::default()
    };
    let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(&embed)?)).await?;
    r.ensure_fresh()?;
    let mut reranker = match rerank {
        Some(setup) => Some(Reranker::open(ctx, setup, &embed).await?),
        None => None,
    };
    let depth = reranker
        .as_ref()
        .map_or(DEFAULT_DEPTH, |x| DEFAULT_DEPTH.max(x.cut.depth));
    let _ = r.query(&queries[0], depth)?; // warm-up (TF-IDF norms, caches)
    let (t, lists) = time_queries(ctx, &r, &queries, depth, reranker.as_mut()).await?;
    let (one, sweep) = sweep_cost(&lists);
    let (scan, vectors) = dense_scan(&r, &queries)?;
    let ivf = if vectors.is_empty() {
        serde_json::Value::Null
    } else {
        ivf_figures(&r.vectors, &vectors, nprobes)
    };
    let retrieval: f64 = t.total.iter().sum();
    let mut stages = vec![
        stage_row("query embedding", &t.embed),
        stage_row("dense search", &t.dense),
        stage_row("bm25", &t.bm25),
        stage_row("fusion", &t.fusion),
        stage_row("total hybrid", &t.total),
    ];
    // The rerank stage after the hybrid ranking: its time per query (cache lookups
    // and the scoring of pairs the cache lacks), and what it scored and found cached.
    let rerank_figures = match &reranker {
        Some(x) => {
            stages.push(stage_row("rerank", &t.reranked));
            stages.push(stage_row("total hybrid + rerank", &t.total_reranked));
            serde_json::json!({"stage": x.describe(), "scored": x.stats.scored, "cached": x.stats.cached, "scoring_ms": x.stats.scoring_ms})
        }
        None => serde_json::Value::Null,
    };
    let out = serde_json::json!({
        "chunks": r.chunks.len(), "queries": queries.len(), "embedding_model": r.model_name, "threads": threads,
        "stages": stages,
        "fuse_one_alpha_ms": one, "fuse_sweep_10_alphas_ms": sweep,
        "eval_one_alpha_ms": retrieval + one, "eval_sweep_ms": retrieval + sweep,
        "sweep_over_one_ratio": (retrieval + sweep) / (retrieval + one),
        "dense_scan": scan,
        "ivf": ivf,
        "rerank": rerank_figures,
    });
    Ok(out)
}

/// Each query's time per stage, ms.
#[derive(Default)]
struct StageTimes {
    embed: Vec<f64>,
    dense: Vec<f64>,
    bm25: Vec<f64>,
    fusion: Vec<f64>,
    /// A hybrid query: embedding, dense, BM25 and fusion (TF-IDF is computed too but
    /// is not part of a hybrid query's latency).
    total: Vec<f64>,
    reranked: Vec<f64>,
    total_reranked: Vec<f64>,
}

/// Rank every query with hybrid at its default alpha (lists of `depth`), then through
/// `reranker` when given; each stage timed. Returns the times and the lists.
async fn time_queries(
    ctx: &Context,
    r: &Retriever,
    queries: &[String],
    depth: usize,
    mut reranker: Option<&mut Reranker>,
) -> Result<(StageTimes, Vec<crate::core::retrieval::QueryLists>)> {
    let mut t = StageTimes::default();
    let mut lists = Vec::new();
    let hybrid = RunConfig::new(
        Method::Hybrid,
        Sparse::Bm25,
        Method::Hybrid.default_alpha().get(),
    );
    for q in queries {
        let (l, tm) = r.query(q, depth)?;
        let s = Instant::now();
        let first = l.ranking_for(hybrid);
        let fuse_ms = tm.fusion_ms + s.elapsed().as_secs_f64() * 1e3;
        let query_ms = tm.embed_ms + tm.dense_ms + tm.bm25_ms + fuse_ms;
        t.total.push(query_ms);
        t.embed.push(tm.embed_ms);
        t.dense.push(tm.dense_ms);
        t.bm25.push(tm.bm25_ms);
        t.fusion.push(fuse_ms);
        if let Some(x) = reranker.as_deref_mut() {
            let s = Instant::now();
            x.rerank(ctx, r, q, &first).await?;
            let ms = s.elapsed().as_secs_f64() * 1e3;
            t.reranked.push(ms);
            t.total_reranked.push(query_ms + ms);
        }
        lists.push(l);
    }
    Ok((t, lists))
}

/// One stage's p50 and p95 of `times` (ms), as the report lists it.
fn stage_row(name: &str, times: &[f64]) -> serde_json::Value {
    serde_json::json!({"stage": name, "p50_ms": pct(times, 0.5), "p95_ms": pct(times, 0.95)})
}

/// Fusing every query's cached lists at one alpha, and at each alpha of the sweep
/// (what `eval --alpha-sweep` does): (ms, ms).
fn sweep_cost(lists: &[crate::core::retrieval::QueryLists]) -> (f64, f64) {
    let t = Instant::now();
    for l in lists {
        let _ = l.candidates.fused_ids(Fusion::Rrf {
            alpha: Method::Hybrid.default_alpha().get(),
            c: RRF_C,
        });
    }
    let one = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    for a in alpha_grid() {
        for l in lists {
            let _ = l.candidates.fused_ids(Fusion::Rrf { alpha: a, c: RRF_C });
        }
    }
    (one, t.elapsed().as_secs_f64() * 1e3)
}

/// The exact dense scan of the workspace's vectors (int8 pre-scan, f32 rescoring),
/// timed per query beside the plain scalar scan it replaced (their top 100 compared)
/// and beside a copy of as many bytes as the int8 copy holds (the memory-bandwidth
/// reference), all in this run; and the queries' vectors.
fn dense_scan(r: &Retriever, queries: &[String]) -> Result<(serde_json::Value, Vec<Vec<f32>>)> {
    let Some(e) = r.embedder.as_ref().filter(|_| !r.vectors.is_empty()) else {
        return Ok((serde_json::Value::Null, Vec::new()));
    };
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let v = &r.vectors;
    v.prepare_search();
    let (mut scalar, mut fast, mut copy, mut rescored) = (vec![], vec![], vec![], vec![]);
    let mut identical = true;
    let bytes = v.scanned_bytes();
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let mut vectors = Vec::with_capacity(queries.len());
    for q in queries {
        let q = e.embed_query(q)?;
        vectors.push(q.clone());
        let t = Instant::now();
        let a = v.search_scalar(&q, DEFAULT_DEPTH);
        scalar.push(ms(t));
        let t = Instant::now();
        let (b, stats) = v.search_with_stats(&q, DEFAULT_DEPTH);
        fast.push(ms(t));
        rescored.push(stats.rescored as f64);
        identical &= a == b;
        let t = Instant::now();
        dst.copy_from_slice(std::hint::black_box(&src));
        copy.push(ms(t));
        std::hint::black_box(&dst);
    }
    let gbps = |t: f64| {
        if t > 0.0 {
            bytes as f64 / (t * 1e-3) / 1e9
        } else {
            0.0
        }
    };
    let (s, p, c) = (pct(&scalar, 0.5), pct(&fast, 0.5), pct(&copy, 0.5));
    let figures = serde_json::json!({
        "rows": v.len(), "dim": v.dim, "k": DEFAULT_DEPTH, "scanned_bytes": bytes,
        "scalar_p50_ms": s, "int8_p50_ms": p, "memcpy_p50_ms": c,
        "rescored_p50": pct(&rescored, 0.5),
        "int8_gb_per_s": gbps(p), "memcpy_gb_per_s": gbps(c),
        "int8_over_memcpy": if p > 0.0 { c / p } else { 0.0 },
        "identical_top_k": identical,
    });
    Ok((figures, vectors))
}

/// The in-memory IVF of `--ann` on `vectors`: the time to cluster them, then per
/// `nprobes` the time of a top 10 and its recall against the exact top 10, over
/// `queries` (query vectors).
pub(super) fn ivf_figures(
    vectors: &VectorSet,
    queries: &[Vec<f32>],
    nprobes: &[usize],
) -> serde_json::Value {
    const K: usize = 10;
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let ivf = vectors.prepare_ann();
    let build_s = t.elapsed().as_secs_f64();
    let exact: Vec<HashSet<String>> = queries
        .iter()
        .map(|q| vectors.search(q, K).into_iter().map(|s| s.id).collect())
        .collect();
    let rows: Vec<serde_json::Value> = nprobes
        .iter()
        .map(|&n| {
            let (mut times, mut recall, mut scanned) = (vec![], vec![], vec![]);
            for (q, want) in queries.iter().zip(&exact) {
                let t = Instant::now();
                let (hits, stats) = vectors.ann_search(q, K, n);
                times.push(ms(t));
                let found = hits.iter().filter(|h| want.contains(&h.id)).count();
                recall.push(found as f64 / want.len().max(1) as f64);
                scanned.push(stats.rows_scanned as f64);
            }
            serde_json::json!({
                "nprobes": n, "k": K,
                "p50_ms": pct(&times, 0.5), "p95_ms": pct(&times, 0.95),
                "recall_at_k": recall.iter().sum::<f64>() / recall.len().max(1) as f64,
                "rows_scanned_p50": pct(&scanned, 0.5),
            })
        })
        .collect();
    serde_json::json!({
        "lists": ivf.lists(), "build_s": build_s, "bytes": ivf.bytes(), "rows": rows,
    })
}

/// What `bench generate` runs.
#[derive(Debug, Clone)]
pub struct GenBench {
    /// Questions; the first one is answered from its retrieved chunks.
    pub questions: PathBuf,
    /// Chunks in the prompt (sets the prompt length).
    pub k: usize,
    pub max_tokens: usize,
    pub repeat: usize,
    pub model: ModelChoice,
}

/// raglab's generator (wall clock around the whole streaming loop: sampling,
/// detokenisation and channel sends included) against llama.cpp's own perf counters
/// for the same runs (decode time only), with where the model ran (CPU or the GPU's
/// name, layers offloaded). The prompt's wall clock ends after the device finished it
/// (the generator synchronises), so a GPU's asynchronous decode cannot overstate it.
pub async fn bench_generate(ctx: &Context, args: &GenBench) -> Result<serde_json::Value> {
    let questions = read_questions(&args.questions)?;
    let Some(q) = questions.first() else {
        bail!("no questions in {}", args.questions.display())
    };
    let mut gcfg = ctx.gen_config(&args.model);
    // Every repetition must process the whole prompt, as llama.cpp's reference does.
    gcfg.reuse_prefix = false;
    let generator = Generator::spawn(&gcfg)?;
    let embed = ModelChoice {
        threads: Some(1),
        ..ModelChoice::default()
    };
    let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(&embed)?)).await?;
    let config = GenerationConfig {
        k: args.k,
        ..GenerationConfig::default()
    };
    let answerer = Answerer {
        retriever: Some(&r),
        generator: &generator,
        model_sha256: String::new(),
        config: &config,
    };
    let prompt = answerer.prepare(q)?.user_prompt;
    let mut rows = Vec::new();
    for i in 0..=args.repeat {
        // Greedy with no stop token in reach: the same number of tokens every run.
        let sampling = Sampling {
            temperature: 0.0,
            max_tokens: args.max_tokens,
            seed: 1,
            ..Sampling::default()
        };
        let (_, s) = generator.generate(
            vec![ChatMessage::user(prompt.clone())],
            sampling,
            None,
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )?;
        if i > 0 {
            rows.push(s); // the first run warms caches and is not counted
        }
    }
    let med = |f: &dyn Fn(&GenStats) -> f64| {
        let v: Vec<f64> = rows.iter().map(f).collect();
        pct(&v, 0.5)
    };
    let placed = &generator.info.placement;
    let out = serde_json::json!({
        "model": generator.info.file, "threads": gcfg.threads,
        "device": placed.device, "gpu_layers_requested": gcfg.n_gpu_layers,
        "layers_offloaded": placed.layers_offloaded, "layers_total": placed.layers_total,
        "prompt_tokens": rows.first().map(|s| s.prompt_tokens),
        "output_tokens": rows.first().map(|s| s.output_tokens), "runs": rows.len(),
        "raglab_prompt_tokens_per_s": med(&|s| s.prompt_tokens_per_s),
        "llama_prompt_tokens_per_s": med(&|s| s.llama_prompt_tokens_per_s),
        "raglab_gen_tokens_per_s": med(&|s| s.gen_tokens_per_s),
        "llama_gen_tokens_per_s": med(&|s| s.llama_gen_tokens_per_s),
        "gen_ratio": med(&|s| s.gen_tokens_per_s) / med(&|s| s.llama_gen_tokens_per_s).max(1e-9),
        "ttft_ms": med(&|s| s.ttft_ms),
    });
    Ok(out)
}
