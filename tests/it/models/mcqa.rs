//! Multiple-choice QA through the binary, on real PubMedQA questions and abstracts with
//! the real generator: every answer is one option letter, the stored provenance is
//! consistent with the prompt, the report's numbers are recomputed here from the stored
//! answers, runs resume and refuse mixed settings, and bad question files are refused.

use crate::common;

use std::collections::HashMap;

use common::Env;
use serde_json::Value;

const OPTIONS: [&str; 3] = ["yes", "no", "maybe"];

/// A workspace with the first 40 PubMedQA abstracts (one chunk each, named by PubMed
/// id) and up to 4 test-split questions whose target is among them. Odd questions use
/// keyed options and a letter answer, even ones a list and the answer's text.
/// Returns the env, the questions file, the expected answer letter per question and
/// the abstracts' text by id.
fn setup() -> (
    Env,
    std::path::PathBuf,
    HashMap<String, char>,
    HashMap<String, String>,
) {
    let env = Env::new();
    let sample = common::repo().join("sample-data").join("pubmedqa");
    let corpus: Vec<Value> = std::fs::read_to_string(sample.join("corpus.jsonl"))
        .expect("corpus")
        .lines()
        .take(40)
        .map(|l| serde_json::from_str(l).expect("record"))
        .collect();
    let text: HashMap<String, String> = corpus
        .iter()
        .map(|r| {
            (
                r["id"].as_str().expect("id").to_string(),
                r["text"].as_str().expect("text").to_string(),
            )
        })
        .collect();
    let corpus_file = env.dir.path().join("abstracts.jsonl");
    let lines: Vec<String> = corpus.iter().map(Value::to_string).collect();
    std::fs::write(&corpus_file, lines.join("\n")).expect("write corpus");
    env.ok(&[
        "ingest",
        corpus_file.to_str().expect("utf8"),
        "--chunker",
        "none",
        "--index",
    ]);
    let mut expected = HashMap::new();
    let mut out = String::new();
    for (i, q) in std::fs::read_to_string(sample.join("mcqa.jsonl"))
        .expect("questions")
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("question"))
        .filter(|q| text.contains_key(q["relevant"][0].as_str().expect("target")))
        .take(4)
        .enumerate()
    {
        let answer = q["answer"].as_str().expect("answer");
        let idx = OPTIONS.iter().position(|o| *o == answer).expect("option");
        let letter = char::from(b'A' + idx as u8);
        expected.insert(q["id"].as_str().expect("id").to_string(), letter);
        let row = if i % 2 == 1 {
            serde_json::json!({
                "id": q["id"], "question": q["text"],
                "options": {"A": "yes", "B": "no", "C": "maybe"},
                "answer": letter.to_string(), "relevant": q["relevant"],
            })
        } else {
            q.clone()
        };
        out.push_str(&row.to_string());
        out.push('\n');
    }
    assert!(
        expected.len() >= 3,
        "too few questions with targets in the first 40 abstracts"
    );
    let qfile = env.dir.path().join("mcqa.jsonl");
    std::fs::write(&qfile, out).expect("write questions");
    (env, qfile, expected, text)
}

fn count(records: &[Value], k: u64, pred: impl Fn(&Value) -> bool) -> u64 {
    records.iter().filter(|r| r["k"] == k && pred(r)).count() as u64
}

#[test]
fn mcqa_answers_are_letters_with_consistent_provenance_and_report() {
    let (env, qfile, expected, text) = setup();
    let q = qfile.to_str().expect("utf8");
    let args = [
        "eval",
        "mcqa",
        "--questions",
        q,
        "--ks",
        "0,1,3",
        "--run",
        "t",
    ];
    let report = env.json(&[&args[..], &["--json"]].concat());
    let records: Vec<Value> =
        env.json(&[&args[..], &["--list", "--report-only"]].concat())["items"]
            .as_array()
            .cloned()
            .expect("records");
    let n = expected.len() as u64;
    assert_eq!(records.len() as u64, 3 * n, "one answer per question and k");

    for r in &records {
        let qid = r["question_id"].as_str().expect("qid");
        let k = r["k"].as_u64().expect("k");
        let predicted = r["predicted"]
            .as_str()
            .expect("the grammar forces a letter");
        assert!(["A", "B", "C"].contains(&predicted), "{predicted}");
        assert_eq!(r["raw_output"].as_str().map(str::trim), Some(predicted));
        let want = expected[qid].to_string();
        assert_eq!(r["answer"], want.as_str(), "answer letter of {qid}");
        assert_eq!(r["correct"], predicted == want, "grading of {qid}");
        let prompt = r["prompt"].as_str().expect("prompt");
        assert!(
            prompt.contains("A. yes\nB. no\nC. maybe"),
            "options in the prompt"
        );
        let chunks: Vec<&str> = r["chunk_ids"]
            .as_array()
            .expect("chunk ids")
            .iter()
            .map(|c| c.as_str().expect("id"))
            .collect();
        assert!(chunks.len() as u64 <= k);
        if k == 0 {
            assert!(chunks.is_empty() && r["target_rank"].is_null());
            assert!(!prompt.contains("[chunk "), "no context at k = 0");
            assert_eq!(r["method"], "none");
            continue;
        }
        // The prompt carries each chunk's text; the target rank is its place there.
        for c in &chunks {
            let head: String = text[*c].chars().take(60).collect();
            assert!(prompt.contains(&head), "text of {c} in the prompt");
        }
        let target = r["target_ids"][0].as_str().expect("target");
        let pos = chunks
            .iter()
            .position(|c| *c == target)
            .map(|p| p as u64 + 1);
        assert_eq!(
            r["target_rank"].as_u64(),
            pos,
            "target rank of {qid} at k={k}"
        );
        // The rank in the whole fused list agrees with the prompt's.
        let list_rank = r["target_list_rank"].as_u64();
        assert_eq!(pos.is_some(), list_rank.is_some_and(|lr| lr <= k));
        if let Some(p) = pos {
            assert_eq!(list_rank, Some(p));
        }
    }

    // The report, recomputed from the stored answers.
    let rows = report["report"]["by_k"].as_array().expect("by_k");
    assert_eq!(rows.len(), 3);
    for row in rows {
        let k = row["k"].as_u64().expect("k");
        let ov = &row["overall"];
        assert_eq!(ov["n"], n);
        let correct = count(&records, k, |r| r["correct"] == true);
        assert_eq!(ov["correct"], correct);
        let acc = ov["accuracy"].as_f64().expect("accuracy");
        assert!((acc - correct as f64 / n as f64).abs() < 1e-12);
        let (lo, hi) = (
            ov["lo"].as_f64().expect("lo"),
            ov["hi"].as_f64().expect("hi"),
        );
        assert!(lo <= acc && acc <= hi && lo >= 0.0 && hi <= 1.0);
        let retrieved = count(&records, k, |r| !r["target_rank"].is_null());
        assert_eq!(row["retrieved"]["n"], retrieved);
        assert_eq!(row["not_retrieved"]["n"], n - retrieved);
        assert_eq!(
            row["rank1"]["n"],
            count(&records, k, |r| r["target_rank"] == 1)
        );
        let choices: u64 = row["choices"]
            .as_object()
            .expect("choices")
            .values()
            .map(|v| v.as_u64().expect("count"))
            .sum();
        assert_eq!(choices, n);
    }
    assert_eq!(report["questions"], n);

    // Resuming answers nothing new; continuing with other settings is refused.
    let again = env.ok(&args);
    assert!(String::from_utf8_lossy(&again.stderr).contains("nothing left to answer"));
    let after = env.json(&[&args[..], &["--list", "--report-only"]].concat())["items"]
        .as_array()
        .map_or(0, Vec::len);
    assert_eq!(after, records.len(), "no duplicates on resume");
    let out = env
        .cmd()
        .args(["eval", "mcqa", "--questions", q, "--ks", "5", "--run", "t"])
        .args(["--alpha", "0.5"])
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("same settings"));

    // Greedy decoding: a second run picks the same letters.
    let picks = |run: &str, recs: &[Value]| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = recs
            .iter()
            .filter(|r| r["run"] == run && r["k"] == 0)
            .map(|r| {
                let s = |f: &str| r[f].as_str().expect(f).to_string();
                (s("question_id"), s("predicted"))
            })
            .collect();
        v.sort();
        v
    };
    env.ok(&["eval", "mcqa", "--questions", q, "--ks", "0", "--run", "t2"]);
    let second: Vec<Value> = env.json(&[
        "eval",
        "mcqa",
        "--questions",
        q,
        "--run",
        "t2",
        "--list",
        "--report-only",
    ])["items"]
        .as_array()
        .cloned()
        .expect("records");
    assert_eq!(picks("t", &records), picks("t2", &second));

    // A BM25 run reads no dense side, so it needs no embedding model; a hybrid one
    // is refused naming the missing file.
    let args = [
        "eval",
        "mcqa",
        "--questions",
        q,
        "--ks",
        "1",
        "--limit",
        "1",
    ];
    crate::common::only_hybrid_needs_the_embedder(&env, &args);
}

#[test]
fn bad_question_files_are_refused_with_line_numbers() {
    let env = Env::new();
    let f = env.dir.path().join("bad.jsonl");
    for (line, why) in [
        (
            r#"{"id": "q", "text": "T?", "options": ["yes", "no"], "answer": "maybe"}"#,
            "neither an option nor the letter",
        ),
        (
            r#"{"id": "q", "text": "T?", "options": ["only"], "answer": "only"}"#,
            "2 to 26 options",
        ),
        (
            r#"{"id": "q", "text": "T?", "answer": "A"}"#,
            "missing field `options`",
        ),
        (
            r#"{"id": "q", "text": " ", "options": ["a", "b"], "answer": "a"}"#,
            "empty question",
        ),
    ] {
        let good = r#"{"id": "ok", "text": "Fine?", "options": ["yes", "no"], "answer": "B"}"#;
        std::fs::write(&f, format!("{good}\n{line}\n")).expect("write");
        let out = env
            .cmd()
            .args([
                "eval",
                "mcqa",
                "--questions",
                f.to_str().expect("utf8"),
                "--ks",
                "0",
            ])
            .output()
            .expect("spawn");
        assert!(!out.status.success(), "{why} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(why) && err.contains("bad.jsonl:2"),
            "{why}: {err}"
        );
    }
}

/// A run's multiple-choice template from a file and an oracle context, on SmolLM2:
/// each answer records its template (the file's stem and SHA-256 at k > 0, the
/// shipped no-context text at k = 0) and policy; the oracle prompt holds exactly the
/// target; distractors put it second; a run continued with another context is refused.
#[test]
fn mcqa_templates_and_context_policies_are_recorded() {
    use sha2::{Digest, Sha256};
    let (env, qfile, _, _) = setup();
    let q = qfile.to_str().expect("utf8");
    let shipped =
        std::fs::read_to_string(common::repo().join("assets/prompts/multiple-choice.txt"))
            .expect("shipped");
    let mine = format!("Answer with one letter only.\n{shipped}");
    let file = env.dir.path().join("one-letter.txt");
    std::fs::write(&file, &mine).expect("write");
    let sha = |t: &str| {
        Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let no_context = std::fs::read_to_string(
        common::repo().join("assets/prompts/multiple-choice-no-context.txt"),
    )
    .expect("shipped no-context");
    let base = ["eval", "mcqa", "--questions", q, "--limit", "2"];
    env.ok(&[
        &base[..],
        &[
            "--ks",
            "0,3",
            "--run",
            "o",
            "--context",
            "oracle",
            "--prompt",
            file.to_str().expect("utf8"),
        ],
    ]
    .concat());
    env.ok(&[
        &base[..],
        &["--ks", "3", "--run", "d", "--context", "distractors@2"],
    ]
    .concat());
    let list = |run: &str| -> Vec<Value> {
        env.json(&[
            "eval",
            "mcqa",
            "--questions",
            q,
            "--run",
            run,
            "--list",
            "--report-only",
        ])["items"]
            .as_array()
            .expect("items")
            .clone()
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .expect("array")
            .iter()
            .map(|s| s.as_str().expect("str").to_string())
            .collect()
    };
    let oracle = list("o");
    assert_eq!(oracle.len(), 4, "2 questions x k in {{0, 3}}");
    for r in &oracle {
        if r["k"] == 0 {
            assert_eq!(r["template"], "shipped");
            assert_eq!(r["template_sha256"], sha(&no_context));
            assert!(r["context_policy"].is_null());
        } else {
            assert_eq!(r["template"], "one-letter");
            assert_eq!(r["template_sha256"], sha(&mine));
            assert_eq!(r["context_policy"], "oracle");
            assert_eq!(
                strings(&r["chunk_ids"]),
                strings(&r["target_ids"]),
                "exactly the targets"
            );
            assert!(
                r["prompt"]
                    .as_str()
                    .expect("prompt")
                    .contains("Answer with one letter only.")
            );
        }
    }
    for r in list("d") {
        let ids = strings(&r["chunk_ids"]);
        assert_eq!(ids.len(), 3);
        assert!(
            strings(&r["target_ids"]).contains(&ids[1]),
            "target second: {ids:?}"
        );
    }
    let out = env
        .cmd()
        .args([&base[..], &["--ks", "3", "--run", "d"]].concat())
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("same prompt and context"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
