//! `bench embed`: embedding speed of several ways to run the embedder, side by side
//! in one run. The machine is shared and noisy, so the variants are interleaved
//! (every round runs each once, the starting variant rotating) and compared by
//! ratio to the first; each variant's vectors are compared with the first's (worst
//! cosine) and, when given, with independent reference vectors.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};

use crate::core::stats::timing_quantile as pct;
use crate::infer::embed::{EmbedConfig, Embedder, normalise};
use crate::service::base::{Context, ModelChoice};

/// One way to run the embedder.
#[derive(Debug, Clone)]
pub struct EmbedVariant {
    /// As given on the command line.
    pub label: String,
    /// A GGUF (None: the configured embedding model).
    pub model: Option<PathBuf>,
    /// Sequences per encode call (None: the default).
    pub seqs: Option<usize>,
    /// Tokens per encode call (None: the default).
    pub tokens: Option<usize>,
    /// Threads (None: the default, all cores).
    pub threads: Option<i32>,
}

/// What `bench embed` runs.
#[derive(Debug, Clone)]
pub struct EmbedBench {
    /// JSONL passages `{text, ...}` (other fields ignored).
    pub texts: PathBuf,
    /// At most this many passages (0: no corpus timing).
    pub limit: usize,
    pub rounds: usize,
    /// Passages per `embed` call: what `raglab index` sends at once.
    pub group: usize,
    /// JSONL queries `{text, ...}`, embedded one at a time (the query path).
    pub queries: Option<PathBuf>,
    pub query_limit: usize,
    /// Reference vectors (`all-MiniLM-L6-v2.reference.json` from setup).
    pub reference: Option<PathBuf>,
    /// The first is the baseline the others are compared with.
    pub variants: Vec<EmbedVariant>,
}

/// The `text` field of each JSONL line, at most `limit`.
fn read_text_field(path: &Path, limit: usize) -> Result<Vec<String>> {
    // Bounded like every other input read (a size check before reading).
    let body = crate::service::base::read_text(path)?;
    let mut out = Vec::new();
    for (n, line) in body.lines().filter(|l| !l.trim().is_empty()).enumerate() {
        if out.len() == limit {
            break;
        }
        let v: serde_json::Value = serde_json::from_str(line)
            .with_context(|| format!("{} line {}", path.display(), n + 1))?;
        match v.get("text").and_then(|t| t.as_str()) {
            Some(t) => out.push(t.to_string()),
            None => bail!("{} line {}: no string `text`", path.display(), n + 1),
        }
    }
    Ok(out)
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

fn worst_cosine(a: &[Vec<f32>], b: &[Vec<f32>]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| cosine(x, y))
        .fold(1.0, f64::min)
}

/// Time the variants side by side; reports, does not assert.
pub async fn bench_embed(ctx: &Context, req: &EmbedBench) -> Result<serde_json::Value> {
    let embedders = load_variants(ctx, req)?;
    let texts = if req.limit == 0 {
        Vec::new()
    } else {
        read_text_field(&req.texts, req.limit)?
    };
    let group = req.group.max(1);
    let corpus = time_corpus(&embedders, &texts, group, req.rounds)?;
    let tokens: Vec<usize> = if texts.is_empty() {
        Vec::new()
    } else {
        let cap = embedders[0].1.info.max_tokens;
        embedders[0]
            .1
            .count_document_tokens(&texts)?
            .into_iter()
            .map(|n| n.min(cap))
            .collect()
    };
    let queries = match &req.queries {
        Some(p) => read_text_field(p, req.query_limit)?,
        None => Vec::new(),
    };
    let timed_queries = time_queries(&embedders, &queries)?;
    let reference = match &req.reference {
        Some(p) => Some(read_reference(p)?),
        None => None,
    };
    let mut rows = Vec::new();
    for v in 0..embedders.len() {
        let row = variant_row(req, &embedders, v, texts.len(), &corpus, &timed_queries);
        rows.push(with_reference(row, &embedders[v].1, reference.as_ref())?);
    }
    let mean = |v: &[usize]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<usize>() as f64 / v.len() as f64
        }
    };
    Ok(serde_json::json!({
        "texts": texts.len(),
        "mean_tokens": mean(&tokens),
        "at_token_cap": tokens.iter().filter(|&&n| n == embedders[0].1.info.max_tokens).count(),
        "group": group,
        "rounds": req.rounds,
        "queries": queries.len(),
        "variants": rows,
    }))
}

/// Each variant's embedding configuration and its loaded embedder (in-process only).
fn load_variants(ctx: &Context, req: &EmbedBench) -> Result<Vec<(EmbedConfig, Embedder)>> {
    if req.variants.is_empty() {
        bail!("name at least one --variant");
    }
    let mut embedders = Vec::new();
    for v in &req.variants {
        let mut cfg = ctx.embed_config(&ModelChoice {
            model: v.model.clone(),
            threads: v.threads,
        })?;
        if cfg.endpoint.is_some() {
            bail!("bench embed times in-process models: name a GGUF with model=PATH");
        }
        cfg.batch_seqs = v.seqs.or(cfg.batch_seqs);
        cfg.batch_tokens = v.tokens.unwrap_or(cfg.batch_tokens);
        let e = Embedder::spawn(&cfg).with_context(|| format!("loading {}", v.label))?;
        embedders.push((cfg, e));
    }
    Ok(embedders)
}

/// The corpus timings: each round's seconds per variant, and each variant's vectors
/// (from its first round).
struct CorpusTimes {
    secs: Vec<Vec<f64>>,
    first: Vec<Option<Vec<Vec<f32>>>>,
}

/// Every round embeds every passage with each variant, in groups of `group`, the
/// first variant of a round rotating so drift in the machine's load hits all alike.
fn time_corpus(
    embedders: &[(EmbedConfig, Embedder)],
    texts: &[String],
    group: usize,
    rounds: usize,
) -> Result<CorpusTimes> {
    let n_var = embedders.len();
    let mut secs = vec![vec![0.0f64; n_var]; rounds];
    let mut first: Vec<Option<Vec<Vec<f32>>>> = vec![None; n_var];
    if !texts.is_empty() {
        for (_, e) in embedders {
            e.embed_documents(&texts[..group.min(texts.len())])?; // warm-up
        }
        for (r, row) in secs.iter_mut().enumerate() {
            for k in 0..n_var {
                let v = (r + k) % n_var;
                let e = &embedders[v].1;
                let t = Instant::now();
                let mut vecs = Vec::with_capacity(texts.len());
                for g in texts.chunks(group) {
                    vecs.extend(e.embed_documents(g)?);
                }
                row[v] = t.elapsed().as_secs_f64();
                first[v].get_or_insert(vecs);
            }
        }
    }
    Ok(CorpusTimes { secs, first })
}

/// The query timings: each variant's ms per query and its vectors.
struct QueryTimes {
    ms: Vec<Vec<f64>>,
    vecs: Vec<Vec<Vec<f32>>>,
}

/// Embed the queries one at a time, the variant order rotating per query.
fn time_queries(embedders: &[(EmbedConfig, Embedder)], queries: &[String]) -> Result<QueryTimes> {
    let n_var = embedders.len();
    let mut ms = vec![Vec::new(); n_var];
    let mut vecs: Vec<Vec<Vec<f32>>> = vec![Vec::new(); n_var];
    if let Some(q0) = queries.first() {
        for (_, e) in embedders {
            e.embed_query(q0)?; // warm-up
        }
    }
    for (i, q) in queries.iter().enumerate() {
        for k in 0..n_var {
            let v = (i + k) % n_var;
            let t = Instant::now();
            let x = embedders[v].1.embed_query(q)?;
            ms[v].push(t.elapsed().as_secs_f64() * 1e3);
            vecs[v].push(x);
        }
    }
    Ok(QueryTimes { ms, vecs })
}

/// Variant `v`'s row: its rates, its per-round ratio to the first variant, and how
/// far its vectors are from the first's.
fn variant_row(
    req: &EmbedBench,
    embedders: &[(EmbedConfig, Embedder)],
    v: usize,
    texts: usize,
    corpus: &CorpusTimes,
    queries: &QueryTimes,
) -> serde_json::Value {
    let (cfg, e) = &embedders[v];
    let secs = &corpus.secs;
    let total: f64 = secs.iter().map(|r| r[v]).sum();
    // Passages per second over `s` seconds in which they were embedded `times` times.
    let rate = |s: f64, times: usize| {
        if s > 0.0 {
            (texts * times) as f64 / s
        } else {
            0.0
        }
    };
    // Per round: this variant's rate over the first's in the same round.
    let ratios: Vec<f64> = secs
        .iter()
        .filter(|r| r[v] > 0.0)
        .map(|r| r[0] / r[v])
        .collect();
    let default_seqs = if cfg.threads > 1 {
        crate::infer::embed::DEFAULT_BATCH_SEQS
    } else {
        1
    };
    serde_json::json!({
        "label": req.variants[v].label,
        "model": e.info.name,
        "seqs": cfg.batch_seqs.unwrap_or(default_seqs),
        "tokens": cfg.batch_tokens,
        "threads": cfg.threads,
        "chunks_per_s": rate(total, secs.len()),
        "round_chunks_per_s": secs.iter().map(|r| rate(r[v], 1)).collect::<Vec<_>>(),
        "round_ratio_to_first": ratios,
        "median_ratio_to_first": pct(&ratios, 0.5),
        "worst_cosine_to_first": match (&corpus.first[v], &corpus.first[0]) {
            (Some(a), Some(b)) => Some(worst_cosine(a, b)),
            _ => None,
        },
        "query_p50_ms": pct(&queries.ms[v], 0.5),
        "query_p95_ms": pct(&queries.ms[v], 0.95),
        "query_worst_cosine_to_first": (!queries.vecs[0].is_empty())
            .then(|| worst_cosine(&queries.vecs[v], &queries.vecs[0])),
    })
}

/// `row` with `reference_worst_cosine`: the worst cosine of the variant's vectors of
/// the reference sentences to the reference vectors (null without a reference).
fn with_reference(
    mut row: serde_json::Value,
    e: &Embedder,
    reference: Option<&(Vec<String>, Vec<Vec<f32>>)>,
) -> Result<serde_json::Value> {
    let worst = match reference {
        Some((texts, want)) => {
            let got = e.embed(texts.clone())?;
            Some(
                got.iter()
                    .zip(want)
                    .map(|(g, w)| cosine(g, w))
                    .fold(1.0, f64::min),
            )
        }
        None => None,
    };
    row["reference_worst_cosine"] = serde_json::json!(worst);
    Ok(row)
}

/// The sentences and their vectors in a reference file written by
/// `scripts/minilm_reference.py`.
fn read_reference(path: &Path) -> Result<(Vec<String>, Vec<Vec<f32>>)> {
    let v: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?,
    )?;
    let mut texts = Vec::new();
    let mut vecs = Vec::new();
    for s in v["sentences"].as_array().into_iter().flatten() {
        let (Some(t), Some(e)) = (s["text"].as_str(), s["embedding"].as_array()) else {
            bail!("{}: a sentence without text or embedding", path.display());
        };
        texts.push(t.to_string());
        let e: Vec<f32> = e
            .iter()
            .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
            .collect();
        vecs.push(normalise(&e));
    }
    if texts.is_empty() {
        bail!("{} holds no sentences", path.display());
    }
    Ok((texts, vecs))
}
