//! Agreement statistics reproduce scikit-learn on real two-rater data
//! (tests/data/pubmedqa_pqal: REFERENCE.md) to 1e-9.

use std::path::PathBuf;

use raglab::core::agreement::{Confusion, cohen_kappa, macro_f1, raw_agreement};

fn raters() -> Vec<serde_json::Value> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pubmedqa_pqal/raters.jsonl");
    std::fs::read_to_string(p)
        .expect("raters.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

fn pairs(rows: &[&serde_json::Value], a: &str, b: &str) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| {
            (
                r[a].as_str().expect("label").to_string(),
                r[b].as_str().expect("label").to_string(),
            )
        })
        .collect()
}

const A: &str = "reasoning_required_pred";
const B: &str = "reasoning_free_pred";
const F: &str = "final_decision";

#[test]
fn all_items_match_scikit_learn() {
    let rows = raters();
    let all: Vec<&serde_json::Value> = rows.iter().collect();
    assert_eq!(all.len(), 1000);
    let close = |x: Option<f64>, want: f64| (x.expect("defined") - want).abs() < 1e-9;

    let ab = Confusion::new(&pairs(&all, A, B));
    assert!(close(cohen_kappa(&ab), 0.45673898034085536));
    assert!(close(raw_agreement(&ab), 0.701));
    // REFERENCE.md: confusion A (rows) x B (columns), order yes, no, maybe.
    let ordered = Confusion::with_labels(
        &pairs(&all, A, B),
        vec!["yes".into(), "no".into(), "maybe".into()],
    );
    assert_eq!(
        ordered.counts,
        vec![vec![454, 98, 62], vec![53, 224, 25], vec![43, 18, 23]]
    );

    let af = Confusion::new(&pairs(&all, A, F));
    assert!(close(cohen_kappa(&af), 0.6016414554820684));
    assert!(close(raw_agreement(&af), 0.781));
    assert!(close(macro_f1(&af), 0.7092223170235717));

    let bf = Confusion::new(&pairs(&all, B, F));
    assert!(close(cohen_kappa(&bf), 0.8524711089254979));
    assert!(close(raw_agreement(&bf), 0.916));
    assert!(close(macro_f1(&bf), 0.8660528968271929));
}

#[test]
fn test_split_matches_the_spec() {
    let rows = raters();
    let test: Vec<&serde_json::Value> = rows.iter().filter(|r| r["split"] == "test").collect();
    assert_eq!(test.len(), 500);
    let c = Confusion::new(&pairs(&test, A, B));
    assert!((cohen_kappa(&c).expect("defined") - 0.43319).abs() < 5e-6);
    assert!((raw_agreement(&c).expect("defined") - 0.690).abs() < 1e-12);
}
