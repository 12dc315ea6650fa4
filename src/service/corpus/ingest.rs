//! Ingestion: read files, folders and BEIR corpora, chunk every document, and store
//! the chunks in one atomic lance commit (re-ingesting a document replaces its chunks).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::chunk::{Chunker, chunk_document};
use crate::core::corpus::{InputFormat, InputLimits};
use crate::service::base::beir::{is_beir_folder, read_corpus};
use crate::service::base::{Context, Progress};
use crate::store::chunks::ChunkStore;
use crate::store::sources::{SourceSet, collect_files, read_file};

pub use crate::store::sources::SkippedInput;

/// What to ingest and how to split it.
#[derive(Debug, Clone)]
pub struct IngestRequest {
    pub paths: Vec<PathBuf>,
    pub chunker: Chunker,
    /// Window size and overlap in characters (window chunker); default from config.
    pub window_size: Option<usize>,
    pub window_overlap: Option<usize>,
    /// Follow symbolic links found inside folders (paths named on the command line are
    /// always read).
    pub follow_symlinks: bool,
    /// Which paths are BEIR folders (each passage of their corpus one chunk, whatever
    /// the chunker).
    pub format: InputFormat,
}

#[derive(Debug, Clone, Serialize)]
pub struct IngestSummary {
    pub workspace: String,
    pub chunker: String,
    pub files: usize,
    pub documents: usize,
    pub chunks: usize,
    pub replaced_chunks: usize,
    pub total_chunks: usize,
    pub dataset_version: u64,
    pub seconds: f64,
    pub chunks_per_second: f64,
    /// Inputs refused, each with the reason.
    pub skipped: Vec<SkippedInput>,
}

/// The chunker with the window settings resolved (flag, then config).
fn resolve_chunker(ctx: &Context, req: &IngestRequest) -> Result<Chunker> {
    let chunker = match req.chunker {
        Chunker::Window { .. } => Chunker::Window {
            size: req.window_size.unwrap_or(ctx.config.chunking.window_size),
            overlap: req
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
    Ok(chunker)
}

/// Read every input: BEIR folders strictly (a bad line is an error, nothing is
/// ingested), files leniently (a bad file or record is reported and skipped);
/// `progress` gets (inputs read, inputs), a BEIR folder counting as one.
fn read_inputs(req: &IngestRequest, progress: Progress<'_>) -> Result<SourceSet> {
    let (beir, paths): (Vec<&PathBuf>, Vec<&PathBuf>) =
        req.paths.iter().partition(|p| match req.format {
            InputFormat::Beir => true,
            InputFormat::Files => false,
            InputFormat::Auto => is_beir_folder(p),
        });
    let mut set = SourceSet::default();
    let paths: Vec<PathBuf> = paths.into_iter().cloned().collect();
    let files = collect_files(&paths, req.follow_symlinks, &mut set.skipped);
    let total = beir.len() + files.len();
    for (i, dir) in beir.iter().enumerate() {
        set.docs.extend(read_corpus(dir, InputLimits::default())?);
        set.files_seen += 1;
        progress(i + 1, total);
    }
    let mut seen_records = HashMap::new();
    for (i, (root, path)) in files.iter().enumerate() {
        read_file(
            root,
            path,
            InputLimits::default(),
            &mut seen_records,
            &mut set,
        );
        progress(beir.len() + i + 1, total);
    }
    Ok(set)
}

/// Read, chunk and store; `progress` gets (files read, files). Bad inputs are
/// reported in the summary and the rest is still ingested.
pub async fn ingest(
    ctx: &Context,
    req: &IngestRequest,
    progress: Progress<'_>,
) -> Result<IngestSummary> {
    let chunker = resolve_chunker(ctx, req)?;
    let started = Instant::now();
    let mut set = read_inputs(req, progress)?;
    set.dedupe_ids();

    let mut chunks = Vec::new();
    let mut doc_ids = HashSet::new();
    for doc in &set.docs {
        doc_ids.insert(doc.id.clone());
        let mut cs = chunk_document(doc, chunker);
        if cs.is_empty() {
            set.skipped.push(SkippedInput {
                path: doc.origin.clone(),
                reason: "no text to chunk (only headers or front matter)".into(),
            });
        }
        chunks.append(&mut cs);
    }
    let new_chunks = chunks.len();
    let written = if set.docs.is_empty() {
        None
    } else {
        Some(
            ChunkStore::new(&ctx.workspace)
                .upsert_documents(chunks, &doc_ids)
                .await?,
        )
    };
    let seconds = started.elapsed().as_secs_f64();
    Ok(IngestSummary {
        workspace: ctx.workspace.location(),
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
    })
}
