//! Servers that misbehave: a real HTTP server on 127.0.0.1 ([`common::hostile`]) that
//! streams forever, trickles a byte at a time, sends a 1 GB line or 64 MiB of blank
//! lines, answers HTML, fails with 500 or never sends its headers. Each request to it
//! ends with a clear error within its deadline and raglab's memory stays bounded; a
//! server that breaks the protocol is not asked again; one that does not say what kind
//! of server it is gets no chat request; in a pool beside a real
//! llama-server, the batch is finished by the good server with no answer lost or
//! produced twice.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::Env;
use common::hostile::{self, Hostile, Mode};
use common::server::Server;
use raglab::core::prompt::{ChatMessage, PromptText};
use raglab::core::sampling::Sampling;
use raglab::infer::endpoint::{Endpoint, EndpointError, EndpointSpec};

const IDLE: Duration = Duration::from_secs(2);
const DEADLINE: Duration = Duration::from_secs(4);

/// Peak resident memory of this process so far, in KiB (`VmHWM`).
fn peak_rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .expect("status")
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmHWM")
}

fn ask(server: &Hostile) -> (Result<String, EndpointError>, Duration) {
    let mut spec = EndpointSpec::new(server.url());
    spec.idle_timeout = IDLE;
    spec.request_timeout = DEADLINE;
    let endpoint = Endpoint::new(spec).expect("endpoint");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let messages = [ChatMessage::user(PromptText::untrusted("Say hello."))];
    let sampling = Sampling {
        max_tokens: 16,
        ..Sampling::default()
    };
    let stop = AtomicBool::new(false);
    let started = Instant::now();
    let reply = rt.block_on(endpoint.chat(&messages, &sampling, None, &stop, &mut |_| {}));
    (reply.map(|r| r.text), started.elapsed())
}

#[test]
fn every_misbehaving_server_ends_in_a_clear_error_within_its_deadline() {
    let before = peak_rss_kib();
    for mode in hostile::ALL {
        let server = Hostile::start(&[mode]);
        let (reply, took) = ask(&server);
        let err = reply.expect_err("a misbehaving server gives no answer");
        let text = err.to_string();
        let expected = match mode {
            Mode::Endless => "does not honour the limit",
            Mode::Trickle => "longer than the request's deadline of 4 s",
            Mode::HugeLine => "line of the stream is over 1 MiB",
            Mode::WrongType => "text/html, not an event stream",
            Mode::Error500 => "HTTP 500",
            Mode::SlowHeaders => "no response for 2 s",
            Mode::BlankLines => "lines for max_tokens 16: blank lines or comments",
        };
        assert!(text.contains(expected), "{mode:?}: {text}");
        // A server that broke the protocol is not asked again; one that was slow or
        // failed may answer later.
        let broke = matches!(
            mode,
            Mode::Endless | Mode::HugeLine | Mode::WrongType | Mode::BlankLines
        );
        assert_eq!(err.violation(), broke, "{mode:?}: {text}");
        assert_eq!(err.retryable(), !broke, "{mode:?}: {text}");
        // Within the probe's wait (at most the idle timeout) and the request's
        // deadline, plus what a busy 2-core machine may add to a wait.
        assert!(
            took < IDLE + DEADLINE + Duration::from_secs(3),
            "{mode:?} took {took:?}"
        );
        eprintln!("{mode:?}: {:.2} s: {text}", took.as_secs_f64());
        // Two requests: the probe asking what kind of server this is (`GET /props`),
        // which none of them answers as a llama-server does, then the chat request.
        assert_eq!(server.requests.load(Ordering::Relaxed), 2, "{mode:?}");
    }
    let grew = peak_rss_kib().saturating_sub(before);
    eprintln!("peak RSS grew by {grew} KiB over the seven servers");
    // A 1 GB line would take 1 GB if buffered; the caps keep it near a few MiB.
    assert!(grew < 64 * 1024, "peak RSS grew by {grew} KiB");
}

/// A server that does not say what it is in time: the probe (`GET /props`) gets no
/// status line, and the request ends as a timeout a pool may retry. No chat request
/// is sent: had it fallen back to `/chat/completions`, a llama-server too busy to
/// answer its probe would have parsed the control tokens in the untrusted question.
#[test]
fn a_probe_without_an_answer_sends_nothing_on_the_chat_route() {
    for props in [Mode::SlowHeaders, Mode::Trickle, Mode::Endless] {
        let server = Hostile::with_props(&[Mode::Error500], props);
        let (reply, took) = ask(&server);
        let err = reply.expect_err("no answer without knowing the server");
        let text = err.to_string();
        assert!(
            matches!(err, EndpointError::Timeout { .. }),
            "{props:?}: {text}"
        );
        assert!(text.contains("/props"), "{props:?}: {text}");
        assert!(text.contains("chat_route = true"), "{props:?}: {text}");
        assert!(err.retryable(), "{props:?}: {text}");
        assert!(
            took < IDLE + Duration::from_secs(3),
            "{props:?} took {took:?}"
        );
        // The probe only: had the chat request been sent, it would have got the 500.
        assert_eq!(
            server.requests.load(Ordering::Relaxed),
            1,
            "{props:?}: {text}"
        );
    }
}

#[test]
fn a_pool_with_a_hostile_server_finishes_its_batch_on_the_good_one() {
    let tmp = tempfile::tempdir().expect("tmp");
    let good = Server::start(tmp.path(), "good");
    let bad = Hostile::start(&hostile::ALL);
    let env = Env::new();
    let dir = common::two_pages(env.dir.path());
    env.ok(&["ingest", dir.to_str().expect("utf8"), "--index"]);
    let config_dir = env.dir.path().join("config");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "[[endpoints]]\nurl = \"{}\"\ntimeout_s = 2\nrequest_timeout_s = 4\n\n\
             [[endpoints]]\nurl = \"{}\"\ntimeout_s = 60\n",
            bad.url(),
            good.url()
        ),
    )
    .expect("config");
    let q = env.dir.path().join("q.jsonl");
    let mut lines = String::new();
    for i in 0..4 {
        lines.push_str(&format!(
            "{{\"id\": \"q{i}\", \"text\": \"How is rabies prevented? (case {i})\", \"answer\": \"ref\", \"relevant\": [\"rabies#prevention\"]}}\n"
        ));
    }
    std::fs::write(&q, lines).expect("questions");
    let started = Instant::now();
    env.ok(&[
        "generate",
        "--questions",
        q.to_str().expect("utf8"),
        "--run",
        "pool",
        "--k",
        "2",
        "--max-tokens",
        "12",
    ]);
    eprintln!(
        "batch of 4 beside a hostile server: {:.1} s, {} requests to it",
        started.elapsed().as_secs_f64(),
        bad.requests.load(Ordering::Relaxed)
    );
    let all = env.json(&["report", "answers", "--run", "pool", "--list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("answers");
    assert_eq!(all.len(), 4, "one answer per question");
    let ids: HashSet<&str> = all
        .iter()
        .filter_map(|a| a["question_id"].as_str())
        .collect();
    assert_eq!(ids.len(), 4, "no question answered twice");
    for a in &all {
        assert_eq!(a["endpoint"].as_str(), Some(good.url().as_str()), "{a}");
    }
    assert!(
        bad.requests.load(Ordering::Relaxed) >= 1,
        "the hostile server was tried"
    );
}

/// The case that cost 102 s: one endpoint that streams past `max_tokens`. It is asked
/// once; the run ends with the reason, not after six requests.
#[test]
fn a_server_that_ignores_max_tokens_is_asked_once() {
    let bad = Hostile::start(&[Mode::Endless]);
    let env = Env::new();
    let config_dir = env.dir.path().join("config");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::write(
        config_dir.join("config.toml"),
        format!("[[endpoints]]\nurl = \"{}\"\ntimeout_s = 5\n", bad.url()),
    )
    .expect("config");
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"id\": \"q0\", \"text\": \"How is rabies prevented?\", \"answer\": \"ref\", \"relevant\": []}\n",
    )
    .expect("questions");
    let started = Instant::now();
    let out = env
        .cmd()
        .args([
            "generate",
            "--questions",
            q.to_str().expect("utf8"),
            "--run",
            "endless",
            "--no-retrieval",
            "--max-tokens",
            "16",
        ])
        .output()
        .expect("spawn raglab");
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("does not honour the limit"), "{stderr}");
    assert!(stderr.contains("not asked again"), "{stderr}");
    // The probe (`GET /props`) and one chat request.
    assert_eq!(bad.requests.load(Ordering::Relaxed), 2, "{stderr}");
    eprintln!("ended in {:.1} s: {stderr}", took.as_secs_f64());
    assert!(took < Duration::from_secs(30), "took {took:?}");
}
