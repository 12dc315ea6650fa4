//! `raglab ingest PATH...`: read, chunk and store documents.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};

use super::Context;
use crate::core::chunk::{Chunker, chunk_document};
use crate::core::corpus::InputLimits;
use crate::store::chunks::ChunkStore;
use crate::store::sources::{SourceSet, collect_files, read_file};

#[derive(Debug, Args)]
pub struct IngestArgs {
    /// Files or folders to ingest.
    #[arg(required = true)]
    pub paths: Vec<PathBuf>,
    /// How to split documents: headers (markdown sections), window, or none.
    #[arg(long, default_value = "headers")]
    pub chunker: Chunker,
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
}

#[derive(Debug, serde::Serialize)]
struct Summary {
    workspace: String,
    chunker: String,
    files: usize,
    documents: usize,
    chunks: usize,
    replaced_chunks: usize,
    total_chunks: usize,
    dataset_version: u64,
    seconds: f64,
    chunks_per_second: f64,
    skipped: Vec<crate::store::sources::Skipped>,
}

pub async fn run(ctx: &Context, args: IngestArgs) -> Result<()> {
    let chunker = match args.chunker {
        Chunker::Window { .. } => Chunker::Window {
            size: args.window_size.unwrap_or(ctx.config.chunking.window_size),
            overlap: args
                .window_overlap
                .unwrap_or(ctx.config.chunking.window_overlap),
        },
        other => other,
    };
    if let Chunker::Window { size, overlap } = chunker
        && (size == 0 || overlap >= size)
    {
        bail!("window overlap ({overlap}) must be smaller than the window size ({size})");
    }
    let started = Instant::now();
    let mut set = SourceSet::default();
    let files = collect_files(&args.paths, &mut set.skipped);
    let bar = ProgressBar::new(files.len() as u64).with_style(
        ProgressStyle::with_template("{spinner} reading {bar:30} {pos}/{len} files {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut seen_records = HashMap::new();
    for (root, path) in &files {
        read_file(
            root,
            path,
            InputLimits::default(),
            &mut seen_records,
            &mut set,
        );
        bar.inc(1);
    }
    bar.finish_and_clear();
    set.dedupe_ids();

    let mut chunks = Vec::new();
    let mut doc_ids = HashSet::new();
    for doc in &set.docs {
        doc_ids.insert(doc.id.clone());
        let mut cs = chunk_document(doc, chunker);
        if cs.is_empty() {
            set.skipped.push(crate::store::sources::Skipped {
                path: doc.origin.clone(),
                reason: "no text to chunk (only headers or front matter)".into(),
            });
        }
        chunks.append(&mut cs);
    }
    let new_chunks = chunks.len();
    let store = ChunkStore::new(&ctx.workspace);
    let written = if set.docs.is_empty() {
        None
    } else {
        Some(store.upsert_documents(chunks, &doc_ids).await?)
    };
    let seconds = started.elapsed().as_secs_f64();
    let summary = Summary {
        workspace: ctx.workspace.root().display().to_string(),
        chunker: chunker.to_string(),
        files: set.files_seen,
        documents: set.docs.len(),
        chunks: new_chunks,
        replaced_chunks: written.map_or(0, |w| w.replaced),
        total_chunks: written.map_or(0, |w| w.total),
        dataset_version: written.map_or(0, |w| w.version),
        seconds,
        chunks_per_second: if seconds > 0.0 {
            new_chunks as f64 / seconds
        } else {
            0.0
        },
        skipped: set.skipped,
    };
    if args.json {
        super::print_json(&summary)?;
    } else {
        println!(
            "ingested {} documents -> {} chunks ({} replaced) in {:.2}s ({:.0} chunks/s) [{}]",
            summary.documents,
            summary.chunks,
            summary.replaced_chunks,
            summary.seconds,
            summary.chunks_per_second,
            summary.chunker
        );
        println!(
            "workspace {} now holds {} chunks (dataset version {})",
            summary.workspace, summary.total_chunks, summary.dataset_version
        );
        if !summary.skipped.is_empty() {
            println!("skipped {}:", summary.skipped.len());
            for s in &summary.skipped {
                println!(
                    "  {}: {}",
                    crate::core::text::sanitize_for_terminal(&s.path),
                    s.reason
                );
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
        let s = super::index::build(ctx, None, false, None).await?;
        if !args.json {
            println!(
                "indexed: sparse +{} -{}, embedded {} chunks ({:.1} chunks/s)",
                s.sparse.added, s.sparse.removed, s.embedded, s.chunks_per_second
            );
        }
    }
    Ok(())
}
