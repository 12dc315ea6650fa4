//! `raglab index`: build or update the BM25/TF-IDF index and the dense vectors.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::args::ShardArg;
use super::{json_schema, on_progress, progress_bar};
use crate::core::variant::Variant;
use crate::service::retrieval::{IndexReport, IndexRequest, build_index};
use crate::service::{Context, ModelChoice};

#[derive(Debug, Args)]
pub struct IndexArgs {
    /// GGUF embedding model (default: config, else the MiniLM GGUF from setup).
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    /// Only the sparse index (no embeddings).
    #[arg(long)]
    pub sparse_only: bool,
    /// Threads for embedding (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Also cluster the vectors as `--ann` searches do (in memory, about sqrt(n)/2
    /// lists) and report the lists and the time; nothing is written: `--ann` clusters
    /// on its first search.
    #[arg(long, conflicts_with_all = ["shard", "sparse_only"])]
    pub ann: bool,
    /// Corpus variant to index: F (full chunks), S (every chunk's summary), R (the
    /// summary of chunks over 512 tokens); S and R need `raglab summarise` first.
    #[arg(long, default_value_t = Variant::Full)]
    pub variant: Variant,
    /// Embed only this shard's chunks, appended beside the other shards' vectors; a
    /// whole `raglab index` afterwards builds the sparse index and finds every vector
    /// current.
    #[command(flatten)]
    pub shard: ShardArg,
    /// Append the fresh vectors every this many chunks, so an interrupted run
    /// resumes there.
    #[arg(long, default_value_t = crate::service::retrieval::CHECKPOINT_CHUNKS)]
    pub checkpoint_every: usize,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

/// Build the indexes with a progress bar (also used by `ingest --index`).
pub async fn build(ctx: &Context, req: &IndexRequest) -> Result<IndexReport> {
    let bar = progress_bar("embedding chunks");
    let report = build_index(ctx, req, &on_progress(&bar)).await;
    bar.finish_and_clear();
    report
}

pub async fn run(ctx: &Context, args: IndexArgs) -> Result<()> {
    let req = IndexRequest {
        embed: ModelChoice {
            model: args.embed_model,
            threads: args.threads,
        },
        sparse_only: args.sparse_only,
        ann: args.ann,
        variant: args.variant,
        shard: args.shard.shard,
        checkpoint_every: args.checkpoint_every,
    };
    if req.shard.is_some() && req.sparse_only {
        anyhow::bail!("--shard embeds chunks: it cannot be combined with --sparse-only");
    }
    let report = build(ctx, &req).await?;
    if let (Some(parts), Some(secs)) = (report.ann_partitions, report.ann_seconds) {
        tell!(
            "ANN (in-memory IVF, clustered on each process's first --ann search): {parts} lists, clustered in {secs:.1}s"
        );
    }
    if args.json {
        return json_schema::print(json_schema::INDEX, &report);
    }
    if let Some(m) = &report.token_model
        && report.tokens_counted > 0
    {
        tell!(
            "token counts: {} chunks counted with {m}'s tokenizer",
            report.tokens_counted
        );
    }
    if report.variant != Variant::Full {
        tell!(
            "corpus {}: {} of {} chunks indexed under their summary",
            report.variant.paper_name(),
            report.summarised,
            report.summary.chunks
        );
    }
    let s = report.summary;
    if let Some(shard) = req.shard {
        say!(
            "{} chunks: shard {shard} embedded {} chunks in {:.1}s ({:.1} chunks/s); sparse index left to a whole `raglab index`",
            s.chunks,
            s.embedded,
            s.embed_seconds,
            s.chunks_per_second
        );
        return Ok(());
    }
    say!(
        "{} chunks: sparse index +{} -{} ({} unchanged); embedded {} chunks in {:.1}s ({:.1} chunks/s)",
        s.chunks,
        s.sparse.added,
        s.sparse.removed,
        s.sparse.unchanged,
        s.embedded,
        s.embed_seconds,
        s.chunks_per_second
    );
    Ok(())
}
