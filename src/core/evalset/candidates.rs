//! The stored records of building an evaluation set: a candidate question with the
//! chunks and model it came from, a critic's scores of it on each axis, and an
//! analyst's decision about it.

use serde::{Deserialize, Serialize};

use crate::core::evalset::Scores;

/// A candidate question, with the chunks it was written from and how.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CandidateRecord {
    pub candidate_id: String,
    /// `fact` (one chunk) or `reasoning` (two chunks of one document).
    pub kind: String,
    /// The target chunks: the one chunk, or both.
    pub chunk_ids: Vec<String>,
    pub doc_id: String,
    pub topic: Option<String>,
    pub question: String,
    /// The reference answer the generator wrote with the question.
    pub answer: String,
    /// GGUF file, or the model an endpoint served.
    pub model_file: String,
    /// SHA-256 of the GGUF file (empty for an endpoint).
    pub model_sha256: String,
    pub endpoint: Option<String>,
    /// The exact prompt: chat-templated text locally, the messages sent to an endpoint.
    pub prompt: String,
    pub raw_output: String,
    pub sampling: String,
    pub seed: u32,
    pub output_tokens: u32,
    pub total_ms: f64,
    pub created_at: String,
}

/// Scores of one candidate by one critic, 1-5 on each axis of [`AXES`](crate::core::evalset::AXES).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CritiqueRecord {
    pub candidate_id: String,
    pub critic_model: String,
    pub endpoint: Option<String>,
    pub groundedness: u32,
    pub answer_groundedness: u32,
    pub feasibility: u32,
    pub stand_alone: u32,
    pub usefulness: u32,
    pub tautology: u32,
    pub prompt: String,
    pub raw_output: String,
    pub created_at: String,
}

impl CritiqueRecord {
    pub fn scores(&self) -> Scores {
        [
            self.groundedness,
            self.answer_groundedness,
            self.feasibility,
            self.stand_alone,
            self.usefulness,
            self.tautology,
        ]
        .map(|s| u8::try_from(s).unwrap_or(0))
    }
}

/// An analyst's decision: `accept`, `reject` or `clear` (back to the scores).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DecisionRecord {
    pub candidate_id: String,
    pub decision: String,
    pub reviewer: Option<String>,
    pub created_at: String,
}
