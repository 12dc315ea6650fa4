//! llama.cpp inference through `llama-cpp-2`: the embedder, the streaming generator and
//! the grammar-bound judge. Everything here is blocking; callers run it on worker
//! threads (one thread owns a model and its context and serves requests over a channel).
//! [`endpoint`] is the other back end: OpenAI-compatible model servers over HTTP
//! (async, on the tokio runtime).

pub mod backend;
pub mod chat;
pub mod device;
pub mod embed;
pub mod embed_endpoint;
pub mod embed_protocol;
pub mod endpoint;
pub mod generate;
pub mod llama_log;
pub mod pointwise;
pub mod rerank_endpoint;

/// Errors from model loading and inference. Each names the model file involved.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error(
        "model file {0} does not exist (run scripts/setup.sh, or set the model path in config or by flag)"
    )]
    MissingModel(String),
    #[error("cannot load model {path}: {reason}")]
    Load { path: String, reason: String },
    #[error("llama.cpp backend: {0}")]
    Backend(String),
    #[error("{model}: {reason}")]
    Inference { model: String, reason: String },
    #[error("the model worker stopped")]
    WorkerGone,
}

pub type Result<T, E = InferError> = std::result::Result<T, E>;
