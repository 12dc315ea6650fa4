//! Embeddings from an OpenAI-compatible server (`POST /v1/embeddings`; llama.cpp's
//! `llama-server --embeddings`), served behind the same blocking [`super::embed::Embedder`]
//! handle as the in-process model, so indexing, search and evaluation do not care
//! where vectors come from. The worker thread runs its own small tokio runtime: the
//! handle's callers are blocking code (often already on a blocking thread of the main
//! runtime, where `block_on` of that runtime is not allowed).
//!
//! Inputs are cut at the same token limit as in process: the server would refuse an
//! input longer than its batch (llama-server answers 500), and a cut made differently
//! would give different vectors. Where the server tokenises for us (llama.cpp's
//! `/tokenize`, next to `/v1`), the text is tokenised there with its special tokens,
//! cut to `max_tokens` keeping the closing special token (`[SEP]`) as the local
//! embedder does, and sent as token ids; a server without `/tokenize` gets the text.
//! Vectors are L2-normalised here whatever the server did.

use std::sync::mpsc;

use serde_json::{Value, json};

use super::device::Placement;
use super::embed_protocol::{EmbedInfo, Request, normalise};
use super::endpoint::{EndpointSpec, read_body};
use super::{InferError, Result};

/// Run the embedding worker for `spec` until every handle is dropped.
pub(super) fn worker(
    spec: &EndpointSpec,
    max_tokens: usize,
    rx: &mpsc::Receiver<Request>,
    ready: &mpsc::Sender<Result<EmbedInfo>>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = ready.send(Err(InferError::Backend(e.to_string())));
            return;
        }
    };
    let client = match Client::new(spec, max_tokens) {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let info = rt.block_on(client.probe());
    let ok = info.is_ok();
    if ready.send(info).is_err() || !ok {
        return;
    }
    for req in rx {
        match req {
            Request::Embed(texts, reply) => {
                let _ = reply.send(rt.block_on(client.embed(&texts)));
            }
            Request::Tokens(text, reply) => {
                let ids = rt.block_on(client.input(&text)).ok().and_then(|i| match i {
                    Input::Tokens(ids) => Some(ids.iter().map(|&t| t as i32).collect()),
                    Input::Text(_) => None,
                });
                let _ = reply.send(ids.unwrap_or_default());
            }
            Request::Count(texts, reply) => {
                let _ = reply.send(rt.block_on(client.count(&texts)));
            }
        }
    }
}

/// One input as sent: token ids (cut to the limit) or, without `/tokenize`, the text.
enum Input {
    Tokens(Vec<i64>),
    Text(String),
}

struct Client {
    http: reqwest::Client,
    spec: EndpointSpec,
    max_tokens: usize,
    /// The closing special token the server adds (`[SEP]`), once known; `Some(None)`:
    /// it adds none; `None`: the server has no `/tokenize`.
    closing: std::sync::OnceLock<Option<Option<i64>>>,
}

impl Client {
    fn new(spec: &EndpointSpec, max_tokens: usize) -> Result<Self> {
        let http = super::endpoint::http_client()
            .timeout(spec.idle_timeout)
            .build()
            .map_err(|e| InferError::Backend(e.to_string()))?;
        Ok(Self {
            http,
            spec: spec.clone(),
            max_tokens: max_tokens.max(2),
            closing: std::sync::OnceLock::new(),
        })
    }

    fn fail(&self, reason: impl std::fmt::Display) -> InferError {
        InferError::Inference {
            model: self.spec.url.clone(),
            reason: reason.to_string(),
        }
    }

    async fn post(&self, url: String, body: &Value) -> Result<(u16, Value)> {
        let req = self.spec.authorise(self.http.post(&url)).json(body);
        let resp = req.send().await.map_err(|e| self.fail(e))?;
        let status = resp.status().as_u16();
        let text = read_body(resp, &self.spec)
            .await
            .map_err(|e| self.fail(e))?;
        let v = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Ok((status, v))
    }

    /// llama.cpp's `/tokenize` (beside `/v1`): the ids with special tokens, or None
    /// when the server has no such route. The text is tokenised as plain text
    /// (`parse_special: false`): a chunk that spells `[SEP]` or `<|endoftext|>` gets
    /// the tokens of those characters, not the control token.
    async fn tokenize(&self, text: &str) -> Result<Option<Vec<i64>>> {
        let root = self.spec.url.trim_end_matches('/').trim_end_matches("/v1");
        let (status, v) = self
            .post(
                format!("{root}/tokenize"),
                &json!({"content": text, "add_special": true, "parse_special": false}),
            )
            .await?;
        if status != 200 {
            return Ok(None);
        }
        let ids = v
            .get("tokens")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect());
        Ok(ids)
    }

    /// Whole token counts (special tokens included) from the server's `/tokenize`;
    /// an error when it has none (the count must be the model's own).
    async fn count(&self, texts: &[String]) -> Result<Vec<usize>> {
        let mut out = Vec::with_capacity(texts.len());
        for t in texts {
            match self.tokenize(t).await? {
                Some(ids) => out.push(ids.len()),
                None => {
                    return Err(self.fail(
                        "the server has no /tokenize, so chunk token counts cannot be taken with its tokenizer",
                    ));
                }
            }
        }
        Ok(out)
    }

    /// The input for `text`: tokenised and cut like the in-process embedder.
    async fn input(&self, text: &str) -> Result<Input> {
        let closing = match self.closing.get() {
            Some(c) => *c,
            None => {
                // The empty text shows what the server adds: [CLS] [SEP] for BERT.
                let c = self.tokenize("").await?.map(|ids| {
                    if ids.len() >= 2 {
                        ids.last().copied()
                    } else {
                        None
                    }
                });
                let _ = self.closing.set(c);
                c
            }
        };
        let tokens = match closing {
            Some(_) => self.tokenize(text).await?,
            None => None,
        };
        let Some(mut ids) = tokens else {
            return Ok(Input::Text(text.to_string()));
        };
        match closing.flatten() {
            Some(c) => cut(&mut ids, self.max_tokens, c),
            None => ids.truncate(self.max_tokens),
        }
        Ok(Input::Tokens(ids))
    }

    /// Embed `texts` in one request; vectors in input order, L2-normalised.
    async fn embed(&self, texts: &[String]) -> Result<Vec<Vec<f32>>> {
        let mut inputs = Vec::with_capacity(texts.len());
        for t in texts {
            inputs.push(match self.input(t).await? {
                Input::Tokens(ids) => json!(ids),
                Input::Text(s) => json!(s),
            });
        }
        let mut body = json!({"input": inputs, "encoding_format": "float"});
        if let Some(m) = &self.spec.model {
            body["model"] = json!(m);
        }
        let url = format!("{}/embeddings", self.spec.url.trim_end_matches('/'));
        let (status, v) = self.post(url, &body).await?;
        if status != 200 {
            return Err(self.fail(format!("HTTP {status}: {v:.300}")));
        }
        let data = v
            .get("data")
            .and_then(Value::as_array)
            .ok_or_else(|| self.fail("the reply has no `data` list"))?;
        let mut out: Vec<Option<Vec<f32>>> = vec![None; texts.len()];
        for (pos, d) in data.iter().enumerate() {
            let i = d
                .get("index")
                .and_then(Value::as_u64)
                .map_or(pos, |i| i as usize);
            let v: Vec<f32> = d
                .get("embedding")
                .and_then(Value::as_array)
                .ok_or_else(|| self.fail("an item has no `embedding`"))?
                .iter()
                .map(|x| x.as_f64().unwrap_or(f64::NAN) as f32)
                .collect();
            if let Some(slot) = out.get_mut(i) {
                *slot = Some(normalise(&v));
            }
        }
        out.into_iter()
            .map(|v| v.ok_or_else(|| self.fail("the reply lacks a vector for some input")))
            .collect()
    }

    /// The served model's name and dimension (one probe embedding).
    async fn probe(&self) -> Result<EmbedInfo> {
        let dim = self
            .embed(&["dimension probe".to_string()])
            .await?
            .first()
            .map_or(0, Vec::len);
        let name = match &self.spec.model {
            Some(m) => m.clone(),
            None => self.served_model().await?,
        };
        Ok(EmbedInfo {
            name: short_name(&name),
            dim,
            max_tokens: self.max_tokens,
            placement: Placement {
                device: format!("endpoint {}", self.spec.url),
                layers_offloaded: 0,
                layers_total: 0,
            },
        })
    }

    /// The first model id of `GET /models`.
    async fn served_model(&self) -> Result<String> {
        let req = self.spec.authorise(
            self.http
                .get(format!("{}/models", self.spec.url.trim_end_matches('/'))),
        );
        let resp = req.send().await.map_err(|e| self.fail(e))?;
        let text = read_body(resp, &self.spec)
            .await
            .map_err(|e| self.fail(e))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| self.fail(format!("GET /models is not JSON: {e}")))?;
        v.get("data")
            .and_then(|d| d.get(0))
            .and_then(|m| m.get("id"))
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| {
                self.fail("GET /models lists no model; set `model` in the endpoint's config")
            })
    }
}

/// Cut `ids` to `max` tokens, keeping the closing special token last (what the
/// in-process embedder does, so both see the same tokens).
fn cut(ids: &mut Vec<i64>, max: usize, closing: i64) {
    if ids.len() > max {
        let ends_special = ids.last() == Some(&closing);
        ids.truncate(max);
        if ends_special {
            ids[max - 1] = closing;
        }
    }
}

/// The name vectors are stored under: a served model's file name without folders or
/// `.gguf` (llama-server lists the path it was given), so the same GGUF served or
/// loaded in process shares its vectors.
fn short_name(id: &str) -> String {
    let file = id.rsplit('/').next().unwrap_or(id);
    file.trim_end_matches(".gguf").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_keep_the_closing_token_and_names_drop_folders() {
        let mut ids = vec![101, 5, 6, 7, 8, 102];
        cut(&mut ids, 4, 102);
        assert_eq!(ids, vec![101, 5, 6, 102]);
        let mut short = vec![101, 5, 102];
        cut(&mut short, 4, 102);
        assert_eq!(short, vec![101, 5, 102]);
        assert_eq!(
            short_name("/m/all-MiniLM-L6-v2.F16.gguf"),
            "all-MiniLM-L6-v2.F16"
        );
        assert_eq!(
            short_name("text-embedding-3-small"),
            "text-embedding-3-small"
        );
    }
}
