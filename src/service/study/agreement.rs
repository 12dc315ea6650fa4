//! The agreement table as CSV and markdown (from `raglab agree` and the Agreement
//! pane's export): kappa and macro-F1 with CIs per criterion and pair, judge within
//! human noise, the judge against the final labels, and the paper's Table 6 values
//! where the paper gives them (overall only).

use std::fmt::Write as _;

use super::agree::Agreement;
use crate::core::agreement::{AgreementReport, Estimate};
use crate::core::blinding::LabelVersion;

/// The source paper's Table 6 values (100 items): (pair index, kappa, macro-F1)
/// of the Overall row; the paper gives no per-criterion values.
pub const PAPER_OVERALL: [(&str, &str); 3] = [
    ("0.56 [0.48, 0.64]", "0.78 [0.74, 0.82]"),
    ("0.42", "0.71"),
    ("0.55", "0.78"),
];

/// A value with its CI, `undefined` when it is not defined.
pub fn fmt_est(e: &Estimate) -> String {
    match (e.value, e.lo, e.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "undefined".into(),
    }
}

/// "within noise" when the CI contains 0, "outside noise" otherwise.
pub fn noise_verdict(e: &Estimate) -> &'static str {
    match e.contains_zero() {
        Some(true) => "within noise",
        Some(false) => "outside noise",
        None => "undefined",
    }
}

fn cells(r: Option<&AgreementReport>) -> [String; 2] {
    match r {
        Some(r) => [fmt_est(&r.kappa), fmt_est(&r.macro_f1)],
        None => ["no data".into(), "no data".into()],
    }
}

/// The header of every export: pair, B, seed, judge model, label version.
fn provenance(a: &Agreement) -> String {
    format!(
        "reviewers {} and {}; B = {}, seed {}; judge model: {}; labels: {}; {} labels changed after reveal",
        a.reviewers.0,
        a.reviewers.1,
        a.bootstrap.resamples,
        a.bootstrap.seed,
        a.judge_model
            .clone()
            .unwrap_or_else(|| format!("all ({})", a.judge_models.join(", "))),
        match a.version {
            LabelVersion::BeforeReveal => "last given before reveal",
            LabelVersion::Latest => "latest (changes after reveal included)",
        },
        a.changed_after_reveal
    )
}

/// One row per criterion and Overall, then the paper's row.
pub fn to_csv(a: &Agreement) -> String {
    let esc = crate::core::text::csv_quoted;
    let mut s = String::new();
    let _ = writeln!(s, "# {}", provenance(a));
    let (r1, r2) = &a.reviewers;
    let _ = writeln!(
        s,
        "criterion,kappa {r1}/{r2},macro_f1 {r1}/{r2},kappa judge/{r1},macro_f1 judge/{r1},kappa judge/{r2},macro_f1 judge/{r2},dkappa judge/{r1} - {r1}/{r2},dkappa judge/{r2} - {r1}/{r2},kappa judge/final,macro_f1 judge/final"
    );
    for (i, row) in a.rows.iter().enumerate() {
        let mut v = vec![esc(&row.criterion)];
        for (_, r) in &row.pairs {
            v.extend(cells(r.as_ref()).map(|c| esc(&c)));
        }
        if let Some((_, n)) = a.noise.get(i) {
            v.push(esc(&fmt_est(&n.vs_first)));
            v.push(esc(&fmt_est(&n.vs_second)));
        }
        if let Some((_, r)) = a.judge_vs_final.get(i) {
            v.extend(cells(r.as_ref()).map(|c| esc(&c)));
        }
        let _ = writeln!(s, "{}", v.join(","));
    }
    let p = PAPER_OVERALL;
    let _ = writeln!(
        s,
        "\"paper Overall (n=100)\",{},{},{},{},{},{},,,,",
        esc(p[0].0),
        esc(p[0].1),
        esc(p[1].0),
        esc(p[1].1),
        esc(p[2].0),
        esc(p[2].1)
    );
    s
}

/// The same table in markdown, with the within-noise verdicts.
pub fn to_markdown(a: &Agreement) -> String {
    let (r1, r2) = &a.reviewers;
    let bar = |s: &str| s.replace('|', "\\|");
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Cohen's kappa and macro-F1, 95% percentile bootstrap CIs. {}\n",
        provenance(a)
    );
    let _ = writeln!(
        s,
        "| criterion | κ {r1}/{r2} | F1 {r1}/{r2} | κ judge/{r1} | F1 judge/{r1} | κ judge/{r2} | F1 judge/{r2} | Δκ judge/{r1} − {r1}/{r2} | Δκ judge/{r2} − {r1}/{r2} | κ judge/final |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|---|---|---|");
    for (i, row) in a.rows.iter().enumerate() {
        let mut v = vec![bar(&row.criterion)];
        for (_, r) in &row.pairs {
            v.extend(cells(r.as_ref()));
        }
        match a.noise.get(i) {
            Some((_, n)) => {
                v.push(format!(
                    "{} ({})",
                    fmt_est(&n.vs_first),
                    noise_verdict(&n.vs_first)
                ));
                v.push(format!(
                    "{} ({})",
                    fmt_est(&n.vs_second),
                    noise_verdict(&n.vs_second)
                ));
            }
            None => v.extend(["".to_string(), "".to_string()]),
        }
        v.push(
            a.judge_vs_final
                .get(i)
                .map(|(_, r)| cells(r.as_ref())[0].clone())
                .unwrap_or_default(),
        );
        let _ = writeln!(s, "| {} |", v.join(" | "));
    }
    let p = PAPER_OVERALL;
    let _ = writeln!(
        s,
        "| paper Overall (n=100) | {} | {} | {} | {} | {} | {} | | | |",
        p[0].0, p[0].1, p[1].0, p[1].1, p[2].0, p[2].1
    );
    s
}

/// Write the agreement table as CSV and markdown into the workspace's `exports`
/// folder, named by the moment of the export (`agreement-<time>.csv|.md`, colons left
/// out so every file system takes the name), each file written whole. Returns the
/// two paths.
pub fn export_to_workspace(
    ctx: &crate::service::base::Context,
    a: &Agreement,
) -> anyhow::Result<(std::path::PathBuf, std::path::PathBuf)> {
    let dir = ctx.workspace.root().join("exports");
    std::fs::create_dir_all(&dir)?;
    let stamp = crate::service::base::now_rfc3339().replace(':', "");
    let csv = dir.join(format!("agreement-{stamp}.csv"));
    let md = dir.join(format!("agreement-{stamp}.md"));
    crate::service::base::write_whole(&csv, to_csv(a).as_bytes())?;
    crate::service::base::write_whole(&md, to_markdown(a).as_bytes())?;
    Ok((csv, md))
}
