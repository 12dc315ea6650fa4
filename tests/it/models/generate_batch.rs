//! Batch generation through the binary: provenance, resumability without duplicates
//! (also after SIGKILL), judging, the answer report (rank buckets by the target's rank
//! in the prompt) and the frugality score.

use crate::common;

use std::collections::HashSet;
use std::time::Duration;

use common::Env;

fn setup() -> (Env, std::path::PathBuf) {
    let env = Env::new();
    let dir = env.dir.path().join("docs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("rabies.md"), "# Rabies\n\n## Prevention\n\nVaccinate dogs and cats against rabies. Avoid wild animals such as bats.\n").expect("w");
    std::fs::write(
        dir.join("flu.md"),
        "# Flu\n\n## Prevention\n\nGet a flu vaccine every year. Wash your hands often.\n",
    )
    .expect("w");
    env.ok(&["ingest", dir.to_str().expect("utf8"), "--index"]);
    let q = env.dir.path().join("q.jsonl");
    let mut s = String::new();
    for (i, text) in [
        "How is rabies prevented?",
        "How do I avoid the flu?",
        "Should my cat get a rabies shot?",
        "How often is the flu vaccine given?",
    ]
    .iter()
    .enumerate()
    {
        let target = if text.contains("abies") {
            "rabies#prevention"
        } else {
            "flu#prevention"
        };
        s.push_str(&format!("{{\"id\": \"q{i}\", \"text\": \"{text}\", \"answer\": \"ref\", \"relevant\": [\"{target}\"]}}\n"));
    }
    std::fs::write(&q, s).expect("w");
    (env, q)
}

fn answers(env: &Env, run: &str) -> Vec<serde_json::Value> {
    env.json(&["report", "answers", "--run", run, "--list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("answer list")
}

#[test]
fn batches_resume_without_duplicates_and_keep_provenance() {
    let (env, q) = setup();
    let qs = q.to_str().expect("utf8");
    let base = [
        "generate",
        "--questions",
        qs,
        "--run",
        "r1",
        "--k",
        "2",
        "--max-tokens",
        "8",
    ];
    let run_gen = |extra: &[&str]| env.ok(&[&base[..], extra].concat());
    run_gen(&["--limit", "1"]);
    // Kill a batch mid-way, then resume: no question is answered twice.
    let mut child = env
        .cmd()
        .args(base)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(2500));
    let _ = child.kill();
    let _ = child.wait();
    run_gen(&[]);
    run_gen(&[]); // a finished run stays as it is
    let all = answers(&env, "r1");
    let ids: HashSet<&str> = all.iter().filter_map(|a| a["answer_id"].as_str()).collect();
    assert_eq!(
        all.len(),
        4,
        "one answer per question, no duplicates after a kill and resumes"
    );
    assert_eq!(ids.len(), 4);
    // Provenance of a stored answer.
    let a = all
        .iter()
        .find(|a| a["question_id"] == "q0")
        .expect("q0 answered");
    assert_eq!(a["method"], "hybrid");
    assert_eq!(a["k"], 2);
    assert_eq!(a["chunk_ranks"], serde_json::json!([1, 2]));
    assert!(
        a["prompt"]
            .as_str()
            .expect("prompt")
            .contains("[chunk rabies#prevention]")
    );
    assert!(
        a["prompt"]
            .as_str()
            .expect("prompt")
            .contains("<|im_start|>"),
        "the chat template is applied"
    );
    assert_eq!(a["model_file"], "SmolLM2-135M-Instruct.Q4_1.gguf");
    assert_eq!(a["model_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(a["embed_model"], "all-MiniLM-L6-v2.F16");
    assert!(a["target_rank"].as_u64().is_some_and(|r| r <= 2));
    // Nothing dropped for the budget: the target is in the prompt at its fused rank.
    assert_eq!(a["target_prompt_rank"], a["target_rank"]);
    assert_eq!(a["target_list_rank"], a["target_rank"]);
    assert!(
        a["sampling"]
            .as_str()
            .expect("sampling")
            .contains("\"seed\":42")
    );
    assert!(
        a["output_tokens"]
            .as_u64()
            .is_some_and(|n| (1..=8).contains(&n))
    );
    assert!(a["prompt_tokens"].as_u64().is_some_and(|n| n > 20));
    assert!(a["ttft_ms"].as_f64().is_some_and(|t| t > 0.0));
    assert!(a["total_ms"].as_f64() >= a["ttft_ms"].as_f64());
    assert_eq!(a["stopped"], false);

    // The LLM-only baseline and the frugality score.
    env.ok(&[
        "generate",
        "--questions",
        qs,
        "--run",
        "base",
        "--no-retrieval",
        "--max-tokens",
        "8",
        "--limit",
        "2",
    ]);
    // A budget no chunk fits in: the targets were retrieved (fused rank 1 or 2) but
    // never reached the prompt, so they are stored and reported as dropped.
    env.ok(&[
        "generate",
        "--questions",
        qs,
        "--run",
        "tight",
        "--k",
        "2",
        "--context-budget",
        "1",
        "--max-tokens",
        "4",
        "--limit",
        "2",
    ]);
    let tight = answers(&env, "tight");
    assert_eq!(tight.len(), 2);
    for a in &tight {
        assert_eq!(a["chunk_ids"], serde_json::json!([]), "{a}");
        assert_eq!(a["dropped_chunk_ids"].as_array().map(Vec::len), Some(2));
        assert!(a["target_rank"].as_u64().is_some_and(|r| r <= 2), "{a}");
        assert!(a["target_prompt_rank"].is_null(), "{a}");
        assert_eq!(a["target_list_rank"], a["target_rank"]);
    }
    env.ok(&["judge"]); // 4 + 2 + 2 answers
    let report = env.json(&["report", "answers", "--run", "tight", "--json"]);
    let buckets = report["tight"]["pass_rates"]["faithfulness"]
        .as_object()
        .unwrap_or_else(|| panic!("{report}"));
    let mut names: Vec<&str> = buckets.keys().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(names, ["dropped", "overall"], "{report}");
    assert_eq!(buckets["dropped"]["total"], 2, "{report}");

    let report = env.json(&[
        "report",
        "answers",
        "--run",
        "r1",
        "--baseline",
        "base",
        "--json",
    ]);
    let rates = &report["r1"]["pass_rates"];
    for c in [
        "faithfulness",
        "completeness",
        "factual_consistency",
        "clarity",
    ] {
        assert!(rates[c]["overall"]["total"].as_u64().is_some(), "{report}");
    }
    assert_eq!(
        report["r1"]["judge_models"][0],
        "SmolLM2-135M-Instruct.Q4_1.gguf"
    );
    assert_eq!(report["base"]["no_retrieval"], true);
    // Both RAG runs of the model (r1 and tight) are compared with the baseline over
    // the questions all three answered (the baseline answered two).
    let f = &report["frugality"];
    assert_eq!(f["baseline"], "base", "{report}");
    let rows = f["configurations"].as_array().expect("configurations");
    let mut runs: Vec<&str> = rows.iter().filter_map(|r| r["run"].as_str()).collect();
    runs.sort_unstable();
    assert_eq!(runs, ["r1", "tight"], "{report}");
    for r in rows {
        assert_eq!(r["n_questions"], 2, "{r}");
        assert_eq!(r["k"], 2, "{r}");
    }
    // Recompute A, C and F from the report's own differences and temperatures, with
    // the temperatures it computed (sample sds of two configurations; undefined, and
    // then A or C and F too, when both differences are equal) and with given ones.
    // (tanh reaches +-1.0 exactly in floating point once |A - C| > ~19.)
    let check = |report: &serde_json::Value| {
        for r in report["frugality"]["configurations"]
            .as_array()
            .expect("rows")
        {
            let get = |k: &str| r[k].as_f64();
            let (da, dc) = (
                get("d_accuracy").expect("dA"),
                get("d_latency_s").expect("dC"),
            );
            match (get("t_accuracy"), get("t_latency_s")) {
                (Some(ta), Some(tc)) => {
                    let (a, c, score) = common::frugality_by_hand(da, dc, ta, tc);
                    // Relative to the value's size: with a one-second cost temperature
                    // on a slow machine C reaches ~1e6, where one ulp of the parsed
                    // difference (serde_json parses floats to within an ulp) moves C by
                    // ~1e-9 absolute.
                    let close = |k: &str, want: f64| {
                        get(k).is_some_and(|v| (v - want).abs() <= 1e-9 * want.abs().max(1.0))
                    };
                    assert!(close("A", a) && close("C", c) && close("F", score), "{r}");
                    assert!((-1.0..=1.0).contains(&score), "{r}");
                }
                _ => assert!(r["F"].is_null(), "{r}"),
            }
        }
    };
    check(&report);
    let given = env.json(&[
        "report",
        "answers",
        "--baseline",
        "base",
        "--temp-accuracy",
        "0.1",
        "--temp-cost",
        "1",
    ]);
    assert_eq!(given["frugality"]["t_accuracy"]["source"], "given");
    assert!(
        given["frugality"]["configurations"]
            .as_array()
            .is_some_and(|rows| rows.iter().all(|r| r["F"].is_f64())),
        "{given}"
    );
    check(&given);
}

/// A BM25 run reads no dense side, so it needs no embedding model: with the model's
/// path wrong it answers; a hybrid run with the same path is refused, naming it.
#[test]
fn a_sparse_run_generates_without_an_embedding_model() {
    let (env, q) = setup();
    let q = q.to_str().expect("utf8");
    let args = [
        "generate",
        "--questions",
        q,
        "--k",
        "1",
        "--max-tokens",
        "4",
        "--limit",
        "1",
    ];
    crate::common::only_hybrid_needs_the_embedder(&env, &args);
    assert_eq!(answers(&env, "bm25").len(), 1);
    assert!(answers(&env, "hybrid").is_empty());
}
