//! The Generate pane on an OpenAI-compatible endpoint: a real `llama-server` (SmolLM2)
//! is the configured chat endpoint; the TUI, started the way `raglab` starts it
//! (`tui::build_app` + the real background jobs), is driven by keys: `2`, `/`, the
//! question typed, `enter`, `g`. The pane must stream the server's tokens (partial
//! text on screen before the answer is complete), show the endpoint, tokens/s and time
//! to first token on its live line, and store the answer with the endpoint's
//! provenance. The reference is the server itself: the same messages and sampling
//! sent to it directly, without streaming, give the same greedy text. Then `r` and
//! `s`: a regeneration stopped after a few tokens is kept, marked stopped.

use crate::common;

use std::time::Duration;

use crossterm::event::KeyCode;
use raglab::config::{Config, DEFAULT_EMBED_MODEL, EndpointConfig, Paths};
use raglab::core::sampling::Sampling;
use raglab::service::Context;
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::generate::{GeneratePane, GenerateSettings};
use tokio::sync::mpsc::UnboundedReceiver;

use common::server::{Server, request};

fn key(app: &mut App, jobs: &mut Jobs, code: KeyCode) {
    common::tui::key(app, jobs, code);
}

/// The messages applied until `done` holds, with the screens drawn after each.
async fn pump(
    jobs: &mut Jobs,
    app: &mut App,
    rx: &mut UnboundedReceiver<Msg>,
    done: impl Fn(&Jobs, &App) -> bool,
) -> Vec<String> {
    common::tui::pump(jobs, app, rx, done, Duration::from_secs(180), (160, 40)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generate_pane_streams_from_an_endpoint_and_stops() {
    let env = common::Env::new();
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let server = Server::start(env.dir.path(), "chat");

    let mut config = Config::default();
    config.models.embed = Some(common::model(DEFAULT_EMBED_MODEL));
    config.endpoints = vec![EndpointConfig {
        url: server.url(),
        model: None,
        api_key_env: None,
        max_concurrent: 1,
        timeout_s: Some(120),
        request_timeout_s: None,
        allow_plain_http_key: false,
        context_tokens: Some(2048),
        standard_sampling: false,
        chat_route: false,
        embeddings: false,
        rerank: false,
    }];
    // A presenter's second template, switched to with `t` before the first answer.
    let citing = common::repo().join("assets/prompts/free-form-citing.txt");
    config.prompts.free_form_alternatives = vec![citing.clone()];
    let paths = Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    let ctx = Context::with(paths, config, &env.workspace()).expect("context");
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, mut rx) = Jobs::new(&ctx);
    jobs.load_background();
    key(&mut app, &mut jobs, KeyCode::Char('2'));
    pump(&mut jobs, &mut app, &mut rx, |j, a| {
        assert!(a.query.status().is_none(), "{:?}", a.query.status());
        j.retriever_ready()
    })
    .await;
    key(&mut app, &mut jobs, KeyCode::Char('/'));
    for c in "How is rabies prevented?".chars() {
        key(&mut app, &mut jobs, KeyCode::Char(c));
    }
    key(&mut app, &mut jobs, KeyCode::Enter);
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        !a.query.is_busy() && !a.query.whole().is_pending()
    })
    .await;

    // Greedy, so the server's own answer to the same request is the reference.
    let sampling = Sampling {
        temperature: 0.0,
        max_tokens: 40,
        seed: 7,
        ..Sampling::default()
    };
    app.generate = GeneratePane::new(GenerateSettings {
        sampling: sampling.clone(),
        ..raglab::tui::generate_settings(&ctx).0
    });
    key(&mut app, &mut jobs, KeyCode::Char('3'));
    assert!(common::screen(&app, 160, 40).contains("prompt shipped (1 of 2, t switches)"));
    key(&mut app, &mut jobs, KeyCode::Char('t'));
    assert!(common::screen(&app, 160, 40).contains("prompt free-form-citing (2 of 2, t switches)"));
    key(&mut app, &mut jobs, KeyCode::Char('g'));
    let screens = pump(&mut jobs, &mut app, &mut rx, |_, a| {
        !a.generate.is_running()
    })
    .await;
    let rec = app.generate.last().cloned().expect("an answer was stored");
    // The answer was made with the template switched to, and records it: its name,
    // the SHA-256 of the file's text (computed here independently), its wording.
    use sha2::Digest;
    let sha = format!(
        "{:x}",
        sha2::Sha256::digest(std::fs::read(&citing).expect("template"))
    );
    assert_eq!(rec.template.as_deref(), Some("free-form-citing"));
    assert_eq!(rec.template_sha256.as_deref(), Some(sha.as_str()));
    assert!(
        rec.prompt.contains("cite the chunk or chunks"),
        "{}",
        rec.prompt
    );
    key(&mut app, &mut jobs, KeyCode::Char('v'));
    let prompt_view = common::screen(&app, 160, 40);
    assert!(
        prompt_view.contains(&format!("template free-form-citing@{}", &sha[..12])),
        "{prompt_view}"
    );
    key(&mut app, &mut jobs, KeyCode::Char('v'));
    assert_eq!(app.generate.status(), Some("answer saved"));
    assert!(!rec.answer.trim().is_empty(), "empty answer");
    assert_eq!(rec.endpoint.as_deref(), Some(server.url().as_str()));
    assert!(
        rec.served_model
            .as_deref()
            .is_some_and(|m| m.contains("SmolLM2")),
        "served model {:?}",
        rec.served_model
    );
    assert!(rec.ttft_ms > 0.0 && rec.output_tokens > 1);

    // Streamed: some screen drawn while generating showed part of the answer only.
    let first_word: String = rec.answer.split_whitespace().next().expect("a word").into();
    let partial = screens
        .iter()
        .any(|s| s.contains("generating") && s.contains(&first_word) && s.contains("tok/s"));
    assert!(partial, "no screen showed the answer while it streamed");
    let last = common::screen(&app, 160, 40);
    let live = last
        .lines()
        .find(|l| l.contains("tok/s"))
        .expect("live line");
    assert!(
        live.contains(&format!("endpoint {}", server.url())),
        "{live}"
    );
    assert!(live.contains("ttft ") && !live.contains("ttft -"), "{live}");
    let head: String = rec
        .answer
        .lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(30)
        .collect();
    assert!(
        last.contains(head.trim()),
        "answer `{head}` not on screen:\n{last}"
    );

    // The server's answer to the same messages and sampling, asked directly.
    let messages: serde_json::Value = serde_json::from_str(&rec.prompt).expect("messages JSON");
    let body = serde_json::json!({
        "messages": messages, "stream": false, "cache_prompt": false,
        "temperature": 0.0, "top_p": sampling.top_p, "top_k": sampling.top_k,
        "min_p": sampling.min_p, "repeat_penalty": sampling.repeat_penalty,
        "repeat_last_n": sampling.repeat_last_n, "seed": sampling.seed,
        "max_tokens": sampling.max_tokens,
    });
    let (status, reply) =
        request(server.port, "/v1/chat/completions", Some(&body.to_string())).expect("reply");
    assert_eq!(status, 200, "{reply}");
    let reply: serde_json::Value = serde_json::from_str(&reply).expect("JSON");
    let want = reply["choices"][0]["message"]["content"]
        .as_str()
        .expect("content");
    assert_eq!(
        rec.answer, want,
        "the pane's answer differs from the server's"
    );
    eprintln!(
        "endpoint answer in the Generate pane: ttft {:.1} ms, {} tokens, {:.1} tok/s",
        rec.ttft_ms, rec.output_tokens, rec.gen_tokens_per_s
    );

    // `r` regenerates (next seed); `s` stops it after a few streamed tokens.
    app.generate = GeneratePane::new(GenerateSettings {
        sampling: Sampling {
            max_tokens: 400,
            ..Sampling::default()
        },
        ..raglab::tui::generate_settings(&ctx).0
    });
    key(&mut app, &mut jobs, KeyCode::Char('r'));
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        a.generate.tokens() >= 3 || !a.generate.is_running()
    })
    .await;
    assert!(
        app.generate.is_running(),
        "finished before it could be stopped"
    );
    key(&mut app, &mut jobs, KeyCode::Char('s'));
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        !a.generate.is_running()
    })
    .await;
    let stopped = app.generate.last().cloned().expect("stopped answer stored");
    assert!(stopped.stopped, "not marked stopped");
    assert!(
        stopped.output_tokens < 400,
        "{} tokens",
        stopped.output_tokens
    );
    assert_eq!(app.generate.status(), Some("stopped: partial answer saved"));
    assert_eq!(stopped.endpoint.as_deref(), Some(server.url().as_str()));
    jobs.settle(Duration::from_secs(10)).await;
}
