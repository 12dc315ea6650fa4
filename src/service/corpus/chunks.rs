//! The ingested corpus: its chunks, for browsing (TUI) and listing (CLI).

use std::collections::HashMap;

use anyhow::{Result, bail};

use super::summarise::{current_summaries, summary_texts};
use crate::core::chunk::Chunk;
use crate::core::summary::SummaryRecord;
use crate::service::base::Context;
use crate::store::chunks::ChunkStore;

/// Every chunk of the workspace; a clear error when nothing was ingested yet.
pub async fn chunks(ctx: &Context) -> Result<Vec<Chunk>> {
    let store = ChunkStore::new(&ctx.workspace);
    store.open().await?;
    Ok(store.load_all().await?)
}

/// Every chunk, or none when nothing was ingested yet (the TUI opens on an empty
/// workspace and says so).
pub async fn chunks_or_empty(ctx: &Context) -> Result<Vec<Chunk>> {
    chunks_or_empty_counting(ctx, &mut |_, _| {}).await
}

/// [`chunks_or_empty`], calling `on_rows(read, total)` as batches arrive.
pub async fn chunks_or_empty_counting(
    ctx: &Context,
    on_rows: &mut (dyn FnMut(usize, usize) + Send),
) -> Result<Vec<Chunk>> {
    Ok(ChunkStore::new(&ctx.workspace)
        .load_all_counting(on_rows)
        .await?)
}

/// The chunks of one document (all of them without `doc`); an unknown document is an
/// error.
pub fn of_document<'a>(chunks: &'a [Chunk], doc: Option<&str>) -> Result<Vec<&'a Chunk>> {
    let sel: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| doc.is_none_or(|d| c.doc_id == d))
        .collect();
    if let (true, Some(d)) = (sel.is_empty(), doc) {
        bail!("no document `{d}` in this workspace");
    }
    Ok(sel)
}

/// The summary of a chunk's current text (`raglab summarise`), if any.
pub async fn summary_of(ctx: &Context, chunk: &Chunk) -> Result<Option<SummaryRecord>> {
    let mut current = current_summaries(&ctx.workspace, std::slice::from_ref(chunk)).await?;
    Ok(current.remove(&chunk.id))
}

/// Every chunk's current summary text (chunk id -> summary), for browsing.
pub async fn summaries(ctx: &Context, chunks: &[Chunk]) -> Result<HashMap<String, String>> {
    summary_texts(&ctx.workspace, chunks).await
}

/// One chunk by id, or an error pointing at `raglab corpus list`.
pub fn find<'a>(chunks: &'a [Chunk], id: &str) -> Result<&'a Chunk> {
    match chunks.iter().find(|c| c.id == id) {
        Some(c) => Ok(c),
        None => bail!("no chunk `{id}` in this workspace (see `raglab corpus list`)"),
    }
}
