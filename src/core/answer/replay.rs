//! Replaying a stored answer at its recorded speed, without the model that wrote it
//! (a demo on a machine without the generator).
//!
//! The model's tokenizer is not available, so the text is cut without it: into
//! pieces at whitespace boundaries (each word keeps the whitespace that follows it,
//! so the pieces concatenate to the exact stored text), spread evenly over as many
//! time slots as the answer had output tokens. Slot 0 comes at the recorded time to
//! first token, each later slot one recorded token interval (1 / generation tokens
//! per second) after the one before, so the replay lasts what the generation lasted:
//! `ttft + (tokens - 1) / rate`. With fewer words than tokens some slots carry no
//! text (their time still passes); with more, a slot carries several words.

/// When (milliseconds after the start) each piece of text appears.
#[derive(Debug, Clone, PartialEq)]
pub struct Piece {
    pub at_ms: f64,
    pub text: String,
}

/// The text cut after each run of whitespace: `"a b  c"` -> `["a ", "b  ", "c"]`.
pub fn words_with_space(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = false;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space && !space {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = space;
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// The replay schedule of `text`, recorded with `tokens` output tokens, time to first
/// token `ttft_ms` and generation rate `tokens_per_s` (over the tokens after the
/// first; 0 or less when unknown: the later tokens then come all at once). Empty
/// slots are left out, so with fewer words than tokens the last word may come
/// before [`duration_ms`]; the replay still lasts that long.
pub fn schedule(text: &str, tokens: u32, ttft_ms: f64, tokens_per_s: f64) -> Vec<Piece> {
    let words = words_with_space(text);
    let slots = (tokens as usize).max(1);
    let step_ms = if tokens_per_s > 0.0 {
        1e3 / tokens_per_s
    } else {
        0.0
    };
    let ttft = ttft_ms.max(0.0);
    (0..slots)
        .filter_map(|j| {
            // Slot j carries words [ceil(j*W/n), ceil((j+1)*W/n)): every word once,
            // in order, the first in slot 0 (at the time to first token).
            let ceil = |j: usize| (j * words.len()).div_ceil(slots);
            let (from, to) = (ceil(j), ceil(j + 1));
            (from < to).then(|| Piece {
                at_ms: ttft + j as f64 * step_ms,
                text: words[from..to].concat(),
            })
        })
        .collect()
}

/// How long a replay of these recordings lasts, in milliseconds.
pub fn duration_ms(tokens: u32, ttft_ms: f64, tokens_per_s: f64) -> f64 {
    let later = f64::from(tokens.max(1) - 1);
    ttft_ms.max(0.0)
        + if tokens_per_s > 0.0 {
            later * 1e3 / tokens_per_s
        } else {
            0.0
        }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_concatenate_to_the_text() {
        let text = "  Wash hands\noften,  with soap. ";
        for tokens in [1, 2, 3, 5, 8, 40] {
            let s = schedule(text, tokens, 100.0, 10.0);
            let joined: String = s.iter().map(|p| p.text.as_str()).collect();
            assert_eq!(joined, text, "tokens {tokens}");
            assert!(s.windows(2).all(|w| w[0].at_ms < w[1].at_ms));
        }
        assert_eq!(
            words_with_space("a b  c"),
            vec!["a ", "b  ", "c"],
            "whitespace stays with the word before it"
        );
    }

    /// Hand-computed: 4 words over 8 tokens at 20 tok/s after a 300 ms first token:
    /// slots every 50 ms, words in slots 0, 2, 4, 6 (ceil(j/2) < ceil((j+1)/2) for
    /// even j); the replay lasts 300 + 7 * 50 = 650 ms.
    #[test]
    fn timing_follows_the_recording() {
        let s = schedule("one two three four", 8, 300.0, 20.0);
        let at: Vec<f64> = s.iter().map(|p| p.at_ms).collect();
        assert_eq!(at, vec![300.0, 400.0, 500.0, 600.0]);
        assert_eq!(duration_ms(8, 300.0, 20.0), 650.0);
        // More words than tokens: 2 slots, first at the TTFT, words split 2/2.
        let s = schedule("one two three four", 2, 10.0, 4.0);
        assert_eq!(
            s,
            vec![
                Piece {
                    at_ms: 10.0,
                    text: "one two ".into()
                },
                Piece {
                    at_ms: 260.0,
                    text: "three four".into()
                }
            ]
        );
        assert!(schedule("", 5, 1.0, 1.0).is_empty());
        assert_eq!(duration_ms(0, 5.0, 0.0), 5.0);
    }
}
