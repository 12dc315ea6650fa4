//! `raglab eval runs` and `raglab compare` end to end on real runs: three TREC runs on
//! the MedQuAD CDC sample (a BM25 run, a scikit-learn TF-IDF run, ranx's RRF fusion of
//! the two; tests/data/PROVENANCE.md). The JSON is checked against ranx 0.3.21 (means,
//! per-query values, wins / ties / losses, the paired t-test's p-values to 1e-9, the
//! randomisation test's within Monte Carlo error), against raglab's own core functions
//! called on the same files (to the last bit of the printed numbers, which serde_json
//! reads back to within one), and `compare` over the last
//! `eval retrieval` against `eval runs` over the run files that evaluation wrote.

use std::collections::HashMap;
use std::path::PathBuf;

use raglab::core::metrics::{Qrel, order_run};
use raglab::core::retrieval::outcome;
use raglab::core::significance::{
    TestSettings, bootstrap_means, compare_pair, holm, metric_names, score_table,
};
use raglab::core::trec::{parse_qrels, parse_run};
use serde_json::Value;

use crate::common::{Env, repo};

fn data(rel: &str) -> PathBuf {
    repo().join("tests/data").join(rel)
}

const RUNS: [(&str, &str, &str); 3] = [
    (
        "bm25",
        "reference_runs/medquad_cdc_sample.run.trec",
        "medquad_cdc_sample",
    ),
    (
        "tfidf",
        "significance/medquad_cdc_sample.tfidf.run.trec",
        "medquad_cdc_sample.tfidf",
    ),
    (
        "rrf",
        "significance/medquad_cdc_sample.rrf.run.trec",
        "medquad_cdc_sample.rrf",
    ),
];

/// raglab's metric name of a ranx metric.
const METRICS: [(&str, &str); 4] = [
    ("ndcg@10", "nDCG@10"),
    ("mrr", "MRR"),
    ("precision@1", "P@1"),
    ("recall@10", "Recall@10"),
];

fn reference() -> Value {
    serde_json::from_str(
        &std::fs::read_to_string(data("significance/reference.json")).expect("reference"),
    )
    .expect("json")
}

fn ranx_name(label: &str) -> &'static str {
    RUNS.iter().find(|r| r.2 == label).expect("a known run").0
}

fn ranx_metric(ours: &str) -> &'static str {
    METRICS
        .iter()
        .find(|m| m.1 == ours)
        .expect("a known metric")
        .0
}

fn eval_runs(env: &Env, extra: &[&str]) -> Value {
    let qrels = data("medquad_cdc_sample/qrels.tsv");
    let mut args: Vec<String> = vec![
        "eval".into(),
        "runs".into(),
        "--qrels".into(),
        qrels.display().to_string(),
        "--k".into(),
        "10".into(),
        "--metrics".into(),
        "nDCG@10,MRR,P@1,Recall@10".into(),
        "--permutations".into(),
        "10000".into(),
        "--seed".into(),
        "42".into(),
        "--json".into(),
    ];
    args.extend(extra.iter().map(|s| (*s).to_string()));
    args.extend(RUNS.iter().map(|r| data(r.1).display().to_string()));
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    env.json(&refs)
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// `json` (a number as printed, read back by serde_json, which may round its last bit)
/// is `want`.
fn same(json: &Value, want: f64, what: &str) {
    let got = f(json);
    assert!(
        (got - want).abs() <= 2.0 * f64::EPSILON * want.abs(),
        "{what}: printed {got}, core {want}"
    );
}

#[test]
fn eval_runs_matches_ranx_on_real_runs() {
    let env = Env::new();
    let out = eval_runs(&env, &[]);
    let r = reference();
    let ranx = &r["ranx"];
    assert_eq!(ranx["n_permutations"], 10_000);
    assert_eq!(out["queries"], 259);
    assert_eq!(out["baseline"], Value::Null);
    for run in out["runs"].as_array().expect("runs") {
        let name = ranx_name(run["label"].as_str().expect("label"));
        assert_eq!(run["absent"], 0);
        for (theirs, ours) in METRICS {
            let want = f(&ranx["runs"][name]["means"][theirs]);
            let got = f(&run["means"][ours]);
            assert!(
                (got - want).abs() < 1e-12,
                "{name} {ours}: {got} vs ranx {want}"
            );
        }
    }
    let rows = out["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 12, "3 pairs x 4 metrics");
    let permutations = 10_000.0;
    for row in rows {
        let (b, c) = (
            ranx_name(row["baseline"].as_str().expect("b")),
            ranx_name(row["candidate"].as_str().expect("c")),
        );
        let ours = row["metric"].as_str().expect("metric");
        let m = ranx_metric(ours);
        let what = format!("{c} vs {b} on {ours}");
        let mean = |run: &str| f(&ranx["runs"][run]["means"][m]);
        assert!(
            (f(&row["difference"]) - (mean(c) - mean(b))).abs() < 1e-12,
            "{what}"
        );
        // ranx's W counts control > treatment: the baseline's wins, our losses.
        let wtl = &ranx["win_tie_loss"][b][c][m];
        assert_eq!(
            (&row["wins"], &row["ties"], &row["losses"]),
            (&wtl["L"], &wtl["T"], &wtl["W"]),
            "{what}"
        );
        let student = f(&ranx["student"][b][c][m]);
        let p_t = f(&row["t_test"]["p"]);
        assert!(
            (p_t - student).abs() <= 1e-9 * student.max(1e-300),
            "{what}: t-test p {p_t} vs ranx {student}"
        );
        let fisher = f(&ranx["fisher"][b][c][m]);
        let p = f(&row["randomisation_p"]);
        let worst = p.max(fisher).min(0.5);
        let tol = 4.0 * (2.0 * worst * (1.0 - worst) / permutations).sqrt() + 2.0 / permutations;
        assert!(
            (p - fisher).abs() <= tol,
            "{what}: randomisation p {p} vs ranx {fisher} (tolerance {tol})"
        );
        let (lo, hi) = (f(&row["ci"][0]), f(&row["ci"][1]));
        assert!(
            lo <= f(&row["difference"]) && f(&row["difference"]) <= hi,
            "{what}"
        );
    }
    // Against a baseline: two pairs per metric, the same tests, Holm over 8.
    let base = eval_runs(&env, &["--baseline", "medquad_cdc_sample"]);
    let brows = base["rows"].as_array().expect("rows");
    assert_eq!(brows.len(), 8);
    assert!(brows.iter().all(|r| r["baseline"] == "medquad_cdc_sample"));
    assert!(
        base["holm_family"]
            .as_str()
            .expect("family")
            .contains("8 = 4 metrics x 2 pairs")
    );
}

/// Per-query values from the files, computed with raglab's core functions.
fn core_table() -> (
    raglab::core::significance::ScoreTable,
    HashMap<String, Qrel>,
) {
    let qrels =
        parse_qrels(&std::fs::read_to_string(data("medquad_cdc_sample/qrels.tsv")).expect("qrels"))
            .expect("qrels");
    let mut qids: Vec<String> = qrels.keys().cloned().collect();
    qids.sort();
    let outcomes: Vec<(String, Vec<raglab::core::retrieval::QueryOutcome>)> = RUNS
        .iter()
        .map(|(_, file, label)| {
            let run = parse_run(&std::fs::read_to_string(data(file)).expect("run")).expect("run");
            let o = qids
                .iter()
                .map(|q| {
                    let mut hits = run[q].clone();
                    order_run(&mut hits);
                    let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
                    outcome(q, &ranked, &qrels[q], &[10])
                })
                .collect();
            ((*label).to_string(), o)
        })
        .collect();
    let named: Vec<(String, &[raglab::core::retrieval::QueryOutcome])> = outcomes
        .iter()
        .map(|(l, o)| (l.clone(), o.as_slice()))
        .collect();
    (score_table(qids, &[10], &named), qrels)
}

/// The JSON is exactly what the core functions give on the same files, and the
/// per-query values are ranx's.
#[test]
fn eval_runs_json_is_the_core_functions_on_the_files() {
    let env = Env::new();
    let out = eval_runs(&env, &[]);
    let (table, _) = core_table();
    assert_eq!(table.metrics, metric_names(&[10]));
    let r = reference();
    for (i, (name, _, _)) in RUNS.iter().enumerate() {
        for (theirs, ours) in METRICS {
            let m = table.metric(ours).expect("metric");
            let per_query = &r["ranx"]["runs"][name]["per_query"][theirs];
            for (q, qid) in table.qids.iter().enumerate() {
                let want = f(&per_query[qid]);
                let got = table.runs[i].scores[m][q];
                assert!(
                    (got - want).abs() < 1e-12,
                    "{name} {ours} {qid}: {got} vs ranx {want}"
                );
            }
        }
    }
    let settings = TestSettings {
        permutations: 10_000,
        seed: 42,
        ..TestSettings::default()
    };
    let rows = out["rows"].as_array().expect("rows");
    let mut p_rand = Vec::new();
    for row in rows {
        let m = table
            .metric(row["metric"].as_str().expect("m"))
            .expect("metric");
        let b = table
            .run(row["baseline"].as_str().expect("b"))
            .expect("run");
        let c = table
            .run(row["candidate"].as_str().expect("c"))
            .expect("run");
        let (cb, cc) = (&table.runs[b].scores[m], &table.runs[c].scores[m]);
        let boot = bootstrap_means(&[cb, cc], settings.resamples, settings.seed);
        let want = compare_pair(cb, cc, (&boot[0], &boot[1]), &settings);
        let what = format!("{row}");
        same(&row["randomisation_p"], want.randomisation_p, &what);
        same(&row["difference"], want.difference, &what);
        let ci = want.ci.expect("ci");
        same(&row["ci"][0], ci.0, &what);
        same(&row["ci"][1], ci.1, &what);
        same(&row["t_test"]["t"], want.t_test.expect("t").t, &what);
        same(&row["t_test"]["p"], want.t_test.expect("t").p, &what);
        assert_eq!(
            (&row["wins"], &row["ties"], &row["losses"]),
            (
                &Value::from(want.record.wins),
                &Value::from(want.record.ties),
                &Value::from(want.record.losses)
            )
        );
        p_rand.push(want.randomisation_p);
    }
    for (row, adjusted) in rows.iter().zip(holm(&p_rand)) {
        same(&row["randomisation_p_holm"], adjusted, "Holm");
    }
}

#[test]
fn eval_runs_text_and_mistakes() {
    let env = Env::new();
    let qrels = data("medquad_cdc_sample/qrels.tsv");
    let q = qrels.to_str().expect("utf8");
    let bm25 = data(RUNS[0].1);
    let tfidf = data(RUNS[1].1);
    let (b, t) = (bm25.to_str().expect("utf8"), tfidf.to_str().expect("utf8"));
    let out = env.ok(&["eval", "runs", "--qrels", q, "--permutations", "500", b, t]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("259 judged queries"), "{text}");
    assert!(text.contains("medquad_cdc_sample.tfidf"), "{text}");
    assert!(text.contains("nDCG@10: candidate - baseline"), "{text}");
    assert!(
        text.contains("Holm: every comparison of this report (8 = 8 metrics x 1 pairs)"),
        "{text}"
    );
    // One run: its means, nothing to compare.
    let one = env.json(&["eval", "runs", "--qrels", q, "--json", b]);
    assert_eq!(one["rows"].as_array().expect("rows").len(), 0);
    assert!((f(&one["runs"][0]["means"]["nDCG@10"]) - 0.69181).abs() < 5e-6);
    let bad = env
        .cmd()
        .args(["eval", "runs", "--qrels", q, "--baseline", "nope", b, t])
        .output()
        .expect("spawn");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no run `nope`"));
    let broken = env.dir.path().join("broken.trec");
    std::fs::write(&broken, "q1 Q0 d1 1 notanumber tag\n").expect("write");
    let bad = env
        .cmd()
        .args([
            "eval",
            "runs",
            "--qrels",
            q,
            b,
            broken.to_str().expect("utf8"),
        ])
        .output()
        .expect("spawn");
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("broken.trec:1:"),
        "{err}"
    );
}

/// `compare` over the last `eval retrieval` (BM25 and TF-IDF on the shipped sample)
/// gives exactly what `eval runs` gives over the run files that evaluation wrote, with
/// qrels made from the questions' targets.
#[test]
fn compare_last_evaluation_equals_eval_runs_on_its_run_files() {
    let env = Env::new();
    let guidance = repo().join("sample-data/guidance");
    env.ok(&["ingest", guidance.to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let questions = repo().join("sample-data/questions.jsonl");
    let runs = env.dir.path().join("runs");
    env.ok(&[
        "eval",
        "retrieval",
        "--queries",
        questions.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf",
        "--run-out",
        runs.to_str().expect("utf8"),
    ]);
    let settings = [
        "--permutations",
        "3000",
        "--resamples",
        "1000",
        "--seed",
        "9",
    ];
    let cmp = env.json(&[&["compare", "--baseline", "bm25", "--json"][..], &settings].concat());
    // Qrels from the questions file (every listed target relevant).
    let mut qrels = String::new();
    for line in std::fs::read_to_string(&questions)
        .expect("questions")
        .lines()
    {
        let q: Value = serde_json::from_str(line).expect("question");
        for d in q["relevant"].as_array().expect("relevant") {
            qrels.push_str(&format!(
                "{} 0 {} 1\n",
                q["id"].as_str().expect("id"),
                d.as_str().expect("d")
            ));
        }
    }
    let qrels_path = env.dir.path().join("qrels.tsv");
    std::fs::write(&qrels_path, qrels).expect("write");
    let bm25 = runs.join("bm25.trec");
    let tfidf = runs.join("tfidf.trec");
    let from_files = env.json(
        &[
            &[
                "eval",
                "runs",
                "--qrels",
                qrels_path.to_str().expect("utf8"),
                "--baseline",
                "bm25",
                "--json",
            ][..],
            &settings,
            &[bm25.to_str().expect("utf8"), tfidf.to_str().expect("utf8")],
        ]
        .concat(),
    );
    assert_eq!(cmp["queries"], from_files["queries"]);
    assert!(cmp["queries"].as_u64().expect("n") > 200);
    assert_eq!(cmp["metrics"], from_files["metrics"]);
    assert_eq!(
        cmp["rows"], from_files["rows"],
        "the same numbers from both sources"
    );
    assert_eq!(cmp["rows"].as_array().expect("rows").len(), 8);
    // `eval runs` also reports bpref, Judged@k and Hole@k beside the means; an
    // evaluation whose judgements are the questions' targets (no qrels file) does not.
    assert_eq!(cmp["judged_metrics"].as_array().map(Vec::len), Some(0));
    assert_eq!(
        from_files["judged_metrics"].as_array().map(Vec::len),
        Some(7)
    );
    for (a, b) in cmp["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .zip(from_files["runs"].as_array().expect("runs"))
    {
        for m in cmp["metrics"].as_array().expect("metrics") {
            let m = m.as_str().expect("name");
            assert_eq!(a["means"][m], b["means"][m], "{m}");
        }
        assert_eq!(a["label"], b["label"]);
    }
    assert!(
        cmp["source"]
            .as_str()
            .expect("source")
            .contains("last-scores.json")
    );
}

#[test]
fn compare_without_an_evaluation_says_what_to_run() {
    let env = Env::new();
    let out = env.cmd().args(["compare"]).output().expect("spawn");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("run `raglab eval retrieval` first"));
}

/// A missing qrels file is named with its OS error once (the message used to repeat
/// the OS error, once from the message and once from the error's source).
#[test]
fn a_missing_qrels_file_is_one_clear_error() {
    let env = Env::new();
    let missing = env.dir.path().join("no-such-qrels.txt");
    let out = env
        .cmd()
        .args(["eval", "runs", "--qrels"])
        .arg(&missing)
        .arg(data(RUNS[0].1))
        .output()
        .expect("spawn raglab");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no-such-qrels.txt"), "{err}");
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
}

/// `--before`: the three runs compared on the shipped qrels, then on the pooled,
/// graded qrels (tests/data/judged/), name exactly the conclusions whose lead (the
/// sign of candidate - baseline) or significance (Holm randomisation p < 0.05) differ,
/// recomputed here from the two JSON documents by that rule.
#[test]
fn compare_before_names_exactly_the_conclusions_that_changed() {
    let env = Env::new();
    let runs: Vec<String> = RUNS
        .iter()
        .map(|(_, rel, _)| data(rel).to_str().expect("utf8").to_string())
        .collect();
    let shipped = data("medquad_cdc_sample/qrels.tsv");
    let pooled = data("judged/medquad_cdc_sample.pooled.qrels");
    let eval = |qrels: &std::path::Path, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "eval",
            "runs",
            "--qrels",
            qrels.to_str().expect("utf8"),
            "--permutations",
            "500",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a.extend(runs.iter().cloned());
        a
    };
    let args = eval(&shipped, &["--json"]);
    let before = env.json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let before_file = env.dir.path().join("before.json");
    std::fs::write(&before_file, before.to_string()).expect("write");
    let bf = before_file.to_str().expect("utf8");
    let args = eval(&pooled, &["--json", "--before", bf]);
    let after = env.json(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let rows = |d: &Value| -> HashMap<(String, String, String), (f64, f64)> {
        d["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .map(|r| {
                let s = |k: &str| r[k].as_str().expect(k).to_string();
                (
                    (s("metric"), s("baseline"), s("candidate")),
                    (f(&r["difference"]), f(&r["randomisation_p_holm"])),
                )
            })
            .collect()
    };
    let (rb, ra) = (rows(&before), rows(&after));
    let sign = |x: f64| {
        if x > 0.0 {
            1
        } else if x < 0.0 {
            -1
        } else {
            0
        }
    };
    let mut want: Vec<(String, String, String, String)> = Vec::new();
    for (k, (da, pa)) in &ra {
        let (db, pb) = rb[k];
        let mut what = Vec::new();
        if sign(db) != sign(*da) {
            what.push("lead");
        }
        let (was, is) = (pb < 0.05, *pa < 0.05);
        if was && !is {
            what.push("lost significance");
        }
        if !was && is {
            what.push("became significant");
        }
        if !what.is_empty() {
            want.push((k.0.clone(), k.1.clone(), k.2.clone(), what.join("; ")));
        }
    }
    let changed = &after["changed"];
    assert_eq!(
        changed["matched"],
        ra.len(),
        "every pair and metric matched"
    );
    assert_eq!(changed["unmatched"], 0);
    let mut got: Vec<(String, String, String, String)> = changed["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .map(|c| {
            let s = |k: &str| c[k].as_str().expect(k).to_string();
            (s("metric"), s("baseline"), s("candidate"), s("change"))
        })
        .collect();
    want.sort();
    got.sort();
    // The pooled qrels judge 147 of the 259 questions, graded: some conclusions move.
    assert!(
        !want.is_empty(),
        "no conclusion changed: the test would not exercise the list"
    );
    assert_eq!(got, want);
    // The text names them too, or says none changed.
    let args = eval(&pooled, &["--before", bf]);
    let text = String::from_utf8_lossy(
        &env.ok(&args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdout,
    )
    .into_owned();
    if want.is_empty() {
        assert!(text.contains("No conclusion changed against"), "{text}");
    } else {
        assert!(text.contains("Conclusions that changed against"), "{text}");
        assert!(
            text.contains(&format!(
                "{}: {} vs {}: {}",
                want[0].0, want[0].2, want[0].1, want[0].3
            )),
            "{text}"
        );
    }
    // A file that is not a comparison is one clear error.
    let bad = env
        .cmd()
        .args(eval(&pooled, &["--before", runs[0].as_str()]))
        .output()
        .expect("spawn");
    assert!(
        !bad.status.success()
            && String::from_utf8_lossy(&bad.stderr).contains("is not a comparison"),
        "{}",
        String::from_utf8_lossy(&bad.stderr)
    );
}
