//! `raglab report answers --compare RUN_A RUN_B --json` through the binary on two real
//! judged answer runs ([`common::answer_runs`]: SmolLM2 with and without retrieval,
//! judged by SmolLM2). Everything the command prints is recomputed here from what is
//! stored, the answers and judgements datasets read as plain JSON rows: the pairing,
//! the 2x2 counts, both pass rates, B's wins / ties / losses, McNemar's exact p by hand
//! (the binomial tail summed in exact integers) and against scipy's `binomtest`
//! (tests/data/significance/binomtest_small.json, made by
//! scripts/binomtest_small_reference.py), Holm's adjustment by hand, and per question
//! the answer each run gave, where its target sat in the prompt, its labels and the
//! criteria whose labels differ.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::common::{self, Env, answer_runs};

/// The stored rows, as lance holds them.
struct Stored {
    answers: Vec<Value>,
    judgements: Vec<Value>,
}

async fn stored(env: &Env) -> Stored {
    let ctx = common::context(env, raglab::config::Config::default());
    let answers = raglab::service::answer::answers(&ctx.workspace)
        .read_all::<Value>()
        .await
        .expect("answers");
    let judgements = raglab::service::answer::judgements(&ctx.workspace)
        .read_all::<Value>()
        .await
        .expect("judgements");
    Stored {
        answers,
        judgements,
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// McNemar's exact p by hand: min(1, 2 P(X <= min(b, c))), X ~ Binomial(b + c, 1/2),
/// the tail summed as exact integers (1 with no discordant pair).
fn mcnemar_by_hand(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let mut binomial = 1u128; // C(n, 0)
    let mut tail = 0u128;
    for i in 0..=b.min(c) {
        tail += binomial;
        binomial = binomial * u128::from(n - i) / u128::from(i + 1);
    }
    (2.0 * tail as f64 / 2f64.powi(i32::try_from(n).expect("small n"))).min(1.0)
}

/// Holm's step-down adjustment by hand: sort ascending, multiply the i-th smallest
/// (from 0) by m - i, cap at 1, carry the running maximum.
fn holm_by_hand(p: &[f64]) -> Vec<f64> {
    let mut order: Vec<usize> = (0..p.len()).collect();
    order.sort_by(|a, b| p[*a].total_cmp(&p[*b]));
    let mut out = vec![0.0; p.len()];
    let mut running = 0.0f64;
    for (i, &k) in order.iter().enumerate() {
        running = running.max(((p.len() - i) as f64 * p[k]).min(1.0));
        out[k] = running;
    }
    out
}

/// scipy's binomtest p for (b, c) from the reference file.
fn scipy_p(b: u64, c: u64) -> f64 {
    let path = common::repo().join("tests/data/significance/binomtest_small.json");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("reference")).expect("json");
    let case = r["binomtest"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|x| x["b"] == b && x["c"] == c)
        .unwrap_or_else(|| panic!("no scipy case for b={b} c={c}"));
    f(&case["p"])
}

/// Where the first target sat in the prompt of a stored answer, by the rule the report
/// states: its rank among the chunks kept, else `dropped` when it was retrieved, else
/// `not retrieved`.
fn place(a: &Value) -> String {
    match (a["target_prompt_rank"].as_u64(), a["target_rank"].as_u64()) {
        (Some(r), _) => format!("#{r}"),
        (None, Some(_)) => "dropped".into(),
        (None, None) => "not retrieved".into(),
    }
}

/// The stored answer of `run` to each question, and its judgement: this test's runs
/// answer each question once and the judge judged each answer once, so the pairing
/// rule has nothing to choose.
fn by_question<'a>(st: &'a Stored, run: &str) -> BTreeMap<String, (&'a Value, &'a Value)> {
    let mut out = BTreeMap::new();
    for a in st.answers.iter().filter(|a| a["run"] == run) {
        let id = s(&a["answer_id"]);
        let js: Vec<&Value> = st
            .judgements
            .iter()
            .filter(|j| j["answer_id"] == id)
            .collect();
        assert_eq!(js.len(), 1, "one judgement of {id}");
        let q = s(&a["question_id"]).to_string();
        assert!(
            out.insert(q, (a, js[0])).is_none(),
            "one answer per question"
        );
    }
    out
}

/// The label of `criterion` in a stored judgement.
fn label<'a>(j: &'a Value, criterion: &str) -> Option<&'a str> {
    let cs = j["criteria"].as_array().expect("criteria");
    let i = cs.iter().position(|c| c == criterion)?;
    j["labels"][i].as_str()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compare_json_matches_a_hand_count_of_the_stored_labels() {
    let env = Env::new();
    answer_runs::judged_runs(&env);
    let out = env.json(&["report", "answers", "--compare", "rag", "bare", "--json"]);
    let st = stored(&env).await;
    let (ra, rb) = (by_question(&st, "rag"), by_question(&st, "bare"));
    assert_eq!(ra.len(), answer_runs::QUESTIONS.len());
    assert_eq!(rb.len(), answer_runs::QUESTIONS.len());
    assert_eq!((s(&out["run_a"]), s(&out["run_b"])), ("rag", "bare"));
    let judges: BTreeSet<&str> = st.judgements.iter().map(|j| s(&j["judge_model"])).collect();
    let printed: BTreeSet<&str> = out["judge_models"]
        .as_array()
        .expect("judge models")
        .iter()
        .map(s)
        .collect();
    assert_eq!(printed, judges);

    // Per criterion, over the questions both runs' judgements label.
    let criteria: BTreeSet<&str> = st
        .judgements
        .iter()
        .flat_map(|j| j["criteria"].as_array().expect("criteria").iter().map(s))
        .collect();
    let rows = out["criteria"].as_array().expect("criteria rows");
    let printed: Vec<&str> = rows.iter().map(|r| s(&r["criterion"])).collect();
    assert_eq!(printed, criteria.iter().copied().collect::<Vec<_>>());
    let mut p_raw = Vec::new();
    for (row, c) in rows.iter().zip(&criteria) {
        let (mut both, mut only_a, mut only_b, mut neither) = (0u64, 0u64, 0u64, 0u64);
        for (q, (_, ja)) in &ra {
            let Some((_, jb)) = rb.get(q) else { continue };
            let (Some(la), Some(lb)) = (label(ja, c), label(jb, c)) else {
                continue;
            };
            match (la == "pass", lb == "pass") {
                (true, true) => both += 1,
                (true, false) => only_a += 1,
                (false, true) => only_b += 1,
                (false, false) => neither += 1,
            }
        }
        let n = both + only_a + only_b + neither;
        eprintln!(
            "{c}: n={n} both={both} only_rag={only_a} only_bare={only_b} neither={neither} p={}",
            row["mcnemar"]["p"]
        );
        assert_eq!(row["questions"], n, "{c}");
        let m = &row["mcnemar"];
        assert_eq!(
            (&m["both_pass"], &m["only_a"], &m["only_b"], &m["both_fail"]),
            (
                &Value::from(both),
                &Value::from(only_a),
                &Value::from(only_b),
                &Value::from(neither)
            ),
            "{c}"
        );
        let rate = |k: u64| k as f64 / n as f64;
        assert!(
            (f(&row["pass_rate_a"]) - rate(both + only_a)).abs() < 1e-12,
            "{c}"
        );
        assert!(
            (f(&row["pass_rate_b"]) - rate(both + only_b)).abs() < 1e-12,
            "{c}"
        );
        // B's record against A: a win where only B passes, a tie where both agree.
        assert_eq!(
            (&row["wins"], &row["ties"], &row["losses"]),
            (
                &Value::from(only_b),
                &Value::from(both + neither),
                &Value::from(only_a)
            ),
            "{c}"
        );
        let p = f(&m["p"]);
        let hand = mcnemar_by_hand(only_a, only_b);
        assert!(
            (p - hand).abs() <= 1e-12 * hand,
            "{c}: p {p}, by hand {hand}"
        );
        if only_a + only_b > 0 {
            let sp = scipy_p(only_a, only_b);
            assert!((p - sp).abs() <= 1e-12 * sp, "{c}: p {p}, scipy {sp}");
        }
        p_raw.push(hand);
    }
    for (row, want) in rows.iter().zip(holm_by_hand(&p_raw)) {
        let got = f(&row["p_holm"]);
        assert!(
            (got - want).abs() <= 1e-12 * want,
            "{}: {got} vs {want}",
            row["criterion"]
        );
    }

    // Per question: both runs' answers, their targets' places and labels, and the
    // criteria that differ.
    let qs = out["questions"].as_array().expect("questions");
    let ids: Vec<&str> = qs.iter().map(|q| s(&q["question_id"])).collect();
    let mut want_ids: Vec<&str> = answer_runs::QUESTIONS.to_vec();
    want_ids.sort_unstable();
    assert_eq!(ids, want_ids);
    for q in qs {
        let id = s(&q["question_id"]);
        let (a, ja) = ra[id];
        let (b, jb) = rb[id];
        // Printed to a pipe, the question is the stored text, exactly.
        assert_eq!(q["question"], a["question"], "{id}");
        if id == answer_runs::HOSTILE_ID {
            assert!(s(&q["question"]).ends_with(answer_runs::HOSTILE_TAIL));
        }
        for (side, stored_answer, j) in [(&q["a"], a, ja), (&q["b"], b, jb)] {
            assert_eq!(side["answer_id"], stored_answer["answer_id"], "{id}");
            assert_eq!(side["answer"], stored_answer["answer"], "{id}");
            assert_eq!(side["seed"], stored_answer["seed"], "{id}");
            assert_eq!(s(&side["target_in_prompt"]), place(stored_answer), "{id}");
            assert_eq!(side["judge_model"], j["judge_model"], "{id}");
            let labels: Vec<(&str, &str)> = side["labels"]
                .as_array()
                .expect("labels")
                .iter()
                .map(|p| (s(&p[0]), s(&p[1])))
                .collect();
            let stored_labels: Vec<(&str, &str)> = j["criteria"]
                .as_array()
                .expect("criteria")
                .iter()
                .zip(j["labels"].as_array().expect("labels"))
                .map(|(c, l)| (s(c), s(l)))
                .collect();
            assert_eq!(labels, stored_labels, "{id}");
        }
        assert_eq!(s(&q["b"]["target_in_prompt"]), "not retrieved", "{id}");
        let differ: Vec<&str> = q["differ"]
            .as_array()
            .expect("differ")
            .iter()
            .map(s)
            .collect();
        let want: Vec<&str> = ja["criteria"]
            .as_array()
            .expect("criteria")
            .iter()
            .map(s)
            .filter(|c| matches!((label(ja, c), label(jb, c)), (Some(x), Some(y)) if x != y))
            .collect();
        assert_eq!(differ, want, "{id}");
    }

    // A run with no answers is refused by name.
    let failed = env
        .cmd()
        .args(["report", "answers", "--compare", "rag", "nosuch", "--json"])
        .output()
        .expect("spawn raglab");
    assert!(!failed.status.success());
    assert!(
        String::from_utf8_lossy(&failed.stderr).contains("run `nosuch` has no answers"),
        "{}",
        String::from_utf8_lossy(&failed.stderr)
    );

    // The Generate pane's Compare view on the same runs.
    crate::models::tui_compare_answers::the_compare_view_shows_the_numbers_of_report_answers_compare(
        &env, &out,
    )
    .await;
    runs_matrix_rows_equal_the_comparison(&env, &out, &st);
}

/// `report runs` over the same two judged runs: each criterion's pass rate is the
/// comparison's, the pinned baseline's McNemar p and difference are the comparison's,
/// and the cost is the stored answers' means.
fn runs_matrix_rows_equal_the_comparison(env: &Env, cmp: &Value, st: &Stored) {
    let first = s(&cmp["criteria"][0]["criterion"]).to_string();
    let m = env.json(&[
        "report",
        "runs",
        "--baseline",
        "rag",
        "--quality",
        &first,
        "--json",
    ]);
    assert_eq!(s(&m["quality"]), first);
    let row = |label: &str| {
        m["rows"]
            .as_array()
            .expect("rows")
            .iter()
            .find(|r| r["label"] == label)
            .unwrap_or_else(|| panic!("no row {label}"))
            .clone()
    };
    let (rag, bare) = (row("rag"), row("bare"));
    assert_eq!((s(&rag["kind"]), s(&bare["kind"])), ("answers", "answers"));
    assert_eq!(s(&bare["pipeline"]["method"]), "none");
    for c in cmp["criteria"].as_array().expect("criteria") {
        let name = s(&c["criterion"]);
        // Every question is judged in both runs here, so a run's rate over its own
        // judged questions is its rate over the paired ones.
        assert_eq!(c["questions"], answer_runs::QUESTIONS.len());
        for (r, key) in [(&rag, "pass_rate_a"), (&bare, "pass_rate_b")] {
            let got = f(&r["quality"][name]["mean"]);
            assert!(
                (got - f(&c[key])).abs() < 1e-12,
                "{name}: {got} vs {}",
                c[key]
            );
        }
        if name == first {
            let d = &bare["against_baseline"];
            assert_eq!(s(&d["test"]), "mcnemar");
            assert!((f(&d["p"]) - f(&c["mcnemar"]["p"])).abs() < 1e-12);
            let diff = f(&c["pass_rate_b"]) - f(&c["pass_rate_a"]);
            assert!((f(&d["difference"]) - diff).abs() < 1e-12);
        }
    }
    let mean_of = |run: &str, field: &str| {
        let v: Vec<f64> = st
            .answers
            .iter()
            .filter(|a| a["run"] == run)
            .map(|a| f(&a[field]))
            .collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    for (r, run) in [(&rag, "rag"), (&bare, "bare")] {
        let cost = &r["cost"];
        assert!((f(&cost["prompt_tokens"]) - mean_of(run, "prompt_tokens")).abs() < 1e-9);
        assert!((f(&cost["output_tokens"]) - mean_of(run, "output_tokens")).abs() < 1e-9);
        assert!((f(&cost["latency_ms"]["total"]["mean"]) - mean_of(run, "total_ms")).abs() < 1e-6);
        assert!(s(&cost["ran_on"][0]).starts_with("llama.cpp on this machine"));
    }
    // The bare run reads a shorter prompt; whichever way quality went, a row that is
    // no better and costs more is marked, and the baseline row carries no difference.
    assert_eq!(rag["against_baseline"], Value::Null);
}
