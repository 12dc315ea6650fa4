//! Sentence embeddings with a GGUF embedding model (BERT-style or decoder) through
//! llama.cpp, using the model's own pooling, L2-normalised.
//!
//! The model and its context live on one worker thread; [`Embedder`] is a cheap handle
//! that sends batches to it. Inputs are truncated to `max_tokens` before encoding: an
//! encoder sequence longer than the micro-batch aborts the process.
//!
//! Packing: one encode call holds up to [`EmbedConfig::batch_seqs`] sequences (one
//! sequence id each, their pooled vectors read per id) and at most
//! [`EmbedConfig::batch_tokens`] tokens. Texts are sorted by token length first, so a
//! call holds texts of similar length; vectors come back in input order, equal to
//! one-at-a-time vectors to float rounding (`embed_reference::packed_...` checks it).
//!
//! Why packing only with 2+ threads (measured by `raglab bench embed`, variants
//! interleaved, on PubMedQA abstracts of 242 tokens on average, 2 AVX2 cores shared
//! with other builds, docs/figures.md): at 2 threads ggml's workers meet at a barrier
//! after every graph node, and a call per text means a few hundred barriers per
//! text; packing 8 texts (1,024 tokens) into a call ran 1.6-2.9x as many passages
//! per second as one per call. At 1 thread there is no barrier to save, and the
//! packed call's attention spans every token of the call (masked between
//! sequences), so packing ran 0.81-0.94x: one text per call stays the rule there.

use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::mpsc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;

use super::backend::{load_model, model_name};
use super::embed_protocol::Request;
pub use super::embed_protocol::{EmbedInfo, normalise};
use super::{InferError, Result};

/// Sequences per encode call when [`EmbedConfig::batch_seqs`] is None and there are
/// 2+ threads (see the module doc for the measurement).
pub const DEFAULT_BATCH_SEQS: usize = 8;
/// Default for [`EmbedConfig::batch_tokens`]: 8 sequences of 128 tokens, 4 of 256
/// (measured faster than 16 sequences in 512 tokens at 2 threads).
pub const DEFAULT_BATCH_TOKENS: usize = 1024;

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
    /// Most sequences packed into one encode call (the context's `n_seq_max`); 1
    /// encodes one text per call. None: [`DEFAULT_BATCH_SEQS`] with 2+ threads, 1 with
    /// one thread (see the module doc).
    pub batch_seqs: Option<usize>,
    /// Most tokens in one encode call (the context's micro-batch), raised to
    /// `max_tokens` if smaller so any single text fits.
    pub batch_tokens: usize,
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
            batch_seqs: None,
            batch_tokens: DEFAULT_BATCH_TOKENS,
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
    /// After `tx`: the last handle dropped waits for the worker to free the model.
    _exit: std::sync::Arc<super::backend::WorkerExit>,
}

impl Embedder {
    /// Load the model on a new worker thread; returns once it is ready (or failed).
    pub fn spawn(cfg: &EmbedConfig) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel::<Result<EmbedInfo>>();
        let worker_cfg = cfg.clone();
        let (exit, token) = super::backend::WorkerExit::new();
        std::thread::Builder::new()
            .name("raglab-embed".into())
            .spawn(move || {
                let _ends_with_the_thread = token;
                match &worker_cfg.endpoint {
                    Some(spec) => {
                        super::embed_endpoint::worker(spec, worker_cfg.max_tokens, &rx, &ready_tx)
                    }
                    None => worker(&worker_cfg, &rx, &ready_tx),
                }
            })
            .map_err(|e| InferError::Backend(e.to_string()))?;
        let info = ready_rx.recv().map_err(|_| InferError::WorkerGone)??;
        Ok(Self {
            tx,
            info,
            query_prefix: cfg.query_prefix.clone(),
            document_prefix: cfg.document_prefix.clone(),
            _exit: exit,
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
    let pack = Packing::of(cfg, max_tokens);
    // The second argument is how many sequence ids one token may carry (one here).
    let mut batch = LlamaBatch::new(pack.tokens, 1);
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
                let toks: Vec<_> = texts
                    .iter()
                    .map(|text| tokenize_capped(&model, text, max_tokens))
                    .collect();
                let out = embed_packed(&mut ctx, &mut batch, &toks, pack).map_err(|reason| {
                    InferError::Inference {
                        model: name.clone(),
                        reason,
                    }
                });
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
    let pack = Packing::of(cfg, max_tokens);
    // Each sequence may be `max_tokens` long: the window is sized so every packed
    // sequence gets that much (llama.cpp splits n_ctx evenly between sequences).
    let n_ctx = u32::try_from(max_tokens * pack.seqs).unwrap_or(u32::MAX);
    let n = u32::try_from(pack.tokens).unwrap_or(512);
    let params = LlamaContextParams::default()
        .with_embeddings(true)
        .with_n_ctx(NonZeroU32::new(n_ctx.max(n)))
        .with_n_batch(n)
        .with_n_ubatch(n)
        .with_n_seq_max(u32::try_from(pack.seqs).unwrap_or(1))
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

/// How many sequences and tokens one encode call may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Packing {
    seqs: usize,
    tokens: usize,
}

impl Packing {
    /// At least one sequence, and room for one sequence of `max_tokens`; unset, packed
    /// only where threads meet at barriers (see the module doc).
    fn of(cfg: &EmbedConfig, max_tokens: usize) -> Self {
        let auto = if cfg.threads > 1 {
            DEFAULT_BATCH_SEQS
        } else {
            1
        };
        let seqs = cfg.batch_seqs.unwrap_or(auto).clamp(1, 256);
        let tokens = if seqs == 1 {
            max_tokens
        } else {
            cfg.batch_tokens.max(max_tokens)
        };
        Self { seqs, tokens }
    }
}

/// The groups of `lens` (token counts, each <= `pack.tokens`) encoded together:
/// indices sorted by length (ties by index, so the grouping is deterministic), cut
/// whenever the next text would exceed the sequence or token limit.
fn groups(lens: &[usize], pack: Packing) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..lens.len()).collect();
    order.sort_by_key(|&i| (lens[i], i));
    let mut out: Vec<Vec<usize>> = Vec::new();
    let mut cur: Vec<usize> = Vec::new();
    let mut used = 0;
    for i in order {
        if !cur.is_empty() && (cur.len() == pack.seqs || used + lens[i] > pack.tokens) {
            out.push(std::mem::take(&mut cur));
            used = 0;
        }
        used += lens[i];
        cur.push(i);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Every text's pooled embedding, L2-normalised, in input order; texts are encoded
/// in the groups of [`groups`], one sequence id per text within a call.
fn embed_packed(
    ctx: &mut llama_cpp_2::context::LlamaContext<'_>,
    batch: &mut LlamaBatch,
    toks: &[Vec<llama_cpp_2::token::LlamaToken>],
    pack: Packing,
) -> std::result::Result<Vec<Vec<f32>>, String> {
    if toks.iter().any(Vec::is_empty) {
        return Err("empty input after tokenization".into());
    }
    let lens: Vec<usize> = toks.iter().map(Vec::len).collect();
    let mut out: Vec<Vec<f32>> = vec![Vec::new(); toks.len()];
    for group in groups(&lens, pack) {
        batch.clear();
        for (seq, &i) in group.iter().enumerate() {
            let seq = i32::try_from(seq).unwrap_or(i32::MAX);
            for (p, t) in toks[i].iter().enumerate() {
                let pos = i32::try_from(p).unwrap_or(i32::MAX);
                batch
                    .add(*t, pos, &[seq], true)
                    .map_err(|e| e.to_string())?;
            }
        }
        ctx.clear_kv_cache();
        ctx.encode(batch)
            .map_err(|e| format!("encode failed: {e}"))?;
        for (seq, &i) in group.iter().enumerate() {
            let seq = i32::try_from(seq).unwrap_or(i32::MAX);
            out[i] = ctx
                .embeddings_seq_ith(seq)
                .map(normalise)
                .map_err(|e| format!("no pooled embedding: {e}"))?;
        }
    }
    Ok(out)
}

/// Default location check used by commands: a clear error before spawning.
pub fn require_model(path: &Path) -> Result<()> {
    if path.is_file() {
        Ok(())
    } else {
        Err(InferError::MissingModel(path.display().to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::{Packing, groups};

    #[test]
    fn groups_sort_by_length_and_respect_both_limits() {
        let pack = Packing {
            seqs: 3,
            tokens: 10,
        };
        let lens = [5, 1, 4, 1, 2, 10, 1];
        let g = groups(&lens, pack);
        assert_eq!(g, vec![vec![1, 3, 6], vec![4, 2], vec![0], vec![5]]);
        for grp in &g {
            assert!(grp.len() <= pack.seqs);
            assert!(grp.iter().map(|&i| lens[i]).sum::<usize>() <= pack.tokens);
        }
        let mut all: Vec<usize> = g.concat();
        all.sort_unstable();
        assert_eq!(all, (0..lens.len()).collect::<Vec<_>>());
    }

    #[test]
    fn one_sequence_per_call_keeps_every_text_alone() {
        let pack = Packing {
            seqs: 1,
            tokens: 256,
        };
        assert_eq!(groups(&[3, 2, 9], pack), vec![vec![1], vec![0], vec![2]]);
    }
}
