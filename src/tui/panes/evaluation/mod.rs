//! Evaluation pane: the last evaluations of the workspace, each beside the source
//! paper's values where the paper gives them (with the table or figure they come
//! from). Retrieval metrics per configuration, the alpha sweep as a chart (one line
//! per fused method and sparse side), topic and length breakdowns with eta^2, MCQA
//! accuracy by k and by target rank with its frugality (each k against k = 0 on the
//! trade-off plane, [`frugality`]), and the judge's pass rates by target-rank
//! bucket. The reports are read by a background job at start-up and again whenever
//! a new evaluation is written (the jobs poll the report files and datasets); the
//! pane itself only draws what it was given. The lower boxes are drawn by
//! [`breakdowns`], the comparison with a pinned configuration by
//! [`compare`].

mod breakdowns;
pub mod compare;
mod frugality;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::symbols::Marker;
use ratatui::text::Line;
use ratatui::widgets::{Axis, Chart, Dataset, GraphType, Paragraph, Row, Table, Wrap};

use crate::core::metrics::MeanMetrics;
use crate::core::paper;
use crate::core::retrieval::{METRICS, Method, Sparse};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::evaluate::EvalOverview;
use crate::service::evaluate::{MethodResult, RetrievalReport};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;
use breakdowns::HOW_TO;

#[derive(Default)]
pub struct EvaluationPane {
    /// The last load (None: not loaded yet).
    overview: Option<EvalOverview>,
    loading: bool,
    /// The selected configuration (row of the metrics table): its breakdowns show.
    selected: usize,
    /// Presses of `m`: the alpha chart draws nDCG@10 first (the metric the sweep's
    /// headline alpha is chosen on), then the next of [`METRICS`] on each press.
    metric: usize,
    /// Breakdown by target length instead of by topic.
    by_length: bool,
    /// First breakdown row shown.
    scroll: usize,
    /// The configuration pinned as the baseline (`P`): the breakdown box then compares
    /// every other configuration with it ([`compare`]).
    pinned: Option<String>,
}

impl EvaluationPane {
    /// Whether a load has arrived.
    pub fn is_loaded(&self) -> bool {
        self.overview.is_some()
    }

    /// The last load.
    pub fn overview(&self) -> Option<&EvalOverview> {
        self.overview.as_ref()
    }

    /// A load was asked for: the pane says so until it arrives.
    pub fn start_loading(&mut self) {
        self.loading = true;
    }

    /// A finished load; the selection stays where it was when it still exists.
    pub fn on_loaded(&mut self, o: EvalOverview) {
        let n = o.retrieval.as_ref().map_or(0, |r| r.report.results.len());
        self.selected = self.selected.min(n.saturating_sub(1));
        self.overview = Some(o);
        self.loading = false;
    }

    fn retrieval(&self) -> Option<&RetrievalReport> {
        Some(&self.overview.as_ref()?.retrieval.as_ref()?.report)
    }

    fn selected_result(&self) -> Option<&MethodResult> {
        self.retrieval()?.results.get(self.selected)
    }

    /// The metric of the alpha chart and the comparison box: nDCG@10 first, then the
    /// next of [`METRICS`] on each `m`.
    fn chart_metric_index(&self) -> usize {
        (METRICS.len() - 1 + self.metric) % METRICS.len()
    }

    fn chart_metric(&self) -> &'static str {
        METRICS[self.chart_metric_index()].0
    }
}

/// An axis from `lo` to `hi` labelled at both ends and the middle.
fn axis(title: &str, (lo, hi): (f64, f64), places: usize, style: Style) -> Axis<'static> {
    Axis::default()
        .title(title.to_string())
        .style(style)
        .bounds([lo, hi])
        .labels([lo, (lo + hi) / 2.0, hi].map(|v| format!("{v:.places$}")))
}

/// A value to 4 places.
fn f4(v: f64) -> String {
    format!("{v:.4}")
}

/// An optional eta^2.
fn eta(v: Option<f64>) -> String {
    v.map_or_else(|| "undef".into(), f4)
}

fn metric_cells(m: &MeanMetrics) -> Vec<String> {
    METRICS.iter().map(|(_, get)| f4(get(m))).collect()
}

impl EvaluationPane {
    /// One line: where the report comes from and what it covers.
    fn draw_header(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let o = self.overview.as_ref();
        let text = match o.and_then(|o| o.retrieval.as_ref()) {
            Some(s) => {
                let r = &s.report;
                format!(
                    "j/k configuration · P compare with it · m chart metric · t topic/length · J/K scroll · r reload · retrieval written {}: {} queries ({} evaluated by {}), depth {}, embeddings {}, failures at top {}{}",
                    clean(&s.written_at),
                    r.queries,
                    r.evaluated,
                    clean(&r.breakdown_method),
                    r.depth,
                    clean(r.embedding_model.as_deref().unwrap_or("-")),
                    r.failure_cutoff,
                    if self.loading { " · loading…" } else { "" }
                )
            }
            None => format!("no retrieval evaluation yet: run `{}`", HOW_TO[0].1),
        };
        let mut lines = vec![Line::styled(text, theme.muted)];
        for p in o.map(|o| o.problems.as_slice()).unwrap_or_default() {
            lines.push(Line::styled(clean(p), theme.error));
        }
        f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: true }), area);
    }

    /// Metrics per configuration, the paper's row under the first configuration of
    /// each method it reports.
    fn draw_table(&self, f: &mut Frame, area: Rect, rep: &RetrievalReport, theme: &Theme) {
        let extra: Vec<String> = rep.results.first().map_or_else(Vec::new, |r| {
            r.at_k_columns().into_iter().map(|(name, _)| name).collect()
        });
        let mut header: Vec<String> = vec!["configuration".into()];
        header.extend(METRICS.iter().map(|(n, _)| (*n).to_string()));
        header.extend(extra.iter().cloned());
        header.extend([
            format!("failed@{}", rep.failure_cutoff),
            "η² topic".into(),
            "η² length".into(),
        ]);
        let mut rows = Vec::new();
        let mut shown_paper: Vec<&str> = Vec::new();
        for (i, r) in rep.results.iter().enumerate() {
            let mut cells = vec![clean(&r.label)];
            cells.extend(metric_cells(&r.metrics));
            cells.extend(r.at_k_columns().iter().map(|(_, v)| f4(*v)));
            cells.extend([
                r.failed.to_string(),
                eta(r.by_topic.eta_squared_ndcg10),
                eta(r.by_target_length.eta_squared_ndcg10),
            ]);
            let style = if i == self.selected {
                theme.selected
            } else {
                theme.text
            };
            rows.push(Row::new(cells).style(style));
            if let Some(p) = paper::retrieval_for(&r.method)
                && !shown_paper.contains(&p.what)
            {
                shown_paper.push(p.what);
                let mut cells = vec![format!("└ paper {}: {}", p.source, p.what)];
                cells.extend(
                    [p.p1, p.recall5, p.recall10, p.mrr, p.ndcg10]
                        .iter()
                        .map(|v| format!("{v:.2}")),
                );
                rows.push(Row::new(cells).style(theme.muted));
            }
        }
        let mut widths = vec![Constraint::Length(50)];
        widths.extend(std::iter::repeat_n(
            Constraint::Length(9),
            METRICS.len() + extra.len() + 3,
        ));
        f.render_widget(
            Table::new(rows, widths)
                .header(Row::new(header).style(theme.title))
                .block(theme.block(
                    " Retrieval metrics per configuration (paper rows: PubHealthBench, 7,929 queries, other models) ",
                    false,
                )),
            area,
        );
    }

    /// The alpha sweep: the chosen metric against alpha, one line per fused method
    /// and sparse side, each named with its best alpha.
    fn draw_chart(&self, f: &mut Frame, area: Rect, rep: &RetrievalReport, theme: &Theme) {
        let (name, get) = METRICS[self.chart_metric_index()];
        let mut pairs: Vec<(Method, Sparse)> = Vec::new();
        for p in &rep.alpha_sweep {
            if !pairs.contains(&(p.method, p.sparse)) {
                pairs.push((p.method, p.sparse));
            }
        }
        if pairs.is_empty() {
            f.render_widget(
                Paragraph::new(format!(
                    "The last evaluation has no alpha sweep: run `{}`.",
                    HOW_TO[0].1
                ))
                .wrap(Wrap { trim: true })
                .style(theme.muted)
                .block(theme.block(" Alpha sweep ", false)),
                area,
            );
            return;
        }
        let styles = [
            theme.rank_dense,
            theme.rank_sparse,
            theme.score_bar,
            theme.header_path,
        ];
        let series: Vec<(String, Vec<(f64, f64)>)> = pairs
            .iter()
            .map(|&(m, s)| {
                let pts: Vec<(f64, f64)> = rep
                    .alpha_sweep
                    .iter()
                    .filter(|p| p.method == m && p.sparse == s)
                    .map(|p| (p.alpha, get(&p.metrics)))
                    .collect();
                let best = rep
                    .best_alpha
                    .iter()
                    .find(|b| b.method == m && b.sparse == s && b.metric == name)
                    .map_or(String::new(), |b| {
                        format!(" best a {:.2}: {:.4}", b.alpha, b.value)
                    });
                (format!("{m}-{s}{best}"), pts)
            })
            .collect();
        let all = series.iter().flat_map(|(_, p)| p.iter());
        let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
        for &(x, y) in all {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
        let pad = ((y1 - y0) * 0.1).max(0.005);
        let (y0, y1) = ((y0 - pad).max(0.0), (y1 + pad).min(1.0));
        let datasets: Vec<Dataset> = series
            .iter()
            .enumerate()
            .map(|(i, (label, pts))| {
                Dataset::default()
                    .name(label.clone())
                    .marker(Marker::Braille)
                    .graph_type(GraphType::Line)
                    .style(styles[i % styles.len()])
                    .data(pts)
            })
            .collect();
        let axis_style: Style = theme.muted;
        let chart = Chart::new(datasets)
            .block(theme.block(
                format!(
                    " Alpha sweep: {name} vs alpha (a = dense weight) · {} ",
                    paper::BEST_ALPHA_SOURCE
                ),
                false,
            ))
            .x_axis(axis("alpha", (x0, x1), 2, axis_style))
            .y_axis(axis(name, (y0, y1), 3, axis_style))
            .legend_position(Some(ratatui::widgets::LegendPosition::BottomRight))
            .hidden_legend_constraints((Constraint::Percentage(90), Constraint::Percentage(60)));
        f.render_widget(chart, area);
    }
}

impl EvaluationPane {
    /// The chart of the chart's metric over the configurations, and beside it the
    /// comparison with the pinned configuration or the selected one's breakdown.
    fn draw_middle(
        &self,
        f: &mut Frame,
        middle: Rect,
        o: &EvalOverview,
        rep: &RetrievalReport,
        theme: &Theme,
    ) {
        let [chart, breakdown] =
            Layout::horizontal([Constraint::Percentage(60), Constraint::Percentage(40)])
                .areas(middle);
        self.draw_chart(f, chart, rep, theme);
        if let Some(pinned) = &self.pinned {
            compare::draw_comparison(
                f,
                breakdown,
                o.comparison.as_ref(),
                pinned,
                self.chart_metric(),
                theme,
            );
        } else if let Some(r) = self.selected_result() {
            breakdowns::draw_breakdown(f, breakdown, r, self.by_length, self.scroll, theme);
        }
    }
}

/// An empty workspace: the commands that would fill the pane, and what could not be read.
fn draw_nothing_yet(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    let mut lines = vec![
        Line::styled(
            "No evaluation has been run in this workspace yet.",
            theme.text,
        ),
        Line::raw(""),
        Line::styled("These commands produce what this pane shows:", theme.muted),
    ];
    lines.extend(
        HOW_TO
            .iter()
            .map(|(what, cmd)| Line::styled(format!("  {what:<10} {cmd}"), theme.text)),
    );
    lines.extend(
        o.problems
            .iter()
            .map(|p| Line::styled(clean(p), theme.error)),
    );
    f.render_widget(
        Paragraph::new(lines)
            .wrap(Wrap { trim: false })
            .block(theme.block(" Evaluation ", false)),
        area,
    );
}

impl PaneView for EvaluationPane {
    fn update(&mut self, action: Action) -> Option<Effect> {
        let n = self.retrieval().map_or(0, |r| r.results.len());
        match action {
            Action::Down => self.selected = (self.selected + 1).min(n.saturating_sub(1)),
            Action::Up => self.selected = self.selected.saturating_sub(1),
            Action::CycleMethod => self.metric = (self.metric + 1) % METRICS.len(),
            Action::CycleSet => {
                self.by_length = !self.by_length;
                self.scroll = 0;
            }
            Action::ScrollDown => self.scroll += 1,
            Action::ScrollUp => self.scroll = self.scroll.saturating_sub(1),
            Action::Refresh => {
                self.loading = true;
                return Some(Effect::LoadEvaluation);
            }
            Action::PinBaseline => {
                let label = self.selected_result().map(|r| r.label.clone());
                self.pinned = if self.pinned == label { None } else { label };
            }
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let Some(o) = &self.overview else {
            f.render_widget(
                Paragraph::new("reading the last evaluations…")
                    .style(theme.muted)
                    .block(theme.block(" Evaluation ", false)),
                area,
            );
            return;
        };
        if o.retrieval.is_none() && o.mcqa.is_none() && o.judge.is_none() {
            return draw_nothing_yet(f, area, o, theme);
        }
        let n_rows = self.retrieval().map_or(0, |r| {
            r.results.len()
                + r.results
                    .iter()
                    .filter(|x| paper::retrieval_for(&x.method).is_some())
                    .count()
        });
        let table_h = if self.retrieval().is_some() {
            (n_rows as u16 + 3).min(area.height / 3)
        } else {
            0
        };
        let [
            head,
            table,
            middle,
            mcqa,
            frugal,
            judge,
            citations,
            grounded,
        ] = Layout::vertical([
            // Two rows: the provenance line wraps on narrow terminals.
            Constraint::Length(2 + o.problems.len() as u16),
            Constraint::Length(table_h),
            Constraint::Min(if self.retrieval().is_some() { 8 } else { 0 }),
            Constraint::Length(breakdowns::mcqa_height(o)),
            Constraint::Length(frugality::height(o)),
            Constraint::Length(breakdowns::judge_height(o)),
            Constraint::Length(breakdowns::citations_height(o)),
            Constraint::Length(breakdowns::grounded_height(o)),
        ])
        .areas(area);
        self.draw_header(f, head, theme);
        if let Some(rep) = self.retrieval() {
            self.draw_table(f, table, rep, theme);
            self.draw_middle(f, middle, o, rep, theme);
        }
        breakdowns::draw_mcqa(f, mcqa, o, theme);
        frugality::draw(f, frugal, o, theme);
        breakdowns::draw_judge(f, judge, o, theme);
        breakdowns::draw_citations(f, citations, o, theme);
        breakdowns::draw_grounded(f, grounded, o, theme);
    }
}
