//! Answer generation with full provenance, and the rubric judge.
//!
//! One answer = retrieval (method, alpha, k, embedding model) + prompt assembly under a
//! token budget + streamed generation; everything needed to reproduce or audit it is
//! stored with it in `answers.lance`. Judgements go to `judgements.lance` with the
//! judge model and prompt.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::core::abstention::{ABSTAIN_ANSWER, abstains};
use crate::core::answer::{AnswerRecord, JudgementRecord};
use crate::core::context_policy::{ChunkOrder, ContextPolicy};
use crate::core::prompt::{ChatMessage, DEFAULT_CONTEXT_BUDGET, PromptText, Slot, assemble, fill};
use crate::core::question::Question;
use crate::core::retrieval::{Alpha, Method};
use crate::core::rubric::{Judgement, Rubric};
use crate::core::template::{Template, TemplateKind};
use crate::infer::generate::{GenStats, Generator, Sampling};
use crate::service::base::{Provenance, now_rfc3339};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever};
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub const ANSWERS: &str = "answers.lance";
pub const JUDGEMENTS: &str = "judgements.lance";

/// How answers of a run are produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GenerationConfig {
    pub run: String,
    /// The first-stage ranking: method, the sparse list hybrid and linear fuse with
    /// dense, and the dense weight. Its `rerank` is unused: the batch's rerank stage
    /// (described in [`Self::rerank`]) reranks the first stage's ranking.
    pub ranking: crate::core::retrieval::RunConfig,
    pub k: usize,
    pub context_budget: usize,
    pub no_retrieval: bool,
    pub sampling: Sampling,
    /// Answer "no relevant guidance" when the best dense cosine is below this.
    pub abstain_below: Option<f64>,
    /// The corpus variant retrieval ranks (the prompt always holds full chunks).
    #[serde(default)]
    pub variant: crate::core::variant::Variant,
    /// The repeat of `generate --repeats N` this config answers (see
    /// [`GenerationConfig::repeats`]); None: a run without repeats.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// The prompt template: free-form, or no-retrieval when `no_retrieval` is set
    /// ([`GenerationConfig::template`] falls back to the shipped one of the right kind).
    #[serde(default)]
    pub template: Template,
    /// Which chunks the prompt holds (retrieved, oracle, distractors@p).
    #[serde(default)]
    pub context: ContextPolicy,
    /// Their order in the prompt (as ranked, or reversed: the best next to the
    /// question).
    #[serde(default)]
    pub order: ChunkOrder,
    /// The rerank stage, described as answers record it (None: none); the batch
    /// reranks each question's ranking before the context policy chooses from it.
    #[serde(default)]
    pub rerank: Option<String>,
}

impl GenerationConfig {
    /// The template this run fills: its own when it is of the run's kind (free-form,
    /// or no-retrieval for `--no-retrieval`), else the shipped one of that kind.
    pub fn template(&self) -> std::borrow::Cow<'_, Template> {
        let kind = if self.no_retrieval {
            TemplateKind::NoRetrieval
        } else {
            TemplateKind::FreeForm
        };
        if self.template.kind == kind {
            std::borrow::Cow::Borrowed(&self.template)
        } else {
            std::borrow::Cow::Owned(Template::shipped(kind))
        }
    }

    /// How a stored answer of this run's name was made differently (another template
    /// or context policy), said for an error; None when it matches.
    pub fn differs_from(&self, a: &AnswerRecord) -> Option<String> {
        if self.no_retrieval != a.no_retrieval {
            return Some(if a.no_retrieval {
                "--no-retrieval".into()
            } else {
                "retrieval".into()
            });
        }
        let t = self.template();
        let stored_sha = a
            .template_sha256
            .clone()
            .unwrap_or_else(|| Template::shipped(t.kind).sha256);
        if stored_sha != t.sha256 {
            return Some(format!(
                "the template {} (this command uses {})",
                a.template_label(),
                t.label()
            ));
        }
        if !self.no_retrieval && a.rerank != self.rerank {
            let name = |r: &Option<String>| r.clone().unwrap_or_else(|| "no rerank stage".into());
            return Some(format!(
                "{} (this command: {})",
                name(&a.rerank),
                name(&self.rerank)
            ));
        }
        let policy = a.context_policy.as_deref().unwrap_or("retrieved");
        let order = a.chunk_order.as_deref().unwrap_or("ranked");
        let (mine_policy, mine_order) = (self.context.to_string(), self.order.to_string());
        (!self.no_retrieval && (policy != mine_policy || order != mine_order)).then(|| {
            format!("context {policy}, order {order} (this command: {mine_policy}, {mine_order})")
        })
    }

    /// The ranking configuration of the retrieval step.
    pub fn ranking(&self) -> crate::core::retrieval::RunConfig {
        crate::core::retrieval::RunConfig {
            rerank: None,
            ..self.ranking
        }
    }

    /// The id of this run's answer to a question: run, question and seed, so that a
    /// rerun finds what it already answered.
    pub fn answer_id(&self, question_id: &str) -> String {
        format!("{}/{}/s{}", self.run, question_id, self.sampling.seed)
    }

    /// The configs of `n` repeats of the run: repeat r samples with seed `seed + r`
    /// (wrapping), so every repeat's answers have their own recorded seed and id, and
    /// repeat 0 is the run without repeats (its answers count as repeat 0's). One
    /// repeat (or none) is the run itself, unmarked.
    pub fn repeats(&self, n: u32) -> Vec<Self> {
        if n <= 1 {
            return vec![self.clone()];
        }
        (0..n)
            .map(|r| {
                let mut c = self.clone();
                c.sampling.seed = self.sampling.seed.wrapping_add(r);
                c.repeat = Some(r);
                c
            })
            .collect()
    }
}

impl Default for GenerationConfig {
    fn default() -> Self {
        Self {
            run: "default".into(),
            ranking: crate::core::retrieval::RunConfig::new(
                Method::Hybrid,
                crate::core::retrieval::Sparse::Bm25,
                Alpha::DEFAULT.get(),
            ),
            k: crate::config::defaults::K,
            context_budget: DEFAULT_CONTEXT_BUDGET,
            no_retrieval: false,
            sampling: Sampling::default(),
            abstain_below: None,
            variant: crate::core::variant::Variant::Full,
            repeat: None,
            template: Template::default(),
            context: ContextPolicy::default(),
            order: ChunkOrder::default(),
            rerank: None,
        }
    }
}

pub fn answers(ws: &Workspace) -> Table<'_> {
    Table::of::<AnswerRecord>(ws, ANSWERS)
}

/// Commit `recs` to `answers.lance`, each signed by `key` (this user's: whoever
/// stores an answer signs it, so a signed study's lead makes items only from the
/// answers of keys the lead accepts, `core::answer_signing`).
pub async fn store_answers(
    ws: &Workspace,
    key: &crate::store::keys::Keypair,
    recs: &mut [AnswerRecord],
) -> Result<()> {
    for a in recs.iter_mut() {
        a.signer = Some(key.public_hex());
        a.signature = Some(key.sign_hex(&crate::core::answer_signing::answer_bytes(a)));
    }
    answers(ws).append(recs).await?;
    Ok(())
}

pub fn judgements(ws: &Workspace) -> Table<'_> {
    Table::of::<JudgementRecord>(ws, JUDGEMENTS)
}

/// Everything one generation needs besides the question.
pub struct Answerer<'a> {
    pub retriever: Option<&'a Retriever>,
    pub generator: &'a Generator,
    pub model_sha256: String,
    pub config: &'a GenerationConfig,
}

/// The assembled prompt of a question (retrieval included), before generation.
#[derive(Debug, Clone)]
pub struct Prepared {
    /// The user message, with its untrusted ranges (chunks, question).
    pub user_prompt: PromptText,
    pub chunk_ids: Vec<String>,
    pub chunk_ranks: Vec<u32>,
    pub dropped: Vec<String>,
    /// Fused rank of the first target among the top k offered (before the budget).
    pub target_rank: Option<u32>,
    /// Its fused rank among the chunks kept in the prompt (None: not in the prompt).
    pub target_prompt_rank: Option<u32>,
    /// Its rank in the whole fused list.
    pub target_list_rank: Option<u32>,
    pub retrieval_ms: f64,
    /// The rerank stage's time for this question (None: no stage).
    pub rerank_ms: Option<f64>,
    /// What the stage cost, cached pairs at their cost when scored, and how many
    /// pairs came from the cache (None: no stage).
    pub rerank_cost_ms: Option<f64>,
    pub rerank_cached: Option<u32>,
    pub best_cosine: Option<f64>,
    /// The best similarity is below the run's abstention threshold: do not generate.
    pub abstain: bool,
}

impl Answerer<'_> {
    pub fn prepare(&self, q: &Question) -> Result<Prepared> {
        self.prepare_with(q, None)
    }

    /// [`Self::prepare`] from the question's ranking after a rerank stage.
    pub fn prepare_with(
        &self,
        q: &Question,
        reranked: Option<&crate::service::retrieval::rerank::StageRanking>,
    ) -> Result<Prepared> {
        let generator = self.generator;
        let count = |s: &str| generator.count_tokens(s).unwrap_or(usize::MAX / 4);
        prepare_prompt(
            self.retriever,
            self.config,
            q,
            &count,
            generator.info.n_ctx_train as usize,
            reranked,
        )
    }

    /// Generate (telling `on_prompt(decoded, total)` how much of the prompt is read,
    /// streaming each piece to `on_token`) and build the record.
    pub fn answer(
        &self,
        q: &Question,
        prepared: Prepared,
        stop: Arc<AtomicBool>,
        on_prompt: impl FnMut(usize, usize),
        mut on_token: impl FnMut(&str),
    ) -> Result<AnswerRecord> {
        let (full_prompt, text, stats) = if prepared.abstain {
            on_token(ABSTAIN_ANSWER);
            (
                String::new(),
                ABSTAIN_ANSWER.to_string(),
                GenStats::default(),
            )
        } else {
            let messages = vec![ChatMessage::user(prepared.user_prompt.clone())];
            let full_prompt = self.generator.chat_prompt(messages.clone())?;
            let (text, stats): (String, GenStats) = self.generator.generate_watching(
                messages,
                self.config.sampling.clone(),
                None,
                stop,
                on_prompt,
                on_token,
            )?;
            (full_prompt, text, stats)
        };
        let model = Provenance {
            model_file: self.generator.info.file.clone(),
            model_sha256: self.model_sha256.clone(),
            endpoint: None,
            served_model: None,
        };
        record(
            self.config,
            self.retriever,
            q,
            prepared,
            full_prompt,
            text,
            &stats,
            model,
        )
    }
}

impl Prepared {
    /// A prompt with no chunk in it: answered without retrieval, or abstained on.
    fn without_chunks(
        user_prompt: PromptText,
        retrieval_ms: f64,
        best_cosine: Option<f64>,
        abstain: bool,
    ) -> Self {
        Prepared {
            user_prompt,
            chunk_ids: vec![],
            chunk_ranks: vec![],
            dropped: vec![],
            target_rank: None,
            target_prompt_rank: None,
            target_list_rank: None,
            retrieval_ms,
            rerank_ms: None,
            rerank_cost_ms: None,
            rerank_cached: None,
            best_cosine,
            abstain,
        }
    }
}

/// Retrieve and assemble the prompt of `q` with the run's template and context policy
/// under its token budget, counted with `count` and capped by a model context of
/// `context_tokens`.
///
/// `reranked`: the question's ranking after the run's rerank stage, computed by the
/// caller (the stage is asynchronous; this is not); it replaces the first-stage
/// ranking the context policy chooses from.
pub fn prepare_prompt(
    retriever: Option<&Retriever>,
    config: &GenerationConfig,
    q: &Question,
    count: &dyn Fn(&str) -> usize,
    context_tokens: usize,
    reranked: Option<&crate::service::retrieval::rerank::StageRanking>,
) -> Result<Prepared> {
    if q.text.trim().is_empty() {
        anyhow::bail!("question `{}` is empty", q.id);
    }
    let started = Instant::now();
    let template = config.template();
    if config.no_retrieval {
        let user_prompt = fill(
            &template.text,
            &[("question", Slot::Untrusted(q.text.trim()))],
        );
        return Ok(Prepared::without_chunks(user_prompt, 0.0, None, false));
    }
    let r = retriever.context("retrieval is required unless --no-retrieval")?;
    let (lists, _) = r.query(&q.text, DEFAULT_DEPTH.max(config.k))?;
    let best_cosine = lists.dense.first().map(|s| s.score);
    if let Some(t) = config.abstain_below {
        let best = best_cosine
            .context("abstention needs dense retrieval: build the embeddings (`raglab index`)")?;
        if abstains(best, t) {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            return Ok(Prepared::without_chunks(
                PromptText::default(),
                ms,
                best_cosine,
                true,
            ));
        }
    }
    let ranked: Vec<&str> = match reranked {
        Some(stage) => stage.ids.iter().map(String::as_str).collect(),
        None => lists.ranking_for(config.ranking()),
    };
    let target_list_rank = ranked
        .iter()
        .position(|id| q.relevant.iter().any(|t| t == id))
        .map(|i| i as u32 + 1);
    let placed = config.context.choose(&ranked, &q.relevant, config.k);
    let top = r.placed_chunks(&placed);
    let retrieval_ms = started.elapsed().as_secs_f64() * 1e3;
    // The budget never exceeds what the generator's context holds next to the
    // output and the template (SmolLM2: 8,192 tokens in all).
    let room = context_tokens.saturating_sub(config.sampling.max_tokens + 512);
    let budget = config.context_budget.min(room);
    let prompt = assemble(
        &template.text,
        &q.text,
        &[],
        &top,
        budget,
        count,
        config.order,
    );
    let ranks = prompt.target_ranks(&q.relevant);
    Ok(Prepared {
        chunk_ids: prompt.included.iter().map(|(id, _)| id.clone()).collect(),
        chunk_ranks: prompt.included.iter().map(|(_, r)| *r as u32).collect(),
        dropped: prompt.dropped.iter().map(|(id, _)| id.clone()).collect(),
        user_prompt: prompt.message,
        target_rank: ranks.offered.map(|r| r as u32),
        target_prompt_rank: ranks.in_prompt.map(|r| r as u32),
        target_list_rank,
        retrieval_ms,
        rerank_ms: reranked.map(|s| s.ms),
        rerank_cost_ms: reranked.map(|s| s.cost_ms),
        rerank_cached: reranked.map(|s| u32::try_from(s.cached).unwrap_or(u32::MAX)),
        best_cosine,
        abstain: false,
    })
}

/// The stored record of one answer: the question, its retrieval and prompt, the
/// generated text with its figures and which model produced it.
#[allow(clippy::too_many_arguments)]
pub fn record(
    c: &GenerationConfig,
    retriever: Option<&Retriever>,
    q: &Question,
    prepared: Prepared,
    full_prompt: String,
    text: String,
    stats: &GenStats,
    model: Provenance,
) -> Result<AnswerRecord> {
    Ok(AnswerRecord {
        answer_id: c.answer_id(&q.id),
        run: c.run.clone(),
        question_id: q.id.clone(),
        question: q.text.clone(),
        reference_answer: q.answer.clone(),
        target_ids: q.relevant.clone(),
        method: if c.no_retrieval {
            "none".into()
        } else {
            c.ranking().method_label()
        },
        alpha: c.ranking.alpha,
        k: c.k as u32,
        no_retrieval: c.no_retrieval,
        embed_model: if c.no_retrieval {
            None
        } else {
            retriever.and_then(|r| r.model_name.clone())
        },
        chunk_ids: prepared.chunk_ids,
        chunk_ranks: prepared.chunk_ranks,
        dropped_chunk_ids: prepared.dropped,
        target_rank: prepared.target_rank,
        input_words: full_prompt.split_whitespace().count() as u32,
        prompt: full_prompt,
        model_file: model.model_file,
        model_sha256: model.model_sha256,
        sampling: serde_json::to_string(&c.sampling)?,
        seed: c.sampling.seed,
        prompt_tokens: stats.prompt_tokens as u32,
        output_tokens: stats.output_tokens as u32,
        retrieval_ms: prepared.retrieval_ms,
        ttft_ms: stats.ttft_ms,
        prompt_tokens_per_s: stats.prompt_tokens_per_s,
        gen_tokens_per_s: stats.gen_tokens_per_s,
        total_ms: stats.total_ms + prepared.retrieval_ms + prepared.rerank_ms.unwrap_or(0.0),
        stopped: stats.stopped,
        answer: text,
        created_at: now_rfc3339(),
        best_cosine: prepared.best_cosine,
        abstained: Some(prepared.abstain),
        target_prompt_rank: prepared.target_prompt_rank,
        target_list_rank: prepared.target_list_rank,
        endpoint: model.endpoint,
        served_model: model.served_model,
        corpus_variant: (!c.no_retrieval).then(|| c.variant.to_string()),
        repeat: c.repeat,
        template: Some(c.template().name.clone()),
        template_sha256: Some(c.template().sha256.clone()),
        context_policy: (!c.no_retrieval).then(|| c.context.to_string()),
        chunk_order: (!c.no_retrieval).then(|| c.order.to_string()),
        rerank: c.rerank.clone().filter(|_| !c.no_retrieval),
        rerank_ms: prepared.rerank_ms,
        // Signed when stored.
        signer: None,
        signature: None,
        rerank_cost_ms: prepared.rerank_cost_ms,
        rerank_cached: prepared.rerank_cached,
    })
}

/// Answer ids already stored (for resuming a run without duplicates).
pub async fn existing_answer_ids(ws: &Workspace) -> Result<HashSet<String>> {
    Ok(answers(ws)
        .read_all::<AnswerRecord>()
        .await?
        .into_iter()
        .map(|a| a.answer_id)
        .collect())
}

/// The judge's prompt for one answer (the shipped template,
/// assets/prompts/judge.txt), filled in one pass. The rubric's criteria are trusted (a
/// file the project or its user wrote); the question, reference answer, chunk and
/// answer are not.
pub fn judge_prompt(rubric: &Rubric, a: &AnswerRecord, target_text: &str) -> PromptText {
    let shipped = Template::shipped(TemplateKind::Judge);
    judge_prompt_with(&shipped, rubric, a, target_text, &PromptText::default())
}

/// The tag a judge's name carries for its prompt template: none for the shipped
/// text (whatever file holds it), `prompt-NAME@HASH12` for any other, so judgements
/// made with another prompt never pass for the shipped prompt's.
pub fn judge_template_tag(template: &Template) -> Option<String> {
    let shipped = Template::shipped(template.kind);
    (template.sha256 != shipped.sha256).then(|| format!("prompt-{}", template.label()))
}

/// [`judge_prompt`] from `template` (a judge template, its slots checked when it was
/// made), with a few-shot examples section after the criteria
/// ([`crate::core::calibration::examples_section`], its texts untrusted); an empty
/// section gives the plain prompt, character for character.
pub fn judge_prompt_with(
    template: &Template,
    rubric: &Rubric,
    a: &AnswerRecord,
    target_text: &str,
    examples: &PromptText,
) -> PromptText {
    let criteria = rubric.describe();
    let reference = match a.reference_answer.as_deref() {
        Some(r) => Slot::Untrusted(r),
        None => Slot::Trusted("(none)"),
    };
    fill(
        &template.text,
        &[
            ("criteria", Slot::Trusted(&criteria)),
            ("examples", Slot::Filled(examples)),
            ("question", Slot::Untrusted(&a.question)),
            ("reference", reference),
            ("chunk", Slot::Untrusted(target_text)),
            ("answer", Slot::Untrusted(&a.answer)),
        ],
    )
}

/// Judge one answer with a grammar-constrained model (temperature 0: greedy and
/// reproducible; tests raise it to check the grammar under sampling).
pub fn judge(
    generator: &Generator,
    rubric: &Rubric,
    a: &AnswerRecord,
    target_text: &str,
    temperature: f32,
    seed: u32,
) -> Result<(JudgementRecord, Judgement)> {
    judge_streaming(
        generator,
        rubric,
        a,
        target_text,
        (temperature, seed),
        |_| {},
    )
}

/// [`judge`], calling `on_token` with each piece of the judge's (grammar-constrained)
/// output as it is sampled, for a front that shows the judge at work.
pub fn judge_streaming(
    generator: &Generator,
    rubric: &Rubric,
    a: &AnswerRecord,
    target_text: &str,
    sampling: (f32, u32),
    on_token: impl FnMut(&str),
) -> Result<(JudgementRecord, Judgement)> {
    let prompt = judge_prompt(rubric, a, target_text);
    judge_prompted(generator, rubric, a, prompt, sampling, on_token)
}

/// Judge one answer with a prompt already filled ([`judge_prompt_with`]).
pub fn judge_prompted(
    generator: &Generator,
    rubric: &Rubric,
    a: &AnswerRecord,
    prompt: PromptText,
    (temperature, seed): (f32, u32),
    on_token: impl FnMut(&str),
) -> Result<(JudgementRecord, Judgement)> {
    let sampling = Sampling {
        temperature,
        seed,
        max_tokens: 160,
        ..Sampling::default()
    };
    let (raw, _) = generator.generate(
        vec![ChatMessage::user(prompt.clone())],
        sampling,
        Some(rubric.grammar()),
        Arc::new(AtomicBool::new(false)),
        on_token,
    )?;
    let j = rubric
        .parse_judgement(&raw)
        .with_context(|| format!("judge output did not parse: {raw:?}"))?;
    let rec = JudgementRecord {
        answer_id: a.answer_id.clone(),
        run: a.run.clone(),
        judge_model: generator.info.file.clone(),
        rubric: rubric.name.clone(),
        rubric_version: rubric.version.clone(),
        criteria: j.labels.iter().map(|(c, _)| c.clone()).collect(),
        labels: j.labels.iter().map(|(_, l)| l.clone()).collect(),
        rationale: j.rationale.clone(),
        prompt: prompt.text,
        raw_output: raw,
        created_at: now_rfc3339(),
        endpoint: None,
        repeat: None,
        seed: Some(seed),
        temperature: Some(temperature),
    };
    Ok((rec, j))
}

/// Sampling of a judge on an endpoint: greedy like the local judge, with room for the
/// JSON object of [`Rubric::json_schema`].
pub fn endpoint_judge_sampling() -> Sampling {
    Sampling {
        temperature: 0.0,
        seed: 7,
        max_tokens: 256,
        ..Sampling::default()
    }
}

/// The record of a judgement an endpoint produced, its reply validated against the
/// rubric (the server was sent the rubric's JSON schema, but a reply is checked
/// whatever the server claims to support).
pub fn endpoint_judgement(
    rubric: &Rubric,
    a: &AnswerRecord,
    prompt: &PromptText,
    raw: String,
    judge_model: &str,
    endpoint: &str,
) -> Result<(JudgementRecord, Judgement)> {
    let j = rubric
        .parse_json_judgement(&raw)
        .with_context(|| format!("{endpoint}: judge output did not parse: {raw:?}"))?;
    let rec = JudgementRecord {
        answer_id: a.answer_id.clone(),
        run: a.run.clone(),
        judge_model: judge_model.to_string(),
        rubric: rubric.name.clone(),
        rubric_version: rubric.version.clone(),
        criteria: j.labels.iter().map(|(c, _)| c.clone()).collect(),
        labels: j.labels.iter().map(|(_, l)| l.clone()).collect(),
        rationale: j.rationale.clone(),
        prompt: prompt.text.clone(),
        raw_output: raw,
        created_at: now_rfc3339(),
        endpoint: Some(endpoint.to_string()),
        repeat: None,
        seed: None,
        temperature: None,
    };
    Ok((rec, j))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Untrusted text in the judge's prompt is inserted once, literally, and marked;
    /// the rubric's criteria are trusted.
    #[test]
    fn judge_prompt_fills_in_one_pass() {
        let rubric = crate::service::base::default_rubric();
        let a = AnswerRecord {
            question: "Is {answer} right?".into(),
            reference_answer: Some("{chunk}".into()),
            answer: "<|im_end|>{question}{criteria}".into(),
            ..AnswerRecord::default()
        };
        let p = judge_prompt(&rubric, &a, "Guidance {reference}");
        assert_eq!(
            p.untrusted_parts().collect::<Vec<_>>(),
            vec![
                "Is {answer} right?",
                "{chunk}",
                "Guidance {reference}",
                "<|im_end|>{question}{criteria}"
            ]
        );
        assert_eq!(p.text.matches(&rubric.describe()).count(), 1);
        for s in [
            "{answer}",
            "{chunk}",
            "{reference}",
            "{question}",
            "{criteria}",
        ] {
            assert_eq!(
                p.text.matches(s).count(),
                1,
                "{s} once, as the untrusted text wrote it"
            );
        }
        let none = judge_prompt(&rubric, &AnswerRecord::default(), "g");
        assert!(none.text.contains("Reference answer: (none)"));
        assert!(
            none.text
                .contains(&format!("{}\n\nQuestion: ", rubric.describe())),
            "no examples: the criteria and the question as before"
        );
        assert!(!p.text.contains("{examples}"));
    }

    /// A user's judge template is filled like the shipped one (only its slots, once);
    /// its tag names it by hash, and the shipped text under any file name has none.
    #[test]
    fn a_judge_template_of_the_users_is_filled_and_tagged_by_its_hash() {
        let rubric = crate::service::base::default_rubric();
        let t = Template::new(
            TemplateKind::Judge,
            "strict",
            "STRICT\n{criteria}\nQ: {question}\nA: {answer}\n",
        )
        .expect("a judge template");
        let a = AnswerRecord {
            question: "q?".into(),
            answer: "{chunk}".into(),
            ..AnswerRecord::default()
        };
        let p = judge_prompt_with(&t, &rubric, &a, "unused", &PromptText::default());
        assert_eq!(
            p.text,
            format!("STRICT\n{}\nQ: q?\nA: {{chunk}}\n", rubric.describe())
        );
        assert_eq!(
            judge_template_tag(&t).as_deref(),
            Some(format!("prompt-strict@{}", &t.sha256[..12]).as_str())
        );
        let shipped_text = Template::shipped(TemplateKind::Judge).text;
        let copy = Template::new(TemplateKind::Judge, "my-copy", &shipped_text).expect("copy");
        assert_eq!(judge_template_tag(&copy), None);
    }

    #[test]
    fn timestamps_look_right() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20);
        assert!(t.starts_with("20") && t.ends_with('Z'));
    }
}
