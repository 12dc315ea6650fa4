//! `raglab calibrate`: a judge that learns from the study. The items whose final
//! labels (agreed or adjudicated) are settled on every criterion become few-shot
//! examples in the judge's prompt, chosen by k-fold ([`crate::core::calibration`]) so
//! every item is judged by a prompt that never saw it. The judge runs exactly as
//! `raglab judge` runs it (the local model or the endpoints); its calibrated
//! judgements are stored under its name with a tag (`model.gguf+calibrated-k5-s4-seed1`).
//!
//! The report compares, over the same items, the plain judge ("before": its stored
//! judgements, the missing ones judged first) and the calibrated judge ("after")
//! against the final labels: kappa per criterion and Overall, the paired bootstrap
//! difference after - before with its 95% CI, and the judge within human noise
//! before and after.

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::labels::pick_reviewers;
use super::labels::{FinalLabel, Item, JUDGE, Label, criterion_rows, final_labels, noise_table};
use super::trust::read_items;
use crate::core::agreement::{AgreementReport, Bootstrap, Estimate, NoiseReport, agreement};
use crate::core::blinding::{Blinding, LabelVersion, Viewer};
use crate::core::calibration::{FoldAssignment, Shot, examples_section, kappa_difference, plan};
use crate::core::prompt::PromptText;
use crate::core::rubric::Rubric;
use crate::service::answer::{
    AnswerRecord, FewShot, JudgeBatch, JudgeRepeats, JudgeScope, JudgementRecord, answers,
    judgements,
};
use crate::service::base::{Context, ModelChoice};

/// How to calibrate.
#[derive(Debug, Clone)]
pub struct CalibrateRequest {
    /// Folds of the k-fold split (at least 2, at most the number of items).
    pub folds: usize,
    /// Examples in each prompt.
    pub shots: usize,
    /// Seed of the split and of the choice of examples.
    pub seed: u64,
    pub boot: Bootstrap,
    /// The judge (default: config `models.judge`, else the generator; the endpoints
    /// when configured, unless `local`).
    pub judge: ModelChoice,
    pub local: bool,
    /// The reviewer pair whose final labels count (default: the two with most labels).
    pub reviewers: Option<(String, String)>,
}

/// One row of the report: a criterion, or Overall (every criterion pooled).
#[derive(Debug, Clone, Serialize)]
pub struct CalibrationRow {
    pub criterion: String,
    /// The plain judge against the final labels.
    pub before: Option<AgreementReport>,
    /// The calibrated judge against the final labels.
    pub after: Option<AgreementReport>,
    /// kappa(after) - kappa(before), paired bootstrap over items.
    pub difference: Estimate,
    /// Judge within human noise, the plain judge.
    pub noise_before: NoiseReport,
    /// Judge within human noise, the calibrated judge.
    pub noise_after: NoiseReport,
}

/// Judgements made by this call (stored ones are reused).
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Judged {
    pub before: usize,
    pub after: usize,
}

/// What [`calibrate`] found.
#[derive(Debug, Clone, Serialize)]
pub struct Calibration {
    /// The plain judge's name in the judgements.
    pub judge_model: String,
    /// The calibrated judge's name in the judgements.
    pub calibrated_model: String,
    pub reviewers: (String, String),
    pub folds: usize,
    pub shots: usize,
    pub seed: u64,
    pub bootstrap: Bootstrap,
    /// Items calibrated on: a final label on every criterion and a stored answer.
    pub items: usize,
    /// Items with some final label left out (a criterion unresolved, or no stored
    /// answer to judge).
    pub left_out: usize,
    pub judged: Judged,
    /// Each item's fold and the items its prompt shows as examples.
    pub plan: Vec<FoldAssignment>,
    pub rows: Vec<CalibrationRow>,
}

/// The reviewers' labels before reveal and the final labels of the pair, as the lead
/// sees them.
struct Finals {
    current: BTreeMap<(String, String, String), Label>,
    finals: Vec<FinalLabel>,
    reviewers: (String, String),
}

async fn finals(
    ctx: &Context,
    rubric: &Rubric,
    reviewers: Option<(String, String)>,
) -> Result<Finals> {
    let log = super::trust::trusted_log(ctx).await?;
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(&log.labels, &keys, &log.schedule);
    let seen = blinding.visible_labels(&Viewer::Lead, &log.labels);
    let current = blinding.current(&seen, LabelVersion::BeforeReveal);
    let latest = blinding.current(&seen, LabelVersion::Latest);
    let (r1, r2) = pick_reviewers(&current, reviewers)?;
    let finals = final_labels(&current, &latest, (&r1, &r2));
    Ok(Finals {
        current,
        finals,
        reviewers: (r1, r2),
    })
}

/// The items to calibrate on, each with its final labels in rubric order, and how
/// many items with final labels were left out.
fn shots_of(
    rubric: &Rubric,
    items: &[Item],
    finals: &[FinalLabel],
    stored: &HashSet<String>,
) -> (Vec<Shot>, usize) {
    let mut by_item: BTreeMap<&str, HashMap<&str, &str>> = BTreeMap::new();
    for f in finals {
        if let Some(l) = &f.label {
            by_item
                .entry(f.item_id.as_str())
                .or_default()
                .insert(f.criterion.as_str(), l.as_str());
        }
    }
    let shots: Vec<Shot> = items
        .iter()
        .filter(|i| i.answer_id.as_ref().is_some_and(|a| stored.contains(a)))
        .filter_map(|i| {
            let f = by_item.get(i.item_id.as_str())?;
            let labels = rubric
                .criteria
                .iter()
                .map(|c| Some((c.key.clone(), (*f.get(c.key.as_str())?).to_string())))
                .collect::<Option<Vec<_>>>()?;
            Some(Shot {
                item: i.clone(),
                labels,
            })
        })
        .collect();
    let left_out = by_item.len() - shots.len();
    (shots, left_out)
}

/// The newest judgement of each answer by `model`: answer id -> criterion -> label.
fn labels_by(judged: &[JudgementRecord], model: &str) -> HashMap<String, HashMap<String, String>> {
    let mut out: HashMap<String, HashMap<String, String>> = HashMap::new();
    for j in judged.iter().filter(|j| j.judge_model == model) {
        out.insert(
            j.answer_id.clone(),
            j.criteria
                .iter()
                .cloned()
                .zip(j.labels.iter().cloned())
                .collect(),
        );
    }
    out
}

/// Calibrate the judge on the study's final labels (the lead's view: every label),
/// judging what is not judged yet; `progress` gets (step, done, total), the step
/// `before` (the plain judge) or `after` (the calibrated judge).
pub async fn calibrate(
    ctx: &Context,
    rubric: &Rubric,
    viewer: &Viewer,
    req: CalibrateRequest,
    progress: &dyn Fn(&str, usize, usize),
) -> Result<Calibration> {
    if *viewer != Viewer::Lead {
        bail!(
            "calibration reads every final label and the judge's labels of every item: it is the study lead's (`--role lead`)"
        );
    }
    let items = read_items(ctx).await?;
    let f = finals(ctx, rubric, req.reviewers.clone())
        .await
        .context("calibration learns from the study's final labels (two reviewers' agreed labels and the lead's adjudications)")?;
    let stored: HashSet<String> = answers(&ctx.workspace)
        .read_all::<AnswerRecord>()
        .await?
        .into_iter()
        .map(|a| a.answer_id)
        .collect();
    let (shots, left_out) = shots_of(rubric, &items, &f.finals, &stored);
    let plan = plan(&shots, req.folds, req.shots, req.seed)?;
    let shot_of: HashMap<&str, &Shot> =
        shots.iter().map(|s| (s.item.item_id.as_str(), s)).collect();
    let answer_of = |item: &str| -> String {
        shot_of
            .get(item)
            .and_then(|s| s.item.answer_id.clone())
            .unwrap_or_default()
    };
    let examples: HashMap<String, PromptText> = plan
        .items
        .iter()
        .map(|a| {
            let ex: Vec<&Shot> = a
                .shots
                .iter()
                .filter_map(|id| shot_of.get(id.as_str()).copied())
                .collect();
            (answer_of(&a.item_id), examples_section(&ex))
        })
        .collect();
    let (judged, judge_model, calibrated_model) =
        judge_before_after(ctx, rubric, &req, examples, progress).await?;
    let stored_judgements: Vec<JudgementRecord> = judgements(&ctx.workspace).read_all().await?;
    let plain = labels_by(&stored_judgements, &judge_model);
    let calibrated = labels_by(&stored_judgements, &calibrated_model);
    let rows = report_rows(
        rubric,
        &plan.items,
        &|item| answer_of(item),
        &f,
        (&plain, &calibrated),
        req.boot,
    );
    Ok(Calibration {
        judge_model,
        calibrated_model,
        reviewers: f.reviewers,
        folds: plan.folds,
        shots: plan.shots,
        seed: plan.seed,
        bootstrap: req.boot,
        items: plan.items.len(),
        left_out,
        judged,
        plan: plan.items,
        rows,
    })
}

/// Judge the calibrated items' answers twice where not judged yet: by the plain judge
/// (before), then with each answer's few-shot examples (after). Returns how many each
/// pass judged, and the two judges' names.
async fn judge_before_after(
    ctx: &Context,
    rubric: &Rubric,
    req: &CalibrateRequest,
    examples: HashMap<String, PromptText>,
    progress: &dyn Fn(&str, usize, usize),
) -> Result<(Judged, String, String)> {
    let answer_ids: HashSet<String> = examples.keys().cloned().collect();
    let mut batch = JudgeBatch::prepare(
        ctx,
        rubric.clone(),
        None,
        &req.judge,
        None,
        None,
        req.local,
        JudgeRepeats::default(),
        JudgeScope {
            answers: Some(answer_ids.clone()),
            ..JudgeScope::default()
        },
    )
    .await?;
    let before = batch.run(ctx, &|d, t| progress("before", d, t)).await?;
    let tag = crate::core::calibration::calibrated_tag(req.folds, req.shots, req.seed);
    batch
        .select(
            ctx,
            None,
            None,
            None,
            1,
            JudgeScope {
                answers: Some(answer_ids),
                few_shot: Some(FewShot { tag, examples }),
                template: None,
            },
        )
        .await?;
    let after = batch.run(ctx, &|d, t| progress("after", d, t)).await?;
    Ok((
        Judged { before, after },
        batch.base_name().to_string(),
        batch.judge_name().to_string(),
    ))
}

type ByAnswer = HashMap<String, HashMap<String, String>>;

/// One judge's label of `item` on criterion `c`, from its judgements by answer id.
fn judge_label(
    by: &ByAnswer,
    answer_of: &dyn Fn(&str) -> String,
    item: &str,
    c: &str,
) -> Option<String> {
    by.get(&answer_of(item))?.get(c).cloned()
}

/// The two reviewers' current labels of the calibrated items, with one judge's
/// (`by`) as the judge's.
fn labels_with_judge(
    rubric: &Rubric,
    items: &[FoldAssignment],
    answer_of: &dyn Fn(&str) -> String,
    f: &Finals,
    by: &ByAnswer,
) -> BTreeMap<(String, String, String), Label> {
    let mut cur: BTreeMap<(String, String, String), Label> = f
        .current
        .iter()
        .filter(|((i, r, _), _)| {
            (r == &f.reviewers.0 || r == &f.reviewers.1) && items.iter().any(|a| &a.item_id == i)
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for a in items {
        for c in &rubric.criteria {
            if let Some(l) = judge_label(by, answer_of, &a.item_id, &c.key) {
                let label = Label::new(
                    &a.item_id,
                    JUDGE,
                    &c.key,
                    Some(l.as_str()),
                    None,
                    &rubric.version,
                );
                cur.insert((a.item_id.clone(), JUDGE.into(), c.key.clone()), label);
            }
        }
    }
    cur
}

/// The report's rows over the calibrated items: per criterion and Overall, each
/// judge against the final labels, the paired difference, and each judge within
/// human noise.
fn report_rows(
    rubric: &Rubric,
    items: &[FoldAssignment],
    answer_of: &dyn Fn(&str) -> String,
    f: &Finals,
    (plain, calibrated): (&ByAnswer, &ByAnswer),
    boot: Bootstrap,
) -> Vec<CalibrationRow> {
    let finals: HashMap<(&str, &str), &str> = f
        .finals
        .iter()
        .filter_map(|x| {
            Some((
                (x.item_id.as_str(), x.criterion.as_str()),
                x.label.as_deref()?,
            ))
        })
        .collect();
    let judge_of = |by: &ByAnswer, item: &str, c: &str| judge_label(by, answer_of, item, c);
    let with_judge = |by: &ByAnswer| labels_with_judge(rubric, items, answer_of, f, by);
    let pair = (f.reviewers.0.as_str(), f.reviewers.1.as_str());
    let noise_before = noise_table(rubric, &with_judge(plain), pair, boot);
    let noise_after = noise_table(rubric, &with_judge(calibrated), pair, boot);
    criterion_rows(rubric)
        .into_iter()
        .zip(noise_before.into_iter().zip(noise_after))
        .map(|((name, keys), ((_, nb), (_, na)))| {
            // Per item: (before, after, final) of each criterion all three labelled.
            let units: Vec<Vec<[String; 3]>> = items
                .iter()
                .map(|a| {
                    keys.iter()
                        .filter_map(|k| {
                            Some([
                                judge_of(plain, &a.item_id, k)?,
                                judge_of(calibrated, &a.item_id, k)?,
                                (*finals.get(&(a.item_id.as_str(), *k))?).to_string(),
                            ])
                        })
                        .collect::<Vec<_>>()
                })
                .filter(|v| !v.is_empty())
                .collect();
            let against = |j: usize| {
                let pairs: Vec<Vec<(String, String)>> = units
                    .iter()
                    .map(|v| v.iter().map(|t| (t[j].clone(), t[2].clone())).collect())
                    .collect();
                (!pairs.is_empty()).then(|| agreement(&pairs, boot))
            };
            CalibrationRow {
                criterion: name,
                before: against(0),
                after: against(1),
                difference: kappa_difference(&units, boot),
                noise_before: nb,
                noise_after: na,
            }
        })
        .collect()
}
