//! The TUI's terminal hanging up (its window closed, an ssh session dropped): raglab
//! gets SIGHUP, can no longer draw or read keys, and still finishes the label saves
//! queued and in flight before it ends; the hang-up is in its log.

use std::time::{Duration, Instant};

use crate::common::Env;
use crate::common::tmux::Tmux;

const ITEMS: usize = 12;
/// The built-in rubric's criteria, each labelled `pass` (key `p`).
const CRITERIA: usize = 4;

/// Whether a raglab process on `env`'s workspace still runs.
fn running(env: &Env) -> bool {
    std::process::Command::new("pgrep")
        .arg("-f")
        .arg(env.workspace().display().to_string())
        .stdout(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_terminal_that_hangs_up_loses_no_label() {
    let env = Env::new();
    let dir = env.dir.path().to_path_buf();
    let items = dir.join("items.jsonl");
    let rows: String = (0..ITEMS)
        .map(|i| {
            format!(
                "{}\n",
                serde_json::json!({"item_id": format!("i{i:02}"), "question": format!("ITEM-i{i:02}: how is disease {i} prevented?"), "reference_answer": "R", "target_chunk": "T", "answer": "A"})
            )
        })
        .collect();
    std::fs::write(&items, rows).expect("items");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
    // No corpus and no model: only the Annotate pane has work.
    let no_models = dir.join("no-models");
    std::fs::create_dir_all(&no_models).expect("mkdir");
    let mut t = Tmux::new(&env);
    for (k, v) in &mut t.env {
        if k == "RAGLAB_MODELS_DIR" {
            *v = no_models.display().to_string();
        }
    }
    t.start("ann", &["--reviewer", "ann"], &dir);
    t.type_text("ann", "4");
    t.wait("ann", Duration::from_secs(20), |s| {
        s.contains(&format!("item 1/{ITEMS}"))
    });
    // Every label as fast as keys go, then the terminal hangs up as soon as the last
    // key is taken, saves still in flight or queued.
    let keys = format!("{}]", "p".repeat(CRITERIA)).repeat(ITEMS);
    t.type_text("ann", &keys);
    t.wait("ann", Duration::from_secs(20), |s| {
        s.contains(&format!("{ITEMS}/{ITEMS} done"))
    });
    let st = t
        .tmux()
        .args(["kill-session", "-t", "ann"])
        .status()
        .expect("tmux");
    assert!(st.success());
    let hung_up = Instant::now();
    while running(&env) {
        assert!(
            hung_up.elapsed() < Duration::from_secs(30),
            "raglab still runs 30 s after its terminal hung up"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let log = std::fs::read_to_string(dir.join("data/logs/raglab.log")).expect("log");
    assert!(log.contains("the terminal hung up"), "{log}");
    let out = env.ok(&["--role", "lead", "labels", "export", "--format", "jsonl"]);
    let saved = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.contains("\"reviewer\":\"ann\""))
        .count();
    assert_eq!(
        saved,
        ITEMS * CRITERIA,
        "every label given before the hang-up"
    );
}
