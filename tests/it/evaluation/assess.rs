//! Relevance assessment end to end. raglab's pools equal trectools' `make_pool` on
//! three real runs of the MedQuAD CDC sample (tests/data/pooling, made by
//! scripts/pool_reference.py), member for member, at two depths. Through the binary
//! on the shipped sample: two runs are pooled, two assessors with their own study keys
//! (on a signed roster) grade pooled chunks blind to each other, `qrels export` writes
//! the targets plus the combined grades, and `eval runs` on the grown qrels changes
//! P@1 for exactly the questions whose top chunk was graded relevant, while Judged@10
//! rises; the means equal those computed by hand from the same files.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use raglab::core::assessment::{Run, pool};
use raglab::core::metrics::order_run;
use raglab::core::trec::{parse_qrels, parse_run};
use serde_json::Value;

use crate::common::{Env, json_doc, repo};

fn path_str(p: &Path) -> String {
    p.to_str().expect("utf8").to_string()
}

fn read_run(path: &Path) -> Run {
    parse_run(&std::fs::read_to_string(path).expect("run")).expect("a run")
}

/// Member sets per query equal trectools' for every pool of the reference (two
/// runs at depths 5 and 10, three runs at depth 10).
#[test]
fn pools_equal_trectools_make_pool() {
    let data = repo().join("tests/data");
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("pooling/reference.json")).expect("reference"),
    )
    .expect("JSON");
    let pools = r["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 3);
    let mut depths = BTreeSet::new();
    for p in pools {
        let runs: Vec<Run> = p["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|n| {
                read_run(&data.join(r["runs"][n.as_str().expect("name")].as_str().expect("file")))
            })
            .collect();
        let depth = usize::try_from(p["depth"].as_u64().expect("depth")).expect("depth");
        depths.insert(depth);
        let got = pool(&runs, depth);
        let want: BTreeMap<String, BTreeSet<String>> = p["queries"]
            .as_object()
            .expect("queries")
            .iter()
            .map(|(q, docs)| {
                let docs = docs.as_array().expect("docs").iter();
                (
                    q.clone(),
                    docs.map(|d| d.as_str().expect("d").to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(got, want, "{} at depth {depth}", p["runs"]);
        let size: usize = got.values().map(BTreeSet::len).sum();
        assert_eq!(Some(size as u64), p["size"].as_u64());
    }
    assert_eq!(depths, BTreeSet::from([5, 10]));
}

/// A second user of the same workspace: their own config folder (their own key).
fn as_user(env: &Env, who: &str) -> std::process::Command {
    let mut c = env.cmd();
    c.env(
        "RAGLAB_CONFIG_DIR",
        env.dir.path().join(format!("config-{who}")),
    );
    c
}

fn run_ok(mut c: std::process::Command, args: &[&str]) -> String {
    let out = c.args(args).output().expect("spawn raglab");
    assert!(
        out.status.success(),
        "raglab {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `raglab ARGS --json` as `who`, its document checked against docs/reference/json.md.
fn json_as(env: &Env, who: &str, args: &[&str]) -> Value {
    let args = [args, &["--json"]].concat();
    let doc: Value = serde_json::from_str(&run_ok(as_user(env, who), &args)).expect("JSON");
    json_doc::check(&doc, &args);
    doc
}

/// The (question, chunk) that `assess next` shows, or none when the queue is empty.
fn next(env: &Env, who: &str) -> Option<(String, String, usize, String)> {
    let text = run_ok(as_user(env, who), &["--reviewer", who, "assess", "next"]);
    if text.contains("nothing left to grade") {
        return None;
    }
    let q = text
        .lines()
        .next()?
        .strip_prefix("question ")?
        .split(':')
        .next()?
        .to_string();
    let chunk_line = text.lines().nth(1)?.strip_prefix("chunk ")?;
    let c = chunk_line.split(' ').next()?.to_string();
    let left: usize = chunk_line
        .split('(')
        .nth(1)?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    Some((q, c, left, text))
}

/// P@1 per question of `run` on `qrels` (trec_eval's order; relevant: grade >= 1),
/// over the questions with a relevant judgement, by hand.
fn p_at_1(run: &Run, qrels: &HashMap<String, HashMap<String, u32>>) -> BTreeMap<String, f64> {
    qrels
        .iter()
        .filter(|(_, row)| row.values().any(|g| *g > 0))
        .map(|(q, row)| {
            let mut hits = run.get(q).cloned().unwrap_or_default();
            order_run(&mut hits);
            let hit = hits
                .first()
                .is_some_and(|(d, _)| row.get(d).is_some_and(|g| *g > 0));
            (q.clone(), f64::from(u8::from(hit)))
        })
        .collect()
}

fn qrels_of(path: &Path) -> HashMap<String, HashMap<String, u32>> {
    parse_qrels(&std::fs::read_to_string(path).expect("qrels"))
        .expect("qrels")
        .into_iter()
        .map(|(q, row)| (q, row.into_iter().collect()))
        .collect()
}

/// A target of question `q` in a targets-only qrels file.
fn old_targets(path: &Path, q: &str) -> String {
    let qrels = qrels_of(path);
    qrels[q].keys().next().expect("a target").clone()
}

fn mean_of(env: &Env, qrels: &Path, run: &Path, metric: &str) -> f64 {
    let out = env.json(&[
        "eval",
        "runs",
        "--qrels",
        &path_str(qrels),
        "--json",
        &path_str(run),
    ]);
    out["runs"][0]["means"][metric].as_f64().expect(metric)
}

/// The analyst's workspace: the sample ingested and sparse-indexed, BM25 and TF-IDF
/// runs written, Alice (lead) and Bob on the roster with their own keys, a pool of 6
/// questions at depth 3, and the targets-only qrels exported before any grade.
struct Pooled {
    env: Env,
    runs_dir: PathBuf,
    bm25: PathBuf,
    before: PathBuf,
}

fn pooled_sample() -> Pooled {
    let env = Env::new();
    env.ok(&["ingest", &path_str(&repo().join("sample-data/guidance"))]);
    env.ok(&["index", "--sparse-only"]);
    let questions = path_str(&repo().join("sample-data/questions.jsonl"));
    let runs_dir: PathBuf = env.dir.path().join("runs");
    let (runs, q) = (path_str(&runs_dir), questions.as_str());
    let retrieval = [
        "eval",
        "retrieval",
        "--queries",
        q,
        "--methods",
        "bm25,tfidf",
    ];
    env.ok(&[&retrieval[..], &["--run-out", &runs]].concat());
    let (bm25, tfidf) = (runs_dir.join("bm25.trec"), runs_dir.join("tfidf.trec"));
    let runs_arg = format!("{},{}", path_str(&bm25), path_str(&tfidf));
    let key = |who| {
        run_ok(as_user(&env, who), &["study", "key"])
            .trim()
            .to_string()
    };
    let (alice_key, bob_key) = (key("alice"), key("bob"));
    let alice = || as_user(&env, "alice");
    run_ok(
        alice(),
        &["study", "roster", "add", "alice", &alice_key, "--lead"],
    );
    run_ok(alice(), &["study", "roster", "add", "bob", &bob_key]);
    let pool = [
        "assess",
        "pool",
        "--queries",
        q,
        "--runs",
        &runs_arg,
        "--depth",
        "3",
        "--sample",
        "6",
        "--seed",
        "11",
    ];
    let pooled = json_as(&env, "alice", &pool);
    assert_eq!(
        (pooled["questions"].as_u64(), pooled["depth"].as_u64()),
        (Some(6), Some(3))
    );
    let count = |k: &str| pooled[k].as_u64().expect("count");
    assert_eq!(count("to_grade"), count("pairs") - count("targets"));
    assert!(count("to_grade") > 0, "{pooled}");
    let before = env.dir.path().join("targets.qrels");
    run_ok(alice(), &["qrels", "export", "--out", &path_str(&before)]);
    Pooled {
        env,
        runs_dir,
        bm25,
        before,
    }
}

/// The BM25 top chunk of question `q`.
fn top1(run: &Run, q: &str) -> String {
    let mut hits = run[q].clone();
    order_run(&mut hits);
    hits[0].0.clone()
}

/// Alice grades her whole queue: 2 for the BM25 top chunk of the question, 0 for
/// every other chunk; each grade takes one pair off her queue. Returns her grades and
/// the length of her queue before the first.
fn alice_grades_her_queue(p: &Pooled) -> (BTreeMap<(String, String), u32>, usize) {
    let bm25 = read_run(&p.bm25);
    let mut grades: BTreeMap<(String, String), u32> = BTreeMap::new();
    let mut first_left = None;
    loop {
        // Alice reads her queue as JSON; Bob (below) as text.
        let doc = json_as(&p.env, "alice", &["--reviewer", "alice", "assess", "next"]);
        if doc["next"].is_null() {
            break;
        }
        let field = |k: &str| doc["next"][k].as_str().expect("field").to_string();
        let (q, c) = (field("question_id"), field("chunk_id"));
        let left = doc["next"]["remaining"].as_u64().expect("remaining") as usize;
        let runs = path_str(&p.runs_dir);
        assert!(!doc.to_string().contains(&runs), "no run is named: {doc}");
        first_left.get_or_insert(left);
        let g: u32 = if c == top1(&bm25, &q) { 2 } else { 0 };
        let args = [
            "--reviewer",
            "alice",
            "assess",
            "grade",
            &q,
            &c,
            &g.to_string(),
        ];
        let out = json_as(&p.env, "alice", &args);
        assert_eq!(out["remaining"].as_u64(), Some(left as u64 - 1), "{out}");
        assert_eq!(
            (out["grade"].as_u64(), out["assessor"].as_str()),
            (Some(u64::from(g)), Some("alice"))
        );
        grades.insert((q, c), g);
    }
    (grades, first_left.expect("alice had a queue"))
}

/// What Bob may not do: grade as Alice, grade a shipped target or a grade 3, or read
/// Alice's grades through the qrels (under a roster only the lead exports).
fn bob_is_refused(p: &Pooled, q: &str, c: &str) {
    let refused = |args: &[&str], why: &str| {
        let out = as_user(&p.env, "bob").args(args).output().expect("spawn");
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(
            !out.status.success() && err.contains(why),
            "{args:?}: {err}"
        );
    };
    refused(
        &["--reviewer", "alice", "assess", "grade", q, c, "2"],
        "you are not alice",
    );
    let target = old_targets(&p.before, q);
    refused(
        &["--reviewer", "bob", "assess", "grade", q, &target, "2"],
        "shipped target",
    );
    refused(
        &["--reviewer", "bob", "assess", "grade", q, c, "3"],
        "grade 3",
    );
    refused(&["qrels", "export"], "needs the study lead's key");
}

/// P@1 changes for exactly the questions whose BM25 top chunk now counts as relevant;
/// the binary's P@1 means equal the hand-computed ones, and Judged@10 rises.
fn check_scores(p: &Pooled, grown: &Path, grades: &BTreeMap<(String, String), u32>) {
    let bm25_run = read_run(&p.bm25);
    let (old, new) = (qrels_of(&p.before), qrels_of(grown));
    let (p_old, p_new) = (p_at_1(&bm25_run, &old), p_at_1(&bm25_run, &new));
    let changed: BTreeSet<&String> = p_old.keys().filter(|q| p_old[*q] != p_new[*q]).collect();
    let top_graded: BTreeSet<&String> = grades
        .keys()
        .filter(|(q, c)| new[q][c] > 0 && p_old[q] == 0.0)
        .map(|(q, _)| q)
        .collect();
    assert!(!top_graded.is_empty());
    assert_eq!(changed, top_graded);
    assert_eq!(p_old.len(), p_new.len());
    let mean = |m: &BTreeMap<String, f64>| m.values().sum::<f64>() / m.len() as f64;
    let (bin_old, bin_new) = (
        mean_of(&p.env, &p.before, &p.bm25, "P@1"),
        mean_of(&p.env, grown, &p.bm25, "P@1"),
    );
    assert!(
        (bin_old - mean(&p_old)).abs() < 1e-12,
        "{bin_old} vs {}",
        mean(&p_old)
    );
    assert!(
        (bin_new - mean(&p_new)).abs() < 1e-12,
        "{bin_new} vs {}",
        mean(&p_new)
    );
    let step = changed.len() as f64 / p_old.len() as f64;
    assert!(
        (bin_new - bin_old - step).abs() < 1e-12,
        "{bin_old} -> {bin_new}"
    );
    let (j_old, j_new) = (
        mean_of(&p.env, &p.before, &p.bm25, "Judged@10"),
        mean_of(&p.env, grown, &p.bm25, "Judged@10"),
    );
    assert!(j_new > j_old, "Judged@10 {j_old} -> {j_new}");
}

#[test]
fn pool_grade_export_and_the_grown_qrels_change_p_at_1() {
    let p = pooled_sample();
    // Bob sees his first pair before anyone graded.
    let (bq, bc, bob_left, bob_text) = next(&p.env, "bob").expect("bob's queue");
    let (alice_grades, alice_left) = alice_grades_her_queue(&p);
    assert_eq!(bob_left, alice_left, "both queues start from the same pool");
    assert_eq!(alice_grades.len(), bob_left);
    // Blind: after Alice graded everything, Bob's queue and what he is shown are as
    // before.
    let (bq2, bc2, bob_left2, bob_text2) = next(&p.env, "bob").expect("bob's queue");
    assert_eq!((&bq2, &bc2, bob_left2), (&bq, &bc, bob_left));
    assert_eq!(bob_text, bob_text2);
    bob_is_refused(&p, &bq, &bc);
    // Bob grades his first pair 0: with Alice's grade the median rounded down.
    let bob = ["--reviewer", "bob", "assess", "grade", &bq, &bc, "0"];
    run_ok(as_user(&p.env, "bob"), &bob);
    let progress = run_ok(as_user(&p.env, "alice"), &["assess", "progress"]);
    for line in [
        format!("alice: {bob_left} / {bob_left} pooled pairs graded"),
        format!("bob: 1 / {bob_left} pooled pairs graded"),
        "alice vs bob: 1 shared pairs".to_string(),
    ] {
        assert!(progress.contains(&line), "{line}: {progress}");
    }
    let progress = json_as(&p.env, "alice", &["assess", "progress"]);
    let graded: BTreeMap<&str, (u64, u64)> = progress["assessors"]
        .as_array()
        .expect("assessors")
        .iter()
        .map(|a| {
            let n = |k: &str| a[k].as_u64().expect("count");
            (
                a["assessor"].as_str().expect("name"),
                (n("graded"), n("pooled")),
            )
        })
        .collect();
    let pooled = bob_left as u64;
    assert_eq!(
        graded,
        BTreeMap::from([("alice", (pooled, pooled)), ("bob", (1, pooled))])
    );
    assert_eq!(
        progress["agreement"][0]["pairs"].as_u64(),
        Some(1),
        "{progress}"
    );
    let grown = p.env.dir.path().join("grown.qrels");
    run_ok(
        as_user(&p.env, "alice"),
        &["qrels", "export", "--out", &path_str(&grown)],
    );
    let (old, new) = (qrels_of(&p.before), qrels_of(&grown));
    // Targets are kept at 1; each graded pair holds the combined grade.
    for (q, row) in &old {
        for (d, g) in row {
            assert_eq!((g, new[q].get(d)), (&1, Some(&1)), "target {q} {d}");
        }
    }
    for ((q, c), g) in &alice_grades {
        let want = if (q, c) == (&bq, &bc) { g / 2 } else { *g };
        assert_eq!(new[q].get(c), Some(&want), "{q} {c}");
    }
    let count =
        |q: &HashMap<String, HashMap<String, u32>>| q.values().map(HashMap::len).sum::<usize>();
    assert_eq!(count(&new) - count(&old), alice_grades.len());
    check_scores(&p, &grown, &alice_grades);
}

/// On the files tests/data/assess holds (written by raglab's own commands on the
/// sample: scripts/assess_sample_data.sh), `eval runs` gives the P@1 and Judged@10
/// means of pytrec_eval and ir_measures on the targets-only and the grown qrels, and
/// the questions whose P@1 the grades change (pytrec_eval's per-query P_1) are
/// exactly those whose BM25 top chunk was graded relevant.
#[test]
fn grown_qrels_scores_equal_pytrec_eval_and_ir_measures() {
    let dir = repo().join("tests/data/assess");
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("reference.json")).expect("reference"),
    )
    .expect("JSON");
    let env = Env::new();
    let run = dir.join("bm25.trec");
    for name in ["targets", "grown"] {
        let want = &r["qrels"][name];
        let qrels = dir.join(want["file"].as_str().expect("file"));
        for m in ["P@1", "Judged@10"] {
            let got = mean_of(&env, &qrels, &run, m);
            let w = want["mean"][m].as_f64().expect("mean");
            assert!((got - w).abs() < 1e-9, "{name} {m}: {got} vs {w}");
        }
    }
    let (old, new) = (
        qrels_of(&dir.join("targets.qrels")),
        qrels_of(&dir.join("grown.qrels")),
    );
    let bm25 = read_run(&run);
    let graded_top: BTreeSet<String> = new
        .iter()
        .filter(|(q, row)| {
            let mut hits = bm25[*q].clone();
            order_run(&mut hits);
            let top = &hits[0].0;
            !old[*q].contains_key(top) && row.get(top).is_some_and(|g| *g > 0)
        })
        .map(|(q, _)| q.clone())
        .collect();
    let changed: BTreeSet<String> = r["p1_changed"]
        .as_array()
        .expect("changed")
        .iter()
        .map(|q| q.as_str().expect("qid").to_string())
        .collect();
    assert!(!changed.is_empty());
    assert_eq!(graded_top, changed);
}
