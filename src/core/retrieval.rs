//! Retrieval methods and the evaluation of their rankings (pure: rank lists in,
//! metrics and breakdowns out).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use super::fusion::{Candidates, Fusion, RRF_C};
use super::metrics::{MeanMetrics, Qrel, QueryMetrics, eta_squared, mean_metrics, query_metrics};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Bm25,
    Tfidf,
    Dense,
    /// Weighted RRF of dense and BM25.
    Hybrid,
    /// Min-max linear fusion of dense and BM25 (dense weight alpha).
    Linear,
}

impl Method {
    pub const ALL: [Self; 5] = [
        Self::Bm25,
        Self::Tfidf,
        Self::Dense,
        Self::Hybrid,
        Self::Linear,
    ];

    pub fn needs_dense(self) -> bool {
        matches!(self, Self::Dense | Self::Hybrid | Self::Linear)
    }

    /// How this method fuses the dense and BM25 lists at dense weight `alpha`; `None`
    /// for the single-list methods.
    pub fn fusion(self, alpha: f64) -> Option<Fusion> {
        match self {
            Self::Hybrid => Some(Fusion::Rrf { alpha, c: RRF_C }),
            Self::Linear => Some(Fusion::MinMax { w: alpha }),
            Self::Bm25 | Self::Tfidf | Self::Dense => None,
        }
    }

    /// Whether the fusion weight changes this method's ranking.
    pub fn uses_alpha(self) -> bool {
        self.fusion(0.5).is_some()
    }
}

/// The dense weight of a fused ranking, validated to lie in [0, 1]. The default, 0.7,
/// leans on the dense list as the source paper's best hybrids do.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd, Serialize, serde::Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Alpha(f64);

impl Alpha {
    pub const DEFAULT: Self = Self(0.7);

    pub fn new(value: f64) -> Result<Self, String> {
        if (0.0..=1.0).contains(&value) {
            Ok(Self(value))
        } else {
            Err(format!("alpha must be between 0 and 1 (got {value})"))
        }
    }

    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for Alpha {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl TryFrom<f64> for Alpha {
    type Error = String;
    fn try_from(v: f64) -> Result<Self, String> {
        Self::new(v)
    }
}

impl From<Alpha> for f64 {
    fn from(a: Alpha) -> Self {
        a.0
    }
}

impl fmt::Display for Alpha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl FromStr for Alpha {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let v: f64 = s
            .trim()
            .parse()
            .map_err(|_| format!("alpha must be a number between 0 and 1 (got `{s}`)"))?;
        Self::new(v)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bm25 => "bm25",
            Self::Tfidf => "tfidf",
            Self::Dense => "dense",
            Self::Hybrid => "hybrid",
            Self::Linear => "linear",
        })
    }
}

impl FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.to_string() == s)
            .ok_or_else(|| {
                format!("unknown method `{s}` (expected bm25, tfidf, dense, hybrid or linear)")
            })
    }
}

/// The rank lists of one query, computed once and re-fused for any weight.
#[derive(Debug, Clone, Default)]
pub struct QueryLists {
    pub bm25: Vec<super::fusion::Scored>,
    pub tfidf: Vec<super::fusion::Scored>,
    pub dense: Vec<super::fusion::Scored>,
    pub candidates: Candidates,
}

impl QueryLists {
    pub fn new(
        bm25: Vec<super::fusion::Scored>,
        tfidf: Vec<super::fusion::Scored>,
        dense: Vec<super::fusion::Scored>,
    ) -> Self {
        let candidates = Candidates::new(&dense, &bm25);
        Self {
            bm25,
            tfidf,
            dense,
            candidates,
        }
    }

    /// The ranked ids of `method` (alpha: dense weight for hybrid/linear).
    pub fn ranking(&self, method: Method, alpha: f64) -> Vec<&str> {
        fn ids(l: &[super::fusion::Scored]) -> Vec<&str> {
            l.iter().map(|s| s.id.as_str()).collect()
        }
        if let Some(f) = method.fusion(alpha) {
            return self.candidates.fused_ids(f);
        }
        match method {
            Method::Bm25 => ids(&self.bm25),
            Method::Tfidf => ids(&self.tfidf),
            _ => ids(&self.dense),
        }
    }

    /// The ranked (id, score) pairs of `method`: the list's own scores, or the fused
    /// score for hybrid and linear (what a TREC run file holds).
    pub fn scored(&self, method: Method, alpha: f64) -> Vec<(String, f64)> {
        let plain = |l: &[super::fusion::Scored]| -> Vec<(String, f64)> {
            l.iter().map(|s| (s.id.clone(), s.score)).collect()
        };
        if let Some(f) = method.fusion(alpha) {
            return self
                .candidates
                .fuse(f)
                .into_iter()
                .map(|h| (h.id, h.fused))
                .collect();
        }
        match method {
            Method::Bm25 => plain(&self.bm25),
            Method::Tfidf => plain(&self.tfidf),
            _ => plain(&self.dense),
        }
    }
}

/// One evaluated query.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub qid: String,
    pub metrics: QueryMetrics,
}

/// The judgements of a query that has at least one relevant document.
pub fn judged<'a>(qrels: &'a HashMap<String, Qrel>, qid: &str) -> Option<&'a Qrel> {
    qrels.get(qid).filter(|q| q.values().any(|&r| r > 0))
}

/// Evaluate one method at one weight over all queries. Queries without relevant
/// documents are dropped, and so are queries whose result list is empty: they are
/// absent from the method's run, and trec_eval (without `-c`) averages over the
/// queries of the run only ([`empty_results`] names them).
pub fn evaluate(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    method: Method,
    alpha: f64,
) -> Vec<QueryOutcome> {
    lists
        .iter()
        .filter_map(|(qid, l)| {
            let q = judged(qrels, qid)?;
            let ranking = l.ranking(method, alpha);
            (!ranking.is_empty()).then(|| QueryOutcome {
                qid: qid.clone(),
                metrics: query_metrics(&ranking, q),
            })
        })
        .collect()
}

/// The queries with relevant documents that [`evaluate`] dropped because the method
/// retrieved nothing for them: the judged queries absent from its `outcomes` (read
/// off them, so no ranking is fused twice).
pub fn empty_results<'a>(
    lists: &'a [(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    outcomes: &[QueryOutcome],
) -> Vec<&'a str> {
    let evaluated: std::collections::HashSet<&str> =
        outcomes.iter().map(|o| o.qid.as_str()).collect();
    lists
        .iter()
        .map(|(qid, _)| qid.as_str())
        .filter(|qid| judged(qrels, qid).is_some() && !evaluated.contains(qid))
        .collect()
}

pub fn mean(outcomes: &[QueryOutcome]) -> MeanMetrics {
    mean_metrics(outcomes.iter().map(|o| &o.metrics))
}

/// Metric names, in the paper's table order, with accessors.
pub type MetricFn = fn(&MeanMetrics) -> f64;

pub const METRICS: [(&str, MetricFn); 5] = [
    ("P@1", |m| m.p1),
    ("Recall@5", |m| m.recall5),
    ("Recall@10", |m| m.recall10),
    ("MRR", |m| m.mrr),
    ("nDCG@10", |m| m.ndcg10),
];

/// Per-group mean nDCG@10 and the effect size of the grouping.
#[derive(Debug, Clone, Serialize)]
pub struct Breakdown {
    pub groups: BTreeMap<String, MeanMetrics>,
    pub eta_squared_ndcg10: Option<f64>,
}

pub fn breakdown(
    outcomes: &[QueryOutcome],
    group_of: impl Fn(&str) -> Option<String>,
) -> Breakdown {
    let mut by: BTreeMap<String, Vec<QueryMetrics>> = BTreeMap::new();
    let mut values = Vec::new();
    for o in outcomes {
        if let Some(g) = group_of(&o.qid) {
            values.push((g.clone(), o.metrics.ndcg10));
            by.entry(g).or_default().push(o.metrics);
        }
    }
    Breakdown {
        groups: by
            .into_iter()
            .map(|(g, ms)| (g, mean_metrics(ms.iter())))
            .collect(),
        eta_squared_ndcg10: eta_squared(&values),
    }
}

/// Queries whose first relevant document is not in the top `k`.
pub fn failures(outcomes: &[QueryOutcome], k: usize) -> Vec<&QueryOutcome> {
    outcomes
        .iter()
        .filter(|o| o.metrics.first_relevant_rank.is_none_or(|r| r > k))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fusion::Scored;

    fn l(ids: &[&str]) -> Vec<Scored> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Scored {
                id: (*id).into(),
                score: 1.0 / (i + 1) as f64,
            })
            .collect()
    }

    #[test]
    fn evaluate_drops_queries_without_relevant_documents() {
        let lists = vec![
            (
                "q1".to_string(),
                QueryLists::new(l(&["a", "t"]), l(&["t"]), l(&["t", "a"])),
            ),
            (
                "q2".to_string(),
                QueryLists::new(l(&["x"]), vec![], l(&["x"])),
            ),
        ];
        let qrels: HashMap<String, Qrel> = [
            (
                "q1".to_string(),
                [("t".to_string(), 1)].into_iter().collect(),
            ),
            (
                "q2".to_string(),
                [("x".to_string(), 0)].into_iter().collect(),
            ),
        ]
        .into_iter()
        .collect();
        let bm25 = evaluate(&lists, &qrels, Method::Bm25, 0.5);
        assert_eq!(bm25.len(), 1);
        assert_eq!(bm25[0].metrics.rr, 0.5);
        let dense = evaluate(&lists, &qrels, Method::Dense, 0.5);
        assert_eq!(dense[0].metrics.p1, 1.0);
        // Hybrid at alpha 0.7: t = .7/61 + .3/62 beats a = .7/62 + .3/61.
        let hybrid = evaluate(&lists, &qrels, Method::Hybrid, 0.7);
        assert_eq!(hybrid[0].metrics.p1, 1.0);
        assert_eq!(failures(&bm25, 1).len(), 1);
        assert_eq!(failures(&dense, 1).len(), 0);
    }

    #[test]
    fn alpha_is_validated() {
        assert_eq!("0.25".parse::<Alpha>().map(Alpha::get), Ok(0.25));
        assert!("1.5".parse::<Alpha>().is_err());
        assert!("-0.1".parse::<Alpha>().is_err());
        assert!("x".parse::<Alpha>().is_err());
        assert!(serde_json::from_str::<Alpha>("2.0").is_err());
        assert_eq!(Alpha::default().get(), 0.7);
        assert!(Method::Hybrid.uses_alpha() && Method::Linear.uses_alpha());
        assert!(!Method::Bm25.uses_alpha() && !Method::Dense.uses_alpha());
    }

    #[test]
    fn method_names_round_trip() {
        for m in Method::ALL {
            assert_eq!(m.to_string().parse::<Method>(), Ok(m));
        }
    }
}
