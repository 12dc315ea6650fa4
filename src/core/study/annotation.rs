//! The records of an annotation study: the items reviewers label, the labels they
//! give (an append-only log of versions), and the disagreements between two raters.

use serde::{Deserialize, Serialize};

/// The reviewer name of the LLM judge's labels (reserved: no human may use it).
pub const JUDGE: &str = "judge";

/// The reviewer name of adjudicated final labels (reserved): a study lead's decision
/// on a disagreement, with the rationale as its note and the lead in `adjudicator`.
pub const FINAL: &str = "final";

/// Check a human reviewer's name: 1 to 64 letters, digits, `.`, `_`, `-` or `@`
/// (names are shown in panes, stored with every label and typed on command lines, so
/// no spaces, controls or look-alike formatting), and never [`JUDGE`] in any case,
/// which names the LLM judge's labels.
pub fn check_reviewer(name: &str) -> Result<(), String> {
    if name.is_empty() || name.chars().count() > 64 {
        return Err(format!(
            "reviewer name `{}` must be 1 to 64 characters",
            crate::core::text::sanitize_for_terminal(name)
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '@')))
    {
        return Err(format!(
            "reviewer name `{}` may hold only letters, digits, `.`, `_`, `-` and `@` (not {bad:?})",
            crate::core::text::sanitize_for_terminal(name)
        ));
    }
    if folded(name) == JUDGE {
        return Err(format!(
            "`{name}` is reserved for the LLM judge's labels; choose another reviewer name"
        ));
    }
    if folded(name) == FINAL {
        return Err(format!(
            "`{name}` is reserved for adjudicated final labels; choose another reviewer name"
        ));
    }
    Ok(())
}

/// A name as the reserved-name check compares it: fullwidth forms (`ｊｕｄｇｅ`) read
/// as their ASCII letters, then Unicode lower case (the Kelvin sign `K` is `k`), so a
/// name that a pane shows as `judge` or `JUDGE` is refused, not only its ASCII spelling.
fn folded(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '\u{FF01}'..='\u{FF5E}' => char::from_u32(c as u32 - 0xFEE0).unwrap_or(c),
            _ => c,
        })
        .collect::<String>()
        .to_lowercase()
}

/// One thing to label: question, reference answer, target chunk, model answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
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
    /// The lead's public key (ed25519, hex) and seal over every other field
    /// ([`crate::core::signing::item_bytes`]): in a signed study only the lead's
    /// sealed rows are items, so a member who can append cannot put an item in the
    /// study, or take the id of one the lead will make, with what they wrote. Added
    /// with sealed items, so nullable and last: unsigned studies' items have neither.
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
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
    /// On a [`FINAL`] label: the study lead who decided it (added after the first
    /// studies, so nullable and last).
    #[serde(default)]
    pub adjudicator: Option<String>,
    /// The writer's public key (ed25519, hex) and its signature over every other
    /// field ([`crate::core::signing::label_bytes`]). Added with reviewer keys, so
    /// nullable and last: labels of older studies have neither.
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    /// How many rows the label log held when the writer read it just before
    /// committing this label. Signed in a bound study: an untouched log stores the
    /// row at that position or later, so a row found earlier was moved forward, or
    /// rows before it were removed. Added with study ids, so nullable and last.
    #[serde(default)]
    pub log_rows: Option<u64>,
    /// The writer's active time on the item so far, in ms, when the label was given
    /// ([`crate::core::timing`]: idle gaps over [`crate::core::timing::IDLE_GAP_MS`]
    /// left out). Signed when present. `None` for imports and labels of older
    /// studies. Added with time per item, so nullable and last.
    #[serde(default)]
    pub active_ms: Option<u64>,
}

/// An item assigned to its reviewers: a pair, or k of the study's n reviewers
/// ([`crate::core::assignment`]). The newest assignment of an item (in the log's
/// own order) wins from the moment it was made: `label_rows` is how many rows the
/// label log held then, so an assignment never reaches back over labels given
/// before it (and never moves a reveal that had already happened).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Assignment {
    pub item_id: String,
    pub first: String,
    pub second: String,
    pub assigned_at: String,
    pub seq: u64,
    /// Rows of the label log when the assignment was made (`None` on assignments of
    /// older studies: in force from the start).
    #[serde(default)]
    pub label_rows: Option<u64>,
    /// The lead's public key and signature ([`crate::core::signing::assignment_bytes`]).
    #[serde(default)]
    pub signer: Option<String>,
    #[serde(default)]
    pub signature: Option<String>,
    /// The reviewers after `first` and `second` when an item has more than two (k of
    /// n), comma-separated (a reviewer name holds no comma: [`check_reviewer`]).
    /// Added with k-of-n assignments, so nullable and last; `None` on a pair.
    #[serde(default)]
    pub more_reviewers: Option<String>,
}

impl Assignment {
    /// Every reviewer of the item, `first` and `second` first.
    pub fn reviewers(&self) -> Vec<String> {
        let mut all = vec![self.first.clone(), self.second.clone()];
        all.extend(
            self.more_reviewers
                .iter()
                .flat_map(|m| m.split(','))
                .filter(|r| !r.is_empty())
                .map(str::to_string),
        );
        all
    }

    /// `more_reviewers` for a list of reviewers (those after the first two).
    pub fn more_of(reviewers: &[String]) -> Option<String> {
        (reviewers.len() > 2).then(|| reviewers[2..].join(","))
    }
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
    /// The raters' notes on this item and criterion (their newest).
    pub first_note: Option<String>,
    pub second_note: Option<String>,
    /// The judge's label, when it judged the item's answer.
    pub judge: Option<String>,
    /// The adjudicated final label and its rationale, once decided.
    pub final_label: Option<(String, String)>,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reviewer_names() {
        for ok in ["alice", "Bob_2", "r.smith@cdc", "élodie", "李"] {
            assert_eq!(check_reviewer(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "judge",
            "Judge",
            "final",
            "FINAL",
            "JUDGE",
            "\u{FF4A}\u{FF55}\u{FF44}\u{FF47}\u{FF45}",
            "\u{FF26}inal",
            "a b",
            "x\u{1b}[2J",
            "evil\u{202e}",
            "a/b",
        ] {
            assert!(check_reviewer(bad).is_err(), "{bad:?} accepted");
        }
        assert!(check_reviewer(&"a".repeat(65)).is_err());
        assert!(check_reviewer(&"a".repeat(64)).is_ok());
    }
}
