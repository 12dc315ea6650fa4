//! `raglab gate` end to end on real runs of the MedQuAD CDC sample (a BM25 run and a
//! scikit-learn TF-IDF run, tests/data/PROVENANCE.md): the TF-IDF run is a planted
//! regression against BM25 (nDCG@10 0.057 lower). The clustered standard error and the
//! interval are checked against statsmodels' cluster-robust OLS on ranx's per-query
//! nDCG@10 (scripts/clustered_reference.py), the exit codes against the rule, and the
//! verdict for being the same on every run.

use std::path::PathBuf;
use std::process::Output;

use serde_json::Value;

use crate::common::{Env, json_doc, repo};

fn data(rel: &str) -> String {
    repo().join("tests/data").join(rel).display().to_string()
}

const BM25: &str = "reference_runs/medquad_cdc_sample.run.trec";
const TFIDF: &str = "significance/medquad_cdc_sample.tfidf.run.trec";

fn gate(env: &Env, baseline: &str, candidate: &str, extra: &[&str]) -> Output {
    let qrels = data("medquad_cdc_sample/qrels.tsv");
    let mut args = vec![
        "gate".to_string(),
        "--qrels".into(),
        qrels,
        "--baseline".into(),
        baseline.into(),
        "--candidate".into(),
        candidate.into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_string()));
    env.cmd().args(&args).output().expect("spawn raglab")
}

fn json_of(out: &Output, args: &[&str]) -> Value {
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "gate printed invalid JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    json_doc::check(&doc, args);
    doc
}

fn reference() -> Value {
    let text = std::fs::read_to_string(data("significance/clustered.json")).expect("reference");
    serde_json::from_str(&text).expect("json")
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[test]
fn a_planted_regression_fails_the_gate_with_statsmodels_clustered_interval() {
    let env = Env::new();
    let clusters = data("significance/medquad_cdc_sample.clusters.tsv");
    let junit = env.dir.path().join("gate.xml");
    let md = env.dir.path().join("gate.md");
    let (junit_s, md_s) = (junit.display().to_string(), md.display().to_string());
    let extra = [
        "--clusters",
        clusters.as_str(),
        "--margin",
        "0.01",
        "--json",
        "--junit",
        junit_s.as_str(),
        "--markdown",
        md_s.as_str(),
    ];
    let out = gate(&env, &data(BM25), &data(TFIDF), &extra);
    assert_eq!(
        out.status.code(),
        Some(1),
        "a regression of 0.057 nDCG@10 fails: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out, &["gate", "--json"]);
    let want = &reference()["gate"];
    assert_eq!(doc["pass"], false);
    assert_eq!(doc["outcome"], "not shown non-inferior");
    assert_eq!(doc["metric"], "nDCG@10");
    let d = &doc["difference"];
    assert_eq!(d["n"], want["queries"]);
    assert_eq!(d["clusters"], want["clusters"]);
    for (ours, theirs) in [
        (&d["mean"], "mean"),
        (&d["se_clustered"], "se_clustered"),
        (&d["se_naive"], "se_naive"),
        (&doc["lower"], "lower"),
        (&doc["upper"], "upper"),
    ] {
        assert!(
            (f(ours) - f(&want[theirs])).abs() < 1e-9,
            "{theirs}: ours {ours}, statsmodels {}",
            want[theirs]
        );
    }
    assert!(f(&doc["lower"]) <= -0.01);
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    assert!(xml.contains("failures=\"1\"") && xml.contains("<failure message="));
    let summary = std::fs::read_to_string(&md).expect("markdown written");
    assert!(summary.contains("not shown non-inferior"), "{summary}");
}

#[test]
fn a_run_against_itself_passes_and_every_rerun_gives_the_same_verdict() {
    let env = Env::new();
    let out = gate(&env, &data(BM25), &data(BM25), &["--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json_of(&out, &["gate", "--json"]);
    assert_eq!(doc["pass"], true);
    assert_eq!((f(&doc["lower"]), f(&doc["upper"])), (0.0, 0.0));
    // Without a clusters file, each query's first relevant document (by id) is its
    // cluster: these passage ids carry no `#`, so each distinct passage is one.
    let mut first: std::collections::BTreeMap<String, String> = Default::default();
    let qrels = std::fs::read_to_string(data("medquad_cdc_sample/qrels.tsv")).expect("qrels");
    for line in qrels.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f[3] != "0" {
            let e = first
                .entry(f[0].to_string())
                .or_insert_with(|| f[2].to_string());
            if f[2] < e.as_str() {
                *e = f[2].to_string();
            }
        }
    }
    let distinct: std::collections::BTreeSet<&String> = first.values().collect();
    assert_eq!(doc["difference"]["n"], 259);
    assert_eq!(doc["difference"]["clusters"], distinct.len());
    // The same inputs give the same verdict and the same numbers, run after run.
    let clusters = data("significance/medquad_cdc_sample.clusters.tsv");
    let args = ["--clusters", clusters.as_str(), "--margin", "0.1", "--json"];
    let first = gate(&env, &data(BM25), &data(TFIDF), &args);
    assert_eq!(
        first.status.code(),
        Some(0),
        "within a margin of 0.1 it passes"
    );
    for _ in 0..19 {
        let again = gate(&env, &data(BM25), &data(TFIDF), &args);
        assert_eq!(again.status.code(), first.status.code());
        assert_eq!(again.stdout, first.stdout);
    }
}

#[test]
fn bad_input_exits_2_naming_the_line_and_writes_nothing() {
    let env = Env::new();
    let bad = env.dir.path().join("bad.trec");
    let mut text = std::fs::read_to_string(data(BM25)).expect("run");
    text.push_str("q-CDC_QA-0000001-1 Q0 only-four-fields\n");
    let lines = text.lines().count();
    std::fs::write(&bad, text).expect("write");
    let junit: PathBuf = env.dir.path().join("gate.xml");
    let junit_s = junit.display().to_string();
    let out = gate(
        &env,
        &data(BM25),
        &bad.display().to_string(),
        &["--junit", junit_s.as_str()],
    );
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&format!("bad.trec:{lines}:")), "{err}");
    assert!(out.stdout.is_empty());
    assert!(!junit.exists(), "nothing written on bad input");
    // A negative margin, an unknown metric, a clusters file that leaves a query out.
    let out = gate(&env, &data(BM25), &data(TFIDF), &["--margin", "-0.1"]);
    assert_eq!(out.status.code(), Some(2));
    let out = gate(&env, &data(BM25), &data(TFIDF), &["--metric", "MAP@7"]);
    assert_eq!(out.status.code(), Some(2));
    let short = env.dir.path().join("clusters.tsv");
    std::fs::write(&short, "q-CDC_QA-0000001-1\tA\n").expect("write");
    let short_s = short.display().to_string();
    let out = gate(
        &env,
        &data(BM25),
        &data(TFIDF),
        &["--clusters", short_s.as_str()],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("names no cluster for 258 of 259"));
    // No evaluation in an empty workspace, and no qrels: exit 2 with what to run.
    let out = env
        .cmd()
        .args(["gate", "--baseline", "bm25", "--candidate", "hybrid"])
        .output()
        .expect("spawn");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("raglab eval retrieval"));
}
