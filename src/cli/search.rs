//! `raglab search "QUESTION"`: the ranked chunks with every rank and score.

use anyhow::Result;
use clap::Args;

use super::args::{MethodArg, RankingArgs, RerankArgs};
use super::json_schema;
use crate::core::retrieval::Sparse;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::retrieval::{SearchRequest, SearchResult, search};

#[derive(Debug, Args)]
pub struct SearchArgs {
    /// The question, in quotes.
    pub question: String,
    /// Chunks shown (default: config `[retrieval] k`, else 15).
    #[arg(short, long)]
    pub k: Option<usize>,
    #[command(flatten)]
    pub method: MethodArg,
    #[command(flatten)]
    pub ranking: RankingArgs,
    /// The sparse list hybrid and linear fuse with dense: bm25 or tfidf.
    #[arg(long, default_value_t = Sparse::Bm25)]
    pub sparse: Sparse,
    /// Corpus variant to rank: F (full chunks), S (summaries), R (summaries of chunks
    /// over 512 tokens); needs `raglab index --variant V`. Results show the full chunk.
    #[arg(long, default_value_t = crate::core::variant::Variant::Full)]
    pub variant: crate::core::variant::Variant,
    #[command(flatten)]
    pub rerank: RerankArgs,
    /// Threads of a local rerank model.
    #[arg(long)]
    pub threads: Option<i32>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: SearchArgs) -> Result<()> {
    let method = args.method.get(ctx);
    let alpha = args.ranking.alpha_for(ctx, method);
    let req = SearchRequest {
        question: args.question,
        method,
        sparse: args.sparse,
        alpha,
        k: ctx.k(args.k),
        embed: args.ranking.embed(Some(1)),
        ann_nprobes: args.ranking.ann_nprobes(),
        variant: args.variant,
        rerank: args.rerank.setup(ctx)?,
        rerank_threads: args.threads,
    };
    let res = search(ctx, &req).await?;
    if args.json {
        return json_schema::print(json_schema::SEARCH, &res);
    }
    say!(
        "{} ({} sparse side) a={:.2}  R(d;a) = a/(60+r_dense) + (1-a)/(60+r_sparse)",
        method,
        args.sparse,
        alpha
    );
    print_results(&res, args.sparse);
    Ok(())
}

/// The ranked table (rerank stage, each list's rank and score, the fused score, the
/// chunk's id, header path and snippet), the timings and whether generation would
/// abstain.
fn print_results(res: &SearchResult, sparse: Sparse) {
    if let Some(stage) = &res.rerank {
        say!(
            "rerank: {stage}; rank is after the stage, first is the rank before it ({} of its scores cached)",
            res.rerank_cached
        );
    }
    say!(
        "{:>4} {:>5} {:>7} {:>6} {:>8} {:>6} {:>8} {:>9}  chunk",
        "rank",
        "first",
        "rerank",
        "dense",
        "cos",
        sparse.to_string(),
        "score",
        "fused"
    );
    let opt = |v: Option<usize>| v.map_or_else(|| "-".to_string(), |x| x.to_string());
    let optf = |v: Option<f64>, p: usize| v.map_or_else(|| "-".to_string(), |x| format!("{x:.p$}"));
    for row in &res.results {
        let (sparse_rank, sparse_score) = match sparse {
            Sparse::Bm25 => (row.sparse_rank, row.sparse_score),
            Sparse::Tfidf => (row.tfidf_rank, row.tfidf_score),
        };
        say!(
            "{:>4} {:>5} {:>7} {:>6} {:>8} {:>6} {:>8} {:>9}  {}\n     {}\n     {}",
            row.rank,
            row.first_rank,
            optf(row.rerank_score, 4),
            opt(row.dense_rank),
            optf(row.dense_score, 3),
            opt(sparse_rank),
            optf(sparse_score, 2),
            optf(row.fused_score, 5),
            clean(&row.chunk_id),
            clean(row.header_path.as_deref().unwrap_or_default()),
            clean(row.snippet.as_deref().unwrap_or_default()),
        );
    }
    let t = &res.timings_ms;
    say!(
        "timings: embed {:.1} ms, dense {:.2} ms, bm25 {:.2} ms, tfidf {:.2} ms, fusion {:.3} ms",
        t.embed_ms,
        t.dense_ms,
        t.bm25_ms,
        t.tfidf_ms,
        t.fusion_ms
    );
    if res.rerank.is_some() {
        say!("rerank {:.1} ms", res.rerank_ms);
    }
    if let (Some(true), Some(c), Some(t)) = (res.would_abstain, res.best_cosine, res.abstain_below)
    {
        say!(
            "best cosine {c:.3} < abstain_below {t:.2}: generation would answer that no relevant guidance was found"
        );
    }
}
