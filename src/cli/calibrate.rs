//! `raglab calibrate`: the judge with the study's final labels as few-shot examples
//! (k-fold, so no item is judged by a prompt that saw it), compared with the plain
//! judge against the final labels, as text or `--json`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::core::agreement::Bootstrap;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::study::{self, CalibrateRequest, Viewer, fmt_est, noise_verdict};
use crate::service::{Context, ModelChoice};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// Folds of the k-fold split of the items with final labels: an item's examples
    /// come from the other folds.
    #[arg(long, default_value_t = 5, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(2..))]
    pub folds: usize,
    /// Worked examples in each prompt, balanced across labels where possible.
    #[arg(long, default_value_t = 4, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub shots: usize,
    /// Seed of the split and of the choice of examples.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Bootstrap resamples of the CIs.
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap.
    #[arg(long, default_value_t = 20_240_601)]
    pub bootstrap_seed: u64,
    /// The two reviewers whose final labels count (default: the two with most labels).
    #[arg(long, value_delimiter = ',', num_args = 1)]
    pub reviewers: Option<Vec<String>>,
    /// GGUF judge model (default: config `models.judge`, else the generator).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Threads of a local judge model (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Judge with the local model even when `[[endpoints]]` are configured.
    #[arg(long)]
    pub local: bool,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

/// `raglab calibrate` (the study lead's: `--role lead`).
pub async fn run(ctx: &Context, args: CalibrateArgs, viewer: &Viewer) -> Result<()> {
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let reviewers = match args.reviewers.as_deref() {
        None => None,
        Some([a, b]) => Some((a.clone(), b.clone())),
        Some(_) => anyhow::bail!("--reviewers takes two names: A,B"),
    };
    let req = CalibrateRequest {
        folds: args.folds,
        shots: args.shots,
        seed: args.seed,
        boot: Bootstrap {
            resamples: args.bootstrap,
            seed: args.bootstrap_seed,
        },
        judge: ModelChoice {
            model: args.judge_model,
            threads: args.threads,
        },
        local: args.local,
        reviewers,
    };
    let bar = super::progress_bar("judging");
    let c = study::calibrate(ctx, &rubric, viewer, req, &|step, done, total| {
        bar.set_message(step.to_string());
        bar.set_length(total as u64);
        bar.set_position(done as u64);
    })
    .await;
    bar.finish_and_clear();
    let c = c?;
    if args.json {
        return json_schema::print(json_schema::CALIBRATION, &c);
    }
    say!(
        "{} items with final labels of {} and {} in {} folds, {} examples a prompt (seed {}); {} items left out (a criterion unresolved or no stored answer)",
        c.items,
        clean(&c.reviewers.0),
        clean(&c.reviewers.1),
        c.folds,
        c.shots,
        c.seed,
        c.left_out
    );
    say!(
        "before: {} ({} judged now) · after: {} ({} judged now) · bootstrap {} resamples, seed {}",
        c.judge_model,
        c.judged.before,
        c.calibrated_model,
        c.judged.after,
        c.bootstrap.resamples,
        c.bootstrap.seed
    );
    say!(
        "{:<20} | {:<22} | {:<22} | {:<24} | within human noise (before → after)",
        "criterion",
        "kappa before",
        "kappa after",
        "Δκ after − before"
    );
    for r in &c.rows {
        let kappa = |a: &Option<crate::core::agreement::AgreementReport>| {
            a.as_ref().map_or("no data".into(), |a| fmt_est(&a.kappa))
        };
        say!(
            "{:<20} | {:<22} | {:<22} | {:<24} | vs {}: {} → {}; vs {}: {} → {}",
            clean(&r.criterion),
            kappa(&r.before),
            kappa(&r.after),
            fmt_est(&r.difference),
            clean(&c.reviewers.0),
            noise_verdict(&r.noise_before.vs_first),
            noise_verdict(&r.noise_after.vs_first),
            clean(&c.reviewers.1),
            noise_verdict(&r.noise_before.vs_second),
            noise_verdict(&r.noise_after.vs_second),
        );
    }
    Ok(())
}
