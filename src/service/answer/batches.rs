//! The answer use cases: a batch of answers for a question set (resumable), one live
//! streamed answer for the TUI, and judging stored answers with the rubric.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::generation::{
    Answerer, GenerationConfig, Prepared, answers, endpoint_judge_sampling, endpoint_judgement,
    judge_prompt_with, judge_prompted, judge_template_tag, judgements, prepare_prompt, record,
    store_answers,
};
use crate::core::abstention::ABSTAIN_ANSWER;
use crate::core::answer::{AnswerRecord, JudgementRecord};
use crate::core::prompt::{ChatMessage, PromptText, estimate_tokens};
use crate::core::question::{MissingTargets, Question};
use crate::core::rubric::Rubric;
use crate::core::template::{Template, TemplateKind};
use crate::infer::endpoint::{ChatReply, Constraint, Endpoint};
use crate::infer::generate::{GenStats, Generator};
use crate::service::base::{
    Backend, Context, ModelChoice, Pool, PoolReport, Provenance, Resumable, Role, my_key,
    run_on_pool,
};
use crate::service::retrieval::rerank::StageRanking;
use crate::service::retrieval::{Retriever, open_ranking};

/// Every question's ranking through the run's rerank stage, each question once
/// (repeats share it), before any answer is generated: the stage's model and the
/// generator are not asked in turn.
async fn rerank_questions(
    ctx: &Context,
    r: &Retriever,
    setup: &crate::service::retrieval::rerank::RerankSetup,
    config: &GenerationConfig,
    generator: &ModelChoice,
    todo: &[Repeated],
) -> Result<HashMap<String, StageRanking>> {
    let choice = ModelChoice {
        model: None,
        threads: generator.threads,
    };
    let mut stage =
        crate::service::retrieval::rerank::Reranker::open(ctx, setup.clone(), &choice).await?;
    let mut out = HashMap::new();
    for it in todo {
        let q = &it.question;
        if !out.contains_key(&q.id) {
            let ranked = stage
                .rank_question(ctx, r, &q.text, config.ranking())
                .await?;
            out.insert(q.id.clone(), ranked);
        }
    }
    Ok(out)
}

/// A batch of answers: questions of one run not answered yet (in each of its
/// repeats), with the generator and retriever loaded. `prepare`, show what will
/// happen, then `run`.
pub struct AnswerBatch {
    work: Resumable<Repeated>,
    retriever: Option<Retriever>,
    config: GenerationConfig,
    /// One config per repeat ([`GenerationConfig::repeats`]); `Repeated::repeat` indexes it.
    configs: Vec<GenerationConfig>,
    missing: MissingTargets,
    /// Each question's ranking after the run's rerank stage (empty: no stage).
    reranked: HashMap<String, StageRanking>,
}

/// One question to answer in one repeat of the run.
#[derive(Debug, Clone)]
pub struct Repeated {
    pub repeat: usize,
    pub question: Question,
}

/// A batch to answer: the questions, how, and with which models.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    pub questions: Vec<Question>,
    pub config: GenerationConfig,
    pub generator: ModelChoice,
    /// The embedding model of the retrieval (one thread is plenty for queries).
    pub embed: ModelChoice,
    /// Reuse the KV cache of a prompt prefix shared with the previous question.
    pub reuse_prefix: bool,
    /// Answer at most this many new questions.
    pub limit: Option<usize>,
    /// Use the local model even when endpoints are configured.
    pub local: bool,
    /// Answer every question this many times, repeat r with seed `seed + r`
    /// ([`GenerationConfig::repeats`]; 1: once, unmarked).
    pub repeats: u32,
    /// A rerank stage between retrieval and the prompt.
    pub rerank: Option<crate::service::retrieval::rerank::RerankSetup>,
}

/// What a finished batch did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct BatchSummary {
    pub answered: usize,
    pub tokens: usize,
    pub abstained: usize,
    /// Answers per endpoint and retried requests (batches on endpoints).
    pub pool: Option<PoolReport>,
}

impl AnswerBatch {
    /// Load what the run needs and find the questions still to answer in each repeat
    /// (answers are keyed by run, question and seed, so a rerun continues where it
    /// stopped).
    pub async fn prepare(ctx: &Context, req: BatchRequest) -> Result<Self> {
        let BatchRequest {
            questions,
            mut config,
            generator,
            embed,
            reuse_prefix,
            limit,
            local,
            repeats,
            rerank,
        } = req;
        // A run is one pipeline: answers already stored under its name must have been
        // made with the same template and context policy (checked before a model loads).
        let stored: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
        if let Some(why) = stored
            .iter()
            .filter(|a| a.run == config.run)
            .find_map(|a| config.differs_from(a))
        {
            bail!(
                "run `{}` was answered with {why}; give this pipeline its own `--run NAME`",
                config.run
            );
        }
        let done: HashSet<String> = stored.into_iter().map(|a| a.answer_id).collect();
        let backend = Backend::open(ctx, &generator, local, Role::Generator { reuse_prefix })?;
        let retriever = if config.no_retrieval {
            config.abstain_below = None;
            None
        } else {
            config.abstain_below = config.abstain_below.or(ctx.config.retrieval.abstain_below);
            let dense = config.ranking.method.needs_dense() || config.abstain_below.is_some();
            Some(open_ranking(ctx, dense, &embed, config.variant).await?)
        };
        let configs = config.repeats(repeats);
        let items: Vec<Repeated> = (0..configs.len())
            .flat_map(|repeat| {
                questions.iter().map(move |q| Repeated {
                    repeat,
                    question: q.clone(),
                })
            })
            .collect();
        let work = Resumable::split(
            items,
            limit,
            |it| done.contains(&configs[it.repeat].answer_id(&it.question.id)),
            backend,
        );
        let missing = match &retriever {
            Some(r) => MissingTargets::find(
                work.todo
                    .iter()
                    .map(|it| it.question.relevant.iter().map(String::as_str)),
                |id| r.by_id.contains_key(id),
            ),
            None => MissingTargets::default(),
        };
        let reranked = match (&rerank, &retriever) {
            (Some(setup), Some(r)) => {
                rerank_questions(ctx, r, setup, &config, &generator, &work.todo).await?
            }
            _ => HashMap::new(),
        };
        Ok(Self {
            missing,
            work,
            retriever,
            config,
            configs,
            reranked,
        })
    }

    /// The (repeat, question) pairs to answer, those answered before, and the
    /// generator.
    pub fn work(&self) -> &Resumable<Repeated> {
        &self.work
    }

    /// Targets of the questions to answer that are not in the corpus (their answers
    /// are stored with no target rank).
    pub fn missing_targets(&self) -> &MissingTargets {
        &self.missing
    }

    pub fn config(&self) -> &GenerationConfig {
        &self.config
    }

    /// Answer every remaining question, committing each answer as soon as it is
    /// complete (an interrupted batch resumes); `progress` gets (done, todo, tokens so
    /// far).
    pub async fn run(
        self,
        ctx: &Context,
        progress: &dyn Fn(usize, usize, usize),
    ) -> Result<BatchSummary> {
        let (generator, sha) = match &self.work.backend {
            Backend::Local(g, sha) => (g, sha.clone()),
            Backend::Pool(pool, _) => return self.run_pool(ctx, pool, progress).await,
        };
        let mut s = BatchSummary::default();
        let key = my_key(ctx)?;
        for (i, it) in self.work.todo.iter().enumerate() {
            let answerer = Answerer {
                retriever: self.retriever.as_ref(),
                generator,
                model_sha256: sha.clone(),
                config: &self.configs[it.repeat],
            };
            let q = &it.question;
            let prepared = answerer.prepare_with(q, self.reranked.get(&q.id))?;
            let rec = answerer.answer(
                q,
                prepared,
                Arc::new(AtomicBool::new(false)),
                |_, _| {},
                |_| {},
            )?;
            s.tokens += rec.output_tokens as usize;
            s.abstained += usize::from(rec.abstained == Some(true));
            store_answers(&ctx.workspace, &key, &mut [rec]).await?;
            s.answered += 1;
            progress(i + 1, self.work.todo.len(), s.tokens);
        }
        Ok(s)
    }

    /// The batch on the endpoint pool: every prompt is assembled first (the budget
    /// estimated, see [`estimate_tokens`]), then the pool streams the answers, several
    /// at once, and each answer is committed as it completes. A request that fails is
    /// retried (on another endpoint while the failed one rests) and its partial output
    /// dropped, so each question is stored exactly once; a killed batch resumes like a
    /// local one.
    async fn run_pool(
        &self,
        ctx: &Context,
        pool: &Pool,
        progress: &dyn Fn(usize, usize, usize),
    ) -> Result<BatchSummary> {
        let total = self.work.todo.len();
        let mut s = BatchSummary::default();
        let key = my_key(ctx)?;
        let count = |t: &str| estimate_tokens(t);
        let mut jobs = Vec::new();
        let mut done = 0usize;
        for it in &self.work.todo {
            let (q, config) = (&it.question, &self.configs[it.repeat]);
            let prepared = prepare_prompt(
                self.retriever.as_ref(),
                config,
                q,
                &count,
                pool.context_tokens(),
                self.reranked.get(&q.id),
            )?;
            if prepared.abstain {
                let rec = self.abstention(config, q, prepared)?;
                store_answers(&ctx.workspace, &key, &mut [rec]).await?;
                s.abstained += 1;
                s.answered += 1;
                done += 1;
                progress(done, total, s.tokens);
                continue;
            }
            jobs.push(Arc::new((q.clone(), prepared, it.repeat)));
        }
        let samplings: Vec<_> = self.configs.iter().map(|c| c.sampling.clone()).collect();
        let work = move |ep: Arc<Endpoint>, job: Arc<(Question, Prepared, usize)>| {
            let sampling = samplings[job.2].clone();
            async move {
                let messages = vec![ChatMessage::user(job.1.user_prompt.clone())];
                let stop = AtomicBool::new(false);
                let reply = ep
                    .chat(&messages, &sampling, None, &stop, &mut |_| {})
                    .await?;
                let sent = ep.body(&messages, &sampling, None)["messages"].to_string();
                Ok::<_, crate::infer::endpoint::EndpointError>((reply, sent))
            }
        };
        let report = run_on_pool(
            pool,
            jobs,
            work,
            async |job: Arc<(Question, Prepared, usize)>, out: (ChatReply, String), i| {
                let (reply, sent) = out;
                let (q, prepared) = (&job.0, job.1.clone());
                let rec = record(
                    &self.configs[job.2],
                    self.retriever.as_ref(),
                    q,
                    prepared,
                    sent,
                    reply.text,
                    &reply.stats,
                    Provenance::endpoint(&pool.endpoints[i].spec.url, reply.served_model),
                )?;
                store_answers(&ctx.workspace, &key, &mut [rec]).await?;
                s.tokens += reply.stats.output_tokens;
                s.answered += 1;
                done += 1;
                progress(done, total, s.tokens);
                Ok(())
            },
        )
        .await?;
        s.pool = Some(report);
        Ok(s)
    }

    /// The stored answer of a question the run abstains from: no model is asked.
    fn abstention(
        &self,
        config: &GenerationConfig,
        q: &Question,
        prepared: Prepared,
    ) -> Result<AnswerRecord> {
        record(
            config,
            self.retriever.as_ref(),
            q,
            prepared,
            String::new(),
            ABSTAIN_ANSWER.to_string(),
            &GenStats::default(),
            Provenance::default(),
        )
    }
}

/// Commit one answer to `answers.lance`, signed by this user's key.
pub async fn save_answer(ctx: &Context, rec: &AnswerRecord) -> Result<()> {
    store_answers(&ctx.workspace, &my_key(ctx)?, &mut [rec.clone()]).await
}

/// Every stored answer.
pub async fn all_answers(ctx: &Context) -> Result<Vec<AnswerRecord>> {
    Ok(answers(&ctx.workspace).read_all().await?)
}

/// Judging stored answers not yet judged by this judge model (in each judge repeat).
pub struct JudgeBatch {
    /// Each answer with the judge repeat to give it (None: judged without repeats).
    todo: Vec<(AnswerRecord, Option<u32>)>,
    /// The judge's sampling temperature; repeat r samples with seed 7 + r.
    temperature: f32,
    /// The local judge model, or None: the endpoint pool judges.
    generator: Option<Generator>,
    pool: Option<Pool>,
    /// The judge's name as judgements store it: the GGUF file, or the pool's model
    /// (with the few-shot tag of a calibrated judge, see [`JudgeScope`]).
    judge_name: String,
    /// The judge's own name (the GGUF file, or the pool's model).
    base_name: String,
    /// Each answer's few-shot examples section (none: the plain prompt).
    examples: HashMap<String, PromptText>,
    /// The judge's prompt template.
    template: Template,
    rubric: Rubric,
    /// Text of each chunk id (the targets are shown to the judge).
    texts: HashMap<String, String>,
    /// Targets not in the corpus; answers with no target left are not judged.
    missing: MissingTargets,
}

/// How a judge batch samples: `repeats` judgements of every answer (1: one,
/// unmarked), at `temperature` (0: greedy, the default; greedy repeats on one back
/// end give the same labels, so self-consistency needs a temperature above 0).
#[derive(Debug, Clone, Copy)]
pub struct JudgeRepeats {
    pub repeats: u32,
    pub temperature: f32,
}

impl Default for JudgeRepeats {
    fn default() -> Self {
        Self {
            repeats: 1,
            temperature: 0.0,
        }
    }
}

/// Which answers a judge batch judges, and with which prompt: every answer with the
/// plain prompt (the default), or only the listed answers, each with its few-shot
/// examples section when `few_shot` is given (`raglab calibrate`).
#[derive(Debug, Clone, Default)]
pub struct JudgeScope {
    /// Judge only these answer ids (None: every answer).
    pub answers: Option<HashSet<String>>,
    pub few_shot: Option<FewShot>,
    /// The judge's prompt template (None: the shipped text). Any other text tags the
    /// judge's name with `+prompt-NAME@HASH12`, so its judgements are stored, resumed
    /// and reported as another judge's, never mixed with the shipped prompt's.
    pub template: Option<Template>,
}

/// A calibrated judge: the few-shot examples section of each answer, and the tag
/// its judgements are stored under, appended to the judge's name
/// (`model.gguf+calibrated-k5-s4-seed1`), so they never mix with the plain judge's.
#[derive(Debug, Clone, Default)]
pub struct FewShot {
    pub tag: String,
    pub examples: HashMap<String, PromptText>,
}

/// The judge's seed in repeat `r`: 7 (the greedy judge's seed) + r.
pub fn judge_seed(repeat: Option<u32>) -> u32 {
    7u32.wrapping_add(repeat.unwrap_or(0))
}

impl JudgeBatch {
    /// Load the judge (the endpoint pool when one is configured and not refused) and
    /// choose the answers to judge ([`Self::select`]).
    #[allow(clippy::too_many_arguments)]
    pub async fn prepare(
        ctx: &Context,
        rubric: Rubric,
        run: Option<&str>,
        model: &ModelChoice,
        limit: Option<usize>,
        shard: Option<crate::core::shard::Shard>,
        local: bool,
        sampling: JudgeRepeats,
        scope: JudgeScope,
    ) -> Result<Self> {
        let (generator, pool, base_name) =
            if let Some(chat) = ctx.chat_pool_config(model, local, true) {
                let pool = Pool::from_config(&chat)?;
                let name = pool.model_name().await?;
                (None, Some(pool), name)
            } else {
                let g = Generator::spawn(&ctx.judge_config(model))?;
                let name = g.info.file.clone();
                (Some(g), None, name)
            };
        let texts: HashMap<String, String> = crate::service::corpus::chunks_or_empty(ctx)
            .await?
            .into_iter()
            .map(|c| (c.id, c.text))
            .collect();
        let mut batch = Self {
            missing: MissingTargets::default(),
            todo: Vec::new(),
            temperature: sampling.temperature,
            generator,
            pool,
            judge_name: base_name.clone(),
            base_name,
            examples: HashMap::new(),
            template: Template::shipped(TemplateKind::Judge),
            rubric,
            texts,
        };
        batch
            .select(ctx, run, limit, shard, sampling.repeats, scope)
            .await?;
        Ok(batch)
    }

    /// Choose what the batch judges, in place of an earlier choice (the judge stays
    /// loaded): the answers of `run` (None: every run) within `scope` and `shard`,
    /// in each of `repeats` repeats, that this judge (with the scope's few-shot tag)
    /// has not judged yet; at most `limit`.
    pub async fn select(
        &mut self,
        ctx: &Context,
        run: Option<&str>,
        limit: Option<usize>,
        shard: Option<crate::core::shard::Shard>,
        repeats: u32,
        scope: JudgeScope,
    ) -> Result<()> {
        (self.judge_name, self.examples) = match scope.few_shot {
            Some(f) => (format!("{}+{}", self.base_name, f.tag), f.examples),
            None => (self.base_name.clone(), HashMap::new()),
        };
        self.template = scope
            .template
            .unwrap_or_else(|| Template::shipped(TemplateKind::Judge));
        if let Some(tag) = judge_template_tag(&self.template) {
            self.judge_name = format!("{}+{tag}", self.judge_name);
        }
        let wanted = scope.answers;
        let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
        let judged: HashSet<(String, String, u32)> = judgements(&ctx.workspace)
            .read_all::<JudgementRecord>()
            .await?
            .into_iter()
            .map(|j| {
                let r = j.repeat_index();
                (j.answer_id, j.judge_model, r)
            })
            .collect();
        let file = self.judge_name.clone();
        let repeats: Vec<Option<u32>> = if repeats <= 1 {
            vec![None]
        } else {
            (0..repeats).map(Some).collect()
        };
        let candidates: Vec<(AnswerRecord, Option<u32>)> = repeats
            .iter()
            .flat_map(|r| all.iter().map(move |a| (a.clone(), *r)))
            .filter(|(a, _)| run.is_none_or(|r| a.run == r))
            .filter(|(a, _)| wanted.as_ref().is_none_or(|w| w.contains(&a.answer_id)))
            .filter(|(a, _)| crate::core::shard::keep(shard, &a.answer_id))
            .filter(|(a, r)| !judged.contains(&(a.answer_id.clone(), file.clone(), r.unwrap_or(0))))
            .collect();
        let texts = &self.texts;
        self.missing = MissingTargets::find(
            candidates
                .iter()
                .map(|(a, _)| a.target_ids.iter().map(String::as_str)),
            |id| texts.contains_key(id),
        );
        // The judge compares the answer with its target chunk: an answer none of whose
        // targets exists would be judged against an empty text.
        self.todo = candidates
            .into_iter()
            .filter(|(a, _)| {
                a.target_ids.is_empty() || a.target_ids.iter().any(|t| texts.contains_key(t))
            })
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        Ok(())
    }

    pub fn todo(&self) -> usize {
        self.todo.len()
    }

    /// Target ids of the candidate answers (before `--limit`) that are not in the
    /// corpus.
    pub fn missing_targets(&self) -> &MissingTargets {
        &self.missing
    }

    /// The judge model (GGUF file or served model), with the endpoints when a pool
    /// judges.
    pub fn model(&self) -> String {
        match &self.pool {
            Some(p) => format!("{} on endpoints {}", self.judge_name, p.describe()),
            None => self.judge_name.clone(),
        }
    }

    pub fn rubric(&self) -> &Rubric {
        &self.rubric
    }

    /// The judge's name as its judgements store it (with the few-shot tag).
    pub fn judge_name(&self) -> &str {
        &self.judge_name
    }

    /// The judge's own name: the GGUF file, or the endpoints' model.
    pub fn base_name(&self) -> &str {
        &self.base_name
    }

    /// The judge's prompt for an answer: the plain one, or with its examples.
    fn prompt(&self, a: &AnswerRecord) -> PromptText {
        let none = PromptText::default();
        let examples = self.examples.get(&a.answer_id).unwrap_or(&none);
        judge_prompt_with(
            &self.template,
            &self.rubric,
            a,
            &self.target_text(a),
            examples,
        )
    }

    /// The target text the judge is shown for an answer.
    fn target_text(&self, a: &AnswerRecord) -> String {
        a.target_ids
            .iter()
            .filter_map(|t| self.texts.get(t))
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n\n")
    }

    /// Judge every answer (greedy and reproducible at temperature 0; repeat r with
    /// seed 7 + r), committing each judgement.
    pub async fn run(&self, ctx: &Context, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        let generator = match (&self.generator, &self.pool) {
            (Some(g), _) => g,
            (None, Some(pool)) => return self.run_pool(ctx, pool, progress).await,
            (None, None) => bail!("no judge model"),
        };
        for (i, (a, repeat)) in self.todo.iter().enumerate() {
            let seed = judge_seed(*repeat);
            let (mut rec, _) = judge_prompted(
                generator,
                &self.rubric,
                a,
                self.prompt(a),
                (self.temperature, seed),
                |_| {},
            )?;
            rec.repeat = *repeat;
            rec.judge_model.clone_from(&self.judge_name);
            judgements(&ctx.workspace)
                .append(std::slice::from_ref(&rec))
                .await?;
            progress(i + 1, self.todo.len());
        }
        Ok(self.todo.len())
    }

    /// Judging on the endpoint pool: several answers at once, each reply constrained
    /// by the rubric's JSON schema and validated before it is committed; failed
    /// requests are retried like generation's (see `service::pool`).
    async fn run_pool(
        &self,
        ctx: &Context,
        pool: &Pool,
        progress: &dyn Fn(usize, usize),
    ) -> Result<usize> {
        let total = self.todo.len();
        let jobs: Vec<Arc<(AnswerRecord, PromptText, Option<u32>)>> = self
            .todo
            .iter()
            .map(|(a, r)| Arc::new((a.clone(), self.prompt(a), *r)))
            .collect();
        let constraint = Constraint::JsonSchema {
            name: "judgement".into(),
            schema: self.rubric.json_schema(),
        };
        let temperature = self.temperature;
        let work = move |ep: Arc<Endpoint>, job: Arc<(AnswerRecord, PromptText, Option<u32>)>| {
            let constraint = constraint.clone();
            let sampling = crate::infer::generate::Sampling {
                temperature,
                seed: judge_seed(job.2),
                ..endpoint_judge_sampling()
            };
            async move {
                let messages = vec![ChatMessage::user(job.1.clone())];
                let stop = AtomicBool::new(false);
                ep.chat(&messages, &sampling, Some(&constraint), &stop, &mut |_| {})
                    .await
            }
        };
        let mut done = 0usize;
        run_on_pool(
            pool,
            jobs,
            work,
            async |job: Arc<(AnswerRecord, PromptText, Option<u32>)>, reply: ChatReply, i| {
                let (mut rec, _) = endpoint_judgement(
                    &self.rubric,
                    &job.0,
                    &job.1,
                    reply.text,
                    &self.judge_name,
                    &pool.endpoints[i].spec.url,
                )?;
                (rec.repeat, rec.seed, rec.temperature) =
                    (job.2, Some(judge_seed(job.2)), Some(self.temperature));
                judgements(&ctx.workspace).append(&[rec]).await?;
                done += 1;
                progress(done, total);
                Ok(())
            },
        )
        .await?;
        Ok(total)
    }
}
