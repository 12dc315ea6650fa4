//! The metric code reproduces trec_eval's per-query values (pytrec_eval-terrier 0.5.11)
//! for a real BM25 run on real qrels, to 1e-9 (tests/data, see its PROVENANCE.md).

use std::collections::HashMap;
use std::path::PathBuf;

use raglab::core::metrics::{
    Qrel, average_precision, ndcg_at, order_run, precision_at, recall_at, reciprocal_rank,
};

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(rel)
}

#[test]
fn per_query_values_match_trec_eval() {
    let qrels_text = std::fs::read_to_string(data("medquad_cdc_sample/qrels.tsv")).expect("qrels");
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    for line in qrels_text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        qrels
            .entry(f[0].into())
            .or_default()
            .insert(f[2].into(), f[3].parse().expect("rel"));
    }
    let run_text =
        std::fs::read_to_string(data("reference_runs/medquad_cdc_sample.run.trec")).expect("run");
    let mut run: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    for line in run_text.lines().filter(|l| !l.trim().is_empty()) {
        let f: Vec<&str> = line.split_whitespace().collect();
        run.entry(f[0].into())
            .or_default()
            .push((f[2].into(), f[4].parse().expect("score")));
    }
    let reference: HashMap<String, HashMap<String, f64>> = serde_json::from_str(
        &std::fs::read_to_string(data("reference_runs/medquad_cdc_sample.per_query.json"))
            .expect("ref"),
    )
    .expect("json");
    assert_eq!(reference.len(), 259);
    let mut checked = 0;
    let mut mean_ndcg = 0.0;
    for (qid, expected) in &reference {
        let mut hits = run[qid].clone();
        order_run(&mut hits);
        let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
        let q = &qrels[qid];
        let ours = [
            ("P_1", precision_at(&ranked, q, 1)),
            ("recall_1", recall_at(&ranked, q, 1)),
            ("recall_5", recall_at(&ranked, q, 5)),
            ("recall_10", recall_at(&ranked, q, 10)),
            ("recall_100", recall_at(&ranked, q, 100)),
            ("recip_rank", reciprocal_rank(&ranked, q)),
            ("ndcg_cut_10", ndcg_at(&ranked, q, 10)),
            ("map", average_precision(&ranked, q)),
        ];
        for (name, value) in ours {
            let want = expected[name];
            assert!(
                (value - want).abs() < 1e-9,
                "{qid} {name}: ours {value}, trec_eval {want}"
            );
            checked += 1;
        }
        mean_ndcg += ndcg_at(&ranked, q, 10);
    }
    assert_eq!(checked, 259 * 8);
    assert!((mean_ndcg / 259.0 - 0.69181).abs() < 5e-6);
}
