//! Runs pane (8): every pipeline of the workspace side by side, as `raglab report runs`
//! builds it: each retrieval configuration and answer run with its quality column
//! (mean and clustered 95% interval), tokens, latency, Pareto mark and, once a row is
//! pinned, its paired difference from that baseline. `s` sorts, `c` changes the
//! quality column, `P` pins the selected row, `enter` opens it where its details live.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use crate::core::text::sanitize_for_terminal as clean;
use crate::service::report::{RunRow, RunsMatrix, sort_rows};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

/// What makes rows, shown when there are none.
pub const HOW_TO: &str = "raglab eval retrieval --queries FILE (retrieval rows), raglab generate --questions FILE (answer rows)";

/// The sort orders `s` cycles through: by kind (retrieval first), by the quality
/// column (best first), by latency and by tokens (cheapest first), by label.
const SORTS: [&str; 5] = ["kind", "quality", "latency", "tokens", "label"];

#[derive(Default)]
pub struct RunsPane {
    /// The last load (None: not loaded yet).
    matrix: Option<RunsMatrix>,
    selected: usize,
    /// Index into [`SORTS`].
    sort: usize,
    /// The quality column asked for (None: the matrix's default).
    quality: Option<String>,
    /// The pinned row's label.
    baseline: Option<String>,
    loading: bool,
    status: Option<String>,
}

impl RunsPane {
    /// Read the matrix again (each time the pane is opened), with the pane's column and
    /// baseline.
    pub fn load(&mut self) -> Effect {
        self.loading = true;
        Effect::LoadRuns {
            quality: self.quality.clone(),
            baseline: self.baseline.clone(),
        }
    }

    /// A load is in flight.
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// The matrix shown (None: not loaded, or the last load failed).
    pub fn matrix(&self) -> Option<&RunsMatrix> {
        self.matrix.as_ref()
    }

    /// The pane's last message, if any.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Say something in the pane.
    pub fn say(&mut self, what: String) {
        self.status = Some(what);
    }

    /// A finished load, sorted as the pane sorts; the selection stays on the same row.
    pub fn on_loaded(&mut self, result: Result<RunsMatrix, String>) {
        self.loading = false;
        match result {
            Ok(m) => {
                let current = self.current().map(|r| r.label.clone());
                self.quality = Some(m.quality.clone());
                self.matrix = Some(m);
                self.sort_keeping(current.as_deref());
                self.status = None;
            }
            Err(e) => {
                self.matrix = None;
                self.status = Some(e);
            }
        }
    }

    /// The selected row.
    pub fn current(&self) -> Option<&RunRow> {
        self.matrix.as_ref()?.rows.get(self.selected)
    }

    fn len(&self) -> usize {
        self.matrix.as_ref().map_or(0, |m| m.rows.len())
    }

    fn select(&mut self, label: Option<&str>) {
        let Some(m) = &self.matrix else { return };
        self.selected = label
            .and_then(|l| m.rows.iter().position(|r| r.label == l))
            .unwrap_or(self.selected)
            .min(m.rows.len().saturating_sub(1));
    }

    fn move_by(&mut self, delta: isize) {
        let n = self.len();
        if n > 0 {
            self.selected = self.selected.saturating_add_signed(delta).min(n - 1);
        }
    }

    /// Sort the rows by the current order, keeping the selected row selected.
    fn apply_sort(&mut self) {
        let current = self.current().map(|r| r.label.clone());
        self.sort_keeping(current.as_deref());
    }

    /// Sort the rows by the current order; the row labelled `keep` stays selected
    /// (None: the selection stays at its place).
    fn sort_keeping(&mut self, keep: Option<&str>) {
        let Some(m) = self.matrix.as_mut() else {
            return;
        };
        let column = match SORTS[self.sort] {
            "quality" => m.quality.clone(),
            other => other.to_string(),
        };
        if let Err(e) = sort_rows(&mut m.rows, &column) {
            self.status = Some(format!("{e:#}"));
        }
        self.select(keep);
    }

    /// The quality columns the rows have, by name.
    fn columns(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .matrix
            .iter()
            .flat_map(|m| m.rows.iter().flat_map(|r| r.quality.keys().cloned()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The next quality column, and the matrix built again around it.
    fn next_quality(&mut self) -> Option<Effect> {
        let columns = self.columns();
        if columns.is_empty() {
            return None;
        }
        let at = self
            .quality
            .as_ref()
            .and_then(|q| columns.iter().position(|c| c == q));
        self.quality = Some(columns[at.map_or(0, |i| (i + 1) % columns.len())].clone());
        Some(self.load())
    }

    /// Pin the selected row as the baseline (again on the pinned row: unpin).
    fn pin(&mut self) -> Option<Effect> {
        let label = self.current()?.label.clone();
        self.baseline = if self.baseline.as_deref() == Some(label.as_str()) {
            None
        } else {
            Some(label)
        };
        Some(self.load())
    }
}

impl PaneView for RunsPane {
    fn update(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Down => self.move_by(1),
            Action::Up => self.move_by(-1),
            Action::PageDown => self.move_by(10),
            Action::PageUp => self.move_by(-10),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = self.len().saturating_sub(1),
            Action::SortNext => {
                self.sort = (self.sort + 1) % SORTS.len();
                self.apply_sort();
            }
            Action::CycleQuality => return self.next_quality(),
            Action::PinBaseline => return self.pin(),
            Action::Refresh => return Some(self.load()),
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let Some(m) = &self.matrix else {
            let text = match &self.status {
                Some(s) => vec![
                    Line::styled(clean(s), theme.error),
                    Line::from(format!("Make runs: {HOW_TO}")),
                ],
                None => vec![Line::from("reading the runs…")],
            };
            f.render_widget(
                Paragraph::new(text)
                    .wrap(Wrap { trim: false })
                    .block(theme.block("Runs", true)),
                area,
            );
            return;
        };
        let [list_area, detail_area] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(area);
        let header = format!(
            "{:<26} {:<9} {:<28} {:>24} {:>7} {:>9}  {}",
            "run",
            "kind",
            "pipeline",
            clean(&m.quality),
            "tokens",
            "p50 ms",
            "pareto · against baseline"
        );
        let mut items = vec![ListItem::new(Line::styled(header, theme.muted))];
        items.extend(m.rows.iter().map(|r| row_item(r, m, theme)));
        let mut state = ListState::default().with_selected(Some(self.selected + 1));
        let title = format!(
            "Runs {}/{} · quality {} · sorted by {} · baseline {}{}",
            self.selected + 1,
            m.rows.len(),
            clean(&m.quality),
            SORTS[self.sort],
            m.baseline.as_deref().map_or("none (P pins)".into(), clean),
            if self.loading { " · reading…" } else { "" }
        );
        f.render_stateful_widget(
            List::new(items)
                .block(theme.block(title, true))
                .highlight_style(theme.selected),
            list_area,
            &mut state,
        );
        if let Some(r) = self.current() {
            f.render_widget(
                Paragraph::new(detail(r, m, self.status.as_deref(), theme))
                    .wrap(Wrap { trim: false })
                    .block(theme.block(format!("Run {}", clean(&r.label)), false)),
                detail_area,
            );
        }
    }
}

/// One row of the list.
fn row_item<'a>(r: &RunRow, m: &RunsMatrix, theme: &Theme) -> ListItem<'a> {
    let quality = r.quality.get(&m.quality).map_or("-".to_string(), |e| {
        format!(
            "{:.4} [{:.4},{:.4}]",
            e.mean, e.interval.ci.0, e.interval.ci.1
        )
    });
    let tokens = match (r.cost.prompt_tokens, r.cost.output_tokens) {
        (Some(p), Some(o)) => format!("{:.0}", p + o),
        _ => "-".into(),
    };
    let latency = crate::service::report::latency_of(r);
    let mark = match (
        &r.dominated_by,
        m.baseline.as_deref() == Some(r.label.as_str()),
    ) {
        (_, true) => "baseline".to_string(),
        (Some(by), _) => format!("dominated by {}", clean(by)),
        (None, _) if r.quality.contains_key(&m.quality) => "front".to_string(),
        (None, _) => "-".to_string(),
    };
    let against = r.against_baseline.as_ref().map_or(String::new(), |d| {
        format!(
            " · {:+.4} [{:+.4},{:+.4}] p {:.3}",
            d.difference, d.interval.ci.0, d.interval.ci.1, d.p_holm
        )
    });
    let style = if r.dominated_by.is_some() {
        theme.muted
    } else {
        theme.text
    };
    ListItem::new(Line::from(vec![
        Span::styled(
            format!(
                "{:<26} {:<9} {:<28} {:>24} {:>7} {:>9.1}  ",
                clean(&r.label),
                r.kind,
                clean(&r.pipeline_short()),
                quality,
                tokens,
                latency
            ),
            style,
        ),
        Span::styled(
            format!("{mark}{against}"),
            if r.dominated_by.is_some() {
                theme.fail
            } else {
                theme.pass
            },
        ),
    ]))
}

/// One `name  value` line of the detail panel.
fn field<'a>(name: &str, value: String, theme: &Theme) -> Line<'a> {
    Line::from(vec![
        Span::styled(format!("{name:<15}"), theme.muted),
        Span::raw(clean(&value)),
    ])
}

/// The selected row in full: its pipeline, every quality column, its cost by stage,
/// the difference from the baseline, and the matrix's notes.
fn detail<'a>(r: &RunRow, m: &RunsMatrix, status: Option<&str>, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = pipeline_lines(r, theme);
    lines.extend(measure_lines(r, theme));
    if let Some(d) = &r.against_baseline {
        lines.push(Line::styled(
            format!(
                "against {}: {:+.4} [{:+.4}, {:+.4}] on {} over {} questions · {} p {:.4} (Holm {:.4}) · this set detects {:.4} or more",
                clean(m.baseline.as_deref().unwrap_or("-")),
                d.difference,
                d.interval.ci.0,
                d.interval.ci.1,
                clean(&d.metric),
                d.questions,
                d.test,
                d.p,
                d.p_holm,
                d.interval.mde_80
            ),
            theme.title,
        ));
    }
    lines.push(Line::styled(
        format!("clusters: {}", clean(&m.clusters)),
        theme.muted,
    ));
    for n in &m.notes {
        lines.push(Line::styled(format!("note: {}", clean(n)), theme.muted));
    }
    if let Some(s) = status {
        lines.push(Line::styled(clean(s), theme.filter));
    }
    lines
}

/// What the row is: its retrieval and prompt settings, and where it ran.
fn pipeline_lines<'a>(r: &RunRow, theme: &Theme) -> Vec<Line<'a>> {
    let p = &r.pipeline;
    vec![
        field(
            "pipeline",
            format!(
                "{} · sparse {} · fusion {} · alpha {} · rerank {}",
                p.method,
                p.sparse.as_deref().unwrap_or("-"),
                p.fusion.as_deref().unwrap_or("-"),
                p.alpha.map_or("-".into(), |a| format!("{a:.2}")),
                p.rerank.as_deref().unwrap_or("none")
            ),
            theme,
        ),
        field(
            "prompt",
            format!(
                "template {} · context {} · k {} · generator {}",
                p.template.as_deref().unwrap_or("-"),
                p.context_policy.as_deref().unwrap_or("-"),
                p.k.map_or("-".into(), |k| k.to_string()),
                p.generator.as_deref().unwrap_or("-")
            ),
            theme,
        ),
        field("ran on", r.cost.ran_on.join(", "), theme),
    ]
}

/// What the row measured: every quality column with its interval, each stage's
/// latency, and each criterion's pass rate corrected by human labels.
fn measure_lines<'a>(r: &RunRow, theme: &Theme) -> Vec<Line<'a>> {
    let mut lines = Vec::new();
    for (name, e) in &r.quality {
        lines.push(field(
            name,
            format!(
                "{:.4} [{:.4}, {:.4}] · n {} · {} clusters · se {:.4} clustered / {:.4} naive · detects {:.4}",
                e.mean,
                e.interval.ci.0,
                e.interval.ci.1,
                e.n,
                e.interval.clusters,
                e.interval.se_clustered.unwrap_or(f64::NAN),
                e.interval.se_naive,
                e.interval.mde_80
            ),
            theme,
        ));
    }
    for (stage, l) in &r.cost.latency_ms {
        let q = match (l.p50, l.p95) {
            (Some(a), Some(b)) => format!("p50 {a:.1} ms · p95 {b:.1} ms"),
            _ => format!("{:.2} ms a question (mean)", l.mean),
        };
        lines.push(field(stage, q, theme));
    }
    for (criterion, c) in &r.corrected {
        let ppi = c.ppi_plus.as_ref().map_or("-".to_string(), |p| {
            format!(
                "{:.3} [{:.3}, {:.3}]",
                p.interval.estimate, p.interval.low, p.interval.high
            )
        });
        lines.push(field(
            &format!("{criterion} corrected"),
            format!(
                "raw judge {:.3} · PPI++ {ppi} · {} human labels{}",
                c.raw_judge,
                c.n_human,
                if c.too_few { " (too few)" } else { "" }
            ),
            theme,
        ));
    }
    lines
}

#[cfg(test)]
mod tests;
