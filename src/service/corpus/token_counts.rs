//! Chunk token counts for the active embedding model's tokenizer (what decides which
//! chunks the C_R variant summarises): taken by
//! `raglab index` for every chunk not yet counted by that model (new chunks, or all of
//! them after the model changed) and stored on the chunk with the model's name.

use std::collections::HashMap;

use anyhow::{Context as _, Result};

use crate::infer::embed::Embedder;
use crate::store::chunks::ChunkStore;
use crate::store::workspace::Workspace;

/// Count the chunks whose count is missing or was taken with another model; returns
/// how many were (re)counted.
pub async fn update_token_counts(ws: &Workspace, embedder: &Embedder) -> Result<usize> {
    let store = ChunkStore::new(ws);
    let model = embedder.info.name.clone();
    let todo: Vec<(String, String)> = store
        .load_all()
        .await?
        .into_iter()
        .filter(|c| c.token_count.is_none() || c.token_model.as_deref() != Some(model.as_str()))
        .map(|c| {
            let text = c.indexed_text();
            (c.id, text)
        })
        .collect();
    if todo.is_empty() {
        return Ok(0);
    }
    let texts: Vec<String> = todo.iter().map(|(_, t)| t.clone()).collect();
    let counts = embedder
        .count_document_tokens(&texts)
        .with_context(|| format!("counting chunk tokens with {model}"))?;
    let by_id: HashMap<String, usize> = todo.into_iter().map(|(id, _)| id).zip(counts).collect();
    store.set_token_counts(&by_id, &model).await?;
    Ok(by_id.len())
}
