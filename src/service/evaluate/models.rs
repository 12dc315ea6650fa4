//! `eval retrieval --embed-models A,B,...`: the retrieval evaluation once per embedding
//! model (each model's rank lists computed once and re-fused for every configuration),
//! and the best (method, sparse side, alpha) per model and metric, over every evaluated
//! configuration and every point of the alpha sweeps.

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Serialize;

use super::retrieval::{RetrievalEval, RetrievalReport, evaluate_scored};
use crate::core::metrics::MeanMetrics;
use crate::core::retrieval::{METRICS, Method, Sparse};
use crate::core::significance::ScoreTable;
use crate::service::base::{Context, Progress};

/// The best configuration of one model for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct BestConfig {
    pub model: String,
    pub metric: String,
    pub method: Method,
    /// The sparse side and weight (fused methods only).
    pub sparse: Option<Sparse>,
    pub alpha: Option<f64>,
    pub value: f64,
}

/// One report per model, in the order asked, and the best configurations.
#[derive(Debug, Clone, Serialize)]
pub struct ModelsReport {
    pub reports: Vec<RetrievalReport>,
    pub best: Vec<BestConfig>,
}

/// `path` with `-MODEL` before its extension: `pq.csv` -> `pq-all-MiniLM-L6-v2.csv`.
pub(super) fn suffixed(path: &Path, model: &str) -> PathBuf {
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    path.with_file_name(format!(
        "{stem}-{}{ext}",
        crate::core::retrieval::model_short_name(model)
    ))
}

/// The best configuration of a report for each metric: over its results (each at the
/// alpha it was evaluated at) and every point of its sweeps; ties go to the first
/// listed (results in the order asked, then the sweeps in alpha order).
pub fn best_configs(model: &str, rep: &RetrievalReport) -> Vec<BestConfig> {
    let candidates: Vec<(Method, Option<Sparse>, Option<f64>, &MeanMetrics)> = rep
        .results
        .iter()
        .filter_map(|r| {
            let m: Method = r.method.parse().ok()?;
            Some((m, r.sparse, r.alpha, &r.metrics))
        })
        .chain(
            rep.alpha_sweep
                .iter()
                .map(|p| (p.method, Some(p.sparse), Some(p.alpha), &p.metrics)),
        )
        .collect();
    METRICS
        .iter()
        .filter_map(|(name, get)| {
            let best = candidates
                .iter()
                .reduce(|a, b| if get(b.3) > get(a.3) { b } else { a })?;
            Some(BestConfig {
                model: model.to_string(),
                metric: (*name).to_string(),
                method: best.0,
                sparse: best.1,
                alpha: best.2,
                value: get(best.3),
            })
        })
        .collect()
}

/// Evaluate `req` with each embedding model of `models`. Run files are named by model
/// already; a per-query file gets the model's name before its extension. The failures
/// file holds the last model's failures; the per-query scores `compare` reads hold
/// every model's configurations ([`label_scores`]).
pub async fn evaluate_models(
    ctx: &Context,
    req: &RetrievalEval,
    models: &[PathBuf],
    progress: Progress<'_>,
) -> Result<ModelsReport> {
    let mut reports = Vec::new();
    let mut best = Vec::new();
    let mut tables = Vec::new();
    for model in models {
        let name = crate::infer::backend::model_name(model);
        let mut one = req.clone();
        one.embed.model = Some(model.clone());
        one.per_query = req.per_query.as_deref().map(|p| suffixed(p, &name));
        let (rep, mut scores) = evaluate_scored(ctx, &one, progress).await?;
        let model_name = rep.embedding_model.clone().unwrap_or_else(|| name.clone());
        label_scores(&mut scores, &rep, Some(&model_name), None);
        tables.push(scores);
        best.extend(best_configs(&model_name, &rep));
        reports.push(rep);
    }
    super::significance::save_scores(ctx, &super::significance::merge_tables(tables)?)?;
    Ok(ModelsReport { reports, best })
}

/// Name each configuration of one evaluation's scores by what sets it apart when
/// several evaluations are kept as one table for `compare`: the embedding model after
/// the label of a method that uses it (`dense-all-MiniLM-L6-v2`; BM25 and TF-IDF keep
/// their bare label, the same ranking under every model), and the corpus variant
/// after every label but C_F's (`bm25-C_S`).
pub(super) fn label_scores(
    scores: &mut ScoreTable,
    rep: &RetrievalReport,
    model: Option<&str>,
    variant: Option<crate::core::variant::Variant>,
) {
    for (run, result) in scores.runs.iter_mut().zip(&rep.results) {
        let dense = result
            .method
            .parse::<Method>()
            .is_ok_and(Method::needs_dense);
        if let Some(m) = model.filter(|_| dense) {
            run.label = format!(
                "{}-{}",
                run.label,
                crate::core::retrieval::model_short_name(m)
            );
        }
        if let Some(v) = variant.filter(|v| *v != crate::core::variant::Variant::Full) {
            run.label = format!("{}-{}", run.label, v.paper_name());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_query_files_are_named_by_model() {
        assert_eq!(
            suffixed(Path::new("out/pq.csv"), "all-MiniLM-L6-v2.F16"),
            Path::new("out/pq-all-MiniLM-L6-v2.csv")
        );
        assert_eq!(suffixed(Path::new("pq"), "m"), Path::new("pq-m"));
    }
}
