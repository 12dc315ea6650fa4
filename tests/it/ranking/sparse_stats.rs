//! The chunk ids and TF-IDF statistics a sparse index keeps in files beside itself
//! (`raglab-doc-ids.bin`, `raglab-tfidf.bin`), so that the next process's first query
//! does not read every stored document and walk every posting again: a process that
//! reads them ranks exactly as the one that built them (ids and score bits, top k and
//! places), files of another index state (a later sync through another handle) or
//! damaged files are rebuilt rather than used, and the files are what a new process
//! reads (an id renamed in the file shows in its results).

use std::os::unix::fs::MetadataExt;

use proptest::prelude::*;
use raglab::store::sparse::SparseIndex;

use crate::ranking::tfidf_pruning::{case, chunks};

const FILES: [&str; 2] = ["raglab-doc-ids.bin", "raglab-tfidf.bin"];

/// Each query's BM25 top 10 and places of two chunks, and TF-IDF's exhaustive top 10
/// with the same places and pruned top 10 (`{:?}` of an f64 names its bits).
fn rankings(sparse: &SparseIndex, queries: &[String]) -> Vec<String> {
    let wanted = ["c000", "c001"];
    queries
        .iter()
        .map(|q| {
            let bm25 = sparse.bm25(q, 10).expect("bm25");
            let bm25_places = sparse.bm25_ranks(q, &wanted).expect("bm25 places");
            let (tfidf, places) = sparse.tfidf_ranked(q, 10, &wanted).expect("tf-idf");
            let pruned = sparse.tfidf(q, 10).expect("pruned tf-idf");
            format!("{bm25:?} {bm25_places:?} {tfidf:?} {places:?} {pruned:?}")
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn kept_statistics_rank_as_built_ones(case in case()) {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        let mut first = SparseIndex::open(dir).expect("open");
        first.sync(&chunks(&case.texts)).expect("first sync");
        let built = rankings(&first, &case.queries);
        for f in FILES {
            prop_assert!(dir.join(f).is_file(), "{} not kept", f);
        }
        // A rebuild would rename a new file over each: the same inode means read.
        let inodes = |dir: &std::path::Path| {
            FILES.map(|f| std::fs::metadata(dir.join(f)).expect("kept").ino())
        };
        let before = inodes(dir);
        let reopened = SparseIndex::open(dir).expect("reopen");
        prop_assert_eq!(&rankings(&reopened, &case.queries), &built);
        prop_assert_eq!(inodes(dir), before, "the kept files were rebuilt, not read");

        // Another handle changes the index (deleted documents, a new segment); the
        // kept files are of the old state.
        SparseIndex::open(dir)
            .expect("open")
            .sync(&case.second_chunks())
            .expect("second sync");
        let after = rankings(&SparseIndex::open(dir).expect("open"), &case.queries);
        for f in FILES {
            std::fs::remove_file(dir.join(f)).expect("remove");
        }
        let rebuilt = rankings(&SparseIndex::open(dir).expect("open"), &case.queries);
        prop_assert_eq!(&after, &rebuilt, "files of the old state were used");

        // Damaged files (cut in half) are rebuilt, not read.
        for f in FILES {
            let bytes = std::fs::read(dir.join(f)).expect("read");
            std::fs::write(dir.join(f), &bytes[..bytes.len() / 2]).expect("cut");
        }
        let repaired = rankings(&SparseIndex::open(dir).expect("open"), &case.queries);
        prop_assert_eq!(&repaired, &rebuilt, "a damaged file was read");
    }
}

/// `prepare` keeps both files, and a new process ranks from them: an id renamed in
/// the kept file (same length, so the file stays whole) is the id it returns.
#[test]
fn a_new_process_reads_the_kept_ids() {
    let tmp = tempfile::tempdir().expect("tmp");
    let dir = tmp.path();
    let texts = ["alpha beta", "beta gamma", "gamma delta"].map(String::from);
    let mut sparse = SparseIndex::open(dir).expect("open");
    sparse.sync(&chunks(&texts)).expect("sync");
    sparse.prepare().expect("prepare");
    assert_eq!(sparse.bm25("alpha", 1).expect("bm25")[0].id, "c000");
    // The ids' text ends the file (the state key before it is hex and could hold
    // the same four characters).
    let path = dir.join(FILES[0]);
    let bytes = std::fs::read(&path).expect("read ids");
    let at = bytes
        .windows(4)
        .rposition(|w| w == b"c000")
        .expect("the id is in the file");
    let mut renamed = bytes.clone();
    renamed[at] = b'z';
    std::fs::write(&path, renamed).expect("write");
    let fresh = SparseIndex::open(dir).expect("reopen");
    assert_eq!(fresh.bm25("alpha", 1).expect("bm25")[0].id, "z000");
    assert_eq!(fresh.tfidf("alpha", 1).expect("tf-idf")[0].id, "z000");
    assert!(dir.join(FILES[1]).is_file(), "TF-IDF statistics not kept");
}
