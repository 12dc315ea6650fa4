//! Grounded metrics (`answers ground`) through the binary with a real judge: SmolLM2
//! in process (`grounded_pool` runs them on two llama-servers). SmolLM2 shows the mechanics, not the
//! quality: the verdicts are whatever it says, so the tests check what must hold for
//! any verdicts (every reply parsed into its shape, every source one of the prompt's
//! contexts, every score recomputed here by RAGAS's definitions from the stored
//! verdicts, the undefined ones with their reasons, nothing judged twice).

use std::collections::HashMap;

use std::time::Duration;

use crossterm::event::KeyCode;
use serde_json::Value;

use crate::common::tui::{key, press, pump};
use crate::common::{self, Env};

/// Three questions on the two-page corpus: two with a reference answer, one without.
const QUESTIONS: &str = r#"{"id": "q-rabies", "text": "How is rabies prevented?", "answer": "Vaccinate dogs and cats against rabies. Avoid wild animals such as bats.", "relevant": ["rabies#prevention"]}
{"id": "q-flu", "text": "How do I avoid the flu?", "answer": "Get a flu vaccine every year. Wash your hands often.", "relevant": ["flu#prevention"]}
{"id": "q-open", "text": "What is hookworm?", "relevant": []}
"#;

/// Another system's answers to them: the first with two contexts, the second with
/// one, the third with none.
const ANSWERS: &str = r#"{"question_id": "q-rabies", "answer": "Vaccinate your dog against rabies. Bats can carry rabies.", "contexts": ["rabies#prevention", "flu#prevention"]}
{"question_id": "q-flu", "answer": "Get a flu shot every year.", "contexts": ["flu#prevention"]}
{"question_id": "q-open", "answer": "Hookworm is a parasite.", "contexts": []}
"#;

pub(crate) fn setup(config: &str) -> Env {
    let env = Env::new();
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let config_dir = env.dir.path().join("config");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::write(config_dir.join("config.toml"), config).expect("config");
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(&q, QUESTIONS).expect("questions");
    let a = env.dir.path().join("agent.jsonl");
    std::fs::write(&a, ANSWERS).expect("answers");
    env.ok(&[
        "answers",
        "import",
        a.to_str().expect("utf8"),
        "--run",
        "agent",
        "--questions",
        q.to_str().expect("utf8"),
    ]);
    env
}

/// The stored grounded records (none yet: an empty list).
pub(crate) async fn records(env: &Env) -> Vec<Value> {
    let ctx = common::context(env, raglab::config::Config::default());
    raglab::service::answer::grounded(&ctx.workspace)
        .read_all::<Value>()
        .await
        .unwrap_or_default()
}

fn bools(v: &Value) -> Vec<bool> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|b| b.as_bool().expect("bool"))
        .collect()
}

fn close(a: &Value, b: Option<f64>, what: &str) {
    match (a.as_f64(), b) {
        (Some(x), Some(y)) => assert!((x - y).abs() < 1e-9, "{what}: stored {x}, recomputed {y}"),
        (None, None) => assert!(a.is_null(), "{what}: {a}"),
        _ => panic!("{what}: stored {a}, recomputed {b:?}"),
    }
}

/// RAGAS's definitions, written out again from the stored verdicts (independent of
/// `core::grounded`): each stored score must be what its verdicts give.
pub(crate) fn check_record(r: &Value) {
    let d: Value = serde_json::from_str(r["detail"].as_str().expect("detail")).expect("json");
    let id = r["answer_id"].as_str().expect("id");
    let contexts: Vec<&str> = d["contexts"]
        .as_array()
        .expect("contexts")
        .iter()
        .map(|c| c.as_str().expect("id"))
        .collect();
    let share = |v: &[bool]| {
        (!v.is_empty()).then(|| v.iter().filter(|b| **b).count() as f64 / v.len() as f64)
    };
    let verdicts = |key: &str| -> Vec<bool> {
        d[key]
            .as_array()
            .expect(key)
            .iter()
            .map(|s| {
                // A source is one of the prompt's contexts, or none.
                if let Some(src) = s["source"].as_str() {
                    assert!(
                        contexts.contains(&src),
                        "{id}: source {src} not in {contexts:?}"
                    );
                }
                s["supported"].as_bool().expect("supported")
            })
            .collect()
    };
    let answer = verdicts("answer_statements");
    let reference = verdicts("reference_statements");
    let has_ref = !r["undefined"]
        .as_array()
        .expect("undefined")
        .iter()
        .any(|u| u == "answer correctness: no reference answer");
    let has_ctx = !contexts.is_empty();
    close(
        &r["faithfulness"],
        share(&answer).filter(|_| has_ctx),
        &format!("{id} faithfulness"),
    );
    close(
        &r["context_recall"],
        share(&reference).filter(|_| has_ctx && has_ref),
        &format!("{id} context recall"),
    );
    let useful = bools(&d["context_useful"]);
    let precision = (has_ctx && has_ref).then(|| {
        let hits: Vec<usize> = (0..useful.len()).filter(|i| useful[*i]).collect();
        if hits.is_empty() {
            0.0
        } else {
            hits.iter()
                .enumerate()
                .map(|(n, i)| (n + 1) as f64 / (i + 1) as f64)
                .sum::<f64>()
                / hits.len() as f64
        }
    });
    close(
        &r["context_precision"],
        precision,
        &format!("{id} context precision"),
    );
    let correctness = has_ref.then(|| {
        let in_ref = bools(&d["answer_in_reference"]);
        let in_answer = bools(&d["reference_in_answer"]);
        // TP from the answer's statements found in the reference (asked only when the
        // reference has statements), FP the rest, FN the reference's statements not in
        // the answer; F1 1 when neither side has a statement (ragas).
        let (n_a, n_r) = (answer.len() as f64, reference.len() as f64);
        let tp = if n_r == 0.0 {
            0.0
        } else {
            in_ref.iter().filter(|b| **b).count() as f64
        };
        let fp = n_a - tp;
        let fn_ = in_answer.iter().filter(|b| !**b).count() as f64;
        let f1 = if n_a == 0.0 && n_r == 0.0 {
            1.0
        } else {
            let p = if tp + fp == 0.0 { 0.0 } else { tp / (tp + fp) };
            let rc = if tp + fn_ == 0.0 {
                0.0
            } else {
                tp / (tp + fn_)
            };
            if p + rc == 0.0 {
                0.0
            } else {
                2.0 * p * rc / (p + rc)
            }
        };
        let sim = r["similarity"]
            .as_f64()
            .expect("similarity with a reference");
        assert!((-1.0..=1.0 + 1e-9).contains(&sim), "{id}: cosine {sim}");
        0.75 * f1 + 0.25 * sim
    });
    close(
        &r["answer_correctness"],
        correctness,
        &format!("{id} answer correctness"),
    );
    // Each request's prompt and raw reply are stored, one pair per request.
    assert_eq!(
        r["prompts"].as_array().expect("prompts").len(),
        r["replies"].as_array().expect("replies").len()
    );
}

pub(crate) fn per_answer(records: &[Value]) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for r in records {
        *n.entry(r["answer_id"].as_str().expect("id").to_string())
            .or_default() += 1;
    }
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_is_grounded_by_smollm2_resumes_and_reports_its_means() {
    let env = setup("");
    // A template with a misspelt slot is refused before any model loads (the judge
    // named here does not exist).
    let bad = env.dir.path().join("verify.txt");
    std::fs::write(&bad, "{passages}\n{statement}\n").expect("write");
    let out = env
        .cmd()
        .args([
            "answers",
            "ground",
            "--run",
            "agent",
            "--judge-model",
            "/nowhere.gguf",
        ])
        .args(["--verify-prompt", bad.to_str().expect("utf8")])
        .output()
        .expect("spawn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("{statement}"),
        "{err}"
    );

    let base = ["answers", "ground", "--run", "agent"];
    let first = env.ok(&[&base[..], &["--limit", "1"]].concat());
    assert!(
        String::from_utf8_lossy(&first.stdout).contains("1 answer(s) scored (0 already)"),
        "{}",
        String::from_utf8_lossy(&first.stdout)
    );
    let rest = env.ok(&base);
    let said = String::from_utf8_lossy(&rest.stdout);
    assert!(said.contains("2 answer(s) scored (1 already)"), "{said}");
    let both = format!("{}{said}", String::from_utf8_lossy(&first.stdout));
    assert!(both.contains("1 without a reference answer"), "{both}");
    let again = env.ok(&base);
    assert!(String::from_utf8_lossy(&again.stdout).contains("0 answer(s) scored (3 already)"));
    let all = records(&env).await;
    assert!(
        per_answer(&all).values().all(|n| *n == 1),
        "judged once each: {all:?}"
    );
    assert_eq!(all.len(), 3);
    for r in &all {
        check_record(r);
        assert!(r["endpoint"].is_null(), "judged in process");
        assert_eq!(r["request_endpoints"], serde_json::json!([]), "no server");
        // The judge's time is its requests' times plus the embedding's.
        let requests: f64 = r["request_ms"]
            .as_array()
            .expect("request_ms")
            .iter()
            .map(|v| v.as_f64().expect("ms"))
            .sum();
        assert!(r["judge_ms"].as_f64().expect("judge_ms") >= requests);
    }
    // The answer without contexts or reference: faithfulness and the reference's
    // metrics undefined, each with its reason.
    let open = all
        .iter()
        .find(|r| r["question_id"] == "q-open")
        .expect("q-open");
    let why: Vec<&str> = open["undefined"]
        .as_array()
        .expect("undefined")
        .iter()
        .map(|u| u.as_str().expect("str"))
        .collect();
    assert!(
        why.contains(&"faithfulness: no context in the prompt"),
        "{why:?}"
    );
    assert!(
        why.contains(&"context recall: no reference answer"),
        "{why:?}"
    );

    // The report's means are over the defined values, the undefined counted beside.
    let report = env.json(&["report", "answers", "--run", "agent"]);
    let judge = open["judge_model"].as_str().expect("judge");
    let g = &report["agent"]["grounded"][judge];
    for metric in [
        "faithfulness",
        "context_precision",
        "context_recall",
        "answer_correctness",
    ] {
        let defined: Vec<f64> = all.iter().filter_map(|r| r[metric].as_f64()).collect();
        assert_eq!(g[metric]["defined"], defined.len(), "{metric}");
        assert_eq!(
            g[metric]["undefined"],
            all.len() - defined.len(),
            "{metric}"
        );
        if !defined.is_empty() {
            let mean = defined.iter().sum::<f64>() / defined.len() as f64;
            assert!(
                (g[metric]["mean"].as_f64().expect("mean") - mean).abs() < 1e-12,
                "{metric}"
            );
        }
    }
    // One answer's verdicts, readable.
    let rabies = all
        .iter()
        .find(|r| r["question_id"] == "q-rabies")
        .expect("q-rabies");
    let shown = env.ok(&[
        "answers",
        "show-grounded",
        rabies["answer_id"].as_str().expect("id"),
    ]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.contains("faithfulness ") && shown.contains("answer correctness"),
        "{shown}"
    );
    let d: Value = serde_json::from_str(rabies["detail"].as_str().expect("d")).expect("json");
    if let Some(first) = d["answer_statements"][0]["text"].as_str() {
        let first = raglab::core::text::sanitize_for_terminal(first);
        assert!(shown.contains(&first), "{shown}");
    }
    // Scored again with other weights: from the stored verdicts, no judge request.
    let again = env.ok(&[&base[..], &["--weights", "1,0"]].concat());
    let said = String::from_utf8_lossy(&again.stdout);
    assert!(
        said.contains("0 judge request(s)") && said.contains("3 scored earlier with other weights"),
        "{said}"
    );
    let latest: Vec<Value> = records(&env)
        .await
        .into_iter()
        .filter(|r| r["weights"] == "1,0")
        .collect();
    assert_eq!(latest.len(), 3);
    for r in &latest {
        let earlier = all
            .iter()
            .find(|e| e["answer_id"] == r["answer_id"])
            .expect("earlier");
        assert_eq!(r["detail"], earlier["detail"], "the same verdicts");
        match (r["statement_f1"].as_f64(), r["answer_correctness"].as_f64()) {
            (Some(f1), Some(c)) => assert!((f1 - c).abs() < 1e-12, "weights 1,0: correctness = F1"),
            (None, None) => {}
            other => panic!("{other:?}"),
        }
    }

    // The Query pane's answers panel (`A`) shows the selected answer's verdicts.
    let ctx = common::tui::context(&env, raglab::config::Config::default());
    let opts = raglab::tui::TuiOptions {
        questions: Some(env.dir.path().join("q.jsonl")),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::on_query_pane(&ctx, &opts).await;
    assert_eq!(app.query.questions()[0].id, "q-rabies");
    key(&mut app, &mut jobs, KeyCode::Enter);
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| !a.query.is_busy() && a.query.lists().is_some(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    press(&mut app, &mut jobs, 'A');
    let score = |k: &str| {
        rabies[k]
            .as_f64()
            .map_or_else(|| "undefined".to_string(), |x| format!("{x:.3}"))
    };
    let want = format!(
        "faithfulness {} · context precision {}",
        score("faithfulness"),
        score("context_precision")
    );
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| common::screen(a, 220, 60).contains(&want),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    let screen = common::screen(&app, 220, 60);
    assert!(
        screen.contains("Grounded verdicts of the selected answer"),
        "{screen}"
    );
    if d["answer_statements"]
        .as_array()
        .is_some_and(|a| !a.is_empty())
    {
        assert!(
            screen.contains("answer statements (supported by"),
            "{screen}"
        );
    }
}
