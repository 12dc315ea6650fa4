//! Flags shared by several commands: how to rank, which generator, how to sample.
//! Defaults that the config can change are `None` here and resolved by the service
//! context (flag, then config, then built-in default).

use std::path::PathBuf;

use clap::Args;

use crate::core::retrieval::{Alpha, Method};
use crate::core::sampling::Sampling;
use crate::service::{Context, ModelChoice};

/// How a command that ranks with one method picks it.
#[derive(Debug, Clone, Args)]
pub struct MethodArg {
    /// bm25, tfidf, dense, hybrid or linear (default: config `[retrieval] method`,
    /// else hybrid).
    #[arg(long)]
    pub method: Option<Method>,
}

impl MethodArg {
    pub fn get(&self, ctx: &Context) -> Method {
        ctx.method(self.method)
    }
}

/// How the ranked lists are produced and fused: shared by every command that ranks.
#[derive(Debug, Clone, Args)]
pub struct RankingArgs {
    /// Dense weight a in R(d; a) = a/(60 + r_dense) + (1 - a)/(60 + r_sparse), in [0, 1]
    /// (default: config `[retrieval] alpha`, else 0.7 for hybrid and 0.5, equal
    /// weights, for linear).
    #[arg(long)]
    pub alpha: Option<Alpha>,
    /// GGUF embedding model (default: config, else the MiniLM GGUF from setup).
    #[arg(long)]
    pub embed_model: Option<PathBuf>,
    /// Dense list from an in-memory IVF instead of the exact scan: the exact top k of
    /// the `--nprobes` lists nearest the query (clustered on the first search).
    #[arg(long)]
    pub ann: bool,
    /// IVF lists probed by `--ann` (at least 1, of about sqrt(n)/2).
    #[arg(long, default_value_t = 8, value_parser = lists_probed)]
    pub nprobes: usize,
}

impl RankingArgs {
    /// The weight of `method`: flag, config, then the method's own default (equal
    /// weights for linear fusion).
    pub fn alpha_for(&self, ctx: &Context, method: Method) -> f64 {
        ctx.alpha_for(method, self.alpha).get()
    }

    /// The weight the flag or the config sets, if any.
    pub fn alpha_set(&self, ctx: &Context) -> Option<f64> {
        ctx.alpha_set(self.alpha).map(Alpha::get)
    }

    /// The embedding model with `threads` for query embedding.
    pub fn embed(&self, threads: Option<i32>) -> ModelChoice {
        ModelChoice {
            model: self.embed_model.clone(),
            threads,
        }
    }

    pub fn ann_nprobes(&self) -> Option<usize> {
        self.ann.then_some(self.nprobes)
    }
}

/// How a command that prompts a generator with retrieved chunks ranks them and how
/// many prompt tokens they may take.
#[derive(Debug, Clone, Args)]
pub struct PromptArgs {
    #[command(flatten)]
    pub method: MethodArg,
    #[command(flatten)]
    pub ranking: RankingArgs,
    /// The sparse list hybrid and linear fuse with dense (the paper's best hybrids
    /// used TF-IDF).
    #[arg(long, default_value_t = crate::core::retrieval::Sparse::Bm25)]
    pub sparse: crate::core::retrieval::Sparse,
    /// Context budget in generator tokens.
    #[arg(long, default_value_t = crate::core::prompt::DEFAULT_CONTEXT_BUDGET)]
    pub context_budget: usize,
}

/// Which generator to load and how (shared by the commands that generate).
#[derive(Debug, Clone, Args)]
pub struct GeneratorArgs {
    /// GGUF generator (default: config, else SmolLM2 from setup).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// Threads of the local generator (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Decode every prompt whole instead of reusing the KV cache of a prefix shared
    /// with the previous prompt (for timing comparisons).
    #[arg(long)]
    pub no_prefix_reuse: bool,
}

impl GeneratorArgs {
    pub fn choice(&self) -> ModelChoice {
        ModelChoice {
            model: self.model.clone(),
            threads: self.threads,
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct SamplingArgs {
    /// Sampling temperature; 0 always takes the most likely token.
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f32,
    /// Sample among the K most likely tokens only (0: all).
    #[arg(long, default_value_t = 40)]
    pub top_k: i32,
    /// Sample among the most likely tokens whose probabilities add up to P.
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    /// Drop tokens less likely than this fraction of the most likely one.
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    /// Penalty on tokens already generated (1: none).
    #[arg(long, default_value_t = 1.1)]
    pub repeat_penalty: f32,
    /// Sampler seed (the same seed, prompt and model, the same answer on one machine).
    #[arg(long, default_value_t = 42)]
    pub seed: u32,
    /// Most tokens an answer may have.
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            repeat_last_n: 64,
            seed: self.seed,
            max_tokens: self.max_tokens,
        }
    }
}

/// The frugality temperatures: the sample standard deviations (n - 1) of dA and dC
/// across the compared configurations unless given here.
#[derive(Debug, Clone, Copy, Args)]
pub struct TemperatureArgs {
    /// Accuracy temperature tA (default: the sample standard deviation of dA across
    /// the compared configurations).
    #[arg(long, value_parser = positive)]
    pub temp_accuracy: Option<f64>,
    /// Cost temperature tC in seconds (default: the sample standard deviation of dC
    /// across the compared configurations).
    #[arg(long, value_parser = positive)]
    pub temp_cost: Option<f64>,
}

impl TemperatureArgs {
    pub fn get(&self) -> crate::service::evaluate::Temperatures {
        crate::service::evaluate::Temperatures {
            accuracy: self.temp_accuracy,
            cost_s: self.temp_cost,
        }
    }
}

/// `--nprobes`: a count of IVF lists, at least 1 (probing none would answer with an
/// empty dense list, not refuse).
pub fn lists_probed(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("`{s}` is not a count of lists of at least 1")),
    }
}

fn positive(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("`{s}` is not a positive number")),
    }
}

/// `--shard i/n`: do only the items of shard i of n (split by a stable hash of each
/// item's id, `core::shard`), so n processes or machines share one batch; the
/// results meet in the workspace and reports are computed over all of them.
#[derive(Debug, Clone, Copy, Args)]
pub struct ShardArg {
    /// Do only shard I of N (1 <= I <= N) of the items, split by a stable hash of
    /// their ids.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::core::shard::Shard>,
}

impl ShardArg {
    /// The items of this shard (all of them without `--shard`).
    pub fn select<T>(&self, items: Vec<T>, id: impl Fn(&T) -> &str) -> Vec<T> {
        match self.shard {
            Some(s) => s.select(items, id),
            None => items,
        }
    }
}

/// A rerank stage after the first-stage ranking (`--rerank`): the first N chunks
/// scored, re-ordered by that score (ties keep the first-stage order), the first M
/// kept.
#[derive(Debug, Clone, Default, Args)]
pub struct RerankArgs {
    /// Add the rerank stage (scorer: `--rerank-model`, else an `[[endpoints]]` entry
    /// with `rerank = true`, else `[rerank] model`, else the generator).
    #[arg(long)]
    pub rerank: bool,
    /// A causal GGUF to score with, pointwise by P(yes) (implies `--rerank`).
    #[arg(long, value_name = "GGUF")]
    pub rerank_model: Option<PathBuf>,
    /// Chunks scored and kept, as N:M (default: `[rerank]` depth and keep, else 10:5).
    #[arg(long, value_name = "N:M")]
    pub rerank_cut: Option<crate::core::rerank::RerankCut>,
    /// The pointwise prompt template (slots {question} and {document}).
    #[arg(long, value_name = "FILE")]
    pub rerank_prompt: Option<PathBuf>,
}

impl RerankArgs {
    /// The stage asked for, resolved against the config; None without `--rerank`.
    pub fn setup(
        &self,
        ctx: &Context,
    ) -> anyhow::Result<Option<crate::service::retrieval::rerank::RerankSetup>> {
        let asked = self.rerank
            || self.rerank_model.is_some()
            || self.rerank_cut.is_some()
            || self.rerank_prompt.is_some();
        if !asked {
            return Ok(None);
        }
        let flags = crate::service::retrieval::rerank::RerankFlags {
            model: self.rerank_model.clone(),
            depth: self.rerank_cut.map(|c| c.depth),
            keep: self.rerank_cut.map(|c| c.keep),
            prompt: self.rerank_prompt.clone(),
        };
        crate::service::retrieval::rerank::setup(ctx, &flags).map(Some)
    }
}
