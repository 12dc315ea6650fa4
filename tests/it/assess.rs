//! Relevance assessment. raglab's pools equal trectools' `make_pool` on three real
//! runs of the MedQuAD CDC sample (tests/data/pooling, made by
//! scripts/pool_reference.py), member for member, at two depths.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use raglab::core::assessment::{Run, pool};
use raglab::core::trec::parse_run;
use serde_json::Value;

use crate::common::repo;

fn read_run(path: &Path) -> Run {
    parse_run(&std::fs::read_to_string(path).expect("run")).expect("a run")
}

/// Member sets per query equal trectools' for every pool of the reference (two
/// runs at depths 5 and 10, three runs at depth 10).
#[test]
fn pools_equal_trectools_make_pool() {
    let data = repo().join("tests/data");
    let r: Value = serde_json::from_str(
        &std::fs::read_to_string(data.join("pooling/reference.json")).expect("reference"),
    )
    .expect("JSON");
    let pools = r["pools"].as_array().expect("pools");
    assert_eq!(pools.len(), 3);
    let mut depths = BTreeSet::new();
    for p in pools {
        let runs: Vec<Run> = p["runs"]
            .as_array()
            .expect("runs")
            .iter()
            .map(|n| {
                read_run(&data.join(r["runs"][n.as_str().expect("name")].as_str().expect("file")))
            })
            .collect();
        let depth = usize::try_from(p["depth"].as_u64().expect("depth")).expect("depth");
        depths.insert(depth);
        let got = pool(&runs, depth);
        let want: BTreeMap<String, BTreeSet<String>> = p["queries"]
            .as_object()
            .expect("queries")
            .iter()
            .map(|(q, docs)| {
                let docs = docs.as_array().expect("docs").iter();
                (
                    q.clone(),
                    docs.map(|d| d.as_str().expect("d").to_string()).collect(),
                )
            })
            .collect();
        assert_eq!(got, want, "{} at depth {depth}", p["runs"]);
        let size: usize = got.values().map(BTreeSet::len).sum();
        assert_eq!(Some(size as u64), p["size"].as_u64());
    }
    assert_eq!(depths, BTreeSet::from([5, 10]));
}

