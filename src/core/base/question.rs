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
    /// The group whose questions share error (their source document), when the file
    /// names one; else [`Question::cluster`] takes the first target's document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
}

impl Question {
    /// The cluster this question's statistics share error with. Questions drawn from
    /// one guidance document are not independent: the `cluster` field when given, else
    /// the source document of its first target by id (a chunk id up to its `#`; by id,
    /// so that qrels, which keep no order, give the same), else the question's own id
    /// (a cluster of one).
    pub fn cluster(&self) -> String {
        if let Some(c) = &self.cluster {
            return c.clone();
        }
        self.relevant
            .iter()
            .min()
            .map_or_else(|| self.id.clone(), |t| document_of(t).to_string())
    }
}

/// The source document of a chunk id: the part before its first `#` (raglab's chunk
/// ids are `document#header-path`); an id without `#` is its own document.
pub fn document_of(chunk_id: &str) -> &str {
    chunk_id.split_once('#').map_or(chunk_id, |(d, _)| d)
}

/// Target chunk ids that are not in the corpus (a questions file made for another
/// corpus or chunker, or a re-ingest that renamed chunks). They would silently count
/// as retrieval failures, or give the judge an empty chunk: every command that reads
/// targets names them instead.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingTargets {
    /// Distinct missing ids.
    pub count: usize,
    /// Questions (or answers) with at least one missing target.
    pub questions: usize,
    /// The first few missing ids, in the order met.
    pub first: Vec<String>,
}

impl MissingTargets {
    /// How many ids [`MissingTargets::first`] keeps.
    pub const SHOWN: usize = 5;

    /// The targets of each question (`targets` yields one list per question) that
    /// `known` does not hold.
    pub fn find<'a, Q, T>(targets: Q, known: impl Fn(&str) -> bool) -> Self
    where
        Q: IntoIterator<Item = T>,
        T: IntoIterator<Item = &'a str>,
    {
        let mut seen = std::collections::HashSet::new();
        let mut out = Self::default();
        for question in targets {
            let mut any = false;
            for id in question {
                if !known(id) {
                    any = true;
                    if seen.insert(id) {
                        out.count += 1;
                        if out.first.len() < Self::SHOWN {
                            out.first.push(id.to_string());
                        }
                    }
                }
            }
            out.questions += usize::from(any);
        }
        out
    }

    /// The warning to print, if any id is missing; `effect` says what happens to them.
    pub fn warning(&self, effect: &str) -> Option<String> {
        (self.count > 0).then(|| {
            format!(
                "warning: {} target chunk id{} of {} question{} {} not in the corpus ({}{}); {effect}",
                self.count,
                if self.count == 1 { "" } else { "s" },
                self.questions,
                if self.questions == 1 { "" } else { "s" },
                if self.count == 1 { "is" } else { "are" },
                self.first.join(", "),
                if self.count > self.first.len() { ", …" } else { "" },
            )
        })
    }
}

/// A question whose target was not in the top `k` of the evaluated ranking: the
/// question itself, the rank at which its first target was found and the
/// configuration that ranked it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailedQuestion {
    #[serde(flatten)]
    pub question: Question,
    /// Rank of the first relevant chunk in the evaluated list (None: not retrieved).
    pub rank: Option<usize>,
    /// How the list was ranked (absent from files written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<EvalConfig>,
    /// The length bucket (words) of its longest target, as the evaluation's length
    /// breakdown groups it, so a failures browser filters by it without the chunks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_length: Option<String>,
}

impl FailedQuestion {
    /// The configuration's short label (`hybrid-tfidf-a0.75`), `?` when unrecorded.
    pub fn config_label(&self) -> String {
        self.config
            .as_ref()
            .map_or("?".into(), |c| c.run_config().label())
    }
}

impl EvalConfig {
    /// The ranking configuration this evaluation used.
    pub fn run_config(&self) -> crate::core::retrieval::RunConfig {
        crate::core::retrieval::RunConfig::new(
            self.method,
            self.sparse.unwrap_or_default(),
            self.alpha.unwrap_or(0.5),
        )
    }
}

/// The configuration an evaluation ranked with, recorded beside its failures so that
/// a failure can be reopened as it was evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    pub method: crate::core::retrieval::Method,
    /// The sparse side fused with dense (hybrid and linear only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sparse: Option<crate::core::retrieval::Sparse>,
    /// The dense weight (hybrid and linear only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alpha: Option<f64>,
    /// The embedding model's name (methods that use the dense list only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding_model: Option<String>,
    /// The workspace whose chunks were ranked.
    pub corpus: String,
    /// How many chunks it held.
    pub chunks: usize,
    /// Depth of each retriever's list.
    pub depth: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_targets_are_counted_once_and_named() {
        let known = |id: &str| id.starts_with('c');
        let m = MissingTargets::find(
            [
                vec!["c1", "x1"],
                vec!["c2"],
                vec!["x1", "x2", "x3", "x4", "x5", "x6"],
            ],
            known,
        );
        assert_eq!(m.count, 6);
        assert_eq!(m.questions, 2);
        assert_eq!(m.first, ["x1", "x2", "x3", "x4", "x5"]);
        assert_eq!(
            m.warning("they count as not retrieved").as_deref(),
            Some(
                "warning: 6 target chunk ids of 2 questions are not in the corpus (x1, x2, x3, x4, x5, …); they count as not retrieved"
            )
        );
        let none = MissingTargets::find([vec!["c1"]], known);
        assert_eq!(none.warning("x"), None);
    }

    #[test]
    fn reads_every_spelling_and_round_trips() {
        let q: Question = serde_json::from_str(
            r#"{"id": "q1", "question": "Who?", "reference_answer": "Them", "relevant": ["a#b"]}"#,
        )
        .expect("parses");
        assert_eq!(q.text, "Who?");
        assert_eq!(q.answer.as_deref(), Some("Them"));
        let mut f = FailedQuestion {
            question: q.clone(),
            rank: Some(12),
            config: None,
            target_length: Some("100-199".into()),
        };
        let back: FailedQuestion =
            serde_json::from_str(&serde_json::to_string(&f).expect("json")).expect("parses");
        assert_eq!(back, f);
        f.config = Some(EvalConfig {
            method: crate::core::retrieval::Method::Hybrid,
            sparse: Some(crate::core::retrieval::Sparse::Tfidf),
            alpha: Some(0.75),
            embedding_model: Some("m".into()),
            corpus: "/ws".into(),
            chunks: 3,
            depth: 100,
        });
        let json = serde_json::to_string(&f).expect("json");
        assert!(json.contains(r#""sparse":"tfidf""#), "{json}");
        let back: FailedQuestion = serde_json::from_str(&json).expect("parses");
        assert_eq!(back, f);
        assert!(serde_json::from_str::<Question>(r#"{"text": "no id"}"#).is_err());
    }
}
