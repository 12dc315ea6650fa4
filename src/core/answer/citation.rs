//! Citations in an answer and ALCE's citation recall and precision (Gao et al. 2023,
//! "Enabling Large Language Models to Generate Text with Citations").
//!
//! An answer is split into sentences; each sentence's citations are the `[chunk ID]`
//! (or `[ID]`) brackets inside it or right after its end (`... was 5%. [chunk a]`).
//! One bracket may hold several ids separated by commas or semicolons. A bracket whose
//! items are not all ids (an id holds no whitespace) is text, not a citation.
//!
//! The scores, given an entailment verdict `entails(chunks, sentence)`:
//! - a sentence is *supported* when it cites at least one chunk, every chunk it cites
//!   was in the prompt, and the concatenation of its cited chunks entails it;
//! - **recall** = supported sentences / sentences;
//! - a citation is *not needed* when its sentence cites several chunks, is supported,
//!   the cited chunk alone does not entail the sentence and the other cited chunks
//!   without it do; every citation of an unsupported sentence counts as not needed;
//! - **precision** = needed citations / citations (undefined with no citation).
//!
//! This is ALCE's `compute_autoais`, case for case. A citation of a chunk that was not
//! in the prompt makes its sentence unsupported (ALCE: an index out of range) and is
//! also listed by id, so a report can name what the model made up.

use std::collections::BTreeSet;

/// One sentence of an answer and the chunk ids it cites, in order, each once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CitedSentence {
    /// The sentence without its citation brackets, trimmed.
    pub text: String,
    pub cited: Vec<String>,
}

/// Split `answer` into sentences with their citations. A sentence ends at `.`, `!` or
/// `?` followed by whitespace, a bracket or the end, and at a line break (so "5.5%"
/// stays whole; an abbreviation such as "e.g. " ends a sentence, as in ALCE's NLTK
/// splitter without its abbreviation list).
pub fn parse(answer: &str) -> Vec<CitedSentence> {
    let mut out: Vec<CitedSentence> = Vec::new();
    let mut text = String::new();
    let mut cited: Vec<String> = Vec::new();
    let mut rest = answer;
    while let Some(c) = rest.chars().next() {
        if let Some((found, len)) = bracket_ids(rest) {
            // Citations with no sentence text before them belong to the sentence before.
            let into = match out.last_mut() {
                Some(last) if text.trim().is_empty() => &mut last.cited,
                _ => &mut cited,
            };
            add(into, found);
            rest = &rest[len..];
            continue;
        }
        rest = &rest[c.len_utf8()..];
        if c == '\n' {
            flush(&mut text, &mut cited, &mut out);
            continue;
        }
        text.push(c);
        let next = rest.chars().next();
        if matches!(c, '.' | '!' | '?') && next.is_none_or(|n| n.is_whitespace() || n == '[') {
            // The brackets right after the end still cite this sentence.
            loop {
                let after = rest.trim_start_matches([' ', '\t']);
                let Some((found, len)) = bracket_ids(after) else {
                    break;
                };
                add(&mut cited, found);
                rest = &after[len..];
            }
            flush(&mut text, &mut cited, &mut out);
        }
    }
    flush(&mut text, &mut cited, &mut out);
    out
}

fn add(into: &mut Vec<String>, ids: Vec<String>) {
    for id in ids {
        if !into.contains(&id) {
            into.push(id);
        }
    }
}

/// End the sentence being read: its text with whitespace collapsed and none before
/// closing punctuation (a citation removed from "air [chunk a]." leaves "air.").
fn flush(text: &mut String, cited: &mut Vec<String>, out: &mut Vec<CitedSentence>) {
    let mut t = text.split_whitespace().collect::<Vec<_>>().join(" ");
    for p in [" .", " !", " ?", " ,", " ;", " :"] {
        t = t.replace(p, &p[1..]);
    }
    if t.is_empty() {
        if let Some(last) = out.last_mut() {
            add(&mut last.cited, std::mem::take(cited));
        }
    } else {
        out.push(CitedSentence {
            text: t,
            cited: std::mem::take(cited),
        });
    }
    text.clear();
    cited.clear();
}

/// The ids of a citation bracket at the start of `s` and the bracket's length in
/// bytes; None when `s` does not start with one.
fn bracket_ids(s: &str) -> Option<(Vec<String>, usize)> {
    if !s.starts_with('[') {
        return None;
    }
    let inner_end = s.find(']')?;
    let inner = &s[1..inner_end];
    if inner.contains('[') || inner.contains('\n') {
        return None;
    }
    let mut ids = Vec::new();
    for item in inner.split([',', ';']) {
        let item = item.trim();
        let item = item
            .strip_prefix("chunk ")
            .or_else(|| item.strip_prefix("Chunk "))
            .map_or(item, str::trim);
        if item.is_empty() || item.chars().any(char::is_whitespace) {
            return None;
        }
        ids.push(item.to_string());
    }
    Some((ids, inner_end + 1))
}

/// One sentence's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentenceVerdict {
    pub text: String,
    pub cited: Vec<String>,
    pub supported: bool,
    /// Cited chunks that were not needed (see the module doc).
    pub not_needed: Vec<String>,
}

/// Citation recall and precision of one answer.
#[derive(Debug, Clone, PartialEq)]
pub struct CitationScores {
    pub sentences: Vec<SentenceVerdict>,
    /// Supported sentences / sentences (None: an empty answer).
    pub recall: Option<f64>,
    /// Needed citations / citations (None: no citation at all).
    pub precision: Option<f64>,
    pub citations: usize,
    /// Cited ids that were not in the prompt, each once, sorted.
    pub outside_prompt: Vec<String>,
}

/// Score `answer`'s citations against the chunks of its prompt (`in_prompt`) with
/// the entailment verdict `entails(cited chunk ids, sentence)`, which judges whether
/// the concatenation of those chunks entails the sentence.
pub fn score<E>(
    answer: &str,
    in_prompt: &[String],
    entails: &mut E,
) -> Result<CitationScores, E::Error>
where
    E: Entailment,
{
    let parsed = parse(answer);
    let mut outside = BTreeSet::new();
    let mut sentences = Vec::with_capacity(parsed.len());
    let (mut supported_n, mut citations, mut needed) = (0usize, 0usize, 0usize);
    for s in parsed {
        citations += s.cited.len();
        let unknown: Vec<&String> = s.cited.iter().filter(|c| !in_prompt.contains(c)).collect();
        outside.extend(unknown.iter().map(|c| (*c).clone()));
        let cited: Vec<&str> = s.cited.iter().map(String::as_str).collect();
        let supported =
            !cited.is_empty() && unknown.is_empty() && entails.entails(&cited, &s.text)?;
        let mut not_needed = Vec::new();
        if supported && cited.len() > 1 {
            for (i, c) in cited.iter().enumerate() {
                let alone = entails.entails(&[*c], &s.text)?;
                let others: Vec<&str> = cited
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| *j != i)
                    .map(|(_, o)| *o)
                    .collect();
                if !alone && entails.entails(&others, &s.text)? {
                    not_needed.push((*c).to_string());
                } else {
                    needed += 1;
                }
            }
        } else if supported {
            needed += 1;
        } else {
            not_needed.clone_from(&s.cited);
        }
        supported_n += usize::from(supported);
        sentences.push(SentenceVerdict {
            text: s.text,
            cited: s.cited,
            supported,
            not_needed,
        });
    }
    let ratio = |a: usize, b: usize| (b > 0).then(|| a as f64 / b as f64);
    Ok(CitationScores {
        recall: ratio(supported_n, sentences.len()),
        precision: ratio(needed, citations),
        sentences,
        citations,
        outside_prompt: outside.into_iter().collect(),
    })
}

/// The judge of whether chunks entail a sentence (a model in the service layer; a
/// table in tests).
pub trait Entailment {
    type Error;
    fn entails(&mut self, chunks: &[&str], sentence: &str) -> Result<bool, Self::Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    #[test]
    fn sentences_and_their_citations() {
        let p = parse(
            "Measles spreads by air [chunk m/1]. Vaccinate at 12 months [chunk m/2, chunk m/3]! \
             Two doses are needed.[m/2] See [the guide] for more.\nNo citation here",
        );
        let got: Vec<(&str, Vec<&str>)> = p
            .iter()
            .map(|s| {
                (
                    s.text.as_str(),
                    s.cited.iter().map(String::as_str).collect(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("Measles spreads by air.", vec!["m/1"]),
                ("Vaccinate at 12 months!", vec!["m/2", "m/3"]),
                ("Two doses are needed.", vec!["m/2"]),
                ("See [the guide] for more.", vec![]),
                ("No citation here", vec![]),
            ]
        );
        // A citation after the full stop belongs to the sentence before it; one id
        // cited twice in a sentence counts once.
        let p = parse("It is 5%. [chunk a#x][chunk b] [a#x] Next one [b].");
        assert_eq!(p[0].cited, ids(&["a#x", "b"]));
        assert_eq!(p[1].text, "Next one.");
        assert_eq!(p[1].cited, ids(&["b"]));
        assert!(parse("  \n ").is_empty());
    }

    /// Entailment from a table: a set of chunks entails a sentence when it includes one
    /// of the sentence's sufficient sets.
    struct Table(Vec<(&'static str, Vec<Vec<&'static str>>)>, usize);

    impl Entailment for Table {
        type Error = std::convert::Infallible;
        fn entails(&mut self, chunks: &[&str], sentence: &str) -> Result<bool, Self::Error> {
            self.1 += 1;
            let sufficient = self
                .0
                .iter()
                .find(|(s, _)| *s == sentence)
                .map(|(_, sets)| sets.as_slice())
                .unwrap_or_default();
            Ok(sufficient
                .iter()
                .any(|set| set.iter().all(|c| chunks.contains(c))))
        }
    }

    /// Hand-computed: four sentences.
    /// 1. "A." cites a; a entails it: supported, 1 needed citation.
    /// 2. "B." cites a and b; only b entails it (a alone does not, and b without a
    ///    does): supported; a not needed, b needed.
    /// 3. "C." cites nothing: unsupported, no citation.
    /// 4. "D." cites z, not in the prompt: unsupported, its citation not needed.
    ///
    /// recall = 2/4; citations = 1 + 2 + 0 + 1 = 4; needed = 1 + 1 = 2: precision 2/4.
    #[test]
    fn recall_and_precision_by_hand() {
        let mut judge = Table(
            vec![
                ("A.", vec![vec!["a"]]),
                ("B.", vec![vec!["b"]]),
                ("C.", vec![vec!["a"]]),
                ("D.", vec![vec![]]),
            ],
            0,
        );
        let s = score(
            "A. [a] B. [a, b] C. D. [chunk z]",
            &ids(&["a", "b"]),
            &mut judge,
        )
        .expect("infallible");
        assert_eq!(s.recall, Some(0.5));
        assert_eq!(s.precision, Some(0.5));
        assert_eq!(s.citations, 4);
        assert_eq!(s.outside_prompt, ids(&["z"]));
        let flags: Vec<bool> = s.sentences.iter().map(|v| v.supported).collect();
        assert_eq!(flags, vec![true, true, false, false]);
        assert_eq!(s.sentences[1].not_needed, ids(&["a"]));
        assert_eq!(s.sentences[3].not_needed, ids(&["z"]));
        // Calls: A jointly (1); B jointly, a alone (fails), b without a (holds), b
        // alone (holds) (4): 5. C and D are decided without the judge.
        assert_eq!(judge.1, 5);
    }

    /// Over-citation: both chunks entail the sentence alone, so neither is "not needed"
    /// (the other alone also entails, but each alone entails too): precision 1. Only a
    /// chunk that entails nothing alone while the rest suffice is dropped.
    #[test]
    fn over_citation_and_no_citation() {
        let mut judge = Table(
            vec![("X.", vec![vec!["a"], vec!["b"]]), ("Y.", vec![vec!["a"]])],
            0,
        );
        let s = score("X. [a][b] Y. [a, b, c]", &ids(&["a", "b", "c"]), &mut judge)
            .expect("infallible");
        assert_eq!(s.recall, Some(1.0));
        // X: a and b each entail alone: both needed. Y: a needed; b and c entail
        // nothing alone and a without them does: not needed. 3 needed of 5.
        assert_eq!(s.precision, Some(3.0 / 5.0));
        assert_eq!(s.sentences[1].not_needed, ids(&["b", "c"]));
        let none = score("No citations at all.", &ids(&["a"]), &mut judge).expect("ok");
        assert_eq!((none.recall, none.precision), (Some(0.0), None));
    }
}

/// The stored citation scores of one answer by one entailment judge.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CitationRecord {
    pub answer_id: String,
    pub run: String,
    /// The model that judged entailment.
    pub judge_model: String,
    /// SHA-256 of the entailment prompt template's text.
    pub template_sha256: String,
    pub sentences: u32,
    pub supported: u32,
    pub citations: u32,
    pub needed: u32,
    /// Supported sentences / sentences (None: an empty answer).
    pub recall: Option<f64>,
    /// Needed citations / citations (None: no citation).
    pub precision: Option<f64>,
    /// Cited ids that were not in the prompt.
    pub outside_prompt: Vec<String>,
    /// Every sentence with its citations, verdict and unneeded citations, as JSON
    /// (`[{"text", "cited", "supported", "not_needed"}]`).
    pub verdicts: String,
    pub created_at: String,
}

impl CitationScores {
    /// Needed citations (precision's numerator).
    pub fn needed(&self) -> usize {
        self.sentences
            .iter()
            .map(|s| s.cited.len() - s.not_needed.len())
            .sum()
    }

    /// The per-sentence verdicts as the JSON a [`CitationRecord`] stores.
    pub fn verdicts_json(&self) -> String {
        let rows: Vec<serde_json::Value> = self
            .sentences
            .iter()
            .map(|s| {
                serde_json::json!({
                    "text": s.text,
                    "cited": s.cited,
                    "supported": s.supported,
                    "not_needed": s.not_needed,
                })
            })
            .collect();
        serde_json::Value::Array(rows).to_string()
    }
}
