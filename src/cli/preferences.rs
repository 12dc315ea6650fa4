//! `raglab preferences`: the runs of a pairwise study ranked by Bradley-Terry scores
//! with bootstrap CIs, their head-to-head records, and the reviewers' agreement on
//! their preferences, as text or `--json` (the study lead's: `--role lead`).

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::core::agreement::Bootstrap;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::study::{self, Viewer, fmt_est};

#[derive(Debug, Args)]
pub struct PreferencesArgs {
    /// Bootstrap resamples of the CIs (whole items resampled).
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 20_240_601)]
    pub seed: u64,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: PreferencesArgs, viewer: &Viewer) -> Result<()> {
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let boot = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
    };
    let p = study::preferences(ctx, &rubric, viewer, boot).await?;
    if args.json {
        return json_schema::print(json_schema::PREFERENCES, &p);
    }
    let names: Vec<String> = p.reviewers.iter().map(|r| clean(r)).collect();
    say!(
        "{} pair items labelled by {} reviewer(s) ({}) · Bradley-Terry scores (log strength, mean 0; a difference d is odds e^d to 1), 95% bootstrap CIs over items, {} resamples, seed {}",
        p.items,
        names.len(),
        names.join(", "),
        p.bootstrap.resamples,
        p.bootstrap.seed
    );
    if !p.refused.is_empty() {
        say!(
            "{} stored rows not counted (a later pair order for an item, unsigned or forged):",
            p.refused.len()
        );
        for r in &p.refused {
            say!("  {r}");
        }
    }
    for row in &p.rows {
        say!("");
        say!(
            "{} ({} comparisons)",
            clean(&row.criterion),
            row.comparisons
        );
        for s in &row.scores {
            say!("  {:<28} {}", clean(&s.run), fmt_est(&s.score));
        }
        for h in &row.head_to_head {
            say!(
                "  {} vs {}: {} wins, {} ties, {} losses",
                clean(&h.run),
                clean(&h.against),
                h.record.wins,
                h.record.ties,
                h.record.losses
            );
        }
    }
    say!("");
    match &p.agreement {
        None => say!("agreement on preferences: needs labels from two reviewers"),
        Some(a) => {
            say!("agreement on preferences (first/second/tie):");
            for r in &a.rows {
                let pairs: Vec<String> = r
                    .pairs
                    .iter()
                    .map(|k| {
                        format!(
                            "{}-{} kappa {}",
                            clean(&k.first),
                            clean(&k.second),
                            fmt_est(&k.kappa)
                        )
                    })
                    .collect();
                say!(
                    "  {:<20} alpha {} · {}",
                    clean(&r.criterion),
                    fmt_est(&r.alpha_nominal),
                    pairs.join(" · ")
                );
            }
        }
    }
    Ok(())
}
