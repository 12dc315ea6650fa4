//! Bradley-Terry scores of `core::preference` against the `choix` package's
//! maximum-likelihood fit (scripts/preference_reference.py: Newton-CG on the
//! log-likelihood, another algorithm than raglab's MM iteration) on the synthetic
//! comparisons of tests/data/preference (5 runs, 60 items, ties), to 1e-8.

use std::path::PathBuf;

use raglab::core::preference::{PairComparison, bradley_terry};

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/preference")
        .join(file)
}

#[test]
fn bradley_terry_matches_choix() {
    let text = std::fs::read_to_string(data("comparisons.csv")).expect("comparisons");
    let comparisons: Vec<PairComparison> = text
        .lines()
        .skip(1)
        .map(|l| {
            let v: Vec<usize> = l.split(',').map(|x| x.parse().expect("number")).collect();
            PairComparison {
                item: v[0],
                winner: v[1],
                loser: v[2],
                tie: v[3] == 1,
            }
        })
        .collect();
    assert_eq!(comparisons.len(), 180);
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(data("reference.json")).expect("reference"))
            .expect("json");
    let want: Vec<f64> = reference["scores"]
        .as_array()
        .expect("scores")
        .iter()
        .map(|v| v.as_f64().expect("score"))
        .collect();
    let got = bradley_terry(want.len(), &comparisons).expect("an estimate exists");
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 1e-8, "{got:?} vs choix {want:?}");
    }
}
