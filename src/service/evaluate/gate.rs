//! `raglab gate`: may a candidate pipeline replace a baseline? A paired, clustered
//! non-inferiority test on one metric that a CI job calls and reads by exit code.
//!
//! The inputs are two configurations of the workspace's last `eval retrieval` (by
//! label), or two TREC run files scored against qrels. The verdict is the rule of
//! [`crate::core::significance::non_inferiority`]: pass when the lower end of the
//! (1 - alpha) interval of mean(candidate - baseline), clustered by question, lies above
//! -margin. No resampling enters it, so the same inputs give the same verdict on every
//! run and machine.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use super::significance::{last_scores, score_runs, with_clusters};
use crate::core::significance::{GateVerdict, ScoreTable, non_inferiority};
use crate::service::base::Context;

/// What the gate compares and by which rule.
#[derive(Debug, Clone)]
pub struct GateRequest {
    /// A configuration label of the last evaluation, or a TREC run file (with `qrels`).
    pub baseline: String,
    pub candidate: String,
    /// Qrels: the baseline and candidate are run files scored against them.
    pub qrels: Option<PathBuf>,
    /// The metric (case-insensitive: `ndcg@10`).
    pub metric: String,
    /// Cutoffs the run files are scored at (`eval runs`' `--k`).
    pub ks: Vec<usize>,
    /// The non-inferiority margin D (>= 0), in the metric's units.
    pub margin: f64,
    /// The interval is two-sided at level 1 - alpha.
    pub alpha: f64,
    /// A file of (query id, cluster) lines.
    pub clusters: Option<PathBuf>,
}

/// The gate's report, as `gate --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GateReport {
    /// What was compared (the last evaluation, or run files and their qrels).
    pub source: String,
    pub baseline: String,
    pub candidate: String,
    pub metric: String,
    pub baseline_mean: f64,
    pub candidate_mean: f64,
    /// Where the clusters came from and how many there are.
    pub clusters_from: String,
    #[serde(flatten)]
    pub verdict: GateVerdict,
    /// `pass` or `not shown non-inferior`.
    pub outcome: String,
}

/// Decide `req`. Every error is a usage or data error (exit 2 at the front).
pub fn gate(ctx: &Context, req: &GateRequest) -> Result<GateReport> {
    let (table, source) = match &req.qrels {
        Some(qrels) => {
            let files = [PathBuf::from(&req.baseline), PathBuf::from(&req.candidate)];
            for f in &files {
                if !f.is_file() {
                    bail!(
                        "no run file {} (with --qrels, the baseline and candidate are TREC run files)",
                        f.display()
                    );
                }
            }
            let mut ks = req.ks.clone();
            ks.extend(cutoff_of(&req.metric));
            let table = score_runs(qrels, &files, &ks)?;
            (
                table,
                format!("run files scored against {}", qrels.display()),
            )
        }
        None => {
            let Some(saved) = last_scores(ctx)? else {
                bail!(
                    "no evaluation in this workspace to gate on: run `raglab eval retrieval` first, or give --qrels QRELS with two TREC run files"
                );
            };
            let source = format!("the last eval retrieval (written {})", saved.written_at);
            (saved.report, source)
        }
    };
    decide(&table, req, source)
}

/// The cutoff a metric name carries (`nDCG@20` gives 20), so that any cutoff named
/// is scored.
fn cutoff_of(metric: &str) -> Option<usize> {
    metric.split_once('@').and_then(|(_, k)| k.parse().ok())
}

/// The verdict on `table`'s two runs.
fn decide(table: &ScoreTable, req: &GateRequest, source: String) -> Result<GateReport> {
    let (table, clusters_from) = with_clusters(table, req.clusters.as_deref())?;
    let run = |label: &str| {
        table
            .run(label)
            .or_else(|| table.run(&super::significance::run_label(Path::new(label))))
            .with_context(|| {
                let known: Vec<&str> = table.runs.iter().map(|r| r.label.as_str()).collect();
                format!("no run `{label}` to gate (runs: {})", known.join(", "))
            })
    };
    let (b, c) = (run(&req.baseline)?, run(&req.candidate)?);
    let m = table.metric(&req.metric).with_context(|| {
        format!(
            "no metric `{}` (metrics: {})",
            req.metric,
            table.metrics.join(", ")
        )
    })?;
    let (base, cand) = (&table.runs[b].scores[m], &table.runs[c].scores[m]);
    let verdict = non_inferiority(base, cand, &table.cluster_numbers(), req.margin, req.alpha)?;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    Ok(GateReport {
        source,
        baseline: table.runs[b].label.clone(),
        candidate: table.runs[c].label.clone(),
        metric: table.metrics[m].clone(),
        baseline_mean: mean(base),
        candidate_mean: mean(cand),
        clusters_from,
        outcome: if verdict.pass {
            "pass".into()
        } else {
            "not shown non-inferior".into()
        },
        verdict,
    })
}

impl GateReport {
    /// A Markdown summary for a pull request.
    pub fn markdown(&self) -> String {
        let v = &self.verdict;
        let mark = if v.pass {
            "✅ pass"
        } else {
            "❌ not shown non-inferior"
        };
        format!(
            "### raglab gate: {mark}\n\n\
             `{cand}` against `{base}` on **{metric}** (margin {margin}, {level:.0}% interval, {source}).\n\n\
             | | value |\n|---|---|\n\
             | baseline mean | {bm:.4} |\n| candidate mean | {cm:.4} |\n\
             | difference (candidate - baseline) | {d:+.4} |\n\
             | {level:.0}% interval (clustered) | [{lo:+.4}, {hi:+.4}] |\n\
             | passes when the lower end is above | {neg:+.4} |\n\
             | one-sided p | {p:.4} |\n\
             | SE clustered / naive | {sec} / {sen:.4} |\n\
             | design effect | {deff} |\n\
             | questions / clusters | {n} / {g} |\n\
             | smallest difference this set detects (80% power) | {mde:.4} |\n\n\
             Clusters: {from}.\n",
            cand = self.candidate,
            base = self.baseline,
            metric = self.metric,
            margin = v.margin,
            level = 100.0 * (1.0 - v.alpha),
            source = self.source,
            bm = self.baseline_mean,
            cm = self.candidate_mean,
            d = v.difference.mean,
            lo = v.lower,
            hi = v.upper,
            neg = -v.margin,
            p = v.p_one_sided,
            sec = v
                .difference
                .se_clustered
                .map_or("-".into(), |s| format!("{s:.4}")),
            sen = v.difference.se_naive,
            deff = v
                .difference
                .design_effect
                .map_or("-".into(), |d| format!("{d:.3}")),
            n = v.difference.n,
            g = v.difference.clusters,
            mde = v.mde_80,
            from = self.clusters_from,
        )
    }

    /// A JUnit XML report: one test case, failed when the gate fails.
    pub fn junit(&self) -> String {
        let name = format!(
            "{} non-inferior to {} on {} (margin {})",
            self.candidate, self.baseline, self.metric, self.verdict.margin
        );
        let failure = if self.verdict.pass {
            String::new()
        } else {
            format!(
                "<failure message=\"{}\">{}</failure>",
                xml_escape(&format!(
                    "lower end {:+.4} of the {:.0}% interval is not above {:+.4}",
                    self.verdict.lower,
                    100.0 * (1.0 - self.verdict.alpha),
                    -self.verdict.margin
                )),
                xml_escape(&self.markdown())
            )
        };
        format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
             <testsuites tests=\"1\" failures=\"{f}\">\n\
             <testsuite name=\"raglab gate\" tests=\"1\" failures=\"{f}\">\n\
             <testcase classname=\"raglab.gate\" name=\"{name}\">{failure}</testcase>\n\
             </testsuite>\n</testsuites>\n",
            f = u8::from(!self.verdict.pass),
            name = xml_escape(&name),
        )
    }
}

/// Text made safe inside an XML attribute or element.
fn xml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() && c != '\n' && c != '\t' => {}
            c => out.push(c),
        }
    }
    out
}
