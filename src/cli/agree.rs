//! `raglab agree`: the agreement table of two reviewers with the judge, every
//! reviewer's statistics, gold accuracy, agreement over time and time per item, as
//! text or `--json`.

use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::json_schema;
use crate::core::agreement::{AgreementReport, Bootstrap};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::study::{self, LabelVersion, PAPER_REFERENCE, RaterPair, Viewer, fmt_est};

#[derive(Debug, Args)]
pub struct AgreeArgs {
    /// Bootstrap resamples of the items for each 95% CI (percentile method).
    #[arg(long, default_value_t = 2000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap resampling (the same seed, the same CIs).
    #[arg(long, default_value_t = 20_240_601)]
    pub seed: u64,
    /// The reviewers: the first two are compared with each other and the judge
    /// (default: the two with most labels); with more than two (or two and an
    /// ordered rubric) Fleiss' kappa, Krippendorff's alpha and the pairwise kappas
    /// of all of them follow (default: every reviewer with labels).
    #[arg(long, value_delimiter = ',')]
    pub reviewers: Option<Vec<String>>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
    /// Use each reviewer's newest label, changes after reveal included (default: the
    /// last label given before the item was revealed: what the reviewer decided blind).
    #[arg(long)]
    pub after_reveal: bool,
    /// Compare the judgements of this judge model file only (default: all).
    #[arg(long)]
    pub judge_model: Option<String>,
    /// Also write the table as CSV to this file.
    #[arg(long)]
    pub csv: Option<PathBuf>,
    /// Also write the table as markdown to this file.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Items per window of the agreement over time (items in the order they were
    /// revealed; `drift` in `--json`).
    #[arg(long, default_value_t = study::DRIFT_WINDOW, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub window: usize,
}

/// `raglab agree` for `viewer`: a reviewer (`--reviewer NAME`) sees statistics over
/// the items revealed to them only; the lead (`--role lead`) everything; without an
/// identity nothing.
pub async fn agree(ctx: &Context, args: AgreeArgs, viewer: &Viewer) -> Result<()> {
    let rubric = crate::service::study::study_rubric(ctx).await?;
    let boot = Bootstrap {
        resamples: args.bootstrap,
        seed: args.seed,
    };
    let (reviewers, raters) = super::raters::reviewer_names(args.reviewers.as_deref())?;
    let req = study::AgreementRequest {
        reviewers,
        raters,
        boot,
        pair: RaterPair::Reviewers,
        viewer: viewer.clone(),
        version: if args.after_reveal {
            LabelVersion::Latest
        } else {
            LabelVersion::BeforeReveal
        },
        judge_model: args.judge_model.clone(),
        gold: Vec::new(),
        window: args.window,
    };
    let a = study::agreement_with(ctx, &rubric, req).await?;
    if let Some(p) = &args.csv {
        crate::service::base::write_whole(p, study::to_csv(&a).as_bytes())?;
    }
    if let Some(p) = &args.markdown {
        crate::service::base::write_whole(p, study::to_markdown(&a).as_bytes())?;
    }
    let (r1, r2) = &a.reviewers;
    if args.json {
        return json_schema::print(json_schema::AGREEMENT, &agree_json(&a));
    }
    say_part!("{}", render_table(&a.rows, &clean(r1), &clean(r2), boot));
    say_judge(&a);
    if let Some(r) = &a.raters {
        say_part!("{}", super::raters::render(r));
    }
    if let Some(g) = &a.gold {
        say_part!("{}", super::raters::render_gold(g, boot));
    }
    if let Some(d) = &a.drift {
        say_part!("{}", super::raters::render_drift(d));
    }
    if let Some(t) = &a.time {
        say_part!("{}", super::raters::render_time(t));
    }
    say_versions(&a);
    say_trust(&a);
    say!("({:.2}s)", a.seconds);
    Ok(())
}

/// The judge against the humans: per criterion and overall, whether its kappa is
/// within the two reviewers' own disagreement, then its agreement with final labels.
fn say_judge(a: &study::Agreement) {
    let (r1, r2) = &a.reviewers;
    say!(
        "Judge within human noise (paired bootstrap Δκ = κ(judge, human) − κ({}, {}); within noise when the CI contains 0):",
        clean(r1),
        clean(r2)
    );
    for (name, n) in &a.noise {
        say!(
            "{:<20} | vs {}: {} {} | vs {}: {} {} | {} items",
            clean(name),
            clean(r1),
            study::fmt_est(&n.vs_first),
            study::noise_verdict(&n.vs_first),
            clean(r2),
            study::fmt_est(&n.vs_second),
            study::noise_verdict(&n.vs_second),
            n.items
        );
    }
    if a.judge_vs_final.iter().any(|(_, r)| r.is_some()) {
        for (name, r) in &a.judge_vs_final {
            if let Some(r) = r {
                say!(
                    "judge vs final {:<20} kappa {} macro-F1 {}",
                    clean(name),
                    study::fmt_est(&r.kappa),
                    study::fmt_est(&r.macro_f1)
                );
            }
        }
    }
}

/// Which label versions counted, and how many changed after reveal.
fn say_versions(a: &study::Agreement) {
    say!(
        "labels: {} · {} labels changed after reveal ({} versions given after reveal){}",
        match a.version {
            LabelVersion::BeforeReveal =>
                "last given before reveal (--after-reveal for the newest)",
            LabelVersion::Latest => "newest, changes after reveal included",
        },
        a.changed_after_reveal,
        a.labels_after_reveal,
        if a.hidden_items > 0 {
            format!(" · {} items not revealed to you left out", a.hidden_items)
        } else {
            String::new()
        }
    );
}

/// Whether the study is signed, and every stored row that does not count.
fn say_trust(a: &study::Agreement) {
    if a.signed {
        say!("signed study: every counted label is signed by its reviewer's key");
    } else {
        say!("{}", study::UNSIGNED);
    }
    if !a.refused.is_empty() {
        say!(
            "{} stored rows not counted (unsigned or forged):",
            a.refused.len()
        );
        for r in &a.refused {
            say!("  {r}");
        }
    }
}

/// `raglab agree --json`'s document.
pub fn agree_json(a: &study::Agreement) -> serde_json::Value {
    let mut doc = serde_json::json!({
        "reviewers": [a.reviewers.0, a.reviewers.1], "bootstrap": a.bootstrap, "rows": a.rows,
        "seconds": a.seconds, "paper_reference": PAPER_REFERENCE, "judge_within_noise": a.noise,
        "judge_vs_final": a.judge_vs_final, "labels": a.version,
        "changed_after_reveal": a.changed_after_reveal,
        "labels_after_reveal": a.labels_after_reveal, "judge_model": a.judge_model,
        "judge_models": a.judge_models, "hidden_items": a.hidden_items,
        "signed": a.signed, "refused": a.refused, "raters": a.raters, "drift": a.drift,
    });
    // Only the lead's report has gold accuracy and time per item; a reviewer's has
    // neither key at all.
    if let Some(map) = doc.as_object_mut() {
        if let Some(g) = &a.gold {
            map.insert("gold".into(), serde_json::json!(g));
        }
        if let Some(t) = &a.time {
            map.insert("time".into(), serde_json::json!(t));
        }
    }
    doc
}

pub fn render_table(
    table: &[crate::service::study::AgreementRow],
    r1: &str,
    r2: &str,
    boot: Bootstrap,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Cohen's kappa and macro-F1 with 95% percentile bootstrap CIs (B = {}, seed {})",
        boot.resamples, boot.seed
    );
    let _ = writeln!(
        s,
        "{:<20} | {:^44} | {:^44} | {:^44}",
        "",
        format!("{r1} vs {r2}"),
        format!("judge vs {r1}"),
        format!("judge vs {r2}")
    );
    let _ = writeln!(
        s,
        "{:<20} | {:<21} {:<22} | {:<21} {:<22} | {:<21} {:<22}",
        "criterion", "kappa", "macro-F1", "kappa", "macro-F1", "kappa", "macro-F1"
    );
    for row in table {
        let cells: Vec<String> = row
            .pairs
            .iter()
            .map(|(_, r)| match r {
                Some(AgreementReport {
                    kappa, macro_f1, ..
                }) => format!("{:<21} {:<22}", fmt_est(kappa), fmt_est(macro_f1)),
                None => format!("{:<21} {:<22}", "no data", ""),
            })
            .collect();
        let _ = writeln!(s, "{:<20} | {}", row.criterion, cells.join(" | "));
    }
    let _ = writeln!(s, "{PAPER_REFERENCE}");
    s
}
