//! One answer generated live for the TUI's Generate pane: streamed token by token,
//! stoppable, saved with full provenance. It runs on the local llama.cpp generator,
//! or, when the config lists chat `[[endpoints]]` (the same rule as `raglab generate`),
//! on the first of them that answers: the pane streams from `/v1/chat/completions`
//! exactly as from a local model. Before the first token, `on_start` receives the exact
//! prompt (the chat-templated text locally; the messages as sent to an endpoint, whose
//! server applies its own template) and where it runs (`CPU · layers offloaded 0/31`,
//! the GPU's name, or the endpoint's URL).

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use anyhow::{Result, bail};

use super::generation::{Answerer, GenerationConfig, Prepared, prepare_prompt, record};
use crate::core::abstention::ABSTAIN_ANSWER;
use crate::core::answer::{AnswerRecord, JudgementRecord};
use crate::core::prompt::{ChatMessage, estimate_tokens};
use crate::core::question::Question;
use crate::infer::generate::{GenConfig, GenStats, Generator};
use crate::service::base::{Context, ModelChoice, Pool, Provenance, file_sha256, load_generator};
use crate::service::retrieval::Retriever;

/// The generator of the TUI and its file hash, loaded on first use and shared by
/// every later answer.
#[derive(Clone, Default)]
pub struct GeneratorSlot(Arc<OnceLock<Loaded>>);

/// A loaded generator with its file's SHA-256, or why it could not be loaded.
type Loaded = Result<(Arc<Generator>, String), String>;

impl GeneratorSlot {
    fn get(&self, cfg: &GenConfig) -> Result<(Arc<Generator>, String)> {
        let loaded = self.0.get_or_init(|| {
            let g = load_generator(cfg).map_err(|e| format!("{e:#}"))?;
            let sha = file_sha256(&cfg.model).map_err(|e| format!("{e:#}"))?;
            Ok((Arc::new(g), sha))
        });
        loaded.clone().map_err(anyhow::Error::msg)
    }
}

/// One stored answer judged live, as `raglab judge` judges it (greedy, the rubric's
/// grammar, against the text of its targets) but streamed token by token for the TUI.
/// Blocking; the judgement is returned for the caller to commit. `slot` holds the
/// judge model (`[models] judge`, else the generator's file) once loaded.
pub fn judge_live(
    ctx: &Context,
    slot: &GeneratorSlot,
    retriever: &Retriever,
    rubric: &crate::core::rubric::Rubric,
    a: &AnswerRecord,
    on_token: impl FnMut(&str),
) -> Result<JudgementRecord> {
    let mut cfg = ctx.judge_config(&ModelChoice::default());
    cfg.threads = Context::tui_threads();
    let (g, _) = slot.get(&cfg)?;
    let target = a
        .target_ids
        .iter()
        .filter_map(|t| retriever.chunk(t))
        .map(|c| c.text.as_str())
        .collect::<Vec<_>>()
        .join("\n\n");
    if target.is_empty() {
        bail!("none of this answer's target chunks is in the corpus: nothing to judge it against");
    }
    // The configured judge template (`[prompts] judge`), as `raglab judge` uses it.
    let template = ctx.template(crate::core::template::TemplateKind::Judge, None)?;
    let prompt = super::generation::judge_prompt_with(
        &template,
        rubric,
        a,
        &target,
        &crate::core::prompt::PromptText::default(),
    );
    let (mut rec, _) =
        super::generation::judge_prompted(&g, rubric, a, prompt, (0.0, 7), on_token)?;
    if let Some(tag) = super::generation::judge_template_tag(&template) {
        rec.judge_model = format!("{}+{tag}", rec.judge_model);
    }
    Ok(rec)
}

/// Whether live answers go to the configured chat endpoints.
pub fn live_on_endpoints(ctx: &Context) -> bool {
    !ctx.config.chat_endpoints().is_empty()
}

/// What a live front is told while an answer is made: the exact prompt and where it
/// runs (once, before generation), how much of the prompt the model has read (the
/// local model only: a chat server does not say; a long prompt on two CPU cores takes
/// tens of seconds before the first token), and each piece of the answer.
pub struct LiveWatch {
    pub on_start: Box<dyn FnOnce(String, String) + Send>,
    pub on_prompt: Box<dyn FnMut(usize, usize) + Send>,
    pub on_token: Box<dyn FnMut(&str) + Send>,
}

/// One answer generated live on the local model. Blocking (run it on a blocking
/// thread).
pub fn answer_live(
    ctx: &Context,
    slot: &GeneratorSlot,
    retriever: &Retriever,
    question: &Question,
    config: &GenerationConfig,
    stop: Arc<AtomicBool>,
    watch: LiveWatch,
) -> Result<AnswerRecord> {
    let mut gcfg = ctx.gen_config(&ModelChoice::default());
    gcfg.threads = Context::tui_threads();
    let (g, sha) = slot.get(&gcfg)?;
    let answerer = Answerer {
        retriever: Some(retriever),
        generator: &g,
        model_sha256: sha,
        config,
    };
    let prepared = answerer.prepare(question)?;
    let prompt = g
        .chat_prompt(vec![ChatMessage::user(prepared.user_prompt.clone())])
        .unwrap_or_default();
    (watch.on_start)(prompt, g.info.placement.describe());
    answerer.answer(question, prepared, stop, watch.on_prompt, watch.on_token)
}

/// The prompt of `question` within `context_tokens`, assembled on a blocking thread
/// (retrieval embeds the query with the local model).
async fn prepare_blocking(
    retriever: &Arc<Retriever>,
    question: &Question,
    config: &GenerationConfig,
    context_tokens: usize,
) -> Result<Prepared> {
    let (r, q, c) = (Arc::clone(retriever), question.clone(), config.clone());
    tokio::task::spawn_blocking(move || {
        prepare_prompt(Some(&*r), &c, &q, &estimate_tokens, context_tokens, None)
    })
    .await?
}

/// One answer generated live on the first chat endpoint that answers (a server that
/// cannot be reached, or fails before its first token, passes the question to the
/// next). Retrieval runs on a blocking thread; the stream on the runtime.
pub async fn answer_live_endpoint(
    ctx: &Context,
    retriever: Arc<Retriever>,
    question: &Question,
    config: &GenerationConfig,
    stop: Arc<AtomicBool>,
    watch: LiveWatch,
) -> Result<AnswerRecord> {
    let LiveWatch {
        on_start,
        mut on_token,
        ..
    } = watch;
    let pool = Pool::from_config(&ctx.config.chat_endpoints())?;
    let prepared = prepare_blocking(&retriever, question, config, pool.context_tokens()).await?;
    let first_url = pool.endpoints.first().map(|e| e.spec.url.clone());
    if prepared.abstain {
        on_start(
            String::new(),
            format!("endpoint {}", first_url.unwrap_or_default()),
        );
        on_token(ABSTAIN_ANSWER);
        let text = ABSTAIN_ANSWER.to_string();
        return record(
            config,
            Some(&*retriever),
            question,
            prepared,
            String::new(),
            text,
            &GenStats::default(),
            Provenance::default(),
        );
    }
    let messages = vec![ChatMessage::user(prepared.user_prompt.clone())];
    let mut on_start = Some(on_start);
    let mut last_error = None;
    for ep in &pool.endpoints {
        let sent = ep.body(&messages, &config.sampling, None)["messages"].to_string();
        if let Some(f) = on_start.take() {
            let shown = serde_json::to_string_pretty(
                &ep.body(&messages, &config.sampling, None)["messages"],
            )
            .unwrap_or_else(|_| sent.clone());
            f(shown, format!("endpoint {}", ep.spec.url));
        }
        let mut streamed = false;
        let mut forward = |piece: &str| {
            streamed = true;
            on_token(piece);
        };
        match ep
            .chat(&messages, &config.sampling, None, &stop, &mut forward)
            .await
        {
            Ok(reply) => {
                return record(
                    config,
                    Some(&*retriever),
                    question,
                    prepared,
                    sent,
                    reply.text,
                    &reply.stats,
                    Provenance::endpoint(&ep.spec.url, reply.served_model),
                );
            }
            // Tokens already on screen cannot be taken back: only a failure before
            // the first one moves to the next endpoint.
            Err(e) if (e.retryable() || e.violation()) && !streamed => last_error = Some(e),
            Err(e) => return Err(e.into()),
        }
    }
    Err(last_error.map_or_else(
        || anyhow::anyhow!("no chat endpoint configured"),
        anyhow::Error::from,
    ))
}

/// One answer for a live front, generated where `raglab generate` would generate it (the
/// chat endpoints when the config names them, else the local model on a blocking
/// thread) and saved. Every live answer is its own: the same question and seed asked
/// twice must not store two answers under one id, so its id gets the moment it was
/// made. `watch` is told as in [`answer_live`].
pub async fn answer_live_and_save(
    ctx: Arc<Context>,
    slot: GeneratorSlot,
    retriever: Arc<Retriever>,
    question: Question,
    config: GenerationConfig,
    stop: Arc<AtomicBool>,
    watch: LiveWatch,
) -> Result<AnswerRecord> {
    let mut rec = if live_on_endpoints(&ctx) {
        answer_live_endpoint(&ctx, retriever, &question, &config, stop, watch).await?
    } else {
        let live_ctx = Arc::clone(&ctx);
        tokio::task::spawn_blocking(move || {
            answer_live(
                &live_ctx, &slot, &retriever, &question, &config, stop, watch,
            )
        })
        .await
        .map_err(|e| anyhow::anyhow!("the generation stopped: {e}"))??
    };
    rec.answer_id = format!("{}@{:x}", rec.answer_id, crate::service::base::now_nanos());
    super::save_answer(&ctx, &rec)
        .await
        .map_err(|e| anyhow::anyhow!("answer not saved: {e:#}"))?;
    Ok(rec)
}

/// One stored answer judged live ([`judge_live`], on a blocking thread) and committed
/// as `raglab judge` commits a judgement, so the study's next read shows it.
pub async fn judge_live_and_commit(
    ctx: Arc<Context>,
    slot: GeneratorSlot,
    retriever: Arc<Retriever>,
    rubric: crate::core::rubric::Rubric,
    answer: AnswerRecord,
    on_token: impl FnMut(&str) + Send + 'static,
) -> Result<JudgementRecord> {
    let live_ctx = Arc::clone(&ctx);
    let rec = tokio::task::spawn_blocking(move || {
        judge_live(&live_ctx, &slot, &retriever, &rubric, &answer, on_token)
    })
    .await
    .map_err(|e| anyhow::anyhow!("the judge stopped: {e}"))??;
    super::judgements(&ctx.workspace)
        .append(std::slice::from_ref(&rec))
        .await?;
    Ok(rec)
}
