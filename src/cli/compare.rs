//! `raglab compare` (the configurations of the last `eval retrieval`) and the shared
//! rendering of `eval runs`: each run's means (and, beside them, its bpref, Judged@k
//! and Hole@k when the table has them), then per metric each comparison's mean
//! difference with its bootstrap CI, wins / ties / losses, the randomisation and t-test
//! p-values and their Holm adjustments, as text or JSON.

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::core::significance::TestSettings;
use crate::service::Context;
use crate::service::evaluate::{CompareRequest, ComparisonReport, compare_last};

/// How to compare (shared by `compare` and `eval runs`).
#[derive(Debug, Args)]
pub struct TestArgs {
    /// Compare every other run with this one (else every pair).
    #[arg(long)]
    pub baseline: Option<String>,
    /// Metrics to compare (comma-separated, e.g. `nDCG@10,MRR`; default: every
    /// effectiveness metric; bpref, Judged@k and Hole@k only when named).
    #[arg(long, value_delimiter = ',')]
    pub metrics: Vec<String>,
    /// Sign-flip permutations of the randomisation test.
    #[arg(long, default_value_t = TestSettings::default().permutations)]
    pub permutations: usize,
    /// Bootstrap resamples for the 95% CI of the mean difference.
    #[arg(long, default_value_t = TestSettings::default().resamples)]
    pub resamples: usize,
    /// Seed of the permutations and resamples (reported).
    #[arg(long, default_value_t = TestSettings::default().seed)]
    pub seed: u64,
    /// Worker threads; 0 is one per core.
    #[arg(long, default_value_t = 0)]
    pub threads: usize,
    /// An earlier comparison of the same configurations (`--json` output, e.g. before
    /// the qrels grew): name the conclusions that changed, a lead that flipped or a
    /// difference that gained or lost significance (Holm randomisation p < 0.05).
    #[arg(long, value_name = "FILE")]
    pub before: Option<std::path::PathBuf>,
    /// A file of `query-id cluster` lines for the clustered standard errors (default:
    /// each question's `cluster` field or target document; for run files, each query's
    /// first relevant document).
    #[arg(long, value_name = "FILE")]
    pub clusters: Option<std::path::PathBuf>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

impl TestArgs {
    pub fn request(&self) -> CompareRequest {
        CompareRequest {
            baseline: self.baseline.clone(),
            metrics: self.metrics.clone(),
            settings: TestSettings {
                resamples: self.resamples,
                permutations: self.permutations,
                seed: self.seed,
            },
            threads: self.threads,
            clusters: self.clusters.clone(),
        }
    }
}

pub async fn run(ctx: &Context, args: TestArgs) -> Result<()> {
    let mut rep = compare_last(ctx, &args.request())?;
    if let Some(before) = &args.before {
        crate::service::evaluate::against_before(&mut rep, before)?;
    }
    render(&rep, args.json)
}

/// Print `rep` as JSON or as text tables.
pub fn render(rep: &ComparisonReport, json: bool) -> Result<()> {
    if json {
        return json_schema::print(json_schema::COMPARISON, rep);
    }
    say!("{}", rep.source);
    say!(
        "{} judged queries (a run that retrieved nothing for one scores 0 on it); bootstrap {} resamples, {} permutations, seed {}",
        rep.queries,
        rep.settings.resamples,
        rep.settings.permutations,
        rep.settings.seed
    );
    say!();
    say_part!("{:<34}", "run");
    for m in &rep.metrics {
        say_part!(" {m:>10}");
    }
    say!(" {:>7}", "absent");
    for r in &rep.runs {
        say_part!("{:<34}", r.label);
        for m in &rep.metrics {
            say_part!(" {:>10.4}", r.means.get(m).copied().unwrap_or(f64::NAN));
        }
        say!(" {:>7}", r.absent);
    }
    render_judged(rep);
    for m in &rep.metrics {
        say!();
        say!(
            "{m}: candidate - baseline     diff  [95% CI]               W/T/L            p_rand   holm     t        p_t      holm"
        );
        for row in rep.rows.iter().filter(|r| &r.metric == m) {
            let c = &row.result;
            let (lo, hi) = c.ci.unwrap_or((f64::NAN, f64::NAN));
            let t = c.t_test.map_or("-".into(), |t| format!("{:.3}", t.t));
            let p_t = c.t_test.map_or("-".into(), |t| p_value(t.p));
            let p_th = c.t_test_p_holm.map_or("-".into(), p_value);
            say!(
                "  {:<22} {:<22} {:>+8.4} [{:>+8.4}, {:>+8.4}] {:>5}/{:>5}/{:>5} {:>8} {:>8} {:>8} {:>8} {:>8}",
                row.candidate,
                row.baseline,
                c.difference,
                lo,
                hi,
                c.record.wins,
                c.record.ties,
                c.record.losses,
                p_value(c.randomisation_p),
                p_value(c.randomisation_p_holm),
                t,
                p_t,
                p_th
            );
        }
    }
    render_clustered(rep);
    render_changed(rep);
    say!();
    say!("Holm: {}", rep.holm_family);
    say!(
        "p_rand = (1 + #{{|S*| >= |S|}}) / (1 + permutations), two-sided; p_t: paired t-test, two-sided ({:.2} s)",
        rep.seconds
    );
    Ok(())
}

/// Each difference's standard errors with questions clustered, its normal 95% interval
/// and the smallest difference the question set detects (nothing for a comparison
/// without them).
fn render_clustered(rep: &ComparisonReport) {
    if rep.rows.iter().all(|r| r.clustered.is_none()) {
        return;
    }
    say!();
    say!("clustered by question: {}", rep.clusters);
    say!(
        "  {:<10} {:<22} {:<22} {:>8} {:>8} {:>6} {:>21} {:>8}",
        "metric",
        "candidate",
        "baseline",
        "se_naive",
        "se_clust",
        "deff",
        "95% CI (clustered)",
        "mde_80"
    );
    for row in &rep.rows {
        let Some(c) = &row.clustered else { continue };
        say!(
            "  {:<10} {:<22} {:<22} {:>8.4} {:>8} {:>6} [{:>+8.4}, {:>+8.4}] {:>8.4}",
            row.metric,
            row.candidate,
            row.baseline,
            c.se_naive,
            c.se_clustered.map_or("-".into(), |s| format!("{s:.4}")),
            c.design_effect.map_or("-".into(), |d| format!("{d:.2}")),
            c.ci.0,
            c.ci.1,
            c.mde_80
        );
    }
    say!(
        "  se_clust: cluster-robust (CR1) standard error of the mean difference; deff = (se_clust / se_naive)^2; mde_80: this question set can detect differences of that size or more (80% power, two-sided 5%)"
    );
}

/// The conclusions that changed since `--before` (nothing without it).
fn render_changed(rep: &ComparisonReport) {
    let Some(c) = &rep.changed else {
        return;
    };
    say!();
    if c.changes.is_empty() {
        say!(
            "No conclusion changed against {} ({} comparison(s) matched, {} new): every lead and its significance at Holm p < {} held.",
            c.before,
            c.matched,
            c.unmatched,
            c.level
        );
        return;
    }
    say!(
        "Conclusions that changed against {} ({} of {} matched comparison(s); {} new): lead = the sign of candidate - baseline, significant = Holm randomisation p < {}",
        c.before,
        c.changes.len(),
        c.matched,
        c.unmatched,
        c.level
    );
    for x in &c.changes {
        say!(
            "  {}: {} vs {}: {} (diff {:+.4} -> {:+.4}, p Holm {} -> {})",
            x.metric,
            x.candidate,
            x.baseline,
            x.change,
            x.difference_before,
            x.difference_after,
            p_value(x.p_holm_before),
            p_value(x.p_holm_after)
        );
    }
}

/// The incomplete-judgement measures' means, one row per run (nothing when the
/// table has none).
fn render_judged(rep: &ComparisonReport) {
    if rep.judged_metrics.is_empty() {
        return;
    }
    say!();
    say!(
        "incomplete judgements: bpref (trec_eval); Judged@k = judged documents in the top k / min(k, retrieved); Hole@k = top-k documents judged for no query / k"
    );
    say_part!("{:<34}", "run");
    for m in &rep.judged_metrics {
        say_part!(" {m:>10}");
    }
    say!();
    for r in &rep.runs {
        say_part!("{:<34}", r.label);
        for m in &rep.judged_metrics {
            say_part!(" {:>10.4}", r.means.get(m).copied().unwrap_or(f64::NAN));
        }
        say!();
    }
}

/// A p-value in few characters (scientific below 0.001).
fn p_value(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}
