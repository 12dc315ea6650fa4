//! The relevance-assessment view of the Query pane (`G`; issue 48): an assessor works
//! through their own queue (`raglab assess next`'s, as `--reviewer`) one pair at a
//! time, the question on the left and the chunk on the right with the question's terms
//! highlighted. `0`/`1`/`2` grade the pair, `s` skips it (it stays queued), `j`/`k`
//! scroll the chunk, `esc` closes.
//!
//! Blind: the view holds only what [`QueueHead`] gives, which carries no run, rank,
//! target or other assessor's grade, so it cannot show them (a shipped target is never
//! queued). Grades go through the pane's [`Grading`], the path of the `a` key: the same
//! service function as `raglab assess grade`, the same marks, the same wait at quit,
//! the same words for what was stored or refused; once answered, the view asks for the
//! next pair. Every text from the workspace is sanitised once, when it arrives.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::grade::{Grading, NO_ASSESSOR, grade_name};
use crate::core::text::{mark_terms, query_terms, sanitize_for_terminal as clean};
use crate::service::assess::{NextPair, QueueHead};
use crate::tui::action::Action;
use crate::tui::effect::{Effect, GradeJob};
use crate::tui::theme::Theme;

/// A pair as the view shows it: the ids its grade is stored under, as given, and
/// everything drawn, sanitised.
#[derive(Debug, Clone)]
struct Shown {
    question_id: String,
    chunk_id: String,
    question_label: String,
    question: String,
    chunk_label: String,
    path: String,
    text: String,
    /// The question's terms, highlighted in the chunk.
    terms: Vec<String>,
    /// Pairs left in the queue, this one included.
    remaining: usize,
}

impl Shown {
    fn of(p: NextPair) -> Self {
        let mut path = vec![p.title];
        path.extend(p.header_path);
        path.retain(|s| !s.is_empty());
        let question = clean(&p.question);
        Self {
            terms: query_terms(&question),
            question_label: clean(&p.question_id),
            chunk_label: clean(&p.chunk_id),
            path: clean(&path.join(" > ")),
            text: clean(&p.text),
            question,
            question_id: p.question_id,
            chunk_id: p.chunk_id,
            remaining: p.remaining,
        }
    }
}

/// What the view's body shows.
#[derive(Debug, Clone, Default)]
enum Body {
    /// Nobody named: how to give a name.
    #[default]
    NoName,
    /// The queue is being read.
    Loading,
    /// The queue could not be read (no pool yet: what to run).
    Failed(String),
    /// Nothing left to grade.
    Empty,
    /// The pair to grade.
    Pair(Box<Shown>),
}

/// The assessment view: open or not, as whom, the pair shown, the pairs skipped in
/// this opening, and what was said last.
#[derive(Debug, Clone, Default)]
pub struct AssessView {
    open: bool,
    /// The name the queue is read for (the pane's assessor when it opened).
    assessor: Option<String>,
    body: Body,
    scroll: u16,
    /// Pairs skipped (`s`) since the view opened: passed over until every pair left
    /// was skipped.
    skipped: Vec<(String, String)>,
    /// The newest queue read; an older answer is dropped.
    ticket: u64,
    /// The pair whose grade is being stored (the keys wait for its answer).
    storing: Option<(String, String)>,
    /// What was stored or skipped, or why not.
    said: Option<String>,
    /// The assessor's pool pairs graded, as the last read counted them.
    graded: usize,
}

impl AssessView {
    /// Whether the view is open (it takes the keys).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// Whether it waits for a job: the queue being read or a grade being stored.
    pub fn is_waiting(&self) -> bool {
        self.open && (matches!(self.body, Body::Loading) || self.storing.is_some())
    }

    /// The pair shown (question id, chunk id), if any.
    pub fn pair(&self) -> Option<(&str, &str)> {
        match &self.body {
            Body::Pair(s) => Some((&s.question_id, &s.chunk_id)),
            _ => None,
        }
    }

    /// Open the view for `assessor`'s queue: the read of its head, or (nobody named)
    /// nothing, the view saying how to give a name.
    pub fn open(&mut self, assessor: Option<&str>) -> Option<Effect> {
        *self = Self {
            open: true,
            assessor: assessor.map(str::to_string),
            ticket: self.ticket,
            ..Self::default()
        };
        // Nobody named: no read (the body says how to give a name).
        self.request()
    }

    /// The name grading changed: a view open under another name closes (its pair
    /// was read from the other name's queue).
    pub fn on_assessor(&mut self, assessor: Option<&str>) {
        if self.open && self.assessor.as_deref() != assessor {
            self.open = false;
        }
    }

    /// Ask for the head of the queue, the skipped pairs passed over.
    fn request(&mut self) -> Option<Effect> {
        let assessor = self.assessor.clone()?;
        self.ticket += 1;
        self.body = Body::Loading;
        self.scroll = 0;
        Some(Effect::AssessQueue {
            ticket: self.ticket,
            assessor,
            skipped: self.skipped.clone(),
        })
    }

    /// The queue's head arrived (a superseded read is dropped). A skipped pair back
    /// at the head means every pair left was skipped: the round starts again.
    pub fn on_queue(&mut self, ticket: u64, result: Result<QueueHead, String>) {
        if ticket != self.ticket || !self.open {
            return;
        }
        self.body = match result {
            Err(e) => Body::Failed(e),
            Ok(head) => {
                self.graded = head.graded;
                match head.next {
                    None => Body::Empty,
                    Some(p) => {
                        let pair = (p.question_id.clone(), p.chunk_id.clone());
                        if self.skipped.contains(&pair) {
                            self.skipped.clear();
                            let back = "every pair left in your queue was skipped: back to the first of them";
                            self.said = Some(match self.said.take() {
                                Some(said) => format!("{said}; {back}"),
                                None => back.to_string(),
                            });
                        }
                        Body::Pair(Box::new(Shown::of(p)))
                    }
                }
            }
        };
    }

    /// A grade job answered (`said`: what the pane says of it): when it is the pair
    /// shown here, the view says it and asks for the next pair (a refused pair stays
    /// queued and comes back).
    pub fn on_graded(&mut self, job: &GradeJob, said: &str) -> Option<Effect> {
        let pair = (job.question_id.clone(), job.chunk_id.clone());
        if !self.open || self.storing.as_ref() != Some(&pair) {
            return None;
        }
        self.storing = None;
        self.said = Some(said.to_string());
        self.request()
    }

    /// A key of the view; a grade goes through `grading` (the job is returned).
    pub fn update(&mut self, action: Action, grading: &mut Grading) -> Option<Effect> {
        let grade = match action {
            Action::CloseOverlay | Action::OpenAssessment => {
                self.open = false;
                return None;
            }
            Action::ScrollDown => {
                self.scroll = self.scroll.saturating_add(1);
                return None;
            }
            Action::ScrollUp => {
                self.scroll = self.scroll.saturating_sub(1);
                return None;
            }
            Action::Grade0 => Some(0),
            Action::Grade1 => Some(1),
            Action::Grade2 => Some(2),
            Action::SkipPair => None,
            _ => return None,
        };
        let Body::Pair(shown) = &self.body else {
            return None;
        };
        if self.storing.is_some() {
            self.said = Some("wait: the last grade is still being stored".into());
            return None;
        }
        let pair = (shown.question_id.clone(), shown.chunk_id.clone());
        let Some(grade) = grade else {
            self.said = Some(format!(
                "skipped {} for {}: it stays in your queue",
                shown.chunk_label, shown.question_label
            ));
            if !self.skipped.contains(&pair) {
                self.skipped.push(pair);
            }
            return self.request();
        };
        let job = grading.give_pair(&pair.0, &pair.1, grade)?;
        self.said = Some(format!(
            "storing {} {grade} ({})…",
            shown.chunk_label,
            grade_name(grade)
        ));
        self.storing = Some(pair);
        Some(Effect::Grade(job))
    }

    /// The view over the whole screen: progress on top, question | chunk, then what
    /// was said and the keys.
    pub fn draw(&self, f: &mut Frame, theme: &Theme) {
        if !self.open {
            return;
        }
        let area = f.area();
        f.render_widget(Clear, area);
        let who = self
            .assessor
            .as_deref()
            .map_or_else(|| "nobody named".to_string(), clean);
        let block = theme.block(format!(" Relevance assessment as {who} (blind) "), true);
        let inner = block.inner(area);
        f.render_widget(block, area);
        let [top, body, said, keys] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(2),
            Constraint::Length(1),
        ])
        .areas(inner);
        f.render_widget(
            Paragraph::new(Line::styled(self.progress(), theme.title)),
            top,
        );
        match &self.body {
            Body::Pair(shown) => self.draw_pair(f, body, shown, theme),
            other => {
                let lines = Self::message(other);
                f.render_widget(
                    Paragraph::new(
                        lines
                            .into_iter()
                            .map(|l| Line::styled(l, theme.text))
                            .collect::<Vec<_>>(),
                    )
                    .wrap(Wrap { trim: false }),
                    body,
                );
            }
        }
        if let Some(s) = &self.said {
            let style = if s.starts_with("NOT ") {
                theme.error
            } else {
                theme.text
            };
            f.render_widget(
                Paragraph::new(Line::styled(s.clone(), style)).wrap(Wrap { trim: false }),
                said,
            );
        }
        f.render_widget(
            Paragraph::new(Line::styled(
                "0 not relevant · 1 relevant · 2 highly relevant · s skip (stays queued) · j/k scroll · esc close",
                theme.muted,
            )),
            keys,
        );
    }

    /// The progress line: graded / left in the queue.
    fn progress(&self) -> String {
        match &self.body {
            Body::Pair(s) => format!(
                "{} graded · {} left in your queue (this pair included)",
                self.graded, s.remaining
            ),
            Body::Empty => format!("{} graded · 0 left in your queue", self.graded),
            Body::Loading => "reading your queue…".into(),
            Body::NoName | Body::Failed(_) => String::new(),
        }
    }

    /// What the body says when there is no pair to show.
    fn message(body: &Body) -> Vec<String> {
        match body {
            Body::NoName => vec![
                NO_ASSESSOR.to_string(),
                "Assessment works through your own queue: every grade is stored under your name, signed with your study key.".into(),
            ],
            Body::Loading => vec!["reading your queue…".into()],
            Body::Failed(e) => vec![format!("your queue could not be read: {}", clean(e))],
            Body::Empty => vec![
                "Nothing left in your queue: every pair of the pool is graded.".into(),
                "See each assessor's progress and agreement with `raglab assess progress`.".into(),
            ],
            Body::Pair(_) => Vec::new(),
        }
    }

    /// The question on the left, the chunk on the right with the question's terms
    /// highlighted (scrolled by `j`/`k`).
    fn draw_pair(&self, f: &mut Frame, area: ratatui::layout::Rect, s: &Shown, theme: &Theme) {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(area);
        let question = vec![
            Line::styled(format!("question {}", s.question_label), theme.muted),
            Line::raw(""),
            Line::styled(s.question.clone(), theme.text),
        ];
        f.render_widget(
            Paragraph::new(question)
                .wrap(Wrap { trim: false })
                .block(theme.block(" Question ", false)),
            left,
        );
        let mut chunk = vec![
            Line::styled(format!("chunk {}", s.chunk_label), theme.muted),
            Line::styled(s.path.clone(), theme.header_path),
            Line::raw(""),
        ];
        for l in s.text.lines() {
            chunk.push(Line::from(
                mark_terms(l, &s.terms)
                    .into_iter()
                    .map(|(piece, hit)| {
                        Span::styled(
                            piece.to_string(),
                            if hit { theme.filter } else { theme.text },
                        )
                    })
                    .collect::<Vec<_>>(),
            ));
        }
        f.render_widget(
            Paragraph::new(chunk)
                .wrap(Wrap { trim: false })
                .scroll((self.scroll, 0))
                .block(theme.block(" Chunk (question's terms highlighted; j/k scroll) ", true)),
            right,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(q: &str, c: &str, remaining: usize) -> QueueHead {
        QueueHead {
            next: Some(NextPair {
                question_id: q.into(),
                question: "How is rabies \u{1b}[31mspread?".into(),
                chunk_id: c.into(),
                title: "Rabies".into(),
                header_path: vec!["Transmission".into()],
                text: "Rabies is spread by bites.".into(),
                remaining,
            }),
            graded: 0,
        }
    }

    fn ticket(e: Option<Effect>) -> (u64, Vec<(String, String)>) {
        match e {
            Some(Effect::AssessQueue {
                ticket, skipped, ..
            }) => (ticket, skipped),
            other => panic!("a queue read, not {other:?}"),
        }
    }

    /// A superseded read is dropped; `s` passes a pair over until every pair left was
    /// skipped, then the round starts again and the view says so. Text is sanitised.
    #[test]
    fn skipping_passes_over_until_every_pair_left_was_skipped() {
        let mut view = AssessView::default();
        let mut grading = Grading::default();
        grading.set_assessor(Some("alice".into()));
        let (t1, skipped) = ticket(view.open(Some("alice")));
        assert!(skipped.is_empty() && view.is_waiting());
        view.on_queue(t1 + 7, Ok(pair("q9", "c9", 1)));
        assert!(view.pair().is_none(), "a stale read is dropped");
        view.on_queue(t1, Ok(pair("q1", "c1", 2)));
        assert_eq!(view.pair(), Some(("q1", "c1")));
        let Body::Pair(shown) = &view.body else {
            panic!("a pair")
        };
        assert_eq!(shown.question, "How is rabies spread?");
        assert_eq!(shown.path, "Rabies > Transmission");

        let (t2, skipped) = ticket(view.update(Action::SkipPair, &mut grading));
        assert_eq!(skipped, [("q1".to_string(), "c1".to_string())]);
        view.on_queue(t2, Ok(pair("q1", "c2", 2)));
        let (t3, skipped) = ticket(view.update(Action::SkipPair, &mut grading));
        assert_eq!(skipped.len(), 2);
        // Both skipped: the service gives the queue's first again.
        view.on_queue(t3, Ok(pair("q1", "c1", 2)));
        assert!(view.skipped.is_empty());
        assert!(
            view.said
                .as_deref()
                .is_some_and(|s| s.contains("every pair left in your queue was skipped")),
            "{:?}",
            view.said
        );
        assert_eq!(grading.in_flight(), 0, "skipping grades nothing");
    }

    /// A digit gives the grade job for the pair shown (once: a second digit waits);
    /// its answer moves the view on, another job's answer does not; without a name
    /// nothing is read or graded.
    #[test]
    fn a_digit_grades_the_pair_shown_and_its_answer_moves_on() {
        let mut view = AssessView::default();
        let mut grading = Grading::default();
        grading.set_assessor(Some("alice".into()));
        let (t, _) = ticket(view.open(Some("alice")));
        view.on_queue(t, Ok(pair("q1", "c1", 3)));
        let Some(Effect::Grade(job)) = view.update(Action::Grade2, &mut grading) else {
            panic!("2 grades")
        };
        let want = GradeJob {
            assessor: "alice".into(),
            question_id: "q1".into(),
            chunk_id: "c1".into(),
            grade: 2,
        };
        assert_eq!(job, want);
        assert!(view.update(Action::Grade0, &mut grading).is_none());
        assert_eq!(grading.in_flight(), 1);
        let other = GradeJob {
            chunk_id: "c8".into(),
            ..job.clone()
        };
        assert!(view.on_graded(&other, "graded c8").is_none());
        ticket(view.on_graded(&job, "graded c1 2 (highly relevant)"));
        assert_eq!(view.said.as_deref(), Some("graded c1 2 (highly relevant)"));

        let mut nobody = AssessView::default();
        assert!(nobody.open(None).is_none());
        assert!(nobody.is_open() && !nobody.is_waiting());
        assert!(
            nobody
                .update(Action::Grade1, &mut Grading::default())
                .is_none()
        );
        nobody.update(Action::CloseOverlay, &mut Grading::default());
        assert!(!nobody.is_open());
    }
}
