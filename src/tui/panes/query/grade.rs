//! Grading a chunk's relevance from the Query pane (relevance assessment: graded qrels that grow):
//! `a` asks for the grade of the selected chunk for the question on screen, and `0`,
//! `1` or `2` give it (while the grade is asked for, the digits grade: they do not
//! switch panes; `esc` cancels). The grade is stored in the background as the TUI's
//! reviewer, signed with their study key, by the function `raglab assess grade`
//! calls, which also says why a grade is refused (no pool, a shipped target, a name
//! not on the roster with this key).
//!
//! Blind: the pane marks only the grades its own reviewer stored in this session; it
//! never reads or shows another assessor's grade (nor, once the reviewer's name
//! changes, the previous name's).

use std::collections::HashMap;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::core::text::sanitize_for_terminal as clean;
use crate::service::assess::Graded;
use crate::tui::effect::GradeJob;
use crate::tui::theme::Theme;

/// What a grade means (0, 1 or 2; the service refuses any other).
pub fn grade_name(grade: u32) -> &'static str {
    match grade {
        0 => "not relevant",
        1 => "relevant",
        2 => "highly relevant",
        _ => "not a grade",
    }
}

/// What the status line says when grading needs a name.
pub const NO_ASSESSOR: &str = "grading needs your name: start `raglab --reviewer NAME` (or give your name in the Annotate pane, 4)";

/// The pair whose grade is asked for, with what the prompt shows of it.
#[derive(Debug, Clone)]
struct Asked {
    question_id: String,
    question: String,
    chunk_id: String,
    path: String,
}

/// The Query pane's grading: who grades, the grade asked for, and the grades stored
/// in this session.
#[derive(Debug, Clone, Default)]
pub struct Grading {
    /// The TUI's reviewer (`--reviewer`, or the name given in the Annotate pane).
    assessor: Option<String>,
    /// The pair whose grade the keys give, while they are open.
    asking: Option<Asked>,
    /// Grades stored in this session: (assessor, question, chunk) -> the latest.
    stored: HashMap<(String, String, String), u32>,
    /// Grades sent and not answered yet (quitting waits for them).
    in_flight: usize,
}

impl Grading {
    /// Who grades from now on (`None`: nobody named, grading says how to give a
    /// name). Marks show only this assessor's grades.
    pub fn set_assessor(&mut self, assessor: Option<String>) {
        self.assessor = assessor;
    }

    /// Who grades (`None`: nobody named yet).
    pub fn assessor(&self) -> Option<&str> {
        self.assessor.as_deref()
    }

    /// The job that stores this assessor's `grade` of `chunk_id` for `question_id`
    /// without the grade keys (the assessment view shows the pair itself); `None`
    /// while nobody is named. Counted in flight like a grade given by the keys.
    pub fn give_pair(&mut self, question_id: &str, chunk_id: &str, grade: u32) -> Option<GradeJob> {
        let assessor = self.assessor.clone()?;
        self.in_flight += 1;
        Some(GradeJob {
            assessor,
            question_id: question_id.to_string(),
            chunk_id: chunk_id.to_string(),
            grade,
        })
    }

    /// Whether the grade keys are open.
    pub fn is_asking(&self) -> bool {
        self.asking.is_some()
    }

    /// Grades sent and not answered yet.
    pub fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// Open the grade keys for `chunk_id` of `question_id`; refused (what to say)
    /// while nobody is named.
    pub fn ask(
        &mut self,
        question_id: &str,
        question: &str,
        chunk_id: &str,
        path: &str,
    ) -> Result<(), &'static str> {
        if self.assessor.is_none() {
            return Err(NO_ASSESSOR);
        }
        self.asking = Some(Asked {
            question_id: question_id.to_string(),
            question: question.to_string(),
            chunk_id: chunk_id.to_string(),
            path: path.to_string(),
        });
        Ok(())
    }

    /// Close the grade keys without grading.
    pub fn cancel(&mut self) {
        self.asking = None;
    }

    /// The grade was given: the job that stores it (the keys close).
    pub fn give(&mut self, grade: u32) -> Option<GradeJob> {
        let asked = self.asking.take()?;
        let assessor = self.assessor.clone()?;
        self.in_flight += 1;
        Some(GradeJob {
            assessor,
            question_id: asked.question_id,
            chunk_id: asked.chunk_id,
            grade,
        })
    }

    /// The job's answer: a stored grade is marked; returns what the status line says
    /// (the grade stored and the queue left, or why it was refused).
    pub fn on_graded(&mut self, job: GradeJob, result: Result<Graded, String>) -> String {
        self.in_flight = self.in_flight.saturating_sub(1);
        let what = format!("{} {} ({})", job.chunk_id, job.grade, grade_name(job.grade));
        match result {
            Ok(done) => {
                let said = format!(
                    "graded {what} for {} as {} (key {}); {} left in your queue",
                    job.question_id, job.assessor, done.key, done.remaining
                );
                self.stored
                    .insert((job.assessor, job.question_id, job.chunk_id), job.grade);
                said
            }
            Err(e) => format!("NOT graded {what} for {}: {e}", job.question_id),
        }
    }

    /// This assessor's grade of `chunk_id` for `question_id` stored in this session.
    pub fn mark(&self, question_id: &str, chunk_id: &str) -> Option<u32> {
        let me = self.assessor.clone()?;
        self.stored
            .get(&(me, question_id.to_string(), chunk_id.to_string()))
            .copied()
    }

    /// The grade keys over the pane: the pair, the three grades, who signs.
    pub fn draw_prompt(&self, f: &mut Frame, theme: &Theme) {
        let (Some(a), Some(who)) = (&self.asking, &self.assessor) else {
            return;
        };
        let lines = vec![
            Line::styled(
                format!("question {}: {}", clean(&a.question_id), clean(&a.question)),
                theme.text,
            ),
            Line::styled(
                format!("chunk {}  {}", clean(&a.chunk_id), clean(&a.path)),
                theme.header_path,
            ),
            Line::raw(""),
            Line::styled(
                "0 not relevant · 1 relevant · 2 highly relevant · esc cancel",
                theme.filter,
            ),
            Line::styled(
                format!(
                    "as {}, signed with your study key (as `raglab assess grade`)",
                    clean(who)
                ),
                theme.muted,
            ),
        ];
        let outer = f.area();
        let width = outer.width.min(90);
        let height = outer.height.min(9);
        let area = Rect {
            x: outer.x + (outer.width - width) / 2,
            y: outer.y + (outer.height - height) / 2,
            width,
            height,
        };
        f.render_widget(Clear, area);
        f.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(theme.block(" Grade the chunk's relevance to the question ", true)),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    use super::*;
    use crate::core::chunk::Chunk;
    use crate::core::compare::WholePlaces;
    use crate::core::fusion::Scored;
    use crate::core::retrieval::{Method, QueryLists};
    use crate::service::retrieval::QueryTimings;
    use crate::tui::app::{App, Pane};
    use crate::tui::effect::Effect;
    use crate::tui::keymap::Keymap;
    use crate::tui::panes::query::{QuerySettings, Question};

    const TARGET: &str = "rabies/rabies#prevention";
    const OTHER: &str = "rabies/rabies#symptoms";

    fn chunk(id: &str) -> Chunk {
        let text = format!("The text of {id}.");
        Chunk {
            id: id.into(),
            doc_id: id.split('#').next().unwrap_or_default().into(),
            title: "Rabies".into(),
            topic: None,
            header_path: vec!["Rabies".into()],
            word_count: 4,
            byte_start: 0,
            byte_end: text.len(),
            text,
            ordinal: 0,
            token_count: None,
            token_model: None,
        }
    }

    fn screen(app: &App) -> String {
        let mut term = Terminal::new(TestBackend::new(200, 30)).expect("terminal");
        let theme = Theme::builtin("dark").expect("theme");
        let frame = term
            .draw(|f| crate::tui::ui::draw(app, f, &theme))
            .expect("draw");
        crate::tui::ui::buffer_text(frame.buffer)
    }

    fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
        app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
    }

    fn press(app: &mut App, c: char) -> Option<Effect> {
        key(app, KeyCode::Char(c))
    }

    /// The app on the Query pane, grading as `assessor`, with one question run and
    /// ranked by BM25 (its target first, then two other chunks), the results focused.
    fn ranked(assessor: Option<&str>) -> App {
        let ids = [TARGET, OTHER, "h1n1flu/2009-h1n1-flu#prevention"];
        let mut app = App::new(
            ids.iter().map(|id| chunk(id)).collect(),
            Keymap::default_keymap(),
            "ws".into(),
        );
        app.query.configure(QuerySettings {
            questions: vec![Question {
                id: "q1".into(),
                text: "How to prevent rabies?".into(),
                relevant: vec![TARGET.into()],
                ..Question::default()
            }],
            failures: Vec::new(),
            method: Method::Bm25,
            alpha: None,
            k: 15,
            rerank_cut: None,
        });
        app.query.set_assessor(assessor.map(str::to_string));
        press(&mut app, '2');
        assert_eq!(app.pane, Pane::Query);
        let Some(Effect::Search { ticket, .. }) = key(&mut app, KeyCode::Enter) else {
            panic!("enter runs the question");
        };
        let list: Vec<Scored> = ids
            .iter()
            .zip([3.0, 2.0, 1.0])
            .map(|(id, score)| Scored {
                id: (*id).into(),
                score,
            })
            .collect();
        let lists = QueryLists::new(list.clone(), list, Vec::new());
        app.query.on_result(
            ticket,
            Ok((lists, WholePlaces::default(), QueryTimings::default())),
        );
        press(&mut app, 'l');
        app
    }

    /// `a` on the second chunk opens the grade keys (the pair and who signs shown);
    /// `2` there grades (it does not switch panes) with the job for exactly that pair;
    /// the answer marks the chunk and says the grade and the queue left. Once closed,
    /// digits switch panes again; `esc` cancels; another name does not see the mark.
    #[test]
    fn a_then_a_digit_grades_the_selected_chunk_and_the_screen_says_so() {
        let mut app = ranked(Some("alice"));
        press(&mut app, 'j');
        assert!(press(&mut app, 'a').is_none());
        let s = screen(&app);
        assert!(s.contains("Grade the chunk's relevance"), "{s}");
        assert!(s.contains(&format!("chunk {OTHER}")), "{s}");
        assert!(s.contains("question q1: How to prevent rabies?"), "{s}");
        assert!(
            s.contains("0 not relevant · 1 relevant · 2 highly relevant"),
            "{s}"
        );
        assert!(s.contains("as alice, signed with your study key"), "{s}");

        let Some(Effect::Grade(job)) = press(&mut app, '2') else {
            panic!("2 grades while the grade keys are open");
        };
        assert_eq!(app.pane, Pane::Query, "2 graded, it did not switch panes");
        let want = GradeJob {
            assessor: "alice".into(),
            question_id: "q1".into(),
            chunk_id: OTHER.into(),
            grade: 2,
        };
        assert_eq!(job, want);
        assert_eq!(app.query.grading().in_flight(), 1);
        let s = screen(&app);
        assert!(!s.contains("Grade the chunk's relevance"), "closed: {s}");
        assert!(
            s.contains(&format!("grading {OTHER} 2 (highly relevant)…")),
            "{s}"
        );
        assert!(
            !s.contains(&format!("[2] {OTHER}")),
            "not marked before it is stored: {s}"
        );

        let stored = Graded {
            key: "ab12cd34".into(),
            remaining: 3,
        };
        app.query.on_graded(job, Ok(stored));
        assert_eq!(app.query.grading().in_flight(), 0);
        let s = screen(&app);
        assert!(
            s.contains(&format!(
                "graded {OTHER} 2 (highly relevant) for q1 as alice (key ab12cd34); 3 left in your queue"
            )),
            "{s}"
        );
        assert!(s.contains(&format!("[2] {OTHER}")), "{s}");
        assert!(!s.contains(&format!("[2] {TARGET}")), "{s}");

        // The keys are closed: a digit switches panes again.
        press(&mut app, '1');
        assert_eq!(app.pane, Pane::Corpus);
        press(&mut app, '2');
        // esc cancels: nothing is sent, the digit after it switches panes.
        assert!(press(&mut app, 'a').is_none());
        assert!(key(&mut app, KeyCode::Esc).is_none());
        assert!(!screen(&app).contains("Grade the chunk's relevance"));
        assert!(press(&mut app, '1').is_none());
        assert_eq!(app.pane, Pane::Corpus);
        press(&mut app, '2');

        // Blind: under another name, alice's grade is not shown.
        app.query.set_assessor(Some("bob".into()));
        assert!(!screen(&app).contains("[2] "), "{}", screen(&app));
        app.query.set_assessor(Some("alice".into()));
        assert!(screen(&app).contains(&format!("[2] {OTHER}")));
    }

    /// Refusals are said, never silent: the service's errors delivered through the
    /// pane's handler (no pool, a shipped target) leave no mark; without a name the
    /// keys do not open and the pane says how to give one; before a ranking, what to
    /// do first.
    #[test]
    fn refusals_are_said_with_what_to_do() {
        let mut app = ranked(Some("alice"));
        press(&mut app, 'a');
        let Some(Effect::Grade(job)) = press(&mut app, '1') else {
            panic!("1 grades");
        };
        assert_eq!(job.chunk_id, TARGET);
        app.query.on_graded(
            job.clone(),
            Err("no pool in this workspace yet: make one with `raglab assess pool`".into()),
        );
        let s = screen(&app);
        assert!(
            s.contains(&format!(
                "NOT graded {TARGET} 1 (relevant) for q1: no pool in this workspace yet: make one with `raglab assess pool`"
            )),
            "{s}"
        );
        app.query.on_graded(
            job,
            Err(format!("chunk `{TARGET}` is a shipped target of question `q1`: targets stay in the qrels at grade 1 and are not graded")),
        );
        let s = screen(&app);
        assert!(s.contains("is a shipped target of question `q1`"), "{s}");
        assert!(!s.contains("[1] "), "a refused grade is not marked: {s}");

        let mut nobody = ranked(None);
        assert!(press(&mut nobody, 'a').is_none());
        let s = screen(&nobody);
        assert!(!s.contains("Grade the chunk's relevance"), "{s}");
        assert!(s.contains("start `raglab --reviewer NAME`"), "{s}");
        assert!(press(&mut nobody, '2').is_none(), "no grade without a name");

        let mut fresh = App::new(vec![chunk(TARGET)], Keymap::default_keymap(), "ws".into());
        fresh.query.set_assessor(Some("alice".into()));
        press(&mut fresh, '2');
        assert!(press(&mut fresh, 'a').is_none());
        assert!(
            screen(&fresh).contains("run a question first"),
            "{}",
            screen(&fresh)
        );
    }

    /// The help lists the grading key and the grade keys.
    #[test]
    fn the_help_lists_the_grade_keys() {
        let mut app = ranked(Some("alice"));
        press(&mut app, '?');
        let mut term = Terminal::new(TestBackend::new(200, 160)).expect("terminal");
        let theme = Theme::builtin("dark").expect("theme");
        let frame = term
            .draw(|f| crate::tui::ui::draw(&app, f, &theme))
            .expect("draw");
        let s = crate::tui::ui::buffer_text(frame.buffer);
        assert!(s.contains("Grade the selected chunk's relevance"), "{s}");
        assert!(s.contains("Grading the selected chunk"), "{s}");
        assert!(s.contains("Grade 2: highly relevant"), "{s}");
    }
}
