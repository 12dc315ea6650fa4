//! A server's `/v1/rerank` (the Jina and llama-server shape): one request per question,
//! `{"query", "documents", "top_n"}`, answered by `results[]` of `{index,
//! relevance_score}`. The reply is checked whole before any score is used: every
//! document scored exactly once, by an index in range, with a finite number. A server
//! that breaks any of that is refused with one error naming what it did; nothing is
//! taken from a partial or malformed reply.

use serde_json::{Value, json};

use super::endpoint::{EndpointError, EndpointSpec, http_client, read_body};

/// One rerank server.
pub struct RerankEndpoint {
    http: reqwest::Client,
    spec: EndpointSpec,
}

impl RerankEndpoint {
    pub fn new(spec: EndpointSpec) -> Result<Self, EndpointError> {
        let http = http_client().build().map_err(|e| EndpointError::Config {
            url: spec.url.clone(),
            reason: e.to_string(),
        })?;
        Ok(Self { http, spec })
    }

    pub fn url(&self) -> &str {
        &self.spec.url
    }

    /// The name scores are cached under: the configured model, else the URL.
    pub fn model_id(&self) -> String {
        match &self.spec.model {
            Some(m) => format!("endpoint:{m}"),
            None => format!("endpoint:{}", self.spec.url),
        }
    }

    /// The server's score of each document for `query`, in the documents' order.
    pub async fn scores(
        &self,
        query: &str,
        documents: &[String],
    ) -> Result<Vec<f64>, EndpointError> {
        if documents.is_empty() {
            return Ok(Vec::new());
        }
        let deadline = self.spec.request_timeout;
        match tokio::time::timeout(deadline, self.ask(query, documents)).await {
            Ok(r) => r,
            Err(_) => Err(EndpointError::Deadline {
                url: self.spec.url.clone(),
                secs: deadline.as_secs(),
            }),
        }
    }

    async fn ask(&self, query: &str, documents: &[String]) -> Result<Vec<f64>, EndpointError> {
        let mut body = json!({
            "query": query,
            "documents": documents,
            "top_n": documents.len(),
            "return_documents": false,
        });
        if let Some(m) = &self.spec.model {
            body["model"] = json!(m);
        }
        let url = format!("{}/rerank", self.spec.url.trim_end_matches('/'));
        let req = self.spec.authorise(self.http.post(&url)).json(&body);
        let resp = tokio::time::timeout(self.spec.idle_timeout, req.send())
            .await
            .map_err(|_| EndpointError::Timeout {
                url: self.spec.url.clone(),
                secs: self.spec.idle_timeout.as_secs(),
            })?
            .map_err(|e| EndpointError::Connect {
                url: self.spec.url.clone(),
                reason: e.to_string(),
            })?;
        let status = resp.status().as_u16();
        let text = read_body(resp, &self.spec).await?;
        if status != 200 {
            return Err(EndpointError::Status {
                url: self.spec.url.clone(),
                status,
                body: text.chars().take(300).collect(),
            });
        }
        parse_reply(&text, documents.len()).map_err(|reason| EndpointError::Protocol {
            url: self.spec.url.clone(),
            reason,
        })
    }
}

/// The scores of a `/v1/rerank` reply for `n` documents, in document order.
pub fn parse_reply(text: &str, n: usize) -> Result<Vec<f64>, String> {
    let v: Value =
        serde_json::from_str(text).map_err(|e| format!("the rerank reply is not JSON: {e}"))?;
    let results = v
        .get("results")
        .and_then(Value::as_array)
        .ok_or("the rerank reply has no `results` list")?;
    if results.len() != n {
        return Err(format!(
            "the rerank reply scores {} documents of the {n} sent",
            results.len()
        ));
    }
    let mut out: Vec<Option<f64>> = vec![None; n];
    for r in results {
        let index = r
            .get("index")
            .and_then(Value::as_u64)
            .ok_or("a rerank result has no integer `index`")?;
        let score = r
            .get("relevance_score")
            .and_then(Value::as_f64)
            .ok_or_else(|| {
                format!("the rerank result of document {index} has no numeric `relevance_score`")
            })?;
        if !score.is_finite() {
            return Err(format!("the rerank score of document {index} is {score}"));
        }
        let slot = usize::try_from(index)
            .ok()
            .and_then(|i| out.get_mut(i))
            .ok_or_else(|| format!("a rerank result names document {index}, but {n} were sent"))?;
        if slot.replace(score).is_some() {
            return Err(format!("the rerank reply scores document {index} twice"));
        }
    }
    Ok(out.into_iter().map(|s| s.unwrap_or(f64::NAN)).collect())
}

#[cfg(test)]
mod tests {
    use super::parse_reply;

    #[test]
    fn replies_are_checked_whole() {
        let ok =
            r#"{"results":[{"index":1,"relevance_score":0.9},{"index":0,"relevance_score":-2.5}]}"#;
        assert_eq!(parse_reply(ok, 2).expect("parsed"), vec![-2.5, 0.9]);
        for (bad, why) in [
            (
                r#"{"results":[{"index":0,"relevance_score":0.9}]}"#,
                "scores 1 documents",
            ),
            (
                r#"{"results":[{"index":0,"relevance_score":1},{"index":0,"relevance_score":2}]}"#,
                "twice",
            ),
            (
                r#"{"results":[{"index":0,"relevance_score":1},{"index":5,"relevance_score":2}]}"#,
                "names document 5",
            ),
            (
                r#"{"results":[{"index":0,"relevance_score":1},{"index":1,"relevance_score":"NaN"}]}"#,
                "no numeric",
            ),
            (
                r#"{"results":[{"index":0,"relevance_score":1},{"index":-1,"relevance_score":2}]}"#,
                "integer `index`",
            ),
            (r#"{"data":[]}"#, "no `results`"),
            ("<html>", "not JSON"),
        ] {
            let err = parse_reply(bad, 2).expect_err("refused");
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
