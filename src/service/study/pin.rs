//! The pin log of the study's rubric (`rubric.lance`, rows of
//! [`crate::core::pinned::RubricPin`] signed by the lead), and the rule for a rubric
//! a user names locally when the study has pinned its own.

use anyhow::{Result, bail};

use crate::core::pinned::{RubricPin, rubric_differences};
use crate::core::rubric::Rubric;
use crate::core::text::sanitize_for_terminal as clean;
use crate::store::records::Table;
use crate::store::workspace::Workspace;

/// The study's rubric pins, written by its lead.
pub const RUBRIC_PINS: &str = "rubric.lance";

pub fn pins_table(ws: &Workspace) -> Table<'_> {
    Table::of::<RubricPin>(ws, RUBRIC_PINS)
}

/// Refuse `yours` (the rubric named by `source`: `--rubric` or `[annotation] rubric`)
/// when it differs from the study's pinned rubric, naming each difference.
pub fn refuse_differing(yours: &Rubric, study: &Rubric, source: &str) -> Result<()> {
    let diff = rubric_differences(yours, study);
    if diff.is_empty() {
        return Ok(());
    }
    bail!(
        "your rubric {} differs from the study's pinned rubric {} v{}: {}. The study's rubric decides submission and reveal in every view: leave out --rubric and `[annotation] rubric` to work with it (`raglab study rubric show --toml` prints it)",
        clean(source),
        clean(&study.name),
        clean(&study.version),
        clean(&diff.join("; "))
    )
}
