//! The rerank stage as commands run it: a scorer (a causal GGUF scored pointwise by
//! P(yes), or an endpoint's `/v1/rerank`), its prompt, the cut (depth N, kept M) and
//! the score cache in the workspace (`rerank_scores.lance`, one row per scored
//! (model, prompt, question, chunk)), so a second run or an alpha sweep scores
//! nothing twice. New scores are committed as each question is scored: an
//! interrupted or failed run keeps what it paid for.
//!
//! A reranker GGUF run through llama.cpp's rank pooling is not offered: no reranker
//! weights could be obtained to test it.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use super::Retriever;
use crate::core::chunk::Chunk;
use crate::core::prompt::{ChatMessage, Slot, fill};
use crate::core::rerank::{RerankCut, Reranked, cache_key, rerank};
use crate::core::template::{Template, TemplateKind};
use crate::infer::endpoint::EndpointSpec;
use crate::infer::generate::Generator;
pub use crate::infer::pointwise::Decode;
use crate::infer::rerank_endpoint::RerankEndpoint;
use crate::service::base::{Context, ModelChoice, load_generator, model_sha256, now_rfc3339};
use crate::store::records::Table;

pub const RERANK_SCORES: &str = "rerank_scores.lance";

/// One cached score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RerankScoreRecord {
    /// [`cache_key`] of (model, template hash, question, chunk id, chunk text).
    pub key: String,
    /// The scorer: a GGUF's SHA-256, or `endpoint:MODEL`.
    pub model: String,
    pub template_sha256: String,
    pub chunk_id: String,
    pub score: f64,
    pub created_at: String,
    /// What scoring this pair cost when it was computed, ms: its batch's wall time
    /// shared equally by the batch's pairs. A later run that reads the score from the
    /// cache reports this cost, marked cached, so a cached run does not look free.
    /// None in scores cached before costs were kept.
    #[serde(default)]
    pub scoring_ms: Option<f64>,
}

fn scores_table(ws: &crate::store::workspace::Workspace) -> Table<'_> {
    Table::of::<RerankScoreRecord>(ws, RERANK_SCORES)
}

/// Where the scores come from.
#[derive(Debug, Clone)]
pub enum RerankBackend {
    /// A causal GGUF, pointwise P(yes).
    Model(PathBuf),
    /// An endpoint's `/v1/rerank`.
    Endpoint(EndpointSpec),
}

/// A rerank stage as configured for one command.
#[derive(Debug, Clone)]
pub struct RerankSetup {
    pub cut: RerankCut,
    pub backend: RerankBackend,
    pub template: Template,
    /// How a GGUF scorer decodes a question's prompts (`[rerank] share_prefix`).
    pub decode: Decode,
}

impl RerankSetup {
    /// The scorer's name in reports: a GGUF's file name without `.gguf`, or the
    /// endpoint's model (else its URL).
    pub fn scorer_name(&self) -> String {
        match &self.backend {
            RerankBackend::Model(path) => crate::infer::backend::model_name(path),
            RerankBackend::Endpoint(spec) => spec.model.clone().unwrap_or_else(|| spec.url.clone()),
        }
    }

    /// The stage as records and reports name it: `top 10 reranked, 5 kept by MODEL
    /// (TEMPLATE@HASH)`.
    pub fn describe(&self) -> String {
        let shared = match (&self.backend, self.decode) {
            (RerankBackend::Model(_), Decode::SharedPrefix) => ", prefix shared",
            _ => "",
        };
        format!(
            "{} by {} ({}{shared})",
            self.cut,
            self.scorer_name(),
            self.template.label()
        )
    }
}

/// What the flags of a command ask of the stage.
#[derive(Debug, Clone, Default)]
pub struct RerankFlags {
    /// A causal GGUF to score with (wins over any endpoint).
    pub model: Option<PathBuf>,
    pub depth: Option<usize>,
    pub keep: Option<usize>,
    pub prompt: Option<PathBuf>,
}

/// The stage of a command: flags, then `[rerank]`, then the defaults (N = 10, M = 5);
/// the scorer is `--rerank-model`, else an `[[endpoints]]` entry with `rerank = true`,
/// else `[rerank] model`, else the generator. The prompt's slots are checked here,
/// before any model loads.
pub fn setup(ctx: &Context, flags: &RerankFlags) -> Result<RerankSetup> {
    let conf = &ctx.config.rerank;
    let default = RerankCut::default();
    let depth = flags.depth.or(conf.depth).unwrap_or(default.depth);
    let keep = flags.keep.or(conf.keep).unwrap_or(default.keep.min(depth));
    let cut = RerankCut::new(depth, keep).map_err(anyhow::Error::msg)?;
    let template = ctx.template(
        TemplateKind::Rerank,
        flags.prompt.as_deref().or(conf.prompt.as_deref()),
    )?;
    let backend = match (&flags.model, ctx.config.rerank_endpoint()) {
        (Some(m), _) => RerankBackend::Model(m.clone()),
        (None, Some(e)) => RerankBackend::Endpoint(crate::service::base::spec_of(e)?),
        (None, None) => RerankBackend::Model(
            conf.model
                .clone()
                .unwrap_or_else(|| ctx.config.gen_model(&ctx.paths)),
        ),
    };
    Ok(RerankSetup {
        cut,
        backend,
        template,
        decode: if conf.share_prefix {
            Decode::SharedPrefix
        } else {
            Decode::Whole
        },
    })
}

/// The document a scorer reads for a chunk: its header path, then its text.
pub fn document(c: &Chunk) -> String {
    format!("{}\n{}", c.path_label(), c.text)
}

/// The pointwise prompt of one (question, document) pair; both are untrusted.
pub fn pointwise_prompt(
    template: &Template,
    question: &str,
    document: &str,
) -> crate::core::prompt::PromptText {
    fill(
        &template.text,
        &[
            ("question", Slot::Untrusted(question)),
            ("document", Slot::Untrusted(document)),
        ],
    )
}

/// A GGUF scorer, loaded on the first pair the cache lacks: a run whose scores are all
/// cached never loads the model.
struct LazyModel {
    cfg: crate::infer::generate::GenConfig,
    loaded: Option<Generator>,
    decode: Decode,
}

impl LazyModel {
    fn generator(&mut self) -> Result<&Generator> {
        if self.loaded.is_none() {
            let g = load_generator(&self.cfg).with_context(|| {
                format!("cannot load the rerank model {}", self.cfg.model.display())
            })?;
            self.loaded = Some(g);
        }
        Ok(self.loaded.as_ref().expect("loaded above"))
    }
}

enum Scorer {
    Model(LazyModel),
    Endpoint(RerankEndpoint),
}

/// Figures of the stage over a command's run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RerankStats {
    /// Pairs scored by the model or server.
    pub scored: usize,
    /// Pairs found in the cache.
    pub cached: usize,
    /// Wall time spent scoring (cache hits cost none).
    pub scoring_ms: f64,
    /// What the pairs taken from the cache cost when they were scored, ms (0 for
    /// scores cached before costs were kept).
    #[serde(default)]
    pub cached_cost_ms: f64,
}

impl RerankStats {
    /// What the stage cost, cached pairs at the cost they had when computed.
    pub fn cost_ms(&self) -> f64 {
        self.scoring_ms + self.cached_cost_ms
    }
}

/// A question's ranking after the stage, and what the stage cost it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StageRanking {
    pub ids: Vec<String>,
    /// Wall time of the stage for this question, ms (cache lookups included).
    pub ms: f64,
    /// What the stage cost this question: `ms`, plus what the pairs read from the
    /// cache cost when they were scored.
    pub cost_ms: f64,
    /// Pairs of this question read from the cache.
    pub cached: usize,
}

/// An open rerank stage: the scorer ready (a GGUF loads on the first pair the cache
/// lacks), the cache read.
pub struct Reranker {
    scorer: Scorer,
    /// What scores are cached under: the GGUF's SHA-256 or `endpoint:MODEL`.
    model_id: String,
    /// The stage as reports name it ([`RerankSetup::describe`]).
    described: String,
    pub template: Template,
    pub cut: RerankCut,
    /// Cached scores by key, with what each cost when it was computed.
    cache: HashMap<String, (f64, Option<f64>)>,
    pub stats: RerankStats,
}

impl Reranker {
    pub async fn open(ctx: &Context, setup: RerankSetup, choice: &ModelChoice) -> Result<Self> {
        let described = setup.describe();
        let (scorer, model_id) = match setup.backend {
            RerankBackend::Model(path) => {
                let mut cfg = ctx.gen_config(&ModelChoice {
                    model: Some(path.clone()),
                    ..choice.clone()
                });
                cfg.reuse_prefix = false;
                let sha = model_sha256(&ctx.paths.data_dir, &path)?;
                // Shared-prefix scores differ from whole-prompt ones: cached apart.
                let id = match setup.decode {
                    Decode::Whole => sha,
                    Decode::SharedPrefix => format!("{sha}+shared-prefix"),
                };
                let lazy = LazyModel {
                    cfg,
                    loaded: None,
                    decode: setup.decode,
                };
                (Scorer::Model(lazy), id)
            }
            RerankBackend::Endpoint(spec) => {
                let e = RerankEndpoint::new(spec)?;
                let id = e.model_id();
                (Scorer::Endpoint(e), id)
            }
        };
        let table = scores_table(&ctx.workspace);
        let mut cache = HashMap::new();
        if table.exists().await? {
            for r in table.read_all::<RerankScoreRecord>().await? {
                if r.model == model_id && r.template_sha256 == setup.template.sha256 {
                    cache.insert(r.key, (r.score, r.scoring_ms));
                }
            }
        }
        Ok(Self {
            scorer,
            model_id,
            described,
            template: setup.template,
            cut: setup.cut,
            cache,
            stats: RerankStats::default(),
        })
    }

    /// The stage as reports name it ([`RerankSetup::describe`]).
    pub fn describe(&self) -> String {
        self.described.clone()
    }

    fn key(&self, question: &str, c: &Chunk) -> String {
        cache_key(
            &self.model_id,
            &self.template.sha256,
            question,
            &c.id,
            &c.text,
        )
    }

    /// The score of every chunk for `question`, in order: cached ones looked up, the
    /// others scored (in one decode per 64 chunks, or one request) and committed to
    /// the cache before they are returned.
    pub async fn scores(
        &mut self,
        ctx: &Context,
        question: &str,
        chunks: &[&Chunk],
    ) -> Result<Vec<f64>> {
        let keys: Vec<String> = chunks.iter().map(|c| self.key(question, c)).collect();
        let todo: Vec<usize> = (0..chunks.len())
            .filter(|&i| !self.cache.contains_key(&keys[i]))
            .collect();
        self.stats.cached += chunks.len() - todo.len();
        self.stats.cached_cost_ms += keys
            .iter()
            .filter_map(|k| self.cache.get(k).and_then(|(_, ms)| *ms))
            .sum::<f64>();
        if !todo.is_empty() {
            let started = Instant::now();
            let docs: Vec<String> = todo.iter().map(|&i| document(chunks[i])).collect();
            let fresh = self.score_fresh(question, &docs).await?;
            let ms = started.elapsed().as_secs_f64() * 1e3;
            self.stats.scoring_ms += ms;
            self.stats.scored += fresh.len();
            let per_pair = ms / fresh.len().max(1) as f64;
            let now = now_rfc3339();
            let rows: Vec<RerankScoreRecord> = todo
                .iter()
                .zip(&fresh)
                .map(|(&i, &score)| RerankScoreRecord {
                    key: keys[i].clone(),
                    model: self.model_id.clone(),
                    template_sha256: self.template.sha256.clone(),
                    chunk_id: chunks[i].id.clone(),
                    score,
                    created_at: now.clone(),
                    scoring_ms: Some(per_pair),
                })
                .collect();
            scores_table(&ctx.workspace).append(&rows).await?;
            for r in rows {
                self.cache.insert(r.key, (r.score, r.scoring_ms));
            }
        }
        keys.iter()
            .map(|k| {
                self.cache
                    .get(k)
                    .map(|(score, _)| *score)
                    .ok_or_else(|| anyhow::anyhow!("a rerank score went missing"))
            })
            .collect()
    }

    async fn score_fresh(&mut self, question: &str, docs: &[String]) -> Result<Vec<f64>> {
        let template = &self.template;
        match &mut self.scorer {
            Scorer::Endpoint(e) => Ok(e.scores(question, docs).await?),
            Scorer::Model(lazy) => {
                let decode = lazy.decode;
                let g = lazy.generator()?;
                let mut out = Vec::with_capacity(docs.len());
                for group in docs.chunks(crate::infer::pointwise::MAX_PROMPTS) {
                    let prompts = group
                        .iter()
                        .map(|d| vec![ChatMessage::user(pointwise_prompt(template, question, d))])
                        .collect();
                    out.extend(g.score_yes_no(prompts, decode)?.p_yes);
                }
                Ok(out)
            }
        }
    }

    /// `ranked` (a first-stage ranking) through the stage: its first N chunks still
    /// in the corpus scored, re-ordered, the first M kept.
    pub async fn rerank(
        &mut self,
        ctx: &Context,
        r: &Retriever,
        question: &str,
        ranked: &[&str],
    ) -> Result<Vec<Reranked>> {
        let chunks: Vec<&Chunk> = ranked
            .iter()
            .filter_map(|id| r.chunk(id))
            .take(self.cut.depth)
            .collect();
        let scores = self.scores(ctx, question, &chunks).await?;
        let ids: Vec<&str> = chunks.iter().map(|c| c.id.as_str()).collect();
        let mut out = rerank(&ids, &scores, self.cut)?;
        // First-stage ranks are those of the ranking given, not of the chunks found.
        for row in &mut out {
            if let Some(p) = ranked.iter().position(|id| *id == row.id) {
                row.first_rank = p + 1;
            }
        }
        Ok(out)
    }

    /// A question's first-stage ranking by `config`, through the stage: the kept ids
    /// in their new order, and the stage's wall time.
    pub async fn rank_question(
        &mut self,
        ctx: &Context,
        r: &Retriever,
        question: &str,
        config: crate::core::retrieval::RunConfig,
    ) -> Result<StageRanking> {
        let (lists, _) = r.query(question, super::DEFAULT_DEPTH.max(self.cut.depth))?;
        let first = lists.ranking_for(config);
        let started = Instant::now();
        let before = (self.stats.cached, self.stats.cached_cost_ms);
        let kept = self.rerank(ctx, r, question, &first).await?;
        let ms = started.elapsed().as_secs_f64() * 1e3;
        Ok(StageRanking {
            ids: kept.into_iter().map(|k| k.id).collect(),
            ms,
            cost_ms: ms + self.stats.cached_cost_ms - before.1,
            cached: self.stats.cached - before.0,
        })
    }

    /// Scores of the chunks `ids` for `question` as (id, score) pairs, for lists an
    /// evaluation re-orders itself ([`crate::core::retrieval::QueryLists::rerank`]).
    pub async fn scored_ids(
        &mut self,
        ctx: &Context,
        r: &Retriever,
        question: &str,
        ids: &[&str],
    ) -> Result<Vec<crate::core::fusion::Scored>> {
        let chunks: Vec<&Chunk> = ids.iter().filter_map(|id| r.chunk(id)).collect();
        if chunks.len() != ids.len() {
            bail!("a ranked chunk is no longer in the corpus; run raglab index");
        }
        let scores = self.scores(ctx, question, &chunks).await?;
        Ok(chunks
            .iter()
            .zip(scores)
            .map(|(c, score)| crate::core::fusion::Scored {
                id: c.id.clone(),
                score,
            })
            .collect())
    }
}
