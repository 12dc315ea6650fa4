//! Sentence embeddings with a GGUF embedding model (BERT-style or decoder) through
//! llama.cpp, using the model's own pooling, L2-normalised.
//!
//! The model and its context live on one worker thread; [`Embedder`] is a cheap handle
//! that sends batches to it. One sequence per encode call (measured faster than packing
//! several sequences into one batch on CPU). Inputs are truncated to `max_tokens`
//! before encoding: an encoder sequence longer than the micro-batch aborts the process.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;

use super::backend::{load_model, model_name};
use super::embed_protocol::Request;
pub use super::embed_protocol::{EmbedInfo, normalise};
use super::{InferError, Result};

/// How to run an embedding model.
#[derive(Debug, Clone)]
pub struct EmbedConfig {
    pub model: PathBuf,
    /// Prepended to queries (e5: `query: `, nomic: `search_query: `).
    pub query_prefix: String,
    /// Prepended to documents (e5: `passage: `, nomic: `search_document: `).
    pub document_prefix: String,
    /// Token limit per input, special tokens included (MiniLM: 256 for sentences).
    pub max_tokens: usize,
    pub threads: i32,
    pub n_gpu_layers: u32,
    /// Embed on this OpenAI-compatible server instead of loading `model`.
    pub endpoint: Option<super::endpoint::EndpointSpec>,
}

impl EmbedConfig {
    pub fn new(model: impl Into<PathBuf>) -> Self {
        Self {
            model: model.into(),
            query_prefix: String::new(),
            document_prefix: String::new(),
            max_tokens: 256,
            threads: super::backend::default_threads(),
            n_gpu_layers: 0,
            endpoint: None,
        }
    }
}

/// Handle to an embedding worker thread.
#[derive(Clone)]
pub struct Embedder {
    tx: mpsc::Sender<Request>,
    pub info: EmbedInfo,
    query_prefix: String,
    document_prefix: String,
}

impl Embedder {
    /// Load the model on a new worker thread; returns once it is ready (or failed).
    pub fn spawn(cfg: &EmbedConfig) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<EmbedInfo>>();
        let worker_cfg = cfg.clone();
        std::thread::Builder::new()
            .name("raglab-embed".into())
            .spawn(move || match &worker_cfg.endpoint {
                Some(spec) => {
                    super::embed_endpoint::worker(spec, worker_cfg.max_tokens, &rx, &ready_tx)
                }
                None => worker(&worker_cfg, &rx, &ready_tx),
            })
            .map_err(|e| InferError::Backend(e.to_string()))?;
        let info = ready_rx.recv().map_err(|_| InferError::WorkerGone)??;
        Ok(Self {
            tx,
            info,
            query_prefix: cfg.query_prefix.clone(),
            document_prefix: cfg.document_prefix.clone(),
        })
    }

    /// Embed raw texts (no prefix added).
    pub fn embed(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::Embed(texts, tx))
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv().map_err(|_| InferError::WorkerGone)?
    }

    pub fn embed_query(&self, text: &str) -> Result<Vec<f32>> {
        let mut v = self.embed(vec![format!("{}{text}", self.query_prefix)])?;
        v.pop().ok_or(InferError::WorkerGone)
    }

    /// Several queries in one request to the worker (an evaluation's block of
    /// queries), each with the query prefix.
    pub fn embed_queries(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(
            texts
                .iter()
                .map(|t| format!("{}{t}", self.query_prefix))
                .collect(),
        )
    }

    pub fn embed_documents(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        self.embed(
            texts
                .iter()
                .map(|t| format!("{}{t}", self.document_prefix))
                .collect(),
        )
    }

    /// Token counts of documents as this model's tokenizer sees them (the document
    /// prefix added, special tokens included) before any cut: a chunk's length for
    /// this model, which decides what the corpus variants summarise.
    pub fn count_document_tokens(&self, texts: &[String]) -> Result<Vec<usize>> {
        let (tx, rx) = mpsc::channel();
        let texts = texts
            .iter()
            .map(|t| format!("{}{t}", self.document_prefix))
            .collect();
        self.tx
            .send(Request::Count(texts, tx))
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv().map_err(|_| InferError::WorkerGone)?
    }

    /// The token ids the model sees for `text` (after truncation), for checks.
    pub fn tokens(&self, text: &str) -> Result<Vec<i32>> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::Tokens(text.to_string(), tx))
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv().map_err(|_| InferError::WorkerGone)
    }
}

fn worker(
    cfg: &EmbedConfig,
    rx: &mpsc::Receiver<Request>,
    ready: &mpsc::Sender<Result<EmbedInfo>>,
) {
    let model = match load_model(&cfg.model, cfg.n_gpu_layers) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let (mut ctx, info) = match open_context(&model, cfg) {
        Ok(opened) => opened,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let (name, max_tokens) = (info.name.clone(), info.max_tokens);
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let mut batch = LlamaBatch::new(max_tokens, 1);
    for req in rx {
        match req {
            Request::Tokens(text, reply) => {
                let toks = tokenize_capped(&model, &text, max_tokens);
                let _ = reply.send(toks.iter().map(|t| t.0).collect());
            }
            Request::Count(texts, reply) => {
                let counts = texts
                    .iter()
                    .map(|t| model.vocab().tokenize(t.as_bytes(), true, false).len())
                    .collect();
                let _ = reply.send(Ok(counts));
            }
            Request::Embed(texts, reply) => {
                let out = texts
                    .iter()
                    .map(|text| {
                        let toks = tokenize_capped(&model, text, max_tokens);
                        embed_one(&mut ctx, &mut batch, &toks).map_err(|reason| {
                            InferError::Inference {
                                model: name.clone(),
                                reason,
                            }
                        })
                    })
                    .collect();
                let _ = reply.send(out);
            }
        }
    }
}

/// The embedding context of a loaded model (its window capped at `max_tokens` and
/// the model's training length) and what the handle reports about it.
fn open_context<'m>(
    model: &'m llama_cpp_2::model::LlamaModel,
    cfg: &EmbedConfig,
) -> Result<(llama_cpp_2::context::LlamaContext<'m>, EmbedInfo)> {
    let name = model_name(&cfg.model);
    let train_ctx = usize::try_from(model.n_ctx_train()).unwrap_or(512).max(8);
    let max_tokens = cfg.max_tokens.clamp(8, train_ctx);
    let n = u32::try_from(max_tokens).unwrap_or(512);
    let params = LlamaContextParams::default()
        .with_embeddings(true)
        .with_n_ctx(NonZeroU32::new(n))
        .with_n_batch(n)
        .with_n_ubatch(n)
        .with_n_threads(cfg.threads)
        .with_n_threads_batch(cfg.threads);
    let ctx = model
        .new_context(super::backend::backend()?, params)
        .map_err(|e| InferError::Inference {
            model: name.clone(),
            reason: format!("cannot create an embedding context: {e}"),
        })?;
    let info = EmbedInfo {
        name,
        dim: usize::try_from(model.n_embd()).unwrap_or(0),
        max_tokens,
        placement: super::device::placement(model, cfg.n_gpu_layers)?,
    };
    Ok((ctx, info))
}

/// The text's tokens, cut to `max_tokens`; a closing special token (e.g. `[SEP]`)
/// that the model adds is kept as the last one.
fn tokenize_capped(
    model: &llama_cpp_2::model::LlamaModel,
    text: &str,
    max_tokens: usize,
) -> Vec<llama_cpp_2::token::LlamaToken> {
    let mut toks = model.vocab().tokenize(text.as_bytes(), true, false);
    if toks.len() > max_tokens {
        let last = *toks.last().unwrap_or(&toks[0]);
        let ends_special = model.vocab().is_control(last) || last == model.vocab().sep();
        toks.truncate(max_tokens);
        if ends_special {
            toks[max_tokens - 1] = last;
        }
    }
    toks
}

/// One sequence encoded alone, its pooled embedding L2-normalised.
fn embed_one(
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    batch: &mut LlamaBatch,
    toks: &[llama_cpp_2::token::LlamaToken],
) -> std::result::Result<Vec<f32>, String> {
    if toks.is_empty() {
        return Err("empty input after tokenization".into());
    }
    batch.clear();
    for (i, t) in toks.iter().enumerate() {
        let pos = i32::try_from(i).unwrap_or(i32::MAX);
        batch.add(*t, pos, &[0], true).map_err(|e| e.to_string())?;
    }
    ctx.clear_kv_cache();
    ctx.encode(batch)
        .map_err(|e| format!("encode failed: {e}"))?;
    ctx.embeddings_seq_ith(0)
        .map(normalise)
        .map_err(|e| format!("no pooled embedding: {e}"))
}

/// Default location check used by commands: a clear error before spawning.
pub fn require_model(path: &Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(InferError::MissingModel(path.display().to_string()))
    }
}
