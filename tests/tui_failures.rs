//! The analyst's path from an evaluation to its failures: `eval retrieval` on the
//! sample writes its failed questions; the TUI, started the way `raglab` starts it
//! (`tui::build_app` + the real background jobs), loads them, and `n` / `p` in the
//! Query pane step through them, each showing its question and its target line with
//! the rank the evaluation reported.

mod common;

use std::time::Duration;

use raglab::config::{Config, DEFAULT_EMBED_MODEL, Paths};
use raglab::service::Context;
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use raglab::tui::keymap::Keymap;
use tokio::sync::mpsc::UnboundedReceiver;

fn render(app: &App) -> String {
    common::screen(app, 220, 50)
}

fn press(app: &mut App, jobs: &mut Jobs, c: char) {
    common::tui::press(app, jobs, c);
}

/// Run the event loop's message half until `done` holds.
async fn pump(
    jobs: &mut Jobs,
    app: &mut App,
    rx: &mut UnboundedReceiver<Msg>,
    done: impl Fn(&Jobs, &App) -> bool,
) {
    common::tui::pump(jobs, app, rx, done, Duration::from_secs(60), (0, 0)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_of_the_last_evaluation_are_stepped_through_in_the_query_pane() {
    let env = common::Env::new();
    let guidance = common::sample_guidance();
    env.ok(&["ingest", guidance.to_str().expect("utf8"), "--index"]);
    let questions = common::repo().join("sample-data/questions.jsonl");
    // Cut-off 1: every question whose target is not ranked first is a failure.
    env.ok(&[
        "eval",
        "retrieval",
        "--queries",
        questions.to_str().expect("utf8"),
        "--k",
        "1",
    ]);
    let file = env.workspace().join("eval/last-failures.json");
    let failures: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("failures file"))
            .expect("failures JSON");
    assert!(failures.len() >= 3, "{} failures", failures.len());

    let mut config = Config::default();
    config.models.embed = Some(common::model(DEFAULT_EMBED_MODEL));
    let paths = Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    let ctx = Context::with(paths, config, &env.workspace()).expect("context");
    let opts = raglab::tui::TuiOptions::default();
    let mut app = raglab::tui::build_app(&ctx, &opts, Keymap::default_keymap())
        .await
        .expect("app");
    assert_eq!(app.query.failures.len(), failures.len());
    let (mut jobs, mut rx) = Jobs::new(&ctx);
    jobs.load_background();
    press(&mut app, &mut jobs, '2');
    pump(&mut jobs, &mut app, &mut rx, |j, a| {
        assert!(a.query.status.is_none(), "{:?}", a.query.status);
        j.retriever_ready()
    })
    .await;

    let n = failures.len();
    let expect_shown = |screen: &str, pos: usize| {
        let f = &failures[pos];
        let text = f["text"].as_str().expect("text");
        let prefix: String = text.chars().take(30).collect();
        assert!(
            screen.contains(&format!("failure {}/{n}", pos + 1)),
            "failure {} of {n} not shown:\n{screen}",
            pos + 1
        );
        assert!(
            screen.contains(&prefix),
            "question `{prefix}` not shown:\n{screen}"
        );
        let target = f["relevant"][0].as_str().expect("target id");
        let target_line = screen
            .lines()
            .find(|l| l.contains(&format!("target {target}")))
            .unwrap_or_else(|| panic!("no target line for {target}:\n{screen}"));
        // The fused rank shown is the one the evaluation recorded (single targets).
        if f["relevant"].as_array().map(Vec::len) == Some(1) {
            let want = f["rank"]
                .as_u64()
                .map_or("hybrid not retrieved".to_string(), |r| {
                    format!("hybrid #{r}")
                });
            assert!(target_line.contains(&want), "{want} not in `{target_line}`");
            assert!(
                !target_line.contains("hybrid #1 "),
                "a failure at cut-off 1 is never ranked first: `{target_line}`"
            );
        }
    };
    for (key, pos) in [('n', 0), ('n', 1), ('n', 2), ('p', 1)] {
        press(&mut app, &mut jobs, key);
        pump(&mut jobs, &mut app, &mut rx, |_, a| !a.query.busy).await;
        assert_eq!(app.query.failure_pos, Some(pos));
        expect_shown(&render(&app), pos);
    }
}
