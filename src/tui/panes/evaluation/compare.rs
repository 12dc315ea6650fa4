//! The Evaluation pane's comparison box: with a configuration pinned as the baseline
//! (`P` on the configuration table), every other configuration of the last
//! `eval retrieval` against it on the chart's metric (`m`): the mean difference with
//! its bootstrap 95% CI, wins / ties / losses per query, and the randomisation and
//! t-test p-values Holm-adjusted over every pair and metric. The numbers are those of
//! `raglab compare` without `--baseline` (all pairs), read the other way round where
//! the pinned configuration was the candidate: a pair's difference, interval and
//! t change sign and wins swap with losses, the p-values stay (both tests are
//! symmetric).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use crate::core::text::sanitize_for_terminal as clean;
use crate::service::evaluate::ComparisonReport;
use crate::tui::theme::Theme;

/// One configuration against the pinned one: `other - pinned`.
#[derive(Debug, Clone, PartialEq)]
pub struct Versus {
    pub other: String,
    pub difference: f64,
    pub ci: Option<(f64, f64)>,
    pub wins: usize,
    pub ties: usize,
    pub losses: usize,
    pub randomisation_p_holm: f64,
    pub t_test_p_holm: Option<f64>,
}

/// The rows of `rep` on `metric` that involve `pinned`, each read as other - pinned.
pub fn against(rep: &ComparisonReport, pinned: &str, metric: &str) -> Vec<Versus> {
    rep.rows
        .iter()
        .filter(|r| r.metric == metric)
        .filter_map(|r| {
            let c = &r.result;
            let flip = if r.baseline == pinned {
                false
            } else if r.candidate == pinned {
                true
            } else {
                return None;
            };
            let (other, sign) = if flip {
                (&r.baseline, -1.0)
            } else {
                (&r.candidate, 1.0)
            };
            let (wins, losses) = if flip {
                (c.record.losses, c.record.wins)
            } else {
                (c.record.wins, c.record.losses)
            };
            Some(Versus {
                other: other.clone(),
                difference: sign * c.difference,
                ci: c
                    .ci
                    .map(|(lo, hi)| if flip { (-hi, -lo) } else { (lo, hi) }),
                wins,
                ties: c.record.ties,
                losses,
                randomisation_p_holm: c.randomisation_p_holm,
                t_test_p_holm: c.t_test_p_holm,
            })
        })
        .collect()
}

/// A p-value in few characters.
pub fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// The comparison box: every configuration against `pinned` on `metric`.
pub fn draw_comparison(
    f: &mut Frame,
    area: Rect,
    rep: Option<&ComparisonReport>,
    pinned: &str,
    metric: &str,
    theme: &Theme,
) {
    let title = format!(" vs {} on {metric} (P unpin, m metric) ", clean(pinned));
    let Some(rep) = rep else {
        f.render_widget(
            Paragraph::new("no per-query scores: run `raglab eval retrieval` again")
                .style(theme.muted)
                .block(theme.block(title, false)),
            area,
        );
        return;
    };
    let rows = against(rep, pinned, metric);
    let mut lines = vec![
        Line::styled(
            format!(
                "{} queries · Holm over all {} comparisons · {} permutations, {} resamples, seed {}",
                rep.queries,
                rep.rows.len(),
                rep.settings.permutations,
                rep.settings.resamples,
                rep.settings.seed
            ),
            theme.muted,
        ),
        Line::styled(
            format!(
                "{:<20} {:>8} {:>19} {:>14} {:>8} {:>8}",
                "configuration", "diff", "95% CI", "W/T/L", "p rand", "p t"
            ),
            theme.muted,
        ),
    ];
    if rows.is_empty() {
        lines.push(Line::styled(
            format!("{metric} was not compared (run `raglab compare --metrics ...`)"),
            theme.muted,
        ));
    }
    for v in &rows {
        let style = match (v.randomisation_p_holm < 0.05, v.difference > 0.0) {
            (true, true) => theme.pass,
            (true, false) => theme.fail,
            _ => theme.text,
        };
        let ci =
            v.ci.map_or("-".into(), |(lo, hi)| format!("[{lo:+.4}, {hi:+.4}]"));
        lines.push(Line::styled(
            format!(
                "{:<20} {:>+8.4} {:>19} {:>14} {:>8} {:>8}",
                clean(&crate::core::text::snippet(&v.other, 20)),
                v.difference,
                ci,
                format!("{}/{}/{}", v.wins, v.ties, v.losses),
                p_text(v.randomisation_p_holm),
                v.t_test_p_holm.map_or("-".into(), p_text)
            ),
            style,
        ));
    }
    f.render_widget(Paragraph::new(lines).block(theme.block(title, false)), area);
}
