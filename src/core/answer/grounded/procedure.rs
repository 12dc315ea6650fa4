//! One answer's grounding as a sequence of judge requests: which step comes next (a
//! step whose inputs do not exist is skipped), its prompt, and what each reply fills in.

use super::reply::{JudgeReply, JudgeRequest, ReplyError, Shape, Step};
use super::{GroundedDetail, StatementVerdict};
use crate::core::prompt::{PromptText, Slot, fill};
use crate::core::template::Template;

/// The three prompt templates of a grounding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroundingTemplates {
    /// Splits a text into statements (`{question}`, `{text}`).
    pub statements: Template,
    /// Judges numbered statements against numbered passages (`{passages}`,
    /// `{statements}`): faithfulness, context recall and both halves of correctness.
    pub verify: Template,
    /// Whether each numbered context was useful for the reference answer
    /// (`{question}`, `{reference}`, `{passages}`).
    pub useful: Template,
}

impl GroundingTemplates {
    /// One hash of the three texts: a grounding is resumed, and reported, per judge
    /// and per this hash.
    pub fn sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        for t in [&self.statements, &self.verify, &self.useful] {
            h.update(t.sha256.as_bytes());
            h.update(b"\n");
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// A premise the judge checks statements against (a passage a verdict can name): its
/// id, the heading the prompt shows above it, and its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Premise {
    /// A context's chunk id, or `reference` / `answer`.
    pub id: String,
    /// What the prompt shows above the text (the chunk's header path).
    pub heading: String,
    pub text: String,
}

/// What one answer's grounding reads.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundingInput {
    pub question: String,
    pub answer: String,
    pub reference: Option<String>,
    /// The contexts the answer's prompt held, in prompt order.
    pub contexts: Vec<Premise>,
    /// Ids of the prompt's contexts no longer in the corpus (the judge cannot read
    /// them; every step that reads the contexts is skipped).
    pub contexts_missing: Vec<String>,
}

/// One answer's grounding: the next judge request, and the verdicts so far.
#[derive(Debug, Clone)]
pub struct Grounding {
    input: GroundingInput,
    templates: GroundingTemplates,
    detail: GroundedDetail,
    /// The requests made and their raw replies, in order.
    pub prompts: Vec<String>,
    pub replies: Vec<String>,
    /// Each request's wall time, ms, as the back end measured it (filled by the
    /// caller, which alone sees the clock).
    pub request_ms: Vec<f64>,
    step: Option<Step>,
}

impl Grounding {
    pub fn new(input: GroundingInput, templates: GroundingTemplates) -> Self {
        let detail = GroundedDetail {
            contexts: input.contexts.iter().map(|c| c.id.clone()).collect(),
            contexts_missing: input.contexts_missing.clone(),
            ..GroundedDetail::default()
        };
        let mut g = Self {
            input,
            templates,
            detail,
            prompts: Vec::new(),
            replies: Vec::new(),
            request_ms: Vec::new(),
            step: None,
        };
        g.step = g.after(None);
        g
    }

    /// The request to send next; None when the grounding is complete.
    pub fn next_request(&self) -> Option<JudgeRequest> {
        let step = self.step?;
        let d = &self.detail;
        let reference = self.input.reference.as_deref().unwrap_or("");
        let texts = |s: &[StatementVerdict]| s.iter().map(|v| v.text.clone()).collect::<Vec<_>>();
        let one = |id: &str, text: &str| {
            vec![Premise {
                id: id.into(),
                heading: String::new(),
                text: text.into(),
            }]
        };
        let (prompt, shape) = match step {
            Step::AnswerStatements => (
                self.statements_prompt(&self.input.answer),
                Shape::Statements,
            ),
            Step::ReferenceStatements => (self.statements_prompt(reference), Shape::Statements),
            Step::Faithfulness => self.verify(&self.input.contexts, &texts(&d.answer_statements)),
            Step::ContextRecall => {
                self.verify(&self.input.contexts, &texts(&d.reference_statements))
            }
            Step::AnswerInReference => {
                self.verify(&one("reference", reference), &texts(&d.answer_statements))
            }
            Step::ReferenceInAnswer => self.verify(
                &one("answer", &self.input.answer),
                &texts(&d.reference_statements),
            ),
            Step::ContextPrecision => {
                let prompt = fill(
                    &self.templates.useful.text,
                    &[
                        ("question", Slot::Untrusted(&self.input.question)),
                        ("reference", Slot::Untrusted(reference)),
                        (
                            "passages",
                            Slot::Untrusted(&passages_block(&self.input.contexts)),
                        ),
                    ],
                );
                (
                    prompt,
                    Shape::Useful {
                        n: self.input.contexts.len(),
                    },
                )
            }
        };
        Some(JudgeRequest {
            step,
            prompt,
            shape,
        })
    }

    fn statements_prompt(&self, text: &str) -> PromptText {
        fill(
            &self.templates.statements.text,
            &[
                ("question", Slot::Untrusted(&self.input.question)),
                ("text", Slot::Untrusted(text)),
            ],
        )
    }

    fn verify(&self, passages: &[Premise], statements: &[String]) -> (PromptText, Shape) {
        let numbered: Vec<String> = statements
            .iter()
            .enumerate()
            // One line each: a statement from a server's reply may hold line breaks.
            .map(|(i, s)| {
                format!(
                    "{}. {}",
                    i + 1,
                    s.split_whitespace().collect::<Vec<_>>().join(" ")
                )
            })
            .collect();
        let prompt = fill(
            &self.templates.verify.text,
            &[
                ("passages", Slot::Untrusted(&passages_block(passages))),
                ("statements", Slot::Untrusted(&numbered.join("\n"))),
            ],
        );
        let shape = Shape::Verdicts {
            n: statements.len(),
            passages: passages.len(),
        };
        (prompt, shape)
    }

    /// Take the reply to [`Self::next_request`]'s request and move on.
    pub fn answer(&mut self, raw: &str) -> Result<(), ReplyError> {
        let Some(req) = self.next_request() else {
            return Ok(());
        };
        let reply = req.shape.parse(raw)?;
        let d = &mut self.detail;
        let verdicts =
            |ids: &[String], v: Vec<(bool, usize)>, texts: &[String]| -> Vec<StatementVerdict> {
                texts
                    .iter()
                    .zip(v)
                    .map(|(t, (s, src))| StatementVerdict {
                        text: t.clone(),
                        supported: s,
                        // A statement not supported has no supporting passage,
                        // whatever number the reply gave beside `false`.
                        source: (s && src > 0).then(|| ids[src - 1].clone()),
                    })
                    .collect()
            };
        let contexts = d.contexts.clone();
        let texts = |s: &[StatementVerdict]| s.iter().map(|v| v.text.clone()).collect::<Vec<_>>();
        match (req.step, reply) {
            (Step::AnswerStatements, JudgeReply::Statements(s)) => {
                d.answer_statements = unjudged(s);
            }
            (Step::ReferenceStatements, JudgeReply::Statements(s)) => {
                d.reference_statements = unjudged(s);
            }
            (Step::Faithfulness, JudgeReply::Verdicts(v)) => {
                d.answer_statements = verdicts(&contexts, v, &texts(&d.answer_statements));
            }
            (Step::ContextRecall, JudgeReply::Verdicts(v)) => {
                d.reference_statements = verdicts(&contexts, v, &texts(&d.reference_statements));
            }
            (Step::AnswerInReference, JudgeReply::Verdicts(v)) => {
                d.answer_in_reference = v.into_iter().map(|(s, _)| s).collect();
            }
            (Step::ReferenceInAnswer, JudgeReply::Verdicts(v)) => {
                d.reference_in_answer = v.into_iter().map(|(s, _)| s).collect();
            }
            (Step::ContextPrecision, JudgeReply::Useful(u)) => d.context_useful = u,
            _ => unreachable!("a shape's parse gives that shape's reply"),
        }
        self.prompts.push(req.prompt.text);
        self.replies.push(raw.to_string());
        self.step = self.after(Some(req.step));
        Ok(())
    }

    /// The step after `done` (None: the first) whose inputs exist.
    fn after(&self, done: Option<Step>) -> Option<Step> {
        use Step::*;
        let start = done.map_or(0, |d| {
            Step::ORDER
                .iter()
                .position(|s| *s == d)
                .map_or(Step::ORDER.len(), |i| i + 1)
        });
        let d = &self.detail;
        let has_ref = self
            .input
            .reference
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty());
        let has_ctx = !self.input.contexts.is_empty() && self.input.contexts_missing.is_empty();
        let answer_st = !d.answer_statements.is_empty();
        let ref_st = !d.reference_statements.is_empty();
        Step::ORDER[start..].iter().copied().find(|s| match s {
            AnswerStatements => !self.input.answer.trim().is_empty(),
            Faithfulness => has_ctx && answer_st,
            ReferenceStatements => has_ref,
            ContextRecall => has_ctx && ref_st,
            ContextPrecision => has_ctx && has_ref,
            // Without reference statements every answer statement is an FP: nothing
            // to ask.
            AnswerInReference => has_ref && answer_st && ref_st,
            ReferenceInAnswer => has_ref && ref_st,
        })
    }

    /// Whether the answer has a reference answer to be scored against.
    pub fn has_reference(&self) -> bool {
        self.input
            .reference
            .as_deref()
            .is_some_and(|r| !r.trim().is_empty())
    }

    /// The verdicts gathered (complete once [`Self::next_request`] is None).
    pub fn detail(&self) -> &GroundedDetail {
        &self.detail
    }
}

fn unjudged(statements: Vec<String>) -> Vec<StatementVerdict> {
    statements
        .into_iter()
        .map(|text| StatementVerdict {
            text,
            supported: false,
            source: None,
        })
        .collect()
}

/// Passages as the judge sees them: `[n] heading` then the text, separated by blank
/// lines, numbered from 1 as the verdicts' `source` names them.
fn passages_block(passages: &[Premise]) -> String {
    passages
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let head = if p.heading.is_empty() {
                format!("[{}]", i + 1)
            } else {
                format!("[{}] {}", i + 1, p.heading)
            };
            format!("{head}\n{}", p.text.trim())
        })
        .collect::<Vec<_>>()
        .join("\n\n")
}
