//! `raglab eval retrieval|mcqa|abstention`: parse the flags, call the evaluation
//! service, render its report as text or JSON.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::args::RankingArgs;
use super::{on_progress, print_json, progress_bar};
use crate::core::retrieval::Method;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::evaluation::{
    RetrievalEval, RetrievalReport, abstention_sweep, evaluate_retrieval,
};
use crate::service::retrieval::DEFAULT_DEPTH;

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
    /// Sweep a over 0.50..0.95 for hybrid instead of one alpha.
    #[arg(long)]
    pub alpha_sweep: bool,
    /// Recall cutoffs to report besides the paper's table; the largest is the failure cutoff.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub k: Vec<usize>,
    /// Write one TREC run file per method into this folder.
    #[arg(long)]
    pub run_out: Option<PathBuf>,
    #[command(flatten)]
    pub ranking: RankingArgs,
    /// Threads for query embedding (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    #[arg(long, default_value_t = DEFAULT_DEPTH)]
    pub depth: usize,
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, cmd: EvalCmd) -> Result<()> {
    match cmd {
        EvalCmd::Retrieval(args) => retrieval(ctx, args).await,
        EvalCmd::Mcqa(args) => super::mcqa::run(ctx, args).await,
        EvalCmd::Abstention(args) => abstention(ctx, args).await,
    }
}

async fn abstention(ctx: &Context, args: AbstentionArgs) -> Result<()> {
    let embed = crate::service::ModelChoice {
        model: args.embed_model,
        ..Default::default()
    };
    let rep = abstention_sweep(
        ctx,
        &args.answerable,
        &args.unanswerable,
        (args.from, args.to, args.step),
        &embed,
    )
    .await?;
    if args.json {
        return print_json(&rep);
    }
    say!(
        "best dense cosine ({}): median {:.3} over {} answerable, {:.3} over {} unanswerable questions",
        clean(rep.model.as_deref().unwrap_or("?")),
        rep.median_best_cosine.answerable,
        rep.answerable,
        rep.median_best_cosine.unanswerable,
        rep.unanswerable
    );
    say!("\nthreshold  answerable abstain (wrong)  unanswerable abstain (right)      J");
    for row in &rep.rows {
        say!(
            "{:>9.2}  {:>26.3}  {:>28.3}  {:>6.3}",
            row.threshold,
            row.answerable_abstain,
            row.unanswerable_abstain,
            row.j
        );
    }
    if let Some(b) = &rep.best {
        say!(
            "\nbest J = {:.3} at {:.2}: set `[retrieval] abstain_below = {:.2}` or `raglab generate --abstain-below {:.2}`",
            b.j,
            b.threshold,
            b.threshold,
            b.threshold
        );
    }
    Ok(())
}

async fn retrieval(ctx: &Context, args: RetrievalArgs) -> Result<()> {
    let req = RetrievalEval {
        queries: args.queries,
        qrels: args.qrels,
        methods: args.methods,
        alpha_sweep: args.alpha_sweep,
        alpha: args.ranking.alpha(ctx),
        k: args.k,
        run_out: args.run_out,
        embed: args.ranking.embed(args.threads),
        depth: args.depth,
        ann_nprobes: args.ranking.ann_nprobes(),
    };
    let bar = progress_bar("embedding queries");
    let rep = evaluate_retrieval(ctx, &req, &on_progress(&bar)).await;
    bar.finish_and_clear();
    let rep = rep?;
    // On stderr in both formats (the JSON report holds it too).
    if let Some(w) = rep.missing_targets.warning("they count as not retrieved") {
        tell!("{w}");
    }
    if args.json {
        return print_json(&rep);
    }
    render(&rep);
    Ok(())
}

fn render(rep: &RetrievalReport) {
    let head = &rep.breakdown_method;
    let fail_k = rep.failure_cutoff;
    let ks: Vec<String> = rep.results.first().map_or_else(Vec::new, |r| {
        r.recall_at.iter().map(|(k, _)| format!("R@{k}")).collect()
    });
    say!(
        "{} queries ({} evaluated by {head}; dropped from its means, as trec_eval without -c drops them: {} without relevant chunks, {} with no results (absent from the run)), depth {}, embeddings: {}",
        rep.queries,
        rep.evaluated,
        rep.dropped_without_relevant,
        rep.dropped_empty_results,
        rep.depth,
        rep.embedding_model.as_deref().unwrap_or("-")
    );
    say!(
        "{:<16} {:>7} {:>9} {:>9} {:>7} {:>8} {}",
        "method",
        "P@1",
        "Recall@5",
        "Recall@10",
        "MRR",
        "nDCG@10",
        ks.join("  ")
    );
    for res in &rep.results {
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
        say!(
            "{label:<16} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4} {}",
            m.p1,
            m.recall5,
            m.recall10,
            m.mrr,
            m.ndcg10,
            extra.join(" ")
        );
    }
    for res in rep.results.iter().filter(|r| r.dropped_empty_results > 0) {
        let n = res.dropped_empty_results;
        say!(
            "{}: {n} {} with no results (absent from its run) dropped; means over {}",
            res.method,
            if n == 1 { "query" } else { "queries" },
            res.metrics.queries
        );
    }
    if !rep.alpha_sweep.is_empty() {
        say!(
            "\nalpha sweep (hybrid, weighted RRF, c = 60; {:.1} ms for {} alphas)",
            rep.seconds.sweep_ms,
            rep.alpha_sweep.len()
        );
        say!(
            "{:>6} {:>7} {:>9} {:>9} {:>7} {:>8}",
            "alpha",
            "P@1",
            "Recall@5",
            "Recall@10",
            "MRR",
            "nDCG@10"
        );
        for p in &rep.alpha_sweep {
            let (a, m) = (p.alpha, &p.metrics);
            say!(
                "{a:>6.2} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4}",
                m.p1,
                m.recall5,
                m.recall10,
                m.mrr,
                m.ndcg10
            );
        }
        for b in &rep.best_alpha {
            say!(
                "best a for {:<9}: {:.2} ({:.4})",
                b.metric,
                b.alpha,
                b.value
            );
        }
    }
    print_breakdown(&format!("\nby topic ({head}"), &rep.by_topic, 28, false);
    print_breakdown(
        &format!("by target length in words ({head}"),
        &rep.by_target_length,
        10,
        true,
    );
    say!(
        "\nfailed queries ({head}: target not in the top {fail_k}): {}",
        rep.failed.len()
    );
    for f in rep.failed.iter().take(20) {
        let rank = f
            .rank
            .map_or("not retrieved".into(), |r| format!("rank {r}"));
        say!(
            "  {} [{rank}] {}",
            clean(&f.question.id),
            clean(&f.question.text)
        );
    }
    if rep.failed.len() > 20 {
        say!(
            "  ... {} more (all in {})",
            rep.failed.len() - 20,
            rep.failures_file.display()
        );
    }
}

/// One breakdown: its eta^2, then nDCG@10 and MRR per group (length buckets in order
/// of their lower bound when `by_bound`).
fn print_breakdown(
    title: &str,
    b: &crate::core::retrieval::Breakdown,
    width: usize,
    by_bound: bool,
) {
    let eta = b
        .eta_squared_ndcg10
        .map_or("undefined".into(), |e| format!("{e:.4}"));
    say!("{title}; eta^2 of nDCG@10 = {eta})");
    let mut groups: Vec<_> = b.groups.iter().collect();
    if by_bound {
        groups.sort_by_key(|(label, _)| {
            label
                .split(['-', '+'])
                .next()
                .and_then(|n| n.parse::<usize>().ok())
                .unwrap_or(0)
        });
    }
    for (g, m) in groups {
        say!(
            "  {:<width$} n={:<4} nDCG@10 {:.4}  MRR {:.4}",
            clean(g),
            m.queries,
            m.ndcg10,
            m.mrr
        );
    }
}
