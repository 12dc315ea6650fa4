//! Prompt assembly: the top-k fused chunks, each with its chunk id and a
//! separator, in a context block; the question; an instruction to answer from the
//! context. The context block respects a token budget (default 10,000) counted with the
//! generator's tokenizer, which the caller passes in as a function: chunks that do not
//! fit are dropped from the end (lowest ranks first) and the drop is reported.

use serde::Serialize;

pub const DEFAULT_CONTEXT_BUDGET: usize = 10_000;
pub const FREE_FORM: &str = include_str!("../../assets/prompts/free-form.txt");
pub const MULTIPLE_CHOICE: &str = include_str!("../../assets/prompts/multiple-choice.txt");
/// The multiple-choice baseline without retrieved context (k = 0).
pub const MULTIPLE_CHOICE_NO_CONTEXT: &str =
    include_str!("../../assets/prompts/multiple-choice-no-context.txt");
pub const CHUNK_SEPARATOR: &str = "\n---\n";

/// A chunk offered to the prompt, in fused rank order.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ContextChunk {
    pub id: String,
    pub rank: usize,
    /// Header path label, prepended like in the index.
    pub path: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Prompt {
    /// The filled template (the user message).
    pub text: String,
    /// (chunk id, rank) in the prompt, in order.
    pub included: Vec<(String, usize)>,
    /// (chunk id, rank) dropped for the budget.
    pub dropped: Vec<(String, usize)>,
    pub context_tokens: usize,
}

/// How one chunk appears in the context block.
pub fn render_chunk(c: &ContextChunk) -> String {
    format!("[chunk {}] {}\n{}", c.id, c.path, c.text.trim())
}

/// Fill `template` (`{context}`, `{question}`, optional `{options}`) under `budget`
/// context tokens as counted by `count_tokens`.
pub fn assemble(
    template: &str,
    question: &str,
    chunks: &[ContextChunk],
    budget: usize,
    count_tokens: &dyn Fn(&str) -> usize,
) -> Prompt {
    let mut block = String::new();
    let mut included = Vec::new();
    let mut dropped = Vec::new();
    let mut used = 0;
    for (i, c) in chunks.iter().enumerate() {
        let piece = if block.is_empty() {
            render_chunk(c)
        } else {
            format!("{CHUNK_SEPARATOR}{}", render_chunk(c))
        };
        let cost = count_tokens(&piece);
        if dropped.is_empty() && used + cost <= budget {
            block.push_str(&piece);
            used += cost;
            included.push((c.id.clone(), c.rank));
        } else {
            dropped.extend(chunks[i..].iter().map(|c| (c.id.clone(), c.rank)));
            break;
        }
    }
    let context = if block.is_empty() {
        "(no guidance retrieved)".to_string()
    } else {
        block
    };
    let text = template
        .replace("{context}", &context)
        .replace("{question}", question.trim());
    Prompt {
        text,
        included,
        dropped,
        context_tokens: used,
    }
}

/// The same question with no context at all (the "LLM only" baseline of the frugality score).
pub fn no_retrieval(question: &str) -> String {
    format!(
        "You are a public-health assistant. Answer the question.\n\nQuestion: {}\n\nAnswer:\n",
        question.trim()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, rank: usize, words: usize) -> ContextChunk {
        ContextChunk {
            id: id.into(),
            rank,
            path: format!("Doc > {id}"),
            text: "w ".repeat(words),
        }
    }

    /// A hand-countable tokenizer: one token per whitespace-separated word.
    fn words(s: &str) -> usize {
        s.split_whitespace().count()
    }

    #[test]
    fn everything_fits() {
        let p = assemble(
            "C:\n{context}\nQ: {question}",
            " Why? ",
            &[chunk("a", 1, 3), chunk("b", 2, 3)],
            100,
            &words,
        );
        assert_eq!(p.included, vec![("a".into(), 1), ("b".into(), 2)]);
        assert!(p.dropped.is_empty());
        assert!(
            p.text.starts_with(
                "C:\n[chunk a] Doc > a\nw w w\n---\n[chunk b] Doc > b\nw w w\nQ: Why?"
            )
        );
        // "[chunk a] Doc > a" is 5 words + 3 = 8; the second piece adds "---": 9
        assert_eq!(p.context_tokens, 17);
    }

    #[test]
    fn drops_from_the_end_when_over_budget() {
        // costs: a = 5 + 10 = 15, b = 1 + 15 = 16, c = 16
        let chunks = [chunk("a", 1, 10), chunk("b", 2, 10), chunk("c", 3, 10)];
        let p = assemble("{context}|{question}", "q", &chunks, 31, &words);
        assert_eq!(p.included, vec![("a".into(), 1), ("b".into(), 2)]);
        assert_eq!(p.dropped, vec![("c".into(), 3)]);
        assert_eq!(p.context_tokens, 31);
        // A chunk that does not fit also drops everything after it, even smaller ones.
        let chunks = [chunk("a", 1, 10), chunk("big", 2, 50), chunk("c", 3, 1)];
        let p = assemble("{context}", "q", &chunks, 40, &words);
        assert_eq!(p.dropped, vec![("big".into(), 2), ("c".into(), 3)]);
        let p = assemble("{context}", "q", &chunks, 5, &words);
        assert!(p.included.is_empty());
        assert!(p.text.contains("no guidance retrieved"));
    }

    #[test]
    fn templates_have_their_placeholders() {
        assert!(FREE_FORM.contains("{context}") && FREE_FORM.contains("{question}"));
        assert!(MULTIPLE_CHOICE.contains("{options}"));
        assert!(
            MULTIPLE_CHOICE_NO_CONTEXT.contains("{options}")
                && !MULTIPLE_CHOICE_NO_CONTEXT.contains("{context}")
        );
    }
}
