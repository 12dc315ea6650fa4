//! A judge request of a grounding and the exact JSON shape of its reply: the grammar a
//! local model samples under, the same shape as a JSON schema for a model server, and
//! the parse that checks a reply whatever produced it.

use serde_json::{Value, json};

use super::MAX_STATEMENTS;

/// The token limit of a statements reply: room for eight statements of about 60
/// tokens each. A statement has no length bound in the grammar (a bounded repetition
/// nests one grammar rule per character, which llama.cpp's sampler pays for at every
/// token); a reply cut off by the limit keeps its complete statements.
const STATEMENTS_MAX_TOKENS: usize = 32 + MAX_STATEMENTS * 60;
use crate::core::prompt::PromptText;

/// One judge request of a grounding: its step, its prompt and the shape its reply must
/// have.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgeRequest {
    pub step: Step,
    pub prompt: PromptText,
    pub shape: Shape,
}

/// The steps of a grounding, in the order they run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    AnswerStatements,
    Faithfulness,
    ReferenceStatements,
    ContextRecall,
    ContextPrecision,
    AnswerInReference,
    ReferenceInAnswer,
}

impl Step {
    /// Every step, in the order a grounding asks them (the declaration order):
    /// statements before the verdicts on them, the reference's before recall.
    pub const ORDER: [Step; 7] = [
        Step::AnswerStatements,
        Step::Faithfulness,
        Step::ReferenceStatements,
        Step::ContextRecall,
        Step::ContextPrecision,
        Step::AnswerInReference,
        Step::ReferenceInAnswer,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::AnswerStatements => "answer statements",
            Self::Faithfulness => "faithfulness",
            Self::ReferenceStatements => "reference statements",
            Self::ContextRecall => "context recall",
            Self::ContextPrecision => "context precision",
            Self::AnswerInReference => "answer statements in the reference",
            Self::ReferenceInAnswer => "reference statements in the answer",
        }
    }
}

/// The JSON a reply must be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shape {
    /// `{"statements": ["...", ...]}`, at most [`MAX_STATEMENTS`], each of one or more
    /// characters without quotes, backslashes or control characters. A reply the
    /// token limit cut off keeps its complete statements.
    Statements,
    /// `{"verdicts": [{"supported": true, "source": 2}, ...]}`, exactly `n`, `source`
    /// the supporting passage's number (1 to `passages`) or 0 for none.
    Verdicts { n: usize, passages: usize },
    /// `{"useful": [true, false, ...]}`, exactly `n`.
    Useful { n: usize },
}

/// A reply that does not have its shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the judge's reply is not {expected}: {reply:?}")]
pub struct ReplyError {
    pub expected: String,
    pub reply: String,
}

impl Shape {
    /// The GBNF grammar a local model samples under.
    pub fn grammar(&self) -> String {
        match self {
            Self::Statements => format!(
                "root ::= \"{{\\\"statements\\\": [\" (item (\", \" item){{0,{}}})? \"]}}\"\n\
                 item ::= \"\\\"\" char+ \"\\\"\"\n\
                 char ::= [^\"\\\\\\x00-\\x1f]\n",
                MAX_STATEMENTS - 1
            ),
            Self::Verdicts { n, passages } => {
                let sources: Vec<String> = (0..=*passages).map(|i| format!("\"{i}\"")).collect();
                format!(
                    "root ::= \"{{\\\"verdicts\\\": [\" {} \"]}}\"\n\
                     v ::= \"{{\\\"supported\\\": \" (\"true\" | \"false\") \", \\\"source\\\": \" src \"}}\"\n\
                     src ::= {}\n",
                    repeat_sep("v", *n),
                    sources.join(" | ")
                )
            }
            Self::Useful { n } => format!(
                "root ::= \"{{\\\"useful\\\": [\" {} \"]}}\"\nb ::= \"true\" | \"false\"\n",
                repeat_sep("b", *n)
            ),
        }
    }

    /// The same shape as a JSON schema, for a model server.
    pub fn json_schema(&self) -> Value {
        let object = |key: &str, items: Value| {
            json!({"type": "object", "properties": {key: items}, "required": [key],
                   "additionalProperties": false})
        };
        match self {
            Self::Statements => object(
                "statements",
                json!({"type": "array", "maxItems": MAX_STATEMENTS,
                       "items": {"type": "string", "minLength": 1}}),
            ),
            Self::Verdicts { n, passages } => object(
                "verdicts",
                json!({"type": "array", "minItems": n, "maxItems": n,
                       "items": {"type": "object",
                                 "properties": {"supported": {"type": "boolean"},
                                                "source": {"type": "integer", "minimum": 0, "maximum": passages}},
                                 "required": ["supported", "source"], "additionalProperties": false}}),
            ),
            Self::Useful { n } => object(
                "useful",
                json!({"type": "array", "minItems": n, "maxItems": n, "items": {"type": "boolean"}}),
            ),
        }
    }

    /// A token limit the grammar's longest reply fits in at one token a character or
    /// more (verdicts and usefulness are ASCII the grammar spells out; a statement of
    /// characters each tokenised alone, the worst English case, still fits).
    pub fn max_tokens(&self) -> usize {
        match self {
            Self::Statements => STATEMENTS_MAX_TOKENS,
            Self::Verdicts { n, passages } => 32 + n * (40 + passages.to_string().len()),
            Self::Useful { n } => 16 + n * 7,
        }
    }

    fn describe(&self) -> String {
        match self {
            Self::Statements => format!("a JSON list of at most {MAX_STATEMENTS} statements"),
            Self::Verdicts { n, passages } => {
                format!("{n} verdict(s) with a source from 0 to {passages}")
            }
            Self::Useful { n } => format!("{n} true/false value(s)"),
        }
    }
}

/// The complete statements of a statements reply the token limit cut off: the
/// longest prefix ending at a closing quote that parses once `]}` closes it.
fn salvage_statements(raw: &str) -> Option<Value> {
    let raw = raw.trim();
    if !raw.starts_with("{\"statements\": [") {
        return None;
    }
    raw.char_indices()
        .rev()
        .filter(|(_, c)| *c == '"')
        .find_map(|(i, _)| serde_json::from_str(&format!("{}]}}", &raw[..=i])).ok())
        .or_else(|| serde_json::from_str(r#"{"statements": []}"#).ok())
}

/// `item ", " item ...`, n times (an empty string for 0).
fn repeat_sep(item: &str, n: usize) -> String {
    vec![item; n].join(" \", \" ")
}

/// A parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum JudgeReply {
    Statements(Vec<String>),
    /// (supported, source passage number; 0: none).
    Verdicts(Vec<(bool, usize)>),
    Useful(Vec<bool>),
}

impl Shape {
    /// Parse `raw` as this shape (JSON; checked whatever produced it).
    pub fn parse(&self, raw: &str) -> Result<JudgeReply, ReplyError> {
        let err = || ReplyError {
            expected: self.describe(),
            reply: raw.chars().take(300).collect(),
        };
        let v: Value = match serde_json::from_str(raw.trim()) {
            Ok(v) => v,
            Err(_) if *self == Self::Statements => salvage_statements(raw).ok_or_else(err)?,
            Err(_) => return Err(err()),
        };
        match self {
            Self::Statements => {
                let items = v
                    .get("statements")
                    .and_then(Value::as_array)
                    .ok_or_else(err)?;
                if items.len() > MAX_STATEMENTS {
                    return Err(err());
                }
                let out: Option<Vec<String>> = items
                    .iter()
                    .map(|s| s.as_str().map(|s| s.trim().to_string()))
                    .collect();
                let out = out.ok_or_else(err)?;
                // A "statement" without a letter or digit ("...", "-") states nothing.
                Ok(JudgeReply::Statements(
                    out.into_iter()
                        .filter(|s| s.chars().any(char::is_alphanumeric))
                        .collect(),
                ))
            }
            Self::Verdicts { n, passages } => {
                let items = v
                    .get("verdicts")
                    .and_then(Value::as_array)
                    .ok_or_else(err)?;
                if items.len() != *n {
                    return Err(err());
                }
                let out: Option<Vec<(bool, usize)>> = items
                    .iter()
                    .map(|i| {
                        let s = i.get("supported")?.as_bool()?;
                        let src = usize::try_from(i.get("source")?.as_u64()?).ok()?;
                        (src <= *passages).then_some((s, src))
                    })
                    .collect();
                out.map(JudgeReply::Verdicts).ok_or_else(err)
            }
            Self::Useful { n } => {
                let items = v.get("useful").and_then(Value::as_array).ok_or_else(err)?;
                let out: Option<Vec<bool>> = items.iter().map(Value::as_bool).collect();
                match out {
                    Some(o) if o.len() == *n => Ok(JudgeReply::Useful(o)),
                    _ => Err(err()),
                }
            }
        }
    }
}
