//! The Agreement pane's band for the study lead: each reviewer's accuracy on gold
//! items (with its 95% percentile bootstrap CI over gold items) and active time per
//! item (median, p90, items per hour), as `raglab agree` gives them. Reviewers'
//! agreement results carry neither, so the band never shows for them.

use ratatui::Frame;
use ratatui::layout::Rect;

use super::grid::Grid;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::study::{Agreement, fmt_est};
use crate::tui::theme::Theme;

/// Rows the band needs for `a` (0 when it has nothing for the lead).
pub fn height(a: &Agreement) -> u16 {
    match (&a.gold, &a.time) {
        (None, None) => 0,
        _ => u16::try_from(reviewers(a).len()).unwrap_or(u16::MAX) + 3,
    }
}

/// Every reviewer with gold accuracy or a time.
fn reviewers(a: &Agreement) -> Vec<String> {
    let mut v: Vec<String> = a
        .gold
        .iter()
        .flatten()
        .map(|g| g.reviewer.clone())
        .chain(a.time.iter().flatten().map(|t| t.reviewer.clone()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The band's table.
pub fn grid(a: &Agreement, theme: &Theme) -> Grid {
    let mut g = Grid::new(
        [
            "reviewer",
            "gold accuracy [95% CI]",
            "gold units",
            "timed items",
            "median",
            "p90",
            "items/hour",
        ]
        .map(str::to_string)
        .to_vec(),
    );
    let secs = |v: Option<f64>| v.map_or_else(|| "—".to_string(), |x| format!("{x:.1} s"));
    for r in reviewers(a) {
        let gold = a.gold.iter().flatten().find(|g| g.reviewer == r);
        let time = a.time.iter().flatten().find(|t| t.reviewer == r);
        g.push(
            vec![
                clean(&r),
                gold.map_or_else(|| "—".into(), |g| fmt_est(&g.accuracy)),
                gold.map_or_else(|| "—".into(), |g| format!("{}/{}", g.correct, g.units)),
                time.map_or_else(|| "—".into(), |t| t.items.to_string()),
                secs(time.and_then(|t| t.median_s)),
                secs(time.and_then(|t| t.p90_s)),
                time.and_then(|t| t.items_per_hour)
                    .map_or_else(|| "—".into(), |x| format!("{x:.1}")),
            ],
            theme.text,
        );
    }
    g
}

/// Draw the band into `area`, scrolled `offset` columns.
pub fn draw(f: &mut Frame, area: Rect, a: &Agreement, offset: usize, theme: &Theme) {
    grid(a, theme).render(
        f,
        area,
        offset,
        " The lead's view · accuracy on gold items · active time per item (key gaps over 120 s left out)",
        theme,
    );
}
