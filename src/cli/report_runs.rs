//! `raglab report runs`: the runs matrix, as text or JSON (`raglab.runs/1`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::service::Context;
use crate::service::report::{RunRow, RunsMatrix, RunsRequest, runs_matrix, sort_rows};

#[derive(Debug, Args)]
pub struct RunsMatrixArgs {
    /// The quality column of the Pareto marks and the baseline comparison: a
    /// retrieval metric (`nDCG@10`, `Recall@10`) or a judge criterion (default: nDCG@10
    /// when the workspace has a retrieval evaluation, else the first criterion).
    #[arg(long)]
    pub quality: Option<String>,
    /// Pin this row as the baseline: rows of its kind get the paired difference, its
    /// clustered 95% interval and a Holm-adjusted p.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Sort by `label`, `kind`, `latency`, `tokens` or a quality column.
    #[arg(long)]
    pub sort: Option<String>,
    /// A file of `query-id cluster` lines for the retrieval rows' intervals.
    #[arg(long, value_name = "FILE")]
    pub clusters: Option<PathBuf>,
    /// Print the matrix as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(
    ctx: &Context,
    args: RunsMatrixArgs,
    viewer: &crate::service::study::Viewer,
) -> Result<()> {
    let sight = crate::service::study::sight(ctx, viewer).await?;
    let req = RunsRequest {
        quality: args.quality.clone(),
        baseline: args.baseline.clone(),
        clusters: args.clusters.clone(),
    };
    let mut m = runs_matrix(ctx, &req, &sight).await?;
    if let Some(col) = &args.sort {
        sort_rows(&mut m.rows, col)?;
    }
    if args.json {
        return json_schema::print(json_schema::RUNS, &m);
    }
    print_text(&m);
    Ok(())
}

fn print_text(m: &RunsMatrix) {
    say!(
        "{} run(s); quality column {} (mean [95% CI, clustered]); clusters: {}",
        m.rows.len(),
        m.quality,
        m.clusters
    );
    say!(
        "{:<28} {:<9} {:<34} {:>5} {:>26} {:>9} {:>10}  {}",
        "run",
        "kind",
        "pipeline",
        "n",
        m.quality,
        "tokens",
        "p50 ms",
        "pareto / against baseline"
    );
    for r in &m.rows {
        let q = r.quality.get(&m.quality).map_or("-".to_string(), |e| {
            format!(
                "{:.4} [{:.4}, {:.4}]",
                e.mean, e.interval.ci.0, e.interval.ci.1
            )
        });
        let tokens = match (r.cost.prompt_tokens, r.cost.output_tokens) {
            (Some(p), Some(o)) => format!("{:.0}", p + o),
            _ => "-".into(),
        };
        say!(
            "{:<28} {:<9} {:<34} {:>5} {:>26} {:>9} {:>10}  {}",
            r.label,
            r.kind,
            r.pipeline_short(),
            r.questions,
            q,
            tokens,
            latency_text(r),
            mark_text(r, &m.quality, m.baseline.as_deref())
        );
    }
    print_corrected(m);
    say!();
    say!(
        "pareto: `front` when no other row is at least as good on quality, latency and tokens and better on one; `dominated by X` otherwise"
    );
    if m.baseline.is_some() {
        say!(
            "against baseline: difference [clustered 95% CI], p Holm-adjusted over {}; mde: the smallest difference this question set detects (80% power)",
            m.holm_family
        );
    }
    for n in &m.notes {
        say!("note: {n}");
    }
}

/// The answer rows' pass rates corrected by the study's human labels, one line per
/// run and criterion (nothing without such labels).
fn print_corrected(m: &RunsMatrix) {
    let rows: Vec<&RunRow> = m.rows.iter().filter(|r| !r.corrected.is_empty()).collect();
    if rows.is_empty() {
        return;
    }
    say!();
    say!("judge pass rates corrected by the study's final human labels (95% intervals):");
    let iv = |i: Option<&crate::core::study::correction::Interval>| {
        i.map_or("-".to_string(), |i| {
            format!("{:.3} [{:.3}, {:.3}]", i.estimate, i.low, i.high)
        })
    };
    for r in rows {
        for (criterion, c) in &r.corrected {
            say!(
                "  {} / {criterion}: raw judge {:.3} · {} human, {} judge-only · sens {} · spec {} · PPI {} · PPI++ {} · Rogan-Gladen {}{}",
                r.label,
                c.raw_judge,
                c.n_human,
                c.n_judge_only,
                iv(c.sensitivity.as_ref()),
                iv(c.specificity.as_ref()),
                iv(c.ppi.as_ref().map(|p| &p.interval)),
                iv(c.ppi_plus.as_ref().map(|p| &p.interval)),
                iv(c.rogan_gladen.as_ref()),
                if c.too_few {
                    " (too few human labels)"
                } else {
                    ""
                }
            );
        }
    }
}

/// The row's latency as the Pareto marks read it.
fn latency_text(r: &RunRow) -> String {
    match r.cost.latency_ms.get("total") {
        Some(t) => t
            .p50
            .map_or(format!("{:.0}", t.mean), |p| format!("{p:.0}")),
        None if r.cost.latency_ms.is_empty() => "-".into(),
        None => format!(
            "{:.1}",
            r.cost.latency_ms.values().map(|l| l.mean).sum::<f64>()
        ),
    }
}

/// The Pareto mark and the difference from the baseline.
fn mark_text(r: &RunRow, quality: &str, baseline: Option<&str>) -> String {
    let pareto = match &r.dominated_by {
        Some(d) => format!("dominated by {d}"),
        None if r.quality.contains_key(quality) => "front".to_string(),
        None => "- (no such column)".to_string(),
    };
    if baseline == Some(r.label.as_str()) {
        return format!("{pareto} · baseline");
    }
    match &r.against_baseline {
        Some(d) => format!(
            "{pareto} · {:+.4} [{:+.4}, {:+.4}] p {:.3} ({}) mde {:.4}",
            d.difference, d.interval.ci.0, d.interval.ci.1, d.p_holm, d.test, d.interval.mde_80
        ),
        None => pareto,
    }
}
