//! OpenAI-compatible model servers over HTTP: llama.cpp's `llama-server`, vLLM, hosted
//! APIs. One [`Endpoint`] streams `/chat/completions` (server-sent events) and reports
//! the served model (the response's `model` field) and the same figures as the local
//! generator ([`GenStats`]: time to first token measured here, token counts from the
//! server's `usage`, llama.cpp's own rates from its `timings` when it sends them).
//!
//! An answer is complete only when the stream says so (a `finish_reason` or
//! `data: [DONE]`): a stream cut short (a server killed mid-answer) is an error, never
//! a short answer. Errors say whether trying again may help ([`EndpointError::retryable`]);
//! retrying and spreading requests over several endpoints is the caller's work (the
//! pool in `service::pool`).
//!
//! Untrusted text: the server applies its chat template and tokenises the prompt, so
//! raglab cannot keep chat-control tokens in a chunk from being parsed as such there
//! (llama-server parses special tokens in message content); a local model can.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::prompt::ChatMessage;
use crate::core::sampling::Sampling;
use crate::infer::generate::GenStats;

/// How to reach one server.
#[derive(Debug, Clone)]
pub struct EndpointSpec {
    /// Base URL, the part before `/chat/completions` (e.g. `http://127.0.0.1:8080/v1`).
    pub url: String,
    pub model: Option<String>,
    pub api_key: Option<String>,
    pub max_concurrent: usize,
    /// Longest wait for the next byte of a response.
    pub idle_timeout: Duration,
    /// Context window of the served model (prompt budget).
    pub context_tokens: usize,
    /// Only OpenAI's standard sampling fields.
    pub standard_sampling: bool,
}

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    #[error("{url}: cannot connect: {reason}")]
    Connect { url: String, reason: String },
    #[error("{url}: no response for {secs} s")]
    Timeout { url: String, secs: u64 },
    #[error("{url}: HTTP {status}: {body}")]
    Status {
        url: String,
        status: u16,
        body: String,
    },
    #[error("{url}: the stream broke off: {reason}")]
    Broken { url: String, reason: String },
    #[error("{url}: unexpected reply: {reason}")]
    Protocol { url: String, reason: String },
    #[error("{url}: invalid endpoint: {reason}")]
    Config { url: String, reason: String },
}

impl EndpointError {
    /// Whether the same request may succeed later or elsewhere: connection failures,
    /// timeouts, broken streams, 408, 409, 429 and 5xx. Other 4xx replies and
    /// malformed endpoints are the request's or the configuration's fault.
    pub fn retryable(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Timeout { .. } | Self::Broken { .. } => true,
            Self::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            Self::Protocol { .. } | Self::Config { .. } => false,
        }
    }
}

/// A finished reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatReply {
    pub text: String,
    /// The `model` field of the response (what the server says it ran).
    pub served_model: String,
    pub finish_reason: Option<String>,
    pub stats: GenStats,
}

/// Output constraint for a request.
#[derive(Debug, Clone)]
pub enum Constraint {
    /// A JSON schema, sent as OpenAI's `response_format` (llama-server turns it into a
    /// grammar).
    JsonSchema { name: String, schema: Value },
}

/// One OpenAI-compatible server.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub spec: EndpointSpec,
    client: reqwest::Client,
}

impl Endpoint {
    pub fn new(spec: EndpointSpec) -> Result<Self, EndpointError> {
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .build()
            .map_err(|e| EndpointError::Config {
                url: spec.url.clone(),
                reason: e.to_string(),
            })?;
        Ok(Self { spec, client })
    }

    fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.spec.url.trim_end_matches('/'))
    }

    /// The request body of a chat completion (also what provenance stores as the
    /// prompt: the messages exactly as sent).
    pub fn body(
        &self,
        messages: &[ChatMessage],
        s: &Sampling,
        constraint: Option<&Constraint>,
    ) -> Value {
        let msgs: Vec<Value> = messages
            .iter()
            .map(|m| json!({"role": m.role, "content": m.content.text}))
            .collect();
        let mut b = json!({
            "messages": msgs,
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": s.temperature,
            "top_p": s.top_p,
            "max_tokens": s.max_tokens,
            "seed": s.seed,
        });
        if let Some(m) = &self.spec.model {
            b["model"] = json!(m);
        }
        if !self.spec.standard_sampling {
            b["top_k"] = json!(s.top_k);
            b["min_p"] = json!(s.min_p);
            b["repeat_penalty"] = json!(s.repeat_penalty);
            b["repeat_last_n"] = json!(s.repeat_last_n);
        }
        if let Some(Constraint::JsonSchema { name, schema }) = constraint {
            b["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": name, "strict": true, "schema": schema},
            });
        }
        b
    }

    /// The model ids the server lists (`GET /models`).
    pub async fn models(&self) -> Result<Vec<String>, EndpointError> {
        let url = self.spec.url.clone();
        let mut req = self
            .client
            .get(format!("{}/models", url.trim_end_matches('/')));
        if let Some(k) = &self.spec.api_key {
            req = req.bearer_auth(k);
        }
        let idle = self.spec.idle_timeout;
        let resp = tokio::time::timeout(idle, req.send())
            .await
            .map_err(|_| EndpointError::Timeout {
                url: url.clone(),
                secs: idle.as_secs(),
            })?
            .map_err(|e| EndpointError::Connect {
                url: url.clone(),
                reason: error_chain(&e),
            })?;
        let status = resp.status();
        let body = tokio::time::timeout(idle, resp.text())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        if !status.is_success() {
            return Err(EndpointError::Status {
                url,
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        let v: Value = serde_json::from_str(&body).map_err(|e| EndpointError::Protocol {
            url: url.clone(),
            reason: format!("the model list is not JSON: {e}"),
        })?;
        Ok(v.get("data")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("id").and_then(Value::as_str).map(str::to_string))
            .collect())
    }

    /// Stream one chat completion; `on_token` gets each piece of text as it arrives.
    /// Setting `stop` ends the stream (the server stops when the connection closes)
    /// and returns the partial answer marked stopped.
    pub async fn chat(
        &self,
        messages: &[ChatMessage],
        sampling: &Sampling,
        constraint: Option<&Constraint>,
        stop: &AtomicBool,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ChatReply, EndpointError> {
        let url = self.spec.url.clone();
        let started = Instant::now();
        let mut req = self
            .client
            .post(self.chat_url())
            .json(&self.body(messages, sampling, constraint));
        if let Some(k) = &self.spec.api_key {
            req = req.bearer_auth(k);
        }
        let idle = self.spec.idle_timeout;
        let timeout = || EndpointError::Timeout {
            url: url.clone(),
            secs: idle.as_secs(),
        };
        let resp = tokio::time::timeout(idle, req.send())
            .await
            .map_err(|_| timeout())?
            .map_err(|e| EndpointError::Connect {
                url: url.clone(),
                reason: error_chain(&e),
            })?;
        let status = resp.status();
        if !status.is_success() {
            let body = tokio::time::timeout(idle, resp.text())
                .await
                .ok()
                .and_then(Result::ok)
                .unwrap_or_default();
            return Err(EndpointError::Status {
                url,
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        let mut resp = resp;
        let mut sse = Sse::default();
        let mut first: Option<Instant> = None;
        let mut stopped = false;
        while !sse.done {
            if stop.load(Ordering::Relaxed) {
                stopped = true;
                break;
            }
            let chunk = tokio::time::timeout(idle, resp.chunk())
                .await
                .map_err(|_| timeout())?
                .map_err(|e| EndpointError::Broken {
                    url: url.clone(),
                    reason: error_chain(&e),
                })?;
            let Some(bytes) = chunk else { break };
            for piece in sse.feed(&bytes).map_err(|reason| EndpointError::Protocol {
                url: url.clone(),
                reason,
            })? {
                first.get_or_insert_with(Instant::now);
                on_token(&piece);
            }
        }
        if !stopped && !sse.finished() {
            return Err(EndpointError::Broken {
                url,
                reason: "the connection closed before the answer was finished".into(),
            });
        }
        let end = Instant::now();
        let first = first.unwrap_or(end);
        let n_out = sse.completion_tokens.unwrap_or(sse.deltas);
        let gen_s = end.duration_since(first).as_secs_f64();
        let stats = GenStats {
            prompt_tokens: sse.prompt_tokens.unwrap_or(0),
            output_tokens: n_out,
            ttft_ms: first.duration_since(started).as_secs_f64() * 1e3,
            prompt_tokens_per_s: sse.prompt_per_s.unwrap_or(0.0),
            gen_tokens_per_s: if gen_s > 0.0 && n_out > 1 {
                (n_out - 1) as f64 / gen_s
            } else {
                0.0
            },
            total_ms: end.duration_since(started).as_secs_f64() * 1e3,
            stopped,
            cached_tokens: sse.cached.unwrap_or(0),
            llama_prompt_tokens_per_s: sse.prompt_per_s.unwrap_or(0.0),
            llama_gen_tokens_per_s: sse.gen_per_s.unwrap_or(0.0),
        };
        Ok(ChatReply {
            text: sse.text,
            served_model: sse.model.unwrap_or_default(),
            finish_reason: sse.finish_reason,
            stats,
        })
    }
}

/// An error with its sources ("error sending request: connection refused").
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut src = e.source();
    while let Some(c) = src {
        s.push_str(": ");
        s.push_str(&c.to_string());
        src = c.source();
    }
    s
}

/// The state of a server-sent-event stream of chat completion chunks.
#[derive(Debug, Default)]
struct Sse {
    buf: Vec<u8>,
    text: String,
    model: Option<String>,
    finish_reason: Option<String>,
    prompt_tokens: Option<usize>,
    completion_tokens: Option<usize>,
    cached: Option<usize>,
    prompt_per_s: Option<f64>,
    gen_per_s: Option<f64>,
    deltas: usize,
    done: bool,
}

impl Sse {
    /// Take bytes of the stream; returns the text pieces of the complete events in
    /// them. Lines are split at `\n` only, so a UTF-8 character split across chunks
    /// is joined before it is decoded.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        while let Some(nl) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=nl).collect();
            let line = std::str::from_utf8(&line)
                .map_err(|e| format!("invalid UTF-8 in the stream: {e}"))?
                .trim_end_matches(['\r', '\n']);
            let Some(data) = line.strip_prefix("data:") else {
                continue; // blank separators, comments, `event:` lines
            };
            let data = data.trim_start();
            if data == "[DONE]" {
                self.done = true;
                continue;
            }
            if let Some(piece) = self.event(data)? {
                out.push(piece);
            }
        }
        Ok(out)
    }

    fn event(&mut self, data: &str) -> Result<Option<String>, String> {
        let v: Value = serde_json::from_str(data)
            .map_err(|e| format!("an event is not JSON ({e}): {data:.200}"))?;
        if let Some(err) = v.get("error") {
            return Err(format!("the server reported an error: {err}"));
        }
        if let Some(m) = v.get("model").and_then(Value::as_str)
            && !m.is_empty()
        {
            self.model = Some(m.to_string());
        }
        let count = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64).map(|n| n as usize);
        if let Some(u) = v.get("usage").filter(|u| u.is_object()) {
            self.prompt_tokens = count(u, "prompt_tokens").or(self.prompt_tokens);
            self.completion_tokens = count(u, "completion_tokens").or(self.completion_tokens);
            if let Some(d) = u.get("prompt_tokens_details") {
                self.cached = count(d, "cached_tokens").or(self.cached);
            }
        }
        // llama.cpp's own figures.
        if let Some(t) = v.get("timings").filter(|t| t.is_object()) {
            self.prompt_per_s = t
                .get("prompt_per_second")
                .and_then(Value::as_f64)
                .or(self.prompt_per_s);
            self.gen_per_s = t
                .get("predicted_per_second")
                .and_then(Value::as_f64)
                .or(self.gen_per_s);
            self.cached = count(t, "cache_n").or(self.cached);
        }
        let Some(choice) = v.get("choices").and_then(|c| c.get(0)) else {
            return Ok(None);
        };
        if let Some(r) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish_reason = Some(r.to_string());
        }
        let piece = choice
            .get("delta")
            .and_then(|d| d.get("content"))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if let Some(p) = &piece {
            self.deltas += 1;
            self.text.push_str(p);
        }
        Ok(piece)
    }
}

impl Sse {
    /// The answer is whole: `[DONE]` seen, or a finish reason (OpenAI sends the usage
    /// after the finishing chunk, then `[DONE]`; a server that closes after the finish
    /// reason still finished).
    fn finished(&self) -> bool {
        self.done || self.finish_reason.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_joined() {
        let stream = "data: {\"model\":\"m.gguf\",\"choices\":[{\"delta\":{\"content\":\"H\u{e9}\"}}]}\n\n\
            : keep-alive\n\n\
            data: {\"choices\":[{\"delta\":{\"content\":\"llo\"},\"finish_reason\":null}]}\r\n\r\n\
            data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3},\"timings\":{\"prompt_per_second\":100.5,\"predicted_per_second\":40.0,\"cache_n\":2}}\n\n\
            data: [DONE]\n\n";
        let bytes = stream.as_bytes();
        // Every split point, the one inside `é` included.
        for cut in 0..bytes.len() {
            let mut s = Sse::default();
            let mut pieces = s.feed(&bytes[..cut]).expect("first half");
            pieces.extend(s.feed(&bytes[cut..]).expect("second half"));
            assert_eq!(pieces.concat(), "H\u{e9}llo");
            assert_eq!(s.text, "H\u{e9}llo");
            assert!(s.done && s.finished());
            assert_eq!(s.model.as_deref(), Some("m.gguf"));
            assert_eq!((s.prompt_tokens, s.completion_tokens), (Some(12), Some(3)));
            assert_eq!(s.finish_reason.as_deref(), Some("stop"));
            assert_eq!((s.prompt_per_s, s.cached), (Some(100.5), Some(2)));
        }
    }

    #[test]
    fn a_stream_without_an_end_is_not_finished_and_errors_are_reported() {
        let mut s = Sse::default();
        s.feed(b"data: {\"choices\":[{\"delta\":{\"content\":\"partial\"}}]}\n\n")
            .expect("event");
        assert!(!s.finished());
        let mut s = Sse::default();
        assert!(
            s.feed(b"data: {\"error\":{\"message\":\"boom\"}}\n")
                .is_err()
        );
        assert!(Sse::default().feed(b"data: {not json\n").is_err());
    }

    #[test]
    fn retry_only_what_may_succeed_later() {
        let status = |status| EndpointError::Status {
            url: "u".into(),
            status,
            body: String::new(),
        };
        assert!(status(503).retryable() && status(429).retryable());
        assert!(!status(400).retryable() && !status(401).retryable());
        assert!(
            EndpointError::Broken {
                url: "u".into(),
                reason: "r".into()
            }
            .retryable()
        );
    }
}
