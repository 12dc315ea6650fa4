//! The Generate pane's Compare view of two answer runs (`c`): pick run A, then run B,
//! from the runs of the stored answers; then per criterion the pass rates of both
//! runs over the questions both answered and the judge labelled, McNemar's exact p
//! (and Holm-adjusted over the criteria) and B's wins / ties / losses against A; and
//! per question (`j` / `k`) the two answers side by side, where the target sat in each
//! prompt, each judge label, the criteria whose labels differ marked `≠`.
//!
//! Every number is the one `raglab report answers --compare A B --json` prints: the
//! view draws the [`AnswerRunsComparison`] of the same service function, for the same
//! viewer (judge labels of study items not revealed to the viewer do not count).
//! Questions, answers, run and model names are untrusted and drawn through the
//! terminal sanitiser.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::core::text::{sanitize_for_terminal as clean, snippet};
use crate::service::evaluate::{
    AnswerRunsComparison, CriterionComparison, PairedAnswer, QuestionComparison,
};
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::panes::evaluation::compare::p_text;
use crate::tui::theme::Theme;

/// The Compare view's state: closed, picking the two runs, waiting, or showing.
#[derive(Debug, Default)]
pub struct RunsCompare {
    pub open: bool,
    /// The stored answer runs and their answer counts, by name.
    pub runs: Vec<(String, usize)>,
    /// The selected run of the picker.
    pub sel: usize,
    /// Run A, once picked.
    pub first: Option<String>,
    /// The newest comparison asked for; an older one's result is dropped.
    pub ticket: u64,
    pub loading: bool,
    pub shown: Option<Box<AnswerRunsComparison>>,
    /// Why the comparison failed (the picker stays open).
    pub error: Option<String>,
    /// The question shown, an index into the comparison's questions.
    pub question: usize,
    /// Lines the two answers are scrolled by.
    pub scroll: u16,
}

/// A pass rate as the view writes it: passes / questions and the rate in percent.
pub fn rate_text(passes: usize, questions: usize, rate: f64) -> String {
    format!("{passes}/{questions} {:.1}%", rate * 100.0)
}

impl RunsCompare {
    /// Open the picker over `runs` (name, answers), sorted by name.
    pub fn open_picker(&mut self, runs: Vec<(String, usize)>) {
        *self = Self {
            open: true,
            runs,
            ticket: self.ticket,
            ..Self::default()
        };
    }

    /// The keymap section of what is open.
    pub fn section(&self) -> &'static str {
        if self.shown.is_some() {
            "runs_compare"
        } else {
            "runs_pick"
        }
    }

    /// Keys while the view is open.
    pub fn update(&mut self, action: Action) -> Option<Effect> {
        if self.shown.is_some() {
            return self.update_shown(action);
        }
        match action {
            Action::Down if !self.runs.is_empty() => {
                self.sel = (self.sel + 1).min(self.runs.len() - 1);
            }
            Action::Up => self.sel = self.sel.saturating_sub(1),
            Action::RunSelected if !self.loading => return self.pick(),
            Action::CloseOverlay | Action::CompareRuns => self.open = false,
            _ => {}
        }
        None
    }

    /// Enter on the picker: the selected run becomes A, or (A picked) B, which asks
    /// for the comparison.
    fn pick(&mut self) -> Option<Effect> {
        let run = self.runs.get(self.sel)?.0.clone();
        match self.first.clone() {
            None => {
                self.first = Some(run);
                self.error = None;
                None
            }
            Some(a) if a == run => {
                self.error = Some("run B must differ from run A".into());
                None
            }
            Some(a) => {
                self.ticket += 1;
                self.loading = true;
                self.error = None;
                Some(Effect::CompareAnswerRuns {
                    ticket: self.ticket,
                    a,
                    b: run,
                })
            }
        }
    }

    fn update_shown(&mut self, action: Action) -> Option<Effect> {
        let n = self.shown.as_ref().map_or(0, |c| c.questions.len());
        match action {
            Action::Down if n > 0 => {
                self.question = (self.question + 1).min(n - 1);
                self.scroll = 0;
            }
            Action::Up => {
                self.question = self.question.saturating_sub(1);
                self.scroll = 0;
            }
            Action::ScrollDown => self.scroll = self.scroll.saturating_add(1),
            Action::ScrollUp => self.scroll = self.scroll.saturating_sub(1),
            Action::CloseOverlay | Action::CompareRuns => self.open = false,
            _ => {}
        }
        None
    }

    /// The comparison asked for with `ticket` arrived (or failed).
    pub fn on_compared(&mut self, ticket: u64, result: Result<AnswerRunsComparison, String>) {
        if ticket != self.ticket {
            return;
        }
        self.loading = false;
        match result {
            Ok(c) => {
                self.shown = Some(Box::new(c));
                self.question = 0;
                self.scroll = 0;
            }
            Err(e) => {
                self.first = None;
                self.error = Some(e);
            }
        }
    }

    pub fn draw(&self, f: &mut Frame, theme: &Theme) {
        let area = crate::tui::layout::centered(f.area(), 96, 90);
        f.render_widget(Clear, area);
        match &self.shown {
            Some(c) => draw_comparison(f, area, c, self.question, self.scroll, theme),
            None => self.draw_picker(f, area, theme),
        }
    }

    fn draw_picker(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let mut lines = Vec::new();
        if self.runs.len() < 2 {
            lines.push(Line::styled(
                "two answer runs are needed: `raglab generate --questions FILE --run NAME`, then `raglab judge`",
                theme.muted,
            ));
        }
        for (i, (run, n)) in self.runs.iter().enumerate() {
            let mark = if self.first.as_deref() == Some(run) {
                "A"
            } else {
                " "
            };
            let style = if i == self.sel {
                theme.selected
            } else {
                theme.text
            };
            lines.push(Line::styled(
                format!("{mark} {:<40} {n} answers", clean(run)),
                style,
            ));
        }
        let status = if self.loading {
            Some("comparing…".to_string())
        } else {
            self.error.as_deref().map(clean)
        };
        if let Some(s) = status {
            lines.push(Line::raw(""));
            lines.push(Line::styled(s, theme.filter));
        }
        let step = if self.first.is_some() { "B" } else { "A" };
        let title = format!(" Compare answer runs · enter picks run {step} · esc closes ");
        f.render_widget(Paragraph::new(lines).block(theme.block(title, true)), area);
    }
}

/// One criterion's row: n, both pass rates, the 2x2 counts, B's record, p and Holm p.
fn criterion_line(c: &CriterionComparison) -> String {
    let m = &c.mcnemar;
    format!(
        "{:<22} {:>4} {:>13} {:>13} {:>15} {:>9} {:>8} {:>8}",
        clean(&snippet(&c.criterion, 22)),
        c.questions,
        rate_text(m.both_pass + m.only_a, c.questions, c.pass_rate_a),
        rate_text(m.both_pass + m.only_b, c.questions, c.pass_rate_b),
        format!("{}/{}/{}/{}", m.both_pass, m.only_a, m.only_b, m.both_fail),
        format!("{}/{}/{}", c.wins, c.ties, c.losses),
        p_text(m.p),
        p_text(c.p_holm),
    )
}

/// One grounded metric's row: n, both means, the difference, B's record, p, Holm p
/// and the questions left out as undefined.
fn grounded_line(g: &crate::core::grounded::GroundedComparison) -> String {
    let name = g.metric.replace('_', " ");
    match &g.test {
        Some(t) => format!(
            "{:<22} {:>4} {:>7.3} {:>7.3} {:>+8.3} {:>9} {:>8} {:>8} {:>6}",
            name,
            t.queries,
            t.baseline_mean,
            t.candidate_mean,
            t.difference,
            format!("{}/{}/{}", t.record.wins, t.record.ties, t.record.losses),
            p_text(t.randomisation_p),
            p_text(t.randomisation_p_holm),
            g.undefined
        ),
        None => format!(
            "{name:<22} {:>4} undefined in one run or both for every question ({} left out)",
            0, g.undefined
        ),
    }
}

fn draw_comparison(
    f: &mut Frame,
    area: Rect,
    c: &AnswerRunsComparison,
    question: usize,
    scroll: u16,
    theme: &Theme,
) {
    let title = format!(
        " Compare · A = {} · B = {} · j/k question · J/K scroll · esc closes ",
        clean(&c.run_a),
        clean(&c.run_b)
    );
    let block = theme.block(title, true);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = criteria_lines(c, theme);
    lines.extend(grounded_lines(c, theme));
    let table_height = u16::try_from(lines.len())
        .unwrap_or(u16::MAX)
        .saturating_add(1);
    let [table, head, sides] = Layout::vertical([
        Constraint::Length(table_height),
        Constraint::Length(3),
        Constraint::Min(4),
    ])
    .areas(inner);
    f.render_widget(Paragraph::new(lines), table);

    let Some(q) = c.questions.get(question) else {
        f.render_widget(
            Paragraph::new("neither run answered any question").style(theme.muted),
            head,
        );
        return;
    };
    draw_question(f, head, c, q, question, theme);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(sides);
    let sides_of = [
        (left, "A", &c.run_a, q.a.as_ref()),
        (right, "B", &c.run_b, q.b.as_ref()),
    ];
    for (r, name, run, a) in sides_of {
        f.render_widget(
            Paragraph::new(answer_lines(a, &q.differ, theme))
                .wrap(Wrap { trim: false })
                .scroll((scroll, 0))
                .block(theme.block(format!(" {name} · {} ", clean(run)), false)),
            r,
        );
    }
}

/// The judge criteria's table: its heading, one line per criterion (a significant
/// win of B in the pass style, a significant loss in the fail style), or why there
/// is none.
fn criteria_lines<'a>(c: &AnswerRunsComparison, theme: &Theme) -> Vec<Line<'a>> {
    let judges = if c.judge_models.is_empty() {
        "no judge labels".to_string()
    } else {
        format!("judge {}", clean(&c.judge_models.join(", ")))
    };
    let mut lines = vec![
        Line::styled(
            format!(
                "McNemar's exact test on paired pass/fail, Holm over the {} criteria · {judges}",
                c.criteria.len()
            ),
            theme.muted,
        ),
        Line::styled(
            format!(
                "{:<22} {:>4} {:>13} {:>13} {:>15} {:>9} {:>8} {:>8}",
                "criterion", "n", "A pass", "B pass", "both/A/B/none", "B W/T/L", "p", "p Holm"
            ),
            theme.muted,
        ),
    ];
    if c.criteria.is_empty() {
        lines.push(Line::styled(
            "no question has judge labels in both runs (`raglab judge`)",
            theme.muted,
        ));
    }
    for k in &c.criteria {
        let style = match (k.p_holm < 0.05, k.wins > k.losses) {
            (true, true) => theme.pass,
            (true, false) => theme.fail,
            _ => theme.text,
        };
        lines.push(Line::styled(criterion_line(k), style));
    }
    lines
}

/// The grounded metrics' table (none when neither run was grounded).
fn grounded_lines<'a>(c: &AnswerRunsComparison, theme: &Theme) -> Vec<Line<'a>> {
    if c.grounded.is_empty() {
        return Vec::new();
    }
    let mut lines = vec![
        Line::styled(
            "grounded (answers ground): B - A over questions both have defined, paired randomisation p, Holm over every judge and metric",
            theme.muted,
        ),
        Line::styled(
            format!(
                "{:<22} {:>4} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8} {:>6}",
                "metric", "n", "A", "B", "B - A", "B W/T/L", "p", "p Holm", "undef"
            ),
            theme.muted,
        ),
    ];
    lines.extend(
        c.grounded
            .iter()
            .map(|g| Line::styled(grounded_line(g), theme.text)),
    );
    lines
}

/// The selected question: its place, id and whether the runs' labels differ, then
/// its text.
fn draw_question(
    f: &mut Frame,
    area: Rect,
    c: &AnswerRunsComparison,
    q: &QuestionComparison,
    question: usize,
    theme: &Theme,
) {
    let differ = if q.differ.is_empty() {
        "labels agree".to_string()
    } else {
        format!("≠ labels differ: {}", clean(&q.differ.join(", ")))
    };
    f.render_widget(
        Paragraph::new(vec![
            Line::styled(
                format!(
                    "question {}/{} · {} · {differ}",
                    question + 1,
                    c.questions.len(),
                    clean(&q.question_id)
                ),
                theme.title,
            ),
            Line::styled(clean(&q.question), theme.text),
        ])
        .wrap(Wrap { trim: false }),
        area,
    );
}

/// One side: the answer's id, seed and target place, its labels (`≠` where the two
/// runs' labels differ), then the answer's text.
fn answer_lines<'a>(a: Option<&PairedAnswer>, differ: &[String], theme: &Theme) -> Vec<Line<'a>> {
    let Some(a) = a else {
        return vec![Line::styled(
            "(this run did not answer the question)",
            theme.muted,
        )];
    };
    let mut lines = vec![
        Line::styled(
            format!(
                "target in prompt {} · seed {} · {}",
                a.target_in_prompt,
                a.seed,
                clean(&a.answer_id)
            ),
            theme.target_chunk,
        ),
        Line::styled(
            a.judge_model.as_deref().map_or_else(
                || "not judged".to_string(),
                |m| format!("judge {}", clean(m)),
            ),
            theme.muted,
        ),
    ];
    for (criterion, label) in &a.labels {
        let mark = if differ.contains(criterion) {
            "≠"
        } else {
            " "
        };
        let style = if label == "pass" {
            theme.pass
        } else {
            theme.fail
        };
        lines.push(Line::styled(
            format!("{mark} {:<22} {}", clean(criterion), clean(label)),
            style,
        ));
    }
    lines.push(Line::raw(""));
    lines.extend(
        clean(&a.answer)
            .lines()
            .map(|l| Line::styled(l.to_string(), theme.text)),
    );
    lines
}
