//! Two real answer runs judged by a real model, for the tests of `report answers
//! --compare` and the Generate pane's Compare view: SmolLM2 answers four sample
//! questions over five sample documents with retrieval (`rag`: hybrid, k = 2) and
//! without (`bare`), and SmolLM2 judges every answer once under the rubric's grammar.
//! One question's text carries a terminal escape sequence and a bidi override, as an
//! untrusted question may.

use super::{Env, sample_questions};

/// The sample questions the runs answer (their targets are in [`super::FIVE_DOCS`]).
pub const QUESTIONS: [&str; 4] = [
    "q-CDC_QA-0000038-1",
    "q-CDC_QA-0000241-1",
    "q-CDC_QA-0000244-1",
    "q-CDC_QA-0000342-6",
];

/// The question whose text is made hostile, and what is appended to it: an OSC
/// sequence that would retitle the window (its payload `pwn3d-title` must not show) and a
/// right-to-left override.
pub const HOSTILE_ID: &str = "q-CDC_QA-0000342-6";
pub const HOSTILE_TAIL: &str = " \u{1b}]0;pwn3d-title\u{7}\u{202e}tail";

/// Ingest and index the five documents, answer [`QUESTIONS`] in runs `rag` and
/// `bare` (16 tokens at most), judge them all; returns the questions file.
pub fn judged_runs(env: &Env) -> std::path::PathBuf {
    super::five_docs_indexed(env);
    let mut lines = String::new();
    for mut q in sample_questions() {
        let id = q["id"].as_str().expect("id").to_string();
        if !QUESTIONS.contains(&id.as_str()) {
            continue;
        }
        if id == HOSTILE_ID {
            let text = format!("{}{HOSTILE_TAIL}", q["text"].as_str().expect("text"));
            q["text"] = serde_json::Value::String(text);
        }
        lines.push_str(&format!("{q}\n"));
    }
    let file = env.dir.path().join("questions.jsonl");
    std::fs::write(&file, lines).expect("write questions");
    let qs = file.to_str().expect("utf8");
    let base = ["generate", "--questions", qs, "--max-tokens", "16"];
    env.ok(&[&base[..], &["--run", "rag", "--k", "2"]].concat());
    env.ok(&[&base[..], &["--run", "bare", "--no-retrieval"]].concat());
    env.ok(&["judge"]);
    file
}
