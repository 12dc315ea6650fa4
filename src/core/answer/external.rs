//! Answers from another system (an agentic pipeline, a hosted RAG service), imported
//! so that they are judged, compared, annotated, cited and scored for frugality like
//! raglab's own.
//!
//! One JSON object a line, strict (an unknown field is refused with its line):
//! `{"question_id": "q1", "answer": "...", "contexts": ["chunk-id", ...],
//! "latency_ms": 850.0, "prompt_tokens": 1200, "output_tokens": 90}`; only
//! `question_id` and `answer` are required. `contexts` are the ids of the corpus
//! chunks the system put in its prompt, in order. The question's text, reference answer
//! and targets come from the questions file, so the judge and the reports see the same
//! question as for a raglab run.

use serde::Deserialize;

use crate::core::answer::AnswerRecord;
use crate::core::question::Question;

/// One line of an external answers file.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExternalAnswer {
    pub question_id: String,
    pub answer: String,
    /// Corpus chunk ids the system's prompt held, in order.
    #[serde(default)]
    pub contexts: Vec<String>,
    /// End-to-end time the system took for the answer, ms (its cost in frugality).
    #[serde(default)]
    pub latency_ms: Option<f64>,
    #[serde(default)]
    pub prompt_tokens: Option<u32>,
    #[serde(default)]
    pub output_tokens: Option<u32>,
}

/// The model name external answers are stored under: `external:SYSTEM`.
pub fn model_name(system: &str) -> String {
    format!("external:{system}")
}

/// The answer id of an imported answer: run and question, so a second import of the
/// same file finds what it already holds.
pub fn answer_id(run: &str, question_id: &str) -> String {
    format!("{run}/{question_id}/external")
}

impl ExternalAnswer {
    /// The stored record of this answer to `q` in `run`, made by `system` at
    /// `created_at`. Ranks are the contexts' places in the system's prompt (its own
    /// ranking); the target rank is where the first target sits among them.
    pub fn record(&self, q: &Question, run: &str, system: &str, created_at: &str) -> AnswerRecord {
        let target_rank = self
            .contexts
            .iter()
            .position(|c| q.relevant.contains(c))
            .map(|i| i as u32 + 1);
        AnswerRecord {
            answer_id: answer_id(run, &q.id),
            run: run.to_string(),
            question_id: q.id.clone(),
            question: q.text.clone(),
            reference_answer: q.answer.clone(),
            target_ids: q.relevant.clone(),
            method: "external".into(),
            alpha: 0.0,
            k: self.contexts.len() as u32,
            no_retrieval: self.contexts.is_empty(),
            embed_model: None,
            chunk_ids: self.contexts.clone(),
            chunk_ranks: (1..=self.contexts.len() as u32).collect(),
            dropped_chunk_ids: Vec::new(),
            target_rank,
            prompt: String::new(),
            model_file: model_name(system),
            model_sha256: String::new(),
            sampling: String::new(),
            seed: 0,
            prompt_tokens: self.prompt_tokens.unwrap_or(0),
            output_tokens: self.output_tokens.unwrap_or(0),
            input_words: 0,
            retrieval_ms: 0.0,
            ttft_ms: 0.0,
            prompt_tokens_per_s: 0.0,
            gen_tokens_per_s: 0.0,
            total_ms: self.latency_ms.unwrap_or(0.0),
            stopped: false,
            answer: self.answer.clone(),
            created_at: created_at.to_string(),
            best_cosine: None,
            abstained: Some(false),
            target_prompt_rank: target_rank,
            target_list_rank: target_rank,
            endpoint: None,
            served_model: None,
            corpus_variant: None,
            repeat: None,
            template: Some(format!("external:{system}")),
            template_sha256: None,
            context_policy: (!self.contexts.is_empty()).then(|| "external".to_string()),
            chunk_order: None,
            rerank: None,
            rerank_ms: None,
            // Signed when stored.
            signer: None,
            signature: None,
            rerank_cost_ms: None,
            rerank_cached: None,
        }
    }

    /// What is wrong with this line besides its fields: an empty id or answer, a
    /// latency that is no time.
    pub fn problem(&self) -> Option<String> {
        if self.question_id.trim().is_empty() {
            return Some("`question_id` is empty".into());
        }
        if self.answer.trim().is_empty() {
            return Some("`answer` is empty".into());
        }
        if let Some(ms) = self.latency_ms
            && !(ms.is_finite() && ms >= 0.0)
        {
            return Some(format!("`latency_ms` must be a time in ms, not {ms}"));
        }
        self.contexts
            .iter()
            .any(|c| c.trim().is_empty())
            .then(|| "`contexts` holds an empty chunk id".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_becomes_a_record_with_its_cost_and_target_place() {
        let line = r#"{"question_id": "q1", "answer": "Two doses.", "contexts": ["a", "t", "b"], "latency_ms": 850.5, "output_tokens": 3}"#;
        let e: ExternalAnswer = serde_json::from_str(line).expect("parses");
        assert_eq!(e.problem(), None);
        let q = Question {
            id: "q1".into(),
            text: "How many doses?".into(),
            relevant: vec!["t".into()],
            answer: Some("Two.".into()),
            topic: None,
            cluster: None,
        };
        let r = e.record(&q, "agent", "my-agent", "2026-12-05T00:00:00Z");
        assert_eq!(r.answer_id, "agent/q1/external");
        assert_eq!((r.target_rank, r.target_prompt_rank), (Some(2), Some(2)));
        assert_eq!(r.chunk_ranks, vec![1, 2, 3]);
        assert_eq!(
            (r.total_ms, r.output_tokens, r.prompt_tokens),
            (850.5, 3, 0)
        );
        assert_eq!(r.model_file, "external:my-agent");
        assert_eq!(r.reference_answer.as_deref(), Some("Two."));
        assert!(!r.no_retrieval);
    }

    #[test]
    fn strict_fields_and_clear_problems() {
        let e = serde_json::from_str::<ExternalAnswer>(
            r#"{"question_id": "q", "answer": "a", "context": []}"#,
        )
        .expect_err("unknown field");
        assert!(e.to_string().contains("unknown field `context`"), "{e}");
        assert!(serde_json::from_str::<ExternalAnswer>(r#"{"answer": "a"}"#).is_err());
        let e: ExternalAnswer =
            serde_json::from_str(r#"{"question_id": "q", "answer": " ", "latency_ms": -1}"#)
                .expect("parses");
        assert_eq!(e.problem().as_deref(), Some("`answer` is empty"));
        let e: ExternalAnswer =
            serde_json::from_str(r#"{"question_id": "q", "answer": "x", "latency_ms": -1}"#)
                .expect("parses");
        assert!(e.problem().expect("bad").contains("latency_ms"));
    }
}
