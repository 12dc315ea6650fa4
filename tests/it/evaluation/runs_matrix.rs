//! `raglab report runs` over real retrieval configurations of the sample (BM25 and
//! TF-IDF on the shipped guidance and questions): each row's means and clustered
//! intervals are the ones `raglab compare` computes over the same per-query scores, the
//! configuration the other beats on quality at the same cost is marked dominated, and
//! the pinned baseline's paired difference equals compare's.

use serde_json::Value;

use crate::common::Env;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn row<'a>(m: &'a Value, label: &str) -> &'a Value {
    m["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["label"] == label)
        .unwrap_or_else(|| panic!("no row {label}: {m}"))
}

#[test]
fn the_matrix_agrees_with_compare_and_marks_the_dominated_configuration() {
    let env = Env::new();
    // An empty workspace says what to run.
    let out = env.cmd().args(["report", "runs"]).output().expect("spawn");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("raglab eval retrieval"));
    crate::common::sample_sparse_evaluated(&env);
    let m = env.json(&["report", "runs", "--baseline", "bm25", "--json"]);
    assert_eq!(m["quality"], "nDCG@10");
    assert_eq!(m["baseline"], "bm25");
    let cmp = env.json(&[
        "compare",
        "--baseline",
        "bm25",
        "--metrics",
        "nDCG@10",
        "--json",
    ]);
    let crow = &cmp["rows"][0];
    assert_eq!(crow["candidate"], "tfidf");
    let (bm25, tfidf) = (row(&m, "bm25"), row(&m, "tfidf"));
    for (r, mean) in [
        (bm25, &crow["baseline_mean"]),
        (tfidf, &crow["candidate_mean"]),
    ] {
        assert_eq!(r["kind"], "retrieval");
        let q = &r["quality"]["nDCG@10"];
        assert!((f(&q["mean"]) - f(mean)).abs() < 1e-12, "{q} vs {mean}");
        assert!(f(&q["ci"][0]) < f(&q["mean"]) && f(&q["mean"]) < f(&q["ci"][1]));
        // The sample's questions come from 59 guidance documents.
        assert!(q["clusters"].as_u64().expect("clusters") > 20);
        assert_eq!(r["questions"], cmp["queries"]);
    }
    // The baseline's paired difference is compare's, with the same clustered interval.
    let d = &tfidf["against_baseline"];
    assert_eq!(d["test"], "randomisation");
    assert!((f(&d["difference"]) - f(&crow["difference"])).abs() < 1e-12);
    for key in ["se_naive", "se_clustered", "mde_80"] {
        assert!(
            (f(&d[key]) - f(&crow["clustered"][key])).abs() < 1e-12,
            "{key}: {} vs {}",
            d[key],
            crow["clustered"][key]
        );
    }
    assert!((f(&d["p"]) - f(&crow["randomisation_p"])).abs() < 1e-12);
    assert_eq!(bm25["against_baseline"], Value::Null);
    // One ranking pass served both: the same cost, so the better nDCG@10 dominates.
    let (qb, qt) = (
        f(&bm25["quality"]["nDCG@10"]["mean"]),
        f(&tfidf["quality"]["nDCG@10"]["mean"]),
    );
    assert_ne!(qb, qt);
    let (better, worse) = if qb > qt {
        ("bm25", "tfidf")
    } else {
        ("tfidf", "bm25")
    };
    assert_eq!(row(&m, worse)["dominated_by"], better);
    assert_eq!(row(&m, better)["dominated_by"], Value::Null);
    // Sorted by the quality column, the better comes first; a column that is not there
    // is refused, naming the columns.
    let sorted = env.json(&["report", "runs", "--sort", "ndcg@10", "--json"]);
    assert_eq!(sorted["rows"][0]["label"], better);
    let out = env
        .cmd()
        .args(["report", "runs", "--quality", "nope"])
        .output()
        .expect("spawn");
    assert!(String::from_utf8_lossy(&out.stderr).contains("no quality column `nope`"));
    // The text view names both rows and the mark.
    let text = String::from_utf8_lossy(&env.ok(&["report", "runs", "--baseline", "bm25"]).stdout)
        .into_owned();
    assert!(text.contains(&format!("dominated by {better}")), "{text}");
}
