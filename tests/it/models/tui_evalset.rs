//! The Evalset pane (7) on real candidates: a few written and critiqued by the small
//! model through the binary, then paged in the TUI (started as `raglab` starts it,
//! with its real background jobs) by key presses; a candidate rejected and another
//! accepted by hand are stored, shown again after a restart, and honoured by `raglab
//! evalset filter`. What the screen shows is checked against `evalset list --json`.

use crate::common;

use std::time::Duration;

use raglab::config::Config;
use raglab::tui::app::{App, Pane};
use raglab::tui::jobs::{Jobs, Msg};
use raglab::tui::keymap::Keymap;
use serde_json::Value;

type Rx = tokio::sync::mpsc::UnboundedReceiver<Msg>;

fn render(app: &App) -> String {
    common::screen(app, 200, 40)
}

async fn start(env: &common::Env) -> (App, Jobs, Rx) {
    let ctx = common::context(env, Config::default());
    let app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, rx) = Jobs::new(&ctx);
    jobs.load_background();
    (app, jobs, rx)
}

/// Open the pane and wait for the candidates.
async fn open(app: &mut App, jobs: &mut Jobs, rx: &mut Rx) {
    common::press(app, jobs, '7');
    assert_eq!(app.pane, Pane::Evalset);
    common::pump(jobs, app, rx, Duration::from_secs(60), |a| {
        !a.evalset.is_loading() && a.evalset.is_loaded()
    })
    .await;
}

/// Press a decision key and wait until it is stored and the candidates read again.
async fn decide(app: &mut App, jobs: &mut Jobs, rx: &mut Rx, key: char) {
    common::press(app, jobs, key);
    assert_eq!(app.evalset.saves_in_flight(), 1, "the decision is sent");
    common::pump(jobs, app, rx, Duration::from_secs(60), |a| {
        a.evalset.saves_in_flight() == 0 && !a.evalset.is_loading()
    })
    .await;
}

fn list(env: &common::Env) -> Vec<Value> {
    env.json(&["evalset", "list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("list")
}

/// The screen row of the pane's detail that starts with `label`.
fn field<'a>(screen: &'a str, label: &str) -> &'a str {
    screen
        .lines()
        .find_map(|l| l.split_once(&format!("│{label}")).map(|(_, r)| r))
        .unwrap_or_else(|| panic!("no `{label}` on screen:\n{screen}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn analyst_pages_candidates_and_decides_by_hand() {
    let env = common::Env::new();
    let dir = common::two_pages(env.dir.path());
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    env.ok(&[
        "evalset",
        "generate",
        "--min-words",
        "1",
        "--max-tokens",
        "80",
    ]);
    env.ok(&["evalset", "critique"]);
    let cands = list(&env);
    assert!(cands.len() >= 2, "two pages give at least two candidates");

    let (mut app, mut jobs, mut rx) = start(&env).await;
    open(&mut app, &mut jobs, &mut rx).await;
    let s = render(&app);
    assert!(s.contains(&format!("Candidates 1/{}", cands.len())), "{s}");
    let first = &cands[0];
    let q = first["candidate"]["question"].as_str().expect("question");
    assert!(field(&s, "question  ").contains(q), "{s}");
    assert!(
        field(&s, "id        ").contains(first["candidate"]["candidate_id"].as_str().expect("id"))
    );
    // Each score as stored, with its threshold.
    for (axis, min) in [
        ("groundedness", "(>= 3)"),
        ("usefulness", "(>= 3)"),
        ("tautology", "(not applied)"),
    ] {
        let row = field(&s, &format!("  {axis}"));
        let score = first["critique"][axis].as_u64().expect("score");
        assert!(
            row.trim_start().starts_with(&format!("{score} {min}")),
            "{axis}: {row}"
        );
    }
    assert!(field(&s, "decision  ").starts_with("none"));
    assert!(field(&s, "filter    ").starts_with(first["verdict"].as_str().expect("v")));

    // Reject the first, move down, accept the second.
    decide(&mut app, &mut jobs, &mut rx, 'x').await;
    let s = render(&app);
    assert!(field(&s, "decision  ").starts_with("reject"), "{s}");
    assert!(
        field(&s, "filter    ").starts_with("rejected_by_hand"),
        "{s}"
    );
    common::press(&mut app, &mut jobs, 'j');
    let second = &cands[1];
    let s = render(&app);
    assert!(s.contains(&format!("Candidates 2/{}", cands.len())));
    assert!(field(&s, "question  ").contains(second["candidate"]["question"].as_str().expect("q")));
    decide(&mut app, &mut jobs, &mut rx, 'a').await;
    let s = render(&app);
    assert!(field(&s, "decision  ").starts_with("accept"), "{s}");
    assert!(s.contains("✓"), "the list marks the accepted candidate");
    assert!(s.contains("✗"), "and the rejected one");

    // The help overlay lists the pane's keys from the keymap.
    common::press(&mut app, &mut jobs, '?');
    let help = common::screen(&app, 200, 80);
    assert!(help.contains("Accept the candidate by hand"), "{help}");
    assert!(help.contains("Reject the candidate by hand"));
    common::press(&mut app, &mut jobs, '?');
    drop((app, jobs, rx));

    // Stored: a restarted TUI shows both decisions, and the filter honours them.
    let (mut app, mut jobs, mut rx) = start(&env).await;
    open(&mut app, &mut jobs, &mut rx).await;
    let s = render(&app);
    assert!(field(&s, "decision  ").starts_with("reject"), "{s}");
    common::press(&mut app, &mut jobs, 'j');
    assert!(field(&render(&app), "decision  ").starts_with("accept"));
    let out = env.dir.path().join("set.jsonl");
    let r = env.json(&[
        "evalset",
        "filter",
        "--out",
        out.to_str().expect("utf8"),
        "--json",
    ]);
    let verdict = |id: &Value| {
        r["verdicts"]
            .as_array()
            .expect("verdicts")
            .iter()
            .find(|v| v["candidate_id"] == *id)
            .map(|v| v["verdict"].clone())
            .expect("verdict")
    };
    assert_eq!(
        verdict(&first["candidate"]["candidate_id"]),
        "rejected_by_hand"
    );
    assert_eq!(verdict(&second["candidate"]["candidate_id"]), "kept");
    // `c` clears the decision again.
    decide(&mut app, &mut jobs, &mut rx, 'c').await;
    assert!(field(&render(&app), "decision  ").starts_with("none"));
    let listed = list(&env);
    assert_eq!(listed[1]["decision"], Value::Null);
    assert_eq!(listed[0]["decision"], "reject");
}
