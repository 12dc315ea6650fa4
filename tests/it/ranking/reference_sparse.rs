//! TF-IDF cosine after incremental re-indexing matches scikit-learn's TfidfVectorizer
//! fitted on the surviving chunks only, to 1e-9 (tests/data/reference_sparse, see
//! tests/data/PROVENANCE.md).
//!
//! The chunks of tests/data/reference_sparse/corpus.json go through three states; each is
//! synced into the same on-disk index, reopened as `raglab index` reopens it, so deleted
//! and replaced chunks stay in tantivy's segments as deleted documents. Every query is
//! then scored against the reference: same chunks, same cosines, none extra.

use std::collections::HashMap;
use std::path::PathBuf;

use raglab::core::chunk::Chunk;
use raglab::store::sparse::SparseIndex;
use serde_json::Value;

fn data(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/reference_sparse")
        .join(rel)
}

fn read_json(rel: &str) -> Value {
    serde_json::from_str(&std::fs::read_to_string(data(rel)).expect("read")).expect("json")
}

fn chunk(v: &Value) -> Chunk {
    let s = |k: &str| v[k].as_str().expect("string field").to_string();
    let text = s("text");
    Chunk {
        id: s("id"),
        doc_id: s("id").split('#').next().unwrap_or_default().to_string(),
        title: s("title"),
        topic: None,
        header_path: v["header_path"]
            .as_array()
            .expect("header_path")
            .iter()
            .map(|h| h.as_str().expect("header").to_string())
            .collect(),
        byte_start: 0,
        byte_end: text.len(),
        word_count: text.split_whitespace().count(),
        text,
        ordinal: 0,
        token_count: None,
        token_model: None,
    }
}

#[test]
fn tfidf_after_incremental_index_matches_scikit_learn() {
    let corpus = read_json("corpus.json");
    let reference = read_json("tfidf_reference.json");
    let queries: Vec<&str> = corpus["queries"]
        .as_array()
        .expect("queries")
        .iter()
        .map(|q| q.as_str().expect("query"))
        .collect();
    let versions = corpus["versions"].as_array().expect("versions");
    let states = reference["states"].as_array().expect("states");
    assert_eq!(versions.len(), states.len());
    // (added, removed, unchanged) of each sync, read off corpus.json: state 2 drops two
    // chunks, changes two and adds one; state 3 drops one, changes one header path and
    // adds one.
    let expected_sync = [(11, 0, 0), (3, 4, 7), (2, 2, 8)];

    let dir = tempfile::tempdir().expect("temp dir");
    let mut checked = 0;
    let mut wrong = Vec::new();
    for (s, (version, state)) in versions.iter().zip(states).enumerate() {
        let chunks: Vec<Chunk> = version
            .as_array()
            .expect("chunks")
            .iter()
            .map(chunk)
            .collect();
        let mut index = SparseIndex::open(dir.path()).expect("open");
        let sync = index.sync(&chunks).expect("sync");
        assert_eq!(
            (sync.added, sync.removed, sync.unchanged),
            expected_sync[s],
            "state {s}"
        );
        assert_eq!(index.num_docs(), state["docs"].as_u64().expect("docs"));
        let per_query = state["queries"].as_array().expect("queries");
        assert_eq!(per_query.len(), queries.len());
        for (query, want) in queries.iter().zip(per_query) {
            assert_eq!(want["query"].as_str(), Some(*query));
            let want: HashMap<&str, f64> = want["results"]
                .as_array()
                .expect("results")
                .iter()
                .map(|r| {
                    (
                        r["id"].as_str().expect("id"),
                        r["score"].as_f64().expect("score"),
                    )
                })
                .collect();
            let got = index.tfidf(query, 1000).expect("tfidf");
            let got_ids: Vec<&str> = got.iter().map(|h| h.id.as_str()).collect();
            if got.len() != want.len() {
                wrong.push(format!(
                    "state {s}, {query:?}: ours {got_ids:?}, scikit-learn {want:?}"
                ));
            }
            for h in &got {
                match want.get(h.id.as_str()) {
                    Some(w) if (h.score - w).abs() < 1e-9 => {}
                    Some(w) => wrong.push(format!(
                        "state {s}, {query:?}, {}: ours {}, scikit-learn {w}",
                        h.id, h.score
                    )),
                    None => wrong.push(format!(
                        "state {s}, {query:?}: {} is not in scikit-learn's list",
                        h.id
                    )),
                }
                checked += 1;
            }
            // Best first; equal scores by chunk id descending (trec_eval's order).
            assert!(
                got.windows(2)
                    .all(|w| w[0].score > w[1].score
                        || (w[0].score == w[1].score && w[0].id > w[1].id)),
                "state {s}, {query:?}: order {got_ids:?}"
            );
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {checked} scores differ from scikit-learn's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
    assert!(checked > 100, "{checked} scores compared");
}
