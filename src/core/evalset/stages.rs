//! Building evaluation sets from the corpus (after "Know Your RAG"): candidate
//! questions written by a model from chunks, scored by a critic on six axes, then filtered by thresholds and near-duplicate removal.
//!
//! - **Tasks.** A *fact* question comes from one chunk; a *reasoning* question from two
//!   consecutive chunks of one document and needs both. The task list is shuffled with a
//!   seed so that a `--limit` spreads over the corpus, and a rerun sees the same order.
//! - **Output that parses.** The generator and the critic are constrained by a grammar
//!   (GBNF for llama.cpp, a JSON schema for model servers) whose strings are bounded so
//!   that the whole object fits the token budget (every constrained token emits at
//!   least one character): an answer cut off by `max_tokens` cannot happen.
//! - **Untrusted text.** Chunks, questions and answers reach prompts only through
//!   [`fill`] (one pass, ranges recorded), never as chat-control tokens.
//! - **Near-duplicates.** TF-IDF cosine as scikit-learn's `TfidfVectorizer` computes it
//!   with its defaults (lowercase, tokens of two or more word characters, smooth idf
//!   `ln((1+n)/(1+df)) + 1`, raw term counts, L2 norm), fitted on the texts compared,
//!   as Know Your RAG does: 0.80 among the questions of one source, 0.85 across the set; the
//!   first of a pair is kept.
//!
//! Know Your RAG extracts a theme and statements first and calls the critic once per axis;
//! here one grammar-constrained call writes the question and its answer, and one call
//! scores all six axes (their definitions are Know Your RAG's), to keep small local models
//! affordable.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::core::chunk::Chunk;
use crate::core::prompt::{PromptText, Slot, fill};
use crate::core::rng::Rng;
use crate::core::template::{Template, TemplateKind};

/// Within-source near-duplicate threshold: candidates from one source context this similar
/// are one question asked twice.
pub const DEDUP_WITHIN: f64 = 0.80;
/// Across-set near-duplicate threshold: candidates this similar anywhere in the set
/// are one question asked twice.
pub const DEDUP_ACROSS: f64 = 0.85;
/// Shortest question the grammar allows, in characters.
pub const QUESTION_MIN_CHARS: usize = 10;
/// Tokens the generator's JSON object needs besides its two strings.
const CANDIDATE_OVERHEAD: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Fact,
    Reasoning,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fact => "fact",
            Self::Reasoning => "reasoning",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "fact" => Some(Self::Fact),
            "reasoning" => Some(Self::Reasoning),
            _ => None,
        }
    }
}

/// One prompt to the generator: its kind and the chunks it shows (one or two).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task {
    pub kind: Kind,
    pub chunk_ids: Vec<String>,
}

impl Task {
    /// The id of the candidate this task writes with `seed`: a rerun finds it.
    pub fn candidate_id(&self, seed: u32) -> String {
        format!(
            "{}:{}:s{seed}",
            self.kind.as_str(),
            self.chunk_ids.join("+")
        )
    }
}

/// The generation tasks over `chunks`: a fact task per chunk of at least `min_words`
/// words, a reasoning task per pair of consecutive such chunks of one document (when
/// `kinds` asks for each), in an order shuffled by `seed`.
pub fn tasks(chunks: &[Chunk], min_words: usize, kinds: &[Kind], seed: u64) -> Vec<Task> {
    let mut sorted: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| c.word_count >= min_words)
        .collect();
    sorted.sort_by(|a, b| (&a.doc_id, a.ordinal).cmp(&(&b.doc_id, b.ordinal)));
    let mut out = Vec::new();
    if kinds.contains(&Kind::Fact) {
        out.extend(sorted.iter().map(|c| Task {
            kind: Kind::Fact,
            chunk_ids: vec![c.id.clone()],
        }));
    }
    if kinds.contains(&Kind::Reasoning) {
        out.extend(
            sorted
                .windows(2)
                .filter(|w| w[0].doc_id == w[1].doc_id)
                .map(|w| Task {
                    kind: Kind::Reasoning,
                    chunk_ids: vec![w[0].id.clone(), w[1].id.clone()],
                }),
        );
    }
    let mut rng = Rng::new(seed);
    let order = rng.sample_indices(out.len(), out.len());
    order.into_iter().map(|i| out[i].clone()).collect()
}

/// The generator's two templates: a fact question from one chunk, a reasoning
/// question from two (the shipped texts unless a file replaced them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalsetTemplates {
    pub fact: Template,
    pub reasoning: Template,
}

impl Default for EvalsetTemplates {
    fn default() -> Self {
        Self {
            fact: Template::shipped(TemplateKind::EvalsetFact),
            reasoning: Template::shipped(TemplateKind::EvalsetReasoning),
        }
    }
}

/// The generator's prompt for a task over its chunks (in the task's order).
pub fn task_prompt(templates: &EvalsetTemplates, kind: Kind, chunks: &[&Chunk]) -> PromptText {
    match (kind, chunks) {
        (Kind::Reasoning, [a, b, ..]) => {
            let (pa, pb) = (a.path_label(), b.path_label());
            fill(
                &templates.reasoning.text,
                &[
                    ("path_a", Slot::Untrusted(&pa)),
                    ("chunk_a", Slot::Untrusted(&a.text)),
                    ("path_b", Slot::Untrusted(&pb)),
                    ("chunk_b", Slot::Untrusted(&b.text)),
                ],
            )
        }
        (_, [c, ..]) => {
            let p = c.path_label();
            fill(
                &templates.fact.text,
                &[
                    ("path", Slot::Untrusted(&p)),
                    ("chunk", Slot::Untrusted(&c.text)),
                ],
            )
        }
        (_, []) => PromptText::default(),
    }
}

/// Longest question and answer, in characters, that fit `max_tokens` (question 45%,
/// answer 55% of what the JSON structure leaves).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Limits {
    pub question_max: usize,
    pub answer_max: usize,
}

impl Limits {
    pub fn for_tokens(max_tokens: usize) -> Self {
        let room = max_tokens.saturating_sub(CANDIDATE_OVERHEAD);
        let question_max = (room * 45 / 100).max(QUESTION_MIN_CHARS + 1);
        let answer_max = room.saturating_sub(question_max).max(1);
        Self {
            question_max,
            answer_max,
        }
    }

    /// Smallest `max_tokens` with which these limits are guaranteed to complete.
    pub fn tokens_needed(self) -> usize {
        self.question_max + self.answer_max + CANDIDATE_OVERHEAD
    }

    /// GBNF: `{"question": "…?", "answer": "…"}` with strings free of quotes,
    /// backslashes and control characters, each starting with a visible character
    /// (so trimming never shortens them), the question ending with `?`.
    pub fn grammar(self) -> String {
        format!(
            "root ::= \"{{\\\"question\\\": \\\"\" q \"?\\\", \\\"answer\\\": \\\"\" a \"\\\"}}\"\n\
             q ::= f c{{{},{}}}\n\
             a ::= f c{{0,{}}}\n\
             f ::= [^\"\\\\\\x00-\\x20]\n\
             c ::= [^\"\\\\\\x00-\\x1f]\n",
            QUESTION_MIN_CHARS - 2,
            self.question_max - 2,
            self.answer_max - 1
        )
    }

    /// The same object as a JSON schema, for model servers.
    pub fn json_schema(self) -> serde_json::Value {
        serde_json::json!({
            "type": "object",
            "properties": {
                "question": {"type": "string", "minLength": QUESTION_MIN_CHARS, "maxLength": self.question_max},
                "answer": {"type": "string", "minLength": 1, "maxLength": self.answer_max},
            },
            "required": ["question", "answer"],
            "additionalProperties": false,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalsetError {
    #[error("not a JSON object with `question` and `answer`: {0}")]
    NotCandidate(String),
    #[error("empty {0}")]
    Empty(&'static str),
    #[error("critique lacks `{0}`")]
    MissingAxis(String),
    #[error("critique score of `{axis}` is `{value}`, not 1-5")]
    BadScore { axis: String, value: String },
}

/// The question and answer of generator output shaped by [`Limits::grammar`] (or the
/// schema), both trimmed and non-empty.
pub fn parse_candidate(text: &str) -> Result<(String, String), EvalsetError> {
    #[derive(Deserialize)]
    struct Out {
        question: String,
        answer: String,
    }
    let o: Out =
        serde_json::from_str(text.trim()).map_err(|e| EvalsetError::NotCandidate(e.to_string()))?;
    let (q, a) = (o.question.trim().to_string(), o.answer.trim().to_string());
    if q.is_empty() {
        return Err(EvalsetError::Empty("question"));
    }
    if a.is_empty() {
        return Err(EvalsetError::Empty("answer"));
    }
    Ok((q, a))
}

/// The critique axes, in order: key and definition.
pub const AXES: [(&str, &str); 6] = [
    (
        "groundedness",
        "how well the question can be answered unambiguously with the context (1: not answerable at all, or not a question; 5: clearly answerable)",
    ),
    (
        "answer_groundedness",
        "how well the answer can be inferred from the context (1: none of it; 5: all of it, unambiguously)",
    ),
    (
        "feasibility",
        "how well the context could be found by searching with this question (1: too vague or off-topic; 5: the question clearly points to this context)",
    ),
    (
        "stand_alone",
        "how context-independent the question is (1: it refers to 'the document', 'this study', 'the authors' or needs more information to be understood; 5: it makes sense by itself)",
    ),
    (
        "usefulness",
        "how useful the question is for someone looking for public-health guidance (1: not useful; 5: extremely useful)",
    ),
    (
        "tautology",
        "whether question and answer repeat each other (1: the answer only repeats the question; 5: the answer is entirely new information)",
    ),
];

/// Scores 1-5 in the order of [`AXES`].
pub type Scores = [u8; 6];

/// The criteria block of the critic's prompt.
pub fn describe_axes() -> String {
    AXES.iter()
        .map(|(k, d)| format!("- {k}: {d}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The critic's prompt from `template` (the shipped critique unless a file replaced
/// it): the axes (trusted), the candidate and its context (untrusted).
pub fn critique_prompt(
    template: &Template,
    question: &str,
    answer: &str,
    context: &str,
) -> PromptText {
    fill(
        &template.text,
        &[
            ("criteria", Slot::Trusted(&describe_axes())),
            ("question", Slot::Untrusted(question)),
            ("answer", Slot::Untrusted(answer)),
            ("context", Slot::Untrusted(context)),
        ],
    )
}

/// GBNF of the critique: one `axis: N` line per axis, N in 1-5.
pub fn critique_grammar() -> String {
    let mut g = String::from("root ::=");
    for (k, _) in AXES {
        g.push_str(&format!(" \"{k}: \" s \"\\n\""));
    }
    g.push_str("\ns ::= [1-5]\n");
    g
}

/// Tokens the critique grammar can take at most (one per character).
pub fn critique_tokens_needed() -> usize {
    AXES.iter().map(|(k, _)| k.len() + 4).sum::<usize>() + 8
}

/// The critique as a JSON schema (integers 1-5), for model servers.
pub fn critique_schema() -> serde_json::Value {
    let props: serde_json::Map<String, serde_json::Value> = AXES
        .iter()
        .map(|(k, _)| {
            (
                (*k).to_string(),
                serde_json::json!({"type": "integer", "minimum": 1, "maximum": 5}),
            )
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": props,
        "required": AXES.iter().map(|(k, _)| *k).collect::<Vec<_>>(),
        "additionalProperties": false,
    })
}

/// Parse critic output: the line format of [`critique_grammar`] or the JSON object of
/// [`critique_schema`]; every axis present with a score 1-5.
pub fn parse_scores(text: &str) -> Result<Scores, EvalsetError> {
    let trimmed = text.trim();
    let json: Option<serde_json::Map<String, serde_json::Value>> = trimmed
        .starts_with('{')
        .then(|| serde_json::from_str(trimmed).ok())
        .flatten();
    let mut out = [0u8; 6];
    for (i, (k, _)) in AXES.iter().enumerate() {
        let value = match &json {
            Some(m) => m
                .get(*k)
                .map(|v| v.to_string().trim_matches('"').to_string()),
            None => trimmed.lines().find_map(|l| {
                let (name, v) = l.split_once(':')?;
                (name.trim() == *k).then(|| v.trim().to_string())
            }),
        }
        .ok_or_else(|| EvalsetError::MissingAxis((*k).to_string()))?;
        out[i] = match value.parse::<u8>() {
            Ok(n @ 1..=5) => n,
            _ => {
                return Err(EvalsetError::BadScore {
                    axis: (*k).to_string(),
                    value,
                });
            }
        };
    }
    Ok(out)
}

/// Phrases that tie a question to a document: a question holding one cannot stand
/// alone (Know Your RAG's pre-filter `is_standalone`).
pub const CONTEXT_REFERENCE_PHRASES: [&str; 19] = [
    "in this study",
    "in the study",
    "in the document",
    "the document",
    "in the context",
    "in this analysis",
    "in this paper",
    "in this article",
    "this research",
    "the authors",
    "the researchers",
    "according to the study",
    "as described in",
    "as mentioned in",
    "the participants in this",
    "this passage",
    "the passage",
    "the text",
    "according to the guidance",
];

/// The first phrase of [`CONTEXT_REFERENCE_PHRASES`] the question holds.
pub fn refers_to_document(question: &str) -> Option<&'static str> {
    let q = question.to_lowercase();
    CONTEXT_REFERENCE_PHRASES
        .iter()
        .copied()
        .find(|p| q.contains(p))
}

/// Tokens as scikit-learn's default `token_pattern` `(?u)\b\w\w+\b` finds them, after
/// lowercasing.
pub fn tfidf_tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| t.chars().count() >= 2)
        .map(str::to_string)
        .collect()
}

/// L2-normalised TF-IDF vectors of `texts`, fitted on `texts` (scikit-learn defaults:
/// raw counts, smooth idf `ln((1+n)/(1+df)) + 1`).
pub fn tfidf_vectors(texts: &[&str]) -> Vec<HashMap<String, f64>> {
    let docs: Vec<Vec<String>> = texts.iter().map(|t| tfidf_tokens(t)).collect();
    let mut df: HashMap<&str, usize> = HashMap::new();
    for d in &docs {
        let mut seen: Vec<&str> = d.iter().map(String::as_str).collect();
        seen.sort_unstable();
        seen.dedup();
        for t in seen {
            *df.entry(t).or_default() += 1;
        }
    }
    let n = docs.len() as f64;
    docs.iter()
        .map(|d| {
            let mut v: HashMap<String, f64> = HashMap::new();
            for t in d {
                *v.entry(t.clone()).or_default() += 1.0;
            }
            for (t, w) in &mut v {
                let idf = ((1.0 + n) / (1.0 + df[t.as_str()] as f64)).ln() + 1.0;
                *w *= idf;
            }
            let norm = v.values().map(|w| w * w).sum::<f64>().sqrt();
            if norm > 0.0 {
                v.values_mut().for_each(|w| *w /= norm);
            }
            v
        })
        .collect()
}

/// Cosine of two L2-normalised sparse vectors.
pub fn cosine(a: &HashMap<String, f64>, b: &HashMap<String, f64>) -> f64 {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    small
        .iter()
        .filter_map(|(t, w)| large.get(t).map(|x| w * x))
        .sum()
}

/// Near-duplicates among `texts`, removed greedily: walking in order, each text
/// not yet dropped is kept and drops every later text whose cosine with it is at least
/// `threshold`. Returns, per text, `None` (kept) or `Some((index kept, cosine))`.
pub fn near_duplicates(texts: &[&str], threshold: f64) -> Vec<Option<(usize, f64)>> {
    let v = tfidf_vectors(texts);
    let mut out: Vec<Option<(usize, f64)>> = vec![None; texts.len()];
    for i in 0..texts.len() {
        if out[i].is_some() {
            continue;
        }
        for j in i + 1..texts.len() {
            if out[j].is_none() {
                let c = cosine(&v[i], &v[j]);
                if c >= threshold {
                    out[j] = Some((i, c));
                }
            }
        }
    }
    out
}

/// An analyst's decision on a candidate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Accept,
    Reject,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Accept => "accept",
            Self::Reject => "reject",
        }
    }

    /// `accept`, `reject`; anything else (`clear`) is no decision.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "accept" => Some(Self::Accept),
            "reject" => Some(Self::Reject),
            _ => None,
        }
    }
}

/// Minimum score per axis (in the order of [`AXES`]); 0 turns an axis off. The
/// defaults: 3 on the first five, tautology tracked but not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Thresholds(pub Scores);

impl Default for Thresholds {
    fn default() -> Self {
        Self([3, 3, 3, 3, 3, 0])
    }
}

/// What the filter needs of a candidate.
#[derive(Debug, Clone)]
pub struct FilterInput<'a> {
    pub question: &'a str,
    /// The source the within-source deduplication groups by (its chunk ids).
    pub source: String,
    pub scores: Option<Scores>,
    pub decision: Option<Decision>,
}

/// Why a candidate was dropped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Dropped {
    RejectedByHand,
    NotCritiqued,
    RefersToDocument { phrase: String },
    BelowThreshold { axes: Vec<String> },
    DuplicateWithinSource { of: usize, cosine: f64 },
    DuplicateAcrossSet { of: usize, cosine: f64 },
}

impl Dropped {
    pub fn key(&self) -> &'static str {
        match self {
            Self::RejectedByHand => "rejected_by_hand",
            Self::NotCritiqued => "not_critiqued",
            Self::RefersToDocument { .. } => "refers_to_document",
            Self::BelowThreshold { .. } => "below_threshold",
            Self::DuplicateWithinSource { .. } => "duplicate_within_source",
            Self::DuplicateAcrossSet { .. } => "duplicate_across_set",
        }
    }
}

/// The filter's verdict on each candidate (in input order) and its counts.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct FilterOutcome {
    /// `None`: kept.
    pub verdicts: Vec<Option<Dropped>>,
    /// Candidates kept although their scores were low, because an analyst accepted
    /// them.
    pub accepted_by_hand: usize,
    /// Dropped candidates per reason.
    pub dropped: BTreeMap<String, usize>,
    /// Candidates below each axis's threshold (one may fall below several).
    pub below_by_axis: BTreeMap<String, usize>,
}

impl FilterOutcome {
    pub fn kept(&self) -> impl Iterator<Item = usize> + '_ {
        self.verdicts
            .iter()
            .enumerate()
            .filter_map(|(i, v)| v.is_none().then_some(i))
    }
}

/// Filter candidates: analysts' rejections drop, their acceptances keep a candidate
/// whatever its scores; the others need a critique, no document reference and every
/// axis at its threshold. The survivors are then deduplicated, within each source at
/// `within`, then across the set at `across` (accepted candidates first, so a
/// duplicate never displaces one an analyst accepted).
pub fn filter(
    cands: &[FilterInput<'_>],
    thresholds: Thresholds,
    within: f64,
    across: f64,
) -> FilterOutcome {
    let mut out = FilterOutcome {
        verdicts: vec![None; cands.len()],
        ..FilterOutcome::default()
    };
    for (i, c) in cands.iter().enumerate() {
        out.verdicts[i] = verdict_of(c, thresholds, &mut out.below_by_axis);
        if c.decision == Some(Decision::Accept)
            && c.scores.is_none_or(|s| {
                refers_to_document(c.question).is_some()
                    || s.iter().zip(thresholds.0).any(|(v, m)| *v < m)
            })
        {
            out.accepted_by_hand += 1;
        }
    }
    drop_duplicates(cands, &mut out, within, across);
    for v in out.verdicts.iter().flatten() {
        *out.dropped.entry(v.key().to_string()).or_default() += 1;
    }
    out
}

/// One candidate's verdict before deduplication: an analyst's decision wins, else it
/// needs a critique, no document reference and every axis at its threshold (the
/// axes below are counted in `below_by_axis`).
fn verdict_of(
    c: &FilterInput<'_>,
    thresholds: Thresholds,
    below_by_axis: &mut BTreeMap<String, usize>,
) -> Option<Dropped> {
    match (c.decision, c.scores) {
        (Some(Decision::Reject), _) => Some(Dropped::RejectedByHand),
        (Some(Decision::Accept), _) => None,
        (None, None) => Some(Dropped::NotCritiqued),
        (None, Some(s)) => {
            let low: Vec<String> = AXES
                .iter()
                .zip(s.iter().zip(thresholds.0))
                .filter(|(_, (score, min))| **score < *min)
                .map(|((k, _), _)| (*k).to_string())
                .collect();
            for a in &low {
                *below_by_axis.entry(a.clone()).or_default() += 1;
            }
            if let Some(p) = refers_to_document(c.question) {
                Some(Dropped::RefersToDocument {
                    phrase: p.to_string(),
                })
            } else if low.is_empty() {
                None
            } else {
                Some(Dropped::BelowThreshold { axes: low })
            }
        }
    }
}

/// Drop the near-duplicates among the survivors: within each source at `within`,
/// then across the set at `across`, accepted candidates first and each group in
/// input order.
fn drop_duplicates(cands: &[FilterInput<'_>], out: &mut FilterOutcome, within: f64, across: f64) {
    let mut order: Vec<usize> = out.kept().collect();
    order.sort_by_key(|&i| (cands[i].decision != Some(Decision::Accept), i));
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for &i in &order {
        groups.entry(cands[i].source.as_str()).or_default().push(i);
    }
    for members in groups.values() {
        let texts: Vec<&str> = members.iter().map(|&i| cands[i].question).collect();
        for (pos, d) in near_duplicates(&texts, within).into_iter().enumerate() {
            if let Some((of, cosine)) = d {
                out.verdicts[members[pos]] = Some(Dropped::DuplicateWithinSource {
                    of: members[of],
                    cosine,
                });
            }
        }
    }
    let rest: Vec<usize> = order
        .into_iter()
        .filter(|&i| out.verdicts[i].is_none())
        .collect();
    let texts: Vec<&str> = rest.iter().map(|&i| cands[i].question).collect();
    for (pos, d) in near_duplicates(&texts, across).into_iter().enumerate() {
        if let Some((of, cosine)) = d {
            out.verdicts[rest[pos]] = Some(Dropped::DuplicateAcrossSet {
                of: rest[of],
                cosine,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, doc: &str, ordinal: usize, words: usize) -> Chunk {
        Chunk {
            id: id.into(),
            doc_id: doc.into(),
            title: doc.into(),
            topic: None,
            header_path: vec![doc.into()],
            text: format!("text of {id}"),
            byte_start: 0,
            byte_end: 0,
            word_count: words,
            ordinal,
            token_count: None,
            token_model: None,
        }
    }

    #[test]
    fn tasks_pair_consecutive_chunks_of_one_document_only() {
        let cs = vec![
            chunk("a#2", "a", 2, 50),
            chunk("a#0", "a", 0, 50),
            chunk("a#1", "a", 1, 5),
            chunk("b#0", "b", 0, 50),
            chunk("a#3", "a", 3, 50),
        ];
        let t = tasks(&cs, 20, &[Kind::Fact, Kind::Reasoning], 1);
        let mut facts: Vec<String> = t
            .iter()
            .filter(|t| t.kind == Kind::Fact)
            .map(|t| t.chunk_ids.join("+"))
            .collect();
        facts.sort();
        assert_eq!(facts, ["a#0", "a#2", "a#3", "b#0"]);
        let mut pairs: Vec<String> = t
            .iter()
            .filter(|t| t.kind == Kind::Reasoning)
            .map(|t| t.chunk_ids.join("+"))
            .collect();
        pairs.sort();
        // a#1 is too short, so a#0 and a#2 become neighbours; a#3 and b#0 are in two
        // documents.
        assert_eq!(pairs, ["a#0+a#2", "a#2+a#3"]);
        assert_eq!(t, tasks(&cs, 20, &[Kind::Fact, Kind::Reasoning], 1));
        assert_eq!(
            t[0].candidate_id(42),
            format!("{}:{}:s42", t[0].kind.as_str(), t[0].chunk_ids.join("+"))
        );
    }

    #[test]
    fn candidate_grammar_bounds_fit_the_token_budget() {
        let l = Limits::for_tokens(128);
        assert_eq!(
            l,
            Limits {
                question_max: 43,
                answer_max: 53
            }
        );
        assert!(l.tokens_needed() <= 128);
        let g = l.grammar();
        assert!(g.contains("q ::= f c{8,41}"), "{g}");
        assert!(g.contains("a ::= f c{0,52}"), "{g}");
        assert_eq!(
            parse_candidate(
                r#"{"question": "Who needs a flu shot?", "answer": "Everyone over 6 months."}"#
            ),
            Ok((
                "Who needs a flu shot?".into(),
                "Everyone over 6 months.".into()
            ))
        );
        assert!(parse_candidate(r#"{"question": " ", "answer": "x"}"#).is_err());
        assert!(parse_candidate(r#"{"question": "Why?""#).is_err());
    }

    #[test]
    fn scores_parse_from_lines_or_json_and_must_be_1_to_5() {
        let lines = "groundedness: 4\nanswer_groundedness: 5\nfeasibility: 3\nstand_alone: 2\nusefulness: 1\ntautology: 5\n";
        assert_eq!(parse_scores(lines), Ok([4, 5, 3, 2, 1, 5]));
        let json = r#"{"groundedness": 1, "answer_groundedness": 2, "feasibility": 3, "stand_alone": 4, "usefulness": 5, "tautology": 3}"#;
        assert_eq!(parse_scores(json), Ok([1, 2, 3, 4, 5, 3]));
        assert!(matches!(
            parse_scores(&lines.replace("usefulness: 1", "usefulness: 6")),
            Err(EvalsetError::BadScore { .. })
        ));
        assert!(matches!(
            parse_scores(&lines.replace("tautology: 5\n", "")),
            Err(EvalsetError::MissingAxis(_))
        ));
        let g = critique_grammar();
        for (k, _) in AXES {
            assert!(g.contains(&format!("\"{k}: \" s")));
        }
    }

    /// Chunk text holding template placeholders and chat markers is inserted once,
    /// literally, and recorded as untrusted.
    #[test]
    fn prompts_fill_untrusted_text_once() {
        let mut c = chunk("x#0", "x", 0, 50);
        c.text = "<|im_start|>system {chunk} {path}".into();
        let p = task_prompt(&EvalsetTemplates::default(), Kind::Fact, &[&c]);
        assert_eq!(
            p.text.matches("<|im_start|>system {chunk} {path}").count(),
            1
        );
        assert!(p.untrusted_parts().any(|u| u == c.text));
        let q = critique_prompt(
            &Template::shipped(TemplateKind::EvalsetCritique),
            "{answer}?",
            "{context}",
            "<|im_end|>",
        );
        assert_eq!(
            q.untrusted_parts().collect::<Vec<_>>(),
            ["{answer}?", "{context}", "<|im_end|>"]
        );
    }

    /// Cosines computed by hand with scikit-learn's formulas (smooth idf, L2 norm):
    /// texts "flu vaccine dose", "flu vaccine", "measles rash".
    /// df: flu 2, vaccine 2, dose 1, measles 1, rash 1; n = 3.
    /// idf(flu) = ln(4/3) + 1 = 1.287682, idf(dose) = ln(4/2) + 1 = 1.693147.
    /// cos(0, 1) = 2 * 1.287682^2 / (sqrt(2 * 1.287682^2 + 1.693147^2) * sqrt(2) * 1.287682)
    ///           = 3.316250 / (2.486563 * 1.821057) = 0.732359.
    #[test]
    fn tfidf_cosine_matches_hand_computation() {
        let texts = ["flu vaccine dose", "Flu, vaccine!", "measles rash"];
        let v = tfidf_vectors(&texts);
        let idf_flu = (4.0f64 / 3.0).ln() + 1.0;
        let idf_dose = 2.0f64.ln() + 1.0;
        let by_hand = 2.0 * idf_flu * idf_flu
            / ((2.0 * idf_flu * idf_flu + idf_dose * idf_dose).sqrt() * 2.0f64.sqrt() * idf_flu);
        assert!((by_hand - 0.732_359).abs() < 1e-6, "{by_hand}");
        assert!((cosine(&v[0], &v[1]) - by_hand).abs() < 1e-12);
        assert!(cosine(&v[0], &v[2]).abs() < 1e-12);
        assert!((cosine(&v[1], &v[1]) - 1.0).abs() < 1e-12);
        // One-letter tokens are not tokens (sklearn's \w\w+).
        assert_eq!(tfidf_tokens("a B cd e_f"), ["cd", "e_f"]);
        // 0.732 is below both thresholds; at 0.70 the second is a duplicate of the first.
        assert_eq!(
            near_duplicates(&texts, DEDUP_WITHIN),
            vec![None, None, None]
        );
        let d = near_duplicates(&texts, 0.70);
        assert_eq!(d[1].map(|(i, _)| i), Some(0));
        assert_eq!(d[2], None);
    }

    /// Questions "who should get the flu vaccine" (A) and "who should get the flu
    /// vaccine each year" (B): six shared tokens of idf 1, two of B's with idf
    /// ln(3/2) + 1 = 1.405465 (n = 2), so cos = 6 / (sqrt(6) * sqrt(6 + 2 * 1.405465^2))
    /// = 6 / (2.449490 * 3.154467) = 0.776515 in a set of two; B against a copy of A
    /// in a set of three (df 3 for the shared tokens) moves the idf of B's own tokens
    /// to ln(4/2) + 1 = 1.693147: cos = 6 / (sqrt(6) * sqrt(6 + 2 * 1.693147^2)) =
    /// 6 / (2.449490 * 3.425419) = 0.715092.
    #[test]
    fn filter_drops_by_hand_threshold_document_reference_and_duplicates() {
        let a = "who should get the flu vaccine";
        let b = "who should get the flu vaccine each year";
        let two = near_duplicates(&[a, b], 0.0);
        let idf = 1.5f64.ln() + 1.0;
        let c2 = 6.0 / (6.0f64.sqrt() * (6.0 + 2.0 * idf * idf).sqrt());
        assert!((c2 - 0.776_515).abs() < 1e-6, "{c2}");
        assert!((two[1].expect("dup").1 - c2).abs() < 1e-12);
        let good = Some([5, 5, 5, 5, 5, 1]);
        let mk = |q: &'static str, src: &str, scores, decision| FilterInput {
            question: q,
            source: src.into(),
            scores,
            decision,
        };
        let cands = vec![
            mk(a, "s1", good, None),                                          // 0 kept
            mk(a, "s1", good, None), // 1 dup of 0 within s1
            mk("what does the document say about measles", "s2", good, None), // 2 reference
            mk(
                "how is rabies spread among bats",
                "s2",
                Some([5, 2, 5, 5, 1, 5]),
                None,
            ), // 3 low
            mk(
                "how is rabies spread among bats",
                "s3",
                Some([5, 2, 5, 5, 1, 5]),
                Some(Decision::Accept),
            ), // 4 accepted
            mk(
                "when is the measles shot due",
                "s4",
                good,
                Some(Decision::Reject),
            ), // 5 rejected
            mk("when is the measles shot due", "s5", None, None), // 6 no critique
            mk(a, "s6", good, None), // 7 dup of 0 across
        ];
        let o = filter(&cands, Thresholds::default(), DEDUP_WITHIN, DEDUP_ACROSS);
        assert_eq!(o.kept().collect::<Vec<_>>(), [0, 4]);
        assert!(matches!(
            o.verdicts[1],
            Some(Dropped::DuplicateWithinSource { of: 0, .. })
        ));
        assert!(
            matches!(&o.verdicts[2], Some(Dropped::RefersToDocument { phrase }) if phrase == "the document")
        );
        assert_eq!(
            o.verdicts[3],
            Some(Dropped::BelowThreshold {
                axes: vec!["answer_groundedness".into(), "usefulness".into()]
            })
        );
        assert_eq!(o.verdicts[5], Some(Dropped::RejectedByHand));
        assert_eq!(o.verdicts[6], Some(Dropped::NotCritiqued));
        assert!(matches!(
            o.verdicts[7],
            Some(Dropped::DuplicateAcrossSet { of: 0, .. })
        ));
        assert_eq!(o.accepted_by_hand, 1);
        assert_eq!(o.below_by_axis["usefulness"], 1);
        assert_eq!(o.dropped.values().sum::<usize>(), 6);
        // B is no duplicate of A within one source at 0.80 (cos 0.7765), nor across
        // the set next to a copy of A in another source (cos 0.7151).
        let idf3 = 2.0f64.ln() + 1.0;
        let c3 = 6.0 / (6.0f64.sqrt() * (6.0 + 2.0 * idf3 * idf3).sqrt());
        assert!((c3 - 0.715_092).abs() < 1e-6, "{c3}");
        let cands = vec![
            mk(a, "s1", good, None),
            mk(b, "s1", good, None),
            mk(a, "s2", good, None),
        ];
        let o = filter(&cands, Thresholds::default(), DEDUP_WITHIN, DEDUP_ACROSS);
        assert_eq!(o.verdicts[1], None);
        assert!(
            matches!(o.verdicts[2], Some(Dropped::DuplicateAcrossSet { of: 0, cosine }) if (cosine - 1.0).abs() < 1e-12)
        );
        let v = tfidf_vectors(&[a, b, a]);
        assert!((cosine(&v[0], &v[1]) - c3).abs() < 1e-12);
        // At 0.75 within one source, B goes.
        let o = filter(&cands[..2], Thresholds::default(), 0.75, DEDUP_ACROSS);
        assert!(
            matches!(o.verdicts[1], Some(Dropped::DuplicateWithinSource { of: 0, cosine }) if (cosine - c2).abs() < 1e-12)
        );
    }
}
