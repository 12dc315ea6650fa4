//! `raglab bench retrieval` and `raglab bench generate`: figures, not assertions.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::print_json;
use crate::service::Context;
use crate::service::base::ModelChoice;
use crate::service::evaluate::{GenBench, bench_generate, bench_retrieval};

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

pub async fn run(ctx: &Context, args: BenchArgs) -> Result<()> {
    let out = bench_retrieval(ctx, &args.queries, args.limit, args.threads).await?;
    if args.json {
        return print_json(&out);
    }
    say!(
        "{} chunks, {} queries, {} ({} thread)",
        out["chunks"],
        out["queries"],
        out["embedding_model"].as_str().unwrap_or("-"),
        args.threads
    );
    for s in out["stages"].as_array().into_iter().flatten() {
        say!(
            "{:<16} p50 {:>8.3} ms  p95 {:>8.3} ms",
            s["stage"].as_str().unwrap_or_default(),
            s["p50_ms"].as_f64().unwrap_or(0.0),
            s["p95_ms"].as_f64().unwrap_or(0.0)
        );
    }
    let f = |k: &str| out[k].as_f64().unwrap_or(0.0);
    say!(
        "evaluation with one alpha {:.1} ms, with the 10-alpha sweep {:.1} ms: ratio {:.3} (fusion alone: {:.2} ms vs {:.2} ms)",
        f("eval_one_alpha_ms"),
        f("eval_sweep_ms"),
        f("sweep_over_one_ratio"),
        f("fuse_one_alpha_ms"),
        f("fuse_sweep_10_alphas_ms"),
    );
    let d = &out["dense_scan"];
    if d.is_object() {
        let g = |k: &str| d[k].as_f64().unwrap_or(0.0);
        say!(
            "dense scan of {} x {}: scalar {:.3} ms, panel {:.3} ms ({:.2} GB/s), memcpy of the same bytes {:.3} ms ({:.2} GB/s): scan at {:.0}% of memcpy; identical top {}: {}",
            d["rows"],
            d["dim"],
            g("scalar_p50_ms"),
            g("panel_p50_ms"),
            g("panel_gb_per_s"),
            g("memcpy_p50_ms"),
            g("memcpy_gb_per_s"),
            100.0 * g("panel_over_memcpy"),
            d["k"],
            d["identical_top_k"]
        );
    }
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

/// raglab's generator against llama.cpp's own perf counters for the same runs.
pub async fn generate(ctx: &Context, args: GenBenchArgs) -> Result<()> {
    let req = GenBench {
        questions: args.questions,
        k: args.k,
        max_tokens: args.max_tokens,
        repeat: args.repeat,
        model: ModelChoice {
            model: args.model,
            threads: args.threads,
        },
    };
    let out = bench_generate(ctx, &req).await?;
    if args.json {
        return print_json(&out);
    }
    let f = |k: &str| out[k].as_f64().unwrap_or(0.0);
    let text = |k: &str| out[k].as_str().unwrap_or("-").to_string();
    say!(
        "{} on {} (layers offloaded {}/{}, {} threads)",
        text("model"),
        text("device"),
        out["layers_offloaded"],
        out["layers_total"],
        out["threads"]
    );
    say!(
        "{} prompt tokens, {} output tokens, median of {} runs",
        out["prompt_tokens"],
        out["output_tokens"],
        out["runs"]
    );
    say!(
        "prompt      {:>9.1} tok/s (llama.cpp counters {:.1})",
        f("raglab_prompt_tokens_per_s"),
        f("llama_prompt_tokens_per_s")
    );
    say!(
        "generation  {:>9.1} tok/s (llama.cpp counters {:.1})",
        f("raglab_gen_tokens_per_s"),
        f("llama_gen_tokens_per_s")
    );
    say!("time to first token {:.1} ms", f("ttft_ms"));
    Ok(())
}
