//! `raglab report runs`: every pipeline of the workspace side by side, the question
//! an analyst asks last ("which one do we ship?"): one row per retrieval configuration
//! of the last `eval retrieval` and per answer run (own and imported), each with its
//! pipeline in short, its quality with a 95% interval clustered by question, its cost,
//! whether another row dominates it, and its paired difference from a pinned baseline.
//!
//! Rules:
//! - **Quality.** Retrieval rows: every metric of the last evaluation's per-query
//!   scores (nDCG@10, Recall@k, ...). Answer rows: the judge's pass rate per criterion
//!   over the questions whose picked answer (the first stored answer with a judgement
//!   the viewer may see) has a label for it. Each mean carries its naive and clustered
//!   standard errors and the normal 95% interval with the clustered one; a question's
//!   cluster is its target's source document (or its `cluster` field).
//! - **Cost.** Answer rows: prompt and generated tokens per answer and the latency of
//!   each recorded stage (retrieve, rerank, generate, total) at p50 and p95, and where
//!   it ran. Retrieval rows: the evaluation's ranking time per query, shared by its
//!   configurations (one ranking pass serves them all), plus the rerank stage's.
//! - **Pareto.** Among the rows that have the chosen quality column, a row is
//!   dominated when another is at least as good on quality, latency and tokens and
//!   strictly better on one ([`crate::core::significance::dominated_by`]).
//! - **Baseline.** Rows of the baseline's kind are paired with it over the questions
//!   both have: the mean difference on the quality column with its clustered interval
//!   and minimum detectable effect, the randomisation test for scores and McNemar's
//!   exact test for pass/fail, Holm-adjusted over the rows shown.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};

use crate::core::answer::{AnswerRecord, JudgementRecord};
use crate::core::question::document_of;
use crate::core::significance::{
    ClusteredInterval, ParetoPoint, ScoreTable, TestSettings, cluster_numbers,
    clustered_difference, clustered_mean, dominated_by, holm, mcnemar_exact, sign_flip_p,
};
use crate::core::stats::quantile;
use crate::service::base::Context;
use crate::service::evaluate::{
    RetrievalReport, describe_clusters, label_of, labels_by_question, last_retrieval, last_scores,
    read_clusters,
};

/// What to show and against what.
#[derive(Debug, Clone, Default)]
pub struct RunsRequest {
    /// The quality column the Pareto marks and the baseline use (a retrieval metric
    /// such as `nDCG@10`, or a judge criterion); None: nDCG@10 when retrieval rows
    /// exist, else the first criterion.
    pub quality: Option<String>,
    /// The pinned baseline row's label.
    pub baseline: Option<String>,
    /// A file of `query-id cluster` lines for the retrieval rows.
    pub clusters: Option<PathBuf>,
}

/// The matrix, as `report runs --json` prints it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunsMatrix {
    /// The quality column of the Pareto marks and the baseline comparison.
    pub quality: String,
    pub baseline: Option<String>,
    /// Where the retrieval rows' clusters came from.
    pub clusters: String,
    /// Which p-values Holm adjusted together.
    pub holm_family: String,
    pub rows: Vec<RunRow>,
    /// What the matrix does not know (stages never timed, rows without the column).
    pub notes: Vec<String>,
}

/// One pipeline.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    pub label: String,
    /// `retrieval` or `answers`.
    pub kind: String,
    pub pipeline: Pipeline,
    /// Questions (retrieval: judged queries; answers: questions answered).
    pub questions: usize,
    /// Quality columns by name, each a mean with its interval.
    pub quality: BTreeMap<String, QualityEstimate>,
    pub cost: Cost,
    /// The label of a row that dominates this one (None: on the Pareto front, or
    /// without the quality column).
    pub dominated_by: Option<String>,
    /// The paired difference from the baseline (None: no baseline, the baseline itself,
    /// or a row of the other kind).
    pub against_baseline: Option<BaselineDiff>,
    /// Answer rows: each criterion's judge pass rate corrected by the study's final
    /// human labels of answers of this run (PPI, PPI++, Rogan-Gladen); empty without
    /// such labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub corrected: BTreeMap<String, crate::core::study::correction::Corrected>,
}

impl RunRow {
    /// The pipeline in a few words (`hybrid bm25 a0.70 k3 rerank SmolLM2…`), as the
    /// matrix's text and the Runs pane list it.
    pub fn pipeline_short(&self) -> String {
        let p = &self.pipeline;
        let mut parts = vec![p.method.clone()];
        parts.extend(p.sparse.clone());
        parts.extend(p.alpha.map(|a| format!("a{a:.2}")));
        parts.extend(p.k.map(|k| format!("k{k}")));
        if p.rerank.is_some() {
            parts.push("rerank".into());
        }
        parts.extend(p.generator.as_ref().map(|g| g.chars().take(16).collect()));
        parts.join(" ")
    }
}

/// A pipeline in short.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pipeline {
    /// bm25, tfidf, dense, hybrid, linear; `none` for an answer run without retrieval;
    /// `external` for an imported system.
    pub method: String,
    pub sparse: Option<String>,
    /// How the lists were fused (`rrf` for hybrid, `min-max linear` for linear).
    pub fusion: Option<String>,
    /// The dense weight of the fusion.
    pub alpha: Option<f64>,
    /// The rerank stage (`10:5 by MODEL`).
    pub rerank: Option<String>,
    /// The prompt template, `name@hash`.
    pub template: Option<String>,
    pub context_policy: Option<String>,
    /// Chunks in the prompt (answer runs).
    pub k: Option<u32>,
    /// The generator: a model file, an endpoint's served model, or the imported system.
    pub generator: Option<String>,
}

/// A mean with its standard errors and clustered 95% interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QualityEstimate {
    pub n: usize,
    pub mean: f64,
    #[serde(flatten)]
    pub interval: ClusteredInterval,
}

/// What a row costs.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Cost {
    /// Mean prompt tokens per answer (None: retrieval rows).
    pub prompt_tokens: Option<f64>,
    /// Mean generated tokens per answer.
    pub output_tokens: Option<f64>,
    /// Latency per stage (`retrieve`, `rerank`, `generate`, `total`), ms.
    pub latency_ms: BTreeMap<String, Latency>,
    /// Where it ran: `llama.cpp (MODEL)` on this machine, an endpoint's URL, or the
    /// imported system.
    pub ran_on: Vec<String>,
    /// Rerank scores read from the cache instead of computed (their time is not in the
    /// latency).
    pub rerank_cached: Option<usize>,
}

/// A stage's latency: p50 and p95 where every question was timed, else the mean.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    pub mean: f64,
    pub p50: Option<f64>,
    pub p95: Option<f64>,
}

/// A row against the pinned baseline on the quality column.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BaselineDiff {
    pub metric: String,
    /// Questions paired.
    pub questions: usize,
    /// Mean of row - baseline over them.
    pub difference: f64,
    #[serde(flatten)]
    pub interval: ClusteredInterval,
    /// `randomisation` (scores) or `mcnemar` (pass/fail).
    pub test: String,
    pub p: f64,
    pub p_holm: f64,
}

/// Build the matrix of the workspace.
pub async fn runs_matrix(
    ctx: &Context,
    req: &RunsRequest,
    sight: &crate::core::blinding::Sight,
) -> Result<RunsMatrix> {
    let mut notes = Vec::new();
    let retrieval = retrieval_rows(ctx, req, &mut notes)?;
    let answers = answer_rows(ctx, sight, &mut notes).await?;
    if retrieval.is_none() && answers.is_empty() {
        bail!(
            "no runs in this workspace yet: run `raglab eval retrieval --queries FILE` (retrieval rows) or `raglab generate --questions FILE` (answer rows)"
        );
    }
    let quality = req.quality.clone().unwrap_or_else(|| {
        if retrieval.is_some() {
            "nDCG@10".into()
        } else {
            first_criterion(&answers).unwrap_or_else(|| "correct".into())
        }
    });
    let (clusters, mut rows, paired) = match retrieval {
        Some(r) => (r.clusters, r.rows, Some(r.table)),
        None => ("no retrieval evaluation".into(), Vec::new(), None),
    };
    let answer_paired: Vec<AnswerPairs> = answers.iter().map(|a| a.pairs.clone()).collect();
    rows.extend(answers.into_iter().map(|a| a.row));
    let quality = canonical_column(&rows, &quality)?;
    mark_dominated(&mut rows, &quality, &mut notes);
    let holm_family = match &req.baseline {
        Some(b) => against_baseline(&mut rows, b, &quality, paired.as_ref(), &answer_paired)?,
        None => "no baseline pinned".into(),
    };
    Ok(RunsMatrix {
        quality,
        baseline: req.baseline.clone(),
        clusters,
        holm_family,
        rows,
        notes,
    })
}

/// The first judge criterion of the answer rows, by name.
fn first_criterion(answers: &[AnswerRun]) -> Option<String> {
    answers
        .iter()
        .flat_map(|a| a.row.quality.keys())
        .min()
        .cloned()
}

/// The quality column as the rows spell it (`ndcg@10` finds `nDCG@10`); an error
/// naming the columns there are when no row has it.
fn canonical_column(rows: &[RunRow], name: &str) -> Result<String> {
    let mut known: Vec<&String> = rows.iter().flat_map(|r| r.quality.keys()).collect();
    known.sort();
    known.dedup();
    match known.iter().find(|k| k.eq_ignore_ascii_case(name)) {
        Some(k) => Ok((*k).clone()),
        None if rows.is_empty() => Ok(name.to_string()),
        None => bail!(
            "no quality column `{name}` (columns: {})",
            known
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The retrieval rows, their clusters' description and the per-query table.
struct RetrievalRows {
    rows: Vec<RunRow>,
    clusters: String,
    table: ScoreTable,
}

fn retrieval_rows(
    ctx: &Context,
    req: &RunsRequest,
    notes: &mut Vec<String>,
) -> Result<Option<RetrievalRows>> {
    let Some(saved) = last_scores(ctx)? else {
        return Ok(None);
    };
    let mut table = saved.report;
    let mut clusters =
        describe_clusters(&table, "each question's `cluster` field or target document");
    if let Some(path) = &req.clusters {
        table.clusters = read_clusters(path, &table.qids)?;
        clusters = describe_clusters(&table, &format!("from {}", path.display()));
    }
    let report = last_retrieval(ctx)?.map(|s| s.report);
    let groups = table.cluster_numbers();
    let per_query_ms = report
        .as_ref()
        .map(|r| 1000.0 * r.seconds.retrieval / r.queries.max(1) as f64);
    if report.is_some() {
        notes.push("retrieval rows: `retrieve` is the evaluation's ranking time per query, shared by its configurations (one pass ranked every list); no per-query timings were kept".into());
    }
    let rows = table
        .runs
        .iter()
        .map(|run| {
            let quality = table
                .metrics
                .iter()
                .zip(&run.scores)
                .filter_map(|(m, col)| estimate(col, &groups).map(|e| (m.clone(), e)))
                .collect();
            RunRow {
                label: run.label.clone(),
                kind: "retrieval".into(),
                pipeline: retrieval_pipeline(report.as_ref(), &run.label),
                questions: table.qids.len(),
                quality,
                cost: retrieval_cost(report.as_ref(), &run.label, per_query_ms),
                dominated_by: None,
                against_baseline: None,
                corrected: BTreeMap::new(),
            }
        })
        .collect();
    Ok(Some(RetrievalRows {
        rows,
        clusters,
        table,
    }))
}

/// A mean with its clustered interval (None: no values).
fn estimate(values: &[f64], groups: &[usize]) -> Option<QualityEstimate> {
    clustered_mean(values, groups).map(|m| QualityEstimate {
        n: m.n,
        mean: m.mean,
        interval: m.into(),
    })
}

/// A retrieval configuration's pipeline, from the evaluation's report when it has it.
fn retrieval_pipeline(report: Option<&RetrievalReport>, label: &str) -> Pipeline {
    let Some(r) = report.and_then(|r| r.results.iter().find(|m| m.label == label)) else {
        return Pipeline {
            method: label.split('-').next().unwrap_or(label).to_string(),
            ..Pipeline::default()
        };
    };
    let fused = matches!(r.method.as_str(), "hybrid" | "linear");
    Pipeline {
        method: r.method.clone(),
        sparse: r.sparse.map(|s| s.to_string()),
        fusion: fused.then(|| {
            if r.method == "hybrid" {
                "rrf".to_string()
            } else {
                "min-max linear".to_string()
            }
        }),
        alpha: r.alpha,
        rerank: r.rerank.as_ref().map(ToString::to_string),
        ..Pipeline::default()
    }
}

/// A retrieval configuration's cost: the shared ranking time, and its rerank stage's.
fn retrieval_cost(
    report: Option<&RetrievalReport>,
    label: &str,
    per_query_ms: Option<f64>,
) -> Cost {
    let mut cost = Cost::default();
    if let Some(ms) = per_query_ms {
        cost.latency_ms.insert(
            "retrieve".into(),
            Latency {
                mean: ms,
                ..Latency::default()
            },
        );
        cost.ran_on
            .push("this machine (raglab eval retrieval)".into());
    }
    let reranked = report
        .and_then(|r| r.results.iter().find(|m| m.label == label))
        .is_some_and(|m| m.rerank.is_some());
    if let (true, Some(r)) = (reranked, report)
        && let Some(stats) = &r.rerank_stats
    {
        cost.latency_ms.insert(
            "rerank".into(),
            Latency {
                mean: stats.cost_ms() / r.queries.max(1) as f64,
                ..Latency::default()
            },
        );
        cost.rerank_cached = Some(stats.cached);
    }
    cost
}

/// One answer run's row and what pairing it with another needs.
struct AnswerRun {
    row: RunRow,
    pairs: AnswerPairs,
}

/// Per criterion, each judged question's pass (1) or fail (0), and each question's
/// cluster.
#[derive(Debug, Clone, Default)]
struct AnswerPairs {
    run: String,
    pass: BTreeMap<String, BTreeMap<String, bool>>,
    cluster: HashMap<String, String>,
    /// The picked answer's id of each judged question.
    answer_of: HashMap<String, String>,
}

async fn answer_rows(
    ctx: &Context,
    sight: &crate::core::blinding::Sight,
    notes: &mut Vec<String>,
) -> Result<Vec<AnswerRun>> {
    let all: Vec<AnswerRecord> = crate::service::answer::answers(&ctx.workspace)
        .read_all()
        .await?;
    if all.is_empty() {
        return Ok(Vec::new());
    }
    let mut judg = sight.judgements_seen(
        crate::service::answer::judgements(&ctx.workspace)
            .read_all()
            .await?,
    );
    judg.retain(|j| !crate::core::calibration::is_calibrated(&j.judge_model));
    let by_answer = crate::core::answer::by_answer(&judg);
    let mut runs: BTreeMap<&str, Vec<&AnswerRecord>> = BTreeMap::new();
    for a in &all {
        runs.entry(a.run.as_str()).or_default().push(a);
    }
    notes.push(
        "answer rows: the judge's time per answer is not recorded, so no `judge` latency is shown"
            .into(),
    );
    let finals = human_finals(ctx, sight).await;
    Ok(runs
        .into_iter()
        .map(|(name, answers)| {
            let mut run = answer_run(name, &answers, &by_answer);
            run.row.corrected = corrections(&run.pairs, &finals, notes);
            run
        })
        .collect())
}

/// The study's final human labels the viewer may see, by (answer id, criterion): the
/// label the two reviewers agreed on, or the lead's adjudication. Empty without a
/// study, without an identity, or when they cannot be read (a study with one
/// reviewer): the matrix is shown without corrections then.
async fn human_finals(
    ctx: &Context,
    sight: &crate::core::blinding::Sight,
) -> HashMap<(String, String), bool> {
    let Ok(rubric) = ctx.rubric(None) else {
        return HashMap::new();
    };
    let Ok(items) = crate::service::study::read_items(ctx).await else {
        return HashMap::new();
    };
    if items.is_empty() {
        return HashMap::new();
    }
    let Ok((finals, _, _)) =
        crate::service::study::export_final(ctx, &rubric, None, &sight.viewer).await
    else {
        return HashMap::new();
    };
    let answer_of: HashMap<&str, &str> = items
        .iter()
        .filter_map(|i| Some((i.item_id.as_str(), i.answer_id.as_deref()?)))
        .collect();
    finals
        .into_iter()
        .filter_map(|f| {
            let answer = answer_of.get(f.item_id.as_str())?;
            Some(((answer.to_string(), f.criterion), f.label? == "pass"))
        })
        .collect()
}

/// Each criterion's pass rate corrected by the human labels of this run's answers: the
/// labelled set is every judged answer with a final human label, the rest judged only.
fn corrections(
    pairs: &AnswerPairs,
    finals: &HashMap<(String, String), bool>,
    notes: &mut Vec<String>,
) -> BTreeMap<String, crate::core::study::correction::Corrected> {
    let mut out = BTreeMap::new();
    if finals.is_empty() {
        return out;
    }
    for (criterion, by_question) in &pairs.pass {
        let mut labelled = Vec::new();
        let mut judge_only = Vec::new();
        for (q, judge) in by_question {
            let answer = &pairs.answer_of[q];
            match finals.get(&(answer.clone(), criterion.clone())) {
                Some(human) => labelled.push((*human, *judge)),
                None => judge_only.push(*judge),
            }
        }
        let Some(c) = crate::core::study::correction::correct(&labelled, &judge_only, 0.05) else {
            continue;
        };
        if c.too_few {
            notes.push(format!(
                "{} / {criterion}: only {} human label(s) correct the judge (fewer than {}): read the corrected rate as a rough guide",
                pairs.run,
                c.n_human,
                crate::core::study::correction::FEW_HUMAN_LABELS
            ));
        }
        out.insert(criterion.clone(), c);
    }
    out
}

/// One answer run's row.
fn answer_run(
    name: &str,
    answers: &[&AnswerRecord],
    by_answer: &HashMap<&str, Vec<&JudgementRecord>>,
) -> AnswerRun {
    let labelled = labels_by_question(answers, by_answer);
    let cluster: HashMap<String, String> = answers
        .iter()
        .map(|a| {
            let c = a
                .target_ids
                .iter()
                .min()
                .map_or_else(|| a.question_id.clone(), |t| document_of(t).to_string());
            (a.question_id.clone(), c)
        })
        .collect();
    let mut pass: BTreeMap<String, BTreeMap<String, bool>> = BTreeMap::new();
    for (q, j) in &labelled {
        for c in &j.criteria {
            if let Some(l) = label_of(j, c) {
                pass.entry(c.clone())
                    .or_default()
                    .insert((*q).to_string(), l == "pass");
            }
        }
    }
    let quality = pass
        .iter()
        .filter_map(|(c, by_q)| {
            let names: Vec<&str> = by_q.keys().map(|q| cluster[q].as_str()).collect();
            let values: Vec<f64> = by_q.values().map(|p| f64::from(u8::from(*p))).collect();
            estimate(&values, &cluster_numbers(&names)).map(|e| (c.clone(), e))
        })
        .collect();
    let questions: std::collections::BTreeSet<&str> =
        answers.iter().map(|a| a.question_id.as_str()).collect();
    AnswerRun {
        row: RunRow {
            label: name.to_string(),
            kind: "answers".into(),
            pipeline: answer_pipeline(answers[0]),
            questions: questions.len(),
            quality,
            cost: answer_cost(answers),
            dominated_by: None,
            against_baseline: None,
            corrected: BTreeMap::new(),
        },
        pairs: AnswerPairs {
            run: name.to_string(),
            pass,
            cluster,
            answer_of: labelled
                .iter()
                .map(|(q, j)| ((*q).to_string(), j.answer_id.clone()))
                .collect(),
        },
    }
}

/// An answer run's pipeline, from its first answer.
fn answer_pipeline(a: &AnswerRecord) -> Pipeline {
    let external = is_external(a);
    let method = if external {
        "external".to_string()
    } else if a.no_retrieval {
        "none".to_string()
    } else {
        a.method.clone()
    };
    Pipeline {
        fusion: (a.method == "hybrid")
            .then(|| "rrf".to_string())
            .or_else(|| (a.method == "linear").then(|| "min-max linear".to_string())),
        alpha: matches!(a.method.as_str(), "hybrid" | "linear").then_some(a.alpha),
        method,
        sparse: None,
        rerank: a.rerank.clone(),
        template: (!external).then(|| a.template_label()),
        context_policy: a.context_policy.clone(),
        k: (!a.no_retrieval).then_some(a.k),
        generator: Some(generator_of(a)),
    }
}

/// An answer imported from another system (`answers import`).
fn is_external(a: &AnswerRecord) -> bool {
    a.method == "external"
}

/// The model that wrote an answer: the served model of an endpoint, the model file's
/// name, or the imported system's.
fn generator_of(a: &AnswerRecord) -> String {
    if let Some(m) = &a.served_model {
        return m.clone();
    }
    let file = std::path::Path::new(&a.model_file).file_name().map_or_else(
        || a.model_file.clone(),
        |f| f.to_string_lossy().into_owned(),
    );
    if file.is_empty() { a.run.clone() } else { file }
}

/// An answer run's tokens, stage latencies and where it ran.
fn answer_cost(answers: &[&AnswerRecord]) -> Cost {
    let n = answers.len() as f64;
    let mean = |f: &dyn Fn(&AnswerRecord) -> f64| answers.iter().map(|a| f(a)).sum::<f64>() / n;
    let stage = |f: &dyn Fn(&AnswerRecord) -> f64| {
        let v: Vec<f64> = answers.iter().map(|a| f(a)).collect();
        Latency {
            mean: v.iter().sum::<f64>() / n,
            p50: quantile(&v, 0.5),
            p95: quantile(&v, 0.95),
        }
    };
    let rerank = |a: &AnswerRecord| a.rerank_ms.unwrap_or(0.0);
    let mut latency = BTreeMap::new();
    latency.insert("retrieve".to_string(), stage(&|a| a.retrieval_ms));
    if answers.iter().any(|a| a.rerank.is_some()) {
        // What the stage cost, cached pairs at their cost when scored (answers stored
        // before costs were kept: their wall time).
        latency.insert(
            "rerank".to_string(),
            stage(&|a| a.rerank_cost_ms.unwrap_or_else(|| rerank(a))),
        );
    }
    latency.insert(
        "generate".to_string(),
        stage(&|a| (a.total_ms - a.retrieval_ms - rerank(a)).max(0.0)),
    );
    latency.insert("total".to_string(), stage(&|a| a.total_ms));
    let mut ran_on: Vec<String> = answers
        .iter()
        .map(|a| match &a.endpoint {
            Some(url) => url.clone(),
            None if is_external(a) => format!("imported from {}", generator_of(a)),
            None => format!("llama.cpp on this machine ({})", generator_of(a)),
        })
        .collect();
    ran_on.sort();
    ran_on.dedup();
    Cost {
        prompt_tokens: Some(mean(&|a| f64::from(a.prompt_tokens))),
        output_tokens: Some(mean(&|a| f64::from(a.output_tokens))),
        latency_ms: latency,
        ran_on,
        rerank_cached: answers.iter().any(|a| a.rerank.is_some()).then(|| {
            answers
                .iter()
                .map(|a| a.rerank_cached.unwrap_or(0) as usize)
                .sum()
        }),
    }
}

/// A row's latency for the Pareto marks: the total's p50 where it was timed per
/// answer, else the sum of its stages' means.
pub fn latency_of(row: &RunRow) -> f64 {
    match row.cost.latency_ms.get("total") {
        Some(t) => t.p50.unwrap_or(t.mean),
        None => row.cost.latency_ms.values().map(|l| l.mean).sum(),
    }
}

/// Mark each row another row dominates on (quality, latency, tokens).
fn mark_dominated(rows: &mut [RunRow], quality: &str, notes: &mut Vec<String>) {
    let points: Vec<ParetoPoint> = rows
        .iter()
        .map(|r| ParetoPoint {
            quality: r.quality.get(quality).map(|e| e.mean),
            latency: latency_of(r),
            tokens: r.cost.prompt_tokens.unwrap_or(0.0) + r.cost.output_tokens.unwrap_or(0.0),
        })
        .collect();
    let without = points.iter().filter(|p| p.quality.is_none()).count();
    if without > 0 {
        notes.push(format!(
            "{without} row(s) have no `{quality}` column: they are not compared on the Pareto front"
        ));
    }
    let by = dominated_by(&points);
    let labels: Vec<String> = rows.iter().map(|r| r.label.clone()).collect();
    for (row, d) in rows.iter_mut().zip(by) {
        row.dominated_by = d.map(|i| labels[i].clone());
    }
}

/// Pair every row of the baseline's kind with it; Holm over the rows' p-values.
fn against_baseline(
    rows: &mut [RunRow],
    baseline: &str,
    quality: &str,
    table: Option<&ScoreTable>,
    answers: &[AnswerPairs],
) -> Result<String> {
    let Some(b) = rows.iter().position(|r| r.label == baseline) else {
        let known: Vec<&str> = rows.iter().map(|r| r.label.as_str()).collect();
        bail!("no row `{baseline}` to pin (rows: {})", known.join(", "));
    };
    let kind = rows[b].kind.clone();
    let mut compared = Vec::new();
    for (i, row) in rows.iter_mut().enumerate() {
        if i == b || row.kind != kind {
            continue;
        }
        let diff = match (kind.as_str(), table) {
            ("retrieval", Some(t)) => retrieval_diff(t, baseline, &row.label, quality),
            _ => answer_diff(answers, baseline, &row.label, quality),
        };
        if let Some(d) = diff {
            row.against_baseline = Some(d);
            compared.push(i);
        }
    }
    let adjusted = holm(
        &compared
            .iter()
            .filter_map(|&i| rows[i].against_baseline.as_ref().map(|d| d.p))
            .collect::<Vec<_>>(),
    );
    for (&i, p) in compared.iter().zip(adjusted) {
        if let Some(d) = rows[i].against_baseline.as_mut() {
            d.p_holm = p;
        }
    }
    Ok(format!(
        "the {} {kind} row(s) paired with `{baseline}` on {quality}",
        compared.len()
    ))
}

/// A retrieval configuration against the baseline configuration on `metric`: the
/// clustered interval and the randomisation test (the default settings of
/// `raglab compare`).
fn retrieval_diff(t: &ScoreTable, base: &str, label: &str, metric: &str) -> Option<BaselineDiff> {
    let (b, c, m) = (t.run(base)?, t.run(label)?, t.metric(metric)?);
    let (bs, cs) = (&t.runs[b].scores[m], &t.runs[c].scores[m]);
    let d = clustered_difference(bs, cs, &t.cluster_numbers())?;
    let s = TestSettings::default();
    let diffs: Vec<f64> = bs.iter().zip(cs).map(|(x, y)| y - x).collect();
    let p = sign_flip_p(&diffs, s.permutations, s.seed);
    Some(BaselineDiff {
        metric: t.metrics[m].clone(),
        questions: d.n,
        difference: d.mean,
        interval: d.into(),
        test: "randomisation".into(),
        p,
        p_holm: p,
    })
}

/// An answer run against the baseline run on `criterion`, over the questions both have
/// a label for: the clustered interval of the difference in pass (0/1) and McNemar.
fn answer_diff(
    answers: &[AnswerPairs],
    base: &str,
    label: &str,
    criterion: &str,
) -> Option<BaselineDiff> {
    let find = |r: &str| answers.iter().find(|a| a.run == r);
    let (a, b) = (find(base)?, find(label)?);
    let (pa, pb) = (a.pass.get(criterion)?, b.pass.get(criterion)?);
    let both: Vec<(&String, bool, bool)> = pa
        .iter()
        .filter_map(|(q, x)| pb.get(q).map(|y| (q, *x, *y)))
        .collect();
    let names: Vec<&str> = both.iter().map(|(q, ..)| a.cluster[*q].as_str()).collect();
    let to_f = |p: bool| f64::from(u8::from(p));
    let xs: Vec<f64> = both.iter().map(|(_, x, _)| to_f(*x)).collect();
    let ys: Vec<f64> = both.iter().map(|(.., y)| to_f(*y)).collect();
    let d = clustered_difference(&xs, &ys, &cluster_numbers(&names))?;
    let outcomes: Vec<(bool, bool)> = both.iter().map(|(_, x, y)| (*x, *y)).collect();
    let p = mcnemar_exact(&outcomes).p;
    Some(BaselineDiff {
        metric: criterion.to_string(),
        questions: d.n,
        difference: d.mean,
        interval: d.into(),
        test: "mcnemar".into(),
        p,
        p_holm: p,
    })
}

/// Sort rows by a column: `label`, `kind` (retrieval rows first), `latency`, `tokens`
/// (ascending), or a quality column (descending, rows without it last).
pub fn sort_rows(rows: &mut [RunRow], column: &str) -> Result<()> {
    let tokens =
        |r: &RunRow| r.cost.prompt_tokens.unwrap_or(0.0) + r.cost.output_tokens.unwrap_or(0.0);
    match column.to_ascii_lowercase().as_str() {
        "label" => rows.sort_by(|a, b| a.label.cmp(&b.label)),
        // Retrieval rows first (the matrix's own order), then answer runs.
        "kind" => rows.sort_by_key(|r| (r.kind != "retrieval", r.label.clone())),
        "latency" => rows.sort_by(|a, b| latency_of(a).total_cmp(&latency_of(b))),
        "tokens" => rows.sort_by(|a, b| tokens(a).total_cmp(&tokens(b))),
        _ => {
            let col = canonical_column(rows, column)?;
            let key = |r: &RunRow| r.quality.get(&col).map_or(f64::NEG_INFINITY, |e| e.mean);
            rows.sort_by(|a, b| key(b).total_cmp(&key(a)));
        }
    }
    Ok(())
}
