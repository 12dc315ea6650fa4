//! The Agreement pane's chart of agreement over time: Krippendorff's alpha of every
//! reviewer and the pair's kappa per window of items in the order they were
//! revealed (`core::agreement::drift`), on a [-1, 1] axis, with the newest window's
//! values written out under it (a chart alone cannot be read to two places).
//! Windows whose statistic is undefined leave a gap in that line.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use crate::core::agreement::drift::Drift;
use crate::core::text::sanitize_for_terminal as clean;
use crate::tui::theme::Theme;

/// Rows the drift chart needs (chart and its last line, with the block's borders).
pub const HEIGHT: u16 = 9;

/// A value to two places, or "undefined".
fn num(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".into(), |x| format!("{x:.2}"))
}

/// Draw `drift` into `area`.
pub fn draw_drift(f: &mut Frame, area: Rect, drift: &Drift, theme: &Theme) {
    let title = format!(
        " Agreement over time · windows of {} items, in the order revealed · α every reviewer · κ {}/{} ",
        drift.window,
        clean(&drift.pair.0),
        clean(&drift.pair.1)
    );
    let block = theme.block(title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [chart_area, last_area] =
        Layout::vertical([Constraint::Min(3), Constraint::Length(1)]).areas(inner);
    // x: the window's number (1, 2, ...); one point per window with a value.
    let series = |value: fn(&crate::core::agreement::drift::DriftPoint) -> Option<f64>| {
        drift
            .points
            .iter()
            .enumerate()
            .filter_map(|(i, p)| Some(((i + 1) as f64, value(p)?)))
            .collect::<Vec<(f64, f64)>>()
    };
    let alpha = series(|p| p.alpha);
    let kappa = series(|p| p.kappa);
    let windows = drift.points.len().max(2) as f64;
    let datasets = vec![
        Dataset::default()
            .name("α")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.rank_dense)
            .data(&alpha),
        Dataset::default()
            .name("κ")
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme.rank_sparse)
            .data(&kappa),
    ];
    let chart = Chart::new(datasets)
        .x_axis(
            Axis::default()
                .style(theme.muted)
                .bounds([1.0, windows])
                .labels(["window 1".to_string(), format!("{}", drift.points.len())]),
        )
        .y_axis(
            Axis::default()
                .style(theme.muted)
                .bounds([-1.0, 1.0])
                .labels(["-1", "0", "+1"]),
        )
        .legend_position(Some(ratatui::widgets::LegendPosition::TopRight));
    f.render_widget(chart, chart_area);
    if let Some(last) = drift.points.last() {
        f.render_widget(
            Paragraph::new(Line::styled(
                format!(
                    "newest window: items {}-{} · α {} · κ {}",
                    last.first,
                    last.last,
                    num(last.alpha),
                    num(last.kappa)
                ),
                theme.text,
            )),
            last_area,
        );
    }
}
