//! `raglab agree`'s all-reviewer statistics: `--reviewers a,b,c` and their table.

use std::fmt::Write as _;

use anyhow::{Result, bail};

use crate::core::agreement::Estimate;
use crate::core::agreement::raters::{PairKappa, RaterReport};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::study::fmt_est;

/// The pair of the two-reviewer table and every reviewer of the all-reviewer one.
type ReviewerNames = (Option<(String, String)>, Option<Vec<String>>);

/// One pair's cell of a pairwise table.
type PairCell = fn(&PairKappa) -> String;

/// Parse `--reviewers a,b[,c...]`: the pair the two-reviewer table compares (the
/// first two) and every reviewer of the all-reviewer statistics.
pub fn reviewer_names(given: Option<&[String]>) -> Result<ReviewerNames> {
    let Some(names) = given else {
        return Ok((None, None));
    };
    if names.len() < 2 {
        bail!(
            "--reviewers takes two names or more, e.g. --reviewers alice,bob,carol (got {})",
            names.len()
        );
    }
    if let Some(twice) = names
        .iter()
        .enumerate()
        .find_map(|(i, n)| names[..i].contains(n).then_some(n))
    {
        bail!("--reviewers names {twice} twice");
    }
    Ok((
        Some((names[0].clone(), names[1].clone())),
        Some(names.to_vec()),
    ))
}

/// One table, each cell padded to the widest of its column (numbers are never cut).
fn grid(header: &[String], rows: &[Vec<String>]) -> String {
    let columns = header.len();
    let width = |c: usize| {
        rows.iter()
            .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
            .chain([header[c].chars().count()])
            .max()
            .unwrap_or(0)
    };
    let widths: Vec<usize> = (0..columns).map(width).collect();
    let line = |cells: &[String]| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        padded.join(" | ").trim_end().to_string()
    };
    let mut s = String::new();
    let _ = writeln!(s, "{}", line(header));
    for r in rows {
        let _ = writeln!(s, "{}", line(r));
    }
    s
}

fn opt(e: Option<&Estimate>) -> String {
    e.map(fmt_est).unwrap_or_default()
}

/// The all-reviewer table, then each pair's kappa (and weighted kappas) per row.
pub fn render(r: &RaterReport) -> String {
    let names: Vec<String> = r.raters.iter().map(|n| clean(n)).collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nEvery reviewer ({}): {} items, 95% percentile bootstrap CIs over items (B = {}, seed {}). Fleiss' kappa over the units every reviewer labelled; Krippendorff's alpha over every unit with two labels or more (missing labels allowed){}. Gwet's AC1 and Brennan-Prediger (BP), which hold when one label dominates, over every labelled unit, with Gwet's analytic 95% CIs.",
        names.join(", "),
        r.items,
        r.bootstrap.resamples,
        r.bootstrap.seed,
        if r.ordered {
            "; labels ordered as the rubric lists them"
        } else {
            ""
        }
    );
    let mut header: Vec<String> = ["criterion", "units", "complete", "Fleiss κ", "α nominal"]
        .map(String::from)
        .to_vec();
    if r.ordered {
        header.extend(["α ordinal".into(), "α interval".into()]);
    }
    header.extend(["AC1".into(), "BP".into()]);
    let rows: Vec<Vec<String>> = r
        .rows
        .iter()
        .map(|row| {
            let mut v = vec![
                clean(&row.criterion),
                row.units.to_string(),
                row.complete_units.to_string(),
                fmt_est(&row.fleiss_kappa),
                fmt_est(&row.alpha_nominal),
            ];
            if r.ordered {
                v.extend([
                    opt(row.alpha_ordinal.as_ref()),
                    opt(row.alpha_interval.as_ref()),
                ]);
            }
            v.extend([
                fmt_est(&row.ac1.as_estimate()),
                fmt_est(&row.brennan_prediger.as_estimate()),
            ]);
            v
        })
        .collect();
    s.push_str(&grid(&header, &rows));
    let mut kinds: Vec<(&str, PairCell)> = vec![("Cohen's kappa", kappa_cell)];
    if r.ordered {
        kinds.push(("linear weighted kappa", linear_cell));
        kinds.push(("quadratic weighted kappa", quadratic_cell));
    }
    for (kind, cell) in kinds {
        let _ = writeln!(s, "\nPairwise {kind} (over the units both labelled):");
        s.push_str(&pair_grid(r, cell));
    }
    s
}

fn kappa_cell(p: &PairKappa) -> String {
    fmt_est(&p.kappa)
}

fn linear_cell(p: &PairKappa) -> String {
    opt(p.linear.as_ref())
}

fn quadratic_cell(p: &PairKappa) -> String {
    opt(p.quadratic.as_ref())
}

/// One line per pair of reviewers, one column per criterion and Overall.
fn pair_grid(r: &RaterReport, cell: PairCell) -> String {
    let mut header = vec!["pair".to_string()];
    header.extend(r.rows.iter().map(|row| clean(&row.criterion)));
    let pairs = r.rows.first().map_or(0, |row| row.pairs.len());
    let rows: Vec<Vec<String>> = (0..pairs)
        .map(|p| {
            let first = &r.rows[0].pairs[p];
            let mut v = vec![format!("{}/{}", clean(&first.first), clean(&first.second))];
            v.extend(r.rows.iter().map(|row| cell(&row.pairs[p])));
            v
        })
        .collect();
    grid(&header, &rows)
}

/// The lead's table of each reviewer's accuracy on gold items.
pub fn render_gold(
    gold: &[crate::core::gold::GoldAccuracy],
    boot: crate::core::agreement::Bootstrap,
) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Accuracy on gold items (correct / scored units; 95% percentile bootstrap CI over gold items, B = {}, seed {})",
        boot.resamples, boot.seed
    );
    for g in gold {
        let _ = writeln!(
            s,
            "{:<24} {} ({} / {} units, {} items)",
            clean(&g.reviewer),
            fmt_est(&g.accuracy),
            g.correct,
            g.units,
            g.items
        );
    }
    s
}

/// The lead's table of each reviewer's active time per item.
pub fn render_time(time: &[crate::core::timing::ReviewerTime]) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Time per item (active time; key gaps over {} s left out)",
        crate::core::timing::IDLE_GAP_MS / 1000
    );
    let secs = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |x| format!("{x:.1} s"));
    for t in time {
        let _ = writeln!(
            s,
            "{:<24} {} items · median {} · p90 {} · {} items/hour",
            clean(&t.reviewer),
            t.items,
            secs(t.median_s),
            secs(t.p90_s),
            t.items_per_hour
                .map_or_else(|| "—".to_string(), |x| format!("{x:.1}"))
        );
    }
    s
}

/// Agreement per window of items in labelling order.
pub fn render_drift(d: &crate::core::agreement::drift::Drift) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Agreement over time (windows of {} items in the order they were revealed; α nominal of every rater, κ of {}/{}):",
        d.window,
        clean(&d.pair.0),
        clean(&d.pair.1)
    );
    let num = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |x| format!("{x:.3}"));
    for p in &d.points {
        let _ = writeln!(
            s,
            "items {:>5}-{:<5} α {:<9} κ {}",
            p.first,
            p.last,
            num(p.alpha),
            num(p.kappa)
        );
    }
    s
}
