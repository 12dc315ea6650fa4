//! The metric code reproduces trec_eval's per-query values (pytrec_eval-terrier 0.5.11)
//! for a real BM25 run on real qrels, and trec_eval's per-query values and means for a
//! small hand-made run full of tied scores with a judged query that retrieved nothing,
//! to 1e-9 (tests/data, see its PROVENANCE.md).

use std::collections::HashMap;
use std::path::PathBuf;

use raglab::core::fusion::Scored;
use raglab::core::metrics::{
    Qrel, average_precision, ndcg_at, order_run, precision_at, query_metrics, recall_at,
    reciprocal_rank,
};
use raglab::core::retrieval::{
    Method, QueryLists, RunConfig, empty_results, evaluate, mean, mean_at_k,
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

fn read_qrels(rel: &str) -> HashMap<String, Qrel> {
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    for line in std::fs::read_to_string(data(rel))
        .expect("qrels")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        qrels
            .entry(f[0].into())
            .or_default()
            .insert(f[2].into(), f[3].parse().expect("rel"));
    }
    qrels
}

fn read_run(rel: &str) -> HashMap<String, Vec<(String, f64)>> {
    let mut run: HashMap<String, Vec<(String, f64)>> = HashMap::new();
    for line in std::fs::read_to_string(data(rel))
        .expect("run")
        .lines()
        .filter(|l| !l.trim().is_empty())
    {
        let f: Vec<&str> = line.split_whitespace().collect();
        run.entry(f[0].into())
            .or_default()
            .push((f[2].into(), f[4].parse().expect("score")));
    }
    run
}

/// The rank lists raglab's evaluation sees for the tied run: every judged or retrieved
/// query, as the BM25 list, ordered with trec_eval's tie-breaking. q5's retrieval
/// returned nothing: its list is empty (and the run file has no line for it).
fn tied_lists() -> (Vec<(String, QueryLists)>, HashMap<String, Qrel>) {
    let qrels = read_qrels("reference_runs/ties.qrels.tsv");
    let run = read_run("reference_runs/ties.run.trec");
    let mut qids: Vec<&String> = qrels.keys().chain(run.keys()).collect();
    qids.sort();
    qids.dedup();
    let lists = qids
        .into_iter()
        .map(|qid| {
            let mut hits = run.get(qid).cloned().unwrap_or_default();
            order_run(&mut hits);
            let bm25 = hits
                .into_iter()
                .map(|(id, score)| Scored { id, score })
                .collect();
            (qid.clone(), QueryLists::new(bm25, vec![], vec![]))
        })
        .collect();
    (lists, qrels)
}

fn tied_reference() -> serde_json::Value {
    serde_json::from_str(
        &std::fs::read_to_string(data("reference_runs/ties.per_query.json")).expect("ref"),
    )
    .expect("json")
}

fn close(ours: f64, theirs: &serde_json::Value, what: &str) {
    let want = theirs
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: no value"));
    assert!(
        (ours - want).abs() < 1e-9,
        "{what}: ours {ours}, trec_eval {want}"
    );
}

/// Every metric raglab computes, per query, on a run full of tied scores (ties broken by
/// document id descending, as trec_eval does), against trec_eval's values.
#[test]
fn tied_run_matches_trec_eval_per_query() {
    let (lists, qrels) = tied_lists();
    let reference = tied_reference();
    let per_query = reference["per_query"].as_object().expect("per_query");
    for (qid, want) in per_query {
        let (_, l) = lists.iter().find(|(q, _)| q == qid).expect("listed");
        let ranked = l.ranking(Method::Bm25, 0.5);
        let q = &qrels[qid];
        let m = query_metrics(&ranked, q);
        let ours = [
            ("P_1", precision_at(&ranked, q, 1)),
            ("P_1", m.p1),
            ("P_5", precision_at(&ranked, q, 5)),
            ("P_10", precision_at(&ranked, q, 10)),
            ("recall_1", recall_at(&ranked, q, 1)),
            ("recall_5", recall_at(&ranked, q, 5)),
            ("recall_5", m.recall5),
            ("recall_10", recall_at(&ranked, q, 10)),
            ("recall_10", m.recall10),
            ("recall_100", recall_at(&ranked, q, 100)),
            ("recip_rank", reciprocal_rank(&ranked, q)),
            ("recip_rank", m.rr),
            ("ndcg_cut_5", ndcg_at(&ranked, q, 5)),
            ("ndcg_cut_10", ndcg_at(&ranked, q, 10)),
            ("ndcg_cut_10", m.ndcg10),
            ("map", average_precision(&ranked, q)),
            ("map", m.ap),
        ];
        for (name, value) in ours {
            close(value, &want[name], &format!("{qid} {name}"));
        }
    }
}

/// Means over the tied run: q5, judged but with an empty result list, is absent from
/// the run and dropped from the means (trec_eval without -c), as is q6 (not judged).
#[test]
fn empty_result_query_is_dropped_from_means_like_trec_eval() {
    let (lists, qrels) = tied_lists();
    let reference = tied_reference();
    assert_eq!(reference["absent_from_run"], serde_json::json!(["q5"]));
    let ks = [1, 5, 10, 100];
    let outcomes = evaluate(&lists, &qrels, RunConfig::single(Method::Bm25), &ks);
    let mut evaluated: Vec<&str> = outcomes.iter().map(|o| o.qid.as_str()).collect();
    evaluated.sort_unstable();
    let mut want: Vec<&str> = reference["per_query"]
        .as_object()
        .expect("per_query")
        .keys()
        .map(String::as_str)
        .collect();
    want.sort_unstable();
    assert_eq!(evaluated, want, "the queries trec_eval evaluates");
    assert_eq!(
        empty_results(&lists, &qrels, &outcomes),
        vec!["q5"],
        "the judged query dropped for its empty result list"
    );
    let m = mean(&outcomes);
    assert_eq!(
        m.queries as u64,
        reference["num_q"].as_u64().expect("num_q")
    );
    let want = &reference["mean"];
    close(m.p1, &want["P_1"], "mean P_1");
    close(m.recall5, &want["recall_5"], "mean recall_5");
    close(m.recall10, &want["recall_10"], "mean recall_10");
    close(m.mrr, &want["recip_rank"], "mean recip_rank");
    close(m.ndcg10, &want["ndcg_cut_10"], "mean ndcg_cut_10");
    close(m.map, &want["map"], "mean map");
    // nDCG@k and recall@k follow the cutoffs asked (`eval retrieval --k`), per query
    // and in the mean, against trec_eval's ndcg_cut_5/10 and recall_1/5/10/100.
    for o in &outcomes {
        let per = &reference["per_query"][&o.qid];
        for a in &o.at_k {
            close(
                a.recall,
                &per[format!("recall_{}", a.k)],
                "per-query recall@k",
            );
            if a.k == 5 || a.k == 10 {
                close(
                    a.ndcg,
                    &per[format!("ndcg_cut_{}", a.k)],
                    "per-query nDCG@k",
                );
            }
        }
    }
    for a in mean_at_k(&outcomes, &ks) {
        close(a.recall, &want[format!("recall_{}", a.k)], "mean recall@k");
        if a.k == 5 || a.k == 10 {
            close(a.ndcg, &want[format!("ndcg_cut_{}", a.k)], "mean nDCG@k");
        }
    }
}
