//! Chat prompts whose untrusted text can never become control tokens.
//!
//! llama.cpp tokenises a string either with special-token parsing on (every
//! `<|im_start|>` in it becomes the control token) or off (none does, not even the chat
//! template's own). A prompt needs both: the template's markers special, the chunks,
//! questions, options and answers inside the messages plain, since text from the
//! corpus or a model must never act as a chat-control token. So:
//!
//! 1. Every untrusted range of every message
//!    ([`crate::core::prompt::PromptText::untrusted`]) is replaced by a sentinel
//!    (`U+E000 n U+E001`, private-use characters) and the model's chat template is
//!    applied to those masked messages: untrusted text never passes through the
//!    template or through special-token parsing. A template that drops or reorders a
//!    sentinel is refused, never guessed around.
//! 2. The templated text is split at the sentinels. Its trusted parts are partitioned
//!    at special-token texts exactly as llama.cpp does (longest tokens first, honouring
//!    the lstrip/rstrip attributes); each sentinel becomes its untrusted text again.
//! 3. Every run of text between two special tokens, trusted and untrusted alike, is
//!    tokenised in one call with special parsing off.
//!
//! Step 3 keeps tokenisation where text meets text exactly as llama.cpp would do it
//! for the whole prompt: a clean prompt gives the very tokens of
//! `tokenize(prompt, parse_special = true)` (a test checks it), and SentencePiece
//! vocabularies get their space prefix only after a special token or at the start, as
//! in llama.cpp, never at the edge of an inserted value. (Tokenising each fragment on
//! its own would prefix every untrusted fragment with a space on such vocabularies
//! and split BPE pre-tokens such as `Question: How` at the edge.)
//!
//! Left as llama.cpp has it: tokens marked user-defined (not control) in a vocabulary
//! are still matched in plain text, as Hugging Face tokenizers do; chat markers are
//! control tokens in the GGUFs raglab ships with (the tests count them).
//!
//! Caveats: a special-token string that straddles an edge between template text and
//! an inserted value stays plain text (the safe side). Built-in chat templates that
//! trim message content (Llama 3, Gemma, Command-R, some Mistral variants) trim the
//! masked message, so whitespace at the very edge of a message that begins or ends
//! with an untrusted value is kept; the text shown and stored ([`Rendered::text`]) is
//! always exactly what was tokenised.

use std::fmt::Write as _;
use std::ops::Range;

use llama_cpp_2::model::{LlamaChatMessage, LlamaModel};
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::token_type::LlamaTokenAttr;

use crate::core::prompt::ChatMessage;

const OPEN: char = '\u{E000}';
const CLOSE: char = '\u{E001}';

/// One special token as llama.cpp's tokenizer matches it in text.
struct Special {
    token: LlamaToken,
    text: String,
    lstrip: bool,
    rstrip: bool,
}

/// The special tokens of a vocabulary (control, user-defined, unknown: the set
/// llama.cpp parses when special parsing is on), longest text first.
pub struct Specials(Vec<Special>);

impl Specials {
    pub fn of(model: &LlamaModel) -> Self {
        let vocab = model.vocab();
        let mut out = Vec::new();
        for id in 0..vocab.n_tokens() {
            let token = LlamaToken(id);
            let attr = vocab.attr(token);
            if !attr.intersects(
                LlamaTokenAttr::Control | LlamaTokenAttr::UserDefined | LlamaTokenAttr::Unknown,
            ) {
                continue;
            }
            let Some(text) = vocab.text(token).and_then(|t| t.to_str().ok()) else {
                continue;
            };
            if text.is_empty() {
                continue;
            }
            out.push(Special {
                token,
                text: text.to_string(),
                lstrip: attr.contains(LlamaTokenAttr::LStrip),
                rstrip: attr.contains(LlamaTokenAttr::RStrip),
            });
        }
        // Stable, so tokens of equal length keep vocabulary order.
        out.sort_by_key(|s| std::cmp::Reverse(s.text.len()));
        Self(out)
    }
}

/// Whether a token is a special token of the chat format: llama.cpp's control or
/// user-defined attribute.
pub fn is_special(model: &LlamaModel, token: LlamaToken) -> bool {
    model
        .vocab()
        .attr(token)
        .intersects(LlamaTokenAttr::Control | LlamaTokenAttr::UserDefined)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Special(LlamaToken),
    /// Text to tokenise with special parsing off (a byte range of the prompt).
    Text(Range<usize>),
}

/// A templated chat prompt: its exact text and how it is tokenised.
pub struct Rendered {
    pub text: String,
    pieces: Vec<Piece>,
}

impl Rendered {
    pub fn tokens(&self, model: &LlamaModel) -> Vec<LlamaToken> {
        let vocab = model.vocab();
        let mut out = Vec::new();
        for p in &self.pieces {
            match p {
                Piece::Special(t) => out.push(*t),
                // No BOS added: the template holds what the model needs.
                Piece::Text(r) => {
                    vocab.tokenize_into(self.text[r.clone()].as_bytes(), &mut out, false, false)
                }
            }
        }
        out
    }

    fn push_text(&mut self, s: &str) {
        let start = self.text.len();
        self.text.push_str(s);
        let end = self.text.len();
        if start == end {
            return;
        }
        match self.pieces.last_mut() {
            Some(Piece::Text(r)) if r.end == start => r.end = end,
            _ => self.pieces.push(Piece::Text(start..end)),
        }
    }

    /// Append trusted text, partitioned at special tokens as llama.cpp does.
    fn push_trusted(&mut self, s: &str, specials: &Specials) {
        for frag in partition(s, specials) {
            match frag {
                Frag::Raw(r) => self.push_text(&s[r]),
                // The text keeps the whitespace an lstrip/rstrip token swallows.
                Frag::Tok(t, r) => {
                    self.text.push_str(&s[r]);
                    self.pieces.push(Piece::Special(t));
                }
                Frag::Skipped(r) => self.text.push_str(&s[r]),
            }
        }
    }
}

/// Apply the model's chat template to `messages`, keeping every untrusted range out of
/// special-token parsing (see the module comment).
pub fn render(
    model: &LlamaModel,
    specials: &Specials,
    messages: &[ChatMessage],
) -> Result<Rendered, String> {
    let tmpl = model.chat_template(None).map_err(|_| {
        "the model has no chat template; choose an instruction-tuned GGUF".to_string()
    })?;
    let mut values: Vec<&str> = Vec::new();
    let mut chat = Vec::with_capacity(messages.len());
    for m in messages {
        let text = &m.content.text;
        let mut masked = String::with_capacity(text.len());
        let mut at = 0;
        for r in &m.content.untrusted {
            let (Some(before), Some(value)) = (text.get(at..r.start), text.get(r.clone())) else {
                return Err(format!(
                    "bad untrusted range {r:?} in a message of {} bytes",
                    text.len()
                ));
            };
            masked.push_str(before);
            let _ = write!(masked, "{OPEN}{}{CLOSE}", values.len());
            values.push(value);
            at = r.end;
        }
        masked.push_str(&text[at..]);
        chat.push(LlamaChatMessage::new(m.role.clone(), masked).map_err(|e| e.to_string())?);
    }
    let templated = model
        .apply_chat_template(&tmpl, &chat, true)
        .map_err(|e| e.to_string())?;
    let mut out = Rendered {
        text: String::with_capacity(
            templated.len() + values.iter().map(|v| v.len()).sum::<usize>(),
        ),
        pieces: Vec::new(),
    };
    let mut rest = templated.as_str();
    let mut next = 0usize;
    while let Some((before, index, after)) = next_sentinel(rest) {
        if index != next {
            return Err(format!(
                "the chat template reordered or dropped untrusted text (found part {index}, expected {next})"
            ));
        }
        out.push_trusted(before, specials);
        out.push_text(values[index]);
        next += 1;
        rest = after;
    }
    if next != values.len() {
        return Err(format!(
            "the chat template dropped untrusted text ({next} of {} parts)",
            values.len()
        ));
    }
    out.push_trusted(rest, specials);
    Ok(out)
}

/// The first sentinel in `s`: the text before it, its index and the text after.
fn next_sentinel(s: &str) -> Option<(&str, usize, &str)> {
    let mut from = 0;
    while let Some(i) = s[from..].find(OPEN).map(|i| i + from) {
        let body = &s[i + OPEN.len_utf8()..];
        let digits = body
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(body.len());
        if digits > 0
            && body[digits..].starts_with(CLOSE)
            && let Ok(n) = body[..digits].parse()
        {
            return Some((&s[..i], n, &body[digits + CLOSE.len_utf8()..]));
        }
        from = i + OPEN.len_utf8();
    }
    None
}

enum Frag {
    Raw(Range<usize>),
    /// A special token and the text it stands for.
    Tok(LlamaToken, Range<usize>),
    /// Whitespace an lstrip/rstrip token swallowed (in the text, not tokenised).
    Skipped(Range<usize>),
}

/// llama.cpp's `tokenizer_st_partition`: for each special token, longest first, split
/// every raw fragment at each of its occurrences.
fn partition(text: &str, specials: &Specials) -> Vec<Frag> {
    // C's isspace.
    let space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
    let bytes = text.as_bytes();
    let mut frags = vec![Frag::Raw(0..text.len())];
    if text.is_empty() {
        return Vec::new();
    }
    for sp in &specials.0 {
        if !frags
            .iter()
            .any(|f| matches!(f, Frag::Raw(r) if text[r.clone()].contains(sp.text.as_str())))
        {
            continue;
        }
        let mut out = Vec::with_capacity(frags.len() + 2);
        for f in frags {
            let Frag::Raw(mut r) = f else {
                out.push(f);
                continue;
            };
            while let Some(pos) = text[r.clone()].find(sp.text.as_str()) {
                let m = r.start + pos;
                let mut left = m;
                if sp.lstrip {
                    while left > r.start && space(bytes[left - 1]) {
                        left -= 1;
                    }
                }
                if left > r.start {
                    out.push(Frag::Raw(r.start..left));
                }
                if left < m {
                    out.push(Frag::Skipped(left..m));
                }
                let end = m + sp.text.len();
                out.push(Frag::Tok(sp.token, m..end));
                let mut right = end;
                if sp.rstrip {
                    while right < r.end && space(bytes[right]) {
                        right += 1;
                    }
                }
                if right > end {
                    out.push(Frag::Skipped(end..right));
                }
                r = right..r.end;
                if r.is_empty() {
                    break;
                }
            }
            if !r.is_empty() {
                out.push(Frag::Raw(r));
            }
        }
        frags = out;
    }
    frags
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentinels_are_found_in_order_and_strays_ignored() {
        let s = format!("a{OPEN}x{CLOSE}b{OPEN}12{CLOSE}c");
        let (before, n, after) = next_sentinel(&s).expect("one");
        assert_eq!((before, n, after), (&*format!("a{OPEN}x{CLOSE}b"), 12, "c"));
        assert!(next_sentinel("plain").is_none());
        assert!(next_sentinel(&format!("{OPEN}3")).is_none());
    }
}
