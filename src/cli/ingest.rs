//! `raglab ingest PATH...`: read, chunk and store documents (files, folders, BEIR
//! corpora).

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use super::{on_progress, progress_bar};
use crate::core::chunk::Chunker;
use crate::core::corpus::InputFormat;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::corpus::{IngestRequest, ingest};
use crate::service::retrieval::IndexRequest;

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files or folders to ingest.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// How to read the paths: auto (a folder holding corpus.jsonl, queries.jsonl and
    /// qrels/ is a BEIR dataset, anything else files), files, or beir (every path a
    /// BEIR folder: each passage of its corpus.jsonl one chunk, id its `_id`, header
    /// path its title).
    #[arg(long, default_value_t = InputFormat::Auto)]
    pub format: InputFormat,
    /// How to split documents: headers (markdown sections; the default), window, or
    /// none. BEIR passages are never split.
    #[arg(long)]
    pub chunker: Option<Chunker>,
    /// Window size in characters (window chunker; default from config, 500).
    #[arg(long)]
    pub window_size: Option<usize>,
    /// Window overlap in characters (window chunker; default from config, 50).
    #[arg(long)]
    pub window_overlap: Option<usize>,
    /// Also build the sparse index and the embeddings afterwards (`raglab index`).
    #[arg(long)]
    pub index: bool,
    /// Print the summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Ingest the files that symbolic links inside the folders point to. Off by
    /// default: a link planted in a corpus (`x.txt -> ~/.aws/credentials`) would carry
    /// a file from anywhere into prompts and a shared workspace.
    #[arg(long)]
    pub follow_symlinks: bool,
}

pub async fn run(ctx: &Context, args: IngestArgs) -> Result<()> {
    if args.format == InputFormat::Beir
        && (args.chunker.is_some() || args.window_size.is_some() || args.window_overlap.is_some())
    {
        bail!("--format beir makes each passage one chunk: drop --chunker and the window flags");
    }
    let req = IngestRequest {
        paths: args.paths,
        chunker: args.chunker.unwrap_or_default(),
        window_size: args.window_size,
        window_overlap: args.window_overlap,
        follow_symlinks: args.follow_symlinks,
        format: args.format,
    };
    let bar = progress_bar("reading files");
    let summary = ingest(ctx, &req, &on_progress(&bar)).await;
    bar.finish_and_clear();
    let summary = summary?;
    if args.json {
        super::json_schema::print(super::json_schema::INGEST, &summary)?;
    } else {
        say!(
            "ingested {} documents -> {} chunks ({} replaced) in {:.2}s ({:.0} chunks/s) [{}]",
            summary.documents,
            summary.chunks,
            summary.replaced_chunks,
            summary.seconds,
            summary.chunks_per_second,
            summary.chunker
        );
        say!(
            "workspace {} now holds {} chunks (dataset version {})",
            clean(&summary.workspace),
            summary.total_chunks,
            summary.dataset_version
        );
        if !summary.skipped.is_empty() {
            say!("skipped {}:", summary.skipped.len());
            for s in &summary.skipped {
                say!("  {}: {}", clean(&s.path), clean(&s.reason));
            }
        }
    }
    if summary.documents == 0 {
        bail!(
            "nothing was ingested ({} inputs skipped)",
            summary.skipped.len()
        );
    }
    if args.index {
        let s = super::index::build(ctx, &IndexRequest::default())
            .await?
            .summary;
        if !args.json {
            say!(
                "indexed: sparse +{} -{}, embedded {} chunks ({:.1} chunks/s)",
                s.sparse.added,
                s.sparse.removed,
                s.embedded,
                s.chunks_per_second
            );
        }
    }
    Ok(())
}
