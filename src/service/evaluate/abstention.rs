//! The abstention sweep: how often answerable and unanswerable questions fall below
//! each threshold of the best dense cosine, and the threshold with the best Youden's J.

use std::path::Path;

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use crate::core::abstention::{SweepRow, best, grid, sweep};
use crate::service::base::{Context, ModelChoice};
use crate::service::retrieval::Retriever;

/// The abstention sweep over two question sets.
#[derive(Debug, Clone, Serialize)]
pub struct AbstentionReport {
    pub model: Option<String>,
    pub answerable: usize,
    pub unanswerable: usize,
    pub median_best_cosine: MedianCosines,
    pub rows: Vec<SweepRow>,
    pub best: Option<SweepRow>,
}

#[derive(Debug, Clone, Copy, Serialize)]
pub struct MedianCosines {
    pub answerable: f64,
    pub unanswerable: f64,
}

/// Best dense cosine of each question in a questions file (`{text}` suffices).
fn best_cosines(r: &Retriever, path: &Path) -> Result<Vec<f64>> {
    crate::service::base::read_texts(path)?
        .iter()
        .map(|text| {
            let (lists, _) = r.query(text, 1)?;
            lists
                .dense
                .first()
                .map(|s| s.score)
                .context("no dense list: build the embeddings with `raglab index`")
        })
        .collect()
}

fn median(v: &[f64]) -> f64 {
    crate::core::stats::quantile(v, 0.5).unwrap_or(f64::NAN)
}

/// How often answerable and unanswerable questions fall below each threshold of
/// `from..=to` by `step`, and the threshold with the best Youden's J.
pub async fn abstention_sweep(
    ctx: &Context,
    answerable: &Path,
    unanswerable: &Path,
    (from, to, step): (f64, f64, f64),
    embed: &ModelChoice,
) -> Result<AbstentionReport> {
    let r = Retriever::open(&ctx.workspace, Some(&ctx.embed_config(embed)?)).await?;
    if !r.is_fresh() || !r.has_dense() {
        bail!("the embeddings are missing or out of date: run `raglab index` first");
    }
    let a = best_cosines(&r, answerable)?;
    let u = best_cosines(&r, unanswerable)?;
    let rows = sweep(&a, &u, &grid(from, to, step));
    let top = best(&rows).cloned();
    Ok(AbstentionReport {
        model: r.model_name.clone(),
        answerable: a.len(),
        unanswerable: u.len(),
        median_best_cosine: MedianCosines {
            answerable: median(&a),
            unanswerable: median(&u),
        },
        rows,
        best: top,
    })
}
