//! The grounded metrics' arithmetic against ragas 0.4.3's own scoring code, on fixed
//! verdicts (tests/data/grounded/reference.json, written by
//! scripts/grounded_reference.py): faithfulness, context precision and recall, the
//! statement F1 and answer correctness with its weights, the undefined cases included.

use raglab::core::grounded::{
    CorrectnessWeights, answer_correctness, context_precision, context_recall, cosine,
    faithfulness, statement_f1,
};
use serde_json::Value;

fn reference() -> Value {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/grounded/reference.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("reference")).expect("json")
}

/// ragas' null (NaN) is raglab's None; numbers agree to 1e-9 (ragas' context
/// precision divides by the useful count plus 1e-10).
fn same(ours: Option<f64>, theirs: &Value, what: &str) {
    match (ours, theirs.as_f64()) {
        (Some(a), Some(b)) => assert!((a - b).abs() < 1e-9, "{what}: raglab {a}, ragas {b}"),
        (None, None) => {}
        _ => panic!("{what}: raglab {ours:?}, ragas {theirs}"),
    }
}

#[test]
fn verdict_metrics_equal_ragas() {
    let r = reference();
    let cases = r["verdict_cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    for c in cases {
        let v: Vec<bool> = c["verdicts"]
            .as_array()
            .expect("verdicts")
            .iter()
            .map(|x| x.as_i64() == Some(1))
            .collect();
        same(
            faithfulness(&v),
            &c["faithfulness"],
            &format!("faithfulness {v:?}"),
        );
        same(
            context_recall(&v),
            &c["context_recall"],
            &format!("context recall {v:?}"),
        );
        if v.is_empty() {
            // A deliberate difference: ragas scores a context list with no context 0;
            // raglab leaves it undefined (nothing was retrieved to be precise about),
            // so a run without retrieval does not pull a mean down. (With no context
            // raglab asks no faithfulness or context-recall question either, where
            // ragas would judge every statement unsupported: undefined there too.)
            assert_eq!(c["context_precision"].as_f64(), Some(0.0));
            assert_eq!(context_precision(&v), None);
        } else {
            same(
                context_precision(&v),
                &c["context_precision"],
                &format!("context precision {v:?}"),
            );
        }
    }
}

#[test]
fn answer_correctness_equals_ragas_with_its_weights() {
    let r = reference();
    let cases = r["correctness_cases"].as_array().expect("cases");
    assert!(cases.len() >= 8);
    let vec32 = |v: &Value| -> Vec<f32> {
        v.as_array()
            .expect("vector")
            .iter()
            .map(|x| x.as_f64().expect("number") as f32)
            .collect()
    };
    for c in cases {
        let n = |k: &str| c[k].as_u64().expect(k) as usize;
        let w = c["weights"].as_array().expect("weights");
        let weights: CorrectnessWeights = format!("{},{}", w[0], w[1]).parse().expect("weights");
        let f1 = statement_f1(
            n("answer_statements"),
            n("reference_statements"),
            n("tp"),
            n("fp"),
            n("fn"),
        );
        same(Some(f1), &c["f1"], &format!("F1 {c}"));
        let sim = cosine(&vec32(&c["answer_vector"]), &vec32(&c["reference_vector"]));
        if weights.similarity > 0.0 {
            // f32 vectors, as raglab's embeddings are: agreement to 1e-6.
            let (a, b) = (sim.expect("cosine"), c["similarity"].as_f64().expect("sim"));
            assert!((a - b).abs() < 1e-6, "similarity {c}: {a} vs {b}");
        }
        let score = answer_correctness(f1, sim, weights).expect("a similarity where it has weight");
        let want = c["score"].as_f64().expect("score");
        assert!(
            (score - want).abs() < 1e-6,
            "answer correctness {c}: raglab {score}, ragas {want}"
        );
    }
}
