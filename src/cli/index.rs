//! `raglab index`: build or update the BM25/TF-IDF index and the dense vectors.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::{Context, print_json};
use crate::service::retrieval::{IndexSummary, Retriever, embed_config};

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
    /// Also build a lance IVF_FLAT index on the vectors for `--ann` search.
    #[arg(long)]
    pub ann: bool,
    #[arg(long)]
    pub json: bool,
}

pub fn progress_bar(what: &str) -> ProgressBar {
    ProgressBar::new(0).with_style(
        ProgressStyle::with_template(&format!(
            "{{spinner}} {what} {{bar:30}} {{pos}}/{{len}} {{per_sec}} eta {{eta}}"
        ))
        .unwrap_or_else(|_| ProgressStyle::default_bar()),
    )
}

pub async fn build(
    ctx: &Context,
    embed_model: Option<PathBuf>,
    sparse_only: bool,
    threads: Option<i32>,
) -> Result<IndexSummary> {
    let cfg = (!sparse_only).then(|| embed_config(ctx, embed_model, threads));
    let mut r = Retriever::open(&ctx.workspace, cfg.as_ref()).await?;
    let bar = progress_bar("embedding chunks");
    let s = r
        .build(&ctx.workspace, &|done, total| {
            bar.set_length(total as u64);
            bar.set_position(done as u64);
        })
        .await?;
    bar.finish_and_clear();
    Ok(s)
}

pub async fn run(ctx: &Context, args: IndexArgs) -> Result<()> {
    let model = args.embed_model.clone();
    let s = build(ctx, args.embed_model, args.sparse_only, args.threads).await?;
    if args.ann && !args.sparse_only {
        let cfg = crate::service::retrieval::embed_config(ctx, model, Some(1));
        let name = crate::infer::backend::model_name(&cfg.model);
        let t = std::time::Instant::now();
        let parts = crate::store::vectors::VectorStore::new(&ctx.workspace, &name)
            .build_ann()
            .await?;
        eprintln!(
            "ANN index: IVF_FLAT, {parts} partitions, built in {:.1}s",
            t.elapsed().as_secs_f64()
        );
    }
    if args.json {
        return print_json(&s);
    }
    println!(
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
