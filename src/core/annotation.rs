//! The records of an annotation study: the items reviewers label, the labels they
//! give (an append-only log of versions), and the disagreements between two raters.

use serde::{Deserialize, Serialize};

/// The reviewer name of the LLM judge's labels (reserved: no human may use it).
pub const JUDGE: &str = "judge";

/// One thing to label: question, reference answer, target chunk, model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Item {
    pub item_id: String,
    pub set: String,
    pub question: String,
    #[serde(default)]
    pub reference_answer: String,
    #[serde(default)]
    pub target_chunk: String,
    pub answer: String,
    #[serde(default)]
    pub answer_id: Option<String>,
}

/// One label version.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Label {
    pub label_id: String,
    pub item_id: String,
    pub reviewer: String,
    pub criterion: String,
    /// `None`: a retraction (undo).
    pub label: Option<String>,
    pub note: Option<String>,
    pub timestamp: String,
    /// Nanoseconds since the epoch: orders versions within a second.
    pub seq: u64,
    pub rubric_version: String,
}

/// One item and criterion on which two raters gave different labels.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Disagreement {
    pub item_id: String,
    pub criterion: String,
    /// The first rater's label.
    pub first: String,
    /// The second rater's label.
    pub second: String,
}

/// Which two raters the disagreement list compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RaterPair {
    /// The two human reviewers.
    #[default]
    Reviewers,
    /// The judge against the first reviewer.
    JudgeFirst,
    /// The judge against the second reviewer.
    JudgeSecond,
}

impl RaterPair {
    pub fn next(self) -> Self {
        match self {
            Self::Reviewers => Self::JudgeFirst,
            Self::JudgeFirst => Self::JudgeSecond,
            Self::JudgeSecond => Self::Reviewers,
        }
    }

    /// Position of this pair in an agreement row's `pairs` (the table's column order).
    pub fn index(self) -> usize {
        match self {
            Self::Reviewers => 0,
            Self::JudgeFirst => 1,
            Self::JudgeSecond => 2,
        }
    }

    /// The two raters of this pair, given the two reviewers.
    pub fn raters(self, (r1, r2): (&str, &str)) -> (String, String) {
        match self {
            Self::Reviewers => (r1.into(), r2.into()),
            Self::JudgeFirst => (JUDGE.into(), r1.into()),
            Self::JudgeSecond => (JUDGE.into(), r2.into()),
        }
    }
}
