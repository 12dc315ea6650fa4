//! `raglab gate`: the regression check a CI job calls. Exit 0 when the candidate is
//! shown non-inferior to the baseline, 1 when it is not, 2 on bad input or usage (a
//! clear message, nothing written).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{Exit, json_schema};
use crate::service::Context;
use crate::service::evaluate::{GateReport, GateRequest, gate};

#[derive(Debug, Args)]
pub struct GateArgs {
    /// The baseline: a configuration label of the last `eval retrieval`
    /// (`hybrid-bm25-a0.70`), or a TREC run file with --qrels.
    #[arg(long)]
    pub baseline: String,
    /// The candidate, named the same way.
    #[arg(long)]
    pub candidate: String,
    /// Qrels (TREC or BEIR): the baseline and candidate are TREC run files.
    #[arg(long)]
    pub qrels: Option<PathBuf>,
    /// The metric the gate decides on.
    #[arg(long, default_value = "nDCG@10")]
    pub metric: String,
    /// Non-inferiority margin D, in the metric's units: the candidate passes when the
    /// lower end of the interval of (candidate - baseline) lies above -D.
    #[arg(long, default_value_t = 0.01)]
    pub margin: f64,
    /// The interval is two-sided at level 1 - alpha.
    #[arg(long, default_value_t = 0.05)]
    pub alpha: f64,
    /// A file of `query-id cluster` lines (default: each question's `cluster` field or
    /// target document; with --qrels, each query's first relevant document).
    #[arg(long, value_name = "FILE")]
    pub clusters: Option<PathBuf>,
    /// Cutoffs the run files are scored at (with --qrels; the metric's own is added).
    #[arg(long, value_delimiter = ',', default_value = "1,5,10")]
    pub k: Vec<usize>,
    /// Also write the verdict as JUnit XML.
    #[arg(long, value_name = "FILE")]
    pub junit: Option<PathBuf>,
    /// Also write a Markdown summary (for a pull request).
    #[arg(long, value_name = "FILE")]
    pub markdown: Option<PathBuf>,
    /// Print the report as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: GateArgs) -> Result<()> {
    let req = GateRequest {
        baseline: args.baseline.clone(),
        candidate: args.candidate.clone(),
        qrels: args.qrels.clone(),
        metric: args.metric.clone(),
        ks: args.k.clone(),
        margin: args.margin,
        alpha: args.alpha,
        clusters: args.clusters.clone(),
    };
    let rep = gate(ctx, &req).map_err(|e| Exit::usage(format!("{e:#}")))?;
    write_files(&rep, &args).map_err(|e| Exit::usage(format!("{e:#}")))?;
    if args.json {
        json_schema::print(json_schema::GATE, &rep)?;
    } else {
        print_text(&rep);
    }
    if rep.verdict.pass {
        Ok(())
    } else {
        Err(Exit::quiet(1).into())
    }
}

/// The JUnit and Markdown files, when asked for.
fn write_files(rep: &GateReport, args: &GateArgs) -> Result<()> {
    if let Some(path) = &args.junit {
        crate::service::base::write_whole(path, rep.junit().as_bytes())?;
    }
    if let Some(path) = &args.markdown {
        crate::service::base::write_whole(path, rep.markdown().as_bytes())?;
    }
    Ok(())
}

fn print_text(rep: &GateReport) {
    let v = &rep.verdict;
    let d = &v.difference;
    say!("{}", rep.source);
    say!(
        "{} against {} on {}: {:.4} vs {:.4}, difference {:+.4}",
        rep.candidate,
        rep.baseline,
        rep.metric,
        rep.candidate_mean,
        rep.baseline_mean,
        d.mean
    );
    say!(
        "{:.0}% interval (clustered) [{:+.4}, {:+.4}]; passes when the lower end is above {:+.4} (margin {})",
        100.0 * (1.0 - v.alpha),
        v.lower,
        v.upper,
        -v.margin,
        v.margin
    );
    say!(
        "se clustered {} · naive {:.4} · design effect {} · clusters: {}",
        d.se_clustered.map_or("-".into(), |s| format!("{s:.4}")),
        d.se_naive,
        d.design_effect.map_or("-".into(), |x| format!("{x:.3}")),
        rep.clusters_from
    );
    say!(
        "this question set can detect differences of {:.4} or more (80% power, two-sided 5%)",
        v.mde_80
    );
    say!(
        "gate: {} (one-sided p {:.4})",
        if v.pass {
            "PASS"
        } else {
            "FAIL: not shown non-inferior"
        },
        v.p_one_sided
    );
}
