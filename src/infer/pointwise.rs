//! Pointwise relevance from a causal model: for each prompt (question and one chunk,
//! asking whether the chunk answers it), P(yes) from the logits of the token after
//! the prompt.
//!
//! Two ways to decode the prompts ([`Decode`]):
//! - [`Decode::Whole`] (the default): each prompt on its own, from position 0, in
//!   micro-batches of 512 tokens as llama-server decodes a prompt. Its P(yes) equals,
//!   to float precision, the value from the server's own next-token log-probabilities
//!   (a test checks 20 pairs).
//! - [`Decode::SharedPrefix`]: one decode call for all prompts, a sequence per prompt,
//!   their common token prefix put in the batch once as a token of every sequence. It
//!   decodes fewer tokens, but the logits of a quantised model depend on how its
//!   prompt is cut into batches, so its P(yes) differs from the server's by more than
//!   float noise (`raglab bench rerank` prints by how much, beside both timings). It
//!   is a setting (`[rerank] share_prefix`), and its scores are cached apart.

use std::num::NonZeroU32;
use std::time::Instant;

use llama_cpp_2::context::LlamaContext;
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

/// How a scoring call decodes its prompts (see the module's note).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Decode {
    /// Each prompt on its own, as llama-server does: scores equal the server's.
    #[default]
    Whole,
    /// All prompts in one decode, their common prefix once.
    SharedPrefix,
}

/// P(yes) of every prompt, decoded as `decode` says.
pub fn score(
    model: &LlamaModel,
    specials: &Specials,
    threads: i32,
    prompts: &[Vec<ChatMessage>],
    decode: Decode,
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
    let yes_no = (word_token(model, "yes")?, word_token(model, "no")?);
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
    let call = Call {
        model,
        threads,
        yes_no,
        started,
    };
    match decode {
        Decode::Whole => score_whole(&call, &tokens),
        Decode::SharedPrefix => score_shared(&call, &tokens),
    }
}

/// What every way of scoring needs besides the prompts' tokens.
struct Call<'m> {
    model: &'m LlamaModel,
    threads: i32,
    /// The tokens `yes` and `no` start with, whose logits give P(yes).
    yes_no: (LlamaToken, LlamaToken),
    started: Instant,
}

/// A llama.cpp context for scoring: `n_ctx` rounded up to 256, `n_batch` tokens per
/// decode call, `n_seq` sequences (several share one unified KV cache), performance
/// timings kept (they give llama.cpp's prompt-eval time).
fn scoring_context<'m>(
    model: &'m LlamaModel,
    threads: i32,
    n_ctx: usize,
    n_batch: u32,
    n_seq: u32,
) -> Result<LlamaContext<'m>, String> {
    let n_ctx = u32::try_from(n_ctx.next_multiple_of(256)).unwrap_or(u32::MAX);
    let mut params = LlamaContextParams::default()
        .with_n_ctx(NonZeroU32::new(n_ctx))
        .with_n_batch(n_batch)
        .with_n_ubatch(UBATCH)
        .with_n_threads(threads)
        .with_n_threads_batch(threads)
        .with_no_perf(false);
    if n_seq > 1 {
        params = params.with_n_seq_max(n_seq).with_kv_unified(true);
    }
    let backend = super::backend::backend().map_err(|e| e.to_string())?;
    model
        .new_context(backend, params)
        .map_err(|e| format!("cannot create a scoring context: {e}"))
}

/// P(yes) from the logits of batch position `i`.
fn p_yes_at(ctx: &LlamaContext, i: i32, (yes, no): (LlamaToken, LlamaToken)) -> f64 {
    let logits = ctx.get_logits_ith(i);
    let at = |t: LlamaToken| f64::from(logits[usize::try_from(t.0).unwrap_or(0)]);
    crate::core::rerank::p_yes(at(yes), at(no))
}

/// The scores of a finished call, with llama.cpp's prompt-eval time of `ctx`.
fn scored(
    ctx: &mut LlamaContext,
    p_yes: Vec<f64>,
    tokens: usize,
    started: Instant,
) -> PointwiseScores {
    ctx.synchronize();
    PointwiseScores {
        p_yes,
        tokens,
        wall_ms: started.elapsed().as_secs_f64() * 1e3,
        llama_prompt_ms: ctx.timings().t_p_eval_ms(),
    }
}

fn pos(p: usize) -> i32 {
    i32::try_from(p).unwrap_or(i32::MAX)
}

/// [`Decode::Whole`]: each prompt decoded alone from an empty cache, in micro-batches;
/// P(yes) read at its last token.
fn score_whole(call: &Call, tokens: &[Vec<LlamaToken>]) -> Result<PointwiseScores, String> {
    let longest = tokens.iter().map(Vec::len).max().unwrap_or(0);
    let mut ctx = scoring_context(call.model, call.threads, longest, UBATCH, 1)?;
    let mut batch = LlamaBatch::new(UBATCH as usize, 1);
    let mut p_yes = Vec::with_capacity(tokens.len());
    for t in tokens {
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
        p_yes.push(p_yes_at(&ctx, batch.n_tokens() - 1, call.yes_no));
    }
    let total: usize = tokens.iter().map(Vec::len).sum();
    Ok(scored(&mut ctx, p_yes, total, call.started))
}

/// How many leading tokens every prompt shares, leaving each at least its last token
/// of its own (whose logits are read).
fn common_prefix(tokens: &[Vec<LlamaToken>]) -> usize {
    let Some((first, rest)) = tokens.split_first() else {
        return 0;
    };
    let shortest = tokens.iter().map(Vec::len).min().unwrap_or(0);
    let mut n = 0;
    while n + 1 < shortest && rest.iter().all(|t| t[n] == first[n]) {
        n += 1;
    }
    n
}

/// [`Decode::SharedPrefix`]: one batch holding the common prefix once, as a token of
/// every prompt's sequence, then each prompt's own tail in its sequence; one
/// `decode` call (llama.cpp cuts it into micro-batches itself); P(yes) read at each
/// tail's last token.
fn score_shared(call: &Call, tokens: &[Vec<LlamaToken>]) -> Result<PointwiseScores, String> {
    let shared = common_prefix(tokens);
    let total = shared + tokens.iter().map(|t| t.len() - shared).sum::<usize>();
    let n_seq = u32::try_from(tokens.len()).map_err(|e| e.to_string())?;
    let n_batch = u32::try_from(total).unwrap_or(u32::MAX);
    let mut ctx = scoring_context(call.model, call.threads, total, n_batch, n_seq)?;
    let every: Vec<i32> = (0..tokens.len()).map(pos).collect();
    let mut batch = LlamaBatch::new(total, pos(tokens.len()));
    for (p, tok) in tokens[0][..shared].iter().enumerate() {
        batch
            .add(*tok, pos(p), &every, false)
            .map_err(|e| e.to_string())?;
    }
    let mut last = Vec::with_capacity(tokens.len());
    for (seq, t) in tokens.iter().enumerate() {
        for (p, tok) in t.iter().enumerate().skip(shared) {
            let end = p + 1 == t.len();
            batch
                .add(*tok, pos(p), &[pos(seq)], end)
                .map_err(|e| e.to_string())?;
        }
        last.push(batch.n_tokens() - 1);
    }
    ctx.decode(&mut batch)
        .map_err(|e| format!("scoring decode failed: {e}"))?;
    let p_yes = last
        .iter()
        .map(|&i| p_yes_at(&ctx, i, call.yes_no))
        .collect();
    Ok(scored(&mut ctx, p_yes, total, call.started))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shared prefix stops at the first token that differs, and never takes a
    /// prompt's last token (its logits are read); a single prompt keeps its last.
    #[test]
    fn the_common_prefix_leaves_every_prompt_a_token_of_its_own() {
        let t = |v: &[i32]| v.iter().map(|&i| LlamaToken(i)).collect::<Vec<_>>();
        assert_eq!(common_prefix(&[t(&[1, 2, 3, 4]), t(&[1, 2, 5])]), 2);
        assert_eq!(common_prefix(&[t(&[1, 2, 3]), t(&[1, 2, 3, 4])]), 2);
        assert_eq!(common_prefix(&[t(&[1, 2, 3])]), 2);
        assert_eq!(common_prefix(&[t(&[9]), t(&[9])]), 0);
        assert_eq!(common_prefix(&[]), 0);
    }
}
