//! Annotate pane: one reviewer labels items on the rubric, blind to the other reviewer
//! and to the judge until every criterion of the item is labelled (then `r` reveals
//! them, disagreements highlighted). Single keys: `1`-`4` pick a criterion, `p`/`f`
//! label it (and move to the next criterion), `n` note, `]`/`[` next/previous item, `u`
//! first unlabelled item, `z` undo the last label. A label shows as saved only once its
//! lance commit has returned.

use std::collections::BTreeMap;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use crate::core::rubric::Rubric;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::annotation::{Item, Label};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

pub struct AnnotatePane {
    pub reviewer: Option<String>,
    /// The reviewer's name, asked for when none was given.
    pub reviewer_input: TextInput,
    pub items: Vec<Item>,
    pub rubric: Rubric,
    pub pos: usize,
    pub criterion: usize,
    /// Every label version known (this and other reviewers, the judge).
    pub labels: Vec<Label>,
    /// Labels sent but not yet confirmed, by ticket.
    pub pending: BTreeMap<u64, Label>,
    pub ticket: u64,
    pub revealed: bool,
    /// A note being typed (`n`), attached to the next label.
    pub note_input: TextInput,
    /// A finished note, attached to the next label.
    pub pending_note: Option<String>,
    pub status: Option<String>,
    pub last_save_ms: Option<f64>,
    /// This reviewer's own confirmed labels, newest last (for undo).
    pub history: Vec<Label>,
    /// Labels whose commit failed (item, criterion and why), reported on quitting.
    pub failed: Vec<String>,
}

impl AnnotatePane {
    pub fn new(reviewer: Option<String>, rubric: Rubric) -> Self {
        Self {
            reviewer,
            reviewer_input: TextInput::default(),
            items: Vec::new(),
            rubric,
            pos: 0,
            criterion: 0,
            labels: Vec::new(),
            pending: BTreeMap::new(),
            ticket: 0,
            revealed: false,
            note_input: TextInput::default(),
            pending_note: None,
            status: None,
            last_save_ms: None,
            history: Vec::new(),
            failed: Vec::new(),
        }
    }

    fn item(&self) -> Option<&Item> {
        self.items.get(self.pos)
    }

    /// The newest label of (item, reviewer, criterion), if not retracted.
    pub fn label_of(&self, item: &str, reviewer: &str, criterion: &str) -> Option<&Label> {
        self.labels
            .iter()
            .filter(|l| l.item_id == item && l.reviewer == reviewer && l.criterion == criterion)
            .max_by_key(|l| l.seq)
            .filter(|l| l.label.is_some())
    }

    /// Whether this reviewer has labelled every criterion of the item.
    pub fn complete(&self, item: &str) -> bool {
        let Some(me) = &self.reviewer else {
            return false;
        };
        self.rubric
            .criteria
            .iter()
            .all(|c| self.label_of(item, me, &c.key).is_some())
    }

    pub fn done_count(&self) -> usize {
        self.items
            .iter()
            .filter(|i| self.complete(&i.item_id))
            .count()
    }

    /// Hold `label` as pending and ask for its commit.
    fn queue(&mut self, label: Label) -> Option<Effect> {
        self.ticket += 1;
        self.pending.insert(self.ticket, label.clone());
        self.status = Some("saving…".into());
        Some(Effect::SaveLabel {
            ticket: self.ticket,
            label,
        })
    }

    /// A commit finished.
    pub fn on_saved(&mut self, ticket: u64, result: Result<f64, String>) {
        let Some(label) = self.pending.remove(&ticket) else {
            return;
        };
        match result {
            Ok(ms) => {
                self.last_save_ms = Some(ms);
                self.status = Some(format!("saved ✓ ({ms:.0} ms)"));
                if label.label.is_some() {
                    self.history.push(label.clone());
                } else {
                    self.history.retain(|l| {
                        !(l.item_id == label.item_id && l.criterion == label.criterion)
                    });
                }
                self.labels.push(label);
            }
            Err(e) => {
                self.failed.push(format!(
                    "{} {} = {}: {e}",
                    label.item_id,
                    label.criterion,
                    label.label.as_deref().unwrap_or("(undo)")
                ));
                self.status = Some(format!("NOT saved: {e}"));
            }
        }
    }

    fn label_current(&mut self, value: &str) -> Option<Effect> {
        let (Some(me), Some(item)) = (
            self.reviewer.clone(),
            self.item().map(|i| i.item_id.clone()),
        ) else {
            return None;
        };
        let c = self.rubric.criteria.get(self.criterion)?;
        if !self.rubric.labels_of(c).iter().any(|l| l == value) {
            self.status = Some(format!("`{value}` is not a label of {}", c.name));
            return None;
        }
        let note = self.pending_note.take();
        let label = Label::new(
            &item,
            &me,
            &c.key,
            Some(value),
            note.as_deref(),
            &self.rubric.version,
        );
        if self.criterion + 1 < self.rubric.criteria.len() {
            self.criterion += 1;
        }
        self.queue(label)
    }

    fn undo(&mut self) -> Option<Effect> {
        let Some(last) = self.history.pop() else {
            self.status = Some("nothing to undo".into());
            return None;
        };
        let retract = Label::new(
            &last.item_id,
            &last.reviewer,
            &last.criterion,
            None,
            Some("undo"),
            &last.rubric_version,
        );
        if let Some(i) = self.items.iter().position(|i| i.item_id == last.item_id) {
            self.pos = i;
        }
        self.criterion = self
            .rubric
            .criteria
            .iter()
            .position(|c| c.key == last.criterion)
            .unwrap_or(0);
        self.queue(retract)
    }

    fn goto(&mut self, pos: usize) {
        self.pos = pos.min(self.items.len().saturating_sub(1));
        self.criterion = 0;
        self.revealed = false;
    }
}

impl AnnotatePane {
    /// Asks who is labelling when no `--reviewer` was given.
    fn draw_reviewer_prompt(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        f.render_widget(
            Paragraph::new(vec![
                Line::styled(
                    "Who is labelling? Type your reviewer name and press enter.",
                    theme.text,
                ),
                Line::styled(
                    "(Labels are stored per reviewer; `raglab --reviewer NAME` skips this.)",
                    theme.muted,
                ),
                Line::raw(""),
                {
                    let mut name = self.reviewer_input.clone();
                    name.open_with(self.reviewer_input.text()); // always shows its cursor
                    name.line(theme.filter)
                },
                Line::styled(
                    clean(self.status.as_deref().unwrap_or_default()),
                    theme.error,
                ),
            ])
            .block(block(" Reviewer ".into(), true)),
            area,
        );
    }

    /// Reviewer, item position, items done, and the save status.
    fn draw_progress(&self, f: &mut Frame, progress: Rect, me: &str, theme: &Theme) {
        let me = clean(me);
        let done = self.done_count();
        let status = clean(self.status.as_deref().unwrap_or_default());
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(
                    format!(
                        " {me} · item {}/{} · {done}/{} done ",
                        self.pos + 1,
                        self.items.len(),
                        self.items.len()
                    ),
                    theme.title,
                ),
                Span::styled(
                    format!(" {status}"),
                    if status.starts_with("NOT") {
                        theme.error
                    } else {
                        theme.filter
                    },
                ),
            ])),
            progress,
        );
    }

    /// The four texts side by side: question, reference answer, target chunk, answer.
    fn draw_texts(&self, f: &mut Frame, texts: Rect, item: &Item, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        let cols = Layout::horizontal([Constraint::Ratio(1, 4); 4]).split(texts);
        let boxes = [
            (" Question ", &item.question),
            (" Reference answer ", &item.reference_answer),
            (" Target chunk ", &item.target_chunk),
            (" Model answer ", &item.answer),
        ];
        for (area, (title, text)) in cols.iter().zip(boxes) {
            f.render_widget(
                Paragraph::new(clean(text))
                    .style(theme.text)
                    .wrap(Wrap { trim: false })
                    .block(block(title.into(), false)),
                *area,
            );
        }
    }

    /// The rubric: each criterion with this reviewer's label and, once revealed, the
    /// others'; the note being typed.
    fn draw_rubric(&self, f: &mut Frame, rubric_area: Rect, item: &Item, me: &str, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        let complete = self.complete(&item.item_id);
        let mut lines = Vec::new();
        for (i, c) in self.rubric.criteria.iter().enumerate() {
            let mine = self
                .label_of(&item.item_id, me, &c.key)
                .and_then(|l| l.label.clone());
            let pending = self
                .pending
                .values()
                .any(|l| l.item_id == item.item_id && l.criterion == c.key);
            let style = |v: &Option<String>| match v.as_deref() {
                Some("pass") => theme.pass,
                Some(_) => theme.fail,
                None => theme.muted,
            };
            let mut spans = vec![
                Span::styled(
                    format!(
                        "{}{} {:<20}",
                        if i == self.criterion { "▶" } else { " " },
                        i + 1,
                        c.name
                    ),
                    if i == self.criterion {
                        theme.selected
                    } else {
                        theme.text
                    },
                ),
                Span::styled(
                    format!(" {:<6}", mine.clone().unwrap_or_else(|| "-".into())),
                    style(&mine),
                ),
                Span::styled(if pending { " saving… " } else { "         " }, theme.muted),
            ];
            if self.revealed && complete {
                for other in self.others(&item.item_id) {
                    let theirs = self
                        .label_of(&item.item_id, &other, &c.key)
                        .and_then(|l| l.label.clone());
                    let disagree = theirs.is_some() && theirs != mine;
                    spans.push(Span::styled(
                        format!(" {other}: {}", theirs.clone().unwrap_or_else(|| "-".into())),
                        if disagree {
                            theme.error
                        } else {
                            style(&theirs)
                        },
                    ));
                }
            } else {
                spans.push(Span::styled(" (others hidden: blind)", theme.muted));
            }
            lines.push(Line::from(spans));
            lines.push(Line::styled(format!("      {}", c.definition), theme.muted));
        }
        let note = match (self.note_input.is_active(), &self.pending_note) {
            (true, _) => format!(" note: {}▏ ", clean(self.note_input.text())),
            (false, Some(n)) => format!(" note ready: {} ", clean(n)),
            _ => String::new(),
        };
        f.render_widget(
            Paragraph::new(lines).block(block(format!(" Rubric {} v{} · 1-4 pick · p/f label · n note · [ ] items · u unlabelled · z undo · r reveal{note}", self.rubric.name, self.rubric.version), true)),
            rubric_area,
        );
    }

    /// Other reviewers (and the judge) with labels on this item.
    fn others(&self, item: &str) -> Vec<String> {
        let me = self.reviewer.as_deref().unwrap_or_default();
        let mut v: Vec<String> = self
            .labels
            .iter()
            .filter(|l| l.item_id == item && l.reviewer != me)
            .map(|l| l.reviewer.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl PaneView for AnnotatePane {
    /// Apply an action; a label to commit is returned as an effect.
    fn update(&mut self, action: Action) -> Option<Effect> {
        if self.reviewer.is_none() {
            match action {
                Action::SubmitInput if !self.reviewer_input.text().trim().is_empty() => {
                    let name = self.reviewer_input.text().trim().to_string();
                    match crate::core::annotation::check_reviewer(&name) {
                        Ok(()) => {
                            self.reviewer = Some(name);
                            self.status = None;
                            self.reviewer_input.submit();
                        }
                        Err(e) => self.status = Some(e),
                    }
                }
                Action::InputBackspace => {
                    self.reviewer_input.backspace();
                }
                _ => {}
            }
            return None;
        }
        if self.note_input.is_active() {
            match action {
                Action::SubmitInput => {
                    let note = self.note_input.text().trim().to_string();
                    self.note_input.cancel();
                    self.pending_note = (!note.is_empty()).then_some(note);
                    self.status = Some("note will be attached to the next label".into());
                }
                Action::CancelInput => {
                    self.note_input.cancel();
                }
                Action::InputBackspace => {
                    self.note_input.backspace();
                }
                _ => {}
            }
            return None;
        }
        match action {
            Action::SelectCriterion1 => self.criterion = 0,
            Action::SelectCriterion2 => {
                self.criterion = 1.min(self.rubric.criteria.len().saturating_sub(1))
            }
            Action::SelectCriterion3 => {
                self.criterion = 2.min(self.rubric.criteria.len().saturating_sub(1))
            }
            Action::SelectCriterion4 => {
                self.criterion = 3.min(self.rubric.criteria.len().saturating_sub(1))
            }
            Action::Down => {
                self.criterion =
                    (self.criterion + 1).min(self.rubric.criteria.len().saturating_sub(1))
            }
            Action::Up => self.criterion = self.criterion.saturating_sub(1),
            Action::LabelPass | Action::LabelFail => {
                let want = if action == Action::LabelPass {
                    "pass"
                } else {
                    "fail"
                };
                return self.label_current(want);
            }
            Action::AddNote => self.note_input.open(),
            Action::NextItem => self.goto(self.pos + 1),
            Action::PrevItem => self.goto(self.pos.saturating_sub(1)),
            Action::FirstUnlabelled => {
                match self.items.iter().position(|i| !self.complete(&i.item_id)) {
                    Some(p) => self.goto(p),
                    None => self.status = Some("every item is labelled".into()),
                }
            }
            Action::UndoLabel => return self.undo(),
            Action::Reveal => {
                let done = self.item().is_some_and(|i| self.complete(&i.item_id));
                if done {
                    self.revealed = !self.revealed;
                } else {
                    self.status = Some("blind: label every criterion of this item first".into());
                }
            }
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let block = |t: String, focus: bool| theme.block(t, focus);
        let Some(me) = &self.reviewer else {
            self.draw_reviewer_prompt(f, area, theme);
            return;
        };
        let Some(item) = self.item() else {
            f.render_widget(
                Paragraph::new("No annotation items: create them with `raglab annotate create --from-run RUN` or `--from-file FILE`.")
                    .style(theme.muted)
                    .block(block(" Annotate ".into(), false)),
                area,
            );
            return;
        };
        let [progress, texts, rubric_area] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(8),
            Constraint::Length(self.rubric.criteria.len() as u16 * 2 + 3),
        ])
        .areas(area);
        self.draw_progress(f, progress, me, theme);
        self.draw_texts(f, texts, item, theme);
        self.draw_rubric(f, rubric_area, item, me, theme);
    }

    /// Whether typed characters go to a text field (reviewer name or note).
    fn editing(&self) -> bool {
        self.reviewer.is_none() || self.note_input.is_active()
    }

    fn input_char(&mut self, c: char) {
        if self.note_input.is_active() {
            self.note_input.push(c);
        } else {
            self.reviewer_input.push(c);
        }
    }
}
