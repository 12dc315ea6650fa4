//! Per-query scores of several runs over one query set: what a comparison reads. A run
//! is a retrieval configuration of `eval retrieval` or a TREC run file.
//!
//! The query set is every judged query (at least one relevant document). A run that
//! retrieved nothing for a judged query scores 0 on it on every metric (trec_eval's
//! `-c`): a paired comparison needs both values of every query, and retrieving nothing
//! is a failure to count, not a query to drop. Its means can therefore sit below
//! `eval retrieval`'s, which leave such queries out; `absent` says how many there were.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::PairedComparison;
use super::clustered::{ClusteredInterval, cluster_numbers};
use crate::core::retrieval::QueryOutcome;

/// Per-query scores of several runs over the same judged queries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScoreTable {
    /// The judged queries, in the order of every score column.
    pub qids: Vec<String>,
    /// Metric names, in the order of every run's `scores`.
    pub metrics: Vec<String>,
    pub runs: Vec<RunScores>,
    /// The cluster of each query, in the order of `qids` (its target's source document,
    /// a `cluster` field, or a `--clusters` file); empty when unknown, and then every
    /// query is a cluster of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub clusters: Vec<String>,
}

/// One run's per-query scores.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunScores {
    /// The configuration's label (`hybrid-tfidf-a0.75`) or the run file's name.
    pub label: String,
    /// Judged queries this run retrieved nothing for (scored 0).
    pub absent: usize,
    /// `scores[m][q]`: metric `metrics[m]` of query `qids[q]`.
    #[serde(with = "exact_columns")]
    pub scores: Vec<Vec<f64>>,
}

/// Score columns kept as text: one string per column, the values space-separated in
/// Rust's shortest round-trip form, read back by Rust's correctly rounded parser, so
/// every value comes back as the same f64. A JSON number parser may round the last bit
/// (serde_json does, without its `float_roundtrip` feature), and a paired comparison
/// of scores read back must equal the one made before they were written.
mod exact_columns {
    use serde::de::Error as _;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(columns: &[Vec<f64>], s: S) -> Result<S::Ok, S::Error> {
        let texts: Vec<String> = columns
            .iter()
            .map(|c| {
                c.iter()
                    .map(|v| format!("{v:?}"))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        texts.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<f64>>, D::Error> {
        Vec::<String>::deserialize(d)?
            .iter()
            .map(|t| {
                t.split_ascii_whitespace()
                    .map(|x| x.parse::<f64>().map_err(D::Error::custom))
                    .collect()
            })
            .collect()
    }
}

impl ScoreTable {
    /// The index of a run by label.
    pub fn run(&self, label: &str) -> Option<usize> {
        self.runs.iter().position(|r| r.label == label)
    }

    /// Each query's cluster number (see [`cluster_numbers`]): by `clusters` when it
    /// gives one per query, else every query its own.
    pub fn cluster_numbers(&self) -> Vec<usize> {
        if self.clusters.len() == self.qids.len() {
            cluster_numbers(&self.clusters)
        } else {
            (0..self.qids.len()).collect()
        }
    }

    /// The index of a metric by name (case-insensitive: `ndcg@10` finds `nDCG@10`).
    pub fn metric(&self, name: &str) -> Option<usize> {
        self.metrics
            .iter()
            .position(|m| m.eq_ignore_ascii_case(name))
    }
}

/// The metric names of cutoffs `ks` (each once, in the order given): P@1, MRR, then
/// Recall@k and nDCG@k for each k.
pub fn metric_names(ks: &[usize]) -> Vec<String> {
    let ks = unique(ks);
    let mut names = vec!["P@1".to_string(), "MRR".to_string()];
    names.extend(ks.iter().map(|k| format!("Recall@{k}")));
    names.extend(ks.iter().map(|k| format!("nDCG@{k}")));
    names
}

/// The names of the incomplete-judgement measures at cutoffs `ks` (each once, in the
/// order given): bpref, then Judged@k and Hole@k for each k. A table holds them after
/// the [`metric_names`] when its outcomes carry them; they are reported beside the
/// effectiveness metrics and compared only when asked for by name.
pub fn judged_metric_names(ks: &[usize]) -> Vec<String> {
    let ks = unique(ks);
    let mut names = vec!["bpref".to_string()];
    names.extend(ks.iter().map(|k| format!("Judged@{k}")));
    names.extend(ks.iter().map(|k| format!("Hole@{k}")));
    names
}

/// Whether `name` (case-insensitive) is one of the [`judged_metric_names`].
pub fn is_judged_metric(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower == "bpref" || lower.starts_with("judged@") || lower.starts_with("hole@")
}

fn unique(ks: &[usize]) -> Vec<usize> {
    let mut out: Vec<usize> = Vec::new();
    for &k in ks {
        if !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

/// An outcome's values in [`metric_names`] order (0 at a cutoff it was not evaluated at),
/// then, with `judged`, in [`judged_metric_names`] order (0 where it has none).
fn values(o: &QueryOutcome, ks: &[usize], judged: bool) -> Vec<f64> {
    let at = |k: usize| o.at_k.iter().find(|a| a.k == k);
    let mut v = vec![o.metrics.p1, o.metrics.rr];
    v.extend(ks.iter().map(|&k| at(k).map_or(0.0, |a| a.recall)));
    v.extend(ks.iter().map(|&k| at(k).map_or(0.0, |a| a.ndcg)));
    if judged {
        let j = o.judged.as_ref();
        let cov = |k: usize| j.and_then(|j| j.at_k.iter().find(|c| c.k == k));
        v.push(j.map_or(0.0, |j| j.bpref));
        v.extend(ks.iter().map(|&k| cov(k).map_or(0.0, |c| c.judged)));
        v.extend(ks.iter().map(|&k| cov(k).map_or(0.0, |c| c.hole)));
    }
    v
}

/// The table of `runs` (label, outcomes evaluated at cutoffs `ks`) over the judged
/// queries `qids`; outcomes of other queries are ignored, judged queries without an
/// outcome score 0. The columns are the [`metric_names`], then the
/// [`judged_metric_names`] when any outcome carries those measures.
pub fn score_table(
    qids: Vec<String>,
    ks: &[usize],
    runs: &[(String, &[QueryOutcome])],
) -> ScoreTable {
    let ks = unique(ks);
    let judged = runs
        .iter()
        .any(|(_, outcomes)| outcomes.iter().any(|o| o.judged.is_some()));
    let mut metrics = metric_names(&ks);
    if judged {
        metrics.extend(judged_metric_names(&ks));
    }
    let index: HashMap<&str, usize> = qids
        .iter()
        .enumerate()
        .rev()
        .map(|(i, q)| (q.as_str(), i))
        .collect();
    let runs = runs
        .iter()
        .map(|(label, outcomes)| {
            let mut scores = vec![vec![0.0; qids.len()]; metrics.len()];
            let mut seen = vec![false; qids.len()];
            for o in *outcomes {
                let Some(&i) = index.get(o.qid.as_str()) else {
                    continue;
                };
                seen[i] = true;
                for (m, v) in values(o, &ks, judged).into_iter().enumerate() {
                    scores[m][i] = v;
                }
            }
            RunScores {
                label: label.clone(),
                absent: seen.iter().filter(|s| !**s).count(),
                scores,
            }
        })
        .collect();
    ScoreTable {
        qids,
        metrics,
        runs,
        clusters: Vec::new(),
    }
}

/// One row of a comparison report: a candidate against a baseline on one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonRow {
    pub metric: String,
    pub baseline: String,
    pub candidate: String,
    #[serde(flatten)]
    pub result: PairedComparison,
    /// The difference's standard errors with questions clustered, its normal 95%
    /// interval and the smallest difference the set detects; absent from comparisons
    /// written before clusters were reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clustered: Option<ClusteredInterval>,
}
