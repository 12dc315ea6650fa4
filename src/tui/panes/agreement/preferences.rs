//! The Agreement pane's band for the lead of a pairwise study: each run's
//! Bradley-Terry score with its 95% bootstrap CI per criterion and Overall, the
//! comparisons counted, and the reviewers' agreement on their preferences (alpha), as
//! `raglab preferences` gives them. Reviewers never get the ranking (it reads every
//! reviewer's labels), so the band shows for the lead only.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::grid::Grid;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::study::{Preferences, fmt_est};
use crate::tui::theme::Theme;

/// Rows the band needs.
pub fn height(p: &Preferences) -> u16 {
    u16::try_from(p.rows.len())
        .unwrap_or(u16::MAX)
        .saturating_add(3)
}

/// The runs in the Overall row's order (best first).
fn runs(p: &Preferences) -> Vec<String> {
    p.rows
        .last()
        .map(|r| r.scores.iter().map(|s| s.run.clone()).collect())
        .unwrap_or_default()
}

/// The band's table: a row per criterion and Overall, a column per run.
pub fn grid(p: &Preferences, theme: &Theme) -> Grid {
    let runs = runs(p);
    let mut head = vec!["criterion".to_string(), "comparisons".to_string()];
    head.extend(runs.iter().map(|r| clean(r)));
    head.push("alpha (first/second/tie)".into());
    let mut g = Grid::new(head);
    for row in &p.rows {
        let mut cells = vec![clean(&row.criterion), row.comparisons.to_string()];
        for run in &runs {
            let s = row.scores.iter().find(|s| &s.run == run);
            cells.push(s.map_or_else(|| "—".into(), |s| fmt_est(&s.score)));
        }
        let alpha = p
            .agreement
            .as_ref()
            .and_then(|a| a.rows.iter().find(|r| r.criterion == row.criterion))
            .map_or_else(|| "—".into(), |r| fmt_est(&r.alpha_nominal));
        cells.push(alpha);
        g.push(cells, theme.text);
    }
    g
}

/// Draw the band into `area`, scrolled `offset` columns.
pub fn draw(f: &mut Frame, area: Rect, p: &Preferences, offset: usize, theme: &Theme) {
    let reviewers: Vec<String> = p.reviewers.iter().map(|r| clean(r)).collect();
    // Rows left out (a later pair order for an item, unsigned or forged) are counted
    // here; `raglab preferences` names each.
    let refused = match p.refused.len() {
        0 => String::new(),
        n => format!(" · {n} stored rows not counted (raglab preferences names them)"),
    };
    let title = format!(
        " Pairwise preferences · Bradley-Terry score [95% CI] (log strength, mean 0; higher is preferred) · {} items · {}{refused}",
        p.items,
        reviewers.join(", ")
    );
    grid(p, theme).render(f, area, offset, &title, theme);
}
