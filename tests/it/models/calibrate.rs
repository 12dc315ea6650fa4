//! `raglab calibrate` through the real binary on a tiny real study: six answers to
//! two guidance pages, two reviewers' labels, the lead's final labels where they
//! disagree, and the real SmolLM2 GGUF as the judge (locally, and on a real
//! llama-server). Checked on what it stored and printed:
//!
//! - every calibrated judgement's stored prompt shows the examples the plan names,
//!   all from other folds, and never its own item; the folds partition the items;
//! - the before and after kappas (per criterion and Overall) equal Cohen's kappa
//!   recomputed here, by its formula, from the stored judgements' labels and the
//!   final labels (agreed, else the lead's); the difference is after - before and
//!   its CI brackets it;
//! - a rerun judges nothing and prints the same numbers.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::common::{self, Env};
use raglab::service::answer::{JudgementRecord, judgements, save_answer};
use raglab::service::base::default_rubric;
use raglab::service::study;

const PASS: &str = "pass";
const FAIL: &str = "fail";

/// (question, reference answer, answer, target chunk): a few good answers, a few bad.
const QA: [(&str, &str, &str, &str); 6] = [
    (
        "How is rabies prevented in pets (case 0)?",
        "Vaccinate dogs and cats.",
        "Vaccinate dogs and cats against rabies.",
        "rabies#prevention",
    ),
    (
        "Which animals should I avoid because of rabies (case 1)?",
        "Wild animals such as bats.",
        "Bats are safe to handle; rabies only comes from dogs.",
        "rabies#prevention",
    ),
    (
        "How often should I get a flu vaccine (case 2)?",
        "Every year.",
        "Get a flu vaccine every year.",
        "flu#prevention",
    ),
    (
        "What else helps prevent the flu (case 3)?",
        "Wash your hands often.",
        "Eat garlic and the flu cannot reach you.",
        "flu#prevention",
    ),
    (
        "Should my cat get a rabies shot (case 4)?",
        "Yes.",
        "Yes, vaccinate cats against rabies.",
        "rabies#prevention",
    ),
    (
        "Is the flu vaccine needed only once (case 5)?",
        "No, every year.",
        "Once in a lifetime is enough.",
        "flu#prevention",
    ),
];

/// The intended final label of item `i`, criterion `c`: the bad answers (1, 3, 5)
/// fail faithfulness and factual consistency; completeness and clarity vary too.
fn intended(i: usize, c: usize) -> &'static str {
    let bad = i % 2 == 1;
    let fail = match c {
        0 | 2 => bad,
        1 => bad || i == 4,
        _ => i == 3,
    };
    if fail { FAIL } else { PASS }
}

/// Where bob disagrees with ann (the lead then settles on the intended label).
fn bob_flips(i: usize, c: usize) -> bool {
    (i * 4 + c).is_multiple_of(5)
}

fn flip(l: &str) -> &'static str {
    if l == PASS { FAIL } else { PASS }
}

/// Six answers, their items, ann's and bob's labels, and the lead's final labels on
/// every disagreement; returns the final label of each (item, criterion) as the
/// study defines it: agreed where the two agree, else the lead's.
async fn study(env: &Env) -> BTreeMap<(String, String), String> {
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let ctx = common::context(env, raglab::config::Config::default());
    for (i, (q, reference, answer, target)) in QA.iter().enumerate() {
        let a = common::records::written("cal", i, q, reference, answer, target);
        save_answer(&ctx, &a).await.expect("answer");
    }
    study::create_items(
        &ctx,
        &study::ItemSource::Run("cal".into(), Default::default()),
        None,
        None,
    )
    .await
    .expect("items");
    let rubric = default_rubric();
    let keys: Vec<String> = rubric.criteria.iter().map(|c| c.key.clone()).collect();
    let mut rows = String::new();
    let mut human: HashMap<(String, String, &str), String> = HashMap::new();
    for i in 0..QA.len() {
        let item = format!("cal/q{i}/s42");
        for (c, key) in keys.iter().enumerate() {
            let ann = intended(i, c);
            let bob = if bob_flips(i, c) { flip(ann) } else { ann };
            for (who, l) in [("ann", ann), ("bob", bob)] {
                rows.push_str(&format!(
                    "{{\"item_id\": \"{item}\", \"reviewer\": \"{who}\", \"criterion\": \"{key}\", \"label\": \"{l}\"}}\n"
                ));
                human.insert((item.clone(), key.clone(), who), l.to_string());
            }
        }
    }
    let file = env.dir.path().join("labels.jsonl");
    std::fs::write(&file, rows).expect("labels");
    study::import_labels(&ctx, &rubric, &file)
        .await
        .expect("import");
    let items = study::read_items(&ctx).await.expect("items");
    let mut lead = Vec::new();
    let mut finals = BTreeMap::new();
    for i in 0..QA.len() {
        let item = format!("cal/q{i}/s42");
        for (c, key) in keys.iter().enumerate() {
            let (a, b) = (
                &human[&(item.clone(), key.clone(), "ann")],
                &human[&(item.clone(), key.clone(), "bob")],
            );
            let fin = if a == b {
                a.clone()
            } else {
                let l = intended(i, c);
                lead.push(study::final_label(
                    &rubric,
                    "lena",
                    &item,
                    key,
                    l,
                    "the guidance says so",
                ));
                l.to_string()
            };
            finals.insert((item.clone(), key.clone()), fin);
        }
    }
    assert!(
        !lead.is_empty(),
        "the study has disagreements to adjudicate"
    );
    study::save_label_batch(&ctx, &rubric, &items, &lead)
        .await
        .expect("final labels");
    finals
}

/// Cohen's kappa written out: p_o the share of equal pairs, p_e the sum over the
/// labels of the product of the two raters' shares; None when p_e = 1.
fn kappa_by_hand(pairs: &[(String, String)]) -> Option<f64> {
    let n = pairs.len() as f64;
    let p_o = pairs.iter().filter(|(a, b)| a == b).count() as f64 / n;
    let share = |first: bool, l: &str| {
        pairs
            .iter()
            .filter(|(a, b)| if first { a == l } else { b == l })
            .count() as f64
            / n
    };
    let p_e: f64 = [PASS, FAIL]
        .iter()
        .map(|l| share(true, l) * share(false, l))
        .sum();
    ((1.0 - p_e).abs() > 1e-12).then(|| (p_o - p_e) / (1.0 - p_e))
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

fn same(got: &Value, want: Option<f64>, what: &str) {
    match want {
        Some(w) => {
            let g = got
                .as_f64()
                .unwrap_or_else(|| panic!("{what}: printed {got}, by hand {w}"));
            assert!((g - w).abs() < 1e-12, "{what}: printed {g}, by hand {w}");
        }
        None => assert!(got.is_null(), "{what}: printed {got}, by hand undefined"),
    }
}

/// The stored judgements of `model`, newest per answer.
fn newest<'a>(all: &'a [JudgementRecord], model: &str) -> HashMap<&'a str, &'a JudgementRecord> {
    all.iter()
        .filter(|j| j.judge_model == model)
        .map(|j| (j.answer_id.as_str(), j))
        .collect()
}

/// The checks of one calibration printed as `doc` over the study `finals`.
async fn check(env: &Env, doc: &Value, finals: &BTreeMap<(String, String), String>) {
    let ctx = common::context(env, raglab::config::Config::default());
    let stored: Vec<JudgementRecord> = judgements(&ctx.workspace)
        .read_all()
        .await
        .expect("judgements");
    let (plain, calibrated) = (s(&doc["judge_model"]), s(&doc["calibrated_model"]));
    assert!(plain.contains("SmolLM2"), "{doc}");
    assert_eq!(
        calibrated,
        format!("{plain}+calibrated-k3-s2-seed5"),
        "the calibrated judge is told apart by its tag"
    );
    let before = newest(&stored, plain);
    let after = newest(&stored, calibrated);
    assert_eq!((before.len(), after.len()), (6, 6), "{doc}");

    // The plan: the folds partition the six items; each item's examples are two
    // items of other folds.
    let plan = doc["plan"].as_array().expect("plan");
    let fold_of: HashMap<&str, u64> = plan
        .iter()
        .map(|a| (s(&a["item_id"]), a["fold"].as_u64().expect("fold")))
        .collect();
    assert_eq!(fold_of.len(), 6, "every item once: {doc}");
    assert_eq!(
        fold_of.values().copied().collect::<BTreeSet<_>>(),
        BTreeSet::from([0, 1, 2]),
        "three folds, none empty"
    );
    let question_of = |item: &str| -> &str {
        let i: usize = item
            .trim_start_matches("cal/q")
            .trim_end_matches("/s42")
            .parse()
            .expect("item number");
        QA[i].0
    };
    for a in plan {
        let item = s(&a["item_id"]);
        let shots: Vec<&str> = a["shots"]
            .as_array()
            .expect("shots")
            .iter()
            .map(s)
            .collect();
        assert_eq!(shots.len(), 2, "{a}");
        for shot in &shots {
            assert_ne!(*shot, item, "an item among its own examples: {a}");
            assert_ne!(
                fold_of[shot], fold_of[item],
                "an example from its own fold: {a}"
            );
        }
        // The stored prompt: the examples come before the graded part, which
        // starts with the item's own question.
        let prompt = &after[item].prompt;
        let graded = format!("\nQuestion: {}\n\nReference answer:", question_of(item));
        let at = prompt
            .rfind(&graded)
            .unwrap_or_else(|| panic!("no graded part in {prompt}"));
        let start = prompt
            .find("Graded examples:")
            .unwrap_or_else(|| panic!("no examples in {prompt}"));
        let examples = &prompt[start..at];
        assert_eq!(
            examples.matches("\nExample ").count(),
            2,
            "two examples: {examples}"
        );
        for other in QA.iter().map(|q| q.0) {
            let shown = examples.matches(&format!("Question: {other}\n")).count();
            let want = usize::from(shots.iter().any(|sh| question_of(sh) == other));
            assert_eq!(
                shown, want,
                "{item}: `{other}` in its examples:\n{examples}"
            );
        }
        assert!(
            !examples.contains(question_of(item)),
            "{item}'s prompt shows its own item:\n{examples}"
        );
        // Each example's grades are its final labels.
        for shot in &shots {
            let q = question_of(shot);
            let from = examples.find(q).expect("shown");
            let grades_at = from + examples[from..].find("Grades:\n").expect("grades");
            let grades: Vec<&str> = examples[grades_at + 8..].lines().take(4).collect();
            let want: Vec<String> = default_rubric()
                .criteria
                .iter()
                .map(|c| format!("{}: {}", c.key, finals[&(shot.to_string(), c.key.clone())]))
                .collect();
            assert_eq!(grades, want, "{item}: the grades of {shot}");
        }
        assert!(
            !before[item].prompt.contains("Graded examples"),
            "the plain judge's prompt has no examples"
        );
    }

    // Kappas by hand from the stored labels and the final labels.
    let rubric = default_rubric();
    let label = |j: &JudgementRecord, c: &str| -> String {
        let at = j.criteria.iter().position(|x| x == c).expect("criterion");
        j.labels[at].clone()
    };
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), rubric.criteria.len() + 1);
    for (row, keys) in
        rows.iter().zip(
            rubric
                .criteria
                .iter()
                .map(|c| vec![c.key.clone()])
                .chain(std::iter::once(
                    rubric.criteria.iter().map(|c| c.key.clone()).collect(),
                )),
        )
    {
        let name = s(&row["criterion"]);
        let pairs = |by: &HashMap<&str, &JudgementRecord>| -> Vec<(String, String)> {
            finals
                .iter()
                .filter(|((_, c), _)| keys.contains(c))
                .map(|((item, c), f)| (label(by[item.as_str()], c), f.clone()))
                .collect()
        };
        let (b, a) = (pairs(&before), pairs(&after));
        assert_eq!(b.len(), 6 * keys.len());
        let (kb, ka) = (kappa_by_hand(&b), kappa_by_hand(&a));
        eprintln!("{name}: kappa before {kb:?}, after {ka:?}");
        same(
            &row["before"]["kappa"]["value"],
            kb,
            &format!("{name} before"),
        );
        same(
            &row["after"]["kappa"]["value"],
            ka,
            &format!("{name} after"),
        );
        assert_eq!(row["before"]["units"], b.len(), "{name}");
        let d = &row["difference"];
        let want = kb.zip(ka).map(|(b, a)| a - b);
        match want {
            Some(w) => {
                let v = d["value"].as_f64().expect("difference");
                assert!((v - w).abs() < 1e-9, "{name}: difference {v}, by hand {w}");
                let (lo, hi) = (d["lo"].as_f64().expect("lo"), d["hi"].as_f64().expect("hi"));
                assert!(lo <= v && v <= hi, "{name}: CI [{lo}, {hi}] misses {v}");
            }
            None => assert!(d["value"].is_null(), "{name}: {d}"),
        }
        for n in ["noise_before", "noise_after"] {
            assert_eq!(row[n]["items"], 6, "{name} {n}: {row}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_calibrated_judge_never_sees_its_own_item_and_its_kappas_match_a_hand_count() {
    let env = Env::new();
    let finals = study(&env).await;
    // The plain judge has judged two answers already: calibrate judges the other four.
    env.ok(&["judge", "--limit", "2"]);
    let args = [
        "--role",
        "lead",
        "calibrate",
        "--folds",
        "3",
        "--shots",
        "2",
        "--seed",
        "5",
        "--bootstrap",
        "400",
        "--json",
    ];
    let doc = env.json(&args);
    assert_eq!(doc["items"], 6, "{doc}");
    assert_eq!(doc["left_out"], 0, "{doc}");
    assert_eq!(doc["judged"]["before"], 4, "{doc}");
    assert_eq!(doc["judged"]["after"], 6, "{doc}");
    assert_eq!(doc["reviewers"], serde_json::json!(["ann", "bob"]));
    check(&env, &doc, &finals).await;
    // A rerun judges nothing and prints the same.
    let again = env.json(&args);
    assert_eq!(
        again["judged"],
        serde_json::json!({"before": 0, "after": 0})
    );
    assert_eq!(again["rows"], doc["rows"]);
    assert_eq!(again["plan"], doc["plan"]);
    // Pass rates count the plain judge only: calibrating changes no number there.
    let report = env.json(&["--role", "lead", "report", "answers", "--json"]);
    assert_eq!(
        report["cal"]["judge_models"],
        serde_json::json!([doc["judge_model"]]),
        "{report}"
    );
    // Without the lead's role it is refused.
    let out = env
        .cmd()
        .args(["--reviewer", "ann", "calibrate"])
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("study lead"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The same calibration on a real llama-server: the endpoint judge gets the same
/// examples, its judgements carry the endpoint, and the checks hold.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calibration_on_an_endpoint_judges_there_with_the_same_plan() {
    let env = Env::new();
    let server = common::server::Server::start(env.dir.path(), "judge");
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
    let finals = study(&env).await;
    let doc = env.json(&[
        "--role",
        "lead",
        "calibrate",
        "--folds",
        "3",
        "--shots",
        "2",
        "--seed",
        "5",
        "--bootstrap",
        "400",
        "--json",
    ]);
    assert_eq!(doc["judged"]["before"], 6, "{doc}");
    assert_eq!(doc["judged"]["after"], 6, "{doc}");
    check(&env, &doc, &finals).await;
    let ctx = common::context(&env, raglab::config::Config::default());
    let stored: Vec<JudgementRecord> = judgements(&ctx.workspace)
        .read_all()
        .await
        .expect("judgements");
    assert!(
        stored.iter().all(|j| j
            .endpoint
            .as_deref()
            .is_some_and(|e| e.contains(&format!("127.0.0.1:{}", server.port)))),
        "every judgement from the server"
    );
}
