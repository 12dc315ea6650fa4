//! `eval retrieval --variants F,S,R`: the retrieval evaluation once per corpus variant
//! (and per embedding model with `--embed-models`), compared in one report with the
//! best (method, sparse side, alpha) per embedding model and variant for each metric:
//! the optimal retrieval setup (method, corpus, alpha) of each model.

use std::path::PathBuf;

use anyhow::Result;
use serde::Serialize;

use super::models::{BestConfig, best_configs, label_scores, suffixed};
use super::retrieval::{RetrievalEval, RetrievalReport, evaluate_scored};
use crate::core::retrieval::METRICS;
use crate::core::variant::Variant;
use crate::service::base::{Context, Progress};

/// The best configuration of one model on one variant for one metric.
#[derive(Debug, Clone, Serialize)]
pub struct VariantBest {
    pub variant: Variant,
    #[serde(flatten)]
    pub best: BestConfig,
}

/// One report per (model, variant), in the order asked, the best configurations per
/// model, variant and metric, and per model and metric the best over the variants.
#[derive(Debug, Clone, Serialize)]
pub struct VariantsReport {
    pub reports: Vec<RetrievalReport>,
    pub best: Vec<VariantBest>,
    pub best_overall: Vec<VariantBest>,
}

/// Evaluate `req` on each variant of `variants`, with each model of `models` (none:
/// the request's model). Run files of C_S and C_R go into subfolders `C_S/`, `C_R/` of
/// `--run-out`; a per-query file gets `-variant-V` before its extension. The failures
/// file and the Evaluation pane's report hold the last evaluation's; the per-query
/// scores `compare` reads hold every evaluation's configurations.
pub async fn evaluate_variants(
    ctx: &Context,
    req: &RetrievalEval,
    models: &[PathBuf],
    variants: &[Variant],
    progress: Progress<'_>,
) -> Result<VariantsReport> {
    let models: Vec<Option<PathBuf>> = if models.is_empty() {
        vec![req.embed.model.clone()]
    } else {
        models.iter().cloned().map(Some).collect()
    };
    let mut reports = Vec::new();
    let mut best = Vec::new();
    let mut tables = Vec::new();
    for model in &models {
        for &variant in variants {
            let mut one = req.clone();
            one.variant = variant;
            one.embed.model.clone_from(model);
            if let Some(m) = model {
                let name = crate::infer::backend::model_name(m);
                one.per_query = one.per_query.as_deref().map(|p| suffixed(p, &name));
            }
            if variant != Variant::Full {
                one.run_out = one.run_out.map(|d| d.join(variant.paper_name()));
                one.per_query = one
                    .per_query
                    .as_deref()
                    .map(|p| suffixed(p, &format!("variant-{variant}")));
            }
            let (rep, mut scores) = evaluate_scored(ctx, &one, progress).await?;
            let name = rep.embedding_model.clone().unwrap_or_else(|| "-".into());
            let model = (models.len() > 1).then_some(name.as_str());
            label_scores(&mut scores, &rep, model, Some(variant));
            tables.push(scores);
            best.extend(
                best_configs(&name, &rep)
                    .into_iter()
                    .map(|b| VariantBest { variant, best: b }),
            );
            reports.push(rep);
        }
    }
    super::significance::save_scores(ctx, &super::significance::merge_tables(tables)?)?;
    let best_overall = overall(&best);
    Ok(VariantsReport {
        reports,
        best,
        best_overall,
    })
}

/// Per model and metric, the best over every variant (ties: the first variant asked).
fn overall(best: &[VariantBest]) -> Vec<VariantBest> {
    let mut out: Vec<VariantBest> = Vec::new();
    for b in best {
        match out
            .iter_mut()
            .find(|o| o.best.model == b.best.model && o.best.metric == b.best.metric)
        {
            Some(o) if b.best.value > o.best.value => *o = b.clone(),
            Some(_) => {}
            None => out.push(b.clone()),
        }
    }
    // In METRICS order within each model.
    let rank = |m: &str| {
        METRICS
            .iter()
            .position(|(n, _)| *n == m)
            .unwrap_or(usize::MAX)
    };
    out.sort_by(|a, b| {
        a.best
            .model
            .cmp(&b.best.model)
            .then(rank(&a.best.metric).cmp(&rank(&b.best.metric)))
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::retrieval::Method;

    fn vb(variant: Variant, metric: &str, value: f64) -> VariantBest {
        VariantBest {
            variant,
            best: BestConfig {
                model: "m".into(),
                metric: metric.into(),
                method: Method::Hybrid,
                sparse: None,
                alpha: Some(0.5),
                value,
            },
        }
    }

    #[test]
    fn overall_keeps_the_best_variant_per_metric_and_the_first_on_ties() {
        let all = vec![
            vb(Variant::Full, "MRR", 0.70),
            vb(Variant::Full, "P@1", 0.60),
            vb(Variant::Summary, "MRR", 0.75),
            vb(Variant::Summary, "P@1", 0.60),
            vb(Variant::Reduced, "MRR", 0.74),
            vb(Variant::Reduced, "P@1", 0.59),
        ];
        let o = overall(&all);
        let got: Vec<(String, Variant, f64)> = o
            .iter()
            .map(|b| (b.best.metric.clone(), b.variant, b.best.value))
            .collect();
        assert_eq!(
            got,
            vec![
                ("P@1".to_string(), Variant::Full, 0.60),
                ("MRR".to_string(), Variant::Summary, 0.75)
            ]
        );
    }
}
