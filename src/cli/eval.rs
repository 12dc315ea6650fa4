//! `raglab eval retrieval|mcqa|abstention`: parse the flags, call the evaluation
//! service, render its report as text or JSON.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use super::args::{RankingArgs, ShardArg};
use super::{json_schema, on_progress, progress_bar};
use crate::core::retrieval::Breakdown;
use crate::core::retrieval::{Method, Sparse};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::evaluate::evaluate_models;
use crate::service::evaluate::{
    DEFAULT_BATCH, QuerySet, RetrievalEval, RetrievalReport, abstention_sweep, evaluate_retrieval,
    rank_shard,
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
    /// Score TREC run files from any tool against qrels (trec_eval's metrics, with
    /// bpref, Judged@k and Hole@k beside them) and compare them with paired
    /// significance tests.
    Runs(RunsArgs),
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Qrels: TREC's `qid 0 docid rel` or BEIR's `query-id corpus-id score` (header
    /// line skipped).
    #[arg(long)]
    pub qrels: PathBuf,
    /// Recall, nDCG, Judged and Hole cutoffs.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub k: Vec<usize>,
    /// The run files (`qid Q0 docid rank score tag`; a document ranked twice for one
    /// query is refused, as trec_eval refuses it).
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<PathBuf>,
    #[command(flatten)]
    pub test: super::compare::TestArgs,
}

#[derive(Debug, Args)]
pub struct AbstentionArgs {
    /// JSONL questions `{id, text}` the corpus can answer.
    #[arg(long)]
    pub answerable: PathBuf,
    /// JSONL questions `{id, text}` the corpus cannot answer.
    #[arg(long)]
    pub unanswerable: PathBuf,
    /// Lowest top-1 cosine threshold of the sweep.
    #[arg(long, default_value_t = 0.05)]
    pub from: f64,
    /// Highest threshold of the sweep.
    #[arg(long, default_value_t = 0.95)]
    pub to: f64,
    /// Step between thresholds.
    #[arg(long, default_value_t = 0.05)]
    pub step: f64,
    /// GGUF embedding model (default: config, else the MiniLM GGUF from setup).
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct RetrievalArgs {
    /// JSONL queries `{id, text, relevant: [chunk ids], topic?}`.
    #[arg(long, required_unless_present = "beir")]
    pub queries: Option<PathBuf>,
    /// Qrels overriding `relevant` in the queries file: TREC's `qid 0 docid rel` or
    /// BEIR's `query-id corpus-id score` (header line skipped); grades count in nDCG.
    /// With qrels (or `--beir`), bpref, Judged@k and Hole@k are reported too.
    #[arg(long, conflicts_with = "beir")]
    pub qrels: Option<PathBuf>,
    /// A BEIR folder: evaluate the queries of its queries.jsonl that
    /// qrels/SPLIT.tsv judges, with its graded judgements (ingest its corpus first:
    /// `raglab ingest DIR`).
    #[arg(long, conflicts_with = "queries")]
    pub beir: Option<PathBuf>,
    /// The split of `--beir` whose qrels are used (qrels/SPLIT.tsv) [default: test].
    #[arg(long, requires = "beir")]
    pub split: Option<String>,
    /// Methods to evaluate (comma-separated).
    #[arg(long, value_delimiter = ',', default_value = "bm25,tfidf,dense,hybrid")]
    pub methods: Vec<Method>,
    /// Sparse sides that hybrid and linear fuse with dense (comma-separated: bm25,
    /// tfidf); each is evaluated. The source paper's best hybrids used TF-IDF.
    #[arg(long, value_delimiter = ',', default_value = "bm25")]
    pub sparse: Vec<Sparse>,
    /// Sweep a over 0.50..0.95 for hybrid and linear instead of one alpha.
    #[arg(long)]
    pub alpha_sweep: bool,
    /// Recall and nDCG cutoffs to report besides the paper's table; the largest is the
    /// failure cutoff.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub k: Vec<usize>,
    /// Write one TREC run file per configuration into this folder, named by the whole
    /// configuration (`hybrid-tfidf-a0.75-all-MiniLM-L6-v2.trec`).
    #[arg(long)]
    pub run_out: Option<PathBuf>,
    /// Write every query's target ranks and scores under dense, BM25, TF-IDF and each
    /// fused list, and each list's top-1 chunk, to this file (`.csv`, `.jsonl` or
    /// `.parquet`).
    #[arg(long)]
    pub per_query: Option<PathBuf>,
    #[command(flatten)]
    pub ranking: RankingArgs,
    /// Every configuration evaluated twice: as ranked and through the rerank stage
    /// (labelled `+rerank10to5`); with `--shard`, the stage runs at `--merge`.
    #[command(flatten)]
    pub rerank: super::args::RerankArgs,
    /// Evaluate with each of these GGUF embedding models (comma-separated; each needs
    /// `raglab index --embed-model M`) and report the best configuration per model and
    /// metric.
    #[arg(long, value_delimiter = ',', conflicts_with = "embed_model")]
    pub embed_models: Vec<PathBuf>,
    /// Corpus variants to evaluate and compare (comma-separated: F full chunks, S
    /// summaries, R summaries of chunks over 512 tokens; each needs `raglab index
    /// --variant V`), with the best configuration per model, variant and metric.
    #[arg(long, value_delimiter = ',')]
    pub variants: Vec<crate::core::variant::Variant>,
    /// Threads for query embedding (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Length of each retriever's ranked list before fusion (reciprocal rank is
    /// computed over it, as trec_eval's over the whole run).
    #[arg(long, default_value_t = DEFAULT_DEPTH)]
    pub depth: usize,
    /// Rank only this shard's queries and store their lists in the workspace under
    /// `--batch` (no report: `--merge` computes it over every shard's lists).
    #[command(flatten)]
    pub shard: ShardArg,
    /// The name the shards of one evaluation store their lists under.
    #[arg(long, default_value = DEFAULT_BATCH)]
    pub batch: String,
    /// Rank nothing: compute the report over the lists the shards of `--batch`
    /// stored (every query of `--queries` or `--beir` must have them).
    #[arg(long, conflicts_with_all = ["shard", "embed_models"])]
    pub merge: bool,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, cmd: EvalCmd) -> Result<()> {
    match cmd {
        EvalCmd::Retrieval(args) => retrieval(ctx, args).await,
        EvalCmd::Mcqa(args) => super::mcqa::run(ctx, args).await,
        EvalCmd::Abstention(args) => abstention(ctx, args).await,
        EvalCmd::Runs(args) => {
            let mut rep = crate::service::evaluate::evaluate_runs(
                &args.qrels,
                &args.runs,
                &args.k,
                &args.test.request(),
            )?;
            if let Some(before) = &args.test.before {
                crate::service::evaluate::against_before(&mut rep, before)?;
            }
            super::compare::render(&rep, args.test.json)
        }
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
        return json_schema::print(json_schema::ABSTENTION, &rep);
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

/// The query set the flags name: a BEIR folder (its split, or the default) before
/// a questions file with its optional qrels; neither is an error.
fn query_set(
    beir: Option<PathBuf>,
    queries: Option<PathBuf>,
    split: Option<String>,
    qrels: Option<PathBuf>,
) -> Result<QuerySet> {
    Ok(match (beir, queries) {
        (Some(dir), _) => QuerySet::Beir {
            dir,
            split: split.unwrap_or_else(|| crate::core::beir::DEFAULT_SPLIT.to_string()),
        },
        (None, Some(file)) => QuerySet::Questions { file, qrels },
        (None, None) => bail!("give --queries FILE or --beir DIR"),
    })
}

async fn retrieval(ctx: &Context, args: RetrievalArgs) -> Result<()> {
    let queries = query_set(args.beir, args.queries, args.split, args.qrels)?;
    let req = RetrievalEval {
        queries,
        methods: args.methods,
        sparse: args.sparse,
        alpha_sweep: args.alpha_sweep,
        alpha: args.ranking.alpha_set(ctx),
        k: args.k,
        run_out: args.run_out,
        per_query: args.per_query,
        embed: args.ranking.embed(args.threads),
        depth: args.depth,
        ann_nprobes: args.ranking.ann_nprobes(),
        variant: crate::core::variant::Variant::Full,
        batch: args.batch,
        merge: args.merge,
        rerank: args.rerank.setup(ctx)?,
        rerank_threads: args.threads,
    };
    if !args.variants.is_empty() {
        if args.shard.shard.is_some() || args.merge {
            bail!("--variants compares the variants in one process: drop --shard and --merge");
        }
        return several_variants(ctx, &req, &args.embed_models, &args.variants, args.json).await;
    }
    if let Some(shard) = args.shard.shard {
        if req.rerank.is_some() {
            bail!("a shard only ranks: give the rerank flags to `eval retrieval --merge`");
        }
        if !args.embed_models.is_empty() {
            bail!("--shard ranks with one embedding model: give --embed-model");
        }
        let bar = progress_bar("embedding queries");
        let sum = rank_shard(ctx, &req, shard, &on_progress(&bar)).await;
        bar.finish_and_clear();
        let sum = sum?;
        if args.json {
            return json_schema::print(json_schema::EVAL_SHARD, &sum);
        }
        say!(
            "shard {} of batch `{}`: ranked {} of {} queries in {:.1}s, stored in {}; `raglab eval retrieval --merge --batch {}` reports over every shard",
            sum.shard,
            clean(&sum.batch),
            sum.ranked,
            sum.queries,
            sum.seconds,
            clean(&sum.dataset),
            clean(&sum.batch)
        );
        return Ok(());
    }
    if !args.embed_models.is_empty() {
        return several_models(ctx, &req, &args.embed_models, args.json).await;
    }
    let bar = progress_bar("embedding queries");
    let rep = evaluate_retrieval(ctx, &req, &on_progress(&bar)).await;
    bar.finish_and_clear();
    let rep = rep?;
    // On stderr in both formats (the JSON report holds it too).
    if let Some(w) = rep.missing_targets.warning("they count as not retrieved") {
        tell!("{w}");
    }
    if args.json {
        return json_schema::print(json_schema::EVAL_RETRIEVAL, &rep);
    }
    render(&rep);
    Ok(())
}

/// `--embed-models`: one report per model, then the best configuration per model
/// and metric.
async fn several_models(
    ctx: &Context,
    req: &RetrievalEval,
    models: &[PathBuf],
    json: bool,
) -> Result<()> {
    let bar = progress_bar("embedding queries");
    let rep = evaluate_models(ctx, req, models, &on_progress(&bar)).await;
    bar.finish_and_clear();
    let rep = rep?;
    for r in &rep.reports {
        if let Some(w) = r.missing_targets.warning("they count as not retrieved") {
            tell!("{w}");
        }
    }
    if json {
        return json_schema::print(json_schema::EVAL_MODELS, &rep);
    }
    for r in &rep.reports {
        say!(
            "== {} ==",
            clean(r.embedding_model.as_deref().unwrap_or("-"))
        );
        render(r);
        say!();
    }
    say!("best configuration per model and metric");
    say!(
        "{:<28} {:<9} {:<8} {:<6} {:>6} {:>7}",
        "model",
        "metric",
        "method",
        "sparse",
        "alpha",
        "value"
    );
    for b in &rep.best {
        say!(
            "{:<28} {:<9} {:<8} {:<6} {:>6} {:>7.4}",
            clean(&b.model),
            b.metric,
            b.method.to_string(),
            b.sparse.map_or("-".into(), |s| s.to_string()),
            b.alpha.map_or("-".into(), |a| format!("{a:.2}")),
            b.value
        );
    }
    Ok(())
}

/// `--variants`: one report per model and variant, then the best configuration per
/// model, variant and metric, and the best variant per model and metric.
async fn several_variants(
    ctx: &Context,
    req: &RetrievalEval,
    models: &[PathBuf],
    variants: &[crate::core::variant::Variant],
    json: bool,
) -> Result<()> {
    use crate::service::evaluate::{VariantBest, evaluate_variants};
    let bar = progress_bar("embedding queries");
    let rep = evaluate_variants(ctx, req, models, variants, &on_progress(&bar)).await;
    bar.finish_and_clear();
    let rep = rep?;
    for r in &rep.reports {
        if let Some(w) = r.missing_targets.warning("they count as not retrieved") {
            tell!("{w}");
        }
    }
    if json {
        return json_schema::print(json_schema::EVAL_VARIANTS, &rep);
    }
    for r in &rep.reports {
        say!(
            "== {} · corpus {} ({} chunks summarised) ==",
            clean(r.embedding_model.as_deref().unwrap_or("-")),
            r.variant.paper_name(),
            r.summarised
        );
        render(r);
        say!();
    }
    let table = |title: &str, rows: &[VariantBest]| {
        say!("{title}");
        say!(
            "{:<28} {:<4} {:<9} {:<8} {:<6} {:>6} {:>7}",
            "model",
            "corp",
            "metric",
            "method",
            "sparse",
            "alpha",
            "value"
        );
        for v in rows {
            let b = &v.best;
            say!(
                "{:<28} {:<4} {:<9} {:<8} {:<6} {:>6} {:>7.4}",
                clean(&b.model),
                v.variant.paper_name(),
                b.metric,
                b.method.to_string(),
                b.sparse.map_or("-".into(), |s| s.to_string()),
                b.alpha.map_or("-".into(), |a| format!("{a:.2}")),
                b.value
            );
        }
    };
    table("best configuration per model, corpus and metric", &rep.best);
    say!();
    table("best corpus per model and metric", &rep.best_overall);
    Ok(())
}

/// The report as text: the metrics table, the alpha sweep, the breakdowns, the
/// failed queries and the files written.
fn render(rep: &RetrievalReport) {
    render_metrics(rep);
    render_judged(rep);
    render_sweep(rep);
    print_breakdowns("\nby topic", rep, |r| &r.by_topic, false);
    print_breakdowns(
        "\nby target length in words",
        rep,
        |r| &r.by_target_length,
        true,
    );
    render_failures(rep);
    if let Some(p) = &rep.per_query_file {
        say!("per-query target ranks: {}", p.display());
    }
    for r in rep.results.iter().filter_map(|r| r.run_file.as_ref()) {
        say!("run file: {}", r.display());
    }
}

/// What was evaluated and each configuration's mean metrics.
fn render_metrics(rep: &RetrievalReport) {
    let head = &rep.breakdown_method;
    let ks: Vec<String> = rep.results.first().map_or_else(Vec::new, |r| {
        r.at_k_columns().into_iter().map(|(name, _)| name).collect()
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
    if let (Some(stage), Some(st)) = (&rep.rerank, &rep.rerank_stats) {
        say!(
            "rerank: {} ({} pairs scored in {:.1} s, {} from the cache); `+{}` configurations are reranked",
            clean(stage),
            st.scored,
            st.scoring_ms / 1e3,
            st.cached,
            rep.results
                .iter()
                .find_map(|r| r.label.split_once('+').map(|(_, s)| s.to_string()))
                .unwrap_or_default()
        );
    }
    say!(
        "{:<20} {:>7} {:>9} {:>9} {:>7} {:>8} {}",
        "configuration",
        "P@1",
        "Recall@5",
        "Recall@10",
        "MRR",
        "nDCG@10",
        ks.join("  ")
    );
    for res in &rep.results {
        let extra: Vec<String> = res
            .at_k_columns()
            .iter()
            .map(|(_, v)| format!("{v:.4}"))
            .collect();
        let m = &res.metrics;
        say!(
            "{:<20} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4} {}",
            res.label,
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
            res.label,
            if n == 1 { "query" } else { "queries" },
            res.metrics.queries
        );
    }
}

/// Each configuration's bpref, Judged@k and Hole@k, when the judgements came from a
/// qrels file (over the same queries as its metrics).
fn render_judged(rep: &RetrievalReport) {
    let Some(first) = rep.results.iter().find_map(|r| r.judgements.as_ref()) else {
        return;
    };
    say!(
        "\nincomplete judgements (the qrels file): bpref (trec_eval); Judged@k = judged chunks in the top k / min(k, retrieved); Hole@k = top-k chunks judged for no query / k"
    );
    let judged: Vec<String> = first
        .at_k
        .iter()
        .map(|c| format!("Judged@{}", c.k))
        .collect();
    let holes: Vec<String> = first.at_k.iter().map(|c| format!("Hole@{}", c.k)).collect();
    say!(
        "{:<20} {:>7} {} {}",
        "configuration",
        "bpref",
        judged.iter().map(|h| format!("{h:>9}")).collect::<String>(),
        holes.iter().map(|h| format!("{h:>9}")).collect::<String>()
    );
    for res in &rep.results {
        let Some(j) = &res.judgements else { continue };
        say!(
            "{:<20} {:>7.4} {} {}",
            res.label,
            j.bpref,
            j.at_k
                .iter()
                .map(|c| format!("{:>9.4}", c.judged))
                .collect::<String>(),
            j.at_k
                .iter()
                .map(|c| format!("{:>9.4}", c.hole))
                .collect::<String>()
        );
    }
}

/// Each configuration's failed queries, and the headline configuration's first ones.
fn render_failures(rep: &RetrievalReport) {
    let head = &rep.breakdown_method;
    let fail_k = rep.failure_cutoff;
    let fails: Vec<String> = rep
        .results
        .iter()
        .map(|r| format!("{} {}", r.label, r.failed))
        .collect();
    say!(
        "\nfailed queries (target not in the top {fail_k}): {}",
        fails.join(", ")
    );
    say!(
        "failed queries of {head} (recorded with its configuration in {}): {}",
        rep.failures_file.display(),
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
        say!("  ... {} more", rep.failed.len() - 20);
    }
}

/// The alpha sweep of each fused method and sparse side, and its best alphas.
fn render_sweep(rep: &crate::service::evaluate::RetrievalReport) {
    if rep.alpha_sweep.is_empty() {
        return;
    }
    say!(
        "\nalpha sweep (hybrid: weighted RRF, c = 60; linear: min-max fusion; {:.1} ms for {} points)",
        rep.seconds.sweep_ms,
        rep.alpha_sweep.len()
    );
    say!(
        "{:<14} {:>6} {:>7} {:>9} {:>9} {:>7} {:>8}",
        "fusion",
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
            "{:<14} {a:>6.2} {:>7.4} {:>9.4} {:>9.4} {:>7.4} {:>8.4}",
            format!("{}-{}", p.method, p.sparse),
            m.p1,
            m.recall5,
            m.recall10,
            m.mrr,
            m.ndcg10
        );
    }
    for b in &rep.best_alpha {
        say!(
            "best a for {:<14} {:<9}: {:.2} ({:.4})",
            format!("{}-{}", b.method, b.sparse),
            b.metric,
            b.alpha,
            b.value
        );
    }
}

/// One breakdown for every configuration: nDCG@10 per group (rows) and
/// configuration (columns), group sizes, and each configuration's eta^2 of nDCG@10
/// (length buckets in order of their lower bound when `by_bound`).
fn print_breakdowns(
    title: &str,
    rep: &RetrievalReport,
    of: impl Fn(&crate::service::evaluate::MethodResult) -> &Breakdown,
    by_bound: bool,
) {
    let width = 28;
    let mut groups: Vec<&String> = rep
        .results
        .iter()
        .flat_map(|r| of(r).groups.keys())
        .collect();
    groups.sort();
    groups.dedup();
    if by_bound {
        groups.sort_by_key(|label| crate::core::stats::bucket_lower_bound(label));
    }
    let cols: Vec<String> = rep
        .results
        .iter()
        .map(|r| format!("{:>20}", r.label))
        .collect();
    say!("{title} (nDCG@10)");
    say!("  {:<width$} {:>5} {}", "group", "n", cols.join(" "));
    for g in groups {
        let n = rep
            .results
            .iter()
            .filter_map(|r| of(r).groups.get(g))
            .map(|m| m.queries)
            .max()
            .unwrap_or(0);
        let vals: Vec<String> = rep
            .results
            .iter()
            .map(|r| {
                of(r)
                    .groups
                    .get(g)
                    .map_or(format!("{:>20}", "-"), |m| format!("{:>20.4}", m.ndcg10))
            })
            .collect();
        say!("  {:<width$} {n:>5} {}", clean(g), vals.join(" "));
    }
    let etas: Vec<String> = rep
        .results
        .iter()
        .map(|r| {
            of(r)
                .eta_squared_ndcg10
                .map_or(format!("{:>20}", "undefined"), |e| format!("{e:>20.4}"))
        })
        .collect();
    say!("  {:<width$} {:>5} {}", "eta^2", "", etas.join(" "));
}
