//! Citation recall and precision of stored answers (`raglab answers cite`): each
//! answer's `[chunk ID]` citations parsed, every (cited chunks, sentence) pair judged
//! for entailment by a grammar-constrained model that can only answer `yes` or `no`,
//! and the scores computed as ALCE does ([`crate::core::citation`]). One record per
//! answer and judge in `citations.lance`, committed as each answer is scored, so an
//! interrupted run resumes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Result, bail};

use super::generation::answers;
use crate::core::answer::AnswerRecord;
use crate::core::citation::{CitationRecord, CitationScores, Entailment, score};
use crate::core::prompt::{ChatMessage, Slot, fill, render_chunk};
use crate::core::template::Template;
use crate::infer::generate::{Generator, Sampling};
use crate::service::base::{Context, ModelChoice, now_rfc3339};
use crate::store::records::Table;

pub const CITATIONS: &str = "citations.lance";

/// The grammar of an entailment verdict.
const YES_NO: &str = "root ::= \"yes\" | \"no\"\n";

pub fn citations(ws: &crate::store::workspace::Workspace) -> Table<'_> {
    Table::of::<CitationRecord>(ws, CITATIONS)
}

/// What `answers cite` does.
#[derive(Debug, Clone)]
pub struct CiteRequest {
    pub run: String,
    pub judge: ModelChoice,
    pub template: Template,
    pub limit: Option<usize>,
}

/// What a cite batch did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct CiteSummary {
    pub scored: usize,
    pub already: usize,
    /// Entailment questions put to the judge (cached ones not counted).
    pub judge_calls: usize,
    pub judge_model: String,
}

/// Entailment judged by a local llama.cpp model, greedy, its reply held to `yes` or
/// `no` by a grammar; verdicts cached per (chunks, sentence) within a run.
pub struct ModelEntailment<'a> {
    generator: &'a Generator,
    template: &'a Template,
    chunks: &'a HashMap<String, crate::core::prompt::ContextChunk>,
    cache: HashMap<(Vec<String>, String), bool>,
    pub calls: usize,
}

impl<'a> ModelEntailment<'a> {
    pub fn new(
        generator: &'a Generator,
        template: &'a Template,
        chunks: &'a HashMap<String, crate::core::prompt::ContextChunk>,
    ) -> Self {
        Self {
            generator,
            template,
            chunks,
            cache: HashMap::new(),
            calls: 0,
        }
    }

    /// The prompt that asks whether `chunks` entail `sentence`: the chunks as a prompt
    /// shows them, joined by the prompt's separator; both slots untrusted.
    pub fn prompt(&self, chunks: &[&str], sentence: &str) -> crate::core::prompt::PromptText {
        let premise = chunks
            .iter()
            .filter_map(|id| self.chunks.get(*id))
            .map(render_chunk)
            .collect::<Vec<_>>()
            .join(crate::core::prompt::CHUNK_SEPARATOR);
        fill(
            &self.template.text,
            &[
                ("premise", Slot::Untrusted(&premise)),
                ("claim", Slot::Untrusted(sentence)),
            ],
        )
    }
}

impl Entailment for ModelEntailment<'_> {
    type Error = anyhow::Error;

    fn entails(&mut self, chunks: &[&str], sentence: &str) -> Result<bool> {
        let key = (
            chunks.iter().map(|c| (*c).to_string()).collect::<Vec<_>>(),
            sentence.to_string(),
        );
        if let Some(v) = self.cache.get(&key) {
            return Ok(*v);
        }
        let prompt = self.prompt(chunks, sentence);
        let sampling = Sampling {
            temperature: 0.0,
            seed: 7,
            max_tokens: 4,
            ..Sampling::default()
        };
        let (raw, _) = self.generator.generate(
            vec![ChatMessage::user(prompt)],
            sampling,
            Some(YES_NO.to_string()),
            Arc::new(AtomicBool::new(false)),
            |_| {},
        )?;
        self.calls += 1;
        let verdict = match raw.trim() {
            "yes" => true,
            "no" => false,
            other => bail!("the entailment judge replied {other:?}, not yes or no"),
        };
        self.cache.insert(key, verdict);
        Ok(verdict)
    }
}

/// Every chunk of the corpus as the entailment judge's prompt shows it, by id.
async fn context_chunks(
    ctx: &Context,
) -> Result<HashMap<String, crate::core::prompt::ContextChunk>> {
    let chunks = crate::service::corpus::chunks_or_empty(ctx).await?;
    Ok(chunks
        .into_iter()
        .map(|c| {
            let cc = crate::core::prompt::ContextChunk {
                id: c.id.clone(),
                rank: 0,
                path: c.path_label(),
                text: c.text,
            };
            (c.id, cc)
        })
        .collect())
}

/// The stored record of answer `a`'s citation scores `s` by `judge_model` with the
/// template of SHA-256 `template_sha256`.
fn record_of(
    a: &AnswerRecord,
    s: &CitationScores,
    judge_model: &str,
    template_sha256: &str,
) -> CitationRecord {
    CitationRecord {
        answer_id: a.answer_id.clone(),
        run: a.run.clone(),
        judge_model: judge_model.to_string(),
        template_sha256: template_sha256.to_string(),
        sentences: s.sentences.len() as u32,
        supported: s.sentences.iter().filter(|v| v.supported).count() as u32,
        citations: s.citations as u32,
        needed: s.needed() as u32,
        recall: s.recall,
        precision: s.precision,
        outside_prompt: s.outside_prompt.clone(),
        verdicts: s.verdicts_json(),
        created_at: now_rfc3339(),
    }
}

/// Score the citations of `req.run`'s answers not yet scored by this judge and
/// template; `progress(done, todo)` after each.
pub async fn cite_run(
    ctx: &Context,
    req: CiteRequest,
    progress: &dyn Fn(usize, usize),
) -> Result<CiteSummary> {
    let run_answers: Vec<AnswerRecord> = answers(&ctx.workspace)
        .read_all::<AnswerRecord>()
        .await?
        .into_iter()
        .filter(|a| a.run == req.run)
        .collect();
    if run_answers.is_empty() {
        bail!(
            "run `{}` has no answers (`raglab generate --run NAME` or `raglab answers import`)",
            req.run
        );
    }
    let generator = Generator::spawn(&ctx.judge_config(&req.judge))?;
    let judge_model = generator.info.file.clone();
    let done: HashSet<String> = citations(&ctx.workspace)
        .read_all::<CitationRecord>()
        .await?
        .into_iter()
        .filter(|c| c.judge_model == judge_model && c.template_sha256 == req.template.sha256)
        .map(|c| c.answer_id)
        .collect();
    let (todo, already): (Vec<_>, Vec<_>) = run_answers
        .into_iter()
        .partition(|a| !done.contains(&a.answer_id));
    let todo: Vec<AnswerRecord> = todo
        .into_iter()
        .take(req.limit.unwrap_or(usize::MAX))
        .collect();
    let chunks = context_chunks(ctx).await?;
    let mut judge = ModelEntailment::new(&generator, &req.template, &chunks);
    let mut summary = CiteSummary {
        already: already.len(),
        judge_model: judge_model.clone(),
        ..CiteSummary::default()
    };
    for (i, a) in todo.iter().enumerate() {
        // A chunk cited from the prompt but gone from the corpus cannot be judged.
        let in_prompt: Vec<String> = a
            .chunk_ids
            .iter()
            .filter(|id| chunks.contains_key(*id))
            .cloned()
            .collect();
        let s = score(&a.answer, &in_prompt, &mut judge)?;
        let rec = record_of(a, &s, &judge_model, &req.template.sha256);
        citations(&ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        summary.scored += 1;
        progress(i + 1, todo.len());
    }
    summary.judge_calls = judge.calls;
    Ok(summary)
}

/// The stored citation records, latest per (answer, judge) kept.
pub async fn citation_records(ctx: &Context) -> Result<Vec<CitationRecord>> {
    let mut latest: HashMap<(String, String), CitationRecord> = HashMap::new();
    for c in citations(&ctx.workspace)
        .read_all::<CitationRecord>()
        .await?
    {
        latest.insert((c.answer_id.clone(), c.judge_model.clone()), c);
    }
    let mut out: Vec<CitationRecord> = latest.into_values().collect();
    out.sort_by(|a, b| {
        a.answer_id
            .cmp(&b.answer_id)
            .then(a.judge_model.cmp(&b.judge_model))
    });
    Ok(out)
}
