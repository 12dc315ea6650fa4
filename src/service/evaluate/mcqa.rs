//! Multiple-choice QA evaluation: for each question, retrieve once, then
//! ask the generator for one option letter with the top-k chunks for every k asked
//! (k = 0: no retrieval), grammar-constrained and greedy, and store each graded answer
//! with its provenance in `mcqa.lance`. A run resumes where it stopped: answers are
//! committed per question and (run, question, k) is never answered twice.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::Deserialize;

use crate::core::context_policy::{ChunkOrder, ContextPolicy};
use crate::core::mcqa::{self, McqaRecord, Outcome, grammar, letter, parse_choice, render_options};
use crate::core::prompt::{
    ChatMessage, ContextChunk, PromptText, Slot, assemble, estimate_tokens, fill,
};
use crate::core::retrieval::Method;
use crate::core::template::Template;
use crate::infer::endpoint::{ChatReply, Constraint, Endpoint};
use crate::infer::generate::{Generator, Sampling};
use crate::service::base::{
    Backend, Context, DESCRIPTIVE_FIELDS, ModelChoice, Pool, Role, now_rfc3339, parse_record,
    read_text, run_on_pool,
};
use crate::service::retrieval::{DEFAULT_DEPTH, Retriever};
use crate::store::records::Table;
use crate::store::workspace::Workspace;

pub const MCQA: &str = "mcqa.lance";
/// Topic label of questions with no topic of their own or of their target chunk.
pub const NO_TOPIC: &str = "(none)";

/// A multiple-choice question as read from JSONL:
/// `{id, text | question, options: [..] | {"A": ..}, answer, relevant?, topic?}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McqInput {
    pub id: String,
    #[serde(alias = "question")]
    pub text: String,
    pub options: OptionsInput,
    /// The correct option, as its text or its letter.
    pub answer: String,
    #[serde(default)]
    pub relevant: Vec<String>,
    #[serde(default)]
    pub topic: Option<String>,
}

/// Options as a list, or as an object keyed by letter (`{"A": "...", "B": "..."}`,
/// taken in key order).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OptionsInput {
    List(Vec<String>),
    Keyed(std::collections::BTreeMap<String, String>),
}

/// A validated question.
#[derive(Debug, Clone)]
pub struct McqQuestion {
    pub id: String,
    pub text: String,
    pub options: Vec<String>,
    pub answer: usize,
    pub relevant: Vec<String>,
    pub topic: Option<String>,
}

impl McqInput {
    pub fn validate(self) -> Result<McqQuestion, mcqa::McqError> {
        let options = match self.options {
            OptionsInput::List(v) => v,
            OptionsInput::Keyed(m) => m.into_values().collect(),
        };
        let answer = mcqa::resolve_answer(&options, &self.answer)?;
        Ok(McqQuestion {
            id: self.id,
            text: self.text,
            options,
            answer,
            relevant: self.relevant,
            topic: self.topic,
        })
    }
}

/// Read and validate a question file; every bad line is reported, none is skipped.
pub fn read_mcq_questions(path: &std::path::Path) -> Result<Vec<McqQuestion>> {
    let text = read_text(path)?;
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for (i, line) in text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
    {
        let parsed = parse_record::<McqInput>(line, DESCRIPTIVE_FIELDS)
            .map_err(|e| e.to_string())
            .and_then(|q| q.validate().map_err(|e| e.to_string()));
        match parsed {
            Ok(q) if q.text.trim().is_empty() => {
                errors.push(format!("{}:{}: empty question", path.display(), i + 1));
            }
            Ok(q) => out.push(q),
            Err(e) => errors.push(format!("{}:{}: {e}", path.display(), i + 1)),
        }
    }
    if !errors.is_empty() {
        let shown: Vec<&str> = errors.iter().take(5).map(String::as_str).collect();
        bail!(
            "{} bad multiple-choice question(s); expected {{id, text, options, answer, relevant?, topic?}}:\n  {}",
            errors.len(),
            shown.join("\n  ")
        );
    }
    if out.is_empty() {
        bail!("{}: no questions", path.display());
    }
    Ok(out)
}

pub fn mcqa_table(ws: &Workspace) -> Table<'_> {
    Table::of::<McqaRecord>(ws, MCQA)
}

/// Stored answers as report inputs.
pub fn outcomes(records: &[McqaRecord]) -> Vec<Outcome> {
    records
        .iter()
        .map(|r| Outcome {
            k: r.k as usize,
            topic: r.topic.clone(),
            correct: r.correct,
            answer: r.answer.chars().next().unwrap_or('?'),
            predicted: r.predicted.as_deref().and_then(|p| p.chars().next()),
            target_rank: r.target_rank.map(|x| x as usize),
        })
        .collect()
}

/// How a run retrieves and prompts (the generator answering is chosen apart: the
/// local model or the endpoint pool).
pub struct McqaRunner<'a> {
    pub run: String,
    pub retriever: Option<&'a Retriever>,
    pub method: Method,
    /// The sparse list hybrid and linear fuse with dense.
    pub sparse: crate::core::retrieval::Sparse,
    pub alpha: f64,
    pub context_budget: usize,
    pub pipeline: McqaPipeline,
    /// The rerank stage as answers name it; None: no stage.
    pub rerank: Option<String>,
    /// Each question's ranking after the stage (question id -> kept ids and the
    /// stage's time); the prompts of every k > 0 choose from it.
    pub reranked: HashMap<String, crate::service::retrieval::rerank::StageRanking>,
}

/// What an MCQA run varies besides retrieval: its two templates (with and without
/// context), which chunks a prompt holds and their order.
#[derive(Debug, Clone)]
pub struct McqaPipeline {
    pub with_context: Template,
    pub without_context: Template,
    pub context: ContextPolicy,
    pub order: ChunkOrder,
}

impl McqaPipeline {
    /// The pipeline with the shipped templates, retrieved chunks as ranked.
    #[cfg(test)]
    pub fn shipped() -> Self {
        Self {
            with_context: Template::shipped(crate::core::template::TemplateKind::MultipleChoice),
            without_context: Template::shipped(
                crate::core::template::TemplateKind::MultipleChoiceNoContext,
            ),
            context: ContextPolicy::default(),
            order: ChunkOrder::default(),
        }
    }

    /// The template a prompt with k chunks fills.
    pub fn template(&self, k: usize) -> &Template {
        if k == 0 {
            &self.without_context
        } else {
            &self.with_context
        }
    }
}

/// One (question, k) prompt, assembled and ready for a generator.
#[derive(Debug, Clone)]
pub struct McqaPrompt {
    pub question: McqQuestion,
    pub k: usize,
    pub user: PromptText,
    pub chunk_ids: Vec<String>,
    /// Fused rank of the first target in the prompt.
    pub target_rank: Option<u32>,
    /// Rank of the first target in the whole fused list.
    pub target_list_rank: Option<u32>,
    pub topic: String,
    pub embed_model: Option<String>,
    /// The question's one retrieval (serves every k > 0; 0 for k = 0), the rerank
    /// stage's time included.
    pub retrieval_ms: f64,
    /// The rerank stage's part of it (None: no stage, or k = 0).
    pub rerank_ms: Option<f64>,
    /// Assembling this prompt (chunk texts and token budget).
    pub assemble_ms: f64,
}

/// A generator's answer to one [`McqaPrompt`], with its provenance.
#[derive(Debug, Clone)]
pub struct McqaReply {
    pub raw: String,
    pub predicted: Option<usize>,
    /// The prompt as the model saw it: the chat-templated text (local), or the
    /// messages as sent (an endpoint applies its own template).
    pub prompt: String,
    pub prompt_tokens: u32,
    pub answer_ms: f64,
    pub model_file: String,
    pub model_sha256: String,
    pub endpoint: Option<String>,
    pub served_model: Option<String>,
}

impl McqaRunner<'_> {
    /// Retrieve once for `q` and assemble its prompt for every k in `ks` not in
    /// `skip`. `count` counts tokens as the generator will; `context_tokens` is the
    /// generator's window (512 of it kept for the template, the options and the
    /// answer).
    pub fn prompts(
        &self,
        q: &McqQuestion,
        ks: &[usize],
        skip: &HashSet<u32>,
        count: &dyn Fn(&str) -> usize,
        context_tokens: usize,
    ) -> Result<Vec<McqaPrompt>> {
        let max_k = ks.iter().copied().max().unwrap_or(0);
        let started = Instant::now();
        let (ranked, embed_model): (Vec<String>, Option<String>) = if max_k == 0 {
            (Vec::new(), None)
        } else {
            let r = self
                .retriever
                .context("k > 0 needs the workspace's retrieval indexes")?;
            let ranked = match self.reranked.get(&q.id) {
                Some(stage) => stage.ids.clone(),
                None => {
                    let (lists, _) = r.query(&q.text, DEFAULT_DEPTH.max(max_k))?;
                    lists
                        .ranking_for(crate::core::retrieval::RunConfig::new(
                            self.method,
                            self.sparse,
                            self.alpha,
                        ))
                        .into_iter()
                        .map(str::to_string)
                        .collect()
                }
            };
            (ranked, r.model_name.clone())
        };
        // The stage's time (ranked before any answer) is part of the retrieval's.
        let rerank_ms = self.reranked.get(&q.id).map(|s| s.ms);
        let retrieval_ms = started.elapsed().as_secs_f64() * 1e3 + rerank_ms.unwrap_or(0.0);
        let target_list_rank = ranked
            .iter()
            .position(|id| q.relevant.contains(id))
            .map(|i| i as u32 + 1);
        let topic = q
            .topic
            .clone()
            .or_else(|| {
                let r = self.retriever?;
                q.relevant.iter().find_map(|t| r.chunk(t)?.topic.clone())
            })
            .unwrap_or_else(|| NO_TOPIC.to_string());
        let options = render_options(&q.options);
        let budget = self.context_budget.min(context_tokens.saturating_sub(512));
        let mut out = Vec::new();
        for &k in ks {
            if skip.contains(&(k as u32)) {
                continue;
            }
            let t0 = Instant::now();
            let top = if k == 0 {
                Vec::new()
            } else {
                let retriever = self.retriever.context("retrieval indexes")?;
                let placed = self.pipeline.context.choose(&ranked, &q.relevant, k);
                retriever.placed_chunks(&placed)
            };
            let (user, included) =
                user_prompt(&self.pipeline, &q.text, &options, k, &top, (budget, count));
            // The best-ranked target's fused rank among the chunks kept, wherever the
            // order put it (0: placed by the context policy, not ranked).
            let target_rank = included
                .iter()
                .filter(|(id, _)| q.relevant.contains(id))
                .map(|(_, r)| *r as u32)
                .min();
            let chunk_ids = included.into_iter().map(|(id, _)| id).collect();
            out.push(McqaPrompt {
                question: q.clone(),
                k,
                user,
                chunk_ids,
                target_rank,
                target_list_rank,
                topic: topic.clone(),
                embed_model: if k == 0 { None } else { embed_model.clone() },
                // The one retrieval serves every k > 0; k = 0 needs none, so none of
                // it is part of that answer's end-to-end latency.
                retrieval_ms: if k == 0 { 0.0 } else { retrieval_ms },
                rerank_ms: if k == 0 { None } else { rerank_ms },
                assemble_ms: t0.elapsed().as_secs_f64() * 1e3,
            });
        }
        Ok(out)
    }

    /// The graded record of `reply` to `p`.
    pub fn record(&self, p: &McqaPrompt, reply: McqaReply) -> McqaRecord {
        let q = &p.question;
        McqaRecord {
            run: self.run.clone(),
            question_id: q.id.clone(),
            k: p.k as u32,
            topic: p.topic.clone(),
            method: if p.k == 0 {
                "none".into()
            } else {
                crate::core::retrieval::RunConfig::new(self.method, self.sparse, self.alpha)
                    .method_label()
            },
            alpha: self.alpha,
            embed_model: p.embed_model.clone(),
            options: q.options.clone(),
            answer: letter(q.answer).to_string(),
            predicted: reply.predicted.map(|i| letter(i).to_string()),
            correct: reply.predicted == Some(q.answer),
            raw_output: reply.raw,
            target_ids: q.relevant.clone(),
            chunk_ids: p.chunk_ids.clone(),
            target_rank: p.target_rank,
            target_list_rank: p.target_list_rank,
            prompt: reply.prompt,
            prompt_tokens: reply.prompt_tokens,
            retrieval_ms: p.retrieval_ms,
            total_ms: p.retrieval_ms + p.assemble_ms + reply.answer_ms,
            model_file: reply.model_file,
            model_sha256: reply.model_sha256,
            created_at: now_rfc3339(),
            endpoint: reply.endpoint,
            served_model: reply.served_model,
            template: Some(self.pipeline.template(p.k).name.clone()),
            template_sha256: Some(self.pipeline.template(p.k).sha256.clone()),
            context_policy: (p.k > 0).then(|| self.pipeline.context.to_string()),
            chunk_order: (p.k > 0).then(|| self.pipeline.order.to_string()),
            rerank: self.rerank.clone().filter(|_| p.k > 0),
            rerank_ms: p.rerank_ms,
        }
    }
}

/// Answer `q` with the local model once per k in `ks` (skipping those in `skip`):
/// greedy, grammar-constrained to one option letter.
pub fn answer_locally(
    runner: &McqaRunner<'_>,
    generator: &Generator,
    model_sha256: &str,
    q: &McqQuestion,
    ks: &[usize],
    skip: &HashSet<u32>,
) -> Result<Vec<McqaRecord>> {
    let count = |s: &str| generator.count_tokens(s).unwrap_or(usize::MAX / 4);
    let prompts = runner.prompts(q, ks, skip, &count, generator.info.n_ctx_train as usize)?;
    let mut out = Vec::new();
    for p in &prompts {
        let t0 = Instant::now();
        let messages = vec![ChatMessage::user(p.user.clone())];
        let prompt = generator.chat_prompt(messages.clone())?;
        let sampling = Sampling {
            temperature: 0.0,
            max_tokens: 2,
            ..Sampling::default()
        };
        let (raw, stats) = generator.generate(
            messages,
            sampling,
            Some(grammar(q.options.len())),
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )?;
        let reply = McqaReply {
            predicted: parse_choice(&raw, q.options.len()),
            raw,
            prompt,
            prompt_tokens: stats.prompt_tokens as u32,
            answer_ms: t0.elapsed().as_secs_f64() * 1e3,
            model_file: generator.info.file.clone(),
            model_sha256: model_sha256.to_string(),
            endpoint: None,
            served_model: None,
        };
        out.push(runner.record(p, reply));
    }
    Ok(out)
}

/// Greedy sampling with room for [`mcqa::choice_schema`]'s object (`{"answer": "B"}`).
/// The grammar a server makes of the schema lets whitespace runs stand between the
/// object's tokens, and SmolLM2 was seen to spend 16 tokens before the closing brace
/// (`{\n  "answer"\n    : "B"\n`, cut, unreadable); the grammar ends the reply at the
/// brace, so a larger cap costs nothing on a well-behaved reply.
fn endpoint_sampling() -> Sampling {
    Sampling {
        temperature: 0.0,
        max_tokens: 64,
        ..Sampling::default()
    }
}

/// The user message for `k` chunks of `top` (k = 0: the no-context baseline) and the
/// ids of the chunks it holds. The question, the options and the chunks are untrusted
/// and filled in one pass.
pub fn user_prompt(
    pipeline: &McqaPipeline,
    question: &str,
    options: &str,
    k: usize,
    top: &[ContextChunk],
    (budget, count): (usize, &dyn Fn(&str) -> usize),
) -> (PromptText, Vec<(String, usize)>) {
    if k == 0 {
        let p = fill(
            &pipeline.without_context.text,
            &[
                ("question", Slot::Untrusted(question.trim())),
                ("options", Slot::Untrusted(options)),
            ],
        );
        return (p, Vec::new());
    }
    let p = assemble(
        &pipeline.with_context.text,
        question,
        &[("options", Slot::Untrusted(options))],
        top,
        budget,
        count,
        pipeline.order,
    );
    (p.message, p.included)
}

/// How an MCQA run answers: its name, retrieval settings and generator.
#[derive(Debug, Clone)]
pub struct McqaRequest {
    pub run: String,
    pub method: Method,
    /// The sparse list hybrid and linear fuse with dense.
    pub sparse: crate::core::retrieval::Sparse,
    pub alpha: f64,
    pub context_budget: usize,
    /// Answer at most this many new questions.
    pub limit: Option<usize>,
    pub model: ModelChoice,
    /// The embedding model of the retrieval.
    pub embed: ModelChoice,
    pub reuse_prefix: bool,
    /// Use the local model even when `[[endpoints]]` are configured.
    pub local: bool,
    pub pipeline: McqaPipeline,
    /// A rerank stage between retrieval and the prompts of k > 0.
    pub rerank: Option<crate::service::retrieval::rerank::RerankSetup>,
}

/// The run's stored answers to these questions; an error when there are none.
pub async fn run_records(
    ctx: &Context,
    run: &str,
    questions: &[McqQuestion],
) -> Result<Vec<McqaRecord>> {
    let ids: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let records: Vec<McqaRecord> = mcqa_table(&ctx.workspace)
        .read_all::<McqaRecord>()
        .await?
        .into_iter()
        .filter(|r| r.run == run && ids.contains(r.question_id.as_str()))
        .collect();
    if records.is_empty() {
        bail!(
            "run `{run}` has no answers for these questions yet (drop --report-only to answer them)"
        );
    }
    Ok(records)
}

/// The retriever of a run with any k > 0 (None: only the no-retrieval baseline),
/// warning through `notice` about questions whose targets are not in the workspace.
async fn open_retriever(
    ctx: &Context,
    args: &McqaRequest,
    questions: &[McqQuestion],
    ks: &[usize],
    notice: &dyn Fn(String),
) -> Result<Option<Retriever>> {
    if ks.iter().all(|&k| k == 0) {
        return Ok(None);
    }
    let r = crate::service::retrieval::open_for(ctx, args.method, &args.embed).await?;
    let missing = questions
        .iter()
        .filter(|q| !q.relevant.is_empty() && q.relevant.iter().all(|t| r.chunk(t).is_none()))
        .count();
    if missing > 0 {
        // A common cause: JSONL records chunked by headers get ids `ID#top`.
        let docs: HashSet<&str> = r.chunks.iter().map(|c| c.doc_id.as_str()).collect();
        let doc_ids = questions
            .iter()
            .any(|q| q.relevant.iter().any(|t| docs.contains(t.as_str())));
        notice(format!(
            "warning: {missing} question(s) name target chunks that are not in this workspace; they count as \"target not retrieved\"{}",
            if doc_ids {
                " (their targets are document ids: ingest with `--chunker none` to keep one chunk per record, named by its id)"
            } else {
                ""
            }
        ));
    }
    Ok(Some(r))
}

/// Answer every (question, k) the run lacks, committing per question.
/// `notice` receives lines for the user (what will run, warnings); `progress` gets
/// (questions done, questions, correct answers, answers).
pub async fn answer_questions(
    ctx: &Context,
    args: &McqaRequest,
    questions: &[McqQuestion],
    ks: &[usize],
    notice: &dyn Fn(String),
    progress: &dyn Fn(usize, usize, usize, usize),
) -> Result<()> {
    // The run's stored answers, read once: what is done, and with which settings.
    let stored: Vec<McqaRecord> = mcqa_table(&ctx.workspace)
        .read_all::<McqaRecord>()
        .await?
        .into_iter()
        .filter(|r| r.run == args.run)
        .collect();
    let done: HashSet<(String, u32)> = stored
        .iter()
        .map(|r| (r.question_id.clone(), r.k))
        .collect();
    let mut todo: Vec<(&McqQuestion, HashSet<u32>)> = questions
        .iter()
        .map(|q| {
            let skip: HashSet<u32> = ks
                .iter()
                .map(|&k| k as u32)
                .filter(|k| done.contains(&(q.id.clone(), *k)))
                .collect();
            (q, skip)
        })
        .filter(|(_, skip)| skip.len() < ks.len())
        .collect();
    todo.truncate(args.limit.unwrap_or(usize::MAX));
    if todo.is_empty() {
        notice(format!("run `{}`: nothing left to answer", args.run));
        return Ok(());
    }
    let role = Role::Generator {
        reuse_prefix: args.reuse_prefix,
    };
    let backend = Backend::open_named(ctx, &args.model, args.local, role).await?;
    let model_name = backend.model_name();
    check_run_is_consistent(&stored, args, &model_name)?;
    let retriever = open_retriever(ctx, args, questions, ks, notice).await?;
    let reranked = match (&args.rerank, &retriever) {
        (Some(setup), Some(r)) => {
            let asked: Vec<&McqQuestion> = todo.iter().map(|(q, _)| *q).collect();
            notice(format!(
                "reranking {} questions: {}",
                asked.len(),
                setup.describe()
            ));
            rerank_questions(ctx, r, setup, args, &asked).await?
        }
        _ => HashMap::new(),
    };
    let runner = McqaRunner {
        run: args.run.clone(),
        retriever: retriever.as_ref(),
        method: args.method,
        sparse: args.sparse,
        alpha: args.alpha,
        context_budget: args.context_budget,
        pipeline: args.pipeline.clone(),
        rerank: args.rerank.as_ref().map(|s| s.describe()),
        reranked,
    };
    notice(format!(
        "run `{}`: {} questions x k in {:?} with {}",
        args.run,
        todo.len(),
        ks,
        backend.describe()
    ));
    match &backend {
        Backend::Local(generator, sha) => {
            let total = todo.len();
            let (mut n, mut correct) = (0usize, 0usize);
            for (i, (q, skip)) in todo.into_iter().enumerate() {
                let recs = answer_locally(&runner, generator, sha, q, ks, &skip)?;
                n += recs.len();
                correct += recs.iter().filter(|r| r.correct).count();
                // One commit per question: an interrupted run resumes at the next question.
                mcqa_table(&ctx.workspace).append(&recs).await?;
                progress(i + 1, total, correct, n);
            }
        }
        Backend::Pool(pool, _) => {
            answer_on_pool(ctx, &runner, pool, &model_name, &todo, ks, progress).await?;
        }
    }
    Ok(())
}

/// Every question's first-stage ranking through the run's rerank stage, before any
/// answer is generated (the stage's model and the generator are not asked in turn):
/// question id -> the kept ids in their new order and the stage's time.
async fn rerank_questions(
    ctx: &Context,
    r: &Retriever,
    setup: &crate::service::retrieval::rerank::RerankSetup,
    args: &McqaRequest,
    questions: &[&McqQuestion],
) -> Result<HashMap<String, crate::service::retrieval::rerank::StageRanking>> {
    let choice = ModelChoice {
        model: None,
        threads: args.model.threads,
    };
    let mut stage =
        crate::service::retrieval::rerank::Reranker::open(ctx, setup.clone(), &choice).await?;
    let config = crate::core::retrieval::RunConfig::new(args.method, args.sparse, args.alpha);
    let mut out = HashMap::new();
    for q in questions {
        let ranked = stage.rank_question(ctx, r, &q.text, config).await?;
        out.insert(q.id.clone(), ranked);
    }
    Ok(out)
}

/// Answer every (question, k) prompt on the endpoint pool, several at once, each reply
/// constrained by [`mcqa::choice_schema`] and committed as it completes (a killed run
/// resumes at the (question, k) pairs still missing). Prompts are assembled first with
/// the budget estimated (the server's tokenizer is not here, see `estimate_tokens`);
/// a failed request is retried like generation's (see `service::pool`).
async fn answer_on_pool(
    ctx: &Context,
    runner: &McqaRunner<'_>,
    pool: &Pool,
    model_name: &str,
    todo: &[(&McqQuestion, HashSet<u32>)],
    ks: &[usize],
    progress: &dyn Fn(usize, usize, usize, usize),
) -> Result<()> {
    let count = |t: &str| estimate_tokens(t);
    let mut jobs = Vec::new();
    let mut left: HashMap<String, usize> = HashMap::new();
    for (q, skip) in todo {
        let prompts = runner.prompts(q, ks, skip, &count, pool.context_tokens())?;
        left.insert(q.id.clone(), prompts.len());
        jobs.extend(prompts.into_iter().map(Arc::new));
    }
    let work = |ep: Arc<Endpoint>, p: Arc<McqaPrompt>| async move {
        let sampling = endpoint_sampling();
        let constraint = Constraint::JsonSchema {
            name: "choice".into(),
            schema: mcqa::choice_schema(p.question.options.len()),
        };
        let messages = vec![ChatMessage::user(p.user.clone())];
        let stop = AtomicBool::new(false);
        let t0 = Instant::now();
        let reply = ep
            .chat(&messages, &sampling, Some(&constraint), &stop, &mut |_| {})
            .await?;
        let answer_ms = t0.elapsed().as_secs_f64() * 1e3;
        let sent = ep.body(&messages, &sampling, Some(&constraint))["messages"].to_string();
        Ok::<_, crate::infer::endpoint::EndpointError>((reply, sent, answer_ms))
    };
    let total = todo.len();
    let (mut questions_done, mut n, mut correct) = (0usize, 0usize, 0usize);
    run_on_pool(
        pool,
        jobs,
        work,
        async |p: Arc<McqaPrompt>, out: (ChatReply, String, f64), i| {
            let (reply, sent, answer_ms) = out;
            let rec = runner.record(
                &p,
                McqaReply {
                    predicted: mcqa::parse_reply(&reply.text, p.question.options.len()),
                    raw: reply.text,
                    prompt: sent,
                    prompt_tokens: reply.stats.prompt_tokens as u32,
                    answer_ms,
                    model_file: model_name.to_string(),
                    model_sha256: String::new(),
                    endpoint: Some(pool.endpoints[i].spec.url.clone()),
                    served_model: Some(reply.served_model),
                },
            );
            mcqa_table(&ctx.workspace)
                .append(std::slice::from_ref(&rec))
                .await?;
            n += 1;
            correct += usize::from(rec.correct);
            if let Some(l) = left.get_mut(&rec.question_id) {
                *l -= 1;
                questions_done += usize::from(*l == 0);
            }
            progress(questions_done, total, correct, n);
            Ok(())
        },
    )
    .await?;
    Ok(())
}

/// A run mixes no models or retrieval settings: refuse to continue it with others.
fn check_run_is_consistent(
    stored: &[McqaRecord],
    args: &McqaRequest,
    model_file: &str,
) -> Result<()> {
    let method =
        crate::core::retrieval::RunConfig::new(args.method, args.sparse, args.alpha).method_label();
    // Templates and context of stored answers made before they were recorded: the
    // shipped text, retrieved chunks as ranked.
    let pipeline_differs = |r: &McqaRecord| {
        let t = args.pipeline.template(r.k as usize);
        let sha = r
            .template_sha256
            .clone()
            .unwrap_or_else(|| Template::shipped(t.kind).sha256);
        let context = r.context_policy.as_deref().unwrap_or("retrieved");
        let order = r.chunk_order.as_deref().unwrap_or("ranked");
        sha != t.sha256
            || (r.k > 0
                && (context != args.pipeline.context.to_string()
                    || order != args.pipeline.order.to_string()))
    };
    let stage = args.rerank.as_ref().map(|s| s.describe());
    if let Some(r) = stored.iter().find(|r| r.k > 0 && r.rerank != stage) {
        bail!(
            "run `{}` was answered with {}; continue it with the same rerank stage ({}) or choose another --run",
            args.run,
            r.rerank.as_deref().map_or_else(
                || "no rerank stage".to_string(),
                |s| format!("the rerank stage {s}")
            ),
            stage.as_deref().unwrap_or("none")
        );
    }
    if let Some(r) = stored.iter().find(|r| pipeline_differs(r)) {
        bail!(
            "run `{}` was answered with the template {} (context {}, order {}); continue it with the same prompt and context or choose another --run",
            args.run,
            r.template
                .as_deref()
                .unwrap_or(crate::core::template::SHIPPED),
            r.context_policy.as_deref().unwrap_or("retrieved"),
            r.chunk_order.as_deref().unwrap_or("ranked")
        );
    }
    if let Some(r) = stored.iter().find(|r| {
        r.model_file != model_file
            || (r.k > 0 && (r.method != method || (r.alpha - args.alpha).abs() > 1e-12))
    }) {
        bail!(
            "run `{}` was answered with {} ({} a={}); continue it with the same settings or choose another --run",
            args.run,
            r.model_file,
            r.method,
            r.alpha
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Options, question and chunks are filled in one pass: a placeholder inside any
    /// of them stays literal, and each is marked untrusted.
    #[test]
    fn multiple_choice_prompts_fill_untrusted_text_once() {
        let options = render_options(&["{question}".to_string(), "{context}".to_string()]);
        let words = |s: &str| s.split_whitespace().count();
        let shipped = McqaPipeline::shipped();
        let (p, ids) = user_prompt(&shipped, "Why {options}?", &options, 0, &[], (100, &words));
        assert!(ids.is_empty());
        assert!(p.text.contains("Question: Why {options}?"), "{}", p.text);
        assert!(p.text.contains(&options), "{}", p.text);
        assert_eq!(
            p.untrusted_parts().collect::<Vec<_>>(),
            vec!["Why {options}?", options.as_str()]
        );
        let chunk = ContextChunk {
            id: "c1".into(),
            rank: 1,
            path: "Doc".into(),
            text: "see {options} and {question}".into(),
        };
        let (p, ids) = user_prompt(&shipped, "Why?", &options, 1, &[chunk], (100, &words));
        assert_eq!(ids, vec![("c1".to_string(), 1)]);
        assert_eq!(p.text.matches("{question}").count(), 2, "{}", p.text);
        assert_eq!(p.text.matches("{options}").count(), 1, "{}", p.text);
        assert_eq!(p.text.matches("{context}").count(), 1, "{}", p.text);
        assert_eq!(p.untrusted.len(), 3);
    }
}
