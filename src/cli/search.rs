//! `raglab search "QUESTION"`: the ranked chunks with every rank and score.

use anyhow::Result;
use clap::Args;

use super::args::{MethodArg, RankingArgs};
use super::print_json;
use crate::core::fusion::Fusion;
use crate::core::text::{sanitize_for_terminal as clean, snippet};
use crate::service::Context;
use crate::service::retrieval::{DEFAULT_DEPTH, open_for};

#[derive(Debug, Args)]
pub struct SearchArgs {
    pub question: String,
    #[arg(short, long)]
    pub k: Option<usize>,
    #[command(flatten)]
    pub method: MethodArg,
    #[command(flatten)]
    pub ranking: RankingArgs,
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: SearchArgs) -> Result<()> {
    let method = args.method.get(ctx);
    let alpha = args.ranking.alpha(ctx);
    let k = ctx.k(args.k);
    let r = open_for(ctx, method, &args.ranking.embed(Some(1))).await?;
    let depth = DEFAULT_DEPTH.max(k);
    let (lists, timings) = match args.ranking.ann_nprobes() {
        Some(nprobes) => {
            r.query_ann(&ctx.workspace, &args.question, depth, nprobes)
                .await?
        }
        None => r.query(&args.question, depth)?,
    };
    // Single-list methods still show the hybrid fused score beside their ranks.
    let fusion = method.fusion(alpha).unwrap_or(Fusion::Rrf {
        alpha,
        c: crate::core::fusion::RRF_C,
    });
    let fused = lists.candidates.fuse(fusion);
    let rank_in = |list: &[crate::core::fusion::Scored], id: &str| {
        list.iter()
            .position(|s| s.id == id)
            .map(|i| (i + 1, list[i].score))
    };
    let ids: Vec<&str> = lists.ranking(method, alpha);
    let rows: Vec<serde_json::Value> = ids
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| {
            let c = r.chunk(id);
            let d = rank_in(&lists.dense, id);
            let s = rank_in(&lists.bm25, id);
            let f = fused.iter().find(|h| h.id == *id).map(|h| h.fused);
            serde_json::json!({
                "rank": i + 1, "chunk_id": id,
                "dense_rank": d.map(|x| x.0), "dense_score": d.map(|x| x.1),
                "sparse_rank": s.map(|x| x.0), "sparse_score": s.map(|x| x.1),
                "tfidf_rank": rank_in(&lists.tfidf, id).map(|x| x.0),
                "fused_score": f,
                "header_path": c.map(crate::core::chunk::Chunk::path_label),
                "snippet": c.map(|c| snippet(&c.text, 100)),
            })
        })
        .collect();
    let best_cosine = lists.dense.first().map(|s| s.score);
    let threshold = ctx.config.retrieval.abstain_below;
    let abstain = match (best_cosine, threshold) {
        (Some(c), Some(t)) => Some(crate::core::abstention::abstains(c, t)),
        _ => None,
    };
    if args.json {
        return print_json(&serde_json::json!({
            "question": args.question, "method": method.to_string(), "alpha": alpha,
            "fusion": "R(d; a) = a/(60 + r_dense(d)) + (1 - a)/(60 + r_sparse(d))",
            "embedding_model": r.model_name, "timings_ms": timings, "results": rows,
            "best_cosine": best_cosine, "abstain_below": threshold, "would_abstain": abstain,
        }));
    }
    println!(
        "{} a={:.2}  R(d;a) = a/(60+r_dense) + (1-a)/(60+r_sparse)",
        method, alpha
    );
    println!(
        "{:>4} {:>6} {:>8} {:>6} {:>8} {:>9}  chunk",
        "rank", "dense", "cos", "bm25", "score", "fused"
    );
    let opt = |v: &serde_json::Value| {
        v.as_u64()
            .map_or_else(|| "-".to_string(), |x| x.to_string())
    };
    let optf = |v: &serde_json::Value, p: usize| {
        v.as_f64()
            .map_or_else(|| "-".to_string(), |x| format!("{x:.p$}"))
    };
    for row in &rows {
        println!(
            "{:>4} {:>6} {:>8} {:>6} {:>8} {:>9}  {}\n     {}\n     {}",
            row["rank"],
            opt(&row["dense_rank"]),
            optf(&row["dense_score"], 3),
            opt(&row["sparse_rank"]),
            optf(&row["sparse_score"], 2),
            optf(&row["fused_score"], 5),
            clean(row["chunk_id"].as_str().unwrap_or_default()),
            clean(row["header_path"].as_str().unwrap_or_default()),
            clean(row["snippet"].as_str().unwrap_or_default()),
        );
    }
    println!(
        "timings: embed {:.1} ms, dense {:.2} ms, bm25 {:.2} ms, tfidf {:.2} ms, fusion {:.3} ms",
        timings.embed_ms, timings.dense_ms, timings.bm25_ms, timings.tfidf_ms, timings.fusion_ms
    );
    if let (Some(true), Some(c), Some(t)) = (abstain, best_cosine, threshold) {
        println!(
            "best cosine {c:.3} < abstain_below {t:.2}: generation would answer that no relevant guidance was found"
        );
    }
    Ok(())
}
