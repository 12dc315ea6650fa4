//! Retrieval metrics with trec_eval's conventions.
//!
//! - A run's documents for a query are ordered by score descending, ties broken by
//!   document id **descending** (trec_eval sorts that way, whatever ranks the run file
//!   claims). [`order_run`] applies it.
//! - P@k: relevant documents in the top k over k. Recall@k: relevant in the top k over
//!   all judged-relevant documents. Reciprocal rank: 1/rank of the first relevant
//!   document over the whole list (not cut), 0 when absent. nDCG@k: linear gain (the
//!   relevance value), log2(rank + 1) discount, ideal ordering of the judged relevant
//!   set. AP: mean over all relevant documents of the precision at each relevant hit.
//! - Relevance 0 is non-relevant. Queries without relevant documents, or absent from
//!   the run, are dropped from means (trec_eval without `-c`); reports say so.

use std::collections::HashMap;

use serde::Serialize;

/// Relevance judgements of one query: document id -> relevance (> 0 is relevant).
pub type Qrel = HashMap<String, u32>;

/// Sort `(doc, score)` pairs the way trec_eval does: score descending, then doc id
/// descending.
pub fn order_run(hits: &mut [(String, f64)]) {
    hits.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
}

/// Metrics of one query.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Default)]
pub struct QueryMetrics {
    pub p1: f64,
    pub recall5: f64,
    pub recall10: f64,
    pub rr: f64,
    pub ndcg10: f64,
    pub ap: f64,
    /// 1-based rank of the first relevant document, if retrieved.
    pub first_relevant_rank: Option<usize>,
}

fn rel(qrel: &Qrel, doc: &str) -> u32 {
    qrel.get(doc).copied().unwrap_or(0)
}

fn relevant_count(qrel: &Qrel) -> usize {
    qrel.values().filter(|&&r| r > 0).count()
}

/// Precision at cutoff k.
pub fn precision_at(ranked: &[&str], qrel: &Qrel, k: usize) -> f64 {
    let hits = ranked.iter().take(k).filter(|d| rel(qrel, d) > 0).count();
    hits as f64 / k as f64
}

/// Recall at cutoff k (0 when the query has no relevant document).
pub fn recall_at(ranked: &[&str], qrel: &Qrel, k: usize) -> f64 {
    let total = relevant_count(qrel);
    if total == 0 {
        return 0.0;
    }
    let hits = ranked.iter().take(k).filter(|d| rel(qrel, d) > 0).count();
    hits as f64 / total as f64
}

/// Reciprocal rank of the first relevant document over the whole list.
pub fn reciprocal_rank(ranked: &[&str], qrel: &Qrel) -> f64 {
    ranked
        .iter()
        .position(|d| rel(qrel, d) > 0)
        .map_or(0.0, |i| 1.0 / (i + 1) as f64)
}

/// nDCG at cutoff k with linear gain and log2 discount.
pub fn ndcg_at(ranked: &[&str], qrel: &Qrel, k: usize) -> f64 {
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, d)| f64::from(rel(qrel, d)) / ((i + 2) as f64).log2())
        .sum();
    let mut ideal: Vec<u32> = qrel.values().copied().filter(|&r| r > 0).collect();
    ideal.sort_unstable_by(|a, b| b.cmp(a));
    let idcg: f64 = ideal
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, &r)| f64::from(r) / ((i + 2) as f64).log2())
        .sum();
    if idcg > 0.0 { dcg / idcg } else { 0.0 }
}

/// Average precision over the whole list.
pub fn average_precision(ranked: &[&str], qrel: &Qrel) -> f64 {
    let total = relevant_count(qrel);
    if total == 0 {
        return 0.0;
    }
    let mut hits = 0usize;
    let mut sum = 0.0;
    for (i, d) in ranked.iter().enumerate() {
        if rel(qrel, d) > 0 {
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    sum / total as f64
}

/// All metrics of one query for a ranked list of document ids (already ordered).
pub fn query_metrics(ranked: &[&str], qrel: &Qrel) -> QueryMetrics {
    QueryMetrics {
        p1: precision_at(ranked, qrel, 1),
        recall5: recall_at(ranked, qrel, 5),
        recall10: recall_at(ranked, qrel, 10),
        rr: reciprocal_rank(ranked, qrel),
        ndcg10: ndcg_at(ranked, qrel, 10),
        ap: average_precision(ranked, qrel),
        first_relevant_rank: ranked.iter().position(|d| rel(qrel, d) > 0).map(|i| i + 1),
    }
}

/// Mean of each metric over queries.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize, Default)]
pub struct MeanMetrics {
    pub queries: usize,
    pub p1: f64,
    pub recall5: f64,
    pub recall10: f64,
    pub mrr: f64,
    pub ndcg10: f64,
    pub map: f64,
}

pub fn mean_metrics<'a>(per_query: impl IntoIterator<Item = &'a QueryMetrics>) -> MeanMetrics {
    let mut sum = MeanSum::default();
    for q in per_query {
        sum.add(q);
    }
    sum.mean()
}

/// [`mean_metrics`] as a running sum, so that a caller streaming queries keeps no
/// per-query metrics: the same additions in the same (query) order, then the same
/// divisions, so the same means bit for bit.
#[derive(Debug, Clone, Copy, Default)]
pub struct MeanSum(MeanMetrics);

impl MeanSum {
    pub fn add(&mut self, q: &QueryMetrics) {
        let m = &mut self.0;
        m.queries += 1;
        m.p1 += q.p1;
        m.recall5 += q.recall5;
        m.recall10 += q.recall10;
        m.mrr += q.rr;
        m.ndcg10 += q.ndcg10;
        m.map += q.ap;
    }

    pub fn mean(self) -> MeanMetrics {
        let mut m = self.0;
        if m.queries > 0 {
            let n = m.queries as f64;
            m.p1 /= n;
            m.recall5 /= n;
            m.recall10 /= n;
            m.mrr /= n;
            m.ndcg10 /= n;
            m.map /= n;
        }
        m
    }
}

/// One-way ANOVA effect size: eta² = SS_between / SS_total of `values` grouped by key.
/// `None` when there is no variance at all.
pub fn eta_squared<K: std::hash::Hash + Eq>(values: &[(K, f64)]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let grand = values.iter().map(|(_, v)| v).sum::<f64>() / n;
    // Groups in their order of first appearance: summed in a hash map's order, which
    // changes from process to process, the last digits would too (two processes, or
    // shards merged, must give the same eta^2 to the last digit).
    let mut index: HashMap<&K, usize> = HashMap::new();
    let mut groups: Vec<(f64, usize)> = Vec::new();
    for (k, v) in values {
        let i = *index.entry(k).or_insert_with(|| {
            groups.push((0.0, 0));
            groups.len() - 1
        });
        groups[i].0 += v;
        groups[i].1 += 1;
    }
    let ss_total: f64 = values.iter().map(|(_, v)| (v - grand).powi(2)).sum();
    let ss_between: f64 = groups
        .iter()
        .map(|(s, c)| *c as f64 * (s / *c as f64 - grand).powi(2))
        .sum();
    (ss_total > 0.0).then(|| ss_between / ss_total)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn qrel(pairs: &[(&str, u32)]) -> Qrel {
        pairs.iter().map(|(d, r)| (d.to_string(), *r)).collect()
    }

    #[test]
    fn hand_computed_single_target() {
        let q = qrel(&[("t", 1)]);
        let ranked = ["a", "b", "t", "c"];
        let m = query_metrics(&ranked, &q);
        assert_eq!(m.p1, 0.0);
        assert_eq!(m.rr, 1.0 / 3.0);
        assert_eq!(m.recall5, 1.0);
        assert!((m.ndcg10 - 1.0 / 4f64.log2()).abs() < 1e-15); // 1/log2(3+1)
        assert_eq!(m.ap, 1.0 / 3.0);
        assert_eq!(m.first_relevant_rank, Some(3));
    }

    #[test]
    fn graded_and_multiple_relevant() {
        let q = qrel(&[("x", 2), ("y", 1), ("z", 0)]);
        let ranked = ["y", "z", "x"];
        let dcg = 1.0 + 2.0 / 4f64.log2();
        let idcg = 2.0 + 1.0 / 3f64.log2();
        assert!((ndcg_at(&ranked, &q, 10) - dcg / idcg).abs() < 1e-15);
        assert_eq!(recall_at(&ranked, &q, 1), 0.5);
        assert!((average_precision(&ranked, &q) - (1.0 + 2.0 / 3.0) / 2.0).abs() < 1e-15);
    }

    #[test]
    fn absent_target_scores_zero() {
        let m = query_metrics(&["a", "b"], &qrel(&[("t", 1)]));
        assert_eq!(
            (m.rr, m.ndcg10, m.ap, m.first_relevant_rank),
            (0.0, 0.0, 0.0, None)
        );
    }

    #[test]
    fn ties_break_by_doc_id_descending() {
        let mut run = vec![
            ("a".to_string(), 1.0),
            ("c".to_string(), 1.0),
            ("b".to_string(), 2.0),
        ];
        order_run(&mut run);
        let ids: Vec<_> = run.iter().map(|(d, _)| d.as_str()).collect();
        assert_eq!(ids, vec!["b", "c", "a"]);
    }

    #[test]
    fn eta_squared_hand_case() {
        // Groups {1,3} and {5,7}: grand 4, SS_total 20, SS_between 2*(2-4)^2 + 2*(6-4)^2 = 16.
        let v = [("a", 1.0), ("a", 3.0), ("b", 5.0), ("b", 7.0)];
        assert!((eta_squared(&v).expect("defined") - 0.8).abs() < 1e-15);
        assert_eq!(eta_squared(&[("a", 1.0), ("b", 1.0)]), None);
    }
}
