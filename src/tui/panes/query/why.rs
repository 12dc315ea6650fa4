//! Why the target was missed: its rank and score in every list beside the top-1
//! chunk's, its length and topic, and its fused rank for every dense weight from
//! 0.00 to 1.00 drawn as a chart.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph};

use crate::core::compare::{Place, Places, Placing, best_point};
use crate::core::text::sanitize_for_terminal as clean;
use crate::tui::theme::Theme;

/// What the panel shows for one question, computed with the ranking (not per frame).
#[derive(Debug, Clone, Default)]
pub struct Why {
    /// The first target: id, words, topic, places.
    pub target: Option<(String, usize, Option<String>, Places)>,
    /// The other targets' ranks in the current ranking.
    pub others: Vec<(String, Option<usize>)>,
    /// The current ranking's first chunk and its places.
    pub top: Option<(String, Places)>,
    /// The configuration label the `ranked` places refer to.
    pub label: String,
    /// Whether the ranking fuses two lists (hybrid, linear). A single-list method's
    /// ranking is that list, so it gets no row of its own: the list's row shows the
    /// ranking's places (cut at the evaluated depth) instead of printing it twice.
    pub fused: bool,
    /// The alpha grid and the target's fused rank at each weight.
    pub grid: Vec<f64>,
    pub curve: Vec<Option<usize>>,
    /// Candidates fused (the curve's worst possible rank).
    pub candidates: usize,
    /// The current dense weight (marked on the chart).
    pub alpha: f64,
    /// Whether the whole-corpus places outside the cut lists are known (a missing
    /// one then means "not in list") or still being ranked, or failed.
    pub placing: Placing,
}

/// Text of a place (`unknown`: the mark of a place not known yet; `None`: a missing
/// place means the list does not hold the chunk).
fn cell(p: Option<Place>, digits: usize, unknown: Option<&str>) -> String {
    match (p, unknown) {
        (Some(p), _) => format!("{:.*}  #{}", digits, p.score, p.rank),
        (None, Some(mark)) => mark.into(),
        (None, None) => "not in list".into(),
    }
}

/// A single-list ranking's cell: its place within the evaluated depth, or where the
/// whole-corpus list puts it when the cut dropped it.
fn ranked_cell(ranked: Option<Place>, full: Option<Place>, unknown: Option<&str>) -> String {
    match (ranked, full) {
        (Some(p), _) => cell(Some(p), 3, None),
        (None, Some(f)) => format!("not in list (#{})", f.rank),
        (None, None) => match unknown {
            Some(mark) => format!("not in list ({mark})"),
            None => cell(None, 3, None),
        },
    }
}

impl Why {
    /// The curve's summary: best weight and rank, and the rank at the current weight.
    pub fn curve_title(&self) -> String {
        let now = self
            .grid
            .iter()
            .position(|a| (a - self.alpha).abs() < 1e-9)
            .and_then(|i| self.curve.get(i).copied().flatten());
        let show = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
        match best_point(&self.grid, &self.curve) {
            Some((a, r)) => format!(
                " target's fused rank by alpha · best a={a:.2} #{r} · now {} ",
                show(now)
            ),
            None => " target's fused rank by alpha · in neither list ".into(),
        }
    }

    pub fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let [scores, chart] =
            Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                .areas(area);
        self.draw_scores(f, scores, theme);
        self.draw_curve(f, chart, theme);
    }

    fn draw_scores(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let Some((id, words, topic, t)) = &self.target else {
            f.render_widget(
                Paragraph::new(
                    "no target chunk known for this question (t opens it when there is one)",
                )
                .style(theme.muted)
                .block(theme.block(" Target ", false)),
                area,
            );
            return;
        };
        let top = self.top.as_ref();
        let top_places = top.map(|(_, p)| *p).unwrap_or_default();
        let mut lines = vec![
            Line::styled(format!("target {}", clean(id)), theme.target_chunk),
            Line::styled(
                format!("top-1  {}", top.map_or("-".into(), |(i, _)| clean(i))),
                theme.title,
            ),
            Line::from(vec![
                Span::styled(format!("{:<13}", "list"), theme.muted),
                Span::styled(format!("{:<20}", "target"), theme.target_chunk),
                Span::styled("top-1", theme.title),
            ]),
        ];
        lines.extend(self.list_rows(t, &top_places, theme));
        lines.push(Line::styled(
            format!(
                "target: {words} words · topic {} · t opens it",
                clean(topic.as_deref().unwrap_or("-"))
            ),
            theme.muted,
        ));
        for (other, rank) in &self.others {
            lines.push(Line::styled(
                format!(
                    "also target {}: {}",
                    clean(other),
                    rank.map_or("not ranked".into(), |r| format!("#{r}"))
                ),
                theme.target_chunk,
            ));
        }
        f.render_widget(
            Paragraph::new(lines).block(theme.block(" Why: target vs top-1 ", false)),
            area,
        );
    }

    /// One row per list (target's place, top-1's place), and the fused ranking's row
    /// when the method fuses; a single-list method's own list shows the ranking's places.
    fn list_rows(&self, t: &Places, top: &Places, theme: &Theme) -> Vec<Line<'static>> {
        let row = |name: &str, style: Style, a: String, b: String| {
            Line::from(vec![
                Span::styled(format!("{name:<13}"), style),
                Span::styled(format!("{a:<20}"), theme.target_chunk),
                Span::styled(b, theme.text),
            ])
        };
        let lists = [
            ("dense", theme.rank_dense, t.dense, top.dense),
            ("bm25", theme.rank_sparse, t.bm25, top.bm25),
            ("tfidf", theme.rank_sparse, t.tfidf, top.tfidf),
        ];
        let mut rows: Vec<Line<'static>> = lists
            .into_iter()
            .map(|(name, style, a, b)| {
                if !self.fused && name == self.label {
                    row(
                        name,
                        theme.title,
                        ranked_cell(t.ranked, a, self.placing.short_mark()),
                        ranked_cell(top.ranked, b, self.placing.short_mark()),
                    )
                } else {
                    row(
                        name,
                        style,
                        cell(a, 3, self.placing.mark()),
                        cell(b, 3, self.placing.mark()),
                    )
                }
            })
            .collect();
        if self.fused {
            rows.push(row(
                &self.label,
                theme.title,
                cell(t.ranked, 4, None),
                cell(top.ranked, 4, None),
            ));
        }
        rows
    }

    /// Rank on a log scale, best at the top: y = -log10(rank).
    fn draw_curve(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        if self.target.is_none() {
            f.render_widget(
                Paragraph::new("a question with a known target gets its alpha curve here")
                    .style(theme.muted)
                    .block(theme.block(" Target's fused rank by alpha ", false)),
                area,
            );
            return;
        }
        let points: Vec<(f64, f64)> = self
            .grid
            .iter()
            .zip(&self.curve)
            .filter_map(|(&a, r)| r.map(|r| (a, -(r as f64).log10())))
            .collect();
        let now: Vec<(f64, f64)> = points
            .iter()
            .filter(|(a, _)| (a - self.alpha).abs() < 1e-9)
            .copied()
            .collect();
        let worst = self.candidates.max(2) as f64;
        let datasets = vec![
            Dataset::default()
                .marker(Marker::Braille)
                .graph_type(GraphType::Line)
                .style(theme.rank_dense)
                .data(&points),
            Dataset::default()
                .marker(Marker::Block)
                .graph_type(GraphType::Scatter)
                .style(theme.target_chunk)
                .data(&now),
        ];
        let chart = Chart::new(datasets)
            .block(theme.block(self.curve_title(), false))
            .x_axis(
                Axis::default()
                    .bounds([0.0, 1.0])
                    .labels(["a=0", "0.5", "1"])
                    .style(theme.muted),
            )
            .y_axis(
                Axis::default()
                    .bounds([-worst.log10(), 0.0])
                    .labels([format!("#{}", self.candidates.max(2)), "#1".to_string()])
                    .style(theme.muted),
            );
        f.render_widget(chart, area);
    }
}
