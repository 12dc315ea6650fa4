//! Grounded metrics of stored answers (`raglab answers ground`): faithfulness against
//! the contexts that were in each answer's prompt, context precision and recall, and
//! answer correctness, judged statement by statement ([`crate::core::grounded`]) by a
//! local GGUF model (its replies held to their JSON shape by a grammar) or by the
//! endpoint pool (a JSON schema; several answers side by side, each request on
//! whichever server is free, a reply off its shape sets that server aside). One record per answer,
//! judge and prompt set in `grounded.lance`, committed as each answer is scored, so an
//! interrupted run resumes without judging an answer twice. Imported answers are
//! scored like raglab's own; answers without a target too (every metric reads the
//! prompt's contexts and the reference answer, never the target).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context as _, Result, bail};

use super::generation::answers;
use crate::core::answer::AnswerRecord;
use crate::core::grounded::{
    CorrectnessWeights, GroundedRecord, Grounding, GroundingInput, GroundingTemplates,
    JudgeRequest, Premise, cosine,
};
use crate::core::prompt::ChatMessage;
use crate::core::shard::Shard;
use crate::infer::embed::Embedder;
use crate::infer::endpoint::{Constraint, Endpoint, EndpointError};
use crate::infer::generate::{Generator, Sampling};
use crate::service::base::{Context, ModelChoice, Pool, now_rfc3339, run_chains_on_pool};
use crate::store::records::Table;

pub const GROUNDED: &str = "grounded.lance";

pub fn grounded(ws: &crate::store::workspace::Workspace) -> Table<'_> {
    Table::of::<GroundedRecord>(ws, GROUNDED)
}

/// What `answers ground` does.
#[derive(Debug, Clone)]
pub struct GroundRequest {
    pub run: String,
    pub judge: ModelChoice,
    /// The local judge model even when endpoints are configured.
    pub local: bool,
    pub templates: GroundingTemplates,
    pub weights: CorrectnessWeights,
    pub limit: Option<usize>,
    pub shard: Option<Shard>,
}

/// What a grounding batch did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct GroundSummary {
    pub scored: usize,
    /// Answers of the run (in this shard) this judge and prompt set had scored before.
    pub already: usize,
    /// Answers scored before with other weights, scored again from their stored
    /// verdicts (no judge request).
    pub rescored: usize,
    /// Judge requests sent.
    pub requests: usize,
    pub judge_model: String,
    /// Answers without a reference answer among those scored (context precision and
    /// recall and answer correctness are undefined for them).
    pub without_reference: usize,
    /// Context ids of the scored answers' prompts no longer in the corpus (left out
    /// of the passages the judge saw).
    pub contexts_missing: usize,
}

/// The judge of a grounding: one local model, or the endpoint pool.
enum GroundJudge {
    Local(Generator),
    Pool(Pool),
}

/// Greedy and reproducible, as the rubric judge samples.
fn judge_sampling(max_tokens: usize) -> Sampling {
    Sampling {
        temperature: 0.0,
        seed: 7,
        max_tokens,
        ..Sampling::default()
    }
}

/// Score `req.run`'s answers that this judge and prompt set have not scored yet;
/// `progress(done, todo)` after each.
pub async fn ground_run(
    ctx: &Context,
    req: GroundRequest,
    progress: &dyn Fn(usize, usize),
) -> Result<GroundSummary> {
    let run_answers = answers_of_run(ctx, &req).await?;
    let (judge, judge_model) = open_judge(ctx, &req).await?;
    let prompts_sha = req.templates.sha256();
    let plan = plan(ctx, &req, run_answers, &judge_model, &prompts_sha).await?;
    let mut summary = GroundSummary {
        already: plan.already,
        judge_model: judge_model.clone(),
        ..GroundSummary::default()
    };
    if plan.todo.is_empty() && plan.rescore.is_empty() {
        return Ok(summary);
    }
    let premises = premises(ctx).await?;
    let embedder = similarity_embedder(
        ctx,
        plan.todo.iter().chain(plan.rescore.iter().map(|(a, _)| a)),
        req.weights,
    )?;
    let inputs = grounding_inputs(plan.todo, &premises, &mut summary.contexts_missing);
    let scorer = Scorer {
        ctx,
        judge_model: &judge_model,
        prompts_sha: &prompts_sha,
        weights: req.weights,
        embedder: embedder.as_ref(),
    };
    for (a, earlier) in &plan.rescore {
        scorer.rescore(a, earlier).await?;
        without_reference_of(a, &mut summary.without_reference);
    }
    summary.rescored = plan.rescore.len();
    summary.scored = inputs.len();
    let tally = match judge {
        GroundJudge::Local(generator) => {
            ground_locally(&generator, inputs, &req.templates, &scorer, progress).await?
        }
        GroundJudge::Pool(pool) => {
            ground_on_pool(&pool, inputs, &req.templates, &scorer, progress).await?
        }
    };
    summary.requests = tally.requests;
    summary.without_reference += tally.without_reference;
    Ok(summary)
}

/// The answers of `req.run` in `req.shard`; none is an error naming how to make some.
async fn answers_of_run(ctx: &Context, req: &GroundRequest) -> Result<Vec<AnswerRecord>> {
    let run_answers: Vec<AnswerRecord> = answers(&ctx.workspace)
        .read_all::<AnswerRecord>()
        .await?
        .into_iter()
        .filter(|a| a.run == req.run)
        .filter(|a| crate::core::shard::keep(req.shard, &a.answer_id))
        .collect();
    if run_answers.is_empty() {
        bail!(
            "run `{}` has no answers{} (`raglab generate --run NAME` or `raglab answers import`)",
            req.run,
            if req.shard.is_some() {
                " in this shard"
            } else {
                ""
            }
        );
    }
    Ok(run_answers)
}

/// The endpoint pool when one is configured (and not `--local`), else the local judge
/// model; with the judge's name as records store it.
async fn open_judge(ctx: &Context, req: &GroundRequest) -> Result<(GroundJudge, String)> {
    Ok(match ctx.chat_pool_config(&req.judge, req.local, true) {
        Some(chat) => {
            let pool = Pool::from_config(&chat)?;
            let name = pool.model_name().await?;
            (GroundJudge::Pool(pool), name)
        }
        None => {
            let g = Generator::spawn(&ctx.judge_config(&req.judge))?;
            let name = g.info.file.clone();
            (GroundJudge::Local(g), name)
        }
    })
}

/// Which of a run's answers a batch scores.
struct Plan {
    /// Never scored by this judge and prompt set: the judge is asked.
    todo: Vec<AnswerRecord>,
    /// Scored before with other weights, with that record: scored again from its
    /// stored verdicts, without asking the judge.
    rescore: Vec<(AnswerRecord, GroundedRecord)>,
    /// Scored before with these weights: done.
    already: usize,
}

/// Sort `run_answers` by this judge's and prompt set's latest record of each (at most
/// `req.limit` to score or rescore).
async fn plan(
    ctx: &Context,
    req: &GroundRequest,
    run_answers: Vec<AnswerRecord>,
    judge_model: &str,
    prompts_sha: &str,
) -> Result<Plan> {
    let weights = req.weights.to_string();
    let mut earlier: HashMap<String, GroundedRecord> = HashMap::new();
    for r in grounded(&ctx.workspace)
        .read_all::<GroundedRecord>()
        .await?
    {
        if r.judge_model == judge_model && r.templates_sha256 == prompts_sha {
            earlier.insert(r.answer_id.clone(), r);
        }
    }
    let (todo, already): (Vec<_>, Vec<_>) = run_answers.into_iter().partition(|a| {
        earlier
            .get(&a.answer_id)
            .is_none_or(|r| r.weights != weights)
    });
    let mut plan = Plan {
        todo: Vec::new(),
        rescore: Vec::new(),
        already: already.len(),
    };
    for a in todo.into_iter().take(req.limit.unwrap_or(usize::MAX)) {
        match earlier.remove(&a.answer_id) {
            Some(r) => plan.rescore.push((a, r)),
            None => plan.todo.push(a),
        }
    }
    Ok(plan)
}

/// Every chunk of the corpus as a passage the judge can be shown, by id.
async fn premises(ctx: &Context) -> Result<HashMap<String, Premise>> {
    Ok(crate::service::corpus::chunks_or_empty(ctx)
        .await?
        .into_iter()
        .map(|c| {
            let p = Premise {
                id: c.id.clone(),
                heading: c.path_label(),
                text: c.text,
            };
            (c.id, p)
        })
        .collect())
}

/// Each answer with what its grounding reads: the contexts of its prompt still in the
/// corpus (the ids of those gone are kept and counted in `contexts_missing`).
fn grounding_inputs(
    todo: Vec<AnswerRecord>,
    premises: &HashMap<String, Premise>,
    contexts_missing: &mut usize,
) -> Vec<(AnswerRecord, GroundingInput)> {
    todo.into_iter()
        .map(|a| {
            let (found, gone): (Vec<&String>, Vec<&String>) = a
                .chunk_ids
                .iter()
                .partition(|id| premises.contains_key(*id));
            *contexts_missing += gone.len();
            let input = GroundingInput {
                question: a.question.clone(),
                answer: a.answer.clone(),
                reference: a.reference_answer.clone(),
                contexts: found
                    .into_iter()
                    .filter_map(|id| premises.get(id).cloned())
                    .collect(),
                contexts_missing: gone.into_iter().cloned().collect(),
            };
            (a, input)
        })
        .collect()
}

/// What the judge did in a batch.
#[derive(Default)]
struct Tally {
    requests: usize,
    without_reference: usize,
}

/// Ground each answer on the local model, one request at a time, its reply held to
/// its shape by a grammar; each record committed as its answer is scored.
async fn ground_locally(
    generator: &Generator,
    inputs: Vec<(AnswerRecord, GroundingInput)>,
    templates: &GroundingTemplates,
    scorer: &Scorer<'_>,
    progress: &dyn Fn(usize, usize),
) -> Result<Tally> {
    let total = inputs.len();
    let mut tally = Tally::default();
    for (i, (a, input)) in inputs.into_iter().enumerate() {
        let mut g = Grounding::new(input, templates.clone());
        while let Some(r) = g.next_request() {
            let asked = Instant::now();
            let (raw, _) = generator.generate(
                vec![ChatMessage::user(r.prompt)],
                judge_sampling(r.shape.max_tokens()),
                Some(r.shape.grammar()),
                Arc::new(AtomicBool::new(false)),
                |_| {},
            )?;
            tally.requests += 1;
            g.answer(&raw)
                .with_context(|| format!("{} of answer {}", r.step.name(), a.answer_id))?;
            g.request_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
        }
        tally.without_reference += usize::from(!g.has_reference());
        scorer.commit(&a, &g, &[]).await?;
        progress(i + 1, total);
    }
    Ok(tally)
}

/// Ground the answers on the endpoint pool, request by request: a window of answers
/// (twice the pool's capacity) is judged side by side, each answer's next request
/// queued behind the others' as soon as its reply is in, so every free server takes
/// whichever request is ready and an answer of many requests does not keep one server
/// busy while another idles. A reply off its shape sets its server aside and the
/// request moves to another. Each record is committed as its answer is scored.
async fn ground_on_pool(
    pool: &Pool,
    inputs: Vec<(AnswerRecord, GroundingInput)>,
    templates: &GroundingTemplates,
    scorer: &Scorer<'_>,
    progress: &dyn Fn(usize, usize),
) -> Result<Tally> {
    let capacity: usize = pool.endpoints.iter().map(|e| e.spec.max_concurrent).sum();
    let mut judging = PoolJudging {
        total: inputs.len(),
        waiting: inputs.into_iter(),
        templates: templates.clone(),
        active: HashMap::new(),
        next_id: 0,
        finished: 0,
        tally: Tally::default(),
    };
    let first = judging
        .start((2 * capacity).max(2), scorer, progress)
        .await?;
    let work = |ep: Arc<Endpoint>, ask: Ask| async move {
        let asked = Instant::now();
        let constraint = Constraint::JsonSchema {
            name: "grounded".into(),
            schema: ask.request.shape.json_schema(),
        };
        let reply = ep
            .chat(
                &[ChatMessage::user(ask.request.prompt.clone())],
                &judge_sampling(ask.request.shape.max_tokens()),
                Some(&constraint),
                &AtomicBool::new(false),
                &mut |_| {},
            )
            .await?;
        ask.request
            .shape
            .parse(&reply.text)
            .map_err(|e| EndpointError::Misbehaved {
                url: ep.spec.url.clone(),
                reason: format!("{}: {e}", ask.request.step.name()),
            })?;
        Ok::<_, EndpointError>((reply.text, asked.elapsed().as_secs_f64() * 1000.0))
    };
    run_chains_on_pool(
        pool,
        first,
        work,
        async |ask: Ask, (raw, ms): (String, f64), i| {
            let url = pool.endpoints[i].spec.url.clone();
            judging.take(ask, &raw, ms, url, scorer, progress).await
        },
    )
    .await?;
    Ok(judging.tally)
}

/// One judge request of an answer on the pool: which active answer it is for.
#[derive(Clone)]
struct Ask {
    id: usize,
    request: Arc<JudgeRequest>,
}

/// An answer being grounded on the pool: its grounding so far and the server that
/// answered each of its requests.
struct Active {
    answer: AnswerRecord,
    grounding: Grounding,
    servers: Vec<String>,
}

/// The pool's grounding of a batch: the answers not started, the active ones by id,
/// and what the judge did.
struct PoolJudging {
    total: usize,
    waiting: std::vec::IntoIter<(AnswerRecord, GroundingInput)>,
    templates: GroundingTemplates,
    active: HashMap<usize, Active>,
    next_id: usize,
    finished: usize,
    tally: Tally,
}

impl PoolJudging {
    /// Start up to `n` more answers and return their first requests (an answer that
    /// needs no request, an empty one, is committed at once).
    async fn start(
        &mut self,
        n: usize,
        scorer: &Scorer<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Vec<Ask>> {
        let mut asks = Vec::new();
        while asks.len() < n {
            let Some((answer, input)) = self.waiting.next() else {
                break;
            };
            let grounding = Grounding::new(input, self.templates.clone());
            let active = Active {
                answer,
                grounding,
                servers: Vec::new(),
            };
            match active.grounding.next_request() {
                Some(request) => {
                    let id = self.next_id;
                    self.next_id += 1;
                    self.active.insert(id, active);
                    asks.push(Ask {
                        id,
                        request: Arc::new(request),
                    });
                }
                None => self.finish(active, scorer, progress).await?,
            }
        }
        Ok(asks)
    }

    /// Take a reply (already checked against its shape by the request's task): the
    /// answer's next request, or its record committed and the next answer started.
    async fn take(
        &mut self,
        ask: Ask,
        raw: &str,
        ms: f64,
        url: String,
        scorer: &Scorer<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<Vec<Ask>> {
        let active = self
            .active
            .get_mut(&ask.id)
            .context("a reply for an answer no longer judged")?;
        active.grounding.answer(raw).with_context(|| {
            format!(
                "{} of answer {}",
                ask.request.step.name(),
                active.answer.answer_id
            )
        })?;
        active.grounding.request_ms.push(ms);
        active.servers.push(url);
        self.tally.requests += 1;
        if let Some(request) = active.grounding.next_request() {
            return Ok(vec![Ask {
                id: ask.id,
                request: Arc::new(request),
            }]);
        }
        let active = self
            .active
            .remove(&ask.id)
            .context("an answer judged twice")?;
        self.finish(active, scorer, progress).await?;
        self.start(1, scorer, progress).await
    }

    async fn finish(
        &mut self,
        active: Active,
        scorer: &Scorer<'_>,
        progress: &dyn Fn(usize, usize),
    ) -> Result<()> {
        self.tally.without_reference += usize::from(!active.grounding.has_reference());
        scorer
            .commit(&active.answer, &active.grounding, &active.servers)
            .await?;
        self.finished += 1;
        progress(self.finished, self.total);
        Ok(())
    }
}

/// Count `a` in `n` when it has no reference answer.
fn without_reference_of(a: &AnswerRecord, n: &mut usize) {
    if a.reference_answer
        .as_deref()
        .is_none_or(|r| r.trim().is_empty())
    {
        *n += 1;
    }
}

/// The embedder of answer correctness's similarity, loaded only when an answer to
/// score has a reference answer and the similarity has weight.
fn similarity_embedder<'a>(
    ctx: &Context,
    mut todo: impl Iterator<Item = &'a AnswerRecord>,
    weights: CorrectnessWeights,
) -> Result<Option<Embedder>> {
    let needed = weights.similarity > 0.0
        && todo.any(|a| {
            a.reference_answer
                .as_deref()
                .is_some_and(|r| !r.trim().is_empty())
        });
    if !needed {
        return Ok(None);
    }
    let cfg = ctx.embed_config(&ModelChoice::default())?;
    Embedder::spawn(&cfg).map(Some).with_context(|| {
        format!(
            "answer correctness embeds the answer and its reference with {} \
             (set [models] embed, or give --weights 1,0 to leave the similarity out)",
            cfg.model.display()
        )
    })
}

/// Turns a finished grounding into its stored record.
struct Scorer<'a> {
    ctx: &'a Context,
    judge_model: &'a str,
    prompts_sha: &'a str,
    weights: CorrectnessWeights,
    embedder: Option<&'a Embedder>,
}

impl Scorer<'_> {
    /// The cosine of the answer's and its reference's embeddings (None without an
    /// embedder or a reference).
    fn similarity(&self, a: &AnswerRecord, has_reference: bool) -> Result<Option<f64>> {
        let Some(e) = self.embedder.filter(|_| has_reference) else {
            return Ok(None);
        };
        // ragas embeds an empty text as one space.
        let or_space = |t: &str| {
            if t.is_empty() {
                " ".to_string()
            } else {
                t.to_string()
            }
        };
        let reference = a.reference_answer.as_deref().unwrap_or("");
        let v = e.embed(vec![or_space(&a.answer), or_space(reference)])?;
        Ok(cosine(&v[0], &v[1]))
    }

    /// Score `earlier`'s stored verdicts again with this batch's weights (its stored
    /// similarity reused, computed now when it has weight and was never computed)
    /// and commit the new record.
    async fn rescore(&self, a: &AnswerRecord, earlier: &GroundedRecord) -> Result<()> {
        let has_reference = a
            .reference_answer
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty());
        let similarity = match earlier.similarity {
            Some(s) => Some(s),
            None if self.weights.similarity > 0.0 => self.similarity(a, has_reference)?,
            None => None,
        };
        let s = earlier
            .detail()
            .scores(has_reference, similarity, self.weights);
        let rec = GroundedRecord {
            created_at: now_rfc3339(),
            ..earlier.clone()
        }
        .with_scores(s, self.weights);
        grounded(&self.ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        Ok(())
    }

    /// Score `g` (embedding the two texts for the similarity when it counts) and
    /// commit the record; `servers`: the server of each request (empty: the local
    /// model).
    async fn commit(&self, a: &AnswerRecord, g: &Grounding, servers: &[String]) -> Result<()> {
        let embedding = Instant::now();
        let similarity = self.similarity(a, g.has_reference())?;
        let embed_ms = embedding.elapsed().as_secs_f64() * 1000.0;
        let detail = g.detail();
        let s = detail.scores(g.has_reference(), similarity, self.weights);
        let rec = GroundedRecord {
            answer_id: a.answer_id.clone(),
            run: a.run.clone(),
            question_id: a.question_id.clone(),
            judge_model: self.judge_model.to_string(),
            templates_sha256: self.prompts_sha.to_string(),
            detail: serde_json::to_string(detail)?,
            prompts: g.prompts.clone(),
            replies: g.replies.clone(),
            endpoint: servers_named(servers),
            judge_ms: g.request_ms.iter().sum::<f64>() + embed_ms,
            created_at: now_rfc3339(),
            request_ms: g.request_ms.clone(),
            request_endpoints: servers.to_vec(),
            ..GroundedRecord::default()
        }
        .with_scores(s, self.weights);
        grounded(&self.ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        Ok(())
    }
}

/// The servers that judged an answer, each once in the order first used, joined by
/// `, ` (None: the local model judged).
fn servers_named(servers: &[String]) -> Option<String> {
    let mut distinct: Vec<&str> = Vec::new();
    for s in servers {
        if !distinct.contains(&s.as_str()) {
            distinct.push(s);
        }
    }
    (!distinct.is_empty()).then(|| distinct.join(", "))
}

/// The stored grounded records, the latest per (answer, judge) kept, sorted by answer
/// then judge.
pub async fn grounded_records(ctx: &Context) -> Result<Vec<GroundedRecord>> {
    let mut latest: HashMap<(String, String), GroundedRecord> = HashMap::new();
    for r in grounded(&ctx.workspace)
        .read_all::<GroundedRecord>()
        .await?
    {
        latest.insert((r.answer_id.clone(), r.judge_model.clone()), r);
    }
    let mut out: Vec<GroundedRecord> = latest.into_values().collect();
    out.sort_by(|a, b| {
        a.answer_id
            .cmp(&b.answer_id)
            .then(a.judge_model.cmp(&b.judge_model))
    });
    Ok(out)
}
