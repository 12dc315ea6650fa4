//! What a newcomer meets in the TUI on the shipped sample, driven through keys into
//! ratatui's TestBackend at 200 x 50 (no model: BM25 and TF-IDF only): the first
//! screen says the shipped generator is tiny and how to use a real one; a failure
//! opened from the browser shows its question in the Question box; the Why panel prints
//! each list once.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::tui::{key as press_key, press};
use crossterm::event::KeyCode;
use raglab::config::Config;
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use raglab::tui::keymap::Keymap;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

fn render(app: &App) -> String {
    common::screen(app, 200, 50)
}

/// The sample ingested with sparse indexes only, and evaluated with `methods` at
/// cut-off 1 (every question whose target is not first fails).
fn evaluated(methods: &str) -> (common::Env, Vec<Value>) {
    let env = common::Env::new();
    let guidance = common::sample_guidance();
    env.ok(&["ingest", guidance.to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let failures = common::eval_sample(&env, &["--methods", methods, "--k", "1"]);
    assert!(!failures.is_empty());
    (env, failures)
}

/// The default config, with an embedding model that is not there (dense off).
fn sparse_config(env: &common::Env) -> Config {
    let mut config = Config::default();
    config.models.embed = Some(env.dir.path().join("no-such-model.gguf"));
    config
}

/// The TUI as `raglab` opens it on `env`'s workspace without `--questions` or
/// `--reviewer` (the careless start), on the Query pane with retrieval loaded.
async fn open_query_pane(env: &common::Env) -> (App, Jobs, UnboundedReceiver<Msg>) {
    let ctx = common::tui::context(env, sparse_config(env));
    common::tui::on_query_pane(&ctx, &raglab::tui::TuiOptions::default()).await
}

/// `f`, `enter`: the browser's first failure opened; waits for its ranking.
async fn open_first_failure(app: &mut App, jobs: &mut Jobs, rx: &mut UnboundedReceiver<Msg>) {
    press(app, jobs, 'f');
    assert!(render(app).contains("Failures "), "{}", render(app));
    press_key(app, jobs, KeyCode::Enter);
    common::tui::pump(
        jobs,
        app,
        rx,
        |_, a| !a.query.is_busy() && a.query.lists().is_some() && !a.query.whole().is_pending(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
}

/// The text inside the Question box (the row under its title).
fn question_box(screen: &str) -> String {
    let lines: Vec<&str> = screen.lines().collect();
    let title = lines
        .iter()
        .position(|l| l.contains(" Question"))
        .unwrap_or_else(|| panic!("no Question box:\n{screen}"));
    lines[title + 1]
        .trim_matches(|c: char| c == '│' || c.is_whitespace())
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_screen_says_the_shipped_model_is_tiny_and_how_to_use_a_real_one() {
    let env = common::Env::new();
    env.ok(&["ingest", common::sample_guidance().to_str().expect("utf8")]);
    let ctx = common::tui::context(&env, sparse_config(&env));
    let app = raglab::tui::build_app(&ctx, &Default::default(), Keymap::default_keymap())
        .await
        .expect("app");
    let screen = render(&app);
    for want in [
        "The shipped model is tiny",
        "SmolLM2-135M-Instruct",
        "135 million parameters",
        "[models] generate = \"/path/model.gguf\"",
        "[[endpoints]]",
        "docs/guide-demo.md",
    ] {
        assert!(
            screen.contains(want),
            "`{want}` not on the first screen:\n{screen}"
        );
    }
    // The note sits under the corpus, which is still shown whole.
    assert!(screen.contains("Documents 59/59"), "{screen}");
    assert!(screen.contains("Chunk length (words)"), "{screen}");

    // With a GGUF of one's own, or an endpoint, there is nothing to warn about.
    let mut own = sparse_config(&env);
    own.models.generate = Some("/models/Qwen2.5-3B-Instruct-Q4_K_M.gguf".into());
    let app = raglab::tui::build_app(
        &common::tui::context(&env, own),
        &Default::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let screen = render(&app);
    assert!(!screen.contains("The shipped model is tiny"), "{screen}");
    assert!(screen.contains("Documents 59/59"), "{screen}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enter_on_a_failure_shows_its_question_in_the_question_box() {
    let (env, failures) = evaluated("bm25");
    let (mut app, mut jobs, mut rx) = open_query_pane(&env).await;
    assert_eq!(question_box(&render(&app)), "", "empty before");
    open_first_failure(&mut app, &mut jobs, &mut rx).await;
    let screen = render(&app);
    let text = failures[0]["text"].as_str().expect("text");
    let shown = question_box(&screen);
    assert!(
        !shown.is_empty() && text.starts_with(shown.trim_end_matches('…')),
        "Question box `{shown}`, failure `{text}`:\n{screen}"
    );
    assert!(screen.contains("failure 1/"), "{screen}");
    // Esc in the Question box's editor gives the question back, not an empty box.
    press(&mut app, &mut jobs, '/');
    press_key(&mut app, &mut jobs, KeyCode::Esc);
    assert_eq!(question_box(&render(&app)), shown);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_why_panel_prints_each_list_once() {
    let (env, failures) = evaluated("bm25,tfidf");
    let (mut app, mut jobs, mut rx) = open_query_pane(&env).await;
    open_first_failure(&mut app, &mut jobs, &mut rx).await;
    let f = &failures[0];
    let method = f["config"]["method"].as_str().expect("method");
    let screen = render(&app);
    assert!(screen.contains(&format!(" method {method} ")), "{screen}");
    for list in ["dense", "bm25", "tfidf"] {
        let rows: Vec<&str> = screen
            .lines()
            .filter(|l| l.contains(&format!("│{list} ")))
            .collect();
        assert_eq!(rows.len(), 1, "`{list}` rows: {rows:#?}\n{screen}");
    }
    // The ranked list's row is the evaluation's: its rank at the evaluated depth.
    let row = screen
        .lines()
        .find(|l| l.contains(&format!("│{method} ")))
        .expect("row");
    match f["rank"].as_u64() {
        Some(r) => assert!(row.contains(&format!("#{r} ")), "#{r} not in `{row}`"),
        None => assert!(row.contains("not in list"), "`{row}`"),
    }
    // Switching to hybrid (m: bm25 -> tfidf -> bm25 with dense off, so stay sparse):
    // still one row per list.
    press(&mut app, &mut jobs, 'm');
    let screen = render(&app);
    for list in ["bm25", "tfidf"] {
        let n = screen
            .lines()
            .filter(|l| l.contains(&format!("│{list} ")))
            .count();
        assert_eq!(n, 1, "`{list}`:\n{screen}");
    }
}

/// `env.cmd()`'s program, arguments and environment on a command that runs `program`
/// with `args` first, then raglab's program and arguments (`None`: as one shell line
/// in the last argument, followed by `redirect`).
fn wrapped(env: &common::Env, program: &str, args: &[&str], redirect: Option<&str>) -> Command {
    let inner = env.cmd();
    let mut c = Command::new(program);
    c.args(args);
    let raglab = std::iter::once(inner.get_program()).chain(inner.get_args());
    match redirect {
        None => {
            c.args(raglab);
        }
        Some(redirect) => {
            let quote =
                |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', r"'\''"));
            let line: Vec<String> = raglab.map(quote).collect();
            c.arg(format!(
                "stty cols 100 rows 30; {} {redirect}",
                line.join(" ")
            ));
            c.arg("/dev/null");
        }
    }
    for (k, v) in inner.get_envs() {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    c.env("RAGLAB_EXIT_AFTER_FIRST_FRAME", "1")
        .stdin(Stdio::null());
    c
}

/// Started where there is no terminal at all (no controlling terminal: a new session
/// with `setsid`, as in CI or a service), the TUI says so and how to run headless,
/// with a failing status, before it reads the workspace; no panic from the terminal
/// library.
#[test]
fn without_a_terminal_the_tui_says_so_instead_of_panicking() {
    let env = common::Env::new();
    let out = wrapped(&env, "setsid", &["-w"], None)
        .output()
        .expect("spawn setsid raglab");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("the TUI needs a terminal"), "{err}");
    assert!(err.contains("no terminal to read keys"), "{err}");
    assert!(err.contains("raglab --help"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// In a terminal (a pseudo-terminal from `script`), with standard output sent to a
/// file the TUI refuses (it would wait for keys with nothing on the screen); sent
/// through a pipe (`raglab | tee log`) it draws its frames through it.
#[test]
fn in_a_terminal_the_tui_draws_through_a_pipe_but_not_into_a_file() {
    let env = common::Env::new();
    let file = env.dir.path().join("frames.txt");
    let out = wrapped(
        &env,
        "script",
        &["-qec"],
        Some(&format!("> '{}'", file.display())),
    )
    .output()
    .expect("spawn script");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{shown}");
    assert!(shown.contains("the TUI needs a terminal"), "{shown}");
    assert!(shown.contains("neither a terminal nor a pipe"), "{shown}");
    let written = std::fs::read(&file).expect("the redirect's file");
    assert!(written.is_empty(), "{}", String::from_utf8_lossy(&written));

    let out = wrapped(&env, "script", &["-qec"], Some("| cat"))
        .output()
        .expect("spawn script");
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{shown}");
    assert!(!shown.contains("the TUI needs a terminal"), "{shown}");
    // The first frame: the tab bar and the empty Corpus pane's advice.
    assert!(shown.contains("1 Corpus"), "{shown}");
    assert!(shown.contains("No chunks yet"), "{shown}");
}

/// Started on an empty workspace (nothing ingested), the Query pane says why there is
/// nothing to rank and what to run, also after a question is asked (not "not ready").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_an_empty_workspace_a_question_says_what_to_ingest() {
    let env = common::Env::new();
    let ctx = common::tui::context(&env, sparse_config(&env));
    let (mut app, mut jobs, _rx) = query_pane_settled(&ctx).await;
    assert!(!jobs.retriever_ready());
    press(&mut app, &mut jobs, '/');
    for c in "measles".chars() {
        press(&mut app, &mut jobs, c);
    }
    press_key(&mut app, &mut jobs, KeyCode::Enter);
    let screen = render(&app);
    assert!(screen.contains("retrieval is unavailable"), "{screen}");
    assert!(screen.contains("raglab ingest"), "{screen}");
    assert!(!screen.contains("not ready"), "{screen}");
}

/// `R` on an empty workspace, before any question: the stage is on, and the table
/// says a question is needed instead of "reranking…" that would never end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rerank_on_before_any_question_says_to_run_one() {
    let env = common::Env::new();
    let ctx = common::tui::context(&env, sparse_config(&env));
    let (mut app, mut jobs, _rx) = query_pane_settled(&ctx).await;
    press(&mut app, &mut jobs, 'R');
    let screen = render(&app);
    assert!(screen.contains("rerank on: run a question"), "{screen}");
    assert!(!screen.contains("reranking…"), "{screen}");
}

/// The TUI opened on pane 2, once opening the retriever has ended (in failure, on an
/// empty workspace).
async fn query_pane_settled(
    ctx: &raglab::service::Context,
) -> (
    raglab::tui::app::App,
    raglab::tui::jobs::Jobs,
    tokio::sync::mpsc::UnboundedReceiver<raglab::tui::jobs::Msg>,
) {
    let (mut app, mut jobs, mut rx) =
        common::tui::opened(ctx, &raglab::tui::TuiOptions::default()).await;
    press(&mut app, &mut jobs, '2');
    common::tui::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |j, _| j.retriever_settled(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    (app, jobs, rx)
}
