//! The Evaluation pane's frugality box: the last MCQA run's trade-off plane, each k
//! at (latency cost dC, accuracy gain dA) against k = 0, over the F = -0.5, 0 and 0.5
//! contours of its temperatures, and beside it each k's F with its range when both
//! temperatures move by 30% (a sign that changes there is a conclusion the
//! temperatures decide). F = tanh(A - C), A = sign(dA)(exp(|dA|/tA) - 1),
//! C = exp(dC/tC) - 1.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Chart, Dataset, GraphType, Paragraph};

use crate::core::frugality::{CONTOUR_LEVELS, contour_accuracy, sensitivity_label};
use crate::service::evaluate::{EvalOverview, McqaFrugality};
use crate::tui::theme::Theme;

/// Rows the box takes: none without an MCQA run with k = 0 (the MCQA box says how
/// to make one); else borders, a heading and one line per k, at least the plane's.
pub fn height(o: &EvalOverview) -> u16 {
    o.mcqa_frugality.as_ref().map_or(0, |f| {
        u16::try_from(f.configurations.len())
            .unwrap_or(u16::MAX)
            .saturating_add(4)
            .max(10)
    })
}

/// A value to 4 places, or `undefined`.
fn opt4(v: Option<f64>) -> String {
    v.map_or_else(|| "undefined".into(), |x| format!("{x:.4}"))
}

/// The table beside the plane: each k's paired questions, dA, dC, F and F's range.
fn rows(f: &McqaFrugality) -> Vec<String> {
    let mut out = vec![format!(
        "{:>3} {:>4} {:>8} {:>8} {:>8}  {}",
        "k", "n", "dA", "dC (s)", "F", "F, temperatures x0.7-1.3"
    )];
    for c in &f.configurations {
        let p = &c.score.paired;
        out.push(format!(
            "{:>3} {:>4} {:>8.4} {:>8.3} {:>8}  {}",
            c.k,
            p.n_questions,
            p.d_accuracy,
            p.d_latency_s,
            opt4(c.score.f),
            sensitivity_label(
                Some(p.d_accuracy),
                Some(p.d_latency_s),
                c.score.t_accuracy,
                c.score.t_latency_s
            )
        ));
    }
    out
}

/// Points of the plane, (dC, dA).
type Points = Vec<(f64, f64)>;

/// The plane's points (dC, dA) per k, and each contour's level and line over the
/// points' dC range (padded); no contours when a temperature is undefined.
fn plane(f: &McqaFrugality) -> (Points, Vec<(f64, Points)>) {
    let points: Vec<(f64, f64)> = f
        .configurations
        .iter()
        .map(|c| (c.score.paired.d_latency_s, c.score.paired.d_accuracy))
        .collect();
    let (Some(t_acc), Some(t_cost)) = (f.t_accuracy.value, f.t_latency_s.value) else {
        return (points, Vec::new());
    };
    let (lo, hi) = points
        .iter()
        .fold((0.0f64, 0.0f64), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let pad = ((hi - lo) * 0.15).max(0.05);
    let xs: Vec<f64> = (0..=40)
        .map(|i| lo - pad + (hi - lo + 2.0 * pad) * f64::from(i) / 40.0)
        .collect();
    let contours = CONTOUR_LEVELS
        .iter()
        .map(|&level| {
            let line = xs
                .iter()
                .filter_map(|&x| Some((x, contour_accuracy(level, x, t_acc, t_cost)?)))
                .collect();
            (level, line)
        })
        .collect();
    (points, contours)
}

/// Bounds holding every point and contour point, padded; at least [-0.05, 0.05].
fn bounds(values: impl Iterator<Item = f64>) -> [f64; 2] {
    let (lo, hi) = values.fold((0.0f64, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
    let pad = ((hi - lo) * 0.1).max(0.05);
    [lo - pad, hi + pad]
}

pub fn draw(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    let Some(fr) = &o.mcqa_frugality else {
        return;
    };
    let run = o.mcqa.as_ref().map_or("-", |s| s.report.run.as_str());
    let block = theme.block(
        format!(
            " Frugality · MCQA run {} · each k against k = 0 · tA {} · tC {} s ",
            crate::core::text::sanitize_for_terminal(run),
            opt4(fr.t_accuracy.value),
            opt4(fr.t_latency_s.value)
        ),
        false,
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [chart, table] =
        Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)]).areas(inner);
    let (points, contours) = plane(fr);
    let all_x = points
        .iter()
        .chain(contours.iter().flat_map(|(_, l)| l))
        .map(|p| p.0);
    let all_y = points
        .iter()
        .chain(contours.iter().flat_map(|(_, l)| l))
        .map(|p| p.1);
    let (xb, yb) = (bounds(all_x), bounds(all_y));
    let names: Vec<String> = contours.iter().map(|(l, _)| format!("F = {l}")).collect();
    let mut sets: Vec<Dataset> = contours
        .iter()
        .zip(&names)
        .map(|((_, line), name)| {
            Dataset::default()
                .name(name.as_str())
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(theme.muted)
                .data(line)
        })
        .collect();
    sets.push(
        Dataset::default()
            .name("k")
            .marker(Marker::Dot)
            .graph_type(GraphType::Scatter)
            .style(theme.score_bar)
            .data(&points),
    );
    let label = |v: f64| format!("{v:.2}");
    f.render_widget(
        Chart::new(sets)
            .x_axis(
                ratatui::widgets::Axis::default()
                    .title("dC (s)")
                    .style(theme.muted)
                    .bounds(xb)
                    .labels([label(xb[0]), label(xb[1])]),
            )
            .y_axis(
                ratatui::widgets::Axis::default()
                    .title("dA")
                    .style(theme.muted)
                    .bounds(yb)
                    .labels([label(yb[0]), label(yb[1])]),
            ),
        chart,
    );
    let mut lines: Vec<Line> = rows(fr)
        .into_iter()
        .enumerate()
        .map(|(i, r)| Line::styled(r, if i == 0 { theme.muted } else { theme.text }))
        .collect();
    lines.push(Line::styled(
        "F > 0: the accuracy gain is worth its latency cost (report study draws the plane too)",
        theme.muted,
    ));
    f.render_widget(Paragraph::new(lines), table);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::mcqa::McqaRecord;
    use crate::service::evaluate::{Temperatures, mcqa_frugality};

    /// Eight questions at k = 0 and k = 3: k = 3 right on six where k = 0 is right
    /// on two, and a second slower per answer.
    fn records() -> Vec<McqaRecord> {
        let mut out = Vec::new();
        for q in 0..8 {
            for (k, correct, ms) in [(0u32, q < 2, 1000.0), (3, q < 6, 2000.0)] {
                out.push(McqaRecord {
                    run: "r".into(),
                    question_id: format!("q{q}"),
                    k,
                    correct,
                    total_ms: ms,
                    ..McqaRecord::default()
                });
            }
        }
        out
    }

    fn screen(o: &EvalOverview) -> String {
        let mut term =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 12)).expect("terminal");
        let theme = Theme::builtin("dark").expect("theme");
        let frame = term.draw(|f| draw(f, f.area(), o, &theme)).expect("draw");
        crate::tui::ui::buffer_text(frame.buffer)
    }

    #[test]
    fn the_box_shows_each_k_with_its_f_and_range() {
        let fr = mcqa_frugality(&records(), Temperatures::default()).expect("k = 0 and k = 3");
        let o = EvalOverview {
            mcqa_frugality: Some(fr.clone()),
            ..EvalOverview::default()
        };
        assert_eq!(height(&o), 10);
        let s = screen(&o);
        let c = &fr.configurations[0];
        assert_eq!(c.k, 3);
        // dA = 6/8 - 2/8, dC = 2 s - 1 s, over the 8 paired questions.
        assert!((c.score.paired.d_accuracy - 0.5).abs() < 1e-12);
        assert!((c.score.paired.d_latency_s - 1.0).abs() < 1e-12);
        let row = format!(
            "{:>3} {:>4} {:>8.4} {:>8.3} {:>8}",
            3,
            8,
            0.5,
            1.0,
            opt4(c.score.f)
        );
        assert!(s.contains(&row), "{row:?} in\n{s}");
        assert!(s.contains("Frugality · MCQA run"), "{s}");
        assert!(s.contains("F, temperatures x0.7-1.3"), "{s}");
        assert!(s.contains("dC (s)"), "{s}");
        // No MCQA frugality: no box at all.
        assert_eq!(height(&EvalOverview::default()), 0);
    }
}
