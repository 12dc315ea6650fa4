//! BEIR datasets in two commands (`raglab ingest DIR`, `raglab eval retrieval --beir
//! DIR`) on BEIR-format copies of real data (tests/data/beir: a MedQuAD slice with
//! graded qrels, a PubMedQA slice with two splits; see tests/data/PROVENANCE.md),
//! against trec_eval (pytrec_eval-terrier 0.5.11) on the same runs and qrels to 1e-9.
//!
//! The stored runs are the ones trec_eval scored: raglab's metric code and `eval runs`
//! over them, with BEIR's qrels as BEIR writes them, give trec_eval's per-query values
//! and means. A fresh `eval retrieval --beir` must give the metrics of the run file it
//! writes (its in-memory ranking is the file's, in trec_eval's order), and that run is
//! the stored one up to f32 rounding: BM25 scores of two fresh indexes of one corpus can
//! differ in their last bits (tantivy's segments), which can swap near-tied passages.
//! BM25 and TF-IDF only: no model starts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use raglab::core::beir::parse_qrels;
use raglab::core::metrics::{
    Qrel, average_precision, ndcg_at, order_run, precision_at, recall_at, reciprocal_rank,
};
use raglab::core::trec::parse_run;
use serde_json::Value;

use crate::common::{Env, repo};

fn beir(name: &str) -> PathBuf {
    repo().join("tests/data/beir").join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf8 path")
}

fn reference() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(beir("reference.json")).expect("tests/data/beir/reference.json"),
    )
    .expect("json")
}

fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .expect("read")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count()
}

fn f(v: &Value, what: &str) -> f64 {
    v.as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {v}"))
}

fn close(ours: f64, theirs: f64, what: &str) {
    assert!(
        (ours - theirs).abs() < 1e-9,
        "{what}: raglab {ours}, reference {theirs}"
    );
}

/// raglab's name of each trec_eval measure, in `eval runs` and in the per-query table
/// `compare` keeps (MAP is in neither).
const MEASURES: [(&str, &str); 8] = [
    ("P_1", "P@1"),
    ("recip_rank", "MRR"),
    ("recall_1", "Recall@1"),
    ("recall_5", "Recall@5"),
    ("recall_10", "Recall@10"),
    ("ndcg_cut_1", "nDCG@1"),
    ("ndcg_cut_5", "nDCG@5"),
    ("ndcg_cut_10", "nDCG@10"),
];

type Run = HashMap<String, Vec<(String, f64)>>;

fn read_run(path: &Path) -> Run {
    parse_run(&std::fs::read_to_string(path).expect("run")).expect("a TREC run")
}

/// Every trec_eval measure compared, per query of `run` that `qrels` judges, from
/// raglab's metric functions on the run ordered as trec_eval orders it.
fn core_values(
    run: &Run,
    qrels: &HashMap<String, Qrel>,
) -> HashMap<String, HashMap<&'static str, f64>> {
    run.iter()
        .filter_map(|(qid, hits)| {
            let q = qrels.get(qid)?;
            let mut hits = hits.clone();
            order_run(&mut hits);
            let r: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
            let values = HashMap::from([
                ("P_1", precision_at(&r, q, 1)),
                ("recip_rank", reciprocal_rank(&r, q)),
                ("recall_1", recall_at(&r, q, 1)),
                ("recall_5", recall_at(&r, q, 5)),
                ("recall_10", recall_at(&r, q, 10)),
                ("ndcg_cut_1", ndcg_at(&r, q, 1)),
                ("ndcg_cut_5", ndcg_at(&r, q, 5)),
                ("ndcg_cut_10", ndcg_at(&r, q, 10)),
                ("map", average_precision(&r, q)),
            ]);
            Some((qid.clone(), values))
        })
        .collect()
}

fn mean_of(values: &HashMap<String, HashMap<&'static str, f64>>, measure: &str) -> f64 {
    values.values().map(|v| v[measure]).sum::<f64>() / values.len() as f64
}

/// Ingest a BEIR folder (detected, no `--format`) into a fresh workspace, build the
/// sparse index, and evaluate BM25 and TF-IDF 10 deep on `split`, writing the runs to
/// `runs` (10 deep keeps the stored runs small; trec_eval scored the same depth).
fn two_commands(env: &Env, name: &str, split: &str, runs: &Path) -> Value {
    let dir = beir(name);
    let ingested = env.json(&["ingest", s(&dir), "--json"]);
    let passages = lines(&dir.join("corpus.jsonl"));
    assert_eq!(
        ingested["documents"], passages,
        "{name}: one document a passage"
    );
    assert_eq!(ingested["chunks"], passages, "{name}: one chunk a passage");
    assert_eq!(ingested["skipped"], serde_json::json!([]), "{name}");
    env.ok(&["index", "--sparse-only"]);
    env.json(&[
        "eval",
        "retrieval",
        "--beir",
        s(&dir),
        "--split",
        split,
        "--methods",
        "bm25,tfidf",
        "--depth",
        "10",
        "--run-out",
        s(runs),
        "--json",
    ])
}

/// `eval runs` over `files` with BEIR's qrels of `name` as they are: each run's means.
fn eval_runs(env: &Env, name: &str, files: &[PathBuf]) -> Vec<Value> {
    let qrels = beir(name).join("qrels/test.tsv");
    let mut args = vec![
        "eval",
        "runs",
        "--qrels",
        s(&qrels),
        "--k",
        "1,5,10",
        "--json",
    ];
    args.extend(files.iter().map(|p| s(p)));
    let out = env.json(&args);
    let runs = out["runs"].as_array().expect("runs").clone();
    assert_eq!(runs.len(), files.len());
    for r in &runs {
        assert_eq!(r["absent"], 0, "every judged query retrieved something");
    }
    runs
}

/// The stored runs: raglab's per-query values and `eval runs`'s means are trec_eval's.
fn stored_runs_match_trec_eval(env: &Env, name: &str, want: &Value) {
    let qrels =
        parse_qrels(&std::fs::read_to_string(beir(name).join("qrels/test.tsv")).expect("qrels"))
            .expect("BEIR qrels");
    let methods = ["bm25", "tfidf"];
    let files: Vec<PathBuf> = methods
        .iter()
        .map(|m| beir(want["runs"][m]["file"].as_str().expect("file")))
        .collect();
    let means = eval_runs(env, name, &files);
    for ((m, file), ours) in methods.iter().zip(&files).zip(&means) {
        let theirs = &want["runs"][m];
        let values = core_values(&read_run(file), &qrels);
        let per_query = theirs["per_query"].as_object().expect("per_query");
        assert_eq!(values.len(), per_query.len(), "{name} {m}: queries scored");
        assert_eq!(
            values.len() as u64,
            theirs["num_q"].as_u64().expect("num_q")
        );
        for (qid, v) in &values {
            for (measure, value) in v {
                let what = format!("{name} {m} {qid} {measure}");
                close(*value, f(&per_query[qid][*measure], &what), &what);
            }
        }
        for (measure, raglab) in MEASURES {
            let what = format!("eval runs {name} {m} {raglab}");
            close(
                f(&ours["means"][raglab], &what),
                f(&theirs["mean"][measure], &what),
                &what,
            );
        }
    }
}

/// The fresh evaluation: its report and kept per-query scores are the metrics of the
/// run files it wrote, and those runs are the stored ones up to f32 rounding.
fn fresh_run_is_scored_as_written(report: &Value, table: &Value, name: &str, want: &Value) {
    let qrels =
        parse_qrels(&std::fs::read_to_string(beir(name).join("qrels/test.tsv")).expect("qrels"))
            .expect("BEIR qrels");
    let qids: Vec<&str> = table["qids"]
        .as_array()
        .expect("qids")
        .iter()
        .map(|q| q.as_str().expect("qid"))
        .collect();
    let metrics: Vec<&str> = table["metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m.as_str().expect("metric"))
        .collect();
    for result in report["results"].as_array().expect("results") {
        let method = result["method"].as_str().expect("method");
        let what = format!("{name} {method}");
        let written = read_run(Path::new(result["run_file"].as_str().expect("run file")));
        let stored = read_run(&beir(want["runs"][method]["file"].as_str().expect("file")));
        same_up_to_rounding(&written, &stored, &what);
        let values = core_values(&written, &qrels);
        let m = &result["metrics"];
        assert_eq!(m["queries"], values.len(), "{what}");
        for (ours, measure) in [
            ("p1", "P_1"),
            ("recall5", "recall_5"),
            ("recall10", "recall_10"),
            ("mrr", "recip_rank"),
            ("ndcg10", "ndcg_cut_10"),
            ("map", "map"),
        ] {
            let w = format!("{what} {ours}");
            close(f(&m[ours], &w), mean_of(&values, measure), &w);
        }
        for (field, measure) in [("recall_at", "recall"), ("ndcg_at", "ndcg_cut")] {
            let at = result[field].as_array().expect(field);
            assert_eq!(at.len(), 3, "{what}: k = 1, 5, 10");
            for pair in at {
                let k = pair[0].as_u64().expect("k");
                let w = format!("{what} {field} {k}");
                close(
                    f(&pair[1], &w),
                    mean_of(&values, &format!("{measure}_{k}")),
                    &w,
                );
            }
        }
        let label = result["label"].as_str().expect("label");
        let run = table["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .find(|r| r["label"] == label)
            .expect("kept scores");
        assert_eq!(qids.len(), values.len(), "{what}: queries kept");
        for (measure, raglab) in MEASURES {
            let i = metrics.iter().position(|n| *n == raglab).expect(raglab);
            // One column a metric, kept as its numbers joined by spaces.
            let column: Vec<f64> = run["scores"][i]
                .as_str()
                .expect("a score column")
                .split_whitespace()
                .map(|v| v.parse().expect("a score"))
                .collect();
            assert_eq!(column.len(), qids.len(), "{what}");
            for (qid, kept) in qids.iter().zip(column) {
                let w = format!("{what} {qid} {raglab}");
                close(kept, values[*qid][measure], &w);
            }
        }
    }
}

/// Each query of `a` and `b` lists the same passages with the same scores to 1e-4,
/// but for at most one passage at the cut (a near tie decided the other way).
fn same_up_to_rounding(a: &Run, b: &Run, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}: queries in the run");
    for (qid, hits) in a {
        let other: HashMap<&str, f64> = b[qid].iter().map(|(d, s)| (d.as_str(), *s)).collect();
        let common: Vec<(f64, f64)> = hits
            .iter()
            .filter_map(|(d, s)| Some((*s, *other.get(d.as_str())?)))
            .collect();
        assert!(
            common.len() + 1 >= hits.len(),
            "{what} {qid}: the run changed; if on purpose, regenerate tests/data/beir (PROVENANCE.md)"
        );
        for (x, y) in common {
            assert!(
                (x - y).abs() <= 1e-4,
                "{what} {qid}: score {x} was {y}; if on purpose, regenerate tests/data/beir"
            );
        }
    }
}

/// The whole check for one dataset's test split.
fn matches_trec_eval(name: &str) {
    let env = Env::new();
    let runs = env.dir.path().join("runs");
    let report = two_commands(&env, name, "test", &runs);
    let reference = reference();
    let want = &reference["datasets"][name];
    assert_eq!(report["queries"], want["queries"], "{name}: the test split");
    assert_eq!(report["dropped_without_relevant"], 0);
    assert_eq!(report["missing_targets"]["count"], 0);
    let scores: Value = serde_json::from_str(
        &std::fs::read_to_string(env.workspace().join("eval/last-scores.json"))
            .expect("last scores"),
    )
    .expect("json");
    fresh_run_is_scored_as_written(&report, &scores["report"], name, want);
    stored_runs_match_trec_eval(&env, name, want);
}

/// MedQuAD slice: graded qrels (2 the answer, 1 another passage of its document), so
/// nDCG uses the grades and recall, P@1, MRR and MAP count every grade above 0.
#[test]
fn medquad_graded_matches_trec_eval() {
    matches_trec_eval("medquad");
}

/// PubMedQA slice: untitled passages, binary qrels.
#[test]
fn pubmedqa_matches_trec_eval() {
    matches_trec_eval("pubmedqa");
}

/// `--split` picks the qrels file and so the queries; a split that is not there is an
/// error naming those that are; ids are the `_id`s and header paths the titles.
#[test]
fn splits_ids_and_formats() {
    let env = Env::new();
    let runs = env.dir.path().join("runs");
    let cv = two_commands(&env, "pubmedqa", "cv", &runs);
    assert_eq!(cv["queries"], 20);
    assert_eq!(cv["results"][0]["metrics"]["queries"], 20);
    let dir = beir("pubmedqa");
    let out = env
        .cmd()
        .args(["eval", "retrieval", "--beir", s(&dir), "--split", "dev"])
        .args(["--methods", "bm25"])
        .output()
        .expect("spawn");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(err.contains("dev.tsv (splits there: cv, test)"), "{err}");

    let med = Env::new();
    let dir = beir("medquad");
    med.ok(&["ingest", "--format", "beir", s(&dir)]);
    let shown = med.json(&["corpus", "show", "CDC_QA-0000001-2", "--json"]);
    assert_eq!(shown["doc_id"], "CDC_QA-0000001-2");
    assert_eq!(
        shown["header_path"],
        serde_json::json!(["Acanthamoeba - Granulomatous Amebic Encephalitis (GAE); Keratitis"])
    );
    // --format files reads the folder as files: its JSONL lines are not raglab
    // records (`_id`, not `id`), each is skipped with its reason; only the licence
    // text is a document.
    let files = Env::new();
    let summary = files.json(&["ingest", "--format", "files", s(&dir), "--json"]);
    assert_eq!(summary["documents"], 1, "{summary}");
    assert!(
        summary["skipped"]
            .as_array()
            .expect("skipped")
            .iter()
            .any(|s| s["reason"] == "record has no `id`"),
        "{summary}"
    );
    // A plain folder is no BEIR folder; the chunker does not apply to passages.
    for (args, want) in [
        (
            vec!["ingest", "--format", "beir", s(repo())],
            "not a BEIR folder (no corpus.jsonl)",
        ),
        (
            vec!["ingest", "--format", "beir", "--chunker", "window", s(&dir)],
            "drop --chunker",
        ),
    ] {
        let out = files.cmd().args(&args).output().expect("spawn");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains(want),
            "{args:?}: {err}"
        );
    }
}

/// Copy a BEIR folder, replacing line `line` (1-based) of `file` with `with`.
fn broken_copy(to: &Path, file: &str, line: usize, with: &str) -> PathBuf {
    let dir = to.join(format!("broken-{}-{line}", file.replace('/', "-")));
    std::fs::create_dir_all(dir.join("qrels")).expect("mkdir");
    for f in ["corpus.jsonl", "queries.jsonl", "qrels/test.tsv"] {
        let text = std::fs::read_to_string(beir("medquad").join(f)).expect("read");
        let text: Vec<&str> = text
            .lines()
            .enumerate()
            .map(|(i, l)| if f == file && i + 1 == line { with } else { l })
            .collect();
        std::fs::write(dir.join(f), text.join("\n") + "\n").expect("write");
    }
    dir
}

/// A malformed line in any file of a BEIR folder is an error naming the file and the
/// line, and nothing is ingested.
#[test]
fn a_malformed_line_names_its_file_and_line() {
    let env = Env::new();
    let tmp = env.dir.path();
    let passage = r#"{"_id": "CDC_QA-0000001-1", "title": "t", "text": "x"}"#;
    let cases = [
        (
            "corpus.jsonl",
            3,
            r#"{"id": "x", "text": "y"}"#,
            "corpus.jsonl:3: not a BEIR passage",
        ),
        (
            "corpus.jsonl",
            5,
            "{not json",
            "corpus.jsonl:5: not a BEIR passage",
        ),
        (
            "corpus.jsonl",
            4,
            r#"{"_id": "a b", "text": "y"}"#,
            "holds whitespace",
        ),
        (
            "corpus.jsonl",
            6,
            passage,
            "corpus.jsonl:6: `_id` \"CDC_QA-0000001-1\" repeats line 1",
        ),
        (
            "queries.jsonl",
            2,
            r#"{"_id": "q", "txt": "y"}"#,
            "queries.jsonl:2: not a BEIR query",
        ),
        (
            "qrels/test.tsv",
            4,
            "q-CDC_QA-0000001-1\tCDC_QA-0000001-1\tyes",
            "test.tsv:4: expected `query-id corpus-id score`",
        ),
        (
            "qrels/test.tsv",
            3,
            "nobody\tCDC_QA-0000001-1\t1",
            "test.tsv:3: query \"nobody\" is not in",
        ),
    ];
    for (file, line, with, want) in cases {
        let dir = broken_copy(tmp, file, line, with);
        // The corpus is read by ingest, the queries and qrels by the evaluation.
        let args: Vec<&str> = if file == "corpus.jsonl" {
            vec!["ingest", s(&dir)]
        } else {
            vec!["eval", "retrieval", "--beir", s(&dir), "--methods", "bm25"]
        };
        let out = env.cmd().args(&args).output().expect("spawn");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{file}:{line} accepted");
        assert!(err.contains(want), "{file}:{line}: {err}");
        assert!(err.contains(s(&dir.join(file))), "names the file: {err}");
    }
    let listed = env
        .cmd()
        .args(["corpus", "list", "--json"])
        .output()
        .expect("spawn");
    assert!(
        !listed.status.success()
            || serde_json::from_slice::<serde_json::Value>(&listed.stdout)
                .is_ok_and(|v| v["items"].as_array().is_some_and(Vec::is_empty)),
        "nothing was ingested"
    );
}
