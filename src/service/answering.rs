//! The answer use cases: a batch of answers for a question set (resumable), one live
//! streamed answer for the TUI, and judging stored answers with the rubric.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, OnceLock};

use anyhow::{Result, bail};

use super::context::{Context, ModelChoice};
use super::generation::{
    AnswerRecord, Answerer, JudgementRecord, RunConfig, answers, default_template,
    existing_answer_ids, file_sha256, judge, judgements,
};
use super::retrieval::Retriever;
use crate::core::prompt::ChatMessage;
use crate::core::question::{MissingTargets, Question};
use crate::core::rubric::Rubric;
use crate::infer::generate::{GenConfig, Generator};

/// Load a generator and refuse models that cannot chat.
fn load_generator(cfg: &GenConfig) -> Result<Generator> {
    let g = Generator::spawn(cfg)?;
    if !g.info.has_chat_template {
        bail!(
            "{} has no chat template; choose an instruction-tuned GGUF",
            cfg.model.display()
        );
    }
    Ok(g)
}

/// A batch of answers: questions of one run not answered yet, with the generator and
/// retriever loaded. `prepare`, show what will happen, then `run`.
pub struct AnswerBatch {
    todo: Vec<Question>,
    already_done: usize,
    generator: Generator,
    retriever: Option<Retriever>,
    sha: String,
    config: RunConfig,
    missing: MissingTargets,
}

/// A batch to answer: the questions, how, and with which models.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    pub questions: Vec<Question>,
    pub config: RunConfig,
    pub generator: ModelChoice,
    /// The embedding model of the retrieval (one thread is plenty for queries).
    pub embed: ModelChoice,
    /// Reuse the KV cache of a prompt prefix shared with the previous question.
    pub reuse_prefix: bool,
    /// Answer at most this many new questions.
    pub limit: Option<usize>,
}

/// What a finished batch did.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct BatchSummary {
    pub answered: usize,
    pub tokens: usize,
    pub abstained: usize,
}

impl AnswerBatch {
    /// Load what the run needs and find the questions still to answer (answers are
    /// keyed by run, question and seed, so a rerun continues where it stopped).
    pub async fn prepare(ctx: &Context, req: BatchRequest) -> Result<Self> {
        let BatchRequest {
            questions,
            mut config,
            generator,
            embed,
            reuse_prefix,
            limit,
        } = req;
        let mut gcfg = ctx.gen_config(&generator);
        gcfg.reuse_prefix = reuse_prefix;
        let generator = load_generator(&gcfg)?;
        let sha = file_sha256(&gcfg.model)?;
        let retriever = if config.no_retrieval {
            config.abstain_below = None;
            None
        } else {
            config.abstain_below = config.abstain_below.or(ctx.config.retrieval.abstain_below);
            let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(&embed))).await?;
            r.ensure_fresh()?;
            Some(r)
        };
        let done = existing_answer_ids(&ctx.workspace).await?;
        let (answered, open): (Vec<Question>, Vec<Question>) = questions
            .into_iter()
            .partition(|q| done.contains(&config.answer_id(&q.id)));
        let todo: Vec<Question> = open.into_iter().take(limit.unwrap_or(usize::MAX)).collect();
        let missing = match &retriever {
            Some(r) => MissingTargets::find(
                todo.iter().map(|q| q.relevant.iter().map(String::as_str)),
                |id| r.by_id.contains_key(id),
            ),
            None => MissingTargets::default(),
        };
        Ok(Self {
            missing,
            already_done: answered.len(),
            todo,
            generator,
            retriever,
            sha,
            config,
        })
    }

    pub fn todo(&self) -> usize {
        self.todo.len()
    }

    /// Targets of the questions to answer that are not in the corpus (their answers
    /// are stored with no target rank).
    pub fn missing_targets(&self) -> &MissingTargets {
        &self.missing
    }

    pub fn already_done(&self) -> usize {
        self.already_done
    }

    pub fn config(&self) -> &RunConfig {
        &self.config
    }

    pub fn model_file(&self) -> &str {
        &self.generator.info.file
    }

    /// Answer every remaining question, committing each answer before the next starts
    /// (an interrupted batch resumes); `progress` gets (done, todo, tokens so far).
    pub async fn run(
        self,
        ctx: &Context,
        progress: &dyn Fn(usize, usize, usize),
    ) -> Result<BatchSummary> {
        let answerer = Answerer {
            retriever: self.retriever.as_ref(),
            generator: &self.generator,
            model_sha256: self.sha.clone(),
            config: &self.config,
            template: default_template(),
        };
        let mut s = BatchSummary::default();
        for (i, q) in self.todo.iter().enumerate() {
            let prepared = answerer.prepare(q)?;
            let rec = answerer.answer(q, prepared, Arc::new(AtomicBool::new(false)), |_| {})?;
            s.tokens += rec.output_tokens as usize;
            s.abstained += usize::from(rec.abstained == Some(true));
            answers(&ctx.workspace)
                .append(std::slice::from_ref(&rec))
                .await?;
            s.answered += 1;
            progress(i + 1, self.todo.len(), s.tokens);
        }
        Ok(s)
    }
}

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

/// One answer generated live: streamed token by token, stoppable. Blocking (run it
/// on a blocking thread); `on_prompt` receives the exact prompt before generation.
#[allow(clippy::too_many_arguments)]
pub fn answer_live(
    ctx: &Context,
    slot: &GeneratorSlot,
    retriever: &Retriever,
    question: &Question,
    config: &RunConfig,
    stop: Arc<AtomicBool>,
    on_prompt: impl FnOnce(String),
    on_token: impl FnMut(&str),
) -> Result<AnswerRecord> {
    let mut gcfg = ctx.gen_config(&ModelChoice::default());
    gcfg.threads = Context::tui_threads();
    let (g, sha) = slot.get(&gcfg)?;
    let answerer = Answerer {
        retriever: Some(retriever),
        generator: &g,
        model_sha256: sha,
        config,
        template: default_template(),
    };
    let prepared = answerer.prepare(question)?;
    if let Ok(p) = g.chat_prompt(vec![ChatMessage::user(prepared.user_prompt.clone())]) {
        on_prompt(p);
    }
    answerer.answer(question, prepared, stop, on_token)
}

/// Commit one answer to `answers.lance`.
pub async fn save_answer(ctx: &Context, rec: &AnswerRecord) -> Result<()> {
    answers(&ctx.workspace)
        .append(std::slice::from_ref(rec))
        .await?;
    Ok(())
}

/// Every stored answer.
pub async fn all_answers(ctx: &Context) -> Result<Vec<AnswerRecord>> {
    Ok(answers(&ctx.workspace).read_all().await?)
}

/// Judging stored answers not yet judged by this judge model.
pub struct JudgeBatch {
    todo: Vec<AnswerRecord>,
    generator: Generator,
    rubric: Rubric,
    /// Text of each chunk id (the targets are shown to the judge).
    texts: HashMap<String, String>,
    /// Targets not in the corpus; answers with no target left are not judged.
    missing: MissingTargets,
}

impl JudgeBatch {
    pub async fn prepare(
        ctx: &Context,
        rubric: Rubric,
        run: Option<&str>,
        model: &ModelChoice,
        limit: Option<usize>,
    ) -> Result<Self> {
        let generator = Generator::spawn(&ctx.judge_config(model))?;
        let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
        let judged: HashSet<(String, String)> = judgements(&ctx.workspace)
            .read_all::<JudgementRecord>()
            .await?
            .into_iter()
            .map(|j| (j.answer_id, j.judge_model))
            .collect();
        let texts: HashMap<String, String> = super::corpus::chunks_or_empty(ctx)
            .await?
            .into_iter()
            .map(|c| (c.id, c.text))
            .collect();
        let file = generator.info.file.clone();
        let candidates: Vec<AnswerRecord> = all
            .into_iter()
            .filter(|a| run.is_none_or(|r| a.run == r))
            .filter(|a| !judged.contains(&(a.answer_id.clone(), file.clone())))
            .collect();
        let missing = MissingTargets::find(
            candidates
                .iter()
                .map(|a| a.target_ids.iter().map(String::as_str)),
            |id| texts.contains_key(id),
        );
        // The judge compares the answer with its target chunk: an answer none of whose
        // targets exists would be judged against an empty text.
        let todo = candidates
            .into_iter()
            .filter(|a| {
                a.target_ids.is_empty() || a.target_ids.iter().any(|t| texts.contains_key(t))
            })
            .take(limit.unwrap_or(usize::MAX))
            .collect();
        Ok(Self {
            missing,
            todo,
            generator,
            rubric,
            texts,
        })
    }

    pub fn todo(&self) -> usize {
        self.todo.len()
    }

    /// Target ids of the candidate answers (before `--limit`) that are not in the
    /// corpus.
    pub fn missing_targets(&self) -> &MissingTargets {
        &self.missing
    }

    pub fn model_file(&self) -> &str {
        &self.generator.info.file
    }

    pub fn rubric(&self) -> &Rubric {
        &self.rubric
    }

    /// Judge every answer greedily (reproducible), committing each judgement.
    pub async fn run(self, ctx: &Context, progress: &dyn Fn(usize, usize)) -> Result<usize> {
        for (i, a) in self.todo.iter().enumerate() {
            let target = a
                .target_ids
                .iter()
                .filter_map(|t| self.texts.get(t))
                .map(String::as_str)
                .collect::<Vec<_>>()
                .join("\n\n");
            let (rec, _) = judge(&self.generator, &self.rubric, a, &target, 0.0, 7)?;
            judgements(&ctx.workspace)
                .append(std::slice::from_ref(&rec))
                .await?;
            progress(i + 1, self.todo.len());
        }
        Ok(self.todo.len())
    }
}
