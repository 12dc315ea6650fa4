//! Building an evaluation set (after "Know Your RAG"): `generate` writes candidate
//! questions from chunks, `critique` scores them on six axes, `filter` keeps the good
//! ones (thresholds, analysts' decisions, near-duplicates) and writes a questions file.
//!
//! Each stage is a resumable batch like `raglab generate`: every candidate and every
//! critique is one lance commit keyed by its id (candidate: kind, chunks and seed;
//! critique: candidate and critic model), so a killed batch resumes without duplicates.
//! Both run on the local llama.cpp model (a GGUF grammar constrains the output) or on
//! the `[[endpoints]]` pool (a JSON schema does), and every reply is parsed and
//! validated before it is stored. Analysts' decisions (accept, reject, clear) are
//! appended too; the latest per candidate counts.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::core::candidates::{CandidateRecord, CritiqueRecord, DecisionRecord};
use crate::core::chunk::Chunk;
use crate::core::evalset::{
    AXES, Decision, EvalsetTemplates, FilterInput, FilterOutcome, Kind, Limits, Task, Thresholds,
    critique_grammar, critique_prompt, critique_schema, critique_tokens_needed, filter,
    parse_candidate, parse_scores, task_prompt, tasks,
};
use crate::core::prompt::{ChatMessage, PromptText};
use crate::core::question::Question;
use crate::core::sampling::Sampling;
use crate::core::template::Template;
use crate::infer::endpoint::{ChatReply, Constraint, Endpoint, EndpointError};
use crate::infer::generate::GenStats;
use crate::service::base::{
    Backend, Context, ModelChoice, PoolReport, Resumable, Role, now_rfc3339, run_on_pool,
};
use crate::store::records::Table;

pub const CANDIDATES: &str = "evalset_candidates.lance";
pub const CRITIQUES: &str = "evalset_critiques.lance";
pub const DECISIONS: &str = "evalset_decisions.lance";

/// The smallest `--max-tokens` a generation accepts (room for a short question and
/// answer inside the JSON object).
pub const MIN_GENERATION_TOKENS: usize = 64;

fn candidates(ctx: &Context) -> Table<'_> {
    Table::of::<CandidateRecord>(&ctx.workspace, CANDIDATES)
}

fn critiques(ctx: &Context) -> Table<'_> {
    Table::of::<CritiqueRecord>(&ctx.workspace, CRITIQUES)
}

fn decisions(ctx: &Context) -> Table<'_> {
    Table::of::<DecisionRecord>(&ctx.workspace, DECISIONS)
}

/// One model call's output, wherever it ran.
struct Reply {
    prompt: String,
    text: String,
    stats: GenStats,
    endpoint: Option<String>,
    served_model: Option<String>,
}

/// Run every prompt as [`run_each`] does, counting what `done` stored: `progress`
/// gets (stored, prompts) after each, and the summary the totals and the time.
async fn run_prompts(
    backend: &Backend,
    prompts: Vec<PromptText>,
    sampling: &Sampling,
    constraints: (String, Constraint),
    progress: &dyn Fn(usize, usize),
    mut done: impl AsyncFnMut(usize, Reply) -> Result<()>,
) -> Result<StageSummary> {
    let started = std::time::Instant::now();
    let total = prompts.len();
    let (mut written, mut tokens) = (0, 0);
    let pool = run_each(
        backend,
        prompts,
        sampling,
        constraints,
        async |i, r: Reply| {
            let output_tokens = r.stats.output_tokens;
            done(i, r).await?;
            written += 1;
            tokens += output_tokens;
            progress(written, total);
            Ok(())
        },
    )
    .await?;
    Ok(StageSummary {
        written,
        tokens,
        seconds: started.elapsed().as_secs_f64(),
        pool,
    })
}

/// Send every prompt to the backend, constrained by `grammar` (local) or `constraint`
/// (endpoints), and hand each reply to `done` as it completes, with the job's index.
async fn run_each(
    backend: &Backend,
    prompts: Vec<PromptText>,
    sampling: &Sampling,
    (grammar, constraint): (String, Constraint),
    mut done: impl AsyncFnMut(usize, Reply) -> Result<()>,
) -> Result<Option<PoolReport>> {
    match backend {
        Backend::Local(g, _) => {
            for (i, p) in prompts.into_iter().enumerate() {
                let messages = vec![ChatMessage::user(p)];
                let prompt = g.chat_prompt(messages.clone())?;
                let (text, stats) = g.generate(
                    messages,
                    sampling.clone(),
                    Some(grammar.clone()),
                    Arc::new(AtomicBool::new(false)),
                    |_| {},
                )?;
                let reply = Reply {
                    prompt,
                    text,
                    stats,
                    endpoint: None,
                    served_model: None,
                };
                done(i, reply).await?;
            }
            Ok(None)
        }
        Backend::Pool(pool, _) => {
            let jobs: Vec<Arc<(usize, PromptText)>> = prompts
                .into_iter()
                .enumerate()
                .map(|(i, p)| Arc::new((i, p)))
                .collect();
            let sampling = sampling.clone();
            let work = move |ep: Arc<Endpoint>, job: Arc<(usize, PromptText)>| {
                let (sampling, constraint) = (sampling.clone(), constraint.clone());
                async move {
                    let messages = vec![ChatMessage::user(job.1.clone())];
                    let stop = AtomicBool::new(false);
                    let reply = ep
                        .chat(&messages, &sampling, Some(&constraint), &stop, &mut |_| {})
                        .await?;
                    let sent =
                        ep.body(&messages, &sampling, Some(&constraint))["messages"].to_string();
                    Ok::<_, EndpointError>((reply, sent))
                }
            };
            let report = run_on_pool(
                pool,
                jobs,
                work,
                async |job: Arc<(usize, PromptText)>, out: (ChatReply, String), e| {
                    let (reply, sent) = out;
                    let r = Reply {
                        prompt: sent,
                        text: reply.text,
                        stats: reply.stats,
                        endpoint: Some(pool.endpoints[e].spec.url.clone()),
                        served_model: Some(reply.served_model),
                    };
                    done(job.0, r).await
                },
            )
            .await?;
            Ok(Some(report))
        }
    }
}

/// What `evalset generate` is asked for.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub generator: ModelChoice,
    /// Use the local model even when endpoints are configured.
    pub local: bool,
    /// Sampling; its seed also orders the tasks, its `max_tokens` bounds the strings.
    pub sampling: Sampling,
    /// Only the first this-many tasks of the seeded order (a rerun with the same
    /// number finishes them).
    pub limit: Option<usize>,
    /// Chunks shorter than this (words) are not used.
    pub min_words: usize,
    pub kinds: Vec<Kind>,
    /// The fact and reasoning templates (their slots checked when they were read).
    pub templates: EvalsetTemplates,
}

/// A generation batch: the tasks still to write, and the model.
pub struct GenerateBatch {
    work: Resumable<Task>,
    chunks: HashMap<String, Chunk>,
    sampling: Sampling,
    limits: Limits,
    templates: EvalsetTemplates,
}

/// What a finished stage did.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StageSummary {
    pub written: usize,
    pub tokens: usize,
    pub seconds: f64,
    pub pool: Option<PoolReport>,
}

impl GenerateBatch {
    pub async fn prepare(ctx: &Context, req: GenerateRequest) -> Result<Self> {
        if req.sampling.max_tokens < MIN_GENERATION_TOKENS {
            bail!(
                "--max-tokens must be at least {MIN_GENERATION_TOKENS} for a question and its answer"
            );
        }
        let all = crate::service::corpus::chunks_or_empty(ctx).await?;
        if all.is_empty() {
            bail!("the workspace has no chunks: run `raglab ingest` first");
        }
        let mut order = tasks(
            &all,
            req.min_words,
            &req.kinds,
            u64::from(req.sampling.seed),
        );
        order.truncate(req.limit.unwrap_or(usize::MAX));
        let done: HashSet<String> = all_candidates(ctx)
            .await?
            .into_iter()
            .map(|c| c.candidate_id)
            .collect();
        let seed = req.sampling.seed;
        // The limit cut the task order above: a rerun with the same limit finishes.
        let role = Role::Generator { reuse_prefix: true };
        let backend = Backend::open_named(ctx, &req.generator, req.local, role).await?;
        Ok(Self {
            work: Resumable::split(
                order,
                None,
                |t| done.contains(&t.candidate_id(seed)),
                backend,
            ),
            chunks: all.into_iter().map(|c| (c.id.clone(), c)).collect(),
            limits: Limits::for_tokens(req.sampling.max_tokens),
            sampling: req.sampling,
            templates: req.templates,
        })
    }

    /// The generation tasks still to run, those run before, and the model.
    pub fn work(&self) -> &Resumable<Task> {
        &self.work
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// Write every remaining candidate, each committed as it completes; `progress`
    /// gets (done, todo).
    pub async fn run(self, ctx: &Context, progress: &dyn Fn(usize, usize)) -> Result<StageSummary> {
        let prompts: Vec<PromptText> = self
            .work
            .todo
            .iter()
            .map(|t| {
                let cs: Vec<&Chunk> = t
                    .chunk_ids
                    .iter()
                    .filter_map(|id| self.chunks.get(id))
                    .collect();
                task_prompt(&self.templates, t.kind, &cs)
            })
            .collect();
        let constraint = Constraint::JsonSchema {
            name: "candidate".into(),
            schema: self.limits.json_schema(),
        };
        let sampling_json = serde_json::to_string(&self.sampling)?;
        let (model, sha) = match &self.work.backend {
            Backend::Local(_, sha) => (self.work.backend.model_name(), sha.clone()),
            Backend::Pool(..) => (self.work.backend.model_name(), String::new()),
        };
        run_prompts(
            &self.work.backend,
            prompts,
            &self.sampling,
            (self.limits.grammar(), constraint),
            progress,
            async |i, r: Reply| {
                let t = &self.work.todo[i];
                let (question, answer) = parse_candidate(&r.text)
                    .with_context(|| format!("generator output did not parse: {:?}", r.text))?;
                let first = self.chunks.get(&t.chunk_ids[0]);
                let rec = CandidateRecord {
                    candidate_id: t.candidate_id(self.sampling.seed),
                    kind: t.kind.as_str().into(),
                    chunk_ids: t.chunk_ids.clone(),
                    doc_id: first.map(|c| c.doc_id.clone()).unwrap_or_default(),
                    topic: first.and_then(|c| c.topic.clone()),
                    question,
                    answer,
                    model_file: r.served_model.clone().unwrap_or_else(|| model.clone()),
                    model_sha256: sha.clone(),
                    endpoint: r.endpoint,
                    prompt: r.prompt,
                    raw_output: r.text,
                    sampling: sampling_json.clone(),
                    seed: self.sampling.seed,
                    output_tokens: r.stats.output_tokens as u32,
                    total_ms: r.stats.total_ms,
                    created_at: now_rfc3339(),
                };
                candidates(ctx).append(&[rec]).await?;
                Ok(())
            },
        )
        .await
    }
}

/// Every stored candidate, in commit order.
pub async fn all_candidates(ctx: &Context) -> Result<Vec<CandidateRecord>> {
    Ok(candidates(ctx).read_all().await?)
}

/// Every stored critique, in commit order.
pub async fn all_critiques(ctx: &Context) -> Result<Vec<CritiqueRecord>> {
    Ok(critiques(ctx).read_all().await?)
}

/// The latest decision per candidate (`clear` removes one).
pub async fn current_decisions(ctx: &Context) -> Result<HashMap<String, Decision>> {
    let mut out = HashMap::new();
    for d in decisions(ctx).read_all::<DecisionRecord>().await? {
        match Decision::parse(&d.decision) {
            Some(x) => out.insert(d.candidate_id, x),
            None => out.remove(&d.candidate_id),
        };
    }
    Ok(out)
}

/// Store an analyst's decision on a candidate (None: clear it).
pub async fn decide(
    ctx: &Context,
    candidate_id: &str,
    decision: Option<Decision>,
    reviewer: Option<&str>,
) -> Result<()> {
    let known = all_candidates(ctx)
        .await?
        .iter()
        .any(|c| c.candidate_id == candidate_id);
    if !known {
        bail!("no candidate `{candidate_id}` (see `raglab evalset list`)");
    }
    let rec = DecisionRecord {
        candidate_id: candidate_id.to_string(),
        decision: decision.map_or("clear", Decision::as_str).to_string(),
        reviewer: reviewer.map(str::to_string),
        created_at: now_rfc3339(),
    };
    decisions(ctx).append(&[rec]).await?;
    Ok(())
}

/// A critique batch: candidates this critic has not scored yet.
pub struct CritiqueBatch {
    work: Resumable<CandidateRecord>,
    texts: HashMap<String, String>,
    template: Template,
}

impl CritiqueBatch {
    /// `critic`: a GGUF (default: `[models] judge`, else the generator; endpoints when
    /// configured and nothing is named). `limit`: at most this many candidates.
    /// `template`: the critique's (its slots checked when it was read).
    pub async fn prepare(
        ctx: &Context,
        critic: &ModelChoice,
        local: bool,
        limit: Option<usize>,
        template: Template,
    ) -> Result<Self> {
        let backend = Backend::open_named(ctx, critic, local, Role::Critic).await?;
        let name = backend.model_name();
        let scored: HashSet<String> = all_critiques(ctx)
            .await?
            .into_iter()
            .filter(|c| c.critic_model == name)
            .map(|c| c.candidate_id)
            .collect();
        let all = all_candidates(ctx).await?;
        if all.is_empty() {
            bail!("no candidates yet: run `raglab evalset generate` first");
        }
        let texts = crate::service::corpus::chunks_or_empty(ctx)
            .await?
            .into_iter()
            .map(|c| (c.id, c.text))
            .collect();
        Ok(Self {
            work: Resumable::split(all, limit, |c| scored.contains(&c.candidate_id), backend),
            texts,
            template,
        })
    }

    /// The candidates still to critique, those critiqued before, and the critic.
    pub fn work(&self) -> &Resumable<CandidateRecord> {
        &self.work
    }

    /// Score every remaining candidate greedily, committing each critique.
    pub async fn run(self, ctx: &Context, progress: &dyn Fn(usize, usize)) -> Result<StageSummary> {
        let prompts: Vec<PromptText> = self
            .work
            .todo
            .iter()
            .map(|c| {
                let context = c
                    .chunk_ids
                    .iter()
                    .filter_map(|id| self.texts.get(id).map(String::as_str))
                    .collect::<Vec<_>>()
                    .join("\n\n");
                critique_prompt(&self.template, &c.question, &c.answer, &context)
            })
            .collect();
        let sampling = Sampling {
            temperature: 0.0,
            seed: 7,
            max_tokens: critique_tokens_needed(),
            ..Sampling::default()
        };
        let constraint = Constraint::JsonSchema {
            name: "critique".into(),
            schema: critique_schema(),
        };
        let model = self.work.backend.model_name();
        run_prompts(
            &self.work.backend,
            prompts,
            &sampling,
            (critique_grammar(), constraint),
            progress,
            async |i, r: Reply| {
                let c = &self.work.todo[i];
                let sc = parse_scores(&r.text)
                    .with_context(|| format!("critic output did not parse: {:?}", r.text))?
                    .map(u32::from);
                let rec = CritiqueRecord {
                    candidate_id: c.candidate_id.clone(),
                    critic_model: model.clone(),
                    endpoint: r.endpoint,
                    groundedness: sc[0],
                    answer_groundedness: sc[1],
                    feasibility: sc[2],
                    stand_alone: sc[3],
                    usefulness: sc[4],
                    tautology: sc[5],
                    prompt: r.prompt,
                    raw_output: r.text,
                    created_at: now_rfc3339(),
                };
                critiques(ctx).append(&[rec]).await?;
                Ok(())
            },
        )
        .await
    }
}

/// A candidate as the analyst sees it: its record, its latest critique (of `critic`
/// when named), the analyst's decision and the filter's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CandidateView {
    pub candidate: CandidateRecord,
    pub critique: Option<CritiqueRecord>,
    /// Critiques stored for the candidate, by any critic.
    pub critiques: usize,
    pub decision: Option<Decision>,
    /// `kept`, or why the filter drops it (with its settings).
    pub verdict: String,
    /// The candidate a duplicate repeats.
    pub duplicate_of: Option<String>,
}

/// How `evalset filter` decides.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct FilterSettings {
    pub thresholds: Thresholds,
    pub within: f64,
    pub across: f64,
}

impl Default for FilterSettings {
    fn default() -> Self {
        Self {
            thresholds: Thresholds::default(),
            within: crate::core::evalset::DEDUP_WITHIN,
            across: crate::core::evalset::DEDUP_ACROSS,
        }
    }
}

/// Every candidate with its critique, decision and verdict under `settings`, and the
/// filter's outcome.
pub async fn review(
    ctx: &Context,
    settings: FilterSettings,
    critic: Option<&str>,
) -> Result<(Vec<CandidateView>, FilterOutcome)> {
    let cands = all_candidates(ctx).await?;
    let mut latest: HashMap<String, CritiqueRecord> = HashMap::new();
    let mut stored: HashMap<String, usize> = HashMap::new();
    for c in all_critiques(ctx).await? {
        *stored.entry(c.candidate_id.clone()).or_default() += 1;
        if critic.is_none_or(|m| c.critic_model == m) {
            latest.insert(c.candidate_id.clone(), c);
        }
    }
    let decided = current_decisions(ctx).await?;
    let inputs: Vec<FilterInput<'_>> = cands
        .iter()
        .map(|c| FilterInput {
            question: &c.question,
            source: c.chunk_ids.join("+"),
            scores: latest.get(&c.candidate_id).map(CritiqueRecord::scores),
            decision: decided.get(&c.candidate_id).copied(),
        })
        .collect();
    let outcome = filter(
        &inputs,
        settings.thresholds,
        settings.within,
        settings.across,
    );
    let views = cands
        .iter()
        .zip(&outcome.verdicts)
        .map(|(c, v)| {
            let duplicate_of = match v {
                Some(
                    crate::core::evalset::Dropped::DuplicateWithinSource { of, .. }
                    | crate::core::evalset::Dropped::DuplicateAcrossSet { of, .. },
                ) => Some(cands[*of].candidate_id.clone()),
                _ => None,
            };
            CandidateView {
                candidate: c.clone(),
                critique: latest.get(&c.candidate_id).cloned(),
                critiques: stored.get(&c.candidate_id).copied().unwrap_or(0),
                decision: decided.get(&c.candidate_id).copied(),
                verdict: v
                    .as_ref()
                    .map_or("kept", crate::core::evalset::Dropped::key)
                    .to_string(),
                duplicate_of,
            }
        })
        .collect();
    Ok((views, outcome))
}

/// What each stage kept and why the rest went.
#[derive(Debug, Clone, Serialize)]
pub struct FilterReport {
    /// Candidates written, in all and per kind.
    pub generated: usize,
    pub generated_by_kind: BTreeMap<String, usize>,
    /// Candidates with a critique (of the critic used), and the critic models seen.
    pub critiqued: usize,
    pub critics: Vec<String>,
    /// Analysts' decisions in force.
    pub accepted_by_hand: usize,
    pub rejected_by_hand: usize,
    /// Accepted by hand although the scores would have dropped them.
    pub kept_against_scores: usize,
    pub kept: usize,
    pub kept_by_kind: BTreeMap<String, usize>,
    /// Dropped candidates per reason.
    pub dropped: BTreeMap<String, usize>,
    /// Candidates below each axis's threshold (one may fall below several).
    pub below_by_axis: BTreeMap<String, usize>,
    /// Minimum score per axis (0: not applied).
    pub thresholds: BTreeMap<String, u8>,
    pub dedup_within: f64,
    pub dedup_across: f64,
    /// The questions file written.
    pub out: String,
    /// Each candidate's verdict, in commit order.
    pub verdicts: Vec<Verdict>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Verdict {
    pub candidate_id: String,
    pub verdict: String,
    pub duplicate_of: Option<String>,
}

/// The kept candidates as a questions file (one JSON object a line, with its
/// `qtype`), and how many of each kind were kept.
fn kept_questions(
    views: &[CandidateView],
    outcome: &FilterOutcome,
) -> Result<(String, BTreeMap<String, usize>)> {
    #[derive(Serialize)]
    struct Line<'a> {
        #[serde(flatten)]
        q: Question,
        qtype: &'a str,
    }
    let mut text = String::new();
    let mut kept_by_kind = BTreeMap::new();
    for i in outcome.kept() {
        let c = &views[i].candidate;
        *kept_by_kind.entry(c.kind.clone()).or_insert(0) += 1;
        let line = Line {
            q: Question {
                id: c.candidate_id.clone(),
                text: c.question.clone(),
                relevant: c.chunk_ids.clone(),
                answer: Some(c.answer.clone()),
                topic: c.topic.clone(),
                cluster: None,
            },
            qtype: &c.kind,
        };
        text.push_str(&serde_json::to_string(&line)?);
        text.push('\n');
    }
    Ok((text, kept_by_kind))
}

/// Filter the candidates and write the kept ones to `out` as a questions file
/// `{id, text, relevant, answer, topic?, qtype}` (`qtype` is a descriptive field that
/// question readers ignore), written whole or not at all.
pub async fn filter_to_file(
    ctx: &Context,
    settings: FilterSettings,
    critic: Option<&str>,
    out: &Path,
) -> Result<FilterReport> {
    let (views, outcome) = review(ctx, settings, critic).await?;
    let (text, kept_by_kind) = kept_questions(&views, &outcome)?;
    crate::service::base::write_whole(out, text.as_bytes())?;
    let mut generated_by_kind = BTreeMap::new();
    for v in &views {
        *generated_by_kind
            .entry(v.candidate.kind.clone())
            .or_insert(0) += 1;
    }
    let mut critics: Vec<String> = views
        .iter()
        .filter_map(|v| v.critique.as_ref().map(|c| c.critic_model.clone()))
        .collect();
    critics.sort();
    critics.dedup();
    Ok(FilterReport {
        generated: views.len(),
        generated_by_kind,
        critiqued: views.iter().filter(|v| v.critique.is_some()).count(),
        critics,
        accepted_by_hand: views
            .iter()
            .filter(|v| v.decision == Some(Decision::Accept))
            .count(),
        rejected_by_hand: views
            .iter()
            .filter(|v| v.decision == Some(Decision::Reject))
            .count(),
        kept_against_scores: outcome.accepted_by_hand,
        kept: outcome.kept().count(),
        kept_by_kind,
        dropped: outcome.dropped.clone(),
        below_by_axis: outcome.below_by_axis.clone(),
        thresholds: AXES
            .iter()
            .zip(settings.thresholds.0)
            .map(|((k, _), m)| ((*k).to_string(), m))
            .collect(),
        dedup_within: settings.within,
        dedup_across: settings.across,
        out: out.display().to_string(),
        verdicts: views
            .into_iter()
            .map(|v| Verdict {
                candidate_id: v.candidate.candidate_id,
                verdict: v.verdict,
                duplicate_of: v.duplicate_of,
            })
            .collect(),
    })
}
