//! Another system's answers imported as a run (`raglab answers import`): checked whole
//! before anything is written, then appended in one commit, so a file with one bad
//! line imports nothing and a second import of the same file adds nothing.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use anyhow::{Context as _, Result, bail};

use super::generation::answers;
use crate::core::answer::AnswerRecord;
use crate::core::external::{ExternalAnswer, answer_id};
use crate::core::question::Question;
use crate::service::base::{Context, now_rfc3339};

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ImportSummary {
    pub run: String,
    pub imported: usize,
    /// Lines whose answer was already stored with the same text.
    pub already: usize,
    /// Imported answers with no context (stored as answered without retrieval).
    pub without_contexts: usize,
}

/// At most this many problems are listed in one error.
const SHOWN: usize = 5;

/// Import `file` as run `run` of `system`, its questions looked up in `questions`.
pub async fn import_answers(
    ctx: &Context,
    file: &Path,
    questions: &[Question],
    run: &str,
    system: &str,
) -> Result<ImportSummary> {
    if run.trim().is_empty() || system.trim().is_empty() {
        bail!("the run and the system need a name");
    }
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("cannot read the answers file {}", file.display()))?;
    let by_id: HashMap<&str, &Question> = questions.iter().map(|q| (q.id.as_str(), q)).collect();
    let known: HashSet<String> = crate::service::corpus::chunks_or_empty(ctx)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    let (lines, mut problems) = read_lines(&text, &by_id, &known);
    if lines.is_empty() && problems.is_empty() {
        bail!("{} holds no answers", file.display());
    }
    let stored: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    if let Some(a) = stored
        .iter()
        .find(|a| a.run == run && !a.model_file.starts_with("external:"))
    {
        bail!(
            "run `{run}` holds raglab's own answers (model {}); import under another `--run`",
            a.model_file
        );
    }
    let existing: HashMap<&str, &AnswerRecord> =
        stored.iter().map(|a| (a.answer_id.as_str(), a)).collect();
    let mut summary = ImportSummary {
        run: run.to_string(),
        ..ImportSummary::default()
    };
    let created_at = now_rfc3339();
    let mut new = Vec::new();
    for (n, e) in &lines {
        let Some(q) = by_id.get(e.question_id.as_str()) else {
            continue;
        };
        match existing.get(answer_id(run, &q.id).as_str()) {
            Some(old) if old.answer == e.answer && old.chunk_ids == e.contexts => {
                summary.already += 1;
            }
            Some(_) => problems.push(format!(
                "line {n}: run `{run}` already holds another answer to `{}`; import a changed file under another `--run`",
                crate::core::text::sanitize_for_terminal(&q.id)
            )),
            None => {
                summary.without_contexts += usize::from(e.contexts.is_empty());
                new.push(e.record(q, run, system, &created_at));
            }
        }
    }
    if !problems.is_empty() {
        bail!(problems_said(&problems, file));
    }
    summary.imported = new.len();
    if !new.is_empty() {
        let key = crate::service::base::my_key(ctx)?;
        super::generation::store_answers(&ctx.workspace, &key, &mut new).await?;
    }
    Ok(summary)
}

/// Every line of the file parsed and checked against the questions and the corpus:
/// the answers read (with their line numbers) and each line's problem.
fn read_lines(
    text: &str,
    by_id: &HashMap<&str, &Question>,
    known: &HashSet<String>,
) -> (Vec<(usize, ExternalAnswer)>, Vec<String>) {
    let mut problems = Vec::new();
    let mut lines: Vec<(usize, ExternalAnswer)> = Vec::new();
    let mut seen = HashSet::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        let e: ExternalAnswer = match serde_json::from_str(line) {
            Ok(e) => e,
            Err(err) => {
                problems.push(format!(
                    "line {n}: {err} (expected {{question_id, answer, contexts?, latency_ms?, prompt_tokens?, output_tokens?}})"
                ));
                continue;
            }
        };
        let clean = crate::core::text::sanitize_for_terminal;
        if let Some(p) = e.problem() {
            problems.push(format!("line {n}: {p}"));
        } else if !by_id.contains_key(e.question_id.as_str()) {
            problems.push(format!(
                "line {n}: question `{}` is not in the questions file",
                clean(&e.question_id)
            ));
        } else if !seen.insert(e.question_id.clone()) {
            problems.push(format!(
                "line {n}: question `{}` is answered twice",
                clean(&e.question_id)
            ));
        } else if let Some(c) = e.contexts.iter().find(|c| !known.contains(*c)) {
            problems.push(format!(
                "line {n}: context `{}` is not a chunk of this workspace (contexts are the ids of ingested chunks)",
                clean(c)
            ));
        }
        lines.push((n, e));
    }
    (lines, problems)
}

/// The error listing the file's problems, the first [`SHOWN`] of them.
fn problems_said(problems: &[String], file: &Path) -> String {
    let more = problems.len().saturating_sub(SHOWN);
    let mut msg = format!(
        "{} problem(s) in {}, nothing imported:\n  {}",
        problems.len(),
        file.display(),
        problems[..problems.len().min(SHOWN)].join("\n  ")
    );
    if more > 0 {
        msg.push_str(&format!("\n  ... and {more} more"));
    }
    msg
}
