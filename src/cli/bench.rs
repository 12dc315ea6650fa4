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

#[derive(Debug, Args)]
pub struct EmbedBenchArgs {
    /// JSONL passages `{text, ...}` (e.g. a BEIR corpus.jsonl).
    #[arg(long)]
    pub texts: PathBuf,
    /// Use at most this many passages (0: time queries only).
    #[arg(long, default_value_t = 200)]
    pub limit: usize,
    /// Rounds; each embeds every passage once with each variant.
    #[arg(long, default_value_t = 3)]
    pub rounds: usize,
    /// Passages per embed call (`raglab index` sends 16).
    #[arg(long, default_value_t = 16)]
    pub group: usize,
    /// JSONL queries, embedded one at a time with each variant.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    #[arg(long, default_value_t = 200)]
    pub query_limit: usize,
    /// Reference vectors (`all-MiniLM-L6-v2.reference.json`): worst cosine per variant.
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// `model=PATH,seqs=N,tokens=N,threads=N`, each part optional (defaults: the
    /// configured model and packing, all cores); repeat it; the first is the baseline.
    #[arg(long = "variant", value_parser = parse_variant, required = true)]
    pub variants: Vec<crate::service::evaluate::EmbedVariant>,
    #[arg(long)]
    pub json: bool,
}

fn parse_variant(s: &str) -> std::result::Result<crate::service::evaluate::EmbedVariant, String> {
    let mut v = crate::service::evaluate::EmbedVariant {
        label: s.to_string(),
        model: None,
        seqs: None,
        tokens: None,
        threads: None,
    };
    for part in s.split(',').filter(|p| !p.is_empty()) {
        let (k, val) = part
            .split_once('=')
            .ok_or_else(|| format!("{part:?}: expected key=value"))?;
        let num = || val.parse::<usize>().map_err(|e| format!("{k}={val}: {e}"));
        match k {
            "model" => v.model = Some(PathBuf::from(val)),
            "seqs" => v.seqs = Some(num()?),
            "tokens" => v.tokens = Some(num()?),
            "threads" => v.threads = Some(i32::try_from(num()?).map_err(|e| e.to_string())?),
            _ => return Err(format!("unknown key {k:?}: model, seqs, tokens or threads")),
        }
    }
    Ok(v)
}

/// Embedding set-ups side by side: passages/s, query latency, cosines.
pub async fn embed(ctx: &Context, args: EmbedBenchArgs) -> Result<()> {
    let req = crate::service::evaluate::EmbedBench {
        texts: args.texts,
        limit: args.limit,
        rounds: args.rounds.max(1),
        group: args.group,
        queries: args.queries,
        query_limit: args.query_limit,
        reference: args.reference,
        variants: args.variants,
    };
    let out = crate::service::evaluate::bench_embed(ctx, &req).await?;
    if args.json {
        return print_json(&out);
    }
    say!(
        "{} passages (mean {:.0} tokens, {} at the cap), {} per call, {} rounds; {} queries",
        out["texts"],
        out["mean_tokens"].as_f64().unwrap_or(0.0),
        out["at_token_cap"],
        out["group"],
        out["rounds"],
        out["queries"]
    );
    let opt = |x: &serde_json::Value| x.as_f64().map_or("-".into(), |c| format!("{c:.6}"));
    for v in out["variants"].as_array().into_iter().flatten() {
        let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
        say!(
            "{:<40} {:>6.1} passages/s  x{:.2} (median of rounds)  cos>={}  query p50 {:.2} ms p95 {:.2} ms cos>={}  reference cos>={}",
            v["label"].as_str().unwrap_or("-"),
            f("chunks_per_s"),
            f("median_ratio_to_first"),
            opt(&v["worst_cosine_to_first"]),
            f("query_p50_ms"),
            f("query_p95_ms"),
            opt(&v["query_worst_cosine_to_first"]),
            opt(&v["reference_worst_cosine"]),
        );
    }
    Ok(())
}
