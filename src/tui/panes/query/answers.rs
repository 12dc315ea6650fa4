//! Retrieval -> answer -> judge: the stored answers to the current question, each with
//! the configuration that ranked its context, where its target sat in the prompt, the
//! chunks the token budget dropped, every judge's labels and the selected answer's
//! grounded verdicts (`answers ground`: each statement with its verdict and supporting
//! chunk, each context's usefulness, the scores). `J` judges the selected
//! answer (the judge streams into the Generate pane), `a` sends it to annotation.
//! An answer that is an item of a study not yet revealed to the viewer shows no judge
//! labels and cannot be judged here (blinding covers the judge too).

use std::collections::HashSet;

use ratatui::Frame;
use ratatui::layout::Constraint;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Row, Table, TableState};

use crate::core::text::{sanitize_for_terminal as clean, snippet};
use crate::service::answer::{AnswerRecord, JudgementRecord};
use crate::service::evaluate::{PromptPlace, prompt_place};
use crate::tui::theme::Theme;

/// One answer as the panel lists it (computed when the panel opens or data changes).
#[derive(Debug, Clone, PartialEq)]
pub struct AnswerRow {
    pub answer_id: String,
    /// `run · method a=0.70 k=5`, or `run · no retrieval`.
    pub config: String,
    pub model: String,
    /// `#2`, `dropped`, `not retrieved`.
    pub target: String,
    pub dropped: usize,
    /// Each judge's latest labels: `judge: criterion=label, ...`.
    pub judged: Vec<String>,
    /// Each grounding judge's verdicts as lines (`core::grounded::explain_lines`).
    pub grounded: Vec<String>,
    pub answer: String,
}

/// The stored answers to `question_id`, newest first, with their judgements.
pub fn rows_for(
    question_id: &str,
    answers: &[AnswerRecord],
    judgements: &[JudgementRecord],
    grounded: &[crate::core::grounded::GroundedRecord],
) -> Vec<AnswerRow> {
    let mut rows: Vec<(&str, AnswerRow)> = answers
        .iter()
        .filter(|a| a.question_id == question_id)
        .map(|a| {
            let config = if a.no_retrieval {
                format!("{} · no retrieval", a.run)
            } else {
                format!("{} · {} a={:.2} k={}", a.run, a.method, a.alpha, a.k)
            };
            let target = match prompt_place(a) {
                PromptPlace::Rank(r) => format!("#{r}"),
                PromptPlace::Dropped => "dropped".into(),
                PromptPlace::NotRetrieved => "not retrieved".into(),
            };
            // The newest judgement of each judge model (they are appended in order).
            let mut latest: Vec<&JudgementRecord> = Vec::new();
            for j in judgements.iter().filter(|j| j.answer_id == a.answer_id) {
                match latest.iter_mut().find(|l| l.judge_model == j.judge_model) {
                    Some(l) => *l = j,
                    None => latest.push(j),
                }
            }
            let judged = latest
                .iter()
                .map(|j| format!("{}: {}", j.judge_model, j.labels_line()))
                .collect();
            let model = a
                .served_model
                .clone()
                .unwrap_or_else(|| a.model_file.clone());
            (
                a.created_at.as_str(),
                AnswerRow {
                    answer_id: a.answer_id.clone(),
                    config,
                    model,
                    target,
                    dropped: a.dropped_chunk_ids.len(),
                    judged,
                    grounded: grounded
                        .iter()
                        .filter(|g| g.answer_id == a.answer_id)
                        .flat_map(crate::core::grounded::explain_lines)
                        .collect(),
                    answer: a.answer.clone(),
                },
            )
        })
        .collect();
    rows.sort_by(|x, y| y.0.cmp(x.0));
    rows.into_iter().map(|(_, r)| r).collect()
}

#[derive(Debug, Clone, Default)]
pub struct AnswersPanel {
    pub open: bool,
    pub sel: usize,
    pub rows: Vec<AnswerRow>,
    /// Answers whose judge labels the viewer may not see: items of a study not yet
    /// revealed to them (all study items without an identity). Set from the study
    /// whenever it or the viewer changes.
    pub blind: HashSet<String>,
}

/// What the panel shows instead of a blind answer's judge labels.
pub const BLIND_JUDGE: &str = "hidden: a study item not yet revealed to you";

impl AnswersPanel {
    /// The judge labels of `row` as shown: hidden while the answer is blind.
    pub fn judged_text(&self, row: &AnswerRow) -> String {
        if self.blind.contains(&row.answer_id) {
            BLIND_JUDGE.to_string()
        } else if row.judged.is_empty() {
            "not judged".to_string()
        } else {
            row.judged.join(" | ")
        }
    }

    /// Why the selected answer may not be judged here (its verdict would show the
    /// judge's labels of a blind study item), if so.
    pub fn judge_refusal(&self) -> Option<&'static str> {
        self.selected()
            .filter(|r| self.blind.contains(&r.answer_id))
            .map(|_| "not judged here: this answer is a study item not yet revealed to you")
    }

    pub fn selected(&self) -> Option<&AnswerRow> {
        self.rows.get(self.sel)
    }

    pub fn move_by(&mut self, d: isize) {
        if !self.rows.is_empty() {
            self.sel = self.sel.saturating_add_signed(d).min(self.rows.len() - 1);
        }
    }

    /// The selected answer's grounded verdicts as shown: hidden while the answer is
    /// blind (they are the judge's), else the lines, or how to get them.
    pub fn grounded_text(&self, row: &AnswerRow) -> Vec<String> {
        if self.blind.contains(&row.answer_id) {
            vec![BLIND_JUDGE.to_string()]
        } else if row.grounded.is_empty() {
            vec!["no grounded scores: `raglab answers ground --run RUN` scores a run".to_string()]
        } else {
            row.grounded.clone()
        }
    }

    pub fn draw(&self, f: &mut Frame, question: &str, theme: &Theme) {
        let whole = crate::tui::layout::centered(f.area(), 94, 80);
        f.render_widget(Clear, whole);
        let [area, detail] =
            ratatui::layout::Layout::vertical([Constraint::Min(5), Constraint::Percentage(45)])
                .areas(whole);
        if let Some(row) = self.selected() {
            let lines: Vec<Line> = self
                .grounded_text(row)
                .iter()
                .map(|l| Line::styled(clean(l), theme.text))
                .collect();
            f.render_widget(
                ratatui::widgets::Paragraph::new(lines)
                    .wrap(ratatui::widgets::Wrap { trim: false })
                    .block(theme.block(
                        " Grounded verdicts of the selected answer ".to_string(),
                        false,
                    )),
                detail,
            );
        }
        let rows: Vec<Row> = self
            .rows
            .iter()
            .map(|r| {
                let judged = self.judged_text(r);
                Row::new(vec![
                    Line::styled(clean(&r.config), theme.title),
                    Line::styled(clean(&r.target), theme.target_chunk),
                    Line::styled(r.dropped.to_string(), theme.muted),
                    Line::styled(clean(&judged), theme.pass),
                    Line::styled(snippet(&clean(&r.answer), 200), theme.text),
                ])
                .height(1)
            })
            .collect();
        let title = format!(
            " Answers to `{}` · {} · J judge, a annotate, esc closes ",
            snippet(&clean(question), 60),
            self.rows.len()
        );
        let mut state = TableState::default().with_selected(Some(self.sel));
        f.render_stateful_widget(
            Table::new(
                rows,
                [
                    Constraint::Length(34),
                    Constraint::Length(14),
                    Constraint::Length(8),
                    Constraint::Percentage(35),
                    Constraint::Min(20),
                ],
            )
            .header(
                Row::new(vec![
                    "run · configuration",
                    "target in prompt",
                    "dropped",
                    "judge labels",
                    "answer",
                ])
                .style(theme.title),
            )
            .row_highlight_style(theme.selected)
            .block(theme.block(title, true)),
            area,
            &mut state,
        );
    }
}
