//! `raglab bench retrieval`: per-stage latency of hybrid queries (query embedding, dense
//! search, BM25, fusion) over a query set, as p50/p95, plus the cost of an alpha sweep
//! relative to one alpha. A benchmark, not a test: it reports, it does not assert.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;

use super::{Context, print_json};
use crate::core::fusion::{Fusion, RRF_C, alpha_grid};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever, embed_config};

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// JSONL queries `{id, text, ...}`.
    #[arg(long)]
    pub queries: PathBuf,
    /// Use at most this many queries.
    #[arg(long, default_value_t = 200)]
    pub limit: usize,
    /// Threads for query embedding (the TUI uses 1).
    #[arg(long, default_value_t = 1)]
    pub threads: i32,
    #[arg(long)]
    pub json: bool,
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return 0.0;
    }
    v[((v.len() - 1) as f64 * q).round() as usize]
}

pub async fn run(ctx: &Context, args: BenchArgs) -> Result<()> {
    let text = std::fs::read_to_string(&args.queries)?;
    let queries: Vec<String> = text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .take(args.limit)
        .collect();
    if queries.is_empty() {
        bail!("no queries in {}", args.queries.display());
    }
    let r = Retriever::open(
        &ctx.workspace,
        Some(&embed_config(ctx, None, Some(args.threads))),
    )
    .await?;
    if !r.is_fresh() {
        bail!("the indexes are out of date with the chunks: run `raglab index` first");
    }
    let _ = r.query(&queries[0], DEFAULT_DEPTH)?; // warm-up (TF-IDF norms, caches)
    let (mut embed, mut dense, mut bm25, mut fusion, mut total) =
        (vec![], vec![], vec![], vec![], vec![]);
    let mut lists = Vec::new();
    for q in &queries {
        let (l, tm) = r.query(q, DEFAULT_DEPTH)?;
        let s = Instant::now();
        let _ = l.candidates.fuse(Fusion::Rrf {
            alpha: 0.7,
            c: RRF_C,
        });
        let fuse_ms = tm.fusion_ms + s.elapsed().as_secs_f64() * 1e3;
        // Hybrid needs embedding, dense, BM25 and fusion (TF-IDF is computed too but
        // is not part of a hybrid query's latency).
        total.push(tm.embed_ms + tm.dense_ms + tm.bm25_ms + fuse_ms);
        embed.push(tm.embed_ms);
        dense.push(tm.dense_ms);
        bm25.push(tm.bm25_ms);
        fusion.push(fuse_ms);
        lists.push(l);
    }
    // Alpha sweep vs one alpha, on cached lists (what `eval --alpha-sweep` does).
    let t = Instant::now();
    for l in &lists {
        let _ = l.candidates.fused_ids(Fusion::Rrf {
            alpha: 0.7,
            c: RRF_C,
        });
    }
    let one = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    for a in alpha_grid() {
        for l in &lists {
            let _ = l.candidates.fused_ids(Fusion::Rrf { alpha: a, c: RRF_C });
        }
    }
    let sweep = t.elapsed().as_secs_f64() * 1e3;
    let retrieval: f64 = total.iter().sum();
    let row = |name: &str, v: &mut Vec<f64>| serde_json::json!({"stage": name, "p50_ms": pct(v, 0.5), "p95_ms": pct(v, 0.95)});
    let stages = vec![
        row("query embedding", &mut embed),
        row("dense search", &mut dense),
        row("bm25", &mut bm25),
        row("fusion", &mut fusion),
        row("total hybrid", &mut total),
    ];
    let out = serde_json::json!({
        "chunks": r.chunks.len(), "queries": queries.len(), "embedding_model": r.model_name, "threads": args.threads,
        "stages": stages,
        "fuse_one_alpha_ms": one, "fuse_sweep_10_alphas_ms": sweep,
        "eval_one_alpha_ms": retrieval + one, "eval_sweep_ms": retrieval + sweep,
        "sweep_over_one_ratio": (retrieval + sweep) / (retrieval + one),
    });
    if args.json {
        return print_json(&out);
    }
    println!(
        "{} chunks, {} queries, {} ({} thread)",
        r.chunks.len(),
        queries.len(),
        r.model_name.as_deref().unwrap_or("-"),
        args.threads
    );
    for s in out["stages"].as_array().into_iter().flatten() {
        println!(
            "{:<16} p50 {:>8.3} ms  p95 {:>8.3} ms",
            s["stage"].as_str().unwrap_or_default(),
            s["p50_ms"].as_f64().unwrap_or(0.0),
            s["p95_ms"].as_f64().unwrap_or(0.0)
        );
    }
    println!(
        "evaluation with one alpha {:.1} ms, with the 10-alpha sweep {:.1} ms: ratio {:.3} (fusion alone: {one:.2} ms vs {sweep:.2} ms)",
        retrieval + one,
        retrieval + sweep,
        (retrieval + sweep) / (retrieval + one)
    );
    Ok(())
}

#[derive(Debug, Args)]
pub struct GenBenchArgs {
    /// JSONL questions; the first one is answered from its retrieved chunks.
    #[arg(long)]
    pub questions: PathBuf,
    /// Chunks in the prompt (sets the prompt length).
    #[arg(long, default_value_t = 3)]
    pub k: usize,
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Generator threads (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    #[arg(long)]
    pub model: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

/// raglab's generator (wall clock around the whole streaming loop: sampling,
/// detokenisation and channel sends included) against llama.cpp's own perf counters
/// for the same runs (decode time only).
pub async fn generate(ctx: &Context, args: GenBenchArgs) -> Result<()> {
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    use crate::infer::generate::{Generator, Sampling};
    use crate::service::generation::{Answerer, RunConfig, default_template};

    let questions = super::generate::read_questions(&args.questions)?;
    let Some(q) = questions.first() else {
        bail!("no questions in {}", args.questions.display())
    };
    let mut gcfg = super::generate::gen_config(ctx, args.model.clone(), args.threads, 0);
    // Every repetition must process the whole prompt, as llama.cpp's reference does.
    gcfg.reuse_prefix = false;
    let generator = Generator::spawn(&gcfg)?;
    let r = Retriever::open(&ctx.workspace, Some(&embed_config(ctx, None, Some(1)))).await?;
    let config = RunConfig {
        k: args.k,
        ..RunConfig::default()
    };
    let answerer = Answerer {
        retriever: Some(&r),
        generator: &generator,
        model_sha256: String::new(),
        config: &config,
        template: default_template(),
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
            vec![("user".into(), prompt.clone())],
            sampling,
            None,
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )?;
        if i > 0 {
            rows.push(s); // the first run warms caches and is not counted
        }
    }
    let med = |f: &dyn Fn(&crate::infer::generate::GenStats) -> f64| {
        let mut v: Vec<f64> = rows.iter().map(f).collect();
        pct(&mut v, 0.5)
    };
    let out = serde_json::json!({
        "model": generator.info.file, "threads": gcfg.threads, "prompt_tokens": rows.first().map(|s| s.prompt_tokens),
        "output_tokens": rows.first().map(|s| s.output_tokens), "runs": rows.len(),
        "raglab_prompt_tokens_per_s": med(&|s| s.prompt_tokens_per_s),
        "llama_prompt_tokens_per_s": med(&|s| s.llama_prompt_tokens_per_s),
        "raglab_gen_tokens_per_s": med(&|s| s.gen_tokens_per_s),
        "llama_gen_tokens_per_s": med(&|s| s.llama_gen_tokens_per_s),
        "gen_ratio": med(&|s| s.gen_tokens_per_s) / med(&|s| s.llama_gen_tokens_per_s).max(1e-9),
        "ttft_ms": med(&|s| s.ttft_ms),
    });
    if args.json {
        return print_json(&out);
    }
    println!("{}", serde_json::to_string_pretty(&out)?);
    Ok(())
}
