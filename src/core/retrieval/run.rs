//! Retrieval methods and the evaluation of their rankings (pure: rank lists in,
//! metrics and breakdowns out).

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::core::fusion::{Candidates, Fusion, RRF_C};
use crate::core::incomplete::{JudgedDocs, JudgedMeasures, judged_measures};
use crate::core::metrics::{
    MeanMetrics, Qrel, QueryMetrics, eta_squared, mean_metrics, ndcg_at, query_metrics, recall_at,
};

#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    Bm25,
    Tfidf,
    Dense,
    /// Weighted RRF of dense and a sparse list (BM25 unless [`Sparse`] says TF-IDF).
    Hybrid,
    /// Min-max linear fusion of dense and a sparse list (dense weight alpha).
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

    /// The dense weight when neither a flag nor the config sets one: 0.7 for hybrid
    /// (the source paper's best hybrids lean on dense), equal weights (0.5) for linear
    /// fusion.
    pub fn default_alpha(self) -> Alpha {
        match self {
            Self::Linear => Alpha(0.5),
            _ => Alpha::DEFAULT,
        }
    }
}

/// The sparse list a fused method combines with the dense list. BM25 by default; the
/// source paper's best hybrids all used TF-IDF.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, serde::Deserialize, PartialOrd, Ord,
)]
#[serde(rename_all = "lowercase")]
pub enum Sparse {
    #[default]
    Bm25,
    Tfidf,
}

impl Sparse {
    pub const ALL: [Self; 2] = [Self::Bm25, Self::Tfidf];
}

impl fmt::Display for Sparse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Bm25 => "bm25",
            Self::Tfidf => "tfidf",
        })
    }
}

impl FromStr for Sparse {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|m| m.to_string() == s)
            .ok_or_else(|| format!("unknown sparse side `{s}` (expected bm25 or tfidf)"))
    }
}

/// One retrieval configuration: a method, the sparse side it fuses with and its dense
/// weight (both ignored by the single-list methods).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, serde::Deserialize)]
pub struct RunConfig {
    pub method: Method,
    pub sparse: Sparse,
    pub alpha: f64,
    /// A rerank stage after the method's ranking (its scores are the lists'
    /// [`QueryLists::rerank`]); `None`: the first-stage ranking as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerank: Option<crate::core::rerank::RerankCut>,
}

impl RunConfig {
    pub fn new(method: Method, sparse: Sparse, alpha: f64) -> Self {
        Self {
            method,
            sparse,
            alpha,
            rerank: None,
        }
    }

    /// This configuration followed by a rerank stage.
    pub fn reranked(self, cut: crate::core::rerank::RerankCut) -> Self {
        Self {
            rerank: Some(cut),
            ..self
        }
    }

    /// A single-list method (its sparse side and weight play no part).
    pub fn single(method: Method) -> Self {
        Self::new(method, Sparse::Bm25, 0.5)
    }

    pub fn fusion(&self) -> Option<Fusion> {
        self.method.fusion(self.alpha)
    }

    /// The configuration as a short label: `bm25`, `dense`, `hybrid-tfidf-a0.75`,
    /// `hybrid-bm25-a0.70+rerank10to5`.
    pub fn label(&self) -> String {
        let base = if self.method.uses_alpha() {
            format!("{}-{}-a{:.2}", self.method, self.sparse, self.alpha)
        } else {
            self.method.to_string()
        };
        match self.rerank {
            Some(cut) => format!("{base}+{}", cut.label()),
            None => base,
        }
    }

    /// The method as answer and MCQA records store it: its name, with `-tfidf` when it
    /// fuses dense with TF-IDF (the BM25 side, the default, keeps the bare name that
    /// records had before the sparse side could be chosen).
    pub fn method_label(&self) -> String {
        if self.method.uses_alpha() && self.sparse == Sparse::Tfidf {
            format!("{}-tfidf", self.method)
        } else {
            self.method.to_string()
        }
    }

    /// The whole configuration as a file name stem: the label and, for the methods
    /// that use embeddings, the model's short name (`hybrid-tfidf-a0.75-all-MiniLM-L6-v2`).
    pub fn file_stem(&self, model: Option<&str>) -> String {
        match model {
            Some(m) if self.method.needs_dense() => {
                format!("{}-{}", self.label(), model_short_name(m))
            }
            _ => self.label(),
        }
    }
}

/// An embedding model's name without its quantisation suffix and with only file-name
/// safe characters: `all-MiniLM-L6-v2.F16` -> `all-MiniLM-L6-v2`,
/// `bge-small-en-v1.5.Q8_0` -> `bge-small-en-v1.5`.
pub fn model_short_name(name: &str) -> String {
    let is_quant = |s: &str| {
        let u = s.to_ascii_uppercase();
        ["F16", "F32", "BF16", "FP16", "FP32"].contains(&u.as_str())
            || ((u.starts_with('Q') || u.starts_with("IQ"))
                && u.chars().any(|c| c.is_ascii_digit()))
    };
    let stem = match name.rsplit_once('.') {
        Some((head, tail)) if is_quant(tail) && !head.is_empty() => head,
        _ => name,
    };
    stem.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
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

/// The rank lists of one query, computed once and re-fused for any weight and either
/// sparse side.
#[derive(Debug, Clone, Default)]
pub struct QueryLists {
    pub bm25: Vec<crate::core::fusion::Scored>,
    pub tfidf: Vec<crate::core::fusion::Scored>,
    pub dense: Vec<crate::core::fusion::Scored>,
    /// Dense and BM25 candidates.
    pub candidates: Candidates,
    /// Dense and TF-IDF candidates.
    pub tfidf_candidates: Candidates,
    /// The rerank stage's scores of the chunks it read, in no order (empty unless a
    /// reranked configuration is evaluated).
    pub rerank: Vec<crate::core::fusion::Scored>,
}

impl QueryLists {
    pub fn new(
        bm25: Vec<crate::core::fusion::Scored>,
        tfidf: Vec<crate::core::fusion::Scored>,
        dense: Vec<crate::core::fusion::Scored>,
    ) -> Self {
        let candidates = Candidates::new(&dense, &bm25);
        let tfidf_candidates = Candidates::new(&dense, &tfidf);
        Self {
            bm25,
            tfidf,
            dense,
            candidates,
            tfidf_candidates,
            rerank: Vec::new(),
        }
    }

    /// The rerank score of `id`, if the stage read it.
    pub fn rerank_score(&self, id: &str) -> Option<f64> {
        self.rerank.iter().find(|s| s.id == id).map(|s| s.score)
    }

    /// The chunk ids the three lists hold, dense then BM25 then TF-IDF (a chunk in
    /// several lists comes once per list).
    pub fn chunk_ids(&self) -> impl Iterator<Item = &str> {
        self.dense
            .iter()
            .chain(&self.bm25)
            .chain(&self.tfidf)
            .map(|s| s.id.as_str())
    }

    /// The lists cut to their first `depth` entries, as an evaluation at that depth
    /// ranks (fusion sees only what each retriever returned).
    pub fn truncated(&self, depth: usize) -> Self {
        let cut = |l: &[crate::core::fusion::Scored]| l.iter().take(depth).cloned().collect();
        let mut out = Self::new(cut(&self.bm25), cut(&self.tfidf), cut(&self.dense));
        out.rerank.clone_from(&self.rerank);
        out
    }

    /// The fusion candidates of dense with `sparse`.
    pub fn candidates_with(&self, sparse: Sparse) -> &Candidates {
        match sparse {
            Sparse::Bm25 => &self.candidates,
            Sparse::Tfidf => &self.tfidf_candidates,
        }
    }

    /// The single list of a single-list method.
    fn list(&self, method: Method) -> &[crate::core::fusion::Scored] {
        match method {
            Method::Bm25 => &self.bm25,
            Method::Tfidf => &self.tfidf,
            _ => &self.dense,
        }
    }

    /// The ranked ids of `method` fused with BM25 (alpha: dense weight for
    /// hybrid/linear).
    pub fn ranking(&self, method: Method, alpha: f64) -> Vec<&str> {
        self.ranking_for(RunConfig::new(method, Sparse::Bm25, alpha))
    }

    /// The ranked ids of one configuration, reranked when it has a rerank stage.
    pub fn ranking_for(&self, cfg: RunConfig) -> Vec<&str> {
        let first: Vec<&str> = match cfg.fusion() {
            Some(f) => self.candidates_with(cfg.sparse).fused_ids(f),
            None => self
                .list(cfg.method)
                .iter()
                .map(|s| s.id.as_str())
                .collect(),
        };
        match cfg.rerank {
            Some(cut) => crate::core::rerank::rerank_by(&first, |id| self.rerank_score(id), cut),
            None => first,
        }
    }

    /// The ranked (id, score) pairs of one configuration: the list's own scores, or
    /// the fused score for hybrid and linear (what a TREC run file holds).
    pub fn scored(&self, cfg: RunConfig) -> Vec<(String, f64)> {
        if cfg.rerank.is_some() {
            // The rerank score; a chunk the stage did not read (never the case when
            // the service scored the lists) gets 0.
            return self
                .ranking_for(cfg)
                .into_iter()
                .map(|id| (id.to_string(), self.rerank_score(id).unwrap_or(0.0)))
                .collect();
        }
        match cfg.fusion() {
            Some(f) => self
                .candidates_with(cfg.sparse)
                .fuse(f)
                .into_iter()
                .map(|h| (h.id, h.fused))
                .collect(),
            None => self
                .list(cfg.method)
                .iter()
                .map(|s| (s.id.clone(), s.score))
                .collect(),
        }
    }
}

/// Recall and nDCG of one query at one cutoff.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct AtK {
    pub k: usize,
    pub recall: f64,
    pub ndcg: f64,
}

/// One evaluated query.
#[derive(Debug, Clone, Serialize)]
pub struct QueryOutcome {
    pub qid: String,
    pub metrics: QueryMetrics,
    /// Recall@k and nDCG@k at each cutoff asked.
    pub at_k: Vec<AtK>,
    /// bpref, Judged@k and Hole@k at the same cutoffs, when the evaluation measures
    /// incomplete judgements (its judgements come from a qrels file).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judged: Option<JudgedMeasures>,
}

/// The judgements of a query that has at least one relevant document.
pub fn judged<'a>(qrels: &'a HashMap<String, Qrel>, qid: &str) -> Option<&'a Qrel> {
    qrels.get(qid).filter(|q| q.values().any(|&r| r > 0))
}

/// Evaluate one configuration over all queries, with recall and nDCG at each cutoff
/// of `ks`. Queries without relevant documents are dropped, and so are queries whose
/// result list is empty: they are absent from the method's run, and trec_eval
/// (without `-c`) averages over the queries of the run only ([`empty_results`] names
/// them).
pub fn evaluate(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    cfg: RunConfig,
    ks: &[usize],
) -> Vec<QueryOutcome> {
    evaluate_judged(lists, qrels, cfg, ks, None)
}

/// [`evaluate`], each outcome also carrying bpref, Judged@k and Hole@k at the cutoffs
/// `ks` when `docs` (every document the qrels judge, what Hole@k counts against) is
/// given.
pub fn evaluate_judged(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    cfg: RunConfig,
    ks: &[usize],
    docs: Option<&JudgedDocs>,
) -> Vec<QueryOutcome> {
    lists
        .iter()
        .filter_map(|(qid, l)| {
            let q = judged(qrels, qid)?;
            let ranking = l.ranking_for(cfg);
            (!ranking.is_empty()).then(|| match docs {
                Some(docs) => judged_outcome(qid, &ranking, q, ks, docs),
                None => outcome(qid, &ranking, q, ks),
            })
        })
        .collect()
}

/// The outcome of one query's ranked document ids (already ordered) against its
/// judgements, with recall and nDCG at each cutoff of `ks`.
pub fn outcome(qid: &str, ranking: &[&str], q: &Qrel, ks: &[usize]) -> QueryOutcome {
    QueryOutcome {
        qid: qid.to_string(),
        metrics: query_metrics(ranking, q),
        at_k: ks
            .iter()
            .map(|&k| AtK {
                k,
                recall: recall_at(ranking, q, k),
                ndcg: ndcg_at(ranking, q, k),
            })
            .collect(),
        judged: None,
    }
}

/// [`outcome`] with bpref, and Judged@k and Hole@k at each cutoff of `ks`, Hole@k
/// counted against `docs` (every document the qrels judge).
pub fn judged_outcome(
    qid: &str,
    ranking: &[&str],
    q: &Qrel,
    ks: &[usize],
    docs: &JudgedDocs,
) -> QueryOutcome {
    QueryOutcome {
        judged: Some(judged_measures(ranking, q, docs, ks)),
        ..outcome(qid, ranking, q, ks)
    }
}

/// Mean recall@k and nDCG@k over `outcomes` at each cutoff they were evaluated at
/// (0 without outcomes).
pub fn mean_at_k(outcomes: &[QueryOutcome], ks: &[usize]) -> Vec<AtK> {
    let n = outcomes.len().max(1) as f64;
    ks.iter()
        .enumerate()
        .map(|(i, &k)| {
            let (r, g) = outcomes
                .iter()
                .filter_map(|o| o.at_k.get(i))
                .fold((0.0, 0.0), |(r, g), a| (r + a.recall, g + a.ndcg));
            AtK {
                k,
                recall: r / n,
                ndcg: g / n,
            }
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
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
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
        let ks = [1, 2];
        let bm25 = evaluate(&lists, &qrels, RunConfig::single(Method::Bm25), &ks);
        assert_eq!(bm25.len(), 1);
        assert_eq!(bm25[0].metrics.rr, 0.5);
        let dense = evaluate(&lists, &qrels, RunConfig::single(Method::Dense), &ks);
        assert_eq!(dense[0].metrics.p1, 1.0);
        // Hybrid at alpha 0.7: t = .7/61 + .3/62 beats a = .7/62 + .3/61.
        let hybrid = evaluate(
            &lists,
            &qrels,
            RunConfig::new(Method::Hybrid, Sparse::Bm25, 0.7),
            &ks,
        );
        assert_eq!(hybrid[0].metrics.p1, 1.0);
        assert_eq!(failures(&bm25, 1).len(), 1);
        assert_eq!(failures(&dense, 1).len(), 0);
    }

    /// The sparse side decides what dense is fused with. q: target t; dense [a, t],
    /// BM25 [a], TF-IDF [t, a]. At alpha 0.5 with BM25: a = .5/61 + .5/61 beats
    /// t = .5/62; with TF-IDF: t = .5/62 + .5/61 beats a = .5/61 + .5/62 only by the
    /// id tie-break (equal scores, ids descending: t before a).
    #[test]
    fn sparse_side_changes_the_fused_ranking() {
        let lists = vec![(
            "q".to_string(),
            QueryLists::new(l(&["a"]), l(&["t", "a"]), l(&["a", "t"])),
        )];
        let qrels: HashMap<String, Qrel> = [(
            "q".to_string(),
            [("t".to_string(), 1)].into_iter().collect(),
        )]
        .into_iter()
        .collect();
        let ks = [1, 2, 3];
        let with = |sparse| {
            evaluate(
                &lists,
                &qrels,
                RunConfig::new(Method::Hybrid, sparse, 0.5),
                &ks,
            )
        };
        let bm25 = with(Sparse::Bm25);
        assert_eq!(bm25[0].metrics.first_relevant_rank, Some(2));
        let tfidf = with(Sparse::Tfidf);
        assert_eq!(tfidf[0].metrics.first_relevant_rank, Some(1));
        assert_eq!(
            lists[0]
                .1
                .ranking_for(RunConfig::new(Method::Hybrid, Sparse::Tfidf, 0.5)),
            vec!["t", "a"]
        );
        // nDCG@k follows k: target at rank 2 gives 0 at k = 1, 1/log2(3) from k = 2.
        let at = mean_at_k(&bm25, &ks);
        assert_eq!((at[0].k, at[0].recall, at[0].ndcg), (1, 0.0, 0.0));
        assert!((at[1].ndcg - 1.0 / 3f64.log2()).abs() < 1e-15);
        assert_eq!(at[1].recall, 1.0);
        assert!((at[2].ndcg - 1.0 / 3f64.log2()).abs() < 1e-15);
        // The run file scores: RRF with the TF-IDF ranks.
        let scored = lists[0]
            .1
            .scored(RunConfig::new(Method::Hybrid, Sparse::Tfidf, 0.5));
        assert!((scored[0].1 - (0.5 / 62.0 + 0.5 / 61.0)).abs() < 1e-15);
    }

    #[test]
    fn configurations_are_named_by_every_part() {
        let h = RunConfig::new(Method::Hybrid, Sparse::Tfidf, 0.75);
        assert_eq!(
            h.file_stem(Some("all-MiniLM-L6-v2.F16")),
            "hybrid-tfidf-a0.75-all-MiniLM-L6-v2"
        );
        assert_eq!(
            RunConfig::new(Method::Linear, Sparse::Bm25, 0.5).file_stem(Some("m.Q4_K_M")),
            "linear-bm25-a0.50-m"
        );
        assert_eq!(RunConfig::single(Method::Bm25).file_stem(Some("m")), "bm25");
        assert_eq!(
            RunConfig::single(Method::Dense).file_stem(Some("m")),
            "dense-m"
        );
        assert_eq!(
            model_short_name("bge-small-en-v1.5.Q8_0"),
            "bge-small-en-v1.5"
        );
        assert_eq!(model_short_name("bge-small-en-v1.5"), "bge-small-en-v1.5");
        assert_eq!(model_short_name("a b/c"), "a_b_c");
        assert_eq!("tfidf".parse::<Sparse>(), Ok(Sparse::Tfidf));
        assert!("dense".parse::<Sparse>().is_err());
        assert_eq!(Method::Linear.default_alpha().get(), 0.5);
        assert_eq!(Method::Hybrid.default_alpha().get(), 0.7);
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
