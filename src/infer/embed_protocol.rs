//! What an [`super::embed::Embedder`] handle and its worker say to each other: the
//! worker is a model on a thread ([`super::embed`]) or an endpoint
//! ([`super::embed_endpoint`]); both answer these requests and normalise alike.

use std::sync::mpsc;

use super::Result;

/// What the worker reports about the loaded model.
#[derive(Debug, Clone)]
pub struct EmbedInfo {
    pub name: String,
    pub dim: usize,
    pub max_tokens: usize,
    /// CPU or the GPU (for an endpoint: its URL), and the layers offloaded.
    pub placement: super::device::Placement,
}

pub(super) type Reply = mpsc::Sender<Result<Vec<Vec<f32>>>>;

/// What an [`super::embed::Embedder`] handle asks its worker (a model, or an endpoint:
/// [`super::embed_endpoint`]).
pub(super) enum Request {
    Embed(Vec<String>, Reply),
    Tokens(String, mpsc::Sender<Vec<i32>>),
    /// How many tokens each text is, special tokens included and nothing cut.
    Count(Vec<String>, mpsc::Sender<Result<Vec<usize>>>),
}

/// L2-normalise (llama.cpp's pooled vectors are not normalised).
pub fn normalise(v: &[f32]) -> Vec<f32> {
    let norm = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    if norm == 0.0 {
        return v.to_vec();
    }
    v.iter().map(|x| (f64::from(*x) / norm) as f32).collect()
}
