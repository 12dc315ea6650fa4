//! `raglab bench retrieval|generate|embed|rerank`: figures, not assertions.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::service::Context;
use crate::service::base::ModelChoice;
use crate::service::evaluate::{
    GenBench, SyntheticBench, bench_generate, bench_retrieval, bench_synthetic,
};

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["queries", "synthetic"])))]
pub struct BenchArgs {
    /// JSONL queries `{id, text, ...}`, ranked in the workspace.
    #[arg(long)]
    pub queries: Option<PathBuf>,
    /// Time every stage on a synthetic workspace of N chunks instead (built once under
    /// the data folder; synthetic text and vectors: speeds and memory, no quality).
    #[arg(long, value_name = "N")]
    pub synthetic: Option<usize>,
    /// Use at most this many queries (with --synthetic: this many synthetic queries).
    #[arg(long, default_value_t = 200)]
    pub limit: usize,
    /// IVF lists probed by the ANN searches (the in-memory IVF of `--ann`; with
    /// --synthetic also lance's IVF_PQ), one row each; each at least 1.
    #[arg(long, value_delimiter = ',', default_values_t = [1, 2, 4, 8], value_parser = super::args::lists_probed)]
    pub nprobes: Vec<usize>,
    /// With --synthetic: the ANN search rescores k x this many rows in full.
    #[arg(long, default_value_t = 40)]
    pub refine: u32,
    /// Threads for query embedding (the TUI uses 1).
    #[arg(long, default_value_t = 1)]
    pub threads: i32,
    /// With --queries: time a rerank stage after the hybrid ranking too.
    #[command(flatten)]
    pub rerank: super::args::RerankArgs,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: BenchArgs) -> Result<()> {
    let (Some(queries), None) = (&args.queries, args.synthetic) else {
        return run_synthetic(ctx, &args).await;
    };
    let rerank = args.rerank.setup(ctx)?;
    let out = bench_retrieval(
        ctx,
        queries,
        args.limit,
        args.threads,
        &args.nprobes,
        rerank,
    )
    .await?;
    if args.json {
        return json_schema::print(json_schema::BENCH_RETRIEVAL, &out);
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
    let rr = &out["rerank"];
    if rr.is_object() {
        say!(
            "rerank stage after the hybrid ranking: {}: {} pairs scored, {} from the cache",
            rr["stage"].as_str().unwrap_or("-"),
            rr["scored"],
            rr["cached"]
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
            "dense scan of {} x {}: scalar {:.3} ms, int8 + f32 rescoring {:.3} ms ({:.2} GB/s of int8, {:.0} rows rescored), memcpy of the same bytes {:.3} ms ({:.2} GB/s): scan at {:.0}% of memcpy; identical top {}: {}",
            d["rows"],
            d["dim"],
            g("scalar_p50_ms"),
            g("int8_p50_ms"),
            g("int8_gb_per_s"),
            g("rescored_p50"),
            g("memcpy_p50_ms"),
            g("memcpy_gb_per_s"),
            100.0 * g("int8_over_memcpy"),
            d["k"],
            d["identical_top_k"]
        );
    }
    say_ivf(&out["ivf"]);
    Ok(())
}

/// `bench retrieval --synthetic N`: the stages, the scan against a copy of its bytes,
/// and ANN recall, headed by a line saying the data is synthetic.
async fn run_synthetic(ctx: &Context, args: &BenchArgs) -> Result<()> {
    if args.rerank.setup(ctx)?.is_some() {
        anyhow::bail!(
            "--rerank times the stage on the workspace's own queries (--queries FILE), not on --synthetic"
        );
    }
    let req = SyntheticBench {
        chunks: args.synthetic.unwrap_or_default(),
        queries: args.limit,
        nprobes: args.nprobes.clone(),
        refine: args.refine,
    };
    let out = bench_synthetic(ctx, &req, &|line| eprintln!("{line}")).await?;
    if args.json {
        return json_schema::print(json_schema::BENCH_SYNTHETIC, &out);
    }
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    say!(
        "SYNTHETIC: {} chunks x {} dims, {} queries, top {} (text and vectors are synthetic: speeds, not quality)",
        out["chunks"],
        out["dim"],
        out["queries"],
        out["depth"]
    );
    say!(
        "load {:.2} s (sparse statistics {:.2} s); peak RSS {:.0} MB{}",
        f(&out["load_s"]),
        f(&out["sparse_stats_s"]),
        f(&out["peak_rss_mb"]),
        if out["peak_rss_is_search_phase"] == true {
            " (load and search, after the build)"
        } else {
            " (whole process, build included)"
        }
    );
    for s in out["stages"].as_array().into_iter().flatten() {
        say!(
            "{:<18} p50 {:>9.3} ms  p95 {:>9.3} ms",
            s["stage"].as_str().unwrap_or_default(),
            f(&s["p50_ms"]),
            f(&s["p95_ms"])
        );
    }
    say_scans(&out);
    for a in out["ann"].as_array().into_iter().flatten() {
        say!(
            "ANN IVF_PQ top {} nprobes {:>4} refine {}: p50 {:>8.3} ms  p95 {:>8.3} ms  recall@{} {:.3}",
            a["k"],
            a["nprobes"],
            a["refine"],
            f(&a["p50_ms"]),
            f(&a["p95_ms"]),
            a["k"],
            f(&a["recall_at_k"])
        );
    }
    say_ivf(&out["ivf"]);
    Ok(())
}

/// The dense-scan and tf-idf pruning lines: each fast path's speed beside
/// the plain one it replaces, and whether their top k agree.
fn say_scans(out: &serde_json::Value) {
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    let d = &out["dense_scan"];
    say!(
        "dense scan: {:.1} MB of int8 in {:.3} ms = {:.2} GB/s; memcpy of the same bytes {:.3} ms = {:.2} GB/s ({:.0}% of memcpy); {:.0} rows rescored in f32 (p50); plain f32 scan {:.2} ms on {} queries, identical: {}",
        f(&d["scanned_bytes"]) / 1e6,
        f(&d["int8_p50_ms"]),
        f(&d["int8_gb_per_s"]),
        f(&d["memcpy_p50_ms"]),
        f(&d["memcpy_gb_per_s"]),
        100.0 * f(&d["int8_over_memcpy"]),
        f(&out["dense_rescored_p50"]),
        f(&d["scalar_p50_ms"]),
        d["scalar_checked"],
        d["identical_top_k"]
    );
    let t = &out["tfidf_pruning"];
    say!(
        "tf-idf top {}: pruned p50 {:.3} ms ({:.3} ms on one thread) vs every posting read {:.3} ms on {} queries, identical: {}; {:.1}% of the query terms' postings read, {:.0} documents scored exactly (p50)",
        out["depth"],
        f(&t["pruned_p50_ms"]),
        f(&t["one_thread_p50_ms"]),
        f(&t["exhaustive_p50_ms"]),
        t["checked"],
        t["identical_top_k"],
        100.0 * f(&t["postings_read_share"]),
        f(&t["candidates_p50"])
    );
}

/// The in-memory IVF's lines: its build, then per `nprobes` time and recall.
fn say_ivf(ivf: &serde_json::Value) {
    if !ivf.is_object() {
        return;
    }
    let f = |v: &serde_json::Value| v.as_f64().unwrap_or(0.0);
    say!(
        "in-memory IVF (--ann): {} lists, clustered in {:.1} s, {:.0} MB besides the vectors",
        ivf["lists"],
        f(&ivf["build_s"]),
        f(&ivf["bytes"]) / 1e6
    );
    for a in ivf["rows"].as_array().into_iter().flatten() {
        say!(
            "ANN IVF int8 top {} nprobes {:>4}: p50 {:>8.3} ms  p95 {:>8.3} ms  recall@{} {:.3}  ({:.0} rows scanned, p50)",
            a["k"],
            a["nprobes"],
            f(&a["p50_ms"]),
            f(&a["p95_ms"]),
            a["k"],
            f(&a["recall_at_k"]),
            f(&a["rows_scanned_p50"])
        );
    }
}

#[derive(Debug, Args)]
pub struct GenBenchArgs {
    /// JSONL questions; the first one is answered from its retrieved chunks.
    #[arg(long)]
    pub questions: PathBuf,
    /// Chunks in the prompt (sets the prompt length).
    #[arg(long, default_value_t = 3)]
    pub k: usize,
    /// Tokens generated in each repetition.
    #[arg(long, default_value_t = 128)]
    pub max_tokens: usize,
    /// Repetitions (the figures are their median).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Generator threads (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// GGUF generator (default: config, else SmolLM2 from setup).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
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
        return json_schema::print(json_schema::BENCH_GENERATE, &out);
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
    /// Most queries of `--queries` embedded.
    #[arg(long, default_value_t = 200)]
    pub query_limit: usize,
    /// Reference vectors (`all-MiniLM-L6-v2.reference.json`): worst cosine per variant.
    #[arg(long)]
    pub reference: Option<PathBuf>,
    /// `model=PATH,seqs=N,tokens=N,threads=N`, each part optional (defaults: the
    /// configured model and packing, all cores); repeat it; the first is the baseline.
    #[arg(long = "variant", value_parser = parse_variant, required = true)]
    pub variants: Vec<crate::service::evaluate::EmbedVariant>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
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
        return json_schema::print(json_schema::BENCH_EMBED, &out);
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

#[derive(Debug, Args)]
pub struct RerankBenchArgs {
    /// JSONL questions; the first `--limit` are timed.
    #[arg(long)]
    pub questions: PathBuf,
    /// Questions timed.
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// Candidates per question (BM25's first N chunks).
    #[arg(long, default_value_t = 10)]
    pub depth: usize,
    /// Scorer threads (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// GGUF scorer (default: `[rerank] model`, else the generator).
    #[arg(long)]
    pub model: Option<PathBuf>,
}

/// `raglab bench rerank`: both ways of decoding a question's candidates, side by side.
pub async fn rerank(ctx: &Context, args: RerankBenchArgs) -> Result<()> {
    let req = crate::service::evaluate::RerankBench {
        questions: &args.questions,
        limit: args.limit,
        depth: args.depth,
        model: ModelChoice {
            model: args.model.or_else(|| ctx.config.rerank.model.clone()),
            threads: args.threads,
        },
    };
    let out = crate::service::evaluate::bench_rerank(ctx, &req).await?;
    say!(
        "{}: {} questions, {} candidates (BM25's first {}), each question both ways in turn",
        out.model,
        out.questions,
        out.candidates,
        args.depth
    );
    say!(
        "per question (median)   tokens    wall ms   llama.cpp prompt ms   wall / llama.cpp (sums)"
    );
    for (name, f) in [
        ("whole prompts", &out.whole),
        ("prefix shared", &out.shared),
    ] {
        say!(
            "{name:<22} {:>7.0} {:>10.1} {:>21.1} {:>25.3}x",
            f.tokens,
            f.wall_ms,
            f.llama_prompt_ms,
            f.wall_over_llama
        );
    }
    say!(
        "prefix shared / whole wall time: {:.3}x",
        out.shared_over_whole
    );
    say!(
        "|P(yes) shared - whole|: max {:.4}, mean {:.4}; same order in {} of {} questions",
        out.max_abs_diff,
        out.mean_abs_diff,
        out.same_order,
        out.questions
    );
    Ok(())
}
