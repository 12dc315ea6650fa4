//! The failures browser: every failed question of the last `raglab eval retrieval`,
//! each with the configuration that failed it, filtered by topic, target-length
//! bucket and configuration. `n` / `p` in the Query pane follow the filtered list.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Row, Table, TableState};

use crate::core::question::FailedQuestion;
use crate::core::text::sanitize_for_terminal as clean;
use crate::tui::theme::Theme;

/// One filter: `None` shows everything; cycling visits each value present, then all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter(pub Option<String>);

impl Filter {
    /// The next value after the current one among `values` (sorted, distinct).
    fn cycle(&mut self, values: &[String]) {
        self.0 = match &self.0 {
            None => values.first().cloned(),
            Some(v) => values
                .iter()
                .position(|x| x == v)
                .and_then(|i| values.get(i + 1))
                .cloned(),
        };
    }

    fn admits(&self, value: Option<&str>) -> bool {
        self.0.as_deref().is_none_or(|want| value == Some(want))
    }

    fn label(&self) -> &str {
        self.0.as_deref().unwrap_or("all")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilterKind {
    Topic,
    Length,
    Config,
}

#[derive(Debug, Clone, Default)]
pub struct Browser {
    pub open: bool,
    pub topic: Filter,
    pub length: Filter,
    pub config: Filter,
    /// Selected row of the filtered list.
    pub sel: usize,
    /// Indices into the failures that pass the filters (recomputed on change).
    pub shown: Vec<usize>,
}

fn distinct(values: impl Iterator<Item = String>) -> Vec<String> {
    let mut v: Vec<String> = values.collect();
    v.sort();
    v.dedup();
    v
}

impl Browser {
    /// Recompute the filtered list (after loading failures or changing a filter).
    pub fn refilter(&mut self, failures: &[FailedQuestion]) {
        self.shown = failures
            .iter()
            .enumerate()
            .filter(|(_, f)| {
                self.topic.admits(f.question.topic.as_deref())
                    && self.length.admits(f.target_length.as_deref())
                    && self.config.admits(Some(&f.config_label()))
            })
            .map(|(i, _)| i)
            .collect();
        self.sel = self.sel.min(self.shown.len().saturating_sub(1));
    }

    /// Move one filter to its next value.
    pub fn cycle(&mut self, kind: FilterKind, failures: &[FailedQuestion]) {
        match kind {
            FilterKind::Topic => self.topic.cycle(&distinct(
                failures.iter().filter_map(|f| f.question.topic.clone()),
            )),
            FilterKind::Length => self.length.cycle(&distinct(
                failures.iter().filter_map(|f| f.target_length.clone()),
            )),
            FilterKind::Config => self
                .config
                .cycle(&distinct(failures.iter().map(FailedQuestion::config_label))),
        }
        self.sel = 0;
        self.refilter(failures);
    }

    pub fn move_by(&mut self, d: isize) {
        if !self.shown.is_empty() {
            self.sel = self.sel.saturating_add_signed(d).min(self.shown.len() - 1);
        }
    }

    /// The filters as one line (`config hybrid-bm25-a0.70 · topic all · length all`).
    pub fn filters_line(&self) -> String {
        format!(
            "config {} (m) · topic {} (t) · target length {} (b)",
            self.config.label(),
            self.topic.label(),
            self.length.label()
        )
    }

    pub fn draw(&self, f: &mut Frame, failures: &[FailedQuestion], theme: &Theme) {
        let area: Rect = crate::tui::layout::centered(f.area(), 92, 85);
        f.render_widget(Clear, area);
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| format!("#{r}"));
        let rows: Vec<Row> = self
            .shown
            .iter()
            .filter_map(|&i| failures.get(i))
            .map(|fq| {
                Row::new(vec![
                    Line::styled(clean(&fq.config_label()), theme.title),
                    Line::styled(rank(fq.rank), theme.rank_sparse),
                    Line::styled(
                        clean(fq.question.topic.as_deref().unwrap_or("-")),
                        theme.muted,
                    ),
                    Line::styled(fq.target_length.clone().unwrap_or("-".into()), theme.muted),
                    Line::styled(clean(&fq.question.text), theme.text),
                ])
            })
            .collect();
        let title = format!(
            " Failures {}/{} · {} · enter opens, esc closes ",
            self.shown.len(),
            failures.len(),
            self.filters_line()
        );
        let mut state = TableState::default().with_selected(Some(self.sel));
        f.render_stateful_widget(
            Table::new(
                rows,
                [
                    Constraint::Length(26),
                    Constraint::Length(6),
                    Constraint::Length(16),
                    Constraint::Length(9),
                    Constraint::Min(20),
                ],
            )
            .header(
                Row::new(vec!["config", "rank", "topic", "words", "question"]).style(theme.title),
            )
            .row_highlight_style(theme.selected)
            .block(theme.block(title, true)),
            area,
            &mut state,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::question::{EvalConfig, Question};
    use crate::core::retrieval::Method;

    fn failure(id: &str, topic: &str, len: &str, method: Method) -> FailedQuestion {
        FailedQuestion {
            question: Question {
                id: id.into(),
                text: id.into(),
                topic: Some(topic.into()),
                ..Question::default()
            },
            rank: None,
            config: Some(EvalConfig {
                method,
                sparse: None,
                alpha: None,
                embedding_model: None,
                corpus: "/ws".into(),
                chunks: 1,
                depth: 1,
            }),
            target_length: Some(len.into()),
        }
    }

    #[test]
    fn filters_cycle_through_present_values_and_combine() {
        let all = vec![
            failure("a", "measles", "0-99", Method::Bm25),
            failure("b", "measles", "100-199", Method::Dense),
            failure("c", "flu", "0-99", Method::Dense),
        ];
        let mut b = Browser::default();
        b.refilter(&all);
        assert_eq!(b.shown, [0, 1, 2]);
        b.cycle(FilterKind::Topic, &all); // flu (sorted)
        assert_eq!(b.shown, [2]);
        b.cycle(FilterKind::Topic, &all); // measles
        assert_eq!(b.shown, [0, 1]);
        b.cycle(FilterKind::Config, &all); // bm25
        assert_eq!(b.shown, [0]);
        b.cycle(FilterKind::Config, &all); // dense
        assert_eq!(b.shown, [1]);
        b.cycle(FilterKind::Length, &all); // 0-99: none left
        assert!(b.shown.is_empty());
        b.cycle(FilterKind::Topic, &all); // back to all topics
        assert_eq!(b.shown, [2]);
        assert_eq!(
            b.filters_line(),
            "config dense (m) · topic all (t) · target length 0-99 (b)"
        );
    }
}
