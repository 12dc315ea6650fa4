//! Untrusted text never drives the terminal: ESC (CSI and OSC), BEL and bidi controls
//! injected into every user-controlled field never reach a pane's cells or a CLI text
//! line, and an OSC payload (a window-title change) is removed with its controls.

use crate::common;

use common::Env;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::config::{Config, Paths};
use raglab::core::text::is_terminal_safe;
use raglab::service::Context;
use raglab::service::base::parse_rubric;
use raglab::tui::app::Pane;
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::generate::{GeneratePane, GenerateSettings};

/// The injection: clears the screen, sets the window title to PWNED, rings the bell
/// and reverses the rest of the line.
const EVIL: &str = "\u{1b}[2J\u{1b}]0;PWNED\u{7}\u{7}\u{202e}\u{2066}\u{200f}";

fn evil(s: &str) -> String {
    format!("{s}{EVIL}{s}")
}

fn check(what: &str, text: &str) {
    assert!(
        is_terminal_safe(text),
        "{what}: a control or bidi character got through:\n{text:?}"
    );
    assert!(
        !text.contains("PWNED"),
        "{what}: the OSC payload got through:\n{text}"
    );
}

/// A workspace whose every user-controlled field carries the injection: document
/// title, topic, header path and text; question id and text; item question, answer,
/// reference and target; label notes; a file name in the ingest report.
fn evil_workspace() -> (Env, std::path::PathBuf) {
    let env = Env::new();
    let docs = env.dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("docs");
    std::fs::write(
        docs.join("doc.md"),
        format!(
            "---\ntitle: {}\ntopic: {}\n---\n# {}\n\n## {}\n\n{}\n",
            evil("Title"),
            evil("Topic"),
            evil("Measles"),
            evil("Vaccination"),
            evil("Two doses of MMR vaccine protect children.")
        ),
    )
    .expect("doc");
    // An empty file with an injected name: skipped, and named in the report.
    std::fs::write(docs.join(format!("{}.md", evil("empty"))), "").expect("empty");
    let out = env.ok(&["ingest", docs.to_str().expect("utf8")]);
    check("ingest", &String::from_utf8_lossy(&out.stdout));
    check("ingest stderr", &String::from_utf8_lossy(&out.stderr));
    env.ok(&["index", "--sparse-only"]);
    let chunk = env.json(&["corpus", "list", "--json"])["items"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let q = env.dir.path().join("q.jsonl");
    let line = serde_json::json!({
        "id": evil("q1"), "text": evil("MMR vaccine doses"), "relevant": [chunk, "gone"],
        "topic": evil("topic"), "answer": evil("two doses"),
    });
    std::fs::write(&q, format!("{line}\n")).expect("questions");
    let items = env.dir.path().join("items.jsonl");
    let item = serde_json::json!({
        "item_id": "i1", "question": evil("Q"), "answer": evil("A"),
        "reference_answer": evil("R"), "target_chunk": evil("T"),
    });
    std::fs::write(&items, format!("{item}\n")).expect("items");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
    let labels = env.dir.path().join("labels.jsonl");
    let rows: String = ["ann", "bob"]
        .iter()
        .map(|r| {
            format!(
                "{}\n",
                serde_json::json!({"item_id": "i1", "reviewer": r, "criterion": "clarity",
                    "label": "pass", "note": evil("note")})
            )
        })
        .collect();
    std::fs::write(&labels, rows).expect("labels");
    env.ok(&["labels", "import", labels.to_str().expect("utf8")]);
    (env, q)
}

#[test]
fn cli_text_output_is_clean() {
    let (env, q) = evil_workspace();
    let chunk = env.json(&["corpus", "list", "--json"])["items"][0]["id"]
        .as_str()
        .expect("id")
        .to_string();
    let qs = q.to_str().expect("utf8");
    for args in [
        vec!["corpus", "list"],
        vec!["corpus", "stats"],
        vec!["corpus", "show", &chunk],
        vec!["search", "MMR vaccine", "--method", "bm25"],
        vec!["eval", "retrieval", "--queries", qs, "--methods", "bm25"],
        vec!["--role", "lead", "labels", "history", "i1"],
        vec![
            "--role",
            "lead",
            "agree",
            "--reviewers",
            "ann,bob",
            "--bootstrap",
            "50",
        ],
    ] {
        let out = env.cmd().args(&args).output().expect("spawn");
        check(
            &format!("{args:?} stdout"),
            &String::from_utf8_lossy(&out.stdout),
        );
        check(
            &format!("{args:?} stderr"),
            &String::from_utf8_lossy(&out.stderr),
        );
    }
    // The JSON output stays exact: the injected text is there, escaped by serde.
    let json = env.ok(&["corpus", "list", "--json"]);
    let text = String::from_utf8_lossy(&json.stdout);
    assert!(text.contains("\\u001b]0;PWNED\\u0007"), "{text}");
}

#[tokio::test]
async fn every_pane_is_clean() {
    let (env, q) = evil_workspace();
    let paths = Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    let config = Config {
        questions: Some(q),
        ..Config::default()
    };
    let ctx = Context::with(paths, config, &env.workspace()).expect("context");
    let opts = raglab::tui::TuiOptions {
        reviewer: Some("ann".into()),
        ..Default::default()
    };
    let mut app = raglab::tui::build_app(&ctx, &opts, Keymap::default_keymap())
        .await
        .expect("app");
    let study = raglab::service::study::load_study(&ctx)
        .await
        .expect("study");
    app.annotate.set_rubric(
        parse_rubric(&format!(
        "name = {}\nversion = \"1\"\n[[criteria]]\nkey = \"clarity\"\nname = {}\ndefinition = {}\n",
        toml_string(&evil("Rubric")),
        toml_string(&evil("Clarity")),
        toml_string(&evil("Is it clear?"))
    ))
    .expect("rubric"),
    );
    // Both reviewers submitted the item's one criterion: revealed, so the other
    // reviewer's label and note are on screen too.
    app.annotate
        .load(study.items, study.labels, std::collections::HashMap::new());
    app.pane = Pane::Annotate;
    app.handle_key(KeyEvent::new(KeyCode::Char('r'), KeyModifiers::NONE));
    app.generate = GeneratePane::new(GenerateSettings {
        model: evil("model.gguf"),
        ..GenerateSettings::default()
    });
    app.message = Some(evil("status"));
    app.query.say(evil("query status"));
    app.generate.say(evil("generate status"));
    app.annotate.say(evil("annotate status"));
    app.agreement.on_result(raglab::service::study::Agreement {
        reviewers: ("ann".into(), "bob".into()),
        ..Default::default()
    });
    app.agreement.say(evil("agreement status"));
    app.pane = Pane::Annotate;
    let annotate = common::screen(&app, 160, 45);
    assert!(
        annotate.contains("bob: "),
        "the revealed path is drawn: {annotate}"
    );
    for pane in Pane::ALL {
        app.pane = pane;
        app.show_help = false;
        check(&format!("{pane:?}"), &common::screen(&app, 160, 45));
        app.show_help = true;
        check(&format!("{pane:?} help"), &common::screen(&app, 160, 45));
    }
    // The question list and the typed text reach the Query pane's screen too.
    app.show_help = false;
    app.pane = Pane::Query;
    let screen = common::screen(&app, 160, 45);
    assert!(
        screen.contains("MMR vaccine dosesMMR vaccine doses") || screen.contains("q1q1"),
        "{screen}"
    );
}

/// A TOML basic string (JSON's escapes are TOML's).
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).expect("json string")
}
