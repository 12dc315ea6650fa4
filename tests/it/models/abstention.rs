//! Abstention through the binary: the threshold sweep and `generate --abstain-below`
//! agree with the best dense cosine that `raglab search` reports for each question.

use crate::common;

use common::Env;

const ANSWERABLE: [&str; 3] = [
    "How is rabies prevented?",
    "How often is the flu vaccine given?",
    "Should my cat get a rabies shot?",
];
const UNANSWERABLE: [&str; 2] = [
    "What is the melting point of tungsten?",
    "Who won the 1966 football world cup final?",
];

fn setup() -> Env {
    let env = Env::new();
    let dir = env.dir.path().join("docs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("rabies.md"),
        "# Rabies\n\n## Prevention\n\nVaccinate dogs and cats against rabies. Avoid wild animals such as bats.\n",
    )
    .expect("w");
    std::fs::write(
        dir.join("flu.md"),
        "# Flu\n\n## Prevention\n\nGet a flu vaccine every year. Wash your hands often.\n",
    )
    .expect("w");
    env.ok(&["ingest", dir.to_str().expect("utf8"), "--index"]);
    env
}

fn write_questions(env: &Env, name: &str, texts: &[&str]) -> std::path::PathBuf {
    let path = env.dir.path().join(name);
    let lines: Vec<String> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| serde_json::json!({"id": format!("{name}{i}"), "text": t}).to_string())
        .collect();
    std::fs::write(&path, lines.join("\n")).expect("write");
    path
}

/// The best dense cosine of a question, as `raglab search` reports it.
fn best_cosine(env: &Env, q: &str) -> f64 {
    let out = env.json(&["search", q, "--method", "dense", "-k", "1", "--json"]);
    out["results"][0]["dense_score"]
        .as_f64()
        .expect("dense score")
}

#[test]
fn sweep_rates_match_the_search_scores() {
    let env = setup();
    let a = write_questions(&env, "a", &ANSWERABLE);
    let u = write_questions(&env, "u", &UNANSWERABLE);
    let report = env.json(&[
        "eval",
        "abstention",
        "--answerable",
        a.to_str().expect("utf8"),
        "--unanswerable",
        u.to_str().expect("utf8"),
        "--from",
        "0.0",
        "--to",
        "1.0",
        "--step",
        "0.1",
        "--json",
    ]);
    let ca: Vec<f64> = ANSWERABLE.iter().map(|q| best_cosine(&env, q)).collect();
    let cu: Vec<f64> = UNANSWERABLE.iter().map(|q| best_cosine(&env, q)).collect();
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 11);
    let below = |v: &[f64], t: f64| v.iter().filter(|&&c| c < t).count() as f64 / v.len() as f64;
    for row in rows {
        let t = row["threshold"].as_f64().expect("t");
        let (ra, ru) = (below(&ca, t), below(&cu, t));
        assert!(
            (row["answerable_abstain"].as_f64().expect("a") - ra).abs() < 1e-12,
            "t={t}"
        );
        assert!(
            (row["unanswerable_abstain"].as_f64().expect("u") - ru).abs() < 1e-12,
            "t={t}"
        );
    }
    // On this corpus the off-topic questions score lower than the on-topic ones, so
    // some threshold separates them completely.
    let worst_answerable = ca.iter().copied().fold(f64::INFINITY, f64::min);
    let best_unanswerable = cu.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(best_unanswerable < worst_answerable, "{cu:?} vs {ca:?}");
}

#[test]
fn generate_abstains_exactly_below_the_threshold() {
    let env = setup();
    let all: Vec<&str> = ANSWERABLE
        .iter()
        .chain(UNANSWERABLE.iter())
        .copied()
        .collect();
    let q = write_questions(&env, "q", &all);
    let cos: Vec<f64> = all.iter().map(|t| best_cosine(&env, t)).collect();
    // A threshold strictly between the lowest and highest scores: some abstain, some not.
    let mut sorted = cos.clone();
    sorted.sort_by(f64::total_cmp);
    let t = (sorted[1] + sorted[2]) / 2.0;
    env.ok(&[
        "generate",
        "--questions",
        q.to_str().expect("utf8"),
        "--run",
        "abst",
        "--k",
        "2",
        "--max-tokens",
        "6",
        "--abstain-below",
        &t.to_string(),
    ]);
    let answers =
        env.json(&["report", "answers", "--run", "abst", "--list", "--json"])["items"].take();
    let answers = answers.as_array().expect("answers");
    assert_eq!(answers.len(), all.len());
    for a in answers {
        let i: usize = a["question_id"].as_str().expect("id")[1..]
            .parse()
            .expect("index");
        let best = a["best_cosine"].as_f64().expect("best cosine stored");
        assert!(
            (best - cos[i]).abs() < 1e-5,
            "stored {best} vs search {}",
            cos[i]
        );
        let abstained = a["abstained"].as_bool().expect("abstained stored");
        assert_eq!(abstained, cos[i] < t, "question {i}: cos {} t {t}", cos[i]);
        if abstained {
            assert!(
                a["answer"]
                    .as_str()
                    .expect("answer")
                    .contains("could not find relevant guidance")
            );
            assert_eq!(a["output_tokens"], 0);
            assert_eq!(a["prompt"], "");
            assert!(a["chunk_ids"].as_array().expect("ids").is_empty());
        } else {
            assert!(a["output_tokens"].as_u64().expect("tokens") > 0);
            assert!(!a["chunk_ids"].as_array().expect("ids").is_empty());
        }
    }
    let n_abstained = answers.iter().filter(|a| a["abstained"] == true).count();
    assert_eq!(n_abstained, 2, "exactly the two lowest scores fall below t");
}
