//! The question: one record for every question file raglab reads (retrieval
//! evaluation, generation, the TUI's question list, the failures of an evaluation).

use serde::{Deserialize, Serialize};

/// A question with what is known about it: the chunks that answer it (`relevant`), a
/// reference answer and a topic. Files may name the text `question` and the reference
/// answer `reference_answer`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    /// `qid` in failures files written before the record was shared.
    #[serde(alias = "qid")]
    pub id: String,
    #[serde(alias = "question")]
    pub text: String,
    /// Ids of the chunks that answer the question (the targets).
    #[serde(default)]
    pub relevant: Vec<String>,
    /// Reference answer.
    #[serde(
        default,
        alias = "reference_answer",
        skip_serializing_if = "Option::is_none"
    )]
    pub answer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
}

/// A question whose target was not in the top `k` of the evaluated ranking: the
/// question itself and the rank at which its first target was found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedQuestion {
    #[serde(flatten)]
    pub question: Question,
    /// Rank of the first relevant chunk in the evaluated list (None: not retrieved).
    pub rank: Option<usize>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_every_spelling_and_round_trips() {
        let q: Question = serde_json::from_str(
            r#"{"id": "q1", "question": "Who?", "reference_answer": "Them", "relevant": ["a#b"]}"#,
        )
        .expect("parses");
        assert_eq!(q.text, "Who?");
        assert_eq!(q.answer.as_deref(), Some("Them"));
        let f = FailedQuestion {
            question: q.clone(),
            rank: Some(12),
        };
        let back: FailedQuestion =
            serde_json::from_str(&serde_json::to_string(&f).expect("json")).expect("parses");
        assert_eq!(back, f);
        assert!(serde_json::from_str::<Question>(r#"{"text": "no id"}"#).is_err());
    }
}
