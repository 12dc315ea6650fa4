//! `raglab report study --out DIR`: the study report as `DIR/report.md` and SVG
//! charts beside it ([`super::charts`]). The numbers come from
//! [`crate::service::report::study_report`], which gathers them from the functions of
//! the commands each section names; this file only lays them out.
//!
//! Markdown cells hold text from the workspace (topics, labels, run names): a `|` is
//! escaped and line breaks become spaces, so no value can break a table. The file is
//! written exact otherwise: a file written with `--out` holds the values as stored;
//! only text printed to a terminal is sanitised.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::Args;

use super::charts::{self, Series};
use crate::core::paper;
use crate::core::stats::bucket_lower_bound;
use crate::service::Context;
use crate::service::evaluate::{BUCKETS, MethodResult, RetrievalReport};
use crate::service::report::{StudyReport, StudyRequest, study_report};
use crate::service::study::Viewer;

#[derive(Debug, Args)]
pub struct StudyArgs {
    /// Folder to write `report.md` and its SVG charts into (created if needed).
    #[arg(long)]
    pub out: PathBuf,
}

/// A markdown table cell: `|` escaped, line breaks as spaces.
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace(['\n', '\r'], " ")
}

fn f4(v: f64) -> String {
    format!("{v:.4}")
}

fn opt4(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".into(), f4)
}

/// A p-value: four decimals, scientific below 0.001.
fn p_value(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.2e}")
    } else {
        format!("{p:.4}")
    }
}

/// `| a | b |` and its separator.
fn header(s: &mut String, cols: &[&str]) {
    let _ = writeln!(s, "| {} |", cols.join(" | "));
    let _ = writeln!(s, "|{}", "---|".repeat(cols.len()));
}

fn row(s: &mut String, cells: &[String]) {
    let _ = writeln!(s, "| {} |", cells.join(" | "));
}

/// The report's charts, written as they are made: (file name, SVG).
struct Charts<'a> {
    dir: &'a Path,
    written: Vec<String>,
}

impl Charts<'_> {
    fn write(&mut self, name: &str, svg: &str) -> Result<String> {
        crate::service::base::write_whole(&self.dir.join(name), svg.as_bytes())?;
        self.written.push(name.to_string());
        Ok(format!("![{name}]({name})"))
    }
}

pub async fn run(ctx: &Context, args: StudyArgs, viewer: &Viewer) -> Result<()> {
    let started = std::time::Instant::now();
    let req = StudyRequest {
        viewer: viewer.clone(),
        ..StudyRequest::default()
    };
    let rep = study_report(ctx, &req).await?;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create {}", args.out.display()))?;
    let mut charts = Charts {
        dir: &args.out,
        written: Vec::new(),
    };
    let md = render(&rep, &mut charts)?;
    let path = args.out.join("report.md");
    crate::service::base::write_whole(&path, md.as_bytes())?;
    say!(
        "wrote {} and {} charts ({} sections missing) in {:.2} s",
        path.display(),
        charts.written.len(),
        rep.missing.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// The whole report as markdown, writing its charts on the way.
fn render(r: &StudyReport, charts: &mut Charts<'_>) -> Result<String> {
    let mut s = String::new();
    let _ = writeln!(s, "# raglab study report\n");
    let _ = writeln!(
        s,
        "Workspace `{}`, written {} for {} by `raglab report study` (raglab {}). Every table and figure names the command and the data it comes from; a section without data names the command that produces it.\n",
        r.workspace,
        r.written_at,
        r.viewer,
        env!("CARGO_PKG_VERSION")
    );
    corpus(&mut s, r);
    retrieval(&mut s, r, charts)?;
    significance(&mut s, r);
    mcqa(&mut s, r, charts)?;
    judge(&mut s, r, charts)?;
    citations(&mut s, r);
    grounded(&mut s, r);
    agreement(&mut s, r);
    frugality(&mut s, r, charts)?;
    if !r.missing.is_empty() {
        let _ = writeln!(s, "## Missing sections\n");
        for m in &r.missing {
            let _ = writeln!(s, "- {}: {}", m.section, cell(&m.why));
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Gathered in {:.2} s.", r.seconds);
    Ok(s)
}

/// A missing section's line.
fn missing(s: &mut String, r: &StudyReport, section: &str) {
    let why = r.why_missing(section).unwrap_or("no data");
    let _ = writeln!(s, "Not in this report: {}.\n", cell(why));
}

fn corpus(s: &mut String, r: &StudyReport) {
    let _ = writeln!(s, "## Corpus\n");
    let Some(c) = &r.corpus else {
        return missing(s, r, "corpus");
    };
    let _ = writeln!(
        s,
        "Source: `raglab corpus stats --json` (the workspace's chunks).\n"
    );
    header(
        s,
        &[
            "documents",
            "chunks",
            "words",
            "words/chunk min",
            "median",
            "max",
            "topics",
        ],
    );
    row(
        s,
        &[
            c.documents.to_string(),
            c.chunks.to_string(),
            c.words.to_string(),
            c.min_words.to_string(),
            c.median_words.to_string(),
            c.max_words.to_string(),
            c.topics.len().to_string(),
        ],
    );
    let _ = writeln!(s, "\nChunk length (words):\n");
    header(s, &["words", "chunks"]);
    for (label, n) in &c.length_histogram {
        row(s, &[cell(label), n.to_string()]);
    }
    let _ = writeln!(s);
}

/// One configuration's row of the retrieval table.
fn metric_cells(m: &crate::core::metrics::MeanMetrics) -> Vec<String> {
    vec![
        f4(m.p1),
        f4(m.recall5),
        f4(m.recall10),
        f4(m.mrr),
        f4(m.ndcg10),
    ]
}

fn retrieval(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(s, "## Retrieval per configuration (paper Tables 3-4)\n");
    let Some(saved) = &r.retrieval else {
        missing(s, r, "retrieval");
        return Ok(());
    };
    let rep = &saved.report;
    let _ = writeln!(
        s,
        "Source: the last `raglab eval retrieval` (its `--json`, kept in `eval/last-retrieval.json`, written {}): {} queries, {} evaluated; embedding model {}; corpus variant {}; ranked lists {} deep. Queries a configuration retrieved nothing for are dropped from its means (trec_eval without -c). The paper's rows (PubHealthBench, 7,929 queries over 5,358 chunks, other models) are reference points, not targets.\n",
        saved.written_at,
        rep.queries,
        rep.evaluated,
        cell(rep.embedding_model.as_deref().unwrap_or("none")),
        rep.variant,
        rep.depth
    );
    header(
        s,
        &[
            "configuration",
            "P@1",
            "Recall@5",
            "Recall@10",
            "MRR",
            "nDCG@10",
            "queries",
            "no results",
        ],
    );
    for m in &rep.results {
        let mut cells = vec![cell(&m.label)];
        cells.extend(metric_cells(&m.metrics));
        cells.push(m.metrics.queries.to_string());
        cells.push(m.dropped_empty_results.to_string());
        row(s, &cells);
    }
    for p in &paper::RETRIEVAL {
        row(
            s,
            &[
                format!("paper: {} ({})", p.what, p.source),
                format!("{:.2}", p.p1),
                format!("{:.2}", p.recall5),
                format!("{:.2}", p.recall10),
                format!("{:.2}", p.mrr),
                format!("{:.2}", p.ndcg10),
                "7929".into(),
                String::new(),
            ],
        );
    }
    let _ = writeln!(s);
    sweep(s, rep, charts)?;
    breakdowns(s, rep, charts)?;
    Ok(())
}

/// The alpha sweep: one line per fused method and sparse side (nDCG@10), the table of
/// every point, and the best alpha per metric.
fn sweep(s: &mut String, rep: &RetrievalReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(s, "### Alpha sweep\n");
    if rep.alpha_sweep.is_empty() {
        let _ = writeln!(
            s,
            "Not in this report: the last evaluation swept no alpha (run `raglab eval retrieval --alpha-sweep` with hybrid or linear).\n"
        );
        return Ok(());
    }
    let mut lines: Vec<Series> = Vec::new();
    for p in &rep.alpha_sweep {
        let name = format!("{}-{}", p.method, p.sparse);
        match lines.iter_mut().find(|l| l.name == name) {
            Some(l) => l.points.push((p.alpha, p.metrics.ndcg10)),
            None => lines.push(Series {
                name,
                points: vec![(p.alpha, p.metrics.ndcg10)],
            }),
        }
    }
    let svg = charts::lines(
        "nDCG@10 by alpha (weighted RRF: a/(60+r_dense) + (1-a)/(60+r_sparse))",
        "alpha (dense weight)",
        "nDCG@10",
        &lines,
    )?;
    let img = charts.write("alpha-sweep.svg", &svg)?;
    let _ = writeln!(
        s,
        "{img}\n\nSource: `raglab eval retrieval --alpha-sweep` (`alpha_sweep` of its `--json`): every fused method re-fused from the same ranked lists at a = 0.50, 0.55, ..., 0.95. {}.\n",
        paper::BEST_ALPHA_SOURCE
    );
    header(
        s,
        &[
            "method",
            "sparse",
            "alpha",
            "P@1",
            "Recall@5",
            "Recall@10",
            "MRR",
            "nDCG@10",
        ],
    );
    for p in &rep.alpha_sweep {
        let mut cells = vec![
            p.method.to_string(),
            p.sparse.to_string(),
            format!("{:.2}", p.alpha),
        ];
        cells.extend(metric_cells(&p.metrics));
        row(s, &cells);
    }
    let _ = writeln!(s, "\nBest alpha per metric (ties: the smaller alpha):\n");
    header(s, &["method", "sparse", "metric", "alpha", "value"]);
    for b in &rep.best_alpha {
        row(
            s,
            &[
                b.method.to_string(),
                b.sparse.to_string(),
                b.metric.clone(),
                format!("{:.2}", b.alpha),
                f4(b.value),
            ],
        );
    }
    let _ = writeln!(s);
    Ok(())
}

/// eta^2 of every configuration, then the headline configuration's groups by topic
/// and by target length, each with a chart.
fn breakdowns(s: &mut String, rep: &RetrievalReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(s, "### Topic and target-length breakdowns\n");
    let _ = writeln!(
        s,
        "Source: `raglab eval retrieval` (`by_topic` and `by_target_length` of each result in its `--json`). eta^2: one-way ANOVA effect size of nDCG@10 across the groups. Paper: {}; {}.\n",
        paper::TOPIC_ETA2_SOURCE,
        paper::LENGTH_NOTE
    );
    header(s, &["configuration", "eta^2 topic", "eta^2 target length"]);
    for m in &rep.results {
        row(
            s,
            &[
                cell(&m.label),
                opt4(m.by_topic.eta_squared_ndcg10),
                opt4(m.by_target_length.eta_squared_ndcg10),
            ],
        );
    }
    let _ = writeln!(s);
    let Some(head) = rep.results.iter().find(|m| m.label == rep.breakdown_method) else {
        return Ok(());
    };
    group_table(s, head, false, charts)?;
    group_table(s, head, true, charts)?;
    Ok(())
}

fn group_table(
    s: &mut String,
    m: &MethodResult,
    by_length: bool,
    charts: &mut Charts<'_>,
) -> Result<()> {
    let b = if by_length {
        &m.by_target_length
    } else {
        &m.by_topic
    };
    let mut groups: Vec<(&String, &crate::core::metrics::MeanMetrics)> = b.groups.iter().collect();
    if by_length {
        groups.sort_by_key(|(g, _)| bucket_lower_bound(g));
    }
    let (what, file) = if by_length {
        ("target chunk length (words)", "length.svg")
    } else {
        ("topic", "topic.svg")
    };
    let bars: Vec<(String, f64)> = groups
        .iter()
        .map(|(g, x)| ((*g).clone(), x.ndcg10))
        .collect();
    let svg = charts::bars(&format!("nDCG@10 by {what}: {}", m.label), "nDCG@10", &bars)?;
    let img = charts.write(file, &svg)?;
    let _ = writeln!(
        s,
        "{img}\n\nnDCG@10 of the headline configuration `{}` by {what} (`raglab eval retrieval`), eta^2 = {}:\n",
        cell(&m.label),
        opt4(b.eta_squared_ndcg10)
    );
    header(s, &[what, "queries", "nDCG@10", "MRR", "P@1"]);
    for (g, x) in groups {
        row(
            s,
            &[
                cell(g),
                x.queries.to_string(),
                f4(x.ndcg10),
                f4(x.mrr),
                f4(x.p1),
            ],
        );
    }
    let _ = writeln!(s);
    Ok(())
}

fn significance(s: &mut String, r: &StudyReport) {
    let _ = writeln!(s, "## Which configuration is really better?\n");
    let Some(c) = &r.comparison else {
        return missing(s, r, "significance");
    };
    let _ = writeln!(
        s,
        "Source: `raglab compare --json` (every pair, its defaults) over the per-query scores of the last `raglab eval retrieval` (`eval/last-scores.json`, written {}): {} judged queries (a configuration that retrieved nothing for one scores 0 on it); bootstrap {} resamples, {} permutations, seed {}. diff = candidate - baseline with its paired bootstrap 95% CI; p_rand: paired randomisation (sign-flip) test, p = (1 + #{{|S*| >= |S|}}) / (1 + permutations), two-sided; p_t: paired t-test (scipy's ttest_rel). Holm: {}.\n",
        r.scores_written_at.as_deref().unwrap_or("-"),
        c.queries,
        c.settings.resamples,
        c.settings.permutations,
        c.settings.seed,
        c.holm_family
    );
    header(
        s,
        &[
            "metric",
            "candidate",
            "baseline",
            "diff",
            "95% CI",
            "W/T/L",
            "p_rand",
            "p_rand Holm",
            "t",
            "p_t",
            "p_t Holm",
        ],
    );
    for x in &c.rows {
        let v = &x.result;
        let ci =
            v.ci.map_or_else(|| "-".into(), |(lo, hi)| format!("[{lo:+.4}, {hi:+.4}]"));
        row(
            s,
            &[
                cell(&x.metric),
                cell(&x.candidate),
                cell(&x.baseline),
                format!("{:+.4}", v.difference),
                ci,
                format!("{}/{}/{}", v.record.wins, v.record.ties, v.record.losses),
                p_value(v.randomisation_p),
                p_value(v.randomisation_p_holm),
                v.t_test
                    .map_or_else(|| "-".into(), |t| format!("{:.3}", t.t)),
                v.t_test.map_or_else(|| "-".into(), |t| p_value(t.p)),
                v.t_test_p_holm.map_or_else(|| "-".into(), p_value),
            ],
        );
    }
    let _ = writeln!(s);
}

fn mcqa(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(
        s,
        "## Multiple-choice accuracy (paper Table 5, Figures 3-4)\n"
    );
    let Some(saved) = &r.mcqa else {
        missing(s, r, "mcqa");
        return Ok(());
    };
    let m = &saved.report;
    let rep = &m.report;
    let _ = writeln!(
        s,
        "Source: the last `raglab eval mcqa` (`report` of its `--json`, kept in `eval/last-mcqa.json`, written {}): run `{}`, model {}, retrieval {} a={}, {} questions. Accuracy with its 95% Wilson interval.\n",
        saved.written_at,
        cell(&m.run),
        cell(m.model_file.as_deref().unwrap_or("-")),
        cell(m.method.as_deref().unwrap_or("-")),
        m.alpha.map_or_else(|| "-".into(), |a| format!("{a:.2}")),
        m.questions
    );
    mcqa_by_k_chart(s, rep, charts)?;
    mcqa_table(s, rep);
    mcqa_by_rank_chart(s, rep, charts)?;
    for n in paper::MCQA_NOTES {
        let _ = writeln!(s, "- paper {n}");
    }
    let _ = writeln!(s);
    Ok(())
}

/// Figure 3: accuracy by k, over all questions and over those with the target in the
/// prompt.
fn mcqa_by_k_chart(
    s: &mut String,
    rep: &crate::core::mcqa::Report,
    charts: &mut Charts<'_>,
) -> Result<()> {
    let series_of = |name: &str, get: fn(&crate::core::mcqa::KRow) -> Option<f64>| Series {
        name: name.into(),
        points: rep
            .by_k
            .iter()
            .filter_map(|k| Some((k.k as f64, get(k)?)))
            .collect(),
    };
    let series = vec![
        series_of("all questions", |k| k.overall.accuracy),
        series_of("target in the prompt", |k| k.retrieved.accuracy),
    ];
    let img = charts.write(
        "mcqa-by-k.svg",
        &charts::lines(
            "MCQA accuracy by k (Figure 3)",
            "k (chunks in the prompt)",
            "accuracy",
            &series,
        )?,
    )?;
    let _ = writeln!(s, "{img}\n");
    Ok(())
}

/// Table 5: one row per k.
fn mcqa_table(s: &mut String, rep: &crate::core::mcqa::Report) {
    header(
        s,
        &[
            "k",
            "accuracy",
            "95% CI",
            "n",
            "macro-F1",
            "target in prompt",
            "not in prompt",
            "target r=1",
            "r>=2",
            "CV across topics",
        ],
    );
    for (i, k) in rep.by_k.iter().enumerate() {
        let ci = match (k.overall.lo, k.overall.hi) {
            (Some(lo), Some(hi)) => format!("[{lo:.4}, {hi:.4}]"),
            _ => "-".into(),
        };
        row(
            s,
            &[
                k.k.to_string(),
                opt4(k.overall.accuracy),
                ci,
                k.overall.n.to_string(),
                opt4(k.macro_f1),
                k.retrieved.short(),
                k.not_retrieved.short(),
                k.rank1.short(),
                k.rank2_plus.short(),
                opt4(rep.cv.get(i).copied().flatten()),
            ],
        );
    }
    let _ = writeln!(s);
}

/// Figure 4: accuracy by the target's rank at the largest k.
fn mcqa_by_rank_chart(
    s: &mut String,
    rep: &crate::core::mcqa::Report,
    charts: &mut Charts<'_>,
) -> Result<()> {
    let Some(top) = rep.by_k.iter().filter(|k| k.k > 0).max_by_key(|k| k.k) else {
        return Ok(());
    };
    let mut bars: Vec<(String, f64)> = top
        .by_rank
        .iter()
        .filter_map(|(rank, a)| Some((format!("r={rank}"), a.accuracy?)))
        .collect();
    if let Some(a) = top.not_retrieved.accuracy {
        bars.push(("not in prompt".into(), a));
    }
    let img = charts.write(
        "mcqa-by-rank.svg",
        &charts::bars(
            &format!("MCQA accuracy by target rank at k = {} (Figure 4)", top.k),
            "accuracy",
            &bars,
        )?,
    )?;
    let _ = writeln!(s, "{img}\n");
    Ok(())
}

fn judge(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(
        s,
        "## Judge pass rates by target rank (paper Figures 5-6)\n"
    );
    let Some(j) = &r.judge else {
        missing(s, r, "judge");
        return Ok(());
    };
    let _ = writeln!(
        s,
        "Source: the stored answers and judgements (`raglab judge`), as the Evaluation pane and `raglab report answers --json` count them, for {}: {} answers, {} judgements, judge {}. Buckets: {}.\n",
        r.viewer,
        j.answers,
        j.judgements,
        cell(&j.judge_models.join(", ")),
        crate::service::evaluate::RANK_BUCKETS
    );
    let present: Vec<&str> = BUCKETS
        .iter()
        .copied()
        .filter(|b| {
            j.rows
                .iter()
                .any(|c| c.buckets.iter().any(|x| x.bucket == *b))
        })
        .collect();
    let mut cols = vec!["criterion"];
    cols.extend(present.iter().copied());
    cols.push("paper");
    header(s, &cols);
    for c in &j.rows {
        let mut cells = vec![cell(&c.criterion)];
        for b in &present {
            cells.push(c.buckets.iter().find(|x| x.bucket == *b).map_or_else(
                || "-".into(),
                |x| {
                    format!(
                        "{} ({}/{})",
                        f4(x.pass as f64 / x.total as f64),
                        x.pass,
                        x.total
                    )
                },
            ));
        }
        cells.push(
            paper::judge_pass_for(&c.criterion)
                .unwrap_or("-")
                .to_string(),
        );
        row(s, &cells);
    }
    let _ = writeln!(s, "\npaper {}\n", paper::JUDGE_RANK_NOTE);
    judge_by_rank_chart(s, j, &present, charts)?;
    per_run(s, r);
    Ok(())
}

/// Figure 6: each criterion's pass rate by the target's rank in the prompt, over the
/// ranked buckets of `present`.
fn judge_by_rank_chart(
    s: &mut String,
    j: &crate::service::evaluate::JudgePassRates,
    present: &[&str],
    charts: &mut Charts<'_>,
) -> Result<()> {
    let ranked: Vec<String> = present
        .iter()
        .filter(|b| !matches!(**b, "overall" | "dropped" | "not retrieved"))
        .map(|b| (*b).to_string())
        .collect();
    if !ranked.is_empty() {
        let series: Vec<(String, Vec<Option<f64>>)> = j
            .rows
            .iter()
            .map(|c| {
                let v = ranked
                    .iter()
                    .map(|b| {
                        c.buckets
                            .iter()
                            .find(|x| x.bucket == b.as_str())
                            .map(|x| x.pass as f64 / x.total as f64)
                    })
                    .collect();
                (c.criterion.clone(), v)
            })
            .collect();
        let img = charts.write(
            "judge-by-rank.svg",
            &charts::category_lines(
                "Judge pass rate by target rank in the prompt (Figure 6)",
                &ranked,
                "pass rate",
                &series,
            )?,
        )?;
        let _ = writeln!(s, "{img}\n");
    }
    Ok(())
}

/// Figure 5: each run's overall pass rate per criterion (`report answers --json`).
fn per_run(s: &mut String, r: &StudyReport) {
    let Some(serde_json::Value::Object(runs)) = &r.answers else {
        return;
    };
    let mut criteria: Vec<String> = Vec::new();
    for (name, v) in runs {
        if name == "frugality" {
            continue;
        }
        if let Some(serde_json::Value::Object(p)) = v.get("pass_rates") {
            for c in p.keys() {
                if !criteria.contains(c) {
                    criteria.push(c.clone());
                }
            }
        }
    }
    let _ = writeln!(
        s,
        "Pass rate per criterion per run (Figure 5), from `raglab report answers --json` (`pass_rates.*.overall`):\n"
    );
    let mut cols = vec!["run", "model", "answers", "mean latency (s)"];
    cols.extend(criteria.iter().map(String::as_str));
    header(s, &cols);
    for (name, v) in runs {
        if name == "frugality" {
            continue;
        }
        let mut cells = vec![
            cell(name),
            cell(v["model"].as_str().unwrap_or("-")),
            v["answers"].to_string(),
            v["mean_total_ms"]
                .as_f64()
                .map_or_else(|| "-".into(), |ms| format!("{:.3}", ms / 1e3)),
        ];
        for c in &criteria {
            cells.push(
                v["pass_rates"][c]["overall"]["rate"]
                    .as_f64()
                    .map_or_else(|| "-".into(), f4),
            );
        }
        row(s, &cells);
    }
    let _ = writeln!(s);
}

/// Each run's `{judge: summary}` object under `key` in `report answers --json`, as
/// (run, judge, summary) rows; None when there is no answers report.
fn per_run_and_judge<'a>(
    r: &'a StudyReport,
    key: &str,
) -> Option<Vec<(&'a String, &'a String, &'a serde_json::Value)>> {
    let Some(serde_json::Value::Object(runs)) = &r.answers else {
        return None;
    };
    Some(
        runs.iter()
            .filter(|(name, _)| name.as_str() != "frugality")
            .filter_map(|(name, v)| v.get(key).and_then(|o| o.as_object()).map(|o| (name, o)))
            .flat_map(|(name, by_judge)| by_judge.iter().map(move |(j, v)| (name, j, v)))
            .collect(),
    )
}

/// Citation recall and precision per run and entailment judge (`raglab answers
/// cite`), as `report answers --json` counts them (`citations`): each mean over the
/// answers where it is defined, the undefined ones counted beside it, and the cited
/// chunks that were not in the prompt. Runs never scored are not listed.
fn citations(s: &mut String, r: &StudyReport) {
    let Some(scored) = per_run_and_judge(r, "citations") else {
        return;
    };
    let _ = writeln!(s, "## Citations\n");
    if scored.is_empty() {
        let _ = writeln!(
            s,
            "No run's citations are scored: `raglab answers cite --run RUN` scores them.\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "Citation recall (sentences entailed by the chunks they cite / sentences) and precision (citations needed / citations), ALCE's rules, each entailment judged by the model named; from `raglab report answers --json` (`*.citations`):\n"
    );
    header(
        s,
        &[
            "run",
            "judge",
            "answers",
            "recall",
            "undefined",
            "precision",
            "undefined",
            "citations",
            "cited outside the prompt",
        ],
    );
    for (run, judge, c) in scored {
        let mean = |k: &str| c[k].as_f64().map_or_else(|| "undefined".into(), f4);
        let outside = c["outside_prompt"].as_array().map_or(0, Vec::len);
        row(
            s,
            &[
                cell(run),
                cell(judge),
                c["scored"].to_string(),
                mean("recall"),
                c["recall_undefined"].to_string(),
                mean("precision"),
                c["precision_undefined"].to_string(),
                c["citations"].to_string(),
                outside.to_string(),
            ],
        );
    }
    let _ = writeln!(s);
}

/// Grounded means per run and judge (`raglab answers ground`), as `report answers
/// --json` counts them (`grounded`): each mean over the answers where the metric is
/// defined, the undefined count beside it. Runs never scored are not listed.
fn grounded(s: &mut String, r: &StudyReport) {
    let Some(scored) = per_run_and_judge(r, "grounded") else {
        return;
    };
    let _ = writeln!(s, "## Grounded answers\n");
    if scored.is_empty() {
        let _ = writeln!(
            s,
            "No run's answers are grounded: `raglab answers ground --run RUN` scores them.\n"
        );
        return;
    }
    let _ = writeln!(
        s,
        "RAGAS-family metrics, each judged statement by statement by the model named: faithfulness to the contexts in the prompt, context precision and recall against the reference answer, answer correctness (0.75 x statement F1 + 0.25 x embedding similarity unless the run was scored with other weights); each mean over the answers where it is defined, with the undefined count; from `raglab report answers --json` (`*.grounded`):\n"
    );
    header(
        s,
        &[
            "run",
            "judge",
            "answers",
            "faithfulness",
            "context precision",
            "context recall",
            "answer correctness",
        ],
    );
    for (run, judge, g) in scored {
        let m = |k: &str| {
            let mean = g[k]["mean"].as_f64().map_or_else(|| "undefined".into(), f4);
            format!("{mean} ({} undefined)", g[k]["undefined"])
        };
        row(
            s,
            &[
                cell(run),
                cell(judge),
                g["answers"].to_string(),
                m("faithfulness"),
                m("context_precision"),
                m("context_recall"),
                m("answer_correctness"),
            ],
        );
    }
    let _ = writeln!(s);
}

fn agreement(s: &mut String, r: &StudyReport) {
    let _ = writeln!(s, "## Agreement (paper Table 6)\n");
    let Some(a) = &r.agreement else {
        return missing(s, r, "agreement");
    };
    let _ = writeln!(
        s,
        "Source: `raglab agree --json` for {} (its defaults; only the items blinding lets that viewer see: {} left out).\n",
        r.viewer, a.hidden_items
    );
    let _ = writeln!(s, "{}", crate::service::study::to_markdown(a));
    // Named where they are skipped, as `agree` names them.
    if !a.refused.is_empty() {
        let _ = writeln!(
            s,
            "Stored rows not counted ({}, unsigned, forged or repeated):
",
            a.refused.len()
        );
        for r in &a.refused {
            let _ = writeln!(s, "- {}", cell(&r.why));
        }
        let _ = writeln!(s);
    }
}

/// The trade-off plane of one comparison: each configuration at (latency cost dC,
/// accuracy gain dA), over the F contours of its temperatures; `None` without them.
fn plane(
    charts: &mut Charts<'_>,
    file: &str,
    title: &str,
    points: Vec<crate::cli::charts::Point>,
    temperatures: (Option<f64>, Option<f64>),
) -> Result<Option<String>> {
    use crate::core::frugality::{CONTOUR_LEVELS, contour_accuracy};
    let (Some(t_acc), Some(t_cost)) = temperatures else {
        return Ok(None);
    };
    if points.is_empty() {
        return Ok(None);
    }
    let (lo, hi) = points
        .iter()
        .fold((0.0f64, 0.0f64), |(a, b), p| (a.min(p.x), b.max(p.x)));
    let pad = ((hi - lo) * 0.15).max(0.05);
    let xs: Vec<f64> = (0..=60)
        .map(|i| lo - pad + (hi - lo + 2.0 * pad) * f64::from(i) / 60.0)
        .collect();
    let contours: Vec<crate::cli::charts::Series> = CONTOUR_LEVELS
        .iter()
        .map(|&f| crate::cli::charts::Series {
            name: format!("F = {f}"),
            points: xs
                .iter()
                .filter_map(|&x| Some((x, contour_accuracy(f, x, t_acc, t_cost)?)))
                .collect(),
        })
        .collect();
    let svg = crate::cli::charts::scatter_over_lines(
        title,
        ("latency cost dC (s)", "accuracy gain dA"),
        &points,
        &contours,
    )?;
    Ok(Some(charts.write(file, &svg)?))
}

fn frugality(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<()> {
    let _ = writeln!(s, "## Frugality\n");
    let answers = frugality_answers(s, r, charts)?;
    let mcqa = frugality_mcqa(s, r, charts)?;
    let any = answers || mcqa;
    if !any {
        missing(s, r, "frugality");
        return Ok(());
    }
    let _ = writeln!(
        s,
        "F = tanh(A - C) is positive where the accuracy gain is worth its latency cost; the contours are the configurations F would give -0.5, 0 and 0.5 at these temperatures. The last column is F's range when each temperature moves by 30% (a sign that changes there is a conclusion the temperatures decide).\n"
    );
    Ok(())
}

/// Frugality of the free-form answer runs against the no-retrieval baseline (`report
/// answers --baseline`): the table and its trade-off plane; false when there is none.
fn frugality_answers(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<bool> {
    let Some(f) = r.answers.as_ref().and_then(|v| v.get("frugality")) else {
        return Ok(false);
    };
    let _ = writeln!(
        s,
        "Free-form answers against the no-retrieval run `{}`: `raglab report answers --baseline {} --json` (`frugality`). Accuracy: {}. Cost: {}. {}.\n",
        cell(r.answers_baseline.as_deref().unwrap_or("-")),
        cell(r.answers_baseline.as_deref().unwrap_or("-")),
        cell(f["accuracy"].as_str().unwrap_or("-")),
        cell(f["cost"].as_str().unwrap_or("-")),
        cell(f["formula"].as_str().unwrap_or("-")),
    );
    header(
        s,
        &[
            "run",
            "k",
            "method",
            "n",
            "dA",
            "dC (s)",
            "A",
            "C",
            "F",
            "F, temperatures x0.7-1.3",
        ],
    );
    let configurations = f["configurations"].as_array().cloned().unwrap_or_default();
    for c in &configurations {
        let num = |k: &str| c[k].as_f64().map_or_else(|| "undefined".into(), f4);
        row(
            s,
            &[
                cell(c["run"].as_str().unwrap_or("-")),
                c["k"].to_string(),
                cell(c["method"].as_str().unwrap_or("-")),
                c["n_questions"].to_string(),
                num("d_accuracy"),
                num("d_latency_s"),
                num("A"),
                num("C"),
                num("F"),
                crate::core::frugality::sensitivity_label(
                    c["d_accuracy"].as_f64(),
                    c["d_latency_s"].as_f64(),
                    c["t_accuracy"].as_f64(),
                    c["t_latency_s"].as_f64(),
                ),
            ],
        );
    }
    let _ = writeln!(s);
    let points = configurations
        .iter()
        .filter_map(|c| {
            Some(crate::cli::charts::Point {
                name: c["run"].as_str()?.to_string(),
                x: c["d_latency_s"].as_f64()?,
                y: c["d_accuracy"].as_f64()?,
            })
        })
        .collect();
    let temps = (
        f["t_accuracy"]["value"].as_f64(),
        f["t_latency_s"]["value"].as_f64(),
    );
    if let Some(img) = plane(
        charts,
        "frugality-answers.svg",
        "Accuracy gain against latency cost, answer runs (F contours)",
        points,
        temps,
    )? {
        let _ = writeln!(s, "{img}\n");
    }
    Ok(true)
}

/// Frugality of the MCQA run, each k against k = 0: the table and its trade-off
/// plane; false when there is none.
fn frugality_mcqa(s: &mut String, r: &StudyReport, charts: &mut Charts<'_>) -> Result<bool> {
    let (Some(f), Some(m)) = (&r.mcqa_frugality, &r.mcqa) else {
        return Ok(false);
    };
    let _ = writeln!(
        s,
        "MCQA run `{}`, each k against k = 0 (`raglab eval mcqa --report-only --json`, `frugality`; over every stored answer of the run). Accuracy: {}. Cost: {}.\n",
        cell(&m.report.run),
        f.accuracy,
        f.cost
    );
    header(
        s,
        &[
            "k",
            "n",
            "dA",
            "dC (s)",
            "A",
            "C",
            "F",
            "F, temperatures x0.7-1.3",
        ],
    );
    for c in &f.configurations {
        let p = &c.score.paired;
        row(
            s,
            &[
                c.k.to_string(),
                p.n_questions.to_string(),
                f4(p.d_accuracy),
                f4(p.d_latency_s),
                opt4(c.score.a),
                opt4(c.score.c),
                opt4(c.score.f),
                crate::core::frugality::sensitivity_label(
                    Some(p.d_accuracy),
                    Some(p.d_latency_s),
                    c.score.t_accuracy,
                    c.score.t_latency_s,
                ),
            ],
        );
    }
    let _ = writeln!(s);
    let points = f
        .configurations
        .iter()
        .map(|c| crate::cli::charts::Point {
            name: format!("k = {}", c.k),
            x: c.score.paired.d_latency_s,
            y: c.score.paired.d_accuracy,
        })
        .collect();
    if let Some(img) = plane(
        charts,
        "frugality-mcqa.svg",
        "Accuracy gain against latency cost, MCQA by k (F contours)",
        points,
        (f.t_accuracy.value, f.t_latency_s.value),
    )? {
        let _ = writeln!(s, "{img}\n");
    }
    Ok(true)
}
