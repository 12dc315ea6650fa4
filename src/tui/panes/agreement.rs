//! Agreement pane: the agreement table (criteria and Overall; kappa and macro-F1 with
//! bootstrap CIs for R1 vs R2, Judge vs R1, Judge vs R2) with the paper's values as a
//! reference row, a chart of kappa per criterion with CI whiskers, the confusion matrix
//! of the selected pair and criterion, and the items on which that pair disagrees.
//! The bootstrap runs as a background job (`r` recomputes).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table};

use crate::core::agreement::{AgreementReport, Estimate};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::annotation::{AgreementRow, Disagreement};
use crate::service::study::RaterPair;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

#[derive(Default)]
pub struct AgreementPane {
    pub rows: Vec<AgreementRow>,
    pub reviewers: Option<(String, String)>,
    pub computing: bool,
    /// The newest recomputation asked for; older results are dropped.
    pub ticket: u64,
    pub pair: RaterPair,
    pub criterion: usize,
    pub status: Option<String>,
    /// Items where the selected pair disagrees: (item id, criterion, label a, label b).
    pub disagreements: Vec<Disagreement>,
}

fn est(e: &Estimate) -> String {
    match (e.value, e.lo, e.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2},{hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "undefined".into(),
    }
}

impl AgreementPane {
    /// The table: kappa and macro-F1 per criterion for the three pairs, and the paper.
    fn draw_table(&self, f: &mut Frame, table_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        let (r1, r2) = self.reviewers.clone().unwrap_or_default();
        let (r1, r2) = (clean(&r1), clean(&r2));
        let header = Row::new(vec![
            "criterion".to_string(),
            format!("κ {r1}/{r2}"),
            format!("F1 {r1}/{r2}"),
            format!("κ judge/{r1}"),
            format!("F1 judge/{r1}"),
            format!("κ judge/{r2}"),
            format!("F1 judge/{r2}"),
        ])
        .style(theme.title);
        let mut rows: Vec<Row> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let mut cells = vec![r.criterion.clone()];
                for (_, rep) in &r.pairs {
                    match rep {
                        Some(rep) => {
                            cells.push(est(&rep.kappa));
                            cells.push(est(&rep.macro_f1));
                        }
                        None => {
                            cells.push("no data".into());
                            cells.push(String::new());
                        }
                    }
                }
                Row::new(cells).style(if i == self.criterion {
                    theme.selected
                } else {
                    theme.text
                })
            })
            .collect();
        rows.push(
            Row::new(vec![
                "paper (n=100)",
                "0.56 [0.48,0.64]",
                "0.78 [0.74,0.82]",
                "0.42",
                "0.71",
                "0.55",
                "0.78",
            ])
            .style(theme.muted),
        );
        let w = Constraint::Length(17);
        f.render_widget(
            Table::new(rows, [Constraint::Length(20), w, w, w, w, w, w])
                .header(header)
                .block(block(format!(" Agreement (95% bootstrap CI) · tab-free keys: j/k criterion, x pair, r recompute{} ", if self.computing { " · computing…" } else { "" }))),
            table_area,
        );
    }

    /// Kappa per criterion with its CI as whiskers, for the selected pair.
    fn draw_chart(&self, f: &mut Frame, chart_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        // Kappa per criterion with CI whiskers on a [-1, 1] axis.
        let width = usize::from(chart_area.width.saturating_sub(24)).max(10);
        let pos = |v: f64| {
            (((v + 1.0) / 2.0) * (width - 1) as f64)
                .round()
                .clamp(0.0, (width - 1) as f64) as usize
        };
        let mut lines = vec![Line::styled(
            format!("{:<20}-1{}+1", "", " ".repeat(width.saturating_sub(4))),
            theme.muted,
        )];
        for r in &self.rows {
            let mut bar = vec![' '; width];
            bar[pos(0.0)] = '┆';
            if let Some(Some(rep)) = r.pairs.get(self.pair.index()).map(|p| p.1.as_ref()) {
                if let (Some(lo), Some(hi)) = (rep.kappa.lo, rep.kappa.hi) {
                    for c in bar.iter_mut().take(pos(hi) + 1).skip(pos(lo)) {
                        *c = '─';
                    }
                    bar[pos(lo)] = '├';
                    bar[pos(hi)] = '┤';
                }
                if let Some(v) = rep.kappa.value {
                    bar[pos(v)] = '●';
                }
            }
            lines.push(Line::from(vec![
                Span::styled(format!("{:<20}", clean(&r.criterion)), theme.text),
                Span::styled(bar.into_iter().collect::<String>(), theme.score_bar),
            ]));
        }
        let pair_name = self
            .rows
            .first()
            .and_then(|r| r.pairs.get(self.pair.index()))
            .map(|p| clean(&p.0))
            .unwrap_or_default();
        f.render_widget(
            Paragraph::new(lines).block(block(format!(" κ with 95% CI · {pair_name} "))),
            chart_area,
        );
    }

    /// The confusion matrix of the selected pair and criterion.
    fn draw_confusion(&self, f: &mut Frame, matrix_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        let mut m = vec![];
        if let Some(rep) = self.selected() {
            let c = &rep.confusion;
            m.push(Line::styled(
                format!(
                    "{:>8} {}",
                    "",
                    c.labels
                        .iter()
                        .map(|l| format!("{l:>6}"))
                        .collect::<String>()
                ),
                theme.title,
            ));
            for (i, l) in c.labels.iter().enumerate() {
                m.push(Line::styled(
                    format!(
                        "{l:>8} {}",
                        c.counts[i]
                            .iter()
                            .map(|n| format!("{n:>6}"))
                            .collect::<String>()
                    ),
                    theme.text,
                ));
            }
            m.push(Line::styled(
                format!("n = {} labels on {} items", rep.units, rep.items),
                theme.muted,
            ));
        }
        f.render_widget(
            Paragraph::new(m).block(block(" Confusion (rows: first) ".into())),
            matrix_area,
        );
    }

    /// The items on which the selected pair disagrees.
    fn draw_disagreements(&self, f: &mut Frame, list_area: Rect, theme: &Theme) {
        let block = |t: String| theme.block(t, false);
        let list: Vec<Line> = self
            .disagreements
            .iter()
            .take(usize::from(list_area.height.saturating_sub(2)))
            .map(|d| {
                Line::styled(
                    clean(&format!(
                        "{}  {}: {} vs {}",
                        d.item_id, d.criterion, d.first, d.second
                    )),
                    theme.error,
                )
            })
            .collect();
        f.render_widget(
            Paragraph::new(list).block(block(format!(
                " Disagreements ({}) ",
                self.disagreements.len()
            ))),
            list_area,
        );
    }

    fn selected(&self) -> Option<&AgreementReport> {
        self.rows
            .get(self.criterion)?
            .pairs
            .get(self.pair.index())?
            .1
            .as_ref()
    }
}

impl PaneView for AgreementPane {
    /// Apply an action; a recomputation is returned as an effect.
    fn update(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Refresh => return Some(Effect::RefreshAgreement),
            Action::NextPair => {
                // The disagreement list belongs to the pair: recompute it for the new one.
                self.pair = self.pair.next();
                return Some(Effect::RefreshAgreement);
            }
            Action::NextCriterion | Action::Down => {
                self.criterion = (self.criterion + 1) % self.rows.len().max(1);
            }
            Action::Up => {
                self.criterion =
                    (self.criterion + self.rows.len().max(1) - 1) % self.rows.len().max(1)
            }
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        if self.rows.is_empty() {
            let msg = if self.computing {
                "computing the bootstrap…".to_string()
            } else {
                self.status.clone().unwrap_or_else(|| {
                    "No agreement yet: two reviewers must label the same items (r to refresh)."
                        .into()
                })
            };
            f.render_widget(
                Paragraph::new(clean(&msg))
                    .style(theme.muted)
                    .block(theme.block(" Agreement ", false)),
                area,
            );
            return;
        }
        let [table_area, bottom] = Layout::vertical([
            Constraint::Length(self.rows.len() as u16 + 5),
            Constraint::Min(6),
        ])
        .areas(area);
        let [chart_area, matrix_area, list_area] = Layout::horizontal([
            Constraint::Percentage(40),
            Constraint::Percentage(25),
            Constraint::Percentage(35),
        ])
        .areas(bottom);
        self.draw_table(f, table_area, theme);
        self.draw_chart(f, chart_area, theme);
        self.draw_confusion(f, matrix_area, theme);
        self.draw_disagreements(f, list_area, theme);
    }
}
