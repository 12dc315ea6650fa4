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
//! pool in `service::base::pool`).
//!
//! Untrusted text: on `/chat/completions` the server applies its chat template and
//! tokenises the prompt, and llama-server parses special tokens in message content. To
//! a llama-server raglab therefore sends the prompt as token ids in which untrusted
//! spans are plain text ([`llama_server`]); other servers get `/chat/completions`.

mod llama_server;

pub use llama_server::Dialect;

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::core::prompt::ChatMessage;
use crate::core::sampling::Sampling;
use crate::infer::generate::GenStats;

/// How to reach one server. `Debug` prints no secret (the API key and any basic-auth
/// password are shown as set or not), since specs reach logs and error reports.
#[derive(Clone)]
pub struct EndpointSpec {
    /// Base URL, the part before `/chat/completions` (e.g. `http://127.0.0.1:8080/v1`),
    /// without credentials: this is what errors and provenance name.
    pub url: String,
    pub model: Option<String>,
    pub api_key: Option<String>,
    /// User and password taken out of a `user:pass@host` URL, sent as basic auth.
    pub basic_auth: Option<(String, String)>,
    pub max_concurrent: usize,
    /// Longest wait for the next byte of a response.
    pub idle_timeout: Duration,
    /// Longest time one request may take from send to its last byte: a server that
    /// trickles bytes forever never trips the idle timeout, and would hold a batch
    /// (or a Generate pane) forever without this.
    pub request_timeout: Duration,
    /// Context window of the served model (prompt budget).
    pub context_tokens: usize,
    /// Only OpenAI's standard sampling fields.
    pub standard_sampling: bool,
    /// Messages on `/chat/completions` even to a llama-server (no probe, no prompt
    /// token ids): its control tokens in untrusted text are then parsed.
    pub chat_route: bool,
}

impl std::fmt::Debug for EndpointSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EndpointSpec")
            .field("url", &self.url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "<set>"))
            .field(
                "basic_auth",
                &self.basic_auth.as_ref().map(|(user, _)| (user, "<set>")),
            )
            .field("max_concurrent", &self.max_concurrent)
            .field("idle_timeout", &self.idle_timeout)
            .field("request_timeout", &self.request_timeout)
            .field("context_tokens", &self.context_tokens)
            .field("standard_sampling", &self.standard_sampling)
            .field("chat_route", &self.chat_route)
            .finish()
    }
}

impl EndpointSpec {
    /// A spec for `url` with the defaults of a config entry that names nothing else.
    pub fn new(url: impl Into<String>) -> Self {
        Self {
            url: url.into(),
            model: None,
            api_key: None,
            basic_auth: None,
            max_concurrent: 1,
            idle_timeout: Duration::from_secs(120),
            request_timeout: Duration::from_secs(600),
            context_tokens: 8192,
            standard_sampling: false,
            chat_route: false,
        }
    }

    /// Add this server's credentials to a request.
    pub fn authorise(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let req = match &self.basic_auth {
            Some((user, pass)) => req.basic_auth(user, Some(pass)),
            None => req,
        };
        match &self.api_key {
            Some(k) => req.bearer_auth(k),
            None => req,
        }
    }
}

/// Largest body raglab reads from a reply that is not a stream (a model list, an error
/// message, an embedding batch): a server that sends more is refused, not buffered.
pub const MAX_BODY_BYTES: usize = 64 << 20;
/// Largest line of a server-sent-event stream: one event carries one token's text and
/// its figures, a few hundred bytes; a longer line is a broken or hostile server.
pub const MAX_EVENT_BYTES: usize = 1 << 20;

/// Most text pieces an answer may stream for `max_tokens`: servers send one piece per
/// token (sometimes a few more around multi-byte characters), so twice the limit plus
/// a margin is never reached by a server that honours `max_tokens`, and stops one
/// that ignores it.
pub fn max_pieces(max_tokens: usize) -> usize {
    max_tokens.saturating_mul(2).saturating_add(16)
}

/// Most lines (events, blank separators, comments) a stream may send for
/// `max_tokens`: two lines per piece, twice over, and 4,096 more for keep-alive
/// comments and the closing events. Every line counts, so a server that sends blank
/// lines or comments without end is stopped as one that sends text without end is.
pub fn max_lines(max_tokens: usize) -> usize {
    max_pieces(max_tokens)
        .saturating_mul(4)
        .saturating_add(4096)
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
    /// A reply that does not follow the protocol (not JSON, missing fields).
    #[error("{url}: unexpected reply: {reason}")]
    Protocol { url: String, reason: String },
    #[error("{url}: invalid endpoint: {reason}")]
    Config { url: String, reason: String },
    /// The server broke a limit raglab sets (a body, a line, the stream's length, the
    /// reply's type).
    #[error("{url}: {reason}")]
    Misbehaved { url: String, reason: String },
    /// The reply kept coming but did not finish within the request's deadline.
    #[error("{url}: the reply took longer than the request's deadline of {secs} s")]
    Deadline { url: String, secs: u64 },
}

impl EndpointError {
    /// Whether the same request may succeed on this server later: connection
    /// failures, timeouts, broken streams, a passed deadline, 408, 409, 429 and 5xx.
    /// Other 4xx replies and malformed endpoints are the request's or the
    /// configuration's fault; a broken protocol is the server's ([`Self::violation`]).
    pub fn retryable(&self) -> bool {
        match self {
            Self::Connect { .. }
            | Self::Timeout { .. }
            | Self::Broken { .. }
            | Self::Deadline { .. } => true,
            Self::Status { status, .. } => matches!(status, 408 | 409 | 429 | 500..=599),
            Self::Protocol { .. } | Self::Config { .. } | Self::Misbehaved { .. } => false,
        }
    }

    /// Whether the server broke the protocol (a malformed reply, the wrong content
    /// type, a line, body or stream over its cap): asking it again would cost the same
    /// again (seen: six requests of 16 s each to a server that ignores `max_tokens`),
    /// so it is not asked again in this run; another server may answer.
    pub fn violation(&self) -> bool {
        matches!(self, Self::Protocol { .. } | Self::Misbehaved { .. })
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
/// How long a pooled connection may sit idle before it is dropped instead of reused.
/// llama.cpp's server (cpp-httplib) closes a connection after 5 s without a request, and
/// reqwest would otherwise keep one for 90 s: the first request after a pause (a user
/// reading an answer in the Generate pane, a slow local step in a batch) then went out
/// on a socket the server had already closed and failed with "error sending request".
/// Dropping idle connections well before any server's keep-alive ends makes that
/// impossible; a new connection on 127.0.0.1 or a LAN costs well under a millisecond
/// beside a model call.
pub const POOL_IDLE: Duration = Duration::from_secs(2);

/// The HTTP client every endpoint call is built from: a connect deadline, and pooled
/// connections kept no longer than [`POOL_IDLE`].
pub fn http_client() -> reqwest::ClientBuilder {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .pool_idle_timeout(POOL_IDLE)
}

#[derive(Debug, Clone)]
pub struct Endpoint {
    pub spec: EndpointSpec,
    client: reqwest::Client,
    /// What kind of server this is, once a probe has said so (shared by clones).
    dialect: std::sync::Arc<std::sync::OnceLock<Dialect>>,
    /// Which token ids are control tokens on this server, as found so far.
    controls: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<u64, bool>>>,
    /// Trusted prompt pieces already cut at their control tokens (by text).
    splits: std::sync::Arc<
        std::sync::Mutex<std::collections::HashMap<String, Vec<llama_server::Part>>>,
    >,
}

impl Endpoint {
    pub fn new(spec: EndpointSpec) -> Result<Self, EndpointError> {
        let client = http_client().build().map_err(|e| EndpointError::Config {
            url: spec.url.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self {
            spec,
            client,
            dialect: Default::default(),
            controls: Default::default(),
            splits: Default::default(),
        })
    }

    fn chat_url(&self) -> String {
        format!("{}/chat/completions", self.spec.url.trim_end_matches('/'))
    }

    fn completions_url(&self) -> String {
        format!("{}/completions", self.spec.url.trim_end_matches('/'))
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
        let mut b = self.sampling_body(s);
        b["messages"] = json!(msgs);
        if let Some(Constraint::JsonSchema { name, schema }) = constraint {
            b["response_format"] = json!({
                "type": "json_schema",
                "json_schema": {"name": name, "strict": true, "schema": schema},
            });
        }
        b
    }

    /// The request body of a completion from prompt token ids (llama-server's
    /// `/v1/completions`), with the same sampling; a schema goes as llama-server's
    /// own `json_schema` field.
    fn completion_body(&self, ids: &[u64], s: &Sampling, constraint: Option<&Constraint>) -> Value {
        let mut b = self.sampling_body(s);
        b["prompt"] = json!(ids);
        if let Some(Constraint::JsonSchema { schema, .. }) = constraint {
            b["json_schema"] = schema.clone();
        }
        b
    }

    /// The fields every request shares: streaming, the sampling settings (llama.cpp's
    /// own unless the spec asks for OpenAI's standard ones only) and the model.
    fn sampling_body(&self, s: &Sampling) -> Value {
        let mut b = json!({
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
        b
    }

    /// The model ids the server lists (`GET /models`).
    pub async fn models(&self) -> Result<Vec<String>, EndpointError> {
        let url = self.spec.url.clone();
        let req = self
            .spec
            .authorise(
                self.client
                    .get(format!("{}/models", url.trim_end_matches('/'))),
            )
            .timeout(self.spec.request_timeout);
        let resp = self.send(req).await?;
        let status = resp.status();
        let body = read_body(resp, &self.spec).await?;
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

    /// Send a request; its reply's head must come within the idle timeout.
    async fn send(&self, req: reqwest::RequestBuilder) -> Result<reqwest::Response, EndpointError> {
        let idle = self.spec.idle_timeout;
        tokio::time::timeout(idle, req.send())
            .await
            .map_err(|_| EndpointError::Timeout {
                url: self.spec.url.clone(),
                secs: idle.as_secs(),
            })?
            .map_err(|e| EndpointError::Connect {
                url: self.spec.url.clone(),
                reason: error_chain(&e),
            })
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
        let started = Instant::now();
        let deadline = tokio::time::Instant::from_std(started + self.spec.request_timeout);
        let (url, body) = match self.dialect().await? {
            Dialect::LlamaServer { root } => {
                let ids = self.plain_prompt_tokens(&root, messages).await?;
                let body = self.completion_body(&ids, sampling, constraint);
                (self.completions_url(), body)
            }
            Dialect::OpenAi => (self.chat_url(), self.body(messages, sampling, constraint)),
        };
        let resp = self.open_stream(url, &body).await?;
        let streamed = self
            .read_stream(resp, sampling, deadline, stop, on_token)
            .await?;
        Ok(streamed.reply(started))
    }

    /// Send the request and check the reply's head: a success status, and an event
    /// stream.
    async fn open_stream(
        &self,
        to: String,
        body: &Value,
    ) -> Result<reqwest::Response, EndpointError> {
        let url = self.spec.url.clone();
        let req = self.spec.authorise(self.client.post(to)).json(body);
        let resp = self.send(req).await?;
        let status = resp.status();
        if !status.is_success() {
            let body = read_body(resp, &self.spec).await.unwrap_or_default();
            return Err(EndpointError::Status {
                url,
                status: status.as_u16(),
                body: body.chars().take(500).collect(),
            });
        }
        // A reply that says it is something else (an HTML error page of a proxy, a JSON
        // body of a server that ignores `stream`) is refused at once rather than read
        // until it ends; one that names no type is read as a stream.
        if let Some(kind) = resp
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            && !kind.trim_start().starts_with("text/event-stream")
        {
            return Err(EndpointError::Misbehaved {
                url,
                reason: format!("the server answered {kind}, not an event stream"),
            });
        }
        Ok(resp)
    }

    /// Read the event stream to its end, the stop flag, the idle timeout or the
    /// request's deadline, whichever comes first; a stream over the caps (an event
    /// over [`MAX_EVENT_BYTES`], more pieces than `max_tokens` allows) is refused.
    async fn read_stream(
        &self,
        mut resp: reqwest::Response,
        sampling: &Sampling,
        deadline: tokio::time::Instant,
        stop: &AtomicBool,
        on_token: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Streamed, EndpointError> {
        let url = self.spec.url.clone();
        let idle = self.spec.idle_timeout;
        let mut out = Streamed::default();
        let most_pieces = max_pieces(sampling.max_tokens);
        let most_lines = max_lines(sampling.max_tokens);
        while !out.sse.done {
            if stop.load(Ordering::Relaxed) {
                out.stopped = true;
                break;
            }
            let wait = deadline.min(tokio::time::Instant::now() + idle);
            let chunk = tokio::time::timeout_at(wait, resp.chunk())
                .await
                .map_err(|_| {
                    if tokio::time::Instant::now() >= deadline {
                        past_deadline(&self.spec)
                    } else {
                        EndpointError::Timeout {
                            url: url.clone(),
                            secs: idle.as_secs(),
                        }
                    }
                })?
                .map_err(|e| EndpointError::Broken {
                    url: url.clone(),
                    reason: error_chain(&e),
                })?;
            let Some(bytes) = chunk else { break };
            let sse = &mut out.sse;
            let pieces = sse.feed(&bytes).map_err(|e| match e {
                StreamFault::LineTooLong => EndpointError::Misbehaved {
                    url: url.clone(),
                    reason: line_too_long(),
                },
                StreamFault::Malformed(reason) => EndpointError::Protocol {
                    url: url.clone(),
                    reason,
                },
            })?;
            for piece in pieces {
                out.first.get_or_insert_with(Instant::now);
                on_token(&piece);
            }
            if out.sse.lines > most_lines {
                return Err(EndpointError::Misbehaved {
                    url,
                    reason: format!(
                        "the server sent over {most_lines} lines for max_tokens {}: \
                         blank lines or comments without end",
                        sampling.max_tokens
                    ),
                });
            }
            if out.sse.deltas > most_pieces {
                return Err(EndpointError::Misbehaved {
                    url,
                    reason: format!(
                        "the server streamed over {most_pieces} pieces of text for \
                         max_tokens {}: it does not honour the limit",
                        sampling.max_tokens
                    ),
                });
            }
        }
        if !out.stopped && !out.sse.finished() {
            return Err(EndpointError::Broken {
                url,
                reason: "the connection closed before the answer was finished".into(),
            });
        }
        Ok(out)
    }
}

/// What a read stream held: its events, when its first piece came, whether it was
/// stopped.
#[derive(Default)]
struct Streamed {
    sse: Sse,
    first: Option<Instant>,
    stopped: bool,
}

impl Streamed {
    /// The reply with its timings, measured from `started` (the request's start).
    fn reply(self, started: Instant) -> ChatReply {
        let Self {
            sse,
            first,
            stopped,
        } = self;
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
        ChatReply {
            text: sse.text,
            served_model: sse.model.unwrap_or_default(),
            finish_reason: sse.finish_reason,
            stats,
        }
    }
}

fn past_deadline(spec: &EndpointSpec) -> EndpointError {
    EndpointError::Deadline {
        url: spec.url.clone(),
        secs: spec.request_timeout.as_secs(),
    }
}

/// Read a whole reply body, refusing one over [`MAX_BODY_BYTES`] and one that takes past
/// the request's deadline or pauses longer than the idle timeout.
pub async fn read_body(
    resp: reqwest::Response,
    spec: &EndpointSpec,
) -> Result<String, EndpointError> {
    read_body_within(resp, spec, MAX_BODY_BYTES, spec.request_timeout).await
}

/// [`read_body`] with its own cap and deadline.
async fn read_body_within(
    mut resp: reqwest::Response,
    spec: &EndpointSpec,
    cap: usize,
    within: Duration,
) -> Result<String, EndpointError> {
    let deadline = tokio::time::Instant::now() + within;
    let mut body = Vec::new();
    loop {
        let wait = deadline.min(tokio::time::Instant::now() + spec.idle_timeout);
        let chunk = tokio::time::timeout_at(wait, resp.chunk())
            .await
            .map_err(|_| {
                if tokio::time::Instant::now() >= deadline {
                    past_deadline(spec)
                } else {
                    EndpointError::Timeout {
                        url: spec.url.clone(),
                        secs: spec.idle_timeout.as_secs(),
                    }
                }
            })?
            .map_err(|e| EndpointError::Broken {
                url: spec.url.clone(),
                reason: error_chain(&e),
            })?;
        let Some(bytes) = chunk else { break };
        if body.len() + bytes.len() > cap {
            return Err(EndpointError::Misbehaved {
                url: spec.url.clone(),
                reason: format!("the reply is over {} KiB", cap >> 10),
            });
        }
        body.extend_from_slice(&bytes);
    }
    String::from_utf8(body).map_err(|e| EndpointError::Protocol {
        url: spec.url.clone(),
        reason: format!("the reply is not UTF-8: {e}"),
    })
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

/// Why a stream could not be read on.
#[derive(Debug)]
enum StreamFault {
    /// A line over [`MAX_EVENT_BYTES`].
    LineTooLong,
    /// An event that is not valid (not UTF-8, not JSON, an error object).
    Malformed(String),
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
    /// Lines read, blank ones and comments included.
    lines: usize,
    done: bool,
}

impl Sse {
    /// Take bytes of the stream; returns the text pieces of the complete events in
    /// them. Lines are split at `\n` only, so a UTF-8 character split across chunks
    /// is joined before it is decoded. Linear in the bytes: each byte is scanned once
    /// (the unfinished tail held from the last call has no newline) and the buffer is
    /// drained once per call, not once per line.
    fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, StreamFault> {
        let mut buf = std::mem::take(&mut self.buf);
        let mut from = buf.len();
        buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        let mut start = 0;
        let result = loop {
            let Some(off) = buf[from..].iter().position(|&b| b == b'\n') else {
                break Ok(());
            };
            let nl = from + off;
            from = nl + 1;
            let line = &buf[start..nl];
            start = nl + 1;
            self.lines += 1;
            if line.len() > MAX_EVENT_BYTES {
                break Err(StreamFault::LineTooLong);
            }
            if let Err(e) = self.line(line, &mut out) {
                break Err(StreamFault::Malformed(e));
            }
        };
        buf.drain(..start);
        self.buf = buf;
        result?;
        if self.buf.len() > MAX_EVENT_BYTES {
            return Err(StreamFault::LineTooLong);
        }
        Ok(out)
    }

    /// One line without its `\n`: a `data:` event, or a blank separator, comment or
    /// `event:` line (skipped).
    fn line(&mut self, line: &[u8], out: &mut Vec<String>) -> Result<(), String> {
        let line = std::str::from_utf8(line)
            .map_err(|e| format!("invalid UTF-8 in the stream: {e}"))?
            .trim_end_matches('\r');
        let Some(data) = line.strip_prefix("data:") else {
            return Ok(());
        };
        let data = data.trim_start();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if let Some(piece) = self.event(data)? {
            out.push(piece);
        }
        Ok(())
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
        // A chat chunk's `delta.content`, or a completion chunk's `text`.
        let piece = choice
            .get("delta")
            .and_then(|d| d.get("content"))
            .or_else(|| choice.get("text"))
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

fn line_too_long() -> String {
    format!(
        "an event line of the stream is over {} MiB",
        MAX_EVENT_BYTES >> 20
    )
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
    fn every_line_counts_and_a_long_run_of_blank_lines_is_read_in_one_pass() {
        let mut s = Sse::default();
        let blank = vec![b'\n'; 64 << 10];
        for _ in 0..16 {
            assert!(s.feed(&blank).expect("blank lines").is_empty());
        }
        assert_eq!(s.lines, 16 * (64 << 10));
        assert!(s.buf.is_empty());
        // A line over the cap is told apart from a malformed event.
        let mut s = Sse::default();
        let long = vec![b'a'; MAX_EVENT_BYTES + 1];
        assert!(matches!(s.feed(&long), Err(StreamFault::LineTooLong)));
        let mut s = Sse::default();
        assert!(matches!(
            s.feed(b"\n\ndata: {oops\n"),
            Err(StreamFault::Malformed(_))
        ));
        assert_eq!(s.lines, 3);
        assert!(max_lines(16) > 4 * max_pieces(16));
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
        let misbehaved = EndpointError::Misbehaved {
            url: "u".into(),
            reason: "r".into(),
        };
        assert!(!misbehaved.retryable() && misbehaved.violation());
        let deadline = EndpointError::Deadline {
            url: "u".into(),
            secs: 4,
        };
        assert!(deadline.retryable() && !deadline.violation());
        assert!(!status(500).violation());
    }
}
