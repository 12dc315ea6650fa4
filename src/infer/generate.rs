//! Streaming text generation with llama.cpp.
//!
//! A [`Generator`] owns a model on its own worker thread; a request decodes its prompt
//! in batches, then samples token by token, sending each piece back over a channel as
//! soon as it exists. The worker keeps its context (and so the KV cache) between
//! requests: a prompt that shares a prefix with the previous one decodes only the part
//! that differs (a regenerated answer decodes one token; MCQA prompts for k = 1, 3, 5,
//! 10 share their first chunks). A shared stop flag is
//! checked before every token: stopping keeps the partial answer and marks it stopped.
//! An optional GBNF grammar constrains the output (the judge).
//!
//! Messages are [`ChatMessage`]s whose untrusted ranges (chunks, questions, answers)
//! are tokenised as plain text: only the chat template's own markers become control
//! tokens (see [`super::chat`]).

use std::num::NonZeroU32;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use serde::{Deserialize, Serialize};

use super::backend::{load_model, model_name};
use super::chat::{self, Specials};
use super::{InferError, Result};

pub use crate::core::prompt::{ChatMessage, PromptText};
pub use crate::core::sampling::Sampling;

#[derive(Debug, Clone)]
pub struct GenConfig {
    pub model: PathBuf,
    pub threads: i32,
    pub n_gpu_layers: u32,
    /// Largest context to create (prompt + output); prompts beyond it are rejected.
    pub max_context: u32,
    /// Keep the KV cache between requests and reuse a shared prompt prefix. Off for
    /// benchmarks, which must time the whole prompt every time.
    pub reuse_prefix: bool,
}

impl GenConfig {
    pub fn new(model: impl Into<PathBuf>) -> Self {
        Self {
            model: model.into(),
            threads: super::backend::default_threads(),
            n_gpu_layers: 0,
            max_context: 16_384,
            reuse_prefix: true,
        }
    }
}

/// Figures of one generation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GenStats {
    pub prompt_tokens: usize,
    pub output_tokens: usize,
    pub ttft_ms: f64,
    /// Prompt tokens decoded per second of wall clock. The clock stops only after
    /// `llama_synchronize`: on a GPU, `llama_decode` can return once the work is
    /// queued, and a clock stopped there would overstate the rate.
    pub prompt_tokens_per_s: f64,
    pub gen_tokens_per_s: f64,
    pub total_ms: f64,
    pub stopped: bool,
    /// Prompt tokens whose keys and values were reused from the previous request
    /// (not decoded again); `prompt_tokens_per_s` counts only the decoded ones.
    #[serde(default)]
    pub cached_tokens: usize,
    /// llama.cpp's own perf counters for the same run (decode time only): the reference
    /// raglab's wall-clock rates are compared against.
    #[serde(default)]
    pub llama_prompt_tokens_per_s: f64,
    #[serde(default)]
    pub llama_gen_tokens_per_s: f64,
}

/// What the worker streams back for one request.
#[derive(Debug, Clone, PartialEq)]
pub enum GenEvent {
    /// The prompt was accepted (its token count).
    Started {
        prompt_tokens: usize,
    },
    /// Prompt tokens in the KV cache so far, of `total` (sent after each batch: a
    /// 4,000-token prompt takes tens of seconds on two CPU cores before the first
    /// token, and a front shows how far it is).
    PromptRead {
        decoded: usize,
        total: usize,
    },
    /// The next piece of text (whole UTF-8 characters only).
    Token(String),
    Done {
        text: String,
        stats: GenStats,
    },
    Failed(String),
}

pub struct GenRequest {
    /// Chat messages; the model's chat template is applied.
    pub messages: Vec<ChatMessage>,
    pub sampling: Sampling,
    pub grammar: Option<String>,
    pub stop: Arc<AtomicBool>,
    pub events: mpsc::Sender<GenEvent>,
}

/// Tokens of a prompt, for inspection (tests, audits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PromptTokens {
    /// Token ids, in order.
    pub ids: Vec<i32>,
    /// The text of each special token (llama.cpp's control or user-defined attribute)
    /// among them, in order.
    pub special: Vec<String>,
    /// The tokens detokenised, special tokens written out.
    pub text: String,
}

type Reply<T> = mpsc::Sender<std::result::Result<T, String>>;

enum Request {
    Generate(GenRequest),
    CountTokens(String, mpsc::Sender<usize>),
    Tokenize {
        text: String,
        parse_special: bool,
        reply: mpsc::Sender<PromptTokens>,
    },
    ChatPrompt(Vec<ChatMessage>, Reply<String>),
    PromptTokens(Vec<ChatMessage>, Reply<PromptTokens>),
    Score(
        Vec<Vec<ChatMessage>>,
        super::pointwise::Decode,
        Reply<super::pointwise::PointwiseScores>,
    ),
}

#[derive(Debug, Clone)]
pub struct GenInfo {
    pub name: String,
    pub file: String,
    pub n_ctx_train: u32,
    pub has_chat_template: bool,
    /// CPU or the GPU, and the layers offloaded.
    pub placement: super::device::Placement,
}

/// Handle to a generation worker.
#[derive(Clone)]
pub struct Generator {
    tx: mpsc::Sender<Request>,
    pub info: GenInfo,
    /// After `tx`: the last handle dropped waits for the worker to free the model.
    _exit: Arc<super::backend::WorkerExit>,
}

impl Generator {
    pub fn spawn(cfg: &GenConfig) -> Result<Self> {
        let (tx, rx) = mpsc::channel::<Request>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let cfg = cfg.clone();
        let (exit, token) = super::backend::WorkerExit::new();
        std::thread::Builder::new()
            .name("raglab-generate".into())
            .spawn(move || {
                let _ends_with_the_thread = token;
                worker(&cfg, &rx, &ready_tx);
            })
            .map_err(|e| InferError::Backend(e.to_string()))?;
        let info = ready_rx.recv().map_err(|_| InferError::WorkerGone)??;
        Ok(Self {
            tx,
            info,
            _exit: exit,
        })
    }

    /// Start a generation; events arrive on `req.events`.
    pub fn start(&self, req: GenRequest) -> Result<()> {
        self.tx
            .send(Request::Generate(req))
            .map_err(|_| InferError::WorkerGone)
    }

    /// Generate to completion, calling `on_token` for each piece.
    pub fn generate(
        &self,
        messages: Vec<ChatMessage>,
        sampling: Sampling,
        grammar: Option<String>,
        stop: Arc<AtomicBool>,
        on_token: impl FnMut(&str),
    ) -> Result<(String, GenStats)> {
        self.generate_watching(messages, sampling, grammar, stop, |_, _| {}, on_token)
    }

    /// [`Generator::generate`], also calling `on_prompt(decoded, total)` as the
    /// prompt's batches are decoded (the tokens already cached count as decoded).
    pub fn generate_watching(
        &self,
        messages: Vec<ChatMessage>,
        sampling: Sampling,
        grammar: Option<String>,
        stop: Arc<AtomicBool>,
        mut on_prompt: impl FnMut(usize, usize),
        mut on_token: impl FnMut(&str),
    ) -> Result<(String, GenStats)> {
        let (tx, rx) = mpsc::channel();
        self.start(GenRequest {
            messages,
            sampling,
            grammar,
            stop,
            events: tx,
        })?;
        for ev in rx {
            match ev {
                GenEvent::Started { .. } => {}
                GenEvent::PromptRead { decoded, total } => on_prompt(decoded, total),
                GenEvent::Token(t) => on_token(&t),
                GenEvent::Done { text, stats } => return Ok((text, stats)),
                GenEvent::Failed(e) => {
                    return Err(InferError::Inference {
                        model: self.info.name.clone(),
                        reason: e,
                    });
                }
            }
        }
        Err(InferError::WorkerGone)
    }

    /// Tokens of `text` in this model's vocabulary (for prompt budgets).
    pub fn count_tokens(&self, text: &str) -> Result<usize> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::CountTokens(text.to_string(), tx))
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv().map_err(|_| InferError::WorkerGone)
    }

    /// `text` tokenised as a whole by llama.cpp, with special-token parsing on or off
    /// (no BOS added).
    pub fn tokenize(&self, text: &str, parse_special: bool) -> Result<PromptTokens> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(Request::Tokenize {
                text: text.to_string(),
                parse_special,
                reply: tx,
            })
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv().map_err(|_| InferError::WorkerGone)
    }

    /// The exact text the model will see for these messages (template applied).
    pub fn chat_prompt(&self, messages: Vec<ChatMessage>) -> Result<String> {
        self.ask(|tx| Request::ChatPrompt(messages, tx))
    }

    /// The tokens the model will be given for these messages: those of
    /// [`Self::chat_prompt`], with the untrusted text tokenised as plain text.
    pub fn prompt_tokens(&self, messages: Vec<ChatMessage>) -> Result<PromptTokens> {
        self.ask(|tx| Request::PromptTokens(messages, tx))
    }

    /// P(yes) of each prompt's next token (the pointwise rerank score), decoded as
    /// `decode` says ([`super::pointwise`]: whole, as llama-server would, or with
    /// the common prefix shared).
    pub fn score_yes_no(
        &self,
        prompts: Vec<Vec<ChatMessage>>,
        decode: super::pointwise::Decode,
    ) -> Result<super::pointwise::PointwiseScores> {
        self.ask(|tx| Request::Score(prompts, decode, tx))
    }

    fn ask<T>(&self, request: impl FnOnce(Reply<T>) -> Request) -> Result<T> {
        let (tx, rx) = mpsc::channel();
        self.tx
            .send(request(tx))
            .map_err(|_| InferError::WorkerGone)?;
        rx.recv()
            .map_err(|_| InferError::WorkerGone)?
            .map_err(|e| InferError::Inference {
                model: self.info.name.clone(),
                reason: e,
            })
    }
}

fn describe(model: &LlamaModel, tokens: &[LlamaToken]) -> PromptTokens {
    let vocab = model.vocab();
    let piece = |t: &LlamaToken| {
        String::from_utf8_lossy(&vocab.token_to_piece(*t, true, None)).into_owned()
    };
    PromptTokens {
        ids: tokens.iter().map(|t| t.0).collect(),
        special: tokens
            .iter()
            .filter(|t| chat::is_special(model, **t))
            .map(piece)
            .collect(),
        text: String::from_utf8_lossy(&vocab.detokenize(tokens, false, true)).into_owned(),
    }
}

fn worker(cfg: &GenConfig, rx: &mpsc::Receiver<Request>, ready: &mpsc::Sender<Result<GenInfo>>) {
    let model = match load_model(&cfg.model, cfg.n_gpu_layers) {
        Ok(m) => m,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let placement = match super::device::placement(&model, cfg.n_gpu_layers) {
        Ok(p) => p,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let info = GenInfo {
        placement,
        name: model_name(&cfg.model),
        file: cfg
            .model
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default(),
        n_ctx_train: model.n_ctx_train(),
        has_chat_template: model.chat_template(None).is_ok(),
    };
    if ready.send(Ok(info)).is_err() {
        return;
    }
    let specials = Specials::of(&model);
    // Declared after the model, so it is dropped first (the context borrows the model).
    let mut cache: Option<Cached<'_>> = None;
    for req in rx {
        match req {
            Request::CountTokens(text, reply) => {
                let _ = reply.send(model.vocab().tokenize(text.as_bytes(), false, false).len());
            }
            Request::Tokenize {
                text,
                parse_special,
                reply,
            } => {
                let tokens = model
                    .vocab()
                    .tokenize(text.as_bytes(), false, parse_special);
                let _ = reply.send(describe(&model, &tokens));
            }
            Request::ChatPrompt(messages, reply) => {
                let _ = reply.send(chat::render(&model, &specials, &messages).map(|r| r.text));
            }
            Request::PromptTokens(messages, reply) => {
                let _ = reply.send(
                    chat::render(&model, &specials, &messages)
                        .map(|r| describe(&model, &r.tokens(&model))),
                );
            }
            Request::Score(prompts, decode, reply) => {
                let _ = reply.send(super::pointwise::score(
                    &model,
                    &specials,
                    cfg.threads,
                    &prompts,
                    decode,
                ));
            }
            Request::Generate(req) => {
                let events = req.events.clone();
                if let Err(e) = run_one(&model, &specials, cfg, req, &mut cache) {
                    // The cache's state is unknown after a failure: start afresh.
                    cache = None;
                    let _ = events.send(GenEvent::Failed(e));
                }
            }
        }
    }
}

fn sampler(
    model: &LlamaModel,
    s: &Sampling,
    grammar: Option<&str>,
) -> std::result::Result<LlamaSampler, String> {
    let mut chain = Vec::new();
    if let Some(g) = grammar {
        chain.push(
            LlamaSampler::grammar(model, g, "root").map_err(|e| format!("invalid grammar: {e}"))?,
        );
    }
    chain.push(LlamaSampler::penalties(
        model.n_vocab(),
        s.repeat_last_n,
        s.repeat_penalty,
        0.0,
        0.0,
    ));
    if s.temperature <= 0.0 {
        chain.push(LlamaSampler::greedy());
    } else {
        chain.push(LlamaSampler::top_k(s.top_k));
        chain.push(LlamaSampler::top_p(s.top_p, 1));
        chain.push(LlamaSampler::min_p(s.min_p, 1));
        chain.push(LlamaSampler::temp(s.temperature));
        chain.push(LlamaSampler::dist(s.seed));
    }
    Ok(LlamaSampler::chain_simple(chain))
}

/// A context kept between requests with the tokens its KV cache holds (sequence 0,
/// positions 0..tokens.len()).
struct Cached<'m> {
    ctx: LlamaContext<'m>,
    tokens: Vec<LlamaToken>,
}

/// Length of the common prefix of two token sequences.
fn common_prefix(a: &[LlamaToken], b: &[LlamaToken]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Make `cache` hold a context of at least `need` tokens whose KV cache keeps the
/// longest reusable prefix of `tokens`; returns that prefix length (0: decode it all).
fn prepare_context<'m>(
    model: &'m LlamaModel,
    cfg: &GenConfig,
    cache: &mut Option<Cached<'m>>,
    tokens: &[LlamaToken],
    need: usize,
    limit: usize,
    n_batch: u32,
) -> std::result::Result<usize, String> {
    if let Some(c) = cache.as_mut().filter(|c| c.ctx.n_ctx() as usize >= need) {
        // At least the last prompt token is decoded again: its logits start sampling.
        let keep = if cfg.reuse_prefix {
            common_prefix(&c.tokens, tokens).min(tokens.len() - 1)
        } else {
            0
        };
        let kept = keep > 0
            && c.ctx
                .clear_kv_cache_seq(Some(0), Some(u32::try_from(keep).unwrap_or(u32::MAX)), None)
                .unwrap_or(false);
        if kept {
            c.tokens.truncate(keep);
            return Ok(keep);
        }
        c.ctx.clear_kv_cache();
        c.tokens.clear();
        return Ok(0);
    }
    // A new context; with reuse on, room for longer prompts later, so it is not
    // recreated for every slightly longer prompt.
    *cache = None;
    let want = if cfg.reuse_prefix {
        need.max(4096).min(limit)
    } else {
        need
    };
    let n_ctx = u32::try_from(want.next_multiple_of(256)).unwrap_or(u32::MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_batch)
        .with_n_ubatch(n_batch)
        .with_n_threads(cfg.threads)
        .with_n_threads_batch(cfg.threads)
        .with_no_perf(false);
    let backend = super::backend::backend().map_err(|e| e.to_string())?;
    let ctx = model
        .new_context(backend, params)
        .map_err(|e| format!("cannot create a context: {e}"))?;
    *cache = Some(Cached {
        ctx,
        tokens: Vec::new(),
    });
    Ok(0)
}

/// One request, in its phases: tokenise the prompt, decode what the cache does not
/// hold, sample the output token by token, report the figures.
fn run_one<'m>(
    model: &'m LlamaModel,
    specials: &Specials,
    cfg: &GenConfig,
    req: GenRequest,
    cache: &mut Option<Cached<'m>>,
) -> std::result::Result<(), String> {
    let started = Instant::now();
    let (tokens, need, limit) = prompt_tokens(model, specials, cfg, &req)?;
    let n_batch = 512u32;
    let cached = prepare_context(model, cfg, cache, &tokens, need, limit, n_batch)?;
    let Some(Cached {
        ctx,
        tokens: kv_tokens,
    }) = cache.as_mut()
    else {
        return Err("no context".into());
    };
    ctx.reset_timings();
    let _ = req.events.send(GenEvent::Started {
        prompt_tokens: tokens.len(),
    });
    let mut batch = LlamaBatch::new(n_batch as usize, 1);
    let (decoded, stopped) =
        decode_prompt(ctx, &mut batch, &tokens, cached, n_batch as usize, &req)?;
    // The KV cache holds exactly the prompt tokens decoded (all, unless stopped).
    kv_tokens.clear();
    kv_tokens.extend_from_slice(&tokens[..decoded]);
    // On a GPU, `llama_decode` may return as soon as the work is queued: waiting for
    // it here keeps the prompt's time inside the timed region, so prompt tokens/s is
    // not overstated (on the CPU the wait returns at once).
    ctx.synchronize();
    let prompt_done = Instant::now();
    let mut sampler = sampler(model, &req.sampling, req.grammar.as_deref())?;
    let out = sample_output(
        model,
        ctx,
        &mut batch,
        &mut sampler,
        &req,
        tokens.len(),
        kv_tokens,
        stopped,
    )?;
    let end = Instant::now();
    let t = ctx.timings();
    let llama_rates = (
        per_second(t.n_p_eval(), t.t_p_eval_ms()),
        per_second(t.n_eval(), t.t_eval_ms()),
    );
    let times = Times {
        started,
        prompt_done,
        first_token: out.first_token,
        end,
    };
    let stats = gen_stats(&times, llama_rates, tokens.len(), cached, decoded, &out);
    let _ = req.events.send(GenEvent::Done {
        text: out.text,
        stats,
    });
    Ok(())
}

/// The prompt's tokens, the context it needs (prompt, output and a margin) and the
/// largest context allowed; a prompt that cannot fit is refused here.
fn prompt_tokens(
    model: &LlamaModel,
    specials: &Specials,
    cfg: &GenConfig,
    req: &GenRequest,
) -> std::result::Result<(Vec<LlamaToken>, usize, usize), String> {
    // The template already holds the special tokens it needs (BOS included for models
    // that want one); untrusted text is tokenised with special parsing off.
    let tokens = chat::render(model, specials, &req.messages)?.tokens(model);
    if tokens.is_empty() {
        return Err("empty prompt".into());
    }
    let n_prompt = tokens.len();
    let need = n_prompt + req.sampling.max_tokens + 8;
    let limit = (cfg.max_context as usize).min(model.n_ctx_train() as usize);
    if need > limit {
        return Err(format!(
            "prompt of {n_prompt} tokens + {} output tokens exceeds the context size ({limit}); lower the context budget or k",
            req.sampling.max_tokens
        ));
    }
    Ok((tokens, need, limit))
}

/// Decode the prompt from `cached` on, one batch at a time, telling the request's
/// listener how far it is after each; returns the tokens the KV cache then holds and
/// whether a stop came first.
fn decode_prompt(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    tokens: &[LlamaToken],
    cached: usize,
    n_batch: usize,
    req: &GenRequest,
) -> std::result::Result<(usize, bool), String> {
    let n_prompt = tokens.len();
    let mut decoded = cached;
    for (c, chunk) in tokens[cached..].chunks(n_batch).enumerate() {
        // A stop is honoured between prompt batches too: a 4,000-token prompt takes
        // about 20 s on two CPU cores, and quitting must not wait for all of it.
        if req.stop.load(Ordering::Relaxed) {
            return Ok((decoded, true));
        }
        batch.clear();
        for (i, t) in chunk.iter().enumerate() {
            let pos = cached + c * n_batch + i;
            let last = pos == n_prompt - 1;
            batch
                .add(*t, i32::try_from(pos).unwrap_or(i32::MAX), &[0], last)
                .map_err(|e| e.to_string())?;
        }
        ctx.decode(batch)
            .map_err(|e| format!("prompt decode failed: {e}"))?;
        decoded += chunk.len();
        let _ = req.events.send(GenEvent::PromptRead {
            decoded,
            total: n_prompt,
        });
    }
    Ok((decoded, false))
}

/// What sampling produced.
struct Output {
    text: String,
    n_out: usize,
    first_token: Option<Instant>,
    stopped: bool,
}

/// Sample up to `max_tokens` tokens after the decoded prompt, sending each whole
/// UTF-8 piece as it exists; every sampled token is added to `kv_tokens`.
#[allow(clippy::too_many_arguments)]
fn sample_output(
    model: &LlamaModel,
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch,
    sampler: &mut LlamaSampler,
    req: &GenRequest,
    n_prompt: usize,
    kv_tokens: &mut Vec<LlamaToken>,
    mut stopped: bool,
) -> std::result::Result<Output, String> {
    let mut text = String::new();
    let mut pending: Vec<u8> = Vec::new();
    let mut n_out = 0usize;
    let mut first_token: Option<Instant> = None;
    let mut pos = n_prompt;
    let mut idx = batch.n_tokens() - 1;
    while !stopped && n_out < req.sampling.max_tokens {
        if req.stop.load(Ordering::Relaxed) {
            stopped = true;
            break;
        }
        // `sample` also accepts the token into the chain (grammar, penalties).
        let token = sampler.sample(ctx, idx);
        if model.vocab().is_eog(token) {
            break;
        }
        n_out += 1;
        first_token.get_or_insert_with(Instant::now);
        pending.extend(model.vocab().token_to_piece(token, false, None));
        // Emit only whole UTF-8 characters; keep an incomplete tail for the next token.
        let valid = match std::str::from_utf8(&pending) {
            Ok(s) => s.len(),
            Err(e) => e.valid_up_to(),
        };
        if valid > 0 {
            let piece = String::from_utf8_lossy(&pending[..valid]).into_owned();
            pending.drain(..valid);
            text.push_str(&piece);
            if req.events.send(GenEvent::Token(piece)).is_err() {
                stopped = true; // nobody listens any more
                break;
            }
        }
        batch.clear();
        batch
            .add(token, i32::try_from(pos).unwrap_or(i32::MAX), &[0], true)
            .map_err(|e| e.to_string())?;
        pos += 1;
        idx = 0;
        ctx.decode(batch)
            .map_err(|e| format!("decode failed: {e}"))?;
        kv_tokens.push(token);
    }
    if !pending.is_empty() {
        let piece = String::from_utf8_lossy(&pending).into_owned();
        text.push_str(&piece);
        let _ = req.events.send(GenEvent::Token(piece));
    }
    Ok(Output {
        text,
        n_out,
        first_token,
        stopped,
    })
}

/// When a request's phases ended.
struct Times {
    started: Instant,
    prompt_done: Instant,
    first_token: Option<Instant>,
    end: Instant,
}

fn per_second(n: i32, ms: f64) -> f64 {
    if ms > 0.0 {
        f64::from(n) / (ms / 1e3)
    } else {
        0.0
    }
}

/// The figures of one request. Prompt tokens/s counts only the tokens decoded (not
/// those the cache held); the first token's time belongs to prompt processing, so
/// the generation rate is over the tokens after it.
fn gen_stats(
    t: &Times,
    (llama_prompt_tokens_per_s, llama_gen_tokens_per_s): (f64, f64),
    n_prompt: usize,
    cached: usize,
    decoded: usize,
    out: &Output,
) -> GenStats {
    let prompt_s = t.prompt_done.duration_since(t.started).as_secs_f64();
    let first = t.first_token.unwrap_or(t.end);
    let gen_s = t.end.duration_since(first).as_secs_f64();
    let n_out = out.n_out;
    GenStats {
        llama_prompt_tokens_per_s,
        llama_gen_tokens_per_s,
        prompt_tokens: n_prompt,
        output_tokens: n_out,
        ttft_ms: first.duration_since(t.started).as_secs_f64() * 1e3,
        prompt_tokens_per_s: if prompt_s > 0.0 {
            (decoded - cached) as f64 / prompt_s
        } else {
            0.0
        },
        gen_tokens_per_s: if gen_s > 0.0 && n_out > 1 {
            (n_out - 1) as f64 / gen_s
        } else {
            0.0
        },
        total_ms: t.end.duration_since(t.started).as_secs_f64() * 1e3,
        stopped: out.stopped,
        cached_tokens: cached,
    }
}
