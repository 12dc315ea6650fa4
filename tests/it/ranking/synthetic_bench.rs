//! `raglab bench retrieval --synthetic N` through the binary, on a small N: the
//! synthetic workspace is built once under the data folder and reused, every stage is
//! reported, the int8 scan returns the plain f32 scan's top 100 on the queries it is
//! checked against, and the ANN recall is a fraction of the exact top 10 (all of it
//! when the in-memory IVF probes every list).

use crate::common;

use common::Env;

#[test]
fn synthetic_bench_builds_once_and_reports_every_stage() {
    let env = Env::new();
    let args = [
        "bench",
        "retrieval",
        "--synthetic",
        "3000",
        "--limit",
        "12",
        "--nprobes",
        "4,54",
        "--json",
    ];
    let first = env.json(&args);
    assert_eq!(first["synthetic"], true);
    assert_eq!(first["chunks"], 3000);
    assert_eq!(first["queries"], 12);
    let marker = env
        .dir
        .path()
        .join("data/bench/synthetic-3000/synthetic.json");
    assert!(
        marker.exists(),
        "the workspace is kept at {}",
        marker.display()
    );
    let stages: Vec<&str> = first["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .map(|s| s["stage"].as_str().expect("name"))
        .collect();
    assert_eq!(
        stages,
        [
            "dense exact",
            "bm25",
            "tf-idf",
            "fusion",
            "alpha sweep (10)"
        ]
    );
    let scan = &first["dense_scan"];
    assert_eq!(scan["identical_top_k"], true);
    assert_eq!(scan["scalar_checked"], 12);
    // 3000 rows of 384 dims in 375 panels of 8 rows: the int8 copy's bytes.
    assert_eq!(scan["scanned_bytes"], 3000 * 384);
    let ann = first["ann"].as_array().expect("ann rows");
    assert_eq!(ann.len(), 2);
    for row in ann {
        let r = row["recall_at_k"].as_f64().expect("recall");
        assert!((0.0..=1.0).contains(&r), "recall {r}");
    }
    // Probing all 54 partitions (sqrt(3000)) with rescoring finds the exact top 10
    // but for PQ's approximate candidate list: at least 0.9 of it.
    let all = ann[1]["recall_at_k"].as_f64().expect("recall");
    assert!(all >= 0.9, "recall with every partition probed: {all}");
    // The in-memory IVF of `--ann` has round(sqrt(3000) / 2) = 27 lists: probing 54
    // probes them all, so its top 10 is the exact top 10 and every row is scanned.
    let ivf = &first["ivf"];
    assert_eq!(ivf["lists"], 27, "{ivf}");
    let rows = ivf["rows"].as_array().expect("ivf rows");
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1]["nprobes"], 54);
    assert_eq!(rows[1]["recall_at_k"].as_f64(), Some(1.0), "{ivf}");
    assert_eq!(rows[1]["rows_scanned_p50"].as_f64(), Some(3000.0), "{ivf}");
    let some = rows[0]["recall_at_k"].as_f64().expect("recall");
    assert!((0.0..=1.0).contains(&some), "recall {some}");

    // The second run reuses the workspace: the build figures are the stored ones.
    let second = env.json(&args);
    assert_eq!(second["build"], first["build"]);
}
