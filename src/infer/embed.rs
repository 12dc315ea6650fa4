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
            threads: super::backend::all_cores(),
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
    let name = model_name(&cfg.model);
    let fail = |reason: String| InferError::Inference {
        model: name.clone(),
        reason,
    };
    let model = match load_model(&cfg.model, cfg.n_gpu_layers) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
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
    let backend = match super::backend::backend() {
        Ok(b) => b,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let mut ctx = match model.new_context(backend, params) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(fail(format!(
                "cannot create an embedding context: {e}"
            ))));
            return;
        }
    };
    let dim = usize::try_from(model.n_embd()).unwrap_or(0);
    let placement = match super::device::placement(&model, cfg.n_gpu_layers) {
        Ok(p) => p,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let info = EmbedInfo {
        name: name.clone(),
        dim,
        max_tokens,
        placement,
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let whole = |text: &str| model.vocab().tokenize(text.as_bytes(), true, false);
    let tokenize = |text: &str| -> Vec<llama_cpp_2::token::LlamaToken> {
        let mut toks = whole(text);
        if toks.len() > max_tokens {
            // Keep the closing special token (e.g. [SEP]) when the model adds one.
            let last = *toks.last().unwrap_or(&toks[0]);
            let ends_special = model.vocab().is_control(last) || last == model.vocab().sep();
            toks.truncate(max_tokens);
            if ends_special {
                toks[max_tokens - 1] = last;
            }
        }
        toks
    };
    let mut batch = LlamaBatch::new(max_tokens, 1);
    for req in rx {
        match req {
            Request::Tokens(text, reply) => {
                let _ = reply.send(tokenize(&text).iter().map(|t| t.0).collect());
            }
            Request::Count(texts, reply) => {
                let _ = reply.send(Ok(texts.iter().map(|t| whole(t).len()).collect()));
            }
            Request::Embed(texts, reply) => {
                let mut out = Vec::with_capacity(texts.len());
                let mut error = None;
                for text in &texts {
                    let toks = tokenize(text);
                    if toks.is_empty() {
                        error = Some(fail("empty input after tokenization".into()));
                        break;
                    }
                    batch.clear();
                    for (i, t) in toks.iter().enumerate() {
                        let pos = i32::try_from(i).unwrap_or(i32::MAX);
                        if let Err(e) = batch.add(*t, pos, &[0], true) {
                            error = Some(fail(e.to_string()));
                            break;
                        }
                    }
                    ctx.clear_kv_cache();
                    if let Err(e) = ctx.encode(&mut batch) {
                        error = Some(fail(format!("encode failed: {e}")));
                        break;
                    }
                    match ctx.embeddings_seq_ith(0) {
                        Ok(v) => out.push(normalise(v)),
                        Err(e) => {
                            error = Some(fail(format!("no pooled embedding: {e}")));
                            break;
                        }
                    }
                }
                let _ = reply.send(error.map_or(Ok(out), Err));
            }
        }
    }
}

/// Default location check used by commands: a clear error before spawning.
pub fn require_model(path: &Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(InferError::MissingModel(path.display().to_string()))
    }
}
