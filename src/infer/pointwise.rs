//! Pointwise relevance from a causal model: for each prompt (question and one chunk,
//! asking whether the chunk answers it), P(yes) from the logits of the token after
//! the prompt.
//!
//! Each prompt is decoded on its own, from position 0, in micro-batches of 512 tokens
//! as llama-server decodes a prompt: its P(yes) then equals, to float precision, the
//! value from the server's own next-token log-probabilities (a test checks 20 pairs).
//! Sharing the prompts' common prefix (decoded once, then copied to a sequence per
//! prompt, or put in one batch as a token of every sequence) was built and measured:
//! on SmolLM2 Q4_1 it moved P(yes) by up to 0.058 against the server's value, because
//! the logits of a quantised model depend on how its prompt is cut into decode calls.
//! Exact scores were chosen over the saved prefix work.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::chat::{self, Specials};
use crate::core::prompt::ChatMessage;

/// Most prompts scored in one request to the model's worker (the caller splits longer
/// lists), so that a long list holds the worker, and delays a cancellation, for one
/// group at most.
pub const MAX_PROMPTS: usize = 64;

/// Tokens per micro-batch, llama-server's default: a larger one changed the logits of
/// a long prompt measurably against the server's.
const UBATCH: u32 = 512;

/// What one scoring call measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PointwiseScores {
    /// P(yes) per prompt, in order.
    pub p_yes: Vec<f64>,
    /// Tokens decoded.
    pub tokens: usize,
    /// Wall time of the call, tokenising and context creation included.
    pub wall_ms: f64,
    /// llama.cpp's own prompt-evaluation time for the same decode.
    pub llama_prompt_ms: f64,
}

/// The single token a word starts with in this vocabulary (`yes`, `no`).
fn word_token(model: &LlamaModel, word: &str) -> Result<LlamaToken, String> {
    model
        .vocab()
        .tokenize(word.as_bytes(), false, false)
        .first()
        .copied()
        .ok_or_else(|| format!("the vocabulary has no token for `{word}`"))
}

/// P(yes) of every prompt, each decoded whole (see the module's note).
pub fn score(
    model: &LlamaModel,
    specials: &Specials,
    threads: i32,
    prompts: &[Vec<ChatMessage>],
) -> Result<PointwiseScores, String> {
    let started = Instant::now();
    if prompts.is_empty() {
        return Ok(PointwiseScores::default());
    }
    if prompts.len() > MAX_PROMPTS {
        return Err(format!(
            "{} prompts in one scoring call; at most {MAX_PROMPTS}",
            prompts.len()
        ));
    }
    let yes = word_token(model, "yes")?;
    let no = word_token(model, "no")?;
    let tokens: Vec<Vec<LlamaToken>> = prompts
        .iter()
        .map(|m| chat::render(model, specials, m).map(|r| r.tokens(model)))
        .collect::<Result<_, _>>()?;
    let longest = tokens.iter().map(Vec::len).max().unwrap_or(0);
    if tokens.iter().any(Vec::is_empty) {
        return Err("an empty prompt".into());
    }
    let window = model.n_ctx_train() as usize;
    if longest > window {
        return Err(format!(
            "a scoring prompt of {longest} tokens exceeds the model's context ({window})"
        ));
    }
    let n_ctx = u32::try_from(longest.next_multiple_of(256)).unwrap_or(u32::MAX);
    let params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(UBATCH)
        .with_n_ubatch(UBATCH)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_no_perf(false);
    let backend = super::backend::backend().map_err(|e| e.to_string())?;
    let mut ctx = model
        .new_context(backend, params)
        .map_err(|e| format!("cannot create a scoring context: {e}"))?;
    let pos = |p: usize| i32::try_from(p).unwrap_or(i32::MAX);
    let mut batch = LlamaBatch::new(UBATCH as usize, 1);
    let mut p_yes = Vec::with_capacity(prompts.len());
    for t in &tokens {
        ctx.clear_kv_cache();
        for (c, chunk) in t.chunks(UBATCH as usize).enumerate() {
            batch.clear();
            for (i, tok) in chunk.iter().enumerate() {
                let p = c * UBATCH as usize + i;
                batch
                    .add(*tok, pos(p), &[0], p == t.len() - 1)
                    .map_err(|e| e.to_string())?;
            }
            ctx.decode(&mut batch)
                .map_err(|e| format!("scoring decode failed: {e}"))?;
        }
        let logits = ctx.get_logits_ith(batch.n_tokens() - 1);
        let at = |t: LlamaToken| f64::from(logits[usize::try_from(t.0).unwrap_or(0)]);
        p_yes.push(crate::core::rerank::p_yes(at(yes), at(no)));
    }
    ctx.synchronize();
    let total: usize = tokens.iter().map(Vec::len).sum();
    Ok(PointwiseScores {
        p_yes,
        tokens: total,
        wall_ms: started.elapsed().as_secs_f64() * 1e3,
        llama_prompt_ms: ctx.timings().t_p_eval_ms(),
    })
}
