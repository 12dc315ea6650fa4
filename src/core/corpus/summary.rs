//! The stored record of one chunk's summary: the text summarised (by its hash, so a
//! summary of text that has since changed is known stale), the prompt, the model and
//! its figures.

use serde::{Deserialize, Serialize};

/// One stored summary.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SummaryRecord {
    pub chunk_id: String,
    /// Hash of the chunk's indexed text when it was summarised: a summary of text that
    /// has since changed is stale and not used.
    pub chunk_hash: String,
    pub summary: String,
    /// The prompt template, as it was.
    pub template: String,
    /// The exact prompt: the chat template applied (local model), or the messages as
    /// sent (endpoint).
    pub prompt: String,
    /// The GGUF file name, or the model an endpoint served.
    pub model_file: String,
    /// SHA-256 of the GGUF file (empty for an endpoint).
    pub model_sha256: String,
    pub endpoint: Option<String>,
    pub served_model: Option<String>,
    /// The sampling parameters (JSON).
    pub sampling: String,
    pub prompt_tokens: u32,
    pub output_tokens: u32,
    pub total_ms: f64,
    pub created_at: String,
}
