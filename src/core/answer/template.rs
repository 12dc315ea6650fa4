//! Prompt templates as data: each prompt raglab sends has a kind, a shipped default and
//! may be replaced by a file of the user's, per run. A template names its slots as
//! `{name}`; before any model loads, [`Template::new`] checks them against the kind:
//! a slot the kind does not fill, or one it needs and the text lacks, is refused with
//! the list of the kind's slots. Braces that do not enclose a plain name (`{"a": 1}`,
//! `{ }`) are text, as [`crate::core::prompt::fill`] leaves them.
//!
//! Every answer records the template's name and the SHA-256 of its text, so two runs
//! that differ only in their prompt are told apart and named in reports.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::core::prompt::{FREE_FORM, MULTIPLE_CHOICE, MULTIPLE_CHOICE_NO_CONTEXT, NO_RETRIEVAL};

/// The judge's shipped prompt.
pub const JUDGE: &str = include_str!("../../../assets/prompts/judge.txt");
/// The evaluation set's generator (a fact question from one chunk, a reasoning
/// question from two) and its critic.
pub const FACT_TEMPLATE: &str = include_str!("../../../assets/prompts/evalset-fact.txt");
pub const REASONING_TEMPLATE: &str = include_str!("../../../assets/prompts/evalset-reasoning.txt");
pub const CRITIQUE_TEMPLATE: &str = include_str!("../../../assets/prompts/evalset-critique.txt");
/// The shipped summary prompt of the C_S and C_R corpus variants.
pub const SUMMARY: &str = include_str!("../../../assets/prompts/summarise.txt");
/// Whether chunks entail a sentence of an answer (citation recall and precision).
pub const ENTAILMENT: &str = include_str!("../../../assets/prompts/entailment.txt");
/// Whether a passage answers a question: the pointwise rerank prompt, scored by the
/// model's P(yes). The question comes before the passage, so the candidates of one
/// question share every token up to the passage and that prefix is decoded once.
pub const RERANK: &str = include_str!("../../../assets/prompts/rerank.txt");
/// Splits an answer or a reference answer into statements (grounded metrics).
pub const GROUNDED_STATEMENTS: &str =
    include_str!("../../../assets/prompts/grounded-statements.txt");
/// Judges numbered statements against numbered passages (grounded metrics).
pub const GROUNDED_VERIFY: &str = include_str!("../../../assets/prompts/grounded-verify.txt");
/// Whether each context was useful for the reference answer (context precision).
pub const GROUNDED_USEFUL: &str = include_str!("../../../assets/prompts/grounded-useful.txt");
/// A free-form prompt that asks for a `[chunk ID]` citation after every sentence.
pub const FREE_FORM_CITING: &str = include_str!("../../../assets/prompts/free-form-citing.txt");

/// What a template is for; each kind has its own slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TemplateKind {
    /// A free-form answer from retrieved context.
    FreeForm,
    /// A free-form answer without context (the "LLM only" baseline).
    NoRetrieval,
    /// A multiple-choice answer from retrieved context.
    MultipleChoice,
    /// A multiple-choice answer without context (k = 0).
    MultipleChoiceNoContext,
    /// The rubric judge.
    Judge,
    /// A chunk's summary (corpus variants C_S, C_R).
    Summary,
    /// An evaluation-set fact question from one chunk.
    EvalsetFact,
    /// An evaluation-set reasoning question from two chunks.
    EvalsetReasoning,
    /// The evaluation-set critique of a generated question.
    EvalsetCritique,
    /// Whether cited chunks entail a sentence of an answer (yes or no).
    Entailment,
    /// Whether a passage answers a question, scored by P(yes) (the rerank stage).
    Rerank,
    /// A text split into self-contained statements (grounded metrics).
    GroundedStatements,
    /// Numbered statements judged against numbered passages (grounded metrics).
    GroundedVerify,
    /// Whether each context was useful for the reference answer (context precision).
    GroundedUseful,
}

impl TemplateKind {
    pub const ALL: [Self; 14] = [
        Self::FreeForm,
        Self::NoRetrieval,
        Self::MultipleChoice,
        Self::MultipleChoiceNoContext,
        Self::Judge,
        Self::Summary,
        Self::EvalsetFact,
        Self::EvalsetReasoning,
        Self::EvalsetCritique,
        Self::Entailment,
        Self::Rerank,
        Self::GroundedStatements,
        Self::GroundedVerify,
        Self::GroundedUseful,
    ];

    /// The slots this kind fills, and which of them a template must hold (a prompt
    /// without the question, or a judge without the answer, cannot do its work).
    pub fn slots(self) -> (&'static [&'static str], &'static [&'static str]) {
        match self {
            Self::FreeForm => (&["context", "question"], &["context", "question"]),
            Self::NoRetrieval => (&["question"], &["question"]),
            Self::MultipleChoice => (
                &["context", "question", "options"],
                &["context", "question", "options"],
            ),
            Self::MultipleChoiceNoContext => (&["question", "options"], &["question", "options"]),
            Self::Judge => (
                &[
                    "criteria",
                    "examples",
                    "question",
                    "reference",
                    "chunk",
                    "answer",
                ],
                &["criteria", "question", "answer"],
            ),
            Self::Summary | Self::EvalsetFact => (&["chunk", "path"], &["chunk"]),
            Self::EvalsetReasoning => (
                &["chunk_a", "chunk_b", "path_a", "path_b"],
                &["chunk_a", "chunk_b"],
            ),
            Self::EvalsetCritique => (
                &["criteria", "question", "answer", "context"],
                &["criteria", "question"],
            ),
            Self::Entailment => (&["premise", "claim"], &["premise", "claim"]),
            Self::Rerank => (&["question", "document"], &["question", "document"]),
            Self::GroundedStatements => (&["question", "text"], &["text"]),
            Self::GroundedVerify => (&["passages", "statements"], &["passages", "statements"]),
            Self::GroundedUseful => (
                &["question", "reference", "passages"],
                &["reference", "passages"],
            ),
        }
    }

    /// The text raglab ships for this kind.
    pub fn shipped_text(self) -> &'static str {
        match self {
            Self::FreeForm => FREE_FORM,
            Self::NoRetrieval => NO_RETRIEVAL,
            Self::MultipleChoice => MULTIPLE_CHOICE,
            Self::MultipleChoiceNoContext => MULTIPLE_CHOICE_NO_CONTEXT,
            Self::Judge => JUDGE,
            Self::Summary => SUMMARY,
            Self::EvalsetFact => FACT_TEMPLATE,
            Self::EvalsetReasoning => REASONING_TEMPLATE,
            Self::EvalsetCritique => CRITIQUE_TEMPLATE,
            Self::Entailment => ENTAILMENT,
            Self::Rerank => RERANK,
            Self::GroundedStatements => GROUNDED_STATEMENTS,
            Self::GroundedVerify => GROUNDED_VERIFY,
            Self::GroundedUseful => GROUNDED_USEFUL,
        }
    }

    /// The config key and file-name stem of this kind (`free-form`).
    pub fn name(self) -> &'static str {
        match self {
            Self::FreeForm => "free-form",
            Self::NoRetrieval => "no-retrieval",
            Self::MultipleChoice => "multiple-choice",
            Self::MultipleChoiceNoContext => "multiple-choice-no-context",
            Self::Judge => "judge",
            Self::Summary => "summary",
            Self::EvalsetFact => "evalset-fact",
            Self::EvalsetReasoning => "evalset-reasoning",
            Self::EvalsetCritique => "evalset-critique",
            Self::Entailment => "entailment",
            Self::Rerank => "rerank",
            Self::GroundedStatements => "grounded-statements",
            Self::GroundedVerify => "grounded-verify",
            Self::GroundedUseful => "grounded-useful",
        }
    }
}

impl fmt::Display for TemplateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TemplateKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|k| k.name()).collect();
                format!(
                    "unknown prompt kind `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// Why a template was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    #[error(
        "template `{name}` ({kind}) has unknown slot(s) {unknown}; a {kind} template fills {allowed}"
    )]
    UnknownSlots {
        name: String,
        kind: TemplateKind,
        unknown: String,
        allowed: String,
    },
    #[error(
        "template `{name}` ({kind}) lacks the slot(s) {missing}, which a {kind} template must hold"
    )]
    MissingSlots {
        name: String,
        kind: TemplateKind,
        missing: String,
    },
}

/// A checked prompt template: its kind, the name reports show (the file's stem, or
/// `shipped` for raglab's own text), its text and the text's SHA-256.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Template {
    pub kind: TemplateKind,
    pub name: String,
    pub text: String,
    pub sha256: String,
}

/// The name of a shipped template.
pub const SHIPPED: &str = "shipped";

/// A template a front offers to switch to: the name it shows, and its file (None: the
/// one the configuration gives, else the shipped text). The file is read again at each
/// use, so an edit made while the front runs takes effect at the next answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateChoice {
    pub name: String,
    pub file: Option<std::path::PathBuf>,
}

impl Template {
    /// Check `text`'s slots against `kind` and hash it.
    pub fn new(kind: TemplateKind, name: &str, text: &str) -> Result<Self, TemplateError> {
        let (allowed, required) = kind.slots();
        let found = slots(text);
        let quote = |names: &[&str]| {
            names
                .iter()
                .map(|n| format!("{{{n}}}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let unknown: Vec<&str> = found
            .iter()
            .copied()
            .filter(|s| !allowed.contains(s))
            .collect();
        if !unknown.is_empty() {
            return Err(TemplateError::UnknownSlots {
                name: name.to_string(),
                kind,
                unknown: quote(&unknown),
                allowed: quote(allowed),
            });
        }
        let missing: Vec<&str> = required
            .iter()
            .copied()
            .filter(|s| !found.contains(s))
            .collect();
        if !missing.is_empty() {
            return Err(TemplateError::MissingSlots {
                name: name.to_string(),
                kind,
                missing: quote(&missing),
            });
        }
        Ok(Self {
            kind,
            name: name.to_string(),
            text: text.to_string(),
            sha256: sha256_hex(text),
        })
    }

    /// raglab's own template of `kind`.
    pub fn shipped(kind: TemplateKind) -> Self {
        let text = kind.shipped_text();
        Self {
            kind,
            name: SHIPPED.to_string(),
            text: text.to_string(),
            sha256: sha256_hex(text),
        }
    }

    /// The first 12 hex digits of the hash: enough to tell templates apart in a table.
    pub fn short_hash(&self) -> &str {
        &self.sha256[..12.min(self.sha256.len())]
    }

    /// `name@hash12`, how reports name a template.
    pub fn label(&self) -> String {
        format!("{}@{}", self.name, self.short_hash())
    }
}

impl Default for Template {
    fn default() -> Self {
        Self::shipped(TemplateKind::FreeForm)
    }
}

/// The slots of `text` in order of first appearance, each once: `{name}` where the name
/// is an ASCII letter or underscore followed by letters, digits or underscores.
pub fn slots(text: &str) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let end = after
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        let name = &after[..end];
        let is_name = name
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
        if is_name && after[end..].starts_with('}') && !out.contains(&name) {
            out.push(name);
        }
        rest = after;
    }
    out
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_template_passes_its_own_check() {
        for kind in TemplateKind::ALL {
            let t = Template::new(kind, SHIPPED, kind.shipped_text())
                .unwrap_or_else(|e| panic!("{kind}: {e}"));
            assert_eq!(t, Template::shipped(kind));
            assert_eq!(kind.name().parse::<TemplateKind>(), Ok(kind));
        }
        Template::new(TemplateKind::FreeForm, "citing", FREE_FORM_CITING).expect("citing");
    }

    #[test]
    fn slots_are_plain_names_in_braces() {
        assert_eq!(
            slots("{question} {\"a\": 1} { x } {1a} {_b} {question} {ctx"),
            vec!["question", "_b"]
        );
        assert_eq!(slots("{{context}}"), vec!["context"]);
        assert!(slots("no slots here {}").is_empty());
    }

    #[test]
    fn an_unknown_or_missing_slot_is_one_clear_error() {
        let e = Template::new(
            TemplateKind::FreeForm,
            "mine",
            "{context}\n{question}\n{quetsion}",
        )
        .expect_err("typo");
        assert_eq!(
            e.to_string(),
            "template `mine` (free-form) has unknown slot(s) {quetsion}; a free-form template \
             fills {context}, {question}"
        );
        let e = Template::new(TemplateKind::FreeForm, "mine", "Context: {context}").expect_err("q");
        assert_eq!(
            e.to_string(),
            "template `mine` (free-form) lacks the slot(s) {question}, which a free-form \
             template must hold"
        );
        // The judge may leave out the reference, the chunk and the examples.
        Template::new(
            TemplateKind::Judge,
            "short",
            "{criteria} {question} {answer}",
        )
        .expect("ok");
    }

    #[test]
    fn the_hash_is_sha256_of_the_text() {
        // sha256("") and sha256("abc"), the FIPS 180-2 test vectors.
        assert_eq!(
            sha256_hex(""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let t = Template::new(TemplateKind::NoRetrieval, "abc", "{question}").expect("ok");
        assert_eq!(t.sha256, sha256_hex("{question}"));
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(t.label(), format!("abc@{}", &t.sha256[..12]));
    }
}
