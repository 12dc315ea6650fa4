//! A pool of OpenAI-compatible endpoints (`[[endpoints]]`): batch requests spread over
//! them within each one's `max_concurrent`, failed requests are retried with backoff,
//! and every job's result is handed over exactly once.
//!
//! One dispatcher (the caller's task) owns all the state: the queue of jobs, each
//! endpoint's requests in flight and its backoff. Requests run as tasks of a
//! `JoinSet` and come back to it as owned values; nothing is shared. A job is in
//! exactly one place at a time (queued, in flight, or handed to `done`), so a request
//! that fails (a server killed mid-answer, a timeout) puts its job back at the front of
//! the queue and its partial output is dropped: no answer is lost or produced twice.
//! The endpoint that failed rests for a backoff (0.5 s, doubling to 30 s, reset by its
//! next success) while the others take the queue. The run fails when one job has failed
//! [`MAX_ATTEMPTS`] times on a server (refused connections do not count: they never
//! reached one), when every endpoint has failed that many times in a row, or at once on
//! an error that retrying cannot mend (an HTTP 400, a malformed reply); results handed
//! over before stay committed.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::config::{EndpointConfig, defaults};
use crate::infer::endpoint::{Endpoint, EndpointError, EndpointSpec};

/// Failed tries of one job on a server, and failures in a row of every endpoint,
/// before the run fails.
pub const MAX_ATTEMPTS: usize = 6;
const BACKOFF_FIRST: Duration = Duration::from_millis(500);
const BACKOFF_MAX: Duration = Duration::from_secs(30);

/// Endpoints configured for generation.
#[derive(Debug, Clone)]
pub struct Pool {
    pub endpoints: Vec<Arc<Endpoint>>,
}

impl Pool {
    /// The pool of the `[[endpoints]]` entries; an API key's environment variable must
    /// be set.
    pub fn from_config(configs: &[EndpointConfig]) -> Result<Self> {
        if configs.is_empty() {
            bail!("no endpoints configured (add [[endpoints]] to the config file)");
        }
        let mut endpoints = Vec::new();
        for c in configs {
            endpoints.push(Arc::new(Endpoint::new(spec_of(c)?)?));
        }
        Ok(Self { endpoints })
    }

    /// The smallest context window of the pool: a prompt must fit whichever endpoint
    /// serves it.
    pub fn context_tokens(&self) -> usize {
        self.endpoints
            .iter()
            .map(|e| e.spec.context_tokens)
            .min()
            .unwrap_or(defaults::CONTEXT_TOKENS)
    }

    /// The name of the model the pool serves: the configured `model` of the first
    /// endpoint, else the first id the first reachable endpoint lists. Names that
    /// differ between endpoints are refused (one judge, one name).
    pub async fn model_name(&self) -> Result<String> {
        let mut names = Vec::new();
        let mut errors = Vec::new();
        for e in &self.endpoints {
            let name = match &e.spec.model {
                Some(m) => Some(m.clone()),
                None => match e.models().await {
                    Ok(ids) => ids.into_iter().next(),
                    Err(err) => {
                        errors.push(err.to_string());
                        None
                    }
                },
            };
            if let Some(n) = name {
                names.push((e.spec.url.clone(), n));
            }
        }
        let Some((_, first)) = names.first().cloned() else {
            bail!("no endpoint names its model: {}", errors.join("; "));
        };
        if let Some((url, other)) = names.iter().find(|(_, n)| *n != first) {
            bail!(
                "the endpoints serve different models ({first} and {other} at {url}); give each the same `model`"
            );
        }
        Ok(first)
    }

    /// `url, url, ...` for messages.
    pub fn describe(&self) -> String {
        self.endpoints
            .iter()
            .map(|e| e.spec.url.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What a pool run did.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct PoolReport {
    /// Results per endpoint, in the pool's order.
    pub served: Vec<usize>,
    /// Requests that failed and were tried again.
    pub retries: usize,
}

#[derive(Default)]
struct State {
    in_flight: usize,
    failures: u32,
    resting_until: Option<Instant>,
    /// The endpoint broke the protocol ([`EndpointError::violation`]) and is not
    /// asked again in this run.
    set_aside: bool,
}

/// How to reach one configured endpoint: its URL checked, its API key read from the
/// environment variable the config names.
pub fn spec_of(c: &EndpointConfig) -> Result<EndpointSpec> {
    let (url, basic_auth) = split_credentials(c.url.trim_end_matches('/'));
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("endpoint url `{url}` must start with http:// or https://");
    }
    if let Some(cut) = url.find(['?', '#']) {
        // Routes are appended to the url (`/chat/completions`), and the url is stored
        // with every answer and shown in errors: a `?key=` would be both broken and
        // leaked. The query is not repeated in the message for the same reason.
        bail!(
            "endpoint {}: a query string or fragment in the url is not supported; give a \
             key with api_key_env instead",
            &url[..cut]
        );
    }
    if c.max_concurrent == 0 {
        bail!("endpoint {url}: max_concurrent must be at least 1");
    }
    let api_key =
        match &c.api_key_env {
            Some(var) => Some(std::env::var(var).with_context(|| {
                format!("endpoint {url}: the API key variable {var} is not set")
            })?),
            None => None,
        };
    let secret = api_key.is_some() || basic_auth.is_some();
    if secret && url.starts_with("http://") && !is_loopback(&url) && !c.allow_plain_http_key {
        bail!(
            "endpoint {url}: refusing to send credentials over plain http:// to another \
             machine (anyone on the way can read them); use https://, or set \
             allow_plain_http_key = true in this [[endpoints]] entry"
        );
    }
    Ok(EndpointSpec {
        url,
        model: c.model.clone(),
        api_key,
        basic_auth,
        max_concurrent: c.max_concurrent,
        idle_timeout: Duration::from_secs(c.timeout_s.unwrap_or(defaults::TIMEOUT_S).max(1)),
        request_timeout: Duration::from_secs(
            c.request_timeout_s
                .unwrap_or(defaults::REQUEST_TIMEOUT_S)
                .max(1),
        ),
        context_tokens: c.context_tokens.unwrap_or(defaults::CONTEXT_TOKENS),
        standard_sampling: c.standard_sampling,
        chat_route: c.chat_route,
    })
}

/// `scheme://user:pass@host/...` -> (`scheme://host/...`, (user, pass)). The URL
/// without credentials is what errors, logs and provenance name; the credentials go
/// only into the request's `Authorization` header.
fn split_credentials(url: &str) -> (String, Option<(String, String)>) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None);
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let (user, pass) = userinfo.split_once(':').unwrap_or((userinfo, ""));
            (
                format!("{scheme}://{host}{path}"),
                Some((user.to_string(), pass.to_string())),
            )
        }
        None => (url.to_string(), None),
    }
}

/// Whether the URL's host is this machine (127.0.0.0/8, ::1 or localhost).
fn is_loopback(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    host == "localhost"
        || host == "::1"
        || host
            .parse::<std::net::Ipv4Addr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn backoff(failures: u32) -> Duration {
    let doubled = BACKOFF_FIRST.saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    doubled.min(BACKOFF_MAX)
}

/// The free endpoint with the lowest load relative to its capacity (None: every
/// endpoint is busy or resting).
fn least_loaded(pool: &Pool, state: &[State]) -> Option<usize> {
    let load = |i: usize| state[i].in_flight as f64 / pool.endpoints[i].spec.max_concurrent as f64;
    (0..pool.endpoints.len())
        .filter(|&i| {
            !state[i].set_aside
                && state[i].resting_until.is_none()
                && state[i].in_flight < pool.endpoints[i].spec.max_concurrent
        })
        .min_by(|&a, &b| load(a).total_cmp(&load(b)))
}

/// Count a retryable failure on endpoint `i`: the endpoint rests for its backoff and
/// the job's attempts grow. Returns the job's attempts, or the error that ends the
/// run (the job failed [`MAX_ATTEMPTS`] times, or every endpoint did in a row).
fn count_failure(
    state: &mut [State],
    i: usize,
    report: &mut PoolReport,
    e: &EndpointError,
    attempts: usize,
) -> Result<usize> {
    let s = &mut state[i];
    s.failures += 1;
    let rest = backoff(s.failures);
    s.resting_until = Some(Instant::now() + rest);
    report.retries += 1;
    // A refused connection never reached a server: it says nothing about the
    // request, only about the endpoint (which rests).
    let attempts = attempts + usize::from(!matches!(e, EndpointError::Connect { .. }));
    if attempts >= MAX_ATTEMPTS {
        bail!("{e} (gave up on a request after {MAX_ATTEMPTS} failed attempts)");
    }
    if state
        .iter()
        .filter(|s| !s.set_aside)
        .all(|s| s.failures >= MAX_ATTEMPTS as u32)
    {
        bail!("every endpoint failed {MAX_ATTEMPTS} times in a row; the last error: {e}");
    }
    tracing::warn!("{e}; trying again; the endpoint rests {rest:?}");
    Ok(attempts)
}

/// Set endpoint `i` aside for the rest of the run after it broke the protocol: the
/// request moves to another endpoint at once. Returns the error that ends the run
/// when no endpoint is left.
fn set_aside(
    state: &mut [State],
    i: usize,
    report: &mut PoolReport,
    e: &EndpointError,
) -> Result<()> {
    state[i].set_aside = true;
    report.retries += 1;
    if state.iter().all(|s| s.set_aside) {
        bail!(
            "{e} (the server broke the protocol and is not asked again; no other endpoint is left)"
        );
    }
    tracing::warn!("{e}; the endpoint is not asked again in this run; the request moves on");
    Ok(())
}

/// Run every job on the pool. `work` sends one job to one endpoint; `done` gets each
/// result with the index of the endpoint that produced it, one at a time, and should
/// commit it before it returns (an error from `done` ends the run).
pub async fn run_on_pool<J, R, W, F>(
    pool: &Pool,
    jobs: Vec<J>,
    work: W,
    mut done: impl AsyncFnMut(J, R, usize) -> Result<()>,
) -> Result<PoolReport>
where
    J: Clone + Send + 'static,
    R: Send + 'static,
    W: Fn(Arc<Endpoint>, J) -> F,
    F: Future<Output = Result<R, EndpointError>> + Send + 'static,
{
    run_chains_on_pool(pool, jobs, work, async |job, r, i| {
        done(job, r, i).await.map(|()| Vec::new())
    })
    .await
}

/// [`run_on_pool`] for jobs that lead to more jobs: the jobs `done` returns join the
/// back of the queue, behind the work already waiting, so several chains (an answer's
/// requests, each needing the reply before) move forward side by side and every free
/// endpoint takes the next request of whichever chain is ready, instead of one chain
/// holding one endpoint to its end while another endpoint idles.
pub async fn run_chains_on_pool<J, R, W, F>(
    pool: &Pool,
    jobs: Vec<J>,
    work: W,
    mut done: impl AsyncFnMut(J, R, usize) -> Result<Vec<J>>,
) -> Result<PoolReport>
where
    J: Clone + Send + 'static,
    R: Send + 'static,
    W: Fn(Arc<Endpoint>, J) -> F,
    F: Future<Output = Result<R, EndpointError>> + Send + 'static,
{
    let n = pool.endpoints.len();
    let mut state: Vec<State> = (0..n).map(|_| State::default()).collect();
    let mut report = PoolReport {
        served: vec![0; n],
        retries: 0,
    };
    let mut queue: VecDeque<(J, usize)> = jobs.into_iter().map(|j| (j, 0)).collect();
    let mut running: JoinSet<Outcome<J, R>> = JoinSet::new();
    // A result waiting for `done`: handed over after the freed slot got new work, so
    // the endpoints keep generating while it is committed.
    let mut ready: Option<(J, R, usize)> = None;
    loop {
        let now = Instant::now();
        for s in &mut state {
            s.resting_until = s.resting_until.filter(|t| *t > now);
        }
        fill_free_slots(pool, &mut state, &mut queue, &mut running, &work);
        if let Some((job, r, i)) = ready.take() {
            let next = done(job, r, i).await?;
            queue.extend(next.into_iter().map(|j| (j, 0)));
            continue;
        }
        if running.is_empty() && queue.is_empty() {
            return Ok(report);
        }
        // The next moment a resting endpoint may take queued work again (always in
        // the future: expired rests were cleared above).
        let wake = if queue.is_empty() {
            None
        } else {
            state.iter().filter_map(|s| s.resting_until).min()
        };
        let joined = tokio::select! {
            j = running.join_next(), if !running.is_empty() => j,
            () = tokio::time::sleep_until(wake.unwrap_or(now)), if wake.is_some() => continue,
            else => bail!("the endpoint pool stalled with {} job(s) queued", queue.len()),
        };
        let Some(joined) = joined else { continue };
        let outcome = joined.context("an endpoint request panicked")?;
        ready = settle(&mut state, &mut report, &mut queue, outcome)?;
    }
}

/// What one request ended with: (endpoint, job, failed attempts before, result).
type Outcome<J, R> = (usize, J, usize, Result<R, EndpointError>);

/// Give queued jobs to free slots, least loaded endpoint first (relative to its
/// capacity), each request spawned on `running`.
fn fill_free_slots<J, R, W, F>(
    pool: &Pool,
    state: &mut [State],
    queue: &mut VecDeque<(J, usize)>,
    running: &mut JoinSet<Outcome<J, R>>,
    work: &W,
) where
    J: Clone + Send + 'static,
    R: Send + 'static,
    W: Fn(Arc<Endpoint>, J) -> F,
    F: Future<Output = Result<R, EndpointError>> + Send + 'static,
{
    while !queue.is_empty() {
        let Some(i) = least_loaded(pool, state) else {
            break;
        };
        let Some((job, attempts)) = queue.pop_front() else {
            break;
        };
        state[i].in_flight += 1;
        let request = work(pool.endpoints[i].clone(), job.clone());
        running.spawn(async move { (i, job, attempts, request.await) });
    }
}

/// Account for a finished request: a success is handed back to be committed; a
/// transient failure goes to the front of the queue (its endpoint rests); a protocol
/// violation sets its endpoint aside and the job goes to another; any other error
/// ends the pool.
fn settle<J, R>(
    state: &mut [State],
    report: &mut PoolReport,
    queue: &mut VecDeque<(J, usize)>,
    (i, job, attempts, outcome): Outcome<J, R>,
) -> Result<Option<(J, R, usize)>> {
    let s = &mut state[i];
    s.in_flight -= 1;
    match outcome {
        Ok(r) => {
            s.failures = 0;
            s.resting_until = None;
            report.served[i] += 1;
            return Ok(Some((job, r, i)));
        }
        Err(e) if e.retryable() => {
            let attempts = count_failure(state, i, report, &e, attempts)?;
            queue.push_front((job, attempts));
        }
        Err(e) if e.violation() => {
            set_aside(state, i, report, &e)?;
            queue.push_front((job, attempts + 1));
        }
        Err(e) => return Err(e.into()),
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_is_capped() {
        assert_eq!(backoff(1), Duration::from_millis(500));
        assert_eq!(backoff(2), Duration::from_secs(1));
        assert_eq!(backoff(4), Duration::from_secs(4));
        assert_eq!(backoff(10), BACKOFF_MAX);
        assert_eq!(backoff(u32::MAX), BACKOFF_MAX);
    }

    #[test]
    fn bad_endpoints_are_refused() {
        let e = |url: &str, max| EndpointConfig {
            url: url.into(),
            model: None,
            api_key_env: None,
            max_concurrent: max,
            timeout_s: None,
            request_timeout_s: None,
            allow_plain_http_key: false,
            context_tokens: None,
            standard_sampling: false,
            chat_route: false,
            embeddings: false,
            rerank: false,
        };
        assert!(Pool::from_config(&[]).is_err());
        assert!(Pool::from_config(&[e("localhost:8080", 1)]).is_err());
        assert!(Pool::from_config(&[e("http://a/v1", 0)]).is_err());
        let err = Pool::from_config(&[e("https://a/v1?key=s3cret", 1)])
            .expect_err("a query string")
            .to_string();
        assert!(
            err.contains("query string") && !err.contains("s3cret"),
            "{err}"
        );
        let p = Pool::from_config(&[e("http://a/v1/", 2)]).expect("pool");
        assert_eq!(p.describe(), "http://a/v1");
    }

    #[test]
    fn credentials_stay_out_of_the_url_and_off_plain_http_to_other_hosts() {
        let e = |url: &str| EndpointConfig {
            url: url.into(),
            model: None,
            api_key_env: None,
            max_concurrent: 1,
            timeout_s: None,
            request_timeout_s: None,
            allow_plain_http_key: false,
            context_tokens: None,
            standard_sampling: false,
            chat_route: false,
            embeddings: false,
            rerank: false,
        };
        let s = spec_of(&e("https://bob:s3cret@api.example.org/v1/")).expect("https");
        assert_eq!(s.url, "https://api.example.org/v1");
        assert_eq!(s.basic_auth, Some(("bob".into(), "s3cret".into())));
        assert!(!format!("{s:?}").contains("s3cret"), "{s:?}");
        // Credentials over http:// to another host: refused unless allowed.
        let plain = e("http://bob:s3cret@models.example.org:8080/v1");
        let err = spec_of(&plain).expect_err("plain http to another host");
        assert!(!err.to_string().contains("s3cret"), "{err}");
        assert!(err.to_string().contains("allow_plain_http_key"), "{err}");
        let allowed = EndpointConfig {
            allow_plain_http_key: true,
            ..plain
        };
        assert_eq!(
            spec_of(&allowed).expect("allowed").url,
            "http://models.example.org:8080/v1"
        );
        // Loopback is this machine: no one is on the way.
        for url in [
            "http://u:p@127.0.0.1:8080/v1",
            "http://u:p@localhost:1/v1",
            "http://u:p@[::1]:8080/v1",
        ] {
            assert!(spec_of(&e(url)).is_ok(), "{url}");
        }
        assert!(!is_loopback("http://127.0.0.1.evil.org/v1"));
        // No credentials: nothing to protect.
        assert!(spec_of(&e("http://models.example.org:8080/v1")).is_ok());
    }
}
