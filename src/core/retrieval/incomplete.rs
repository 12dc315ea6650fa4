//! Measures for incomplete judgements: qrels that grow (targets plus assessors'
//! grades) never judge every retrieved document, and these say how much of a ranking
//! they judge, or score it without counting what they leave out.
//!
//! Every ranking is already in trec_eval's order (score descending, ties by document id
//! descending). A judgement of grade 0 is a judged non-relevant document; a grade above
//! 0 is relevant; a document without a line in the qrels is unjudged.
//!
//! - **Judged@k** (ir_measures' `Judged@k`): the documents in the top k of a query's
//!   ranking that the query's own judgements name (any grade, 0 included), over
//!   min(k, documents retrieved). 0 when nothing was retrieved or k = 0.
//! - **Hole@k** (BEIR's `hole`): the documents in the top k that no query's
//!   judgements name (judged for no query of the qrels at all), over k, also when fewer
//!   than k were retrieved. 0 when k = 0. Hole@k is not 1 - Judged@k: a document judged
//!   for another query only is no hole, and the denominator is k.
//! - **bpref** (trec_eval's `bpref`, Buckley and Voorhees, SIGIR 2004): with R the
//!   query's relevant judged documents and N its judged non-relevant ones, the whole
//!   ranking is read top down, unjudged documents skipped; each relevant document adds
//!   1 - min(n, R) / min(N, R), n the judged non-relevant documents ranked above it (1
//!   when n = 0); the sum is divided by R, so relevant documents not retrieved add 0. A
//!   query without a relevant document scores 0 (trec_eval adds nothing and divides by
//!   nothing).

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

use crate::core::metrics::Qrel;

/// Every document that some query's judgements name (any grade): what Hole@k counts
/// against.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JudgedDocs(HashSet<String>);

impl JudgedDocs {
    /// The documents judged for any query of `qrels`.
    pub fn of(qrels: &HashMap<String, Qrel>) -> Self {
        Self(qrels.values().flat_map(|q| q.keys().cloned()).collect())
    }

    pub fn contains(&self, doc: &str) -> bool {
        self.0.contains(doc)
    }

    /// How many distinct documents are judged.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Judged@k: the top k's documents judged for this query over min(k, retrieved).
pub fn judged_at(ranked: &[&str], qrel: &Qrel, k: usize) -> f64 {
    let top = &ranked[..k.min(ranked.len())];
    if top.is_empty() {
        return 0.0;
    }
    let judged = top.iter().filter(|d| qrel.contains_key(**d)).count();
    judged as f64 / top.len() as f64
}

/// Hole@k: the top k's documents judged for no query, over k.
pub fn hole_at(ranked: &[&str], judged: &JudgedDocs, k: usize) -> f64 {
    if k == 0 {
        return 0.0;
    }
    let holes = ranked
        .iter()
        .take(k)
        .filter(|d| !judged.contains(d))
        .count();
    holes as f64 / k as f64
}

/// bpref over the whole ranking: unjudged documents skipped, each relevant one
/// credited 1 - min(n, R) / min(N, R) for the n judged non-relevant ones above it, the
/// sum over R (0 without relevant judgements).
pub fn bpref(ranked: &[&str], qrel: &Qrel) -> f64 {
    let relevant = qrel.values().filter(|&&g| g > 0).count();
    if relevant == 0 {
        return 0.0;
    }
    let nonrelevant = qrel.len() - relevant;
    let mut nonrel_above = 0usize;
    let mut sum = 0.0;
    for grade in ranked.iter().filter_map(|d| qrel.get(*d)) {
        if *grade == 0 {
            nonrel_above += 1;
        } else if nonrel_above == 0 {
            sum += 1.0;
        } else {
            sum += 1.0 - nonrel_above.min(relevant) as f64 / nonrelevant.min(relevant) as f64;
        }
    }
    sum / relevant as f64
}

/// Judged@k and Hole@k of one query (or their means) at one cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Coverage {
    pub k: usize,
    pub judged: f64,
    pub hole: f64,
}

/// The incomplete-judgement measures of one query: bpref, and Judged@k and Hole@k at
/// each cutoff asked.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct JudgedMeasures {
    pub bpref: f64,
    pub at_k: Vec<Coverage>,
}

/// The measures of one query's ranking at the cutoffs `ks`.
pub fn judged_measures(
    ranked: &[&str],
    qrel: &Qrel,
    judged: &JudgedDocs,
    ks: &[usize],
) -> JudgedMeasures {
    JudgedMeasures {
        bpref: bpref(ranked, qrel),
        at_k: ks
            .iter()
            .map(|&k| Coverage {
                k,
                judged: judged_at(ranked, qrel, k),
                hole: hole_at(ranked, judged, k),
            })
            .collect(),
    }
}

/// Means of the measures over `queries` queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct MeanJudged {
    pub queries: usize,
    pub bpref: f64,
    pub at_k: Vec<Coverage>,
}

/// The means over `per_query` (evaluated at the cutoffs `ks`), summed in the order
/// given; all 0 without queries.
pub fn mean_judged<'a>(
    per_query: impl IntoIterator<Item = &'a JudgedMeasures>,
    ks: &[usize],
) -> MeanJudged {
    let mut m = MeanJudged {
        queries: 0,
        bpref: 0.0,
        at_k: ks
            .iter()
            .map(|&k| Coverage {
                k,
                judged: 0.0,
                hole: 0.0,
            })
            .collect(),
    };
    for q in per_query {
        m.queries += 1;
        m.bpref += q.bpref;
        for (sum, c) in m.at_k.iter_mut().zip(&q.at_k) {
            sum.judged += c.judged;
            sum.hole += c.hole;
        }
    }
    if m.queries > 0 {
        let n = m.queries as f64;
        m.bpref /= n;
        for c in &mut m.at_k {
            c.judged /= n;
            c.hole /= n;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qrel(pairs: &[(&str, u32)]) -> Qrel {
        pairs.iter().map(|(d, r)| (d.to_string(), *r)).collect()
    }

    #[test]
    fn bpref_by_hand() {
        // R = 2, N = 3; u1 and u2 unjudged (skipped). r1 has n1 above: 1 - 1/min(3,2);
        // r2 has n1, n2 above: 1 - 2/2 = 0. (0.5 + 0) / 2.
        let q = qrel(&[("r1", 1), ("r2", 2), ("n1", 0), ("n2", 0), ("n3", 0)]);
        let ranked = ["u1", "n1", "r1", "n2", "u2", "r2", "n3"];
        assert_eq!(bpref(&ranked, &q), 0.25);
        // R = 1, N = 3: min(n, R) caps the penalty at one.
        let q = qrel(&[("r", 1), ("n1", 0), ("n2", 0), ("n3", 0)]);
        assert_eq!(bpref(&["n1", "n2", "r"], &q), 0.0);
        assert_eq!(bpref(&["r", "n1"], &q), 1.0);
        // R = 3, N = 1: the denominator is min(N, R) = 1; c is not retrieved.
        let q = qrel(&[("a", 1), ("b", 1), ("c", 1), ("n", 0)]);
        assert!((bpref(&["a", "n", "b"], &q) - 1.0 / 3.0).abs() < 1e-15);
        // N = 0: no penalty ever; r2 not retrieved adds 0.
        let q = qrel(&[("r1", 1), ("r2", 1)]);
        assert_eq!(bpref(&["x", "r1"], &q), 0.5);
        // No relevant document: 0, as trec_eval.
        assert_eq!(bpref(&["n1"], &qrel(&[("n1", 0)])), 0.0);
        assert_eq!(bpref(&[], &qrel(&[("r", 1)])), 0.0);
    }

    #[test]
    fn judged_and_holes_by_hand() {
        let qrels: HashMap<String, Qrel> = [
            ("q1".to_string(), qrel(&[("a", 1), ("n", 0)])),
            ("q2".to_string(), qrel(&[("u", 0)])),
        ]
        .into_iter()
        .collect();
        let docs = JudgedDocs::of(&qrels);
        assert_eq!(docs.len(), 3);
        let ranked = ["a", "u", "x", "n"];
        let q1 = &qrels["q1"];
        assert_eq!(judged_at(&ranked, q1, 1), 1.0);
        // u is judged for q2 only: not judged for q1, but no hole.
        assert_eq!(judged_at(&ranked, q1, 2), 0.5);
        assert_eq!(hole_at(&ranked, &docs, 2), 0.0);
        assert!((judged_at(&ranked, q1, 3) - 1.0 / 3.0).abs() < 1e-15);
        assert!((hole_at(&ranked, &docs, 3) - 1.0 / 3.0).abs() < 1e-15);
        // k beyond the ranking: Judged over the 4 retrieved, Hole over k.
        assert_eq!(judged_at(&ranked, q1, 10), 0.5);
        assert_eq!(hole_at(&ranked, &docs, 10), 0.1);
        assert_eq!(judged_at(&[], q1, 5), 0.0);
        assert_eq!(hole_at(&[], &docs, 5), 0.0);
        assert_eq!(
            (judged_at(&ranked, q1, 0), hole_at(&ranked, &docs, 0)),
            (0.0, 0.0)
        );
    }

    #[test]
    fn measures_and_their_means() {
        let q = qrel(&[("a", 1), ("n", 0)]);
        let docs = JudgedDocs::of(&[("q".to_string(), q.clone())].into_iter().collect());
        let one = judged_measures(&["n", "a", "x"], &q, &docs, &[1, 3]);
        assert_eq!(one.bpref, 0.0); // 1 - min(1, 1) / min(1, 1)
        assert_eq!(
            one.at_k,
            vec![
                Coverage {
                    k: 1,
                    judged: 1.0,
                    hole: 0.0
                },
                Coverage {
                    k: 3,
                    judged: 2.0 / 3.0,
                    hole: 1.0 / 3.0
                },
            ]
        );
        let two = judged_measures(&["a"], &q, &docs, &[1, 3]);
        assert_eq!(two.bpref, 1.0);
        let m = mean_judged([&one, &two], &[1, 3]);
        assert_eq!(m.queries, 2);
        assert_eq!(m.bpref, 0.5);
        assert_eq!(m.at_k[1].judged, (2.0 / 3.0 + 1.0) / 2.0);
        assert_eq!(m.at_k[1].hole, (1.0 / 3.0 + 0.0) / 2.0);
        let none = mean_judged([], &[5]);
        assert_eq!(
            (none.queries, none.bpref, none.at_k[0].judged),
            (0, 0.0, 0.0)
        );
    }
}
