//! The stored records of answering: one generated answer with its retrieval, prompt,
//! figures and the model that produced it, and one judgement of an answer by the
//! rubric's criteria. Fields added after the first release are optional and last,
//! so datasets written before them still load and append.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// One stored answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    pub answer_id: String,
    pub run: String,
    pub question_id: String,
    pub question: String,
    pub reference_answer: Option<String>,
    pub target_ids: Vec<String>,
    pub method: String,
    pub alpha: f64,
    pub k: u32,
    pub no_retrieval: bool,
    pub embed_model: Option<String>,
    pub chunk_ids: Vec<String>,
    pub chunk_ranks: Vec<u32>,
    pub dropped_chunk_ids: Vec<String>,
    /// Fused rank of the first target chunk in the retrieved top-k, before the token
    /// budget dropped any (None: not retrieved). Where it ended up in the prompt is
    /// `target_prompt_rank`.
    pub target_rank: Option<u32>,
    pub prompt: String,
    pub model_file: String,
    pub model_sha256: String,
    pub sampling: String,
    pub seed: u32,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub input_words: u32,
    pub retrieval_ms: f64,
    pub ttft_ms: f64,
    pub prompt_tokens_per_s: f64,
    pub gen_tokens_per_s: f64,
    pub total_ms: f64,
    pub stopped: bool,
    pub answer: String,
    pub created_at: String,
    // Fields added after the first release: optional and last (see Table::append).
    /// Best dense cosine similarity of the retrieval (None: no dense list).
    #[serde(default)]
    pub best_cosine: Option<f64>,
    /// The system abstained instead of generating (None in answers stored before
    /// abstention existed).
    #[serde(default)]
    pub abstained: Option<bool>,
    /// Fused rank of the first target chunk among the chunks kept in the prompt under
    /// the token budget (None: not in the prompt: dropped for the budget when
    /// `target_rank` is set, not retrieved otherwise). None in answers stored before
    /// this field existed; `report::prompt_place` derives it for those from
    /// `chunk_ids` and `chunk_ranks`, which give the same value.
    #[serde(default)]
    pub target_prompt_rank: Option<u32>,
    /// Rank of the first target in the whole fused list (each ranked list retrieved
    /// `DEFAULT_DEPTH` deep, or k when larger; None: not in it), as MCQA stores it.
    /// None in answers stored before this field existed and in runs without retrieval.
    #[serde(default)]
    pub target_list_rank: Option<u32>,
    /// Base URL of the OpenAI-compatible endpoint that generated the answer (None:
    /// the local llama.cpp model of `model_file`).
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The model the endpoint said it served (the response's `model` field).
    #[serde(default)]
    pub served_model: Option<String>,
    /// The corpus variant retrieval ranked (`F`, `S`, `R`; None: no retrieval, or an
    /// answer stored before variants existed, which ranked the full chunks).
    #[serde(default)]
    pub corpus_variant: Option<String>,
    /// The repeat of `generate --repeats N` this answer belongs to (0-based; its seed
    /// is the run's seed + repeat). None: a run without repeats, which counts as
    /// repeat 0.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// The prompt template's name (`shipped`, or the stem of the user's file) and the
    /// SHA-256 of its text. None in answers stored before templates were data, which
    /// used the shipped text.
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub template_sha256: Option<String>,
    /// Which chunks the prompt held (`retrieved`, `oracle`, `distractors@P`) and in
    /// what order (`ranked`, `reversed`). None: no retrieval, or an answer stored before
    /// context policies existed (retrieved, ranked).
    #[serde(default)]
    pub context_policy: Option<String>,
    #[serde(default)]
    pub chunk_order: Option<String>,
    /// The rerank stage between retrieval and the prompt (`top 10 reranked, 5 kept by
    /// MODEL (TEMPLATE)`); None: none.
    #[serde(default)]
    pub rerank: Option<String>,
    /// Its wall time for this question, ms (part of `total_ms`; 0 when its scores
    /// were cached).
    #[serde(default)]
    pub rerank_ms: Option<f64>,
    /// The public key of whoever stored the answer (the key of the config folder of
    /// the `generate`, TUI or `answers import` that wrote it) and its signature over
    /// the answer's fields (`core::answer_signing`). None in answers stored before
    /// answers were signed.
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    /// What the rerank stage cost this question, ms: `rerank_ms` plus, for the pairs
    /// read from the score cache, what they cost when they were scored, so a cached
    /// run does not look free. None: no stage, or an answer stored before costs were
    /// kept.
    #[serde(default)]
    pub rerank_cost_ms: Option<f64>,
    /// Pairs of this question the stage read from the score cache (None: no stage, or
    /// an answer stored before this was kept).
    #[serde(default)]
    pub rerank_cached: Option<u32>,
}

impl AnswerRecord {
    /// How reports name this answer's prompt: `name@hash12`, `shipped` for answers
    /// stored before templates were recorded.
    pub fn template_label(&self) -> String {
        match (&self.template, &self.template_sha256) {
            (Some(n), Some(h)) => format!("{n}@{}", &h[..12.min(h.len())]),
            (Some(n), None) => n.clone(),
            _ => crate::core::template::SHIPPED.to_string(),
        }
    }
}

/// A stored judgement.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct JudgementRecord {
    pub answer_id: String,
    pub run: String,
    pub judge_model: String,
    pub rubric: String,
    pub rubric_version: String,
    pub criteria: Vec<String>,
    pub labels: Vec<String>,
    pub rationale: String,
    pub prompt: String,
    pub raw_output: String,
    pub created_at: String,
    // Added after the first release: optional and last (see Table::append).
    /// Base URL of the endpoint that judged (None: the local model `judge_model`).
    #[serde(default)]
    pub endpoint: Option<String>,
    // Added with `judge --repeats`: nullable and last.
    /// The repeat of `judge --repeats N` (0-based). None: judged without repeats,
    /// which counts as repeat 0.
    #[serde(default)]
    pub repeat: Option<u32>,
    /// The judge's sampling seed and temperature (None in judgements stored before
    /// they were recorded: those were greedy, seed 7).
    #[serde(default)]
    pub seed: Option<u32>,
    #[serde(default)]
    pub temperature: Option<f32>,
}

impl JudgementRecord {
    /// A judgement of `answer_id` by `judge.gguf` with these (criterion, label) pairs,
    /// for tests that count labels by hand.
    #[cfg(test)]
    pub fn of(answer_id: &str, labels: &[(&str, &str)]) -> Self {
        Self {
            answer_id: answer_id.into(),
            judge_model: "judge.gguf".into(),
            rubric_version: "1".into(),
            criteria: labels.iter().map(|(c, _)| (*c).to_string()).collect(),
            labels: labels.iter().map(|(_, l)| (*l).to_string()).collect(),
            ..Self::default()
        }
    }

    /// The labels as one line, `criterion=label, ...` in the rubric's order.
    pub fn labels_line(&self) -> String {
        self.criteria
            .iter()
            .zip(&self.labels)
            .map(|(c, l)| format!("{c}={l}"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

impl AnswerRecord {
    /// The generation repeat (a run without repeats is repeat 0).
    pub fn repeat_index(&self) -> u32 {
        self.repeat.unwrap_or(0)
    }
}

impl JudgementRecord {
    /// The judge repeat (a judgement without repeats is repeat 0).
    pub fn repeat_index(&self) -> u32 {
        self.repeat.unwrap_or(0)
    }
}

/// Judgements grouped by the answer they judge, each answer's in the order given
/// (stored order, so the last is the newest).
pub fn by_answer(judgements: &[JudgementRecord]) -> HashMap<&str, Vec<&JudgementRecord>> {
    let mut by: HashMap<&str, Vec<&JudgementRecord>> = HashMap::new();
    for j in judgements {
        by.entry(j.answer_id.as_str()).or_default().push(j);
    }
    by
}
