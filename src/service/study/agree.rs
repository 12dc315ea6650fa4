//! The agreement between raters and with the judge (`raglab agree`, the Agreement
//! pane), computed for one viewer, and the adjudicated final labels.

use anyhow::{Context as _, Result, bail};
use serde::Serialize;

use super::labels::{
    AgreementRow, Disagreement, FINAL, FinalLabel, JUDGE, Label, agreement_table, disagreements,
    final_labels, noise_table, pick_reviewers,
};
use super::study_read::study_log;
use crate::core::agreement::raters::RaterReport;
use crate::core::agreement::{AgreementReport, Bootstrap, NoiseReport};
use crate::core::annotation::RaterPair;
use crate::core::blinding::{Blinding, LabelVersion, Schedule, Viewer};
use crate::core::rubric::Rubric;
use crate::core::signing::Refusal;
use crate::service::answer::judgements;
use crate::service::base::Context;

/// What an agreement is computed over, and for whom.
#[derive(Debug, Clone)]
pub struct AgreementRequest {
    /// The two reviewers (default: the two with most labels the viewer may see).
    pub reviewers: Option<(String, String)>,
    /// The reviewers of the all-reviewer agreement (default: every reviewer with
    /// labels the viewer may see); computed for more than two reviewers, or two
    /// when the rubric's labels are ordered.
    pub raters: Option<Vec<String>>,
    pub boot: Bootstrap,
    /// The pair whose disagreements are listed.
    pub pair: RaterPair,
    /// A reviewer sees per-item detail and statistics only over items revealed to
    /// them and submitted by them; the lead sees everything.
    pub viewer: Viewer,
    pub version: LabelVersion,
    /// The judge model file whose judgements are compared (default: every plain
    /// judge, the newest judgement of an answer winning; a calibrated judge's only
    /// when named).
    pub judge_model: Option<String>,
    /// The gold rows that count ([`super::gold_rows`]); scored only for the lead
    /// ([`agreement_with`] reads them for the lead alone).
    pub gold: Vec<crate::core::gold::GoldLabel>,
    /// Items per window of the agreement over time ([`DRIFT_WINDOW`] by default).
    pub window: usize,
}

/// The default window of the agreement over time, in items.
pub const DRIFT_WINDOW: usize = 20;

impl Default for AgreementRequest {
    fn default() -> Self {
        Self {
            reviewers: None,
            raters: None,
            boot: Bootstrap::default(),
            pair: RaterPair::Reviewers,
            viewer: Viewer::Nobody,
            version: LabelVersion::BeforeReveal,
            judge_model: None,
            gold: Vec::new(),
            window: DRIFT_WINDOW,
        }
    }
}

/// The agreement table of two reviewers with the judge, for one viewer.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Agreement {
    pub reviewers: (String, String),
    pub bootstrap: Bootstrap,
    pub rows: Vec<AgreementRow>,
    /// Judge within human noise, per criterion and overall.
    pub noise: Vec<(String, NoiseReport)>,
    /// The judge against the adjudicated final labels (agreed + adjudicated).
    pub judge_vs_final: Vec<(String, Option<AgreementReport>)>,
    pub version: LabelVersion,
    /// Labels changed after their item was revealed (item, reviewer, criterion whose
    /// newest label differs from the one given blind).
    pub changed_after_reveal: usize,
    /// Label versions given after reveal (each kept, marked).
    pub labels_after_reveal: usize,
    pub judge_model: Option<String>,
    /// Every judge model with judgements on these items.
    pub judge_models: Vec<String>,
    /// Human reviewers the viewer may compare.
    pub reviewer_names: Vec<String>,
    /// Items left out because they are not revealed to the viewer.
    pub hidden_items: usize,
    pub seconds: f64,
    /// Stored rows left out because they are unsigned or forged, named.
    pub refused: Vec<Refusal>,
    /// Whether the study has a roster (else it is an unsigned study).
    pub signed: bool,
    /// Every reviewer's agreement at once (more than two reviewers, or ordered labels).
    pub raters: Option<RaterReport>,
    /// Each reviewer's accuracy on the gold items (the lead's report only; absent
    /// for a reviewer, so nothing they read tells gold items apart).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gold: Option<Vec<crate::core::gold::GoldAccuracy>>,
    /// Agreement per window of items in the order they were revealed (every
    /// rater's alpha and the pair's kappa), over the items the viewer may see.
    pub drift: Option<crate::core::agreement::drift::Drift>,
    /// Each reviewer's active time per item (the lead's report only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<Vec<crate::core::timing::ReviewerTime>>,
    /// Items on which the selected pair disagrees (only items the viewer may see).
    #[serde(skip)]
    pub disagreements: Vec<Disagreement>,
}

/// Kappa and macro-F1 with bootstrap CIs per criterion and overall, judge within
/// noise, the judge against the final labels, and the disagreements of the pair.
pub async fn agreement_with(
    ctx: &Context,
    rubric: &Rubric,
    mut req: AgreementRequest,
) -> Result<Agreement> {
    if req.viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let mut gold_refused = Vec::new();
    if req.viewer == Viewer::Lead {
        (req.gold, gold_refused) = super::gold_rows(ctx).await?;
    }
    let (items, log, labels) = study_log(ctx, req.judge_model.as_deref()).await?;
    let judge_models: Vec<String> = judgements(&ctx.workspace)
        .read_all::<crate::service::answer::JudgementRecord>()
        .await?
        .into_iter()
        .filter(|j| {
            items
                .iter()
                .any(|i| i.answer_id.as_deref() == Some(&j.answer_id))
        })
        .map(|j| j.judge_model)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let rubric = log.rubric_or(rubric);
    let signed = log.signed();
    let (schedule, refused) = (log.schedule, log.refused);
    let mut a = tokio::task::spawn_blocking(move || {
        agreement_of(&rubric, &labels, &schedule, judge_models, req)
    })
    .await
    .context("the agreement computation stopped")??;
    a.signed = signed;
    a.refused = refused;
    a.refused.extend(gold_refused);
    Ok(a)
}

/// What a view says to a viewer without an identity (it shows no one's labels).
pub const NO_IDENTITY: &str = "no labels are shown without an identity: give your reviewer name (`--reviewer NAME`, or type it in the Annotate pane) to see your labels and the items revealed to you";

/// The agreement of [`agreement_with`] over a label log already read (every label
/// version, the judge's included): only what `req.viewer` may see counts.
pub fn agreement_of(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    judge_models: Vec<String>,
    req: AgreementRequest,
) -> Result<Agreement> {
    if req.viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(labels, &keys, schedule);
    // Pair items' first/second/tie labels count only in a pairwise rubric's table
    // (`preferences` gives their agreement), single answers' only in the others.
    let kind = |item: &str| crate::core::preference::is_pair_item(item) == rubric.is_pairwise();
    let visible: Vec<&Label> = blinding
        .visible_labels(&req.viewer, labels)
        .into_iter()
        .filter(|l| kind(&l.item_id))
        .collect();
    let all_items: std::collections::BTreeSet<&str> = labels
        .iter()
        .map(|l| l.item_id.as_str())
        .filter(|i| kind(i))
        .collect();
    let hidden_items = all_items
        .iter()
        .filter(|i| !blinding.visible(&req.viewer, i))
        .count();
    let cur = blinding.current(&visible, req.version);
    let latest = blinding.current(&visible, LabelVersion::Latest);
    let pair_labels = labels.iter().any(|l| !kind(&l.item_id)) && !rubric.is_pairwise();
    let (r1, r2) = pair_to_compare(&cur, &req, hidden_items, pair_labels)?;
    let started = std::time::Instant::now();
    let rows = agreement_table(rubric, &cur, (&r1, &r2), req.boot);
    let noise = noise_table(rubric, &cur, (&r1, &r2), req.boot);
    let finals = final_labels(&cur, &latest, (&r1, &r2));
    let judge_vs_final = judge_against_final(rubric, &cur, &finals, req.boot);
    let reviewer_names = super::raters::human_reviewers(&cur);
    let (raters, drift) = every_reviewer(
        rubric,
        &cur,
        &blinding,
        &req,
        &all_items,
        (&r1, &r2),
        &reviewer_names,
    );
    let gold = (req.viewer == Viewer::Lead && !req.gold.is_empty())
        .then(|| super::gold_report(&cur, &req.gold, &reviewer_names, req.boot));
    let time = (req.viewer == Viewer::Lead)
        .then(|| crate::core::timing::time_per_item(&visible, &reviewer_names));
    let seconds = started.elapsed().as_secs_f64();
    let (a, b) = req.pair.raters((&r1, &r2));
    Ok(Agreement {
        raters,
        drift,
        gold,
        time,
        disagreements: disagreements(&cur, &latest, &a, &b),
        changed_after_reveal: blinding.changed_after_reveal(&visible),
        labels_after_reveal: visible.iter().filter(|l| blinding.after_reveal(l)).count(),
        reviewers: (r1, r2),
        bootstrap: req.boot,
        rows,
        noise,
        judge_vs_final,
        version: req.version,
        judge_model: req.judge_model,
        judge_models,
        reviewer_names,
        hidden_items,
        seconds,
        refused: Vec::new(),
        signed: false,
    })
}

/// The parts that show every reviewer at once: the all-reviewer table (more than
/// two reviewers; two named with `--reviewers`, which gives AC1 and Brennan-Prediger
/// for a pair; two unnamed for ordered labels) and agreement over time in the order
/// items were revealed to the viewer.
fn every_reviewer(
    rubric: &Rubric,
    cur: &std::collections::BTreeMap<(String, String, String), Label>,
    blinding: &Blinding,
    req: &AgreementRequest,
    all_items: &std::collections::BTreeSet<&str>,
    (r1, r2): (&str, &str),
    reviewer_names: &[String],
) -> (
    Option<RaterReport>,
    Option<crate::core::agreement::drift::Drift>,
) {
    let named_pair = req.raters.as_ref().is_some_and(|r| r.len() == 2);
    let raters = req
        .raters
        .clone()
        .unwrap_or_else(|| reviewer_names.to_vec());
    let order = reveal_order(all_items, blinding, &req.viewer);
    let drift = (raters.len() >= 2 && !order.is_empty())
        .then(|| super::raters::drift_report(rubric, cur, &raters, &order, (r1, r2), req.window));
    let table = raters.len() > 2 || ((rubric.ordered || named_pair) && raters.len() == 2);
    let report = table.then(|| {
        let visible = |item: &str| blinding.visible(&req.viewer, item);
        super::raters::rater_report(rubric, cur, &raters, visible, req.boot)
    });
    (report, drift)
}

/// The two reviewers the table compares, or why there are none to show this viewer.
fn pair_to_compare(
    cur: &std::collections::BTreeMap<(String, String, String), Label>,
    req: &AgreementRequest,
    hidden_items: usize,
    pair_labels: bool,
) -> Result<(String, String)> {
    match pick_reviewers(cur, req.reviewers.clone()) {
        Ok(pair) => Ok(pair),
        // Said without naming any way around it: waiting is the only way.
        Err(_) if hidden_items > 0 && req.viewer != Viewer::Lead => bail!(
            "blind: none of the {hidden_items} labelled items is revealed to you yet (an item is revealed to you once all of its assigned reviewers have submitted it and you have submitted it too)"
        ),
        Err(e) if pair_labels => bail!(
            "{e:#}; the labels here are on pair items (first/second/tie): their ranking and agreement are `raglab --role lead preferences`"
        ),
        Err(e) => Err(e),
    }
}

/// Labelling order: each item visible to `viewer` where it was revealed (all its
/// reviewers had submitted it) in the label log; items not yet revealed are left out.
fn reveal_order<'a>(
    items: &std::collections::BTreeSet<&'a str>,
    blinding: &Blinding,
    viewer: &Viewer,
) -> Vec<&'a str> {
    let mut order: Vec<(usize, &str)> = items
        .iter()
        .filter(|i| blinding.visible(viewer, i))
        .filter_map(|&i| Some((blinding.reveal_at(i)?, i)))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

/// Kappa and macro-F1 of the judge against the resolved final labels, per criterion
/// and overall.
fn judge_against_final(
    rubric: &Rubric,
    cur: &std::collections::BTreeMap<(String, String, String), Label>,
    finals: &[FinalLabel],
    boot: Bootstrap,
) -> Vec<(String, Option<AgreementReport>)> {
    let judge = |item: &str, c: &str| {
        cur.get(&(item.to_string(), JUDGE.to_string(), c.to_string()))
            .and_then(|l| l.label.clone())
    };
    super::labels::criterion_rows(rubric)
        .into_iter()
        .map(|(name, keys)| {
            let mut by_item: std::collections::BTreeMap<&str, Vec<(String, String)>> =
                Default::default();
            for f in finals
                .iter()
                .filter(|f| keys.contains(&f.criterion.as_str()))
            {
                if let (Some(fl), Some(j)) = (&f.label, judge(&f.item_id, &f.criterion)) {
                    by_item.entry(&f.item_id).or_default().push((j, fl.clone()));
                }
            }
            let units: Vec<Vec<(String, String)>> = by_item.into_values().collect();
            (
                name,
                (!units.is_empty()).then(|| crate::core::agreement::agreement(&units, boot)),
            )
        })
        .collect()
}

/// A lead's final label for one item and criterion, with its rationale.
pub fn final_label(
    rubric: &Rubric,
    lead: &str,
    item: &str,
    criterion: &str,
    label: &str,
    rationale: &str,
) -> Label {
    let mut l = Label::new(
        item,
        FINAL,
        criterion,
        Some(label),
        Some(rationale),
        &rubric.version,
    );
    l.label_id = l.label_id.replacen("final-", &format!("final-{lead}-"), 1);
    l.adjudicator = Some(lead.to_string());
    l
}

/// The adjudicated set of the two reviewers (default: the two with most labels),
/// as `viewer` may see it (a reviewer: the items revealed to them), with how many
/// disagreements are still unresolved.
pub async fn export_final(
    ctx: &Context,
    rubric: &Rubric,
    reviewers: Option<(String, String)>,
    viewer: &Viewer,
) -> Result<(Vec<FinalLabel>, usize, Vec<Refusal>)> {
    let (_, log, labels) = study_log(ctx, None).await?;
    let rubric = log.rubric_or(rubric);
    let (finals, unresolved) = finals_of(&rubric, &labels, &log.schedule, reviewers, viewer)?;
    Ok((finals, unresolved, log.refused))
}

/// [`export_final`] over a label log already read.
pub fn finals_of(
    rubric: &Rubric,
    labels: &[Label],
    schedule: &Schedule,
    reviewers: Option<(String, String)>,
    viewer: &Viewer,
) -> Result<(Vec<FinalLabel>, usize)> {
    if *viewer == Viewer::Nobody {
        bail!("{NO_IDENTITY}");
    }
    let keys: Vec<&str> = rubric.criteria.iter().map(|c| c.key.as_str()).collect();
    let blinding = Blinding::replay(labels, &keys, schedule);
    let seen = blinding.visible_labels(viewer, labels);
    let cur = blinding.current(&seen, LabelVersion::BeforeReveal);
    let latest = blinding.current(&seen, LabelVersion::Latest);
    let (r1, r2) = pick_reviewers(&cur, reviewers)?;
    let finals = final_labels(&cur, &latest, (&r1, &r2));
    let unresolved = finals.iter().filter(|f| f.label.is_none()).count();
    Ok((finals, unresolved))
}
