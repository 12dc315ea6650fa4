//! The study's rubric: `raglab study rubric pin|show`, and the rubric every study
//! command works with ([`study_rubric`]). The rules of pins are
//! [`crate::core::pinned`]'s.

use anyhow::{Context as _, Result, bail};

use super::founding;
use super::labels::labels_table;
use super::pin::{self, pins_table};
use super::trust;
use crate::core::pinned::{self, PinnedRubric, RubricPin, pin_bytes, rubric_differences};
use crate::core::rubric::Rubric;
use crate::core::signing::Refusal;
use crate::service::base::{Context, now_rfc3339};
use crate::store::keys;

/// The rubric a study command works with (labels history, export and import,
/// agree, gold, calibrate, preferences, report study, the judge, the TUI's study).
/// The rule:
/// - No rubric pinned (an unsigned study, or a signed one whose lead has not pinned
///   one): the local rubric, `--rubric`, else `[annotation] rubric`, else the
///   built-in one, as before pins.
/// - A rubric pinned and none named locally: the pinned one.
/// - A rubric pinned and one named locally: refused when it differs from the pinned
///   one, each difference named, in every study command, reads included. Why refuse a
///   read rather than ignore the file: whoever names a rubric believes it is the
///   study's, and a view drawn under another rubric than the one they named would
///   mislead them; refusing costs one flag. Whatever rubric a front passes, the
///   service computes submission and reveal from the pinned criteria (the trusted
///   log's schedule), so no front reveals anything early.
pub async fn study_rubric(ctx: &Context) -> Result<Rubric> {
    let (pinned, _) = trust::pinned_rubric(ctx).await?;
    let Some(pinned) = pinned else {
        return ctx.rubric(None);
    };
    if let Some(file) = ctx.config.annotation.rubric.as_deref() {
        let yours = ctx.rubric(None)?;
        pin::refuse_differing(&yours, &pinned.rubric, &file.display().to_string())?;
    }
    Ok(pinned.rubric)
}

/// One stored answer judged live (the TUI's `J`) and committed, on the study's
/// rubric ([`study_rubric`]). Why here and not in the answer service: the judge's
/// labels are compared with the study's labels, so where the lead pinned a rubric the
/// judge labels its criteria whatever rubric the TUI started with, and a differing
/// local rubric is refused, each difference named, before the judge model loads.
pub async fn judge_live(
    ctx: std::sync::Arc<Context>,
    slot: crate::service::answer::GeneratorSlot,
    retriever: std::sync::Arc<crate::service::retrieval::Retriever>,
    answer: crate::service::answer::AnswerRecord,
    on_token: impl FnMut(&str) + Send + 'static,
) -> Result<crate::service::answer::JudgementRecord> {
    let rubric = study_rubric(&ctx).await?;
    crate::service::answer::judge_live_and_commit(ctx, slot, retriever, rubric, answer, on_token)
        .await
}

/// What `raglab study rubric pin` did.
#[derive(Debug, Clone)]
pub struct RubricPinned {
    /// Label rows stored when pinned: the pin is in force from there (the first pin
    /// of a study from the start).
    pub label_rows: u64,
    /// The pinned rubric it follows (name and version), if any.
    pub follows: Option<(String, String)>,
    /// The rubric was the study's already: nothing was written.
    pub unchanged: bool,
}

/// Pin `rubric` as the study's (the lead only, in a study with a roster). A rubric
/// that differs from the one pinned must carry another version, so that a label's
/// `rubric_version` names one rubric; pinning the rubric already pinned writes
/// nothing.
pub async fn pin_rubric(ctx: &Context, rubric: &Rubric) -> Result<RubricPinned> {
    let key = trust::require_lead(ctx, "study rubric pin").await?;
    let (roster, _, roster_rows) = trust::roster_rows(ctx).await?;
    if !roster.is_signed() || roster.lead().is_none() {
        bail!(
            "pinning the study's rubric needs the study's roster: its lead founds it first with `raglab study roster add NAME KEY --lead`"
        );
    }
    let ws = &ctx.workspace;
    let rows: Vec<RubricPin> = pins_table(ws).read_all().await?;
    let pin_rows = rows.len() as u64;
    let current = pinned::check_pins(rows, &roster, &keys::verify_cached)
        .kept
        .pop();
    if let Some(c) = &current {
        if c.rubric == *rubric {
            return Ok(RubricPinned {
                label_rows: c.label_rows,
                follows: None,
                unchanged: true,
            });
        }
        if c.rubric.version == rubric.version {
            bail!(
                "the study's rubric {} v{} is pinned, and yours differs from it ({}): give yours another version to pin it",
                c.rubric.name,
                c.rubric.version,
                rubric_differences(rubric, &c.rubric).join("; ")
            );
        }
    }
    let label_rows = labels_table(ws).count_rows().await?;
    let mut row = RubricPin {
        rubric: serde_json::to_string(rubric).context("the rubric as JSON")?,
        name: rubric.name.clone(),
        version: rubric.version.clone(),
        pinned_at: now_rfc3339(),
        label_rows,
        pin_rows,
        signer: Some(key.public_hex()),
        signature: None,
    };
    row.signature = Some(key.sign_hex(&pin_bytes(&row, roster.binding())));
    pins_table(ws).append(std::slice::from_ref(&row)).await?;
    founding::record(ws, &roster_rows, &roster).await?;
    Ok(RubricPinned {
        label_rows,
        follows: current.map(|c| (c.rubric.name, c.rubric.version)),
        unchanged: false,
    })
}

/// What `raglab study rubric show` shows.
#[derive(Debug, Clone)]
pub struct RubricView {
    /// The study's pinned rubric (none: each viewer's rubric decides).
    pub pinned: Option<PinnedRubric>,
    /// The pin rows that do not count, named.
    pub refused: Vec<Refusal>,
    /// The rubric named locally (`--rubric` or `[annotation] rubric`), if any, and
    /// how it differs from the pinned one.
    pub yours: Option<(String, Vec<String>)>,
}

pub async fn rubric_show(ctx: &Context) -> Result<RubricView> {
    let (pinned, refused) = trust::pinned_rubric(ctx).await?;
    let yours = match (&pinned, ctx.config.annotation.rubric.as_deref()) {
        (Some(p), Some(file)) => Some((
            file.display().to_string(),
            rubric_differences(&ctx.rubric(None)?, &p.rubric),
        )),
        _ => None,
    };
    Ok(RubricView {
        pinned,
        refused,
        yours,
    })
}

/// A rubric as a TOML rubric file (what `--rubric FILE` reads).
pub fn rubric_toml(rubric: &Rubric) -> Result<String> {
    toml::to_string(rubric).context("the rubric as TOML")
}

/// Refuse a write (labels, gold rows) validated against `rubric` when the study has
/// pinned another: its labels would carry another rubric's criteria or version.
/// The fronts pass [`study_rubric`]'s, so this holds against a front that does not.
pub(super) async fn check_writing(ctx: &Context, rubric: &Rubric) -> Result<()> {
    if let (Some(p), _) = trust::pinned_rubric(ctx).await? {
        pin::refuse_differing(
            rubric,
            &p.rubric,
            &format!("{} v{}", rubric.name, rubric.version),
        )?;
    }
    Ok(())
}
