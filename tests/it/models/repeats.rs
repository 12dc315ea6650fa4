//! `generate --repeats N` and `judge --repeats N` through the binary with the real
//! small model on three questions, and what `report answers` makes of them. Every
//! repeat's seed is checked on the stored records (answers: the run's seed + repeat;
//! judgements: 7 + repeat, at the temperature asked), reruns add nothing, and the
//! report's spread (per generation repeat pass rates, their mean, sample SD, min and
//! max) and the judge's self-consistency (Cohen's kappa between its two repeats) are
//! recomputed here by hand from the stored labels.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::common::{self, Env};

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

fn close(got: &Value, want: f64, what: &str) {
    let g = got
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {got}"));
    assert!(
        (g - want).abs() < 1e-12,
        "{what}: printed {g}, by hand {want}"
    );
}

/// Cohen's kappa of pass/fail pairs written out: p_o the share of equal pairs, p_e
/// the sum over labels of the product of the two raters' shares; None when p_e = 1.
fn kappa_by_hand(pairs: &[(&str, &str)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let p_o = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
    let share = |first: bool, l: &str| {
        pairs
            .iter()
            .filter(|(a, b)| if first { *a == l } else { *b == l })
            .count() as f64
            / n
    };
    let p_e: f64 = ["pass", "fail"]
        .iter()
        .map(|l| share(true, l) * share(false, l))
        .sum();
    ((1.0 - p_e).abs() > 1e-12).then(|| (p_o - p_e) / (1.0 - p_e))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeats_record_their_seeds_and_the_report_matches_a_hand_count() {
    let env = Env::new();
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        concat!(
            "{\"id\": \"q0\", \"text\": \"How is rabies prevented?\", \"answer\": \"Vaccinate pets.\", \"relevant\": [\"rabies#prevention\"]}\n",
            "{\"id\": \"q1\", \"text\": \"How do I avoid the flu?\", \"answer\": \"A yearly vaccine.\", \"relevant\": [\"flu#prevention\"]}\n",
            "{\"id\": \"q2\", \"text\": \"Should my cat get a rabies shot?\", \"answer\": \"Yes.\", \"relevant\": [\"rabies#prevention\"]}\n",
        ),
    )
    .expect("questions");
    let qs = q.to_str().expect("utf8");
    let gen_args = [
        "generate",
        "--questions",
        qs,
        "--run",
        "rep",
        "--k",
        "2",
        "--max-tokens",
        "8",
        "--seed",
        "42",
        "--repeats",
        "3",
    ];
    env.ok(&gen_args);
    env.ok(&gen_args); // done: nothing added
    let judge_args = ["judge", "--repeats", "2", "--temperature", "0.9"];
    env.ok(&judge_args);
    env.ok(&judge_args);

    let ctx = common::context(&env, raglab::config::Config::default());
    let answers: Vec<Value> = raglab::service::answer::answers(&ctx.workspace)
        .read_all()
        .await
        .expect("answers");
    let judgements: Vec<Value> = raglab::service::answer::judgements(&ctx.workspace)
        .read_all()
        .await
        .expect("judgements");

    // Nine answers: each question once per repeat, repeat r with seed 42 + r.
    assert_eq!(
        answers.len(),
        9,
        "three questions x three repeats, no duplicate"
    );
    let mut seen = BTreeSet::new();
    for a in &answers {
        let (r, seed) = (u(&a["repeat"]), u(&a["seed"]));
        assert_eq!(seed, 42 + r, "{a}");
        let sampling: Value = serde_json::from_str(s(&a["sampling"])).expect("sampling");
        assert_eq!(u(&sampling["seed"]), seed);
        assert!(s(&a["answer_id"]).ends_with(&format!("/s{seed}")));
        assert!(seen.insert((s(&a["question_id"]).to_string(), r)));
    }
    // Eighteen judgements: each answer once per judge repeat, seed 7 + r, T = 0.9.
    assert_eq!(judgements.len(), 18, "nine answers x two judge repeats");
    let mut judged = BTreeSet::new();
    for j in &judgements {
        let r = u(&j["repeat"]);
        assert_eq!(u(&j["seed"]), 7 + r, "{j}");
        let t = j["temperature"].as_f64().expect("temperature");
        assert!((t - 0.9).abs() < 1e-6, "{t}");
        assert!(judged.insert((s(&j["answer_id"]).to_string(), r)));
    }

    // By hand: answer -> generation repeat; labels per (answer, judge repeat).
    let repeat_of: HashMap<&str, u64> = answers
        .iter()
        .map(|a| (s(&a["answer_id"]), u(&a["repeat"])))
        .collect();
    let labels = |j: &Value| -> Vec<(String, String)> {
        j["criteria"]
            .as_array()
            .expect("criteria")
            .iter()
            .zip(j["labels"].as_array().expect("labels"))
            .map(|(c, l)| (s(c).to_string(), s(l).to_string()))
            .collect()
    };
    // criterion (and overall) -> generation repeat -> (pass, total)
    let mut counts: BTreeMap<String, BTreeMap<u64, (u32, u32)>> = BTreeMap::new();
    for j in &judgements {
        let r = repeat_of[s(&j["answer_id"])];
        for (c, l) in labels(j) {
            for key in [c.as_str(), "overall"] {
                let e = counts
                    .entry(key.to_string())
                    .or_default()
                    .entry(r)
                    .or_default();
                e.0 += u32::from(l == "pass");
                e.1 += 1;
            }
        }
    }
    let report = env.json(&["report", "answers", "--run", "rep", "--json"]);
    let rep = &report["rep"]["repeats"];
    assert_eq!(
        rep["generation_repeats"],
        serde_json::json!([0, 1, 2]),
        "{report}"
    );
    for (c, by_repeat) in &counts {
        let rates: Vec<f64> = by_repeat
            .values()
            .map(|(p, t)| f64::from(*p) / f64::from(*t))
            .collect();
        assert_eq!(rates.len(), 3, "{c}: every generation repeat judged");
        let mean = rates.iter().sum::<f64>() / 3.0;
        // Sample SD: n - 1 = 2.
        let sd = (rates.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / 2.0).sqrt();
        let got = &rep["spread"][c];
        for (r, rate) in by_repeat.keys().zip(&rates) {
            close(
                &got["rates"][r.to_string()],
                *rate,
                &format!("{c} repeat {r}"),
            );
        }
        close(&got["mean"], mean, c);
        close(&got["sd"], sd, c);
        close(
            &got["min"],
            rates.iter().copied().fold(f64::MAX, f64::min),
            c,
        );
        close(
            &got["max"],
            rates.iter().copied().fold(f64::MIN, f64::max),
            c,
        );
        eprintln!("{c}: rates {rates:?} mean {mean:.4} sd {sd:.4}");
    }

    // Kappa between judge repeats 0 and 1 over (answer, criterion) units.
    let by_repeat = |r: u64| -> HashMap<&str, &Value> {
        judgements
            .iter()
            .filter(|j| u(&j["repeat"]) == r)
            .map(|j| (s(&j["answer_id"]), j))
            .collect()
    };
    let (first, second) = (by_repeat(0), by_repeat(1));
    let mut pairs: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for (id, j0) in &first {
        let l1: HashMap<String, String> = labels(second[id]).into_iter().collect();
        for (c, l) in labels(j0) {
            for key in [c.as_str(), "overall"] {
                pairs
                    .entry(key.to_string())
                    .or_default()
                    .push((l.clone(), l1[&c].clone()));
            }
        }
    }
    let consistency = rep["judge_consistency"].as_array().expect("consistency");
    assert_eq!(consistency.len(), 1, "{report}");
    let pair = &consistency[0]["pairs"][0];
    assert_eq!((u(&pair["first"]), u(&pair["second"])), (0, 1));
    assert_eq!(u(&pair["units"]), pairs["overall"].len() as u64);
    for (c, p) in &pairs {
        let p: Vec<(&str, &str)> = p.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        let want = kappa_by_hand(&p);
        eprintln!("kappa {c}: {want:?} over {} units", p.len());
        match want {
            Some(k) => close(&pair["kappa"][c], k, &format!("kappa {c}")),
            None => assert!(pair["kappa"][c].is_null(), "{c}: {}", pair["kappa"][c]),
        }
    }
}
