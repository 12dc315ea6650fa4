//! TF-IDF's pruned top k ([`SparseIndex::tfidf`]) against the pass that reads every
//! posting ([`SparseIndex::tfidf_ranked`]): the same ids with the same score bits, in
//! the same order (ties by id descending, also at the cut), on random corpora with
//! Zipf-like word frequencies, duplicate texts (ties), several segments and deleted
//! documents (a second sync replaces and drops chunks), and queries with repeated and
//! unknown words, on one thread and with the segments split over several. The cases
//! must also prune: a property that held only because every posting was read would
//! prove nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use proptest::prelude::*;
use raglab::core::chunk::Chunk;
use raglab::store::sparse::SparseIndex;

/// Words by frequency: word `w` is drawn with weight 1 / (w + 1).
const VOCABULARY: usize = 60;

fn word(w: usize) -> String {
    format!("w{w}")
}

/// A text of `len` words from `draws` (uniform numbers turned into Zipf ranks).
fn zipf_text(draws: &[f64]) -> String {
    let total: f64 = (0..VOCABULARY).map(|w| 1.0 / (w + 1) as f64).sum();
    draws
        .iter()
        .map(|u| {
            let mut acc = 0.0;
            let mut w = 0;
            while w + 1 < VOCABULARY {
                acc += 1.0 / (w + 1) as f64 / total;
                if acc >= *u {
                    break;
                }
                w += 1;
            }
            word(w)
        })
        .collect::<Vec<_>>()
        .join(" ")
}

#[derive(Debug, Clone)]
pub(crate) struct Case {
    /// Texts of the first sync; chunk i of the second sync keeps text i, takes a
    /// duplicate of another, or is dropped.
    pub texts: Vec<String>,
    /// Per chunk in the second sync: None dropped, Some(j) the text of chunk j.
    pub second: Vec<Option<usize>>,
    pub queries: Vec<String>,
}

impl Case {
    /// The chunks of the second sync: chunk i keeps a text of the first (its own or
    /// another's) or is dropped.
    pub(crate) fn second_chunks(&self) -> Vec<Chunk> {
        self.second
            .iter()
            .enumerate()
            .filter_map(|(i, j)| j.map(|j| (i, j)))
            .map(|(i, j)| crate::common::text_chunk(format!("c{i:03}"), self.texts[j].clone()))
            .collect()
    }
}

pub(crate) fn case() -> impl Strategy<Value = Case> {
    (40usize..160).prop_flat_map(|n| {
        (
            proptest::collection::vec(proptest::collection::vec(0.0f64..1.0, 1..25), n),
            proptest::collection::vec(proptest::option::weighted(0.85, 0..n), n),
            proptest::collection::vec(
                (proptest::collection::vec(0.0f64..1.0, 1..6), any::<bool>()),
                6,
            ),
        )
            .prop_map(|(texts, second, queries)| Case {
                texts: texts.iter().map(|d| zipf_text(d)).collect(),
                second,
                queries: queries
                    .iter()
                    .map(|(d, unknown)| {
                        let q = zipf_text(d);
                        if *unknown {
                            format!("{q} nowhere {q}")
                        } else {
                            q
                        }
                    })
                    .collect(),
            })
    })
}

pub(crate) fn chunks(texts: &[String]) -> Vec<Chunk> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| crate::common::text_chunk(format!("c{i:03}"), t.clone()))
        .collect()
}

static PRUNED: AtomicUsize = AtomicUsize::new(0);
static QUERIES: AtomicUsize = AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    fn pruned_top_k_equals_the_exhaustive_pass(case in case()) {
        let tmp = tempfile::tempdir().expect("tmp");
        let mut sparse = SparseIndex::open(tmp.path()).expect("open");
        sparse.sync(&chunks(&case.texts)).expect("first sync");
        // Half the cases change the corpus: deleted documents in the old segment and
        // a new segment, with duplicate texts (ties).
        if case.texts.len() % 2 == 0 {
            sparse.sync(&case.second_chunks()).expect("second sync");
        }
        let n = case.texts.len();
        for q in &case.queries {
            for k in [1, 2, 5, 10, 30, n + 5] {
                let (want, _) = sparse.tfidf_ranked(q, k, &[]).expect("exhaustive");
                // One thread, and the segments split over two or three (a floor
                // shared between threads).
                for parts in [1, 2, 3] {
                    let (got, reads) = sparse.tfidf_pruned_split(q, k, parts).expect("pruned");
                    prop_assert_eq!(&got, &want, "query {:?} k {} parts {}", q, k, parts);
                    prop_assert!(reads.postings_read <= reads.postings_total);
                    if reads.postings_read < reads.postings_total {
                        PRUNED.fetch_add(1, Ordering::Relaxed);
                    }
                    QUERIES.fetch_add(1, Ordering::Relaxed);
                }
                prop_assert_eq!(&sparse.tfidf(q, k).expect("tfidf"), &want);
            }
        }
    }
}

/// The property, then what it exercised: a share of its queries must have skipped
/// postings.
#[test]
fn pruned_top_k_equals_the_exhaustive_pass_and_prunes() {
    pruned_top_k_equals_the_exhaustive_pass();
    let (pruned, queries) = (
        PRUNED.load(Ordering::Relaxed),
        QUERIES.load(Ordering::Relaxed),
    );
    eprintln!("{pruned} of {queries} top-k queries skipped postings");
    assert!(
        pruned * 5 >= queries,
        "only {pruned} of {queries} queries pruned"
    );
}
