//! Which configurations an evaluation scores: the fused methods with each sparse side,
//! each at its sweep's best alpha, the flag's or the method's default, their reranked
//! copies, and the headline configuration whose failures are written.

use crate::core::retrieval::{METRICS, Method, RunConfig, Sparse};

use super::{BestAlpha, RetrievalEval, SweepPoint};

/// The best alpha of each fused method's sweep for each metric (ties: the smaller
/// alpha).
pub(super) fn best_alphas(sweep: &[SweepPoint]) -> Vec<BestAlpha> {
    let mut pairs: Vec<(Method, Sparse)> = Vec::new();
    for p in sweep {
        if !pairs.contains(&(p.method, p.sparse)) {
            pairs.push((p.method, p.sparse));
        }
    }
    pairs
        .into_iter()
        .flat_map(|(method, sparse)| {
            let points: Vec<&SweepPoint> = sweep
                .iter()
                .filter(|p| p.method == method && p.sparse == sparse)
                .collect();
            METRICS.iter().filter_map(move |(name, get)| {
                points
                    .iter()
                    .max_by(|a, b| {
                        get(&a.metrics)
                            .total_cmp(&get(&b.metrics))
                            .then(b.alpha.total_cmp(&a.alpha))
                    })
                    .map(|p| BestAlpha {
                        method,
                        sparse,
                        metric: (*name).to_string(),
                        alpha: p.alpha,
                        value: get(&p.metrics),
                    })
            })
        })
        .collect()
}

/// The fused methods asked for, each with every sparse side asked for.
pub(super) fn fused_pairs(req: &RetrievalEval) -> Vec<(Method, Sparse)> {
    let sparse = if req.sparse.is_empty() {
        vec![Sparse::default()]
    } else {
        req.sparse.clone()
    };
    req.methods
        .iter()
        .filter(|m| m.uses_alpha())
        .flat_map(|&m| sparse.iter().map(move |&s| (m, s)))
        .collect()
}

/// The configurations to evaluate: single-list methods once, fused ones with each
/// sparse side at the best nDCG@10 alpha of the sweep, else at `req.alpha`, else at
/// the method's default.
pub(super) fn configurations(req: &RetrievalEval, best: &[BestAlpha]) -> Vec<RunConfig> {
    let first = first_stage_configurations(req, best);
    match &req.rerank {
        Some(stage) => first
            .iter()
            .flat_map(|&c| [c, c.reranked(stage.cut)])
            .collect(),
        None => first,
    }
}

/// [`configurations`] without their reranked copies.
pub(super) fn first_stage_configurations(
    req: &RetrievalEval,
    best: &[BestAlpha],
) -> Vec<RunConfig> {
    let pairs = fused_pairs(req);
    req.methods
        .iter()
        .flat_map(|&m| {
            if !m.uses_alpha() {
                return vec![RunConfig::single(m)];
            }
            pairs
                .iter()
                .filter(|(pm, _)| *pm == m)
                .map(|&(_, s)| {
                    let alpha = best
                        .iter()
                        .find(|b| b.method == m && b.sparse == s && b.metric == "nDCG@10")
                        .map(|b| b.alpha)
                        .or(req.alpha)
                        .unwrap_or_else(|| m.default_alpha().get());
                    RunConfig::new(m, s, alpha)
                })
                .collect()
        })
        .collect()
}

/// The headline configuration, whose failures go to the failures file: the first of
/// hybrid, dense, BM25, TF-IDF, linear that was evaluated.
/// With a rerank stage, the reranked copy of that configuration.
pub(super) fn headline(configs: &[RunConfig]) -> Option<usize> {
    [
        Method::Hybrid,
        Method::Dense,
        Method::Bm25,
        Method::Tfidf,
        Method::Linear,
    ]
    .into_iter()
    .find_map(|m| {
        let of = |reranked: bool| {
            configs
                .iter()
                .position(|c| c.method == m && c.rerank.is_some() == reranked)
        };
        of(true).or_else(|| of(false))
    })
}
