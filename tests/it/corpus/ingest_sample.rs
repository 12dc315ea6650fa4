//! Ingesting the shipped sample corpus through the real binary.

use crate::common;

use std::collections::BTreeSet;

use common::{Env, sample_guidance, sample_questions};

#[test]
fn sample_corpus_gives_one_chunk_per_passage_and_matches_question_targets() {
    let env = Env::new();
    let guidance = sample_guidance();
    let summary = env.json(&["ingest", guidance.to_str().expect("utf8"), "--json"]);
    assert_eq!(summary["documents"], 59);
    assert_eq!(summary["chunks"], 261, "one chunk per MedQuAD passage");
    assert_eq!(summary["skipped"].as_array().map(Vec::len), Some(0));

    let list = env.json(&["corpus", "list", "--json"])["items"].take();
    let ids: BTreeSet<String> = list
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect();
    assert_eq!(ids.len(), 261);

    // Every question's target chunk exists, and a single-target question's reference
    // answer is exactly its chunk's text.
    let questions = sample_questions();
    assert_eq!(questions.len(), 252);
    let mut checked = 0;
    for q in &questions {
        let targets = q["relevant"].as_array().expect("relevant");
        for t in targets {
            assert!(ids.contains(t.as_str().expect("str")), "missing target {t}");
        }
        if targets.len() == 1 && checked < 5 {
            let shown = env.json(&[
                "corpus",
                "show",
                targets[0].as_str().expect("str"),
                "--json",
            ]);
            assert_eq!(shown["text"], q["answer"]);
            assert!(shown["header_path"].as_array().expect("path").len() == 2);
            checked += 1;
        }
    }
    assert_eq!(checked, 5);

    let stats = env.json(&["corpus", "stats", "--json"]);
    assert_eq!(stats["documents"], 59);
    assert_eq!(stats["chunks"], 261);
    assert_eq!(
        stats["topics"].as_object().map(|t| t
            .values()
            .filter_map(serde_json::Value::as_u64)
            .sum::<u64>()),
        Some(59)
    );
}

#[test]
fn re_ingesting_does_not_duplicate_and_ids_are_stable() {
    let env = Env::new();
    let guidance = sample_guidance();
    let g = guidance.to_str().expect("utf8");
    env.ok(&["ingest", g]);
    let first = env.json(&["corpus", "list", "--json"]);
    let again = env.json(&["ingest", g, "--json"]);
    assert_eq!(again["replaced_chunks"], 261);
    assert_eq!(again["total_chunks"], 261);
    let second = env.json(&["corpus", "list", "--json"]);
    assert_eq!(first, second, "same input, same chunks and ids");

    // Another workspace (another "machine") gives the same ids.
    let other = Env::new();
    other.ok(&["ingest", g]);
    assert_eq!(other.json(&["corpus", "list", "--json"]), first);
}

#[test]
fn window_and_none_chunkers() {
    let env = Env::new();
    let dir = env.dir.path().join("docs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("a.md"), "# A\n".to_string() + &"word ".repeat(300)).expect("write");
    std::fs::write(
        dir.join("r.jsonl"),
        "{\"id\": \"r1\", \"title\": \"One\", \"text\": \"first record\"}\n{\"id\": \"r2\", \"text\": \"second\"}\n",
    )
    .expect("write");
    let s = env.json(&[
        "ingest",
        dir.to_str().expect("utf8"),
        "--chunker",
        "window",
        "--json",
    ]);
    // 1,500 characters of body at 500/50: windows start at 0, 450, 900, 1350.
    assert_eq!(s["chunker"], "window(500/50)");
    let list = env.json(&["corpus", "list", "--doc", "a", "--json"])["items"].take();
    assert_eq!(list.as_array().map(Vec::len), Some(4));
    let s = env.json(&[
        "ingest",
        dir.join("r.jsonl").to_str().expect("utf8"),
        "--chunker",
        "none",
        "--json",
    ]);
    assert_eq!(s["chunks"], 2);
    let shown = env.json(&["corpus", "show", "r1", "--json"]);
    assert_eq!(shown["text"], "first record");
    assert_eq!(shown["title"], "One");
}

#[test]
fn corpus_commands_explain_missing_data() {
    let env = Env::new();
    let out = env.cmd().args(["corpus", "stats"]).output().expect("spawn");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("raglab ingest"), "unhelpful error: {err}");
    env.ok(&["ingest", sample_guidance().to_str().expect("utf8")]);
    let out = env
        .cmd()
        .args(["corpus", "show", "no-such-chunk"])
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no chunk `no-such-chunk`"));
}
