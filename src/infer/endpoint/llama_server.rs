//! Prompts for llama.cpp's `llama-server` in which untrusted text stays plain.
//!
//! On `/chat/completions` llama-server applies the model's chat template to the
//! messages and tokenises the result with special tokens parsed, so a chunk holding
//! `<|im_start|>system` would open a system turn. For a llama-server raglab sends the
//! prompt as token ids instead (`/v1/completions` takes a prompt of ids): the server
//! formats messages whose untrusted spans are markers (`/apply-template`), raglab cuts
//! the result at the markers ([`crate::core::prompt_marks`]), and the server tokenises
//! the template's pieces with special tokens parsed and the spans without
//! (`/tokenize`, `parse_special: false`). The model sees the same template and the same
//! text as on `/chat/completions`; only the spans' control-token strings stay text.
//!
//! A server is taken for a llama-server when `GET /props` (at the URL without its
//! `/v1`) answers with llama-server's `default_generation_settings` and
//! `chat_template`. Other servers get `/chat/completions`: whether they parse control
//! tokens inside message content is theirs to say (vLLM and hosted APIs document
//! that they do not).

use serde_json::{Value, json};

use std::time::Duration;

use super::{Endpoint, EndpointError, read_body, read_body_within};
use crate::core::prompt::ChatMessage;
use crate::core::prompt_marks::{PromptPiece, cut_at_markers, mark_untrusted};

/// How prompts go to one server, found out on its first request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dialect {
    /// llama-server: prompts as token ids, untrusted spans tokenised as plain text.
    /// `root` is the server's URL without `/v1`, where its native routes live.
    LlamaServer { root: String },
    /// Any other OpenAI-compatible server: messages on `/chat/completions`.
    OpenAi,
}

/// Largest `/props` reply read while probing (llama-server's is a few KiB).
const PROBE_CAP: usize = 1 << 20;
/// Longest a probe waits for `/props`: llama-server answers it at once.
const PROBE_WAIT: Duration = Duration::from_secs(5);

impl Endpoint {
    /// The server's dialect, asked once (every clone of this endpoint shares the
    /// answer). A probe that gets no whole reply in time (or one over its cap) is an
    /// error, a timeout a pool may retry, and never a guess: had it fallen back to
    /// `/chat/completions`, a slow llama-server would have parsed the control tokens
    /// in untrusted text. A server that is not a llama-server and does not answer
    /// `/props` is named with `chat_route = true`. A server that cannot be reached at
    /// all is an error, as its chat request would be.
    pub async fn dialect(&self) -> Result<Dialect, EndpointError> {
        if self.spec.chat_route {
            return Ok(Dialect::OpenAi);
        }
        if let Some(d) = self.dialect.get() {
            return Ok(d.clone());
        }
        let d = self.probe_dialect().await?;
        Ok(self.dialect.get_or_init(|| d).clone())
    }

    async fn probe_dialect(&self) -> Result<Dialect, EndpointError> {
        let url = self.spec.url.trim_end_matches('/');
        let root = url.strip_suffix("/v1").unwrap_or(url).to_string();
        let wait = PROBE_WAIT
            .min(self.spec.idle_timeout)
            .min(self.spec.request_timeout);
        let req = self
            .spec
            .authorise(self.client.get(format!("{root}/props")))
            .timeout(wait);
        let unanswered = |reason: String| EndpointError::Timeout {
            url: format!(
                "{root}/props ({reason}; set chat_route = true for a server that is not a llama-server)"
            ),
            secs: wait.as_secs(),
        };
        let resp = match tokio::time::timeout(wait, req.send()).await {
            Ok(Ok(resp)) => resp,
            Ok(Err(e)) if e.is_connect() => {
                return Err(EndpointError::Connect {
                    url: self.spec.url.clone(),
                    reason: super::error_chain(&e),
                });
            }
            Ok(Err(e)) => return Err(unanswered(super::error_chain(&e))),
            Err(_) => return Err(unanswered("asking what kind of server it is".into())),
        };
        if !resp.status().is_success() {
            return Ok(Dialect::OpenAi);
        }
        let body = read_body_within(resp, &self.spec, PROBE_CAP, wait)
            .await
            .map_err(|e| unanswered(e.to_string()))?;
        let props: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let llama = props.get("default_generation_settings").is_some()
            && props.get("chat_template").is_some();
        Ok(if llama {
            Dialect::LlamaServer { root }
        } else {
            Dialect::OpenAi
        })
    }

    /// The prompt token ids of `messages` for the llama-server at `root`: the chat
    /// template's control tokens as such, every untrusted span as plain text. The text
    /// between two control tokens, template text and spans alike, is tokenised in one
    /// piece with special parsing off, as llama.cpp splits a prompt at its control
    /// tokens and tokenises each run between them: a prompt whose spans hold no
    /// control-token text gets the very ids `/chat/completions` would have used.
    pub async fn plain_prompt_tokens(
        &self,
        root: &str,
        messages: &[ChatMessage],
    ) -> Result<Vec<u64>, EndpointError> {
        let marked = mark_untrusted(messages, rand_tag());
        let msgs: Vec<Value> = marked
            .messages
            .iter()
            .map(|(role, content)| json!({"role": role, "content": content}))
            .collect();
        let formatted = self
            .post_json(
                &format!("{root}/apply-template"),
                &json!({"messages": msgs}),
            )
            .await?;
        let prompt = formatted
            .get("prompt")
            .and_then(Value::as_str)
            .ok_or_else(|| self.protocol("/apply-template answered no `prompt`".into()))?;
        let pieces = cut_at_markers(prompt, &marked).map_err(|e| self.protocol(e))?;
        // The BOS token, where the model wants one, as the server adds it to a chat
        // prompt.
        let mut ids = self.tokenize(root, "", true, true).await?;
        let mut run = String::new();
        for piece in &pieces {
            match piece {
                PromptPiece::Untrusted(t) => run.push_str(t),
                PromptPiece::Trusted(t) => {
                    for part in self.split_at_control_tokens(root, t).await? {
                        match part {
                            Part::Text(text) => run.push_str(&text),
                            Part::Control(id) => {
                                ids.extend(self.tokenize(root, &run, false, false).await?);
                                run.clear();
                                ids.push(id);
                            }
                        }
                    }
                }
            }
        }
        ids.extend(self.tokenize(root, &run, false, false).await?);
        Ok(ids)
    }

    /// Trusted text cut at its control tokens, as the server's tokeniser finds them.
    async fn split_at_control_tokens(
        &self,
        root: &str,
        text: &str,
    ) -> Result<Vec<Part>, EndpointError> {
        // A template's pieces repeat from one prompt to the next: cut each text once.
        if let Some(parts) = self.lock_splits().get(text) {
            return Ok(parts.clone());
        }
        let parts = self.find_control_tokens(root, text).await?;
        self.lock_splits().insert(text.to_string(), parts.clone());
        Ok(parts)
    }

    fn lock_splits(
        &self,
    ) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Vec<Part>>> {
        self.splits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`Self::split_at_control_tokens`] without the cache.
    async fn find_control_tokens(
        &self,
        root: &str,
        text: &str,
    ) -> Result<Vec<Part>, EndpointError> {
        let with = self.tokenize_pieces(root, text).await?;
        let plain = self.tokenize(root, text, false, false).await?;
        if with.iter().map(|(id, _)| *id).eq(plain.iter().copied()) {
            return Ok(vec![Part::Text(text.to_string())]);
        }
        let mut parts = Vec::new();
        let mut at = 0;
        for (id, piece) in with {
            if piece.is_empty() || !self.is_control(root, id, &piece).await? {
                continue;
            }
            let Some(found) = text[at..].find(&piece) else {
                return Err(self.protocol(format!(
                    "/tokenize named control token {id} `{piece}` that the text does not hold"
                )));
            };
            parts.push(Part::Text(text[at..at + found].to_string()));
            parts.push(Part::Control(id));
            at += found + piece.len();
        }
        parts.push(Part::Text(text[at..].to_string()));
        Ok(parts)
    }

    /// Whether token `id` (whose text is `piece`) is a control token: its text
    /// tokenises differently with special parsing on and off. Asked once per token
    /// and kept.
    async fn is_control(&self, root: &str, id: u64, piece: &str) -> Result<bool, EndpointError> {
        if let Some(&known) = self.lock_controls().get(&id) {
            return Ok(known);
        }
        let on = self.tokenize(root, piece, false, true).await?;
        let off = self.tokenize(root, piece, false, false).await?;
        let control = on != off;
        self.lock_controls().insert(id, control);
        Ok(control)
    }

    fn lock_controls(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<u64, bool>> {
        self.controls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Token ids of `text` (`/tokenize`).
    async fn tokenize(
        &self,
        root: &str,
        text: &str,
        add_special: bool,
        parse_special: bool,
    ) -> Result<Vec<u64>, EndpointError> {
        if text.is_empty() && !add_special {
            return Ok(Vec::new());
        }
        let body = json!({
            "content": text,
            "add_special": add_special,
            "parse_special": parse_special,
        });
        let reply = self.post_json(&format!("{root}/tokenize"), &body).await?;
        token_list(&reply)
            .ok_or_else(|| self.protocol("/tokenize answered no token list".into()))?
            .iter()
            .map(|t| {
                t.as_u64()
                    .ok_or_else(|| self.protocol(format!("/tokenize answered {t}")))
            })
            .collect()
    }

    /// Token ids of `text` with special parsing on, each with its text (`/tokenize`
    /// with pieces; a piece that is not valid UTF-8 on its own comes as an empty text,
    /// which is never a control token's).
    async fn tokenize_pieces(
        &self,
        root: &str,
        text: &str,
    ) -> Result<Vec<(u64, String)>, EndpointError> {
        let body = json!({"content": text, "parse_special": true, "with_pieces": true});
        let reply = self.post_json(&format!("{root}/tokenize"), &body).await?;
        token_list(&reply)
            .ok_or_else(|| self.protocol("/tokenize answered no token list".into()))?
            .iter()
            .map(|t| {
                let id = t.get("id").and_then(Value::as_u64);
                let piece = t.get("piece").and_then(Value::as_str).unwrap_or_default();
                id.map(|id| (id, piece.to_string()))
                    .ok_or_else(|| self.protocol(format!("/tokenize answered {t}")))
            })
            .collect()
    }

    /// POST a JSON body and read a JSON reply (within the body cap and the deadline).
    async fn post_json(&self, url: &str, body: &Value) -> Result<Value, EndpointError> {
        let req = self
            .spec
            .authorise(self.client.post(url))
            .json(body)
            .timeout(self.spec.request_timeout);
        let resp = self.send(req).await?;
        let status = resp.status();
        let text = read_body(resp, &self.spec).await?;
        if !status.is_success() {
            return Err(EndpointError::Status {
                url: url.to_string(),
                status: status.as_u16(),
                body: text.chars().take(500).collect(),
            });
        }
        serde_json::from_str(&text).map_err(|e| self.protocol(format!("{url}: not JSON: {e}")))
    }

    fn protocol(&self, reason: String) -> EndpointError {
        EndpointError::Protocol {
            url: self.spec.url.clone(),
            reason,
        }
    }
}

/// Trusted text between control tokens, or one control token.
#[derive(Debug, Clone)]
pub(super) enum Part {
    Text(String),
    Control(u64),
}

fn token_list(reply: &Value) -> Option<&Vec<Value>> {
    reply.get("tokens").and_then(Value::as_array)
}

/// A marker tag no one can predict (so text cannot be written to match it): the
/// clock's nanoseconds mixed with the process id. [`mark_untrusted`] also checks that
/// no message holds it.
fn rand_tag() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}
