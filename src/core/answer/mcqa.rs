//! Multiple-choice QA: option letters, the one-letter answer grammar, and
//! the accuracy report the paper draws — by k (k = 0 is the no-retrieval baseline),
//! by topic with the coefficient of variation across topics (Table 5), and by whether
//! and where the target chunk was in the prompt (Figure 4).
//!
//! Conventions, stated so reports can be compared:
//! - Accuracy intervals are 95% Wilson score intervals (they stay inside [0, 1] and
//!   behave at 0 or n correct, unlike the normal approximation).
//! - CV = σ/μ over the topics' accuracies at one k, σ the population standard
//!   deviation (divide by the number of topics); undefined with fewer than two topics
//!   or a mean of 0.
//! - "Retrieved" means the target chunk was in the prompt (among the k chunks kept
//!   after the token budget); its rank is its fused rank in that list.
//! - Macro-F1 over the options: the unweighted mean of per-class F1 with
//!   the option letters as classes: every letter that was the correct answer or was
//!   chosen at that k (scikit-learn's `f1_score(y_true, y_pred, labels=those letters,
//!   average="macro")`). An output that names no option counts as a miss of the
//!   correct letter and has no class of its own.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::agreement::{Confusion, macro_f1_over};

/// At most 26 options, lettered A-Z.
pub const MAX_OPTIONS: usize = 26;
/// z for a two-sided 95% interval.
const Z95: f64 = 1.959_963_984_540_054;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum McqError {
    #[error("a question needs 2 to {MAX_OPTIONS} options, this one has {0}")]
    OptionCount(usize),
    #[error("answer `{0}` is neither an option nor the letter of one")]
    UnknownAnswer(String),
}

/// The letter of option `i` (0 -> 'A').
pub fn letter(i: usize) -> char {
    char::from(b'A' + (i.min(MAX_OPTIONS - 1)) as u8)
}

/// Options as the prompt lists them: `A. yes`, one per line.
pub fn render_options(options: &[String]) -> String {
    options
        .iter()
        .enumerate()
        .map(|(i, o)| format!("{}. {}", letter(i), o.trim()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// GBNF that admits exactly one option letter: with greedy sampling this picks the
/// letter the model ranks highest, so every answer parses.
pub fn grammar(n_options: usize) -> String {
    let alts: Vec<String> = (0..n_options.clamp(1, MAX_OPTIONS))
        .map(|i| format!("\"{}\"", letter(i)))
        .collect();
    format!("root ::= {}\n", alts.join(" | "))
}

/// The option index a model output names: its first non-blank character, as a letter
/// within range (case-insensitive). `None` when the output names no option.
pub fn parse_choice(output: &str, n_options: usize) -> Option<usize> {
    let c = output.trim_start().chars().next()?.to_ascii_uppercase();
    if !c.is_ascii_uppercase() {
        return None;
    }
    let i = (c as u8 - b'A') as usize;
    (i < n_options).then_some(i)
}

/// The JSON schema an OpenAI-compatible server is sent for a multiple-choice answer:
/// an object whose one field is an option letter. An object, not a bare string:
/// OpenAI's strict mode wants an object at the root, and llama-server turns either into
/// a grammar.
pub fn choice_schema(n_options: usize) -> serde_json::Value {
    let letters: Vec<String> = (0..n_options.clamp(1, MAX_OPTIONS))
        .map(|i| letter(i).to_string())
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": {"answer": {"type": "string", "enum": letters}},
        "required": ["answer"],
        "additionalProperties": false,
    })
}

/// The option a server's reply names: the `answer` field of [`choice_schema`]'s
/// object, else (a server that ignored the schema) the reply read as a bare letter.
pub fn parse_reply(reply: &str, n_options: usize) -> Option<usize> {
    match serde_json::from_str::<serde_json::Value>(reply.trim()) {
        Ok(v) => parse_choice(v.get("answer")?.as_str()?, n_options),
        Err(_) => parse_choice(reply, n_options),
    }
}

/// Index of the correct option from an answer given as the option's text
/// (case-insensitive, checked first) or as its letter.
pub fn resolve_answer(options: &[String], answer: &str) -> Result<usize, McqError> {
    if !(2..=MAX_OPTIONS).contains(&options.len()) {
        return Err(McqError::OptionCount(options.len()));
    }
    let a = answer.trim();
    if let Some(i) = options
        .iter()
        .position(|o| o.trim().eq_ignore_ascii_case(a))
    {
        return Ok(i);
    }
    let mut chars = a.chars();
    if let (Some(c), None) = (chars.next(), chars.next())
        && let Some(i) = parse_choice(&c.to_string(), options.len())
    {
        return Ok(i);
    }
    Err(McqError::UnknownAnswer(a.to_string()))
}

/// One graded answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Chunks offered (0: no retrieval).
    pub k: usize,
    pub topic: String,
    pub correct: bool,
    /// Letter of the correct option.
    pub answer: char,
    /// Letter the model chose (`None`: no parseable choice, counted wrong).
    pub predicted: Option<char>,
    /// Fused rank of the first target chunk in the prompt; `None`: not in the prompt.
    pub target_rank: Option<usize>,
}

/// Accuracy over a group of answers with its 95% Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Accuracy {
    pub n: usize,
    pub correct: usize,
    pub accuracy: Option<f64>,
    pub lo: Option<f64>,
    pub hi: Option<f64>,
}

impl Accuracy {
    pub fn new(correct: usize, n: usize) -> Self {
        let Some((lo, hi)) = wilson(correct, n) else {
            return Self {
                n,
                correct,
                ..Self::default()
            };
        };
        Self {
            n,
            correct,
            accuracy: Some(correct as f64 / n as f64),
            lo: Some(lo),
            hi: Some(hi),
        }
    }

    /// `0.267 [0.17, 0.39] n=60` (the CLI's and the TUI's cell), `-` without answers.
    pub fn with_ci(&self) -> String {
        match (self.accuracy, self.lo, self.hi) {
            (Some(v), Some(lo), Some(hi)) => format!("{v:.3} [{lo:.2}, {hi:.2}] n={}", self.n),
            _ => "-".into(),
        }
    }

    /// `0.300 (20)`, `-` without answers.
    pub fn short(&self) -> String {
        self.accuracy
            .map_or_else(|| "-".into(), |v| format!("{v:.3} ({})", self.n))
    }

    fn of<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Self {
        let (mut n, mut c) = (0, 0);
        for o in outcomes {
            n += 1;
            c += usize::from(o.correct);
        }
        Self::new(c, n)
    }
}

/// 95% Wilson score interval for `correct` successes in `n` trials.
pub fn wilson(correct: usize, n: usize) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n = n as f64;
    let p = correct as f64 / n;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = Z95 * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    Some(((centre - half).max(0.0), (centre + half).min(1.0)))
}

/// Coefficient of variation σ/μ (population σ) of topic accuracies.
pub fn coefficient_of_variation(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if mean <= 0.0 {
        return None;
    }
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    Some(var.sqrt() / mean)
}

/// Accuracy at one k, split the ways the paper's Figure 4 splits it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KRow {
    pub k: usize,
    pub overall: Accuracy,
    /// Macro-F1 over the option letters (None: no answers).
    pub macro_f1: Option<f64>,
    /// Target chunk in the prompt / not in it.
    pub retrieved: Accuracy,
    pub not_retrieved: Accuracy,
    /// Target at rank 1 / at rank 2 or lower.
    pub rank1: Accuracy,
    pub rank2_plus: Accuracy,
    /// Accuracy per target rank r = 1..k.
    pub by_rank: Vec<(usize, Accuracy)>,
    /// How often each letter was chosen (a model that always says `A` shows here).
    pub choices: BTreeMap<String, usize>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopicRow {
    pub topic: String,
    /// One cell per k of the report, in order.
    pub by_k: Vec<Accuracy>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub ks: Vec<usize>,
    pub by_k: Vec<KRow>,
    pub by_topic: Vec<TopicRow>,
    /// CV across topics, one per k (None: undefined).
    pub cv: Vec<Option<f64>>,
}

/// Macro-F1 over the option letters of `outcomes` (see the module notes).
pub fn options_macro_f1<'a>(outcomes: impl IntoIterator<Item = &'a Outcome>) -> Option<f64> {
    const NONE: &str = "(none)";
    let pairs: Vec<(String, String)> = outcomes
        .into_iter()
        .map(|o| {
            let p = o.predicted.map_or_else(|| NONE.to_string(), String::from);
            (p, o.answer.to_string())
        })
        .collect();
    let c = Confusion::new(&pairs);
    let classes: Vec<&str> = c
        .labels
        .iter()
        .map(String::as_str)
        .filter(|l| *l != NONE)
        .collect();
    macro_f1_over(&c, &classes)
}

/// Summarise graded answers.
pub fn report(outcomes: &[Outcome]) -> Report {
    let mut ks: Vec<usize> = outcomes.iter().map(|o| o.k).collect();
    ks.sort_unstable();
    ks.dedup();
    let by_k = ks
        .iter()
        .map(|&k| {
            let at: Vec<&Outcome> = outcomes.iter().filter(|o| o.k == k).collect();
            let mut choices = BTreeMap::new();
            for o in &at {
                let key = o.predicted.map_or_else(|| "none".into(), String::from);
                *choices.entry(key).or_insert(0) += 1;
            }
            KRow {
                k,
                overall: Accuracy::of(at.iter().copied()),
                macro_f1: options_macro_f1(at.iter().copied()),
                retrieved: Accuracy::of(at.iter().copied().filter(|o| o.target_rank.is_some())),
                not_retrieved: Accuracy::of(at.iter().copied().filter(|o| o.target_rank.is_none())),
                rank1: Accuracy::of(at.iter().copied().filter(|o| o.target_rank == Some(1))),
                rank2_plus: Accuracy::of(
                    at.iter()
                        .copied()
                        .filter(|o| o.target_rank.is_some_and(|r| r >= 2)),
                ),
                by_rank: (1..=k)
                    .map(|r| {
                        let acc =
                            Accuracy::of(at.iter().copied().filter(|o| o.target_rank == Some(r)));
                        (r, acc)
                    })
                    .collect(),
                choices,
            }
        })
        .collect();
    let mut topics: Vec<String> = outcomes.iter().map(|o| o.topic.clone()).collect();
    topics.sort();
    topics.dedup();
    let by_topic: Vec<TopicRow> = topics
        .iter()
        .map(|t| TopicRow {
            topic: t.clone(),
            by_k: ks
                .iter()
                .map(|&k| Accuracy::of(outcomes.iter().filter(|o| o.k == k && &o.topic == t)))
                .collect(),
        })
        .collect();
    let cv = (0..ks.len())
        .map(|i| {
            let accs: Vec<f64> = by_topic.iter().filter_map(|r| r.by_k[i].accuracy).collect();
            coefficient_of_variation(&accs)
        })
        .collect();
    Report {
        ks,
        by_k,
        by_topic,
        cv,
    }
}

/// One graded multiple-choice answer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct McqaRecord {
    pub run: String,
    pub question_id: String,
    pub k: u32,
    pub topic: String,
    pub method: String,
    pub alpha: f64,
    pub embed_model: Option<String>,
    pub options: Vec<String>,
    /// Letter of the correct option.
    pub answer: String,
    /// Letter chosen (None: the output named no option).
    pub predicted: Option<String>,
    pub correct: bool,
    pub raw_output: String,
    pub target_ids: Vec<String>,
    pub chunk_ids: Vec<String>,
    /// Fused rank of the first target chunk in the prompt (None: not in it).
    pub target_rank: Option<u32>,
    /// Rank of the first target in the whole fused list (None: not in the top depth).
    pub target_list_rank: Option<u32>,
    pub prompt: String,
    pub prompt_tokens: u32,
    pub retrieval_ms: f64,
    pub total_ms: f64,
    pub model_file: String,
    pub model_sha256: String,
    pub created_at: String,
    /// Base URL of the OpenAI-compatible endpoint that answered (None: the local model
    /// of `model_file`). Added later: nullable and last, so older runs load.
    #[serde(default)]
    pub endpoint: Option<String>,
    /// The model the endpoint said it served (the response's `model` field).
    #[serde(default)]
    pub served_model: Option<String>,
    /// The prompt template's name and the SHA-256 of its text (the no-context one at
    /// k = 0). None in answers stored before templates were recorded (shipped text).
    #[serde(default)]
    pub template: Option<String>,
    #[serde(default)]
    pub template_sha256: Option<String>,
    /// Which chunks the prompt held and their order (None at k = 0, and in answers
    /// stored before policies existed: retrieved, ranked).
    #[serde(default)]
    pub context_policy: Option<String>,
    #[serde(default)]
    pub chunk_order: Option<String>,
    /// The rerank stage between retrieval and the prompt (`top 10 reranked, 5 kept by
    /// MODEL (TEMPLATE)`); None: none, and at k = 0.
    #[serde(default)]
    pub rerank: Option<String>,
    /// Its wall time for this question, ms (part of `retrieval_ms` and `total_ms`;
    /// near 0 when its scores were cached).
    #[serde(default)]
    pub rerank_ms: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn options_letters_and_grammar() {
        let o = opts(&["yes", "no", "maybe"]);
        assert_eq!(render_options(&o), "A. yes\nB. no\nC. maybe");
        assert_eq!(grammar(3), "root ::= \"A\" | \"B\" | \"C\"\n");
        assert_eq!(parse_choice(" b", 3), Some(1));
        assert_eq!(parse_choice("C.", 3), Some(2));
        assert_eq!(parse_choice("D", 3), None);
        assert_eq!(parse_choice("", 3), None);
        assert_eq!(parse_choice("1", 3), None);
    }

    #[test]
    fn answers_resolve_by_text_then_letter() {
        let o = opts(&["yes", "no", "maybe"]);
        assert_eq!(resolve_answer(&o, "Maybe"), Ok(2));
        assert_eq!(resolve_answer(&o, "b"), Ok(1));
        assert_eq!(
            resolve_answer(&o, "perhaps"),
            Err(McqError::UnknownAnswer("perhaps".into()))
        );
        assert_eq!(
            resolve_answer(&opts(&["only"]), "only"),
            Err(McqError::OptionCount(1))
        );
        // An option whose text is a letter is matched as text first.
        assert_eq!(resolve_answer(&opts(&["B", "A"]), "A"), Ok(1));
    }

    #[test]
    fn wilson_matches_hand_computation() {
        // 7/10: centre (0.7 + 1.92073/10)/1.38415 = 0.64447, half 0.24774.
        let (lo, hi) = wilson(7, 10).expect("n > 0");
        assert!((lo - 0.396_778).abs() < 1e-5, "{lo}");
        assert!((hi - 0.892_209).abs() < 1e-5, "{hi}");
        // 0/5 keeps a non-degenerate upper bound: z²/(n + z²) = 3.8415/8.8415.
        let (lo, hi) = wilson(0, 5).expect("n > 0");
        assert!(lo.abs() < 1e-12);
        assert!((hi - 0.434_482).abs() < 1e-5, "{hi}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn cv_is_population_sd_over_mean() {
        // mean 0.8, deviations ±0.1 -> σ = 0.1, CV = 0.125.
        let cv = coefficient_of_variation(&[0.7, 0.9]).expect("defined");
        assert!((cv - 0.125).abs() < 1e-12);
        assert_eq!(coefficient_of_variation(&[0.5]), None);
        assert_eq!(coefficient_of_variation(&[0.0, 0.0]), None);
    }

    fn o(k: usize, topic: &str, correct: bool, rank: Option<usize>) -> Outcome {
        Outcome {
            k,
            topic: topic.into(),
            correct,
            answer: 'A',
            predicted: Some(if correct { 'A' } else { 'B' }),
            target_rank: rank,
        }
    }

    #[test]
    fn report_splits_by_k_topic_and_target_rank() {
        let outcomes = [
            o(0, "flu", false, None),
            o(0, "tb", true, None),
            o(3, "flu", true, Some(1)),
            o(3, "flu", true, Some(2)),
            o(3, "tb", false, Some(3)),
            o(3, "tb", false, None),
        ];
        let r = report(&outcomes);
        assert_eq!(r.ks, vec![0, 3]);
        let k3 = &r.by_k[1];
        assert_eq!((k3.overall.correct, k3.overall.n), (2, 4));
        assert_eq!((k3.retrieved.correct, k3.retrieved.n), (2, 3));
        assert_eq!((k3.not_retrieved.correct, k3.not_retrieved.n), (0, 1));
        assert_eq!((k3.rank1.correct, k3.rank1.n), (1, 1));
        assert_eq!((k3.rank2_plus.correct, k3.rank2_plus.n), (1, 2));
        assert_eq!(k3.by_rank.len(), 3);
        assert_eq!(k3.by_rank[2].1.accuracy, Some(0.0));
        assert_eq!(k3.choices.get("A"), Some(&2));
        assert_eq!(r.by_topic.len(), 2);
        assert_eq!(r.by_topic[0].topic, "flu");
        assert_eq!(r.by_topic[0].by_k[1].accuracy, Some(1.0));
        assert_eq!(r.by_topic[1].by_k[1].accuracy, Some(0.0));
        // k = 0: topics at 0.0 and 1.0 -> mean 0.5, σ 0.5, CV 1; k = 3: 1.0 and 0.0 too.
        assert_eq!(r.cv, vec![Some(1.0), Some(1.0)]);
        assert!(r.by_k[0].by_rank.is_empty());
    }

    fn graded(answer: char, predicted: Option<char>) -> Outcome {
        Outcome {
            k: 0,
            topic: "t".into(),
            correct: predicted == Some(answer),
            answer,
            predicted,
            target_rank: None,
        }
    }

    /// By hand: gold A A A B B C, chosen A A B B C (none).
    /// A: tp 2, chosen 2, gold 3 -> F1 = 4/5; B: tp 1, chosen 2, gold 2 -> 1/2;
    /// C: tp 0 -> 0. Macro-F1 = (0.8 + 0.5 + 0) / 3 = 0.4333..., which is scikit-learn's
    /// `f1_score(gold, chosen, labels=["A", "B", "C"], average="macro")`.
    #[test]
    fn macro_f1_over_options_matches_hand_computation() {
        let outcomes = [
            graded('A', Some('A')),
            graded('A', Some('A')),
            graded('A', Some('B')),
            graded('B', Some('B')),
            graded('B', Some('C')),
            graded('C', None),
        ];
        let f = options_macro_f1(&outcomes).expect("answers");
        assert!((f - 1.3 / 3.0).abs() < 1e-12, "{f}");
        assert_eq!(report(&outcomes).by_k[0].macro_f1, Some(f));
        // A chosen letter that is never correct is a class with F1 0:
        // gold A B, chosen C B -> (0 + 1 + 0) / 3.
        let f = options_macro_f1(&[graded('A', Some('C')), graded('B', Some('B'))]).expect("f1");
        assert!((f - 1.0 / 3.0).abs() < 1e-12, "{f}");
        // All correct: 1; nothing answered: undefined.
        assert_eq!(options_macro_f1(&[graded('A', Some('A'))]), Some(1.0));
        assert_eq!(options_macro_f1(&[]), None);
    }

    #[test]
    fn server_replies_name_an_option_by_the_schema_or_as_a_bare_letter() {
        let schema = choice_schema(3);
        assert_eq!(
            schema["properties"]["answer"]["enum"],
            serde_json::json!(["A", "B", "C"])
        );
        assert_eq!(schema["required"], serde_json::json!(["answer"]));
        assert_eq!(parse_reply(r#"{"answer": "B"}"#, 3), Some(1));
        assert_eq!(parse_reply(r#" {"answer":"c"} "#, 3), Some(2));
        // Out of range, a missing field, or another type: no option.
        assert_eq!(parse_reply(r#"{"answer": "D"}"#, 3), None);
        assert_eq!(parse_reply(r#"{"choice": "A"}"#, 3), None);
        assert_eq!(parse_reply(r#"{"answer": 1}"#, 3), None);
        // Not JSON: read as the local grammar's bare letter.
        assert_eq!(parse_reply("A", 3), Some(0));
        assert_eq!(parse_reply("maybe", 3), None);
    }
}
