//! Building an evaluation set end to end on the sample with the small real model
//! (SmolLM2-135M through llama.cpp): `evalset generate` (killed with SIGKILL mid-way,
//! then resumed), `evalset critique` (likewise), `evalset filter` (thresholds checked
//! against the stored scores, analysts' decisions honoured), and the questions file
//! read by `eval retrieval`, `generate` and (not: it has no options) `eval mcqa`.
//! A second test runs generation and critique on a real llama-server endpoint.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Env;
use common::server::Server;
use serde_json::Value;

/// Candidates of the end-to-end run: enough for both task kinds, a kill mid-way in each
/// stage and a filter with verdicts either way. A larger run is a figure, not a proof,
/// and belongs in a bench (52 candidates took 353 s alone on 2 cores).
const N: usize = 8;
/// Four sample documents with short sections (22 chunks of at most 108 words), so the
/// prompts are short: the model's time goes into what the test proves.
const DOCS: [&str; 4] = [
    "hai/acinetobacter-in-healthcare-settings",
    "parasites/parasites-hookworm",
    "parasites/parasites-ascariasis",
    "nczved/marine-toxins",
];
const MIN_WORDS: usize = 30;
const AXES: [&str; 6] = [
    "groundedness",
    "answer_groundedness",
    "feasibility",
    "stand_alone",
    "usefulness",
    "tautology",
];

fn list(env: &Env) -> Vec<Value> {
    env.json(&["evalset", "list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("candidate list")
}

/// Run `args`, and SIGKILL the process once its stderr reports `at_least` records of
/// `stage` stored (`evalset STAGE: K/N`); returns the stderr seen.
fn kill_after(env: &Env, args: &[&str], stage: &str, at_least: usize) -> String {
    let err_path = env.dir.path().join(format!("{stage}.stderr"));
    let err = std::fs::File::create(&err_path).expect("stderr file");
    let mut child = env
        .cmd()
        .args(args)
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(600);
    let prefix = format!("evalset {stage}: ");
    loop {
        let mut text = String::new();
        std::fs::File::open(&err_path)
            .and_then(|mut f| f.read_to_string(&mut text))
            .expect("read stderr");
        let done = text
            .lines()
            .filter_map(|l| {
                l.strip_prefix(&prefix)?
                    .split('/')
                    .next()?
                    .parse::<usize>()
                    .ok()
            })
            .max()
            .unwrap_or(0);
        if done >= at_least {
            child.kill().expect("SIGKILL");
            let _ = child.wait();
            return text;
        }
        if let Some(status) = child.try_wait().expect("wait") {
            panic!("{args:?} ended ({status}) before {at_least} were stored:\n{text}");
        }
        assert!(Instant::now() < deadline, "no progress:\n{text}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn scores(c: &Value) -> Vec<u64> {
    AXES.iter()
        .map(|a| c["critique"][a].as_u64().expect("score"))
        .collect()
}

#[test]
fn generate_critique_filter_on_the_sample_resume_after_sigkill() {
    let env = Env::new();
    let sample = common::sample_subset(env.dir.path(), &DOCS);
    env.ok(&["ingest", sample.to_str().expect("utf8"), "--index"]);
    let chunks: Vec<Value> = env.json(&["corpus", "list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("chunks");
    let by_id: HashMap<&str, &Value> = chunks
        .iter()
        .map(|c| (c["id"].as_str().expect("id"), c))
        .collect();
    let n = N.to_string();
    let gen_args = [
        "evalset",
        "generate",
        "--limit",
        n.as_str(),
        "--max-tokens",
        "96",
    ];

    // Generate, killed after 3 candidates, then resumed (twice: the second run has
    // nothing left to do).
    let seen = kill_after(&env, &gen_args, "generate", 3);
    assert!(
        seen.contains("candidates to write (0 already stored)"),
        "{seen}"
    );
    let after_kill = list(&env).len();
    assert!(
        (3..N).contains(&after_kill),
        "killed mid-way: {after_kill} of {N} stored"
    );
    let out = env.ok(&gen_args);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "{} candidates to write ({after_kill} already stored)",
            N - after_kill
        )),
        "{said}"
    );
    let again = env.ok(&gen_args);
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 candidates to write"));

    let cands = list(&env);
    assert_eq!(cands.len(), N, "every task once, none twice");
    let ids: HashSet<&str> = cands
        .iter()
        .map(|c| c["candidate"]["candidate_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), N);
    let mut kinds = HashMap::new();
    for v in &cands {
        let c = &v["candidate"];
        let q = c["question"].as_str().expect("question");
        let a = c["answer"].as_str().expect("answer");
        assert!(q.len() >= 10 && q.ends_with('?'), "question {q:?}");
        assert!(!a.trim().is_empty(), "answer of {q:?}");
        // The raw output parses as the JSON object the grammar allows.
        let raw: Value =
            serde_json::from_str(c["raw_output"].as_str().expect("raw")).expect("raw JSON");
        assert_eq!(raw["question"].as_str().map(str::trim), Some(q));
        assert_eq!(c["model_file"], "SmolLM2-135M-Instruct.Q4_1.gguf");
        assert_eq!(c["model_sha256"].as_str().map(str::len), Some(64));
        assert!(
            c["output_tokens"]
                .as_u64()
                .is_some_and(|t| (1..=96).contains(&t))
        );
        let prompt = c["prompt"].as_str().expect("prompt");
        assert!(
            prompt.contains("<|im_start|>user"),
            "the chat template is applied"
        );
        let targets: Vec<&str> = c["chunk_ids"]
            .as_array()
            .expect("chunk ids")
            .iter()
            .map(|t| t.as_str().expect("id"))
            .collect();
        let kind = c["kind"].as_str().expect("kind");
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
        match (kind, targets.as_slice()) {
            ("fact", [t]) => {
                assert!(by_id[t]["word_count"].as_u64() >= Some(MIN_WORDS as u64));
                assert_eq!(c["candidate_id"], format!("fact:{t}:s42"));
            }
            ("reasoning", [x, y]) => {
                // Two neighbours among the document's chunks of at least MIN_WORDS.
                let doc = by_id[x]["doc_id"].clone();
                assert_eq!(by_id[y]["doc_id"], doc);
                let order: Vec<&str> = chunks
                    .iter()
                    .filter(|ch| {
                        ch["doc_id"] == doc && ch["word_count"].as_u64() >= Some(MIN_WORDS as u64)
                    })
                    .map(|ch| ch["id"].as_str().expect("id"))
                    .collect();
                let i = order.iter().position(|o| o == x).expect("first target");
                assert_eq!(order.get(i + 1), Some(y), "consecutive chunks");
            }
            other => panic!("bad candidate {other:?}"),
        }
        // Each target's text is in the prompt, as plain text.
        for t in &targets {
            let text: Value = env.json(&["corpus", "show", t, "--json"]);
            let body = text["text"].as_str().expect("text");
            assert!(prompt.contains(body.trim()), "prompt holds the text of {t}");
        }
    }
    assert!(
        kinds.get("fact") > Some(&0) && kinds.get("reasoning") > Some(&0),
        "{kinds:?}"
    );

    // Critique, killed after 3, resumed.
    kill_after(&env, &["evalset", "critique"], "critique", 3);
    env.ok(&["evalset", "critique"]);
    let cands = list(&env);
    for c in &cands {
        assert_eq!(c["critiques"], 1, "one critique per candidate: {c}");
        assert_eq!(
            c["critique"]["critic_model"],
            "SmolLM2-135M-Instruct.Q4_1.gguf"
        );
        assert!(scores(c).iter().all(|s| (1..=5).contains(s)), "{c}");
    }
    let again = env.ok(&["evalset", "critique"]);
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 candidates to score"));

    // Filter with the seed's thresholds: every verdict agrees with the stored scores.
    let out = env.dir.path().join("set.jsonl");
    let outs = out.to_str().expect("utf8");
    let r = env.json(&["evalset", "filter", "--out", outs, "--json"]);
    assert_eq!(r["generated"], N);
    assert_eq!(r["critiqued"], N);
    let kept = r["kept"].as_u64().expect("kept") as usize;
    let dropped: u64 = r["dropped"]
        .as_object()
        .expect("dropped")
        .values()
        .map(|v| v.as_u64().expect("n"))
        .sum();
    assert_eq!(
        kept + dropped as usize,
        N,
        "every candidate kept or dropped once"
    );
    let by_cand: HashMap<&str, &Value> = cands
        .iter()
        .map(|c| (c["candidate"]["candidate_id"].as_str().expect("id"), c))
        .collect();
    let mins = [3, 3, 3, 3, 3, 0];
    let mut below = 0;
    for v in r["verdicts"].as_array().expect("verdicts") {
        let c = by_cand[v["candidate_id"].as_str().expect("id")];
        let low = scores(c).iter().zip(mins).any(|(s, m)| *s < m);
        match v["verdict"].as_str().expect("verdict") {
            "below_threshold" => {
                assert!(low, "{c}");
                below += 1;
            }
            "kept" | "duplicate_within_source" | "duplicate_across_set" => assert!(!low, "{c}"),
            "refers_to_document" => {}
            other => panic!("unexpected verdict {other}"),
        }
    }
    assert_eq!(r["dropped"]["below_threshold"].as_u64().unwrap_or(0), below);
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .expect("set")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    assert_eq!(lines.len(), kept);
    // A second run writes the same file (the filter is a pure function of what is
    // stored, and the file is replaced whole).
    let first = std::fs::read(&out).expect("set");
    env.ok(&["evalset", "filter", "--out", outs]);
    assert_eq!(std::fs::read(&out).expect("set"), first);

    // Decisions by hand win over scores: reject a kept candidate (or any), accept one
    // the thresholds dropped (or any other).
    let verdicts = r["verdicts"].as_array().expect("verdicts");
    let pick = |want: &str| {
        verdicts
            .iter()
            .find(|v| v["verdict"] == want)
            .or_else(|| verdicts.first())
            .and_then(|v| v["candidate_id"].as_str())
            .expect("a candidate")
            .to_string()
    };
    let rejected = pick("kept");
    let accepted = verdicts
        .iter()
        .filter_map(|v| v["candidate_id"].as_str())
        .find(|id| *id != rejected && by_cand[id]["verdict"] != "kept")
        .unwrap_or_else(|| {
            verdicts
                .iter()
                .filter_map(|v| v["candidate_id"].as_str())
                .find(|id| *id != rejected)
                .expect("another candidate")
        })
        .to_string();
    env.ok(&["evalset", "decide", &rejected, "reject"]);
    env.ok(&["evalset", "decide", &accepted, "accept"]);
    // Every threshold off, so the file is large enough for the readers below.
    let all = env.dir.path().join("all.jsonl");
    let alls = all.to_str().expect("utf8");
    let zero = [
        "--min-groundedness",
        "0",
        "--min-answer-groundedness",
        "0",
        "--min-feasibility",
        "0",
        "--min-stand-alone",
        "0",
        "--min-usefulness",
        "0",
    ];
    let r2 = env.json(
        &[
            &["evalset", "filter", "--out", alls, "--json"][..],
            &zero[..],
        ]
        .concat(),
    );
    assert_eq!(r2["rejected_by_hand"], 1);
    assert_eq!(r2["accepted_by_hand"], 1);
    assert_eq!(r2["dropped"]["rejected_by_hand"], 1);
    assert_eq!(r2["dropped"].get("below_threshold"), None);
    let v2: HashMap<&str, &str> = r2["verdicts"]
        .as_array()
        .expect("verdicts")
        .iter()
        .map(|v| {
            (
                v["candidate_id"].as_str().expect("id"),
                v["verdict"].as_str().expect("v"),
            )
        })
        .collect();
    assert_eq!(v2[rejected.as_str()], "rejected_by_hand");
    assert_eq!(v2[accepted.as_str()], "kept");
    let set: Vec<Value> = std::fs::read_to_string(&all)
        .expect("set")
        .lines()
        .map(|l| serde_json::from_str(l).expect("line"))
        .collect();
    assert_eq!(set.len() as u64, r2["kept"].as_u64().expect("kept"));
    assert!(set.iter().all(|q| q["id"] != rejected.as_str()));
    assert!(set.iter().any(|q| q["id"] == accepted.as_str()));
    for q in &set {
        let c = by_cand[q["id"].as_str().expect("id")];
        assert_eq!(q["text"], c["candidate"]["question"]);
        assert_eq!(q["answer"], c["candidate"]["answer"]);
        assert_eq!(q["relevant"], c["candidate"]["chunk_ids"]);
        assert_eq!(q["qtype"], c["candidate"]["kind"]);
    }

    // The questions file is read by `eval retrieval` and `generate`.
    let ev = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        alls,
        "--methods",
        "bm25",
        "--json",
    ]);
    assert_eq!(
        ev["queries"],
        set.len(),
        "eval retrieval read every question"
    );
    assert_eq!(
        ev["missing_targets"]["count"], 0,
        "every target is a chunk of the corpus"
    );
    assert_eq!(ev["evaluated"], set.len());
    env.ok(&[
        "generate",
        "--questions",
        alls,
        "--run",
        "gen",
        "--k",
        "2",
        "--limit",
        "2",
        "--max-tokens",
        "8",
    ]);
    let answers =
        env.json(&["report", "answers", "--run", "gen", "--list", "--json"])["items"].take();
    let answers = answers.as_array().expect("answers");
    assert_eq!(answers.len(), 2);
    for a in answers {
        let q = set
            .iter()
            .find(|q| q["id"] == a["question_id"])
            .expect("asked");
        assert_eq!(a["target_ids"], q["relevant"]);
    }
    // MCQA needs options, which the generator does not write: refused, and says so.
    let mcqa = env
        .cmd()
        .args(["eval", "mcqa", "--questions", alls])
        .output()
        .expect("mcqa");
    assert!(!mcqa.status.success());
    assert!(String::from_utf8_lossy(&mcqa.stderr).contains("options"));
}

/// Generation and critique on a real llama-server: the JSON schema constrains the
/// replies, each is validated and stored with the endpoint; a rerun adds nothing.
#[test]
fn generate_and_critique_on_an_endpoint() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = Server::start(tmp.path(), "a");
    let env = Env::new();
    let dir = common::two_pages(env.dir.path());
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    let config_dir = env.dir.path().join("config");
    std::fs::create_dir_all(&config_dir).expect("mkdir");
    std::fs::write(
        config_dir.join("config.toml"),
        format!(
            "[[endpoints]]\nurl = \"{}\"\nmax_concurrent = 2\ntimeout_s = 60\n",
            server.url()
        ),
    )
    .expect("config");
    let args = [
        "evalset",
        "generate",
        "--min-words",
        "1",
        "--max-tokens",
        "96",
    ];
    env.ok(&args);
    let cands = list(&env);
    assert!(!cands.is_empty());
    for v in &cands {
        let c = &v["candidate"];
        assert_eq!(c["endpoint"].as_str(), Some(server.url().as_str()));
        assert_eq!(c["model_sha256"], "");
        assert!(c["question"].as_str().is_some_and(|q| !q.trim().is_empty()));
        assert!(c["answer"].as_str().is_some_and(|a| !a.trim().is_empty()));
        assert!(
            c["prompt"]
                .as_str()
                .is_some_and(|p| p.contains("\"role\":\"user\""))
        );
    }
    let again = env.ok(&args);
    assert!(String::from_utf8_lossy(&again.stderr).contains("0 candidates to write"));
    env.ok(&["evalset", "critique"]);
    for c in list(&env) {
        assert_eq!(c["critiques"], 1);
        assert_eq!(
            c["critique"]["endpoint"].as_str(),
            Some(server.url().as_str())
        );
        assert!(scores(&c).iter().all(|s| (1..=5).contains(s)), "{c}");
    }
}
