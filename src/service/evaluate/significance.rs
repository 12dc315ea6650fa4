//! Which configuration is really better? `raglab compare` over the per-query scores of
//! the last `eval retrieval` (kept as `eval/last-scores.json`), and `raglab eval runs`
//! over TREC run files from any tool: per metric, every candidate against a baseline
//! (or every pair) with the paired tests of [`crate::core::significance`], Holm-adjusted
//! over every comparison of the report.
//!
//! The work is split over the cores by column (bootstrap) and by comparison
//! (randomisation test); each piece is seeded the same way whatever the split, so the
//! numbers do not depend on the number of threads.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, Result, bail};
use serde::{Deserialize, Serialize};

use super::saved::{LAST_SCORES, Saved, load};
use crate::core::incomplete::JudgedDocs;
use crate::core::metrics::order_run;
use crate::core::question::document_of;
use crate::core::retrieval::{QueryOutcome, judged, judged_outcome};
use crate::core::significance::{
    ComparisonRow, PairedComparison, ScoreTable, SignFlip, TestSettings, adjust, bootstrap_means,
    clustered_difference, compare_pair_with, is_judged_metric, pairs, score_table, sign_flip_p,
};
use crate::service::base::{Context, write_whole};

/// What to compare and how.
#[derive(Debug, Clone, Default)]
pub struct CompareRequest {
    /// Compare every other run with this one (a label, or a run file's path or name);
    /// `None`: every pair.
    pub baseline: Option<String>,
    /// Metric names (case-insensitive); empty: every effectiveness metric of the table
    /// (the incomplete-judgement measures only when named).
    pub metrics: Vec<String>,
    pub settings: TestSettings,
    /// Worker threads (0: one per core).
    pub threads: usize,
    /// A file of (query id, cluster) lines that overrides the table's own clusters.
    pub clusters: Option<PathBuf>,
}

/// One compared run: its means over the table's queries.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunSummary {
    pub label: String,
    /// The run file (`eval runs`).
    pub file: Option<PathBuf>,
    /// Judged queries it retrieved nothing for (scored 0).
    pub absent: usize,
    /// The means of the metrics compared and of the incomplete-judgement measures.
    pub means: BTreeMap<String, f64>,
}

/// The comparison, as `compare --json` and `eval runs --json` print it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ComparisonReport {
    /// What was compared (the last evaluation and when it was written, or "run files").
    pub source: String,
    /// Judged queries (every comparison pairs all of them).
    pub queries: usize,
    pub metrics: Vec<String>,
    /// The incomplete-judgement measures of the table (bpref, Judged@k, Hole@k), whose
    /// means are reported beside the metrics (compared only when named); empty when the
    /// table has none.
    #[serde(default)]
    pub judged_metrics: Vec<String>,
    pub runs: Vec<RunSummary>,
    pub baseline: Option<String>,
    pub settings: TestSettings,
    /// Which p-values Holm adjusted together.
    pub holm_family: String,
    /// Where the questions' clusters came from, and how many there are.
    #[serde(default)]
    pub clusters: String,
    pub rows: Vec<ComparisonRow>,
    pub seconds: f64,
    /// The conclusions that differ from an earlier comparison's (`compare --before
    /// FILE`); absent without one.
    #[serde(default, skip_serializing_if = "Option::is_none", skip_deserializing)]
    pub changed: Option<crate::core::conclusions::ConclusionsChanged>,
}

/// Keep the last evaluation's per-query scores for `compare` (compact JSON: 14,000
/// queries x 10 configurations x 8 metrics is about 20 MB).
pub fn save_scores(ctx: &Context, table: &ScoreTable) -> Result<PathBuf> {
    let path = ctx.workspace.path(LAST_SCORES);
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    let saved = Saved {
        written_at: crate::service::base::now_rfc3339(),
        report: table,
    };
    write_whole(&path, serde_json::to_string(&saved)?.as_bytes())?;
    Ok(path)
}

/// The per-query scores of the last `eval retrieval` (None: none was run here).
pub fn last_scores(ctx: &Context) -> Result<Option<Saved<ScoreTable>>> {
    load(ctx, LAST_SCORES, "raglab eval retrieval")
}

/// `tables` (one evaluation each, the same judged queries) as one: each run once, by
/// label, in order; a table over other queries is an error.
pub fn merge_tables(tables: Vec<ScoreTable>) -> Result<ScoreTable> {
    let mut it = tables.into_iter();
    let Some(mut out) = it.next() else {
        bail!("no evaluation to merge");
    };
    for t in it {
        if t.qids != out.qids || t.metrics != out.metrics {
            bail!("the evaluations were made over different queries or metrics");
        }
        for r in t.runs {
            if out.run(&r.label).is_none() {
                out.runs.push(r);
            }
        }
    }
    Ok(out)
}

/// Compare the configurations of the last `eval retrieval`.
pub fn compare_last(ctx: &Context, req: &CompareRequest) -> Result<ComparisonReport> {
    let Some(saved) = last_scores(ctx)? else {
        bail!("no per-query scores in this workspace: run `raglab eval retrieval` first");
    };
    compare_saved(ctx, &saved, req)
}

/// Compare the configurations of a kept table of per-query scores.
pub fn compare_saved(
    ctx: &Context,
    saved: &Saved<ScoreTable>,
    req: &CompareRequest,
) -> Result<ComparisonReport> {
    let source = format!(
        "{} (eval retrieval, written {})",
        ctx.workspace.path(LAST_SCORES).display(),
        saved.written_at
    );
    compare_table(&saved.report, req, source, &[])
}

/// A run file's label: its file name without `.trec`, `.run` or `.txt` endings.
pub(super) fn run_label(path: &Path) -> String {
    let mut name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    while let Some(stem) = [".trec", ".run", ".txt"]
        .iter()
        .find_map(|e| name.strip_suffix(e).filter(|s| !s.is_empty()))
    {
        name = stem.to_string();
    }
    name
}

/// Score TREC run files against qrels with raglab's trec_eval-exact metrics at cutoffs
/// `ks`, and bpref, Judged@k and Hole@k (Hole@k against every document the qrels
/// judge), over every judged query of the qrels (sorted by id), and compare them.
pub fn evaluate_runs(
    qrels_path: &Path,
    runs: &[PathBuf],
    ks: &[usize],
    req: &CompareRequest,
) -> Result<ComparisonReport> {
    let table = score_runs(qrels_path, runs, ks)?;
    let source = format!("run files scored against {}", qrels_path.display());
    compare_table(&table, req, source, runs)
}

/// The per-query scores of TREC run files against qrels (the scoring of
/// [`evaluate_runs`]), each query clustered by its first relevant document's source
/// document.
pub fn score_runs(qrels_path: &Path, runs: &[PathBuf], ks: &[usize]) -> Result<ScoreTable> {
    let qrels = crate::service::base::read_qrels(qrels_path)?;
    let docs = JudgedDocs::of(&qrels);
    let mut qids: Vec<String> = qrels
        .keys()
        .filter(|q| judged(&qrels, q).is_some())
        .cloned()
        .collect();
    qids.sort();
    let clusters = qids
        .iter()
        .map(|q| qrel_cluster(&qrels[q]).unwrap_or(q).to_string())
        .collect();
    let mut labels: Vec<String> = runs.iter().map(|p| run_label(p)).collect();
    let unique: HashSet<&String> = labels.iter().collect();
    if unique.len() < labels.len() {
        // Two files of one name (in different folders): name them by path.
        labels = runs.iter().map(|p| p.display().to_string()).collect();
    }
    let mut outcomes: Vec<Vec<QueryOutcome>> = Vec::new();
    for path in runs {
        let run = crate::service::base::read_run(path)?;
        let mut o = Vec::new();
        for qid in &qids {
            let Some(hits) = run.get(qid) else { continue };
            let mut hits = hits.clone();
            order_run(&mut hits);
            let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
            o.push(judged_outcome(qid, &ranked, &qrels[qid], ks, &docs));
        }
        outcomes.push(o);
    }
    let named: Vec<(String, &[QueryOutcome])> = labels
        .iter()
        .cloned()
        .zip(outcomes.iter().map(Vec::as_slice))
        .collect();
    let mut table = score_table(qids, ks, &named);
    table.clusters = clusters;
    Ok(table)
}

/// The cluster of a judged query of the qrels: the source document of its first
/// relevant document by id (raglab chunk ids are `document#header-path`).
fn qrel_cluster(q: &crate::core::metrics::Qrel) -> Option<&str> {
    q.iter()
        .filter(|(_, grade)| **grade > 0)
        .map(|(doc, _)| doc.as_str())
        .min()
        .map(document_of)
}

/// The clusters of `qids` named by a `--clusters` file: one `query-id cluster` pair a
/// line (tab or spaces between), `#` comments and blank lines skipped. A query the file
/// does not name, or a line without two fields, is an error naming it.
pub fn read_clusters(path: &Path, qids: &[String]) -> Result<Vec<String>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the clusters file {}", path.display()))?;
    let mut of: std::collections::HashMap<&str, &str> = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split_whitespace();
        match (fields.next(), fields.next(), fields.next()) {
            (Some(q), Some(c), None) => {
                of.insert(q, c);
            }
            _ => bail!(
                "{}:{}: expected `query-id cluster`, found {:?}",
                path.display(),
                i + 1,
                crate::core::text::sanitize_for_terminal(line)
            ),
        }
    }
    let missing: Vec<&str> = qids
        .iter()
        .filter(|q| !of.contains_key(q.as_str()))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        bail!(
            "the clusters file {} names no cluster for {} of {} queries (first: {})",
            path.display(),
            missing.len(),
            qids.len(),
            missing[..missing.len().min(3)].join(", ")
        );
    }
    Ok(qids.iter().map(|q| of[q.as_str()].to_string()).collect())
}

/// What `table`'s clusters are, for a report: their number and where they came from.
pub fn describe_clusters(table: &ScoreTable, from: &str) -> String {
    let numbers = table.cluster_numbers();
    let distinct = numbers.iter().max().map_or(0, |m| m + 1);
    if table.clusters.len() == table.qids.len() {
        format!(
            "{distinct} clusters of {} queries ({from})",
            table.qids.len()
        )
    } else {
        format!(
            "none known: each of the {} queries is a cluster of its own",
            table.qids.len()
        )
    }
}

/// `table` with the clusters of `file` when one is named, and where its
/// clusters came from.
pub fn with_clusters<'a>(
    table: &'a ScoreTable,
    file: Option<&Path>,
) -> Result<(std::borrow::Cow<'a, ScoreTable>, String)> {
    match file {
        Some(path) => {
            let mut t = table.clone();
            t.clusters = read_clusters(path, &t.qids)?;
            let said = describe_clusters(&t, &format!("from {}", path.display()));
            Ok((std::borrow::Cow::Owned(t), said))
        }
        None => {
            let said =
                describe_clusters(table, "each question's `cluster` field or target document");
            Ok((std::borrow::Cow::Borrowed(table), said))
        }
    }
}

/// Resolve the request against the table: the baseline's index and the metrics'.
fn resolve(
    table: &ScoreTable,
    req: &CompareRequest,
    files: &[PathBuf],
) -> Result<(Option<usize>, Vec<usize>)> {
    let baseline = match &req.baseline {
        None => None,
        Some(b) => Some(
            table
                .run(b)
                .or_else(|| files.iter().position(|f| f == Path::new(b)))
                .or_else(|| table.run(&run_label(Path::new(b))))
                .with_context(|| {
                    let known: Vec<&str> = table.runs.iter().map(|r| r.label.as_str()).collect();
                    format!(
                        "no run `{b}` to compare against (runs: {})",
                        known.join(", ")
                    )
                })?,
        ),
    };
    let metrics = if req.metrics.is_empty() {
        (0..table.metrics.len())
            .filter(|&m| !is_judged_metric(&table.metrics[m]))
            .collect()
    } else {
        req.metrics
            .iter()
            .map(|m| {
                table.metric(m).with_context(|| {
                    format!("no metric `{m}` (metrics: {})", table.metrics.join(", "))
                })
            })
            .collect::<Result<Vec<_>>>()?
    };
    Ok((baseline, metrics))
}

fn threads(req: &CompareRequest) -> usize {
    match req.threads {
        0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        n => n,
    }
}

/// `f` over `items` split into `parts` contiguous chunks, one thread each, results in
/// item order.
fn split_map<T: Sync, R: Send>(
    items: &[T],
    parts: usize,
    f: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    let size = items.len().div_ceil(parts.max(1)).max(1);
    std::thread::scope(|s| {
        let handles: Vec<_> = items.chunks(size).map(|c| s.spawn(|| f(c))).collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Compare the runs of `table` as `req` asks; `files` are the run files (if any), in
/// the table's run order.
pub fn compare_table(
    table: &ScoreTable,
    req: &CompareRequest,
    source: String,
    files: &[PathBuf],
) -> Result<ComparisonReport> {
    compare_table_with(table, req, source, files, sign_flip_p)
}

/// [`compare_table`] with the randomisation test `flip`: `benches/compare.rs` times the
/// implementation [`sign_flip_p`] replaced beside it, in one run, on the same table.
pub fn compare_table_with(
    table: &ScoreTable,
    req: &CompareRequest,
    source: String,
    files: &[PathBuf],
    flip: SignFlip,
) -> Result<ComparisonReport> {
    let started = Instant::now();
    let (table, clusters_said) = with_clusters(table, req.clusters.as_deref())?;
    let table = table.as_ref();
    let cluster_of = table.cluster_numbers();
    let (baseline, metrics) = resolve(table, req, files)?;
    let workers = threads(req);
    let s = req.settings;
    let runs = table.runs.len();
    // Column c = (metric metrics[c / runs], run c % runs).
    let columns: Vec<&[f64]> = metrics
        .iter()
        .flat_map(|&m| table.runs.iter().map(move |r| r.scores[m].as_slice()))
        .collect();
    let boot = split_map(&columns, workers, |cols| {
        bootstrap_means(cols, s.resamples, s.seed)
    });
    let jobs: Vec<(usize, (usize, usize))> = (0..metrics.len())
        .flat_map(|mi| pairs(runs, baseline).into_iter().map(move |p| (mi, p)))
        .collect();
    let results: Vec<PairedComparison> = split_map(&jobs, workers, |part| {
        part.iter()
            .map(|&(mi, (b, c))| {
                let (cb, cc) = (mi * runs + b, mi * runs + c);
                compare_pair_with(columns[cb], columns[cc], (&boot[cb], &boot[cc]), &s, flip)
            })
            .collect()
    });
    let mut results = results;
    adjust(&mut results);
    let rows = jobs
        .iter()
        .zip(results)
        .map(|(&(mi, (b, c)), result)| ComparisonRow {
            metric: table.metrics[metrics[mi]].clone(),
            baseline: table.runs[b].label.clone(),
            candidate: table.runs[c].label.clone(),
            result,
            clustered: clustered_difference(
                &table.runs[b].scores[metrics[mi]],
                &table.runs[c].scores[metrics[mi]],
                &cluster_of,
            )
            .map(Into::into),
        })
        .collect::<Vec<_>>();
    Ok(ComparisonReport {
        source,
        queries: table.qids.len(),
        metrics: metrics.iter().map(|&m| table.metrics[m].clone()).collect(),
        judged_metrics: table
            .metrics
            .iter()
            .filter(|m| is_judged_metric(m))
            .cloned()
            .collect(),
        runs: summaries(table, &metrics, files),
        baseline: baseline.map(|b| table.runs[b].label.clone()),
        settings: s,
        holm_family: format!(
            "every comparison of this report ({} = {} metrics x {} pairs), the randomisation and the t-test p-values each on their own",
            rows.len(),
            metrics.len(),
            pairs(runs, baseline).len()
        ),
        clusters: clusters_said,
        rows,
        seconds: started.elapsed().as_secs_f64(),
        changed: None,
    })
}

/// Name the conclusions of `rep` that differ from those of the comparison saved in
/// `before` (a `compare --json` or `eval runs --json` document).
pub fn against_before(rep: &mut ComparisonReport, before: &std::path::Path) -> Result<()> {
    let text = std::fs::read_to_string(before)
        .with_context(|| format!("cannot read the earlier comparison {}", before.display()))?;
    let earlier: ComparisonReport = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a comparison (`raglab compare --json > FILE` writes one)",
            before.display()
        )
    })?;
    rep.changed = Some(crate::core::conclusions::changed_conclusions(
        &before.display().to_string(),
        &earlier.rows,
        &rep.rows,
    ));
    Ok(())
}

/// Each run's means over the table's queries, for the metrics compared and the
/// incomplete-judgement measures.
fn summaries(table: &ScoreTable, metrics: &[usize], files: &[PathBuf]) -> Vec<RunSummary> {
    let n = table.qids.len().max(1) as f64;
    let mut metrics = metrics.to_vec();
    for m in 0..table.metrics.len() {
        if is_judged_metric(&table.metrics[m]) && !metrics.contains(&m) {
            metrics.push(m);
        }
    }
    table
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| RunSummary {
            label: r.label.clone(),
            file: files.get(i).cloned(),
            absent: r.absent,
            means: metrics
                .iter()
                .map(|&m| {
                    (
                        table.metrics[m].clone(),
                        r.scores[m].iter().sum::<f64>() / n,
                    )
                })
                .collect(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::significance::RunScores;

    fn table() -> ScoreTable {
        let mut rng = crate::core::rng::Rng::new(5);
        let mut col = |shift: f64| -> Vec<f64> {
            (0..300)
                .map(|_| (rng.below(100) as f64 / 100.0 + shift).min(1.0))
                .collect()
        };
        let runs = ["a", "b", "c"]
            .iter()
            .enumerate()
            .map(|(i, l)| RunScores {
                label: (*l).to_string(),
                absent: 0,
                scores: vec![col(0.02 * i as f64), col(0.0)],
            })
            .collect();
        ScoreTable {
            qids: (0..300).map(|i| format!("q{i}")).collect(),
            metrics: vec!["MRR".into(), "nDCG@10".into()],
            runs,
            clusters: Vec::new(),
        }
    }

    #[test]
    fn the_numbers_do_not_depend_on_the_threads() {
        let t = table();
        let mut req = CompareRequest {
            threads: 1,
            settings: TestSettings {
                resamples: 500,
                permutations: 2000,
                seed: 1,
            },
            ..CompareRequest::default()
        };
        let one = compare_table(&t, &req, "t".into(), &[]).expect("compare");
        req.threads = 3;
        let three = compare_table(&t, &req, "t".into(), &[]).expect("compare");
        assert_eq!(one.rows, three.rows);
        assert_eq!(one.rows.len(), 6, "3 pairs x 2 metrics");
        // Against a baseline, one metric: the rows are those of the all-pairs report
        // before adjustment (same seed, same pair), adjusted over 2 instead of 6.
        req.baseline = Some("a".into());
        req.metrics = vec!["mrr".into()];
        let base = compare_table(&t, &req, "t".into(), &[]).expect("compare");
        assert_eq!(base.rows.len(), 2);
        assert_eq!(base.rows[1].candidate, "c");
        assert_eq!(
            base.rows[1].result.randomisation_p,
            one.rows[1].result.randomisation_p
        );
        assert_eq!(base.rows[1].result.ci, one.rows[1].result.ci);
        req.baseline = Some("zzz".into());
        assert!(compare_table(&t, &req, "t".into(), &[]).is_err());
    }

    #[test]
    fn run_labels_drop_run_file_endings() {
        assert_eq!(run_label(Path::new("x/bm25.run.trec")), "bm25");
        assert_eq!(run_label(Path::new("a.tfidf.trec")), "a.tfidf");
        assert_eq!(run_label(Path::new(".trec")), ".trec");
    }
}
