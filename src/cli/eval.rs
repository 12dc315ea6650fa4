//! `raglab eval retrieval`: the paper's retrieval table per method, the alpha sweep,
//! breakdowns by topic and target length, failed queries, and TREC run files.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};

use super::{Context, print_json};
use crate::core::fusion::{Fusion, RRF_C, alpha_grid};
use crate::core::metrics::{MeanMetrics, Qrel, recall_at};
use crate::core::retrieval::{
    METRICS, Method, QueryLists, QueryOutcome, breakdown, evaluate, failures, mean,
};
use crate::core::stats::{bucket_label, bucket_of};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever, embed_config};

#[derive(Debug, Subcommand)]
pub enum EvalCmd {
    /// Evaluate retrieval on a query set.
    Retrieval(RetrievalArgs),
    /// Multiple-choice accuracy by k, topic and target rank (generates answers).
    Mcqa(super::mcqa::McqaArgs),
    /// Choose an abstention threshold: how often answerable and unanswerable
    /// questions fall below each best-cosine threshold.
    Abstention(AbstentionArgs),
}

#[derive(Debug, Args)]
pub struct AbstentionArgs {
    /// JSONL questions `{id, text}` the corpus can answer.
    #[arg(long)]
    pub answerable: PathBuf,
    /// JSONL questions `{id, text}` the corpus cannot answer.
    #[arg(long)]
    pub unanswerable: PathBuf,
    #[arg(long, default_value_t = 0.05)]
    pub from: f64,
    #[arg(long, default_value_t = 0.95)]
    pub to: f64,
    #[arg(long, default_value_t = 0.05)]
    pub step: f64,
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Deserialize)]
struct TextRecord {
    #[serde(alias = "question")]
    text: String,
}

/// Best dense cosine of each question in a JSONL file.
fn best_cosines(r: &Retriever, path: &std::path::Path) -> Result<Vec<f64>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let q: TextRecord = serde_json::from_str(line)
            .with_context(|| format!("{}:{}: expected {{text}}", path.display(), i + 1))?;
        let (lists, _) = r.query(&q.text, 1)?;
        out.push(
            lists
                .dense
                .first()
                .map(|s| s.score)
                .context("no dense list: build the embeddings with `raglab index`")?,
        );
    }
    if out.is_empty() {
        bail!("{} holds no questions", path.display());
    }
    Ok(out)
}

async fn abstention(ctx: &Context, args: AbstentionArgs) -> Result<()> {
    use crate::core::abstention::{best, grid, sweep};
    let cfg = embed_config(ctx, args.embed_model.clone(), None);
    let r = Retriever::open(&ctx.workspace, Some(&cfg)).await?;
    if !r.is_fresh() || !r.has_dense() {
        bail!("the embeddings are missing or out of date: run `raglab index` first");
    }
    let answerable = best_cosines(&r, &args.answerable)?;
    let unanswerable = best_cosines(&r, &args.unanswerable)?;
    let rows = sweep(
        &answerable,
        &unanswerable,
        &grid(args.from, args.to, args.step),
    );
    let top = best(&rows).cloned();
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    if args.json {
        return print_json(&serde_json::json!({
            "model": r.model_name,
            "answerable": answerable.len(),
            "unanswerable": unanswerable.len(),
            "median_best_cosine": {"answerable": median(&answerable), "unanswerable": median(&unanswerable)},
            "rows": rows,
            "best": top,
        }));
    }
    println!(
        "best dense cosine ({}): median {:.3} over {} answerable, {:.3} over {} unanswerable questions",
        r.model_name.as_deref().unwrap_or("?"),
        median(&answerable),
        answerable.len(),
        median(&unanswerable),
        unanswerable.len()
    );
    println!("\nthreshold  answerable abstain (wrong)  unanswerable abstain (right)      J");
    for row in &rows {
        println!(
            "{:>9.2}  {:>26.3}  {:>28.3}  {:>6.3}",
            row.threshold, row.answerable_abstain, row.unanswerable_abstain, row.j
        );
    }
    if let Some(b) = top {
        println!(
            "\nbest J = {:.3} at {:.2}: set `[retrieval] abstain_below = {:.2}` or `raglab generate --abstain-below {:.2}`",
            b.j, b.threshold, b.threshold, b.threshold
        );
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct RetrievalArgs {
    /// JSONL queries `{id, text, relevant: [chunk ids], topic?}`.
    #[arg(long)]
    pub queries: PathBuf,
    /// TREC qrels (`qid 0 docid rel`), overriding `relevant` in the queries file.
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    /// Methods to evaluate (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "bm25,tfidf,dense,hybrid")]
    pub methods: Vec<Method>,
    /// Sweep a over 0.50..0.95 for hybrid (and linear) instead of one alpha.
    #[arg(long)]
    pub alpha_sweep: bool,
    #[arg(long, default_value_t = 0.7)]
    pub alpha: f64,
    /// Recall cutoffs to report besides the paper's table; the largest is the failure cutoff.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub k: Vec<usize>,
    /// Write one TREC run file per method into this folder.
    #[arg(long)]
    pub run_out: Option<PathBuf>,
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    #[arg(long)]
    pub threads: Option<i32>,
    #[arg(long, default_value_t = DEFAULT_DEPTH)]
    pub depth: usize,
    /// Dense lists from the lance ANN index instead of exact search.
    #[arg(long)]
    pub ann: bool,
    #[arg(long, default_value_t = 8)]
    pub nprobes: usize,
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Deserialize)]
struct QueryRecord {
    id: String,
    text: String,
    #[serde(default)]
    relevant: Vec<String>,
    #[serde(default)]
    topic: Option<String>,
}

#[derive(Debug, Serialize)]
struct MethodResult {
    method: String,
    alpha: Option<f64>,
    metrics: MeanMetrics,
    recall_at: Vec<(usize, f64)>,
}

/// Failed queries of the last evaluation, for the TUI to step through.
#[derive(Debug, Serialize, Deserialize)]
pub struct FailedQuery {
    pub qid: String,
    pub text: String,
    pub relevant: Vec<String>,
    pub rank: Option<usize>,
}

pub const LAST_FAILURES: &str = "eval/last-failures.json";

fn read_queries(args: &RetrievalArgs) -> Result<(Vec<QueryRecord>, HashMap<String, Qrel>)> {
    let text = std::fs::read_to_string(&args.queries)
        .with_context(|| format!("cannot read {}", args.queries.display()))?;
    let mut queries = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let q: QueryRecord = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a query record {{id, text, relevant}}",
                args.queries.display(),
                i + 1
            )
        })?;
        queries.push(q);
    }
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    if let Some(path) = &args.qrels {
        let t = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        for (i, line) in t.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let f: Vec<&str> = line.split_whitespace().collect();
            let (Some(q), Some(d), Some(r)) = (
                f.first(),
                f.get(2),
                f.get(3).and_then(|r| r.parse::<u32>().ok()),
            ) else {
                bail!("{}:{}: expected `qid 0 docid rel`", path.display(), i + 1);
            };
            qrels
                .entry((*q).to_string())
                .or_default()
                .insert((*d).to_string(), r);
        }
    } else {
        for q in &queries {
            qrels.insert(
                q.id.clone(),
                q.relevant.iter().map(|d| (d.clone(), 1)).collect(),
            );
        }
    }
    Ok((queries, qrels))
}

fn write_run(
    dir: &std::path::Path,
    name: &str,
    lists: &[(String, QueryLists)],
    method: Method,
    alpha: f64,
) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut out = String::new();
    for (qid, l) in lists {
        let scored: Vec<(String, f64)> = match method {
            Method::Bm25 => l.bm25.iter().map(|s| (s.id.clone(), s.score)).collect(),
            Method::Tfidf => l.tfidf.iter().map(|s| (s.id.clone(), s.score)).collect(),
            Method::Dense => l.dense.iter().map(|s| (s.id.clone(), s.score)).collect(),
            Method::Hybrid => l
                .candidates
                .fuse(Fusion::Rrf { alpha, c: RRF_C })
                .into_iter()
                .map(|h| (h.id, h.fused))
                .collect(),
            Method::Linear => l
                .candidates
                .fuse(Fusion::MinMax { w: alpha })
                .into_iter()
                .map(|h| (h.id, h.fused))
                .collect(),
        };
        for (i, (doc, score)) in scored.iter().enumerate() {
            let _ = writeln!(out, "{qid} Q0 {doc} {} {score:.10} raglab-{name}", i + 1);
        }
    }
    let path = dir.join(format!("{name}.run"));
    std::fs::write(&path, out).with_context(|| format!("cannot write {}", path.display()))
}

pub async fn run(ctx: &Context, cmd: EvalCmd) -> Result<()> {
    let args = match cmd {
        EvalCmd::Retrieval(args) => args,
        EvalCmd::Mcqa(args) => return super::mcqa::run(ctx, args).await,
        EvalCmd::Abstention(args) => return abstention(ctx, args).await,
    };
    let (queries, qrels) = read_queries(&args)?;
    if queries.is_empty() {
        bail!("{} holds no queries", args.queries.display());
    }
    let dense = args.methods.iter().any(|m| m.needs_dense());
    let cfg = dense.then(|| embed_config(ctx, args.embed_model.clone(), args.threads));
    let r = Retriever::open(&ctx.workspace, cfg.as_ref()).await?;
    if !r.is_fresh() {
        bail!("the indexes are out of date with the chunks: run `raglab index` first");
    }
    // Rank lists once per query (the sweep re-fuses them).
    let bar = super::index::progress_bar("embedding queries");
    bar.set_length(queries.len() as u64);
    let started = Instant::now();
    let mut lists = Vec::with_capacity(queries.len());
    for q in &queries {
        let (l, _) = if args.ann {
            r.query_ann(&ctx.workspace, &q.text, args.depth, args.nprobes)
                .await?
        } else {
            r.query(&q.text, args.depth)?
        };
        lists.push((q.id.clone(), l));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let retrieval_s = started.elapsed().as_secs_f64();

    let recall_ks = |method: Method, alpha: f64| -> Vec<(usize, f64)> {
        args.k
            .iter()
            .map(|&k| {
                let vals: Vec<f64> = lists
                    .iter()
                    .filter_map(|(qid, l)| {
                        let q = qrels.get(qid).filter(|q| q.values().any(|&r| r > 0))?;
                        Some(recall_at(&l.ranking(method, alpha), q, k))
                    })
                    .collect();
                (
                    k,
                    if vals.is_empty() {
                        0.0
                    } else {
                        vals.iter().sum::<f64>() / vals.len() as f64
                    },
                )
            })
            .collect()
    };
    let sweep_started = Instant::now();
    let mut sweep: Vec<(f64, MeanMetrics)> = Vec::new();
    if args.alpha_sweep && args.methods.contains(&Method::Hybrid) {
        for a in alpha_grid() {
            sweep.push((a, mean(&evaluate(&lists, &qrels, Method::Hybrid, a))));
        }
    }
    let sweep_ms = sweep_started.elapsed().as_secs_f64() * 1e3;
    let best: Vec<(String, f64, f64)> = METRICS
        .iter()
        .filter_map(|(name, get)| {
            sweep
                .iter()
                .max_by(|a, b| get(&a.1).total_cmp(&get(&b.1)).then(b.0.total_cmp(&a.0)))
                .map(|(a, m)| ((*name).to_string(), *a, get(m)))
        })
        .collect();
    let hybrid_alpha = best
        .iter()
        .find(|(n, _, _)| n == "nDCG@10")
        .map_or(args.alpha, |b| b.1);

    let mut results = Vec::new();
    let mut outcomes_by: HashMap<Method, Vec<QueryOutcome>> = HashMap::new();
    for &m in &args.methods {
        if m.needs_dense() && !r.has_dense() {
            bail!("no embeddings for this model: run `raglab index`");
        }
        let alpha = if m == Method::Hybrid {
            hybrid_alpha
        } else {
            args.alpha
        };
        let o = evaluate(&lists, &qrels, m, alpha);
        results.push(MethodResult {
            method: m.to_string(),
            alpha: matches!(m, Method::Hybrid | Method::Linear).then_some(alpha),
            metrics: mean(&o),
            recall_at: recall_ks(m, alpha),
        });
        if let Some(dir) = &args.run_out {
            let name = match m {
                Method::Hybrid | Method::Linear => format!("{m}-a{alpha:.2}"),
                _ => m.to_string(),
            };
            write_run(dir, &name, &lists, m, alpha)?;
        }
        outcomes_by.insert(m, o);
    }

    // Breakdowns and failures for the headline method (hybrid when evaluated).
    let head = [
        Method::Hybrid,
        Method::Dense,
        Method::Bm25,
        Method::Tfidf,
        Method::Linear,
    ]
    .into_iter()
    .find(|m| outcomes_by.contains_key(m))
    .unwrap_or(Method::Bm25);
    let head_outcomes = outcomes_by.get(&head).cloned().unwrap_or_default();
    let topic_of: HashMap<&str, Option<String>> = queries
        .iter()
        .map(|q| {
            let t = q.topic.clone().or_else(|| {
                q.relevant
                    .first()
                    .and_then(|d| r.chunk(d))
                    .and_then(|c| c.topic.clone())
            });
            (q.id.as_str(), t)
        })
        .collect();
    let by_topic = breakdown(&head_outcomes, |qid| topic_of.get(qid).cloned().flatten());
    let length_of = |qid: &str| -> Option<String> {
        let q = qrels.get(qid)?;
        let words = q
            .iter()
            .filter(|(_, r)| **r > 0)
            .filter_map(|(d, _)| r.chunk(d))
            .map(|c| c.word_count)
            .max()?;
        Some(bucket_label(bucket_of(words)))
    };
    let by_length = breakdown(&head_outcomes, length_of);
    let fail_k = args.k.iter().copied().max().unwrap_or(10);
    let text_of: HashMap<&str, &QueryRecord> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
    let failed: Vec<FailedQuery> = failures(&head_outcomes, fail_k)
        .into_iter()
        .map(|o| FailedQuery {
            qid: o.qid.clone(),
            text: text_of
                .get(o.qid.as_str())
                .map(|q| q.text.clone())
                .unwrap_or_default(),
            relevant: qrels
                .get(&o.qid)
                .map(|q| {
                    q.iter()
                        .filter(|(_, r)| **r > 0)
                        .map(|(d, _)| d.clone())
                        .collect()
                })
                .unwrap_or_default(),
            rank: o.metrics.first_relevant_rank,
        })
        .collect();
    let path = ctx.workspace.path(LAST_FAILURES);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    std::fs::write(&path, serde_json::to_string_pretty(&failed)?)
        .with_context(|| format!("cannot write {}", path.display()))?;

    let single_ms = if sweep.is_empty() {
        0.0
    } else {
        sweep_ms / sweep.len() as f64
    };
    let dropped = queries.len() - head_outcomes.len();
    if args.json {
        return print_json(&serde_json::json!({
            "queries": queries.len(), "evaluated": head_outcomes.len(), "dropped_without_relevant": dropped,
            "embedding_model": r.model_name, "depth": args.depth,
            "results": results,
            "alpha_sweep": sweep.iter().map(|(a, m)| serde_json::json!({"alpha": a, "metrics": m})).collect::<Vec<_>>(),
            "best_alpha": best.iter().map(|(n, a, v)| serde_json::json!({"metric": n, "alpha": a, "value": v})).collect::<Vec<_>>(),
            "breakdown_method": head.to_string(),
            "by_topic": by_topic, "by_target_length": by_length,
            "failed": failed, "failure_cutoff": fail_k,
            "seconds": {"retrieval": retrieval_s, "sweep_ms": sweep_ms, "per_alpha_ms": single_ms},
        }));
    }
    println!(
        "{} queries ({} evaluated; {} without relevant chunks dropped, as trec_eval does), depth {}, embeddings: {}",
        queries.len(),
        head_outcomes.len(),
        dropped,
        args.depth,
        r.model_name.as_deref().unwrap_or("-")
    );
    let ks: Vec<String> = args.k.iter().map(|k| format!("R@{k}")).collect();
    println!(
        "{:<16} {:>7} {:>9} {:>9} {:>7} {:>8} {}",
        "method",
        "P@1",
        "Recall@5",
        "Recall@10",
        "MRR",
        "nDCG@10",
        ks.join("  ")
    );
    for res in &results {
        let label = res.alpha.map_or_else(
            || res.method.clone(),
            |a| format!("{} a={a:.2}", res.method),
        );
        let extra: Vec<String> = res
            .recall_at
            .iter()
            .map(|(_, v)| format!("{v:.4}"))
            .collect();
        let m = &res.metrics;
        println!(
            "{label:<16} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4} {}",
            m.p1,
            m.recall5,
            m.recall10,
            m.mrr,
            m.ndcg10,
            extra.join(" ")
        );
    }
    if !sweep.is_empty() {
        println!(
            "\nalpha sweep (hybrid, weighted RRF, c = 60; {sweep_ms:.1} ms for {} alphas)",
            sweep.len()
        );
        println!(
            "{:>6} {:>7} {:>9} {:>9} {:>7} {:>8}",
            "alpha", "P@1", "Recall@5", "Recall@10", "MRR", "nDCG@10"
        );
        for (a, m) in &sweep {
            println!(
                "{a:>6.2} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4}",
                m.p1, m.recall5, m.recall10, m.mrr, m.ndcg10
            );
        }
        for (n, a, v) in &best {
            println!("best a for {n:<9}: {a:.2} ({v:.4})");
        }
    }
    println!(
        "\nby topic ({head}; eta^2 of nDCG@10 = {})",
        by_topic
            .eta_squared_ndcg10
            .map_or("undefined".into(), |e| format!("{e:.4}"))
    );
    for (t, m) in &by_topic.groups {
        println!(
            "  {t:<28} n={:<4} nDCG@10 {:.4}  MRR {:.4}",
            m.queries, m.ndcg10, m.mrr
        );
    }
    println!(
        "by target length in words ({head}; eta^2 = {})",
        by_length
            .eta_squared_ndcg10
            .map_or("undefined".into(), |e| format!("{e:.4}"))
    );
    let mut lengths: Vec<_> = by_length.groups.iter().collect();
    lengths.sort_by_key(|(label, _)| {
        label
            .split(['-', '+'])
            .next()
            .and_then(|n| n.parse::<usize>().ok())
            .unwrap_or(0)
    });
    for (t, m) in lengths {
        println!(
            "  {t:<10} n={:<4} nDCG@10 {:.4}  MRR {:.4}",
            m.queries, m.ndcg10, m.mrr
        );
    }
    println!(
        "\nfailed queries ({head}: target not in the top {fail_k}): {}",
        failed.len()
    );
    for f in failed.iter().take(20) {
        let rank = f
            .rank
            .map_or("not retrieved".into(), |r| format!("rank {r}"));
        println!(
            "  {} [{rank}] {}",
            f.qid,
            crate::core::text::sanitize_for_terminal(&f.text)
        );
    }
    if failed.len() > 20 {
        println!(
            "  ... {} more (all in {})",
            failed.len() - 20,
            path.display()
        );
    }
    Ok(())
}
