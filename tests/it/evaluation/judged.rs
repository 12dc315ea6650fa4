//! bpref, Judged@k and Hole@k end to end. Three real runs on the MedQuAD CDC sample
//! (BM25, scikit-learn TF-IDF, ranx RRF) are scored against incomplete, graded, pooled
//! qrels made from the sample's targets by a stated seeded rule
//! (scripts/judged_reference.py; tests/data/PROVENANCE.md), and checked to 1e-9
//! against trec_eval's bpref (pytrec_eval), ir_measures' Judged@k and BEIR's Hole@k
//! (computed from its definition): the means the `raglab eval runs` binary prints, the
//! per-query values of raglab's core functions on the same files, and the wins / ties
//! / losses of the binary's comparisons (made from its per-query values). A run that
//! ranks a document twice for one query is refused, as trec_eval refuses it, and
//! `eval retrieval --qrels` reports what `eval runs` reports on the run files it
//! writes.

use std::path::PathBuf;

use raglab::core::incomplete::{JudgedDocs, judged_measures};
use raglab::core::metrics::order_run;
use raglab::core::retrieval::judged;
use raglab::core::trec::{parse_qrels, parse_run};
use serde_json::Value;

use crate::common::{Env, repo};

fn data(rel: &str) -> PathBuf {
    repo().join("tests/data").join(rel)
}

fn reference() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("judged/reference.json")).expect("read"))
        .expect("reference JSON")
}

/// (reference name, raglab's label of the run file).
const RUNS: [(&str, &str); 3] = [
    ("bm25", "medquad_cdc_sample"),
    ("tfidf", "medquad_cdc_sample.tfidf"),
    ("rrf", "medquad_cdc_sample.rrf"),
];

const MEASURES: [&str; 7] = [
    "bpref",
    "Judged@1",
    "Judged@5",
    "Judged@10",
    "Hole@1",
    "Hole@5",
    "Hole@10",
];

fn path_str(p: &std::path::Path) -> String {
    p.to_str().expect("utf8").to_string()
}

fn qrels_path(r: &Value) -> String {
    path_str(&data(r["qrels"].as_str().expect("qrels")))
}

fn run_files(r: &Value) -> Vec<String> {
    RUNS.iter()
        .map(|(name, _)| path_str(&data(r["runs"][name]["file"].as_str().expect("file"))))
        .collect()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn name_of(label: &str) -> &'static str {
    RUNS.iter().find(|r| r.1 == label).expect("a known run").0
}

/// The binary's means equal the tools' to 1e-9, and its wins / ties / losses are those
/// of the tools' per-query values.
#[test]
fn eval_runs_matches_trec_eval_ir_measures_and_beir() {
    let r = reference();
    assert_eq!(r["ks"], serde_json::json!([1, 5, 10]));
    let env = Env::new();
    let q = qrels_path(&r);
    let compared = "bpref,Judged@10,Hole@10";
    let mut args = vec![
        "eval",
        "runs",
        "--qrels",
        &q,
        "--k",
        "1,5,10",
        "--metrics",
        compared,
        "--permutations",
        "200",
        "--resamples",
        "200",
        "--json",
    ];
    let runs = run_files(&r);
    args.extend(runs.iter().map(String::as_str));
    let out = env.json(&args);
    let n = r["runs"]["bm25"]["num_q"].as_u64().expect("num_q");
    assert_eq!(out["queries"].as_u64(), Some(n));
    assert_eq!(out["judged_metrics"], serde_json::json!(MEASURES));
    for run in out["runs"].as_array().expect("runs") {
        let name = name_of(run["label"].as_str().expect("label"));
        assert_eq!(run["absent"], 0, "{name}");
        for m in MEASURES {
            let (got, want) = (f(&run["means"][m]), f(&r["runs"][name]["mean"][m]));
            assert!((got - want).abs() < 1e-9, "{name} {m}: {got} vs {want}");
        }
    }
    let rows = out["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 9, "3 pairs x 3 metrics");
    for row in rows {
        let m = row["metric"].as_str().expect("metric");
        let per_query =
            |label: &Value| &r["runs"][name_of(label.as_str().expect("l"))]["per_query"];
        let (b, c) = (per_query(&row["baseline"]), per_query(&row["candidate"]));
        let (mut w, mut t, mut l) = (0, 0, 0);
        for (qid, bv) in b.as_object().expect("per query") {
            match f(&c[qid][m]).total_cmp(&f(&bv[m])) {
                std::cmp::Ordering::Greater => w += 1,
                std::cmp::Ordering::Equal => t += 1,
                std::cmp::Ordering::Less => l += 1,
            }
        }
        assert_eq!(
            (&row["wins"], &row["ties"], &row["losses"]),
            (&Value::from(w), &Value::from(t), &Value::from(l)),
            "{row}"
        );
    }
    // Without --metrics the comparisons are the effectiveness metrics only; the
    // measures are reported beside them all the same.
    args.retain(|a| *a != "--metrics" && *a != compared);
    let plain = env.json(&args);
    let metrics: Vec<&str> = plain["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m.as_str().expect("name"))
        .collect();
    assert_eq!(metrics.len(), 8, "{metrics:?}");
    assert!(!metrics.iter().any(|m| MEASURES.contains(m)), "{metrics:?}");
    assert!(f(&plain["runs"][0]["means"]["Hole@10"]) > 0.0);
}

/// raglab's core functions on the files give the tools' per-query values, over the
/// same queries.
#[test]
fn core_measures_match_per_query() {
    let r = reference();
    let qrels =
        parse_qrels(&std::fs::read_to_string(qrels_path(&r)).expect("qrels")).expect("qrels");
    let docs = JudgedDocs::of(&qrels);
    assert_eq!(
        docs.len() as u64,
        r["rule"]["judged_documents"].as_u64().expect("n")
    );
    let mut qids: Vec<&String> = qrels
        .keys()
        .filter(|q| judged(&qrels, q).is_some())
        .collect();
    qids.sort();
    for ((name, _), file) in RUNS.iter().zip(run_files(&r)) {
        let want = r["runs"][name]["per_query"].as_object().expect("per query");
        assert_eq!(qids.len(), want.len(), "{name}: the queries evaluated");
        let run = parse_run(&std::fs::read_to_string(&file).expect("run")).expect("run");
        for qid in &qids {
            let mut hits = run[*qid].clone();
            order_run(&mut hits);
            let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
            let got = judged_measures(&ranked, &qrels[*qid], &docs, &[1, 5, 10]);
            let mut values = vec![got.bpref];
            values.extend(got.at_k.iter().map(|c| c.judged));
            values.extend(got.at_k.iter().map(|c| c.hole));
            for (m, v) in MEASURES.iter().zip(values) {
                let w = f(&want[qid.as_str()][m]);
                assert!((v - w).abs() < 1e-9, "{name} {qid} {m}: {v} vs {w}");
            }
        }
    }
}

/// The text report has the measures' table; a run ranking a document twice for one
/// query is refused with the file and both lines.
#[test]
fn eval_runs_text_and_a_document_ranked_twice() {
    let r = reference();
    let env = Env::new();
    let q = qrels_path(&r);
    let runs = run_files(&r);
    let out = env.ok(&[
        "eval",
        "runs",
        "--qrels",
        &q,
        "--permutations",
        "200",
        &runs[0],
        &runs[1],
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("incomplete judgements: bpref (trec_eval)"),
        "{text}"
    );
    assert!(
        text.contains("Judged@10") && text.contains("Hole@1"),
        "{text}"
    );
    assert!(text.contains("Holm: every comparison of this report (8 = 8 metrics x 1 pairs)"));
    let lines: Vec<String> = std::fs::read_to_string(&runs[0])
        .expect("run")
        .lines()
        .take(3)
        .map(str::to_string)
        .collect();
    // Line 4 ranks the document of line 2 again, with another score.
    let mut again: Vec<String> = lines[1].split_whitespace().map(str::to_string).collect();
    again[4] = "0.5".into();
    let dup = env.dir.path().join("dup.trec");
    std::fs::write(&dup, format!("{}\n{}\n", lines.join("\n"), again.join(" "))).expect("write");
    let bad = env
        .cmd()
        .args(["eval", "runs", "--qrels", &q, &runs[1], &path_str(&dup)])
        .output()
        .expect("spawn");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(!bad.status.success(), "{err}");
    assert!(err.contains("dup.trec:4:"), "{err}");
    assert!(
        err.contains("ranked twice") && err.contains("lines 2 and 4"),
        "{err}"
    );
    assert!(err.contains(&format!("`{}`", again[2])), "{err}");
}

/// `eval retrieval --qrels` reports bpref, Judged@k and Hole@k per configuration
/// (text and JSON), equal to what `eval runs` gives on the run files it wrote with the
/// same qrels; without qrels it reports none.
#[test]
fn eval_retrieval_with_qrels_reports_the_measures() {
    let env = Env::new();
    env.ok(&["ingest", &path_str(&repo().join("sample-data/guidance"))]);
    env.ok(&["index", "--sparse-only"]);
    let questions = repo().join("sample-data/questions.jsonl");
    let qs = crate::common::sample_questions();
    // Each question's targets relevant, the next question's first target judged not
    // relevant for it: incomplete, with judged non-relevant chunks.
    let mut qrels = String::new();
    for (i, q) in qs.iter().enumerate() {
        let id = q["id"].as_str().expect("id");
        for d in q["relevant"].as_array().expect("relevant") {
            qrels.push_str(&format!("{id} 0 {} 1\n", d.as_str().expect("d")));
        }
        let next = &qs[(i + 1) % qs.len()]["relevant"][0];
        if !q["relevant"].as_array().expect("r").contains(next) {
            qrels.push_str(&format!("{id} 0 {} 0\n", next.as_str().expect("d")));
        }
    }
    let qrels_file = env.dir.path().join("qrels.txt");
    std::fs::write(&qrels_file, qrels).expect("write");
    let runs = env.dir.path().join("runs");
    let (questions, qrels_file, runs_dir) =
        (path_str(&questions), path_str(&qrels_file), path_str(&runs));
    let base = [
        "eval",
        "retrieval",
        "--queries",
        &questions,
        "--methods",
        "bm25,tfidf",
    ];
    let with_qrels = [&base[..], &["--qrels", &qrels_file]].concat();
    let rep = env.json(&[&with_qrels[..], &["--run-out", &runs_dir, "--json"]].concat());
    let (bm25, tfidf) = (
        path_str(&runs.join("bm25.trec")),
        path_str(&runs.join("tfidf.trec")),
    );
    let from_files = env.json(&[
        "eval",
        "runs",
        "--qrels",
        &qrels_file,
        "--permutations",
        "100",
        "--resamples",
        "100",
        "--json",
        &bm25,
        &tfidf,
    ]);
    for (res, run) in rep["results"]
        .as_array()
        .expect("results")
        .iter()
        .zip(from_files["runs"].as_array().expect("runs"))
    {
        assert_eq!(res["label"], run["label"]);
        assert_eq!(
            (
                res["dropped_empty_results"].as_u64(),
                run["absent"].as_u64()
            ),
            (Some(0), Some(0))
        );
        let j = &res["judgements"];
        assert_eq!(j["queries"], from_files["queries"]);
        let mut got = vec![f(&j["bpref"])];
        got.extend(
            j["at_k"]
                .as_array()
                .expect("at_k")
                .iter()
                .map(|c| f(&c["judged"])),
        );
        got.extend(
            j["at_k"]
                .as_array()
                .expect("at_k")
                .iter()
                .map(|c| f(&c["hole"])),
        );
        for (m, v) in MEASURES.iter().zip(got) {
            let want = f(&run["means"][m]);
            assert!(
                (v - want).abs() < 1e-12,
                "{} {m}: {v} vs {want}",
                run["label"]
            );
        }
        assert!(
            f(&j["bpref"]) > 0.0 && f(&j["at_k"][2]["hole"]) > 0.0,
            "{j}"
        );
    }
    let text = String::from_utf8_lossy(&env.ok(&with_qrels).stdout).into_owned();
    assert!(
        text.contains("incomplete judgements (the qrels file)"),
        "{text}"
    );
    let plain = env.json(&[&base[..], &["--json"]].concat());
    assert!(plain["results"][0]["judgements"].is_null());
    let text = String::from_utf8_lossy(&env.ok(&base).stdout).into_owned();
    assert!(!text.contains("incomplete judgements"), "{text}");
}
