//! Grounded metrics of stored answers (`raglab answers ground`): faithfulness against
//! the contexts that were in each answer's prompt, context precision and recall, and
//! answer correctness, judged statement by statement ([`crate::core::grounded`]) by a
//! local GGUF model (its replies held to their JSON shape by a grammar) or by the
//! endpoint pool (a JSON schema; several answers at once, each answer's requests on
//! one server, a reply off its shape sets that server aside). One record per answer,
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
    CorrectnessWeights, GroundedRecord, Grounding, GroundingInput, GroundingTemplates, Premise,
    cosine,
};
use crate::core::prompt::ChatMessage;
use crate::core::shard::Shard;
use crate::infer::embed::Embedder;
use crate::infer::endpoint::{Constraint, EndpointError};
use crate::infer::generate::{Generator, Sampling};
use crate::service::base::{Context, ModelChoice, Pool, now_rfc3339, run_on_pool};
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
    let (judge, judge_model) = match ctx.chat_pool_config(&req.judge, req.local, true) {
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
    };
    let prompts_sha = req.templates.sha256();
    let weights = req.weights.to_string();
    // This judge's and prompt set's records, the latest per answer: those with these
    // weights are done; those with other weights are scored again from their stored
    // verdicts, without asking the judge.
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
    let todo: Vec<AnswerRecord> = todo
        .into_iter()
        .take(req.limit.unwrap_or(usize::MAX))
        .collect();
    let (rescore, todo): (Vec<_>, Vec<_>) = todo
        .into_iter()
        .partition(|a| earlier.contains_key(&a.answer_id));
    let mut summary = GroundSummary {
        already: already.len(),
        judge_model: judge_model.clone(),
        ..GroundSummary::default()
    };
    if todo.is_empty() && rescore.is_empty() {
        return Ok(summary);
    }
    let chunks: HashMap<String, Premise> = crate::service::corpus::chunks_or_empty(ctx)
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
        .collect();
    let embedder = similarity_embedder(ctx, todo.iter().chain(&rescore), req.weights)?;
    let inputs: Vec<(AnswerRecord, GroundingInput)> = todo
        .into_iter()
        .map(|a| {
            let (found, gone): (Vec<&String>, Vec<&String>) =
                a.chunk_ids.iter().partition(|id| chunks.contains_key(*id));
            summary.contexts_missing += gone.len();
            let input = GroundingInput {
                question: a.question.clone(),
                answer: a.answer.clone(),
                reference: a.reference_answer.clone(),
                contexts: found
                    .into_iter()
                    .filter_map(|id| chunks.get(id).cloned())
                    .collect(),
                contexts_missing: gone.into_iter().cloned().collect(),
            };
            (a, input)
        })
        .collect();
    let scorer = Scorer {
        ctx,
        judge_model: &judge_model,
        prompts_sha: &prompts_sha,
        weights: req.weights,
        embedder: embedder.as_ref(),
    };
    for a in &rescore {
        scorer.rescore(a, &earlier[&a.answer_id]).await?;
        without_reference_of(a, &mut summary.without_reference);
    }
    summary.rescored = rescore.len();
    let total = inputs.len();
    let mut requests = 0usize;
    let mut without_reference = 0usize;
    match judge {
        GroundJudge::Local(generator) => {
            for (i, (a, input)) in inputs.into_iter().enumerate() {
                let started = Instant::now();
                let mut g = Grounding::new(input, req.templates.clone());
                while let Some(r) = g.next_request() {
                    let asked = Instant::now();
                    let (raw, _) = generator.generate(
                        vec![ChatMessage::user(r.prompt)],
                        judge_sampling(r.shape.max_tokens()),
                        Some(r.shape.grammar()),
                        Arc::new(AtomicBool::new(false)),
                        |_| {},
                    )?;
                    requests += 1;
                    g.answer(&raw)
                        .with_context(|| format!("{} of answer {}", r.step.name(), a.answer_id))?;
                    g.request_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
                }
                without_reference += usize::from(!g.has_reference());
                scorer.commit(&a, &g, None, started).await?;
                progress(i + 1, total);
            }
        }
        GroundJudge::Pool(pool) => {
            let jobs: Vec<Arc<(AnswerRecord, GroundingInput)>> =
                inputs.into_iter().map(Arc::new).collect();
            let templates = req.templates.clone();
            let work = move |ep: Arc<crate::infer::endpoint::Endpoint>,
                             job: Arc<(AnswerRecord, GroundingInput)>| {
                let templates = templates.clone();
                async move {
                    let started = Instant::now();
                    let mut g = Grounding::new(job.1.clone(), templates);
                    let stop = AtomicBool::new(false);
                    while let Some(r) = g.next_request() {
                        let asked = Instant::now();
                        let constraint = Constraint::JsonSchema {
                            name: "grounded".into(),
                            schema: r.shape.json_schema(),
                        };
                        let reply = ep
                            .chat(
                                &[ChatMessage::user(r.prompt)],
                                &judge_sampling(r.shape.max_tokens()),
                                Some(&constraint),
                                &stop,
                                &mut |_| {},
                            )
                            .await?;
                        g.answer(&reply.text)
                            .map_err(|e| EndpointError::Misbehaved {
                                url: ep.spec.url.clone(),
                                reason: format!("{}: {e}", r.step.name()),
                            })?;
                        g.request_ms.push(asked.elapsed().as_secs_f64() * 1000.0);
                    }
                    Ok::<_, EndpointError>((g, started))
                }
            };
            let mut done = 0usize;
            run_on_pool(
                &pool,
                jobs,
                work,
                async |job: Arc<(AnswerRecord, GroundingInput)>,
                       (g, started): (Grounding, Instant),
                       i| {
                    requests += g.prompts.len();
                    without_reference += usize::from(!g.has_reference());
                    let url = pool.endpoints[i].spec.url.clone();
                    scorer.commit(&job.0, &g, Some(url), started).await?;
                    done += 1;
                    progress(done, total);
                    Ok(())
                },
            )
            .await?;
        }
    }
    summary.scored = total;
    summary.requests = requests;
    summary.without_reference += without_reference;
    Ok(summary)
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
    /// Score `g` (embedding the two texts for the similarity when it counts) and
    /// commit the record.
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
            faithfulness: s.faithfulness,
            context_precision: s.context_precision,
            context_recall: s.context_recall,
            answer_correctness: s.answer_correctness,
            statement_f1: s.statement_f1,
            similarity: s.similarity,
            weights: self.weights.to_string(),
            undefined: s.undefined,
            created_at: now_rfc3339(),
            ..earlier.clone()
        };
        grounded(&self.ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        Ok(())
    }

    async fn commit(
        &self,
        a: &AnswerRecord,
        g: &Grounding,
        endpoint: Option<String>,
        started: Instant,
    ) -> Result<()> {
        let similarity = self.similarity(a, g.has_reference())?;
        let detail = g.detail();
        let s = detail.scores(g.has_reference(), similarity, self.weights);
        let rec = GroundedRecord {
            answer_id: a.answer_id.clone(),
            run: a.run.clone(),
            question_id: a.question_id.clone(),
            judge_model: self.judge_model.to_string(),
            templates_sha256: self.prompts_sha.to_string(),
            faithfulness: s.faithfulness,
            context_precision: s.context_precision,
            context_recall: s.context_recall,
            answer_correctness: s.answer_correctness,
            statement_f1: s.statement_f1,
            similarity: s.similarity,
            weights: self.weights.to_string(),
            undefined: s.undefined,
            detail: serde_json::to_string(detail)?,
            prompts: g.prompts.clone(),
            replies: g.replies.clone(),
            endpoint,
            judge_ms: started.elapsed().as_secs_f64() * 1000.0,
            created_at: now_rfc3339(),
            request_ms: g.request_ms.clone(),
        };
        grounded(&self.ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        Ok(())
    }
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
