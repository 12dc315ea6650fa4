//! Evaluation-set pane (7): the candidate questions of `raglab evalset generate`, each
//! with its critique scores, the analyst's decision and the filter's verdict under the
//! default thresholds; `a` accepts, `x` rejects, `c` clears a decision by hand. A
//! decision is committed by a background job (like `raglab evalset decide`), then the
//! candidates are read again, so what is shown is what is stored and what `raglab
//! evalset filter` honours.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{List, ListItem, ListState, Paragraph, Wrap};

use crate::core::evalset::{AXES, Decision, Thresholds};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::evalset::CandidateView;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

/// The command that produces candidates, shown when there are none.
pub const HOW_TO: &str = "raglab evalset generate --limit 60, then raglab evalset critique";

#[derive(Default)]
pub struct EvalsetPane {
    /// The last load (None: not loaded yet).
    views: Option<Vec<CandidateView>>,
    selected: usize,
    loading: bool,
    /// Decisions sent and not yet stored.
    saving: usize,
    status: Option<String>,
}

impl EvalsetPane {
    /// The pane is reading the candidates again (each time it is opened).
    pub fn start_loading(&mut self) {
        self.loading = true;
    }

    /// A load is in flight.
    pub fn is_loading(&self) -> bool {
        self.loading
    }

    /// The candidates were read at least once.
    pub fn is_loaded(&self) -> bool {
        self.views.is_some()
    }

    /// Decisions sent and not yet stored.
    pub fn saves_in_flight(&self) -> usize {
        self.saving
    }

    /// The pane's last message, if any.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// A finished load; the selection stays on the same candidate when it still exists.
    pub fn on_loaded(&mut self, views: Result<Vec<CandidateView>, String>) {
        self.loading = false;
        match views {
            Ok(v) => {
                let current = self.current().map(|c| c.candidate.candidate_id.clone());
                self.selected = current
                    .and_then(|id| v.iter().position(|c| c.candidate.candidate_id == id))
                    .unwrap_or(self.selected)
                    .min(v.len().saturating_sub(1));
                self.views = Some(v);
            }
            Err(e) => self.status = Some(e),
        }
    }

    /// A decision was stored (or not).
    pub fn on_decided(&mut self, result: Result<String, String>) -> Option<Effect> {
        self.saving = self.saving.saturating_sub(1);
        match result {
            Ok(said) => {
                self.status = Some(said);
                self.loading = true;
                Some(Effect::LoadEvalset)
            }
            Err(e) => {
                self.status = Some(e);
                None
            }
        }
    }

    pub fn current(&self) -> Option<&CandidateView> {
        self.views.as_ref()?.get(self.selected)
    }

    fn len(&self) -> usize {
        self.views.as_ref().map_or(0, Vec::len)
    }

    fn decide(&mut self, decision: Option<Decision>) -> Option<Effect> {
        let id = self.current()?.candidate.candidate_id.clone();
        self.saving += 1;
        self.status = Some(format!(
            "saving {} of {id}…",
            decision.map_or("clear", Decision::as_str)
        ));
        Some(Effect::DecideCandidate {
            candidate_id: id,
            decision,
        })
    }

    fn move_by(&mut self, delta: isize) {
        let n = self.len();
        if n == 0 {
            return;
        }
        self.selected = self.selected.saturating_add_signed(delta).min(n - 1);
    }
}

fn mark(d: Option<Decision>) -> &'static str {
    match d {
        Some(Decision::Accept) => "✓",
        Some(Decision::Reject) => "✗",
        None => " ",
    }
}

impl PaneView for EvalsetPane {
    fn update(&mut self, action: Action) -> Option<Effect> {
        match action {
            Action::Down => self.move_by(1),
            Action::Up => self.move_by(-1),
            Action::PageDown => self.move_by(10),
            Action::PageUp => self.move_by(-10),
            Action::Top => self.selected = 0,
            Action::Bottom => self.selected = self.len().saturating_sub(1),
            Action::AcceptCandidate => return self.decide(Some(Decision::Accept)),
            Action::RejectCandidate => return self.decide(Some(Decision::Reject)),
            Action::ClearDecision => return self.decide(None),
            Action::Refresh => {
                self.loading = true;
                return Some(Effect::LoadEvalset);
            }
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let [list_area, detail_area] =
            Layout::horizontal([Constraint::Percentage(45), Constraint::Percentage(55)])
                .areas(area);
        let Some(views) = &self.views else {
            f.render_widget(
                Paragraph::new("reading the candidates…").block(theme.block("Candidates", true)),
                area,
            );
            return;
        };
        if views.is_empty() {
            f.render_widget(
                Paragraph::new(vec![
                    Line::from("No candidate questions in this workspace."),
                    Line::from(format!("Make some: {HOW_TO}")),
                ])
                .block(theme.block("Candidates", true)),
                area,
            );
            return;
        }
        let kept = views.iter().filter(|v| v.verdict == "kept").count();
        let items: Vec<ListItem> = views
            .iter()
            .map(|v| {
                let style = if v.verdict == "kept" {
                    theme.pass
                } else {
                    theme.muted
                };
                ListItem::new(Line::from(vec![
                    Span::styled(format!("{} ", mark(v.decision)), theme.title),
                    Span::styled(format!("{:<9} ", v.candidate.kind), theme.header_path),
                    Span::styled(clean(&v.candidate.question).replace('\n', " "), style),
                ]))
            })
            .collect();
        let mut state = ListState::default().with_selected(Some(self.selected));
        f.render_stateful_widget(
            List::new(items)
                .block(theme.block(
                    format!(
                        "Candidates {}/{} · {kept} kept by the default filter",
                        self.selected + 1,
                        views.len()
                    ),
                    true,
                ))
                .highlight_style(theme.selected),
            list_area,
            &mut state,
        );
        if let Some(v) = self.current() {
            f.render_widget(
                Paragraph::new(detail(v, self.status.as_deref(), theme))
                    .wrap(Wrap { trim: false })
                    .block(theme.block("Candidate", false)),
                detail_area,
            );
        }
    }
}

/// The detail lines of a candidate: question, answer, targets, provenance, scores
/// against the default thresholds, decision and verdict.
fn detail<'a>(v: &CandidateView, status: Option<&str>, theme: &Theme) -> Vec<Line<'a>> {
    let c = &v.candidate;
    let mut lines = vec![
        Line::from(vec![
            Span::styled("id        ", theme.muted),
            Span::raw(clean(&c.candidate_id)),
        ]),
        Line::from(vec![
            Span::styled("question  ", theme.muted),
            Span::styled(clean(&c.question), theme.title),
        ]),
        Line::from(vec![
            Span::styled("answer    ", theme.muted),
            Span::raw(clean(&c.answer)),
        ]),
        Line::from(vec![
            Span::styled("targets   ", theme.muted),
            Span::styled(clean(&c.chunk_ids.join(", ")), theme.target_chunk),
        ]),
        Line::from(vec![
            Span::styled("written by ", theme.muted),
            Span::raw(clean(&match &c.endpoint {
                Some(e) => format!("{} at {e}", c.model_file),
                None => c.model_file.clone(),
            })),
        ]),
        Line::from(""),
    ];
    lines.extend(score_lines(v.critique.as_ref(), theme));
    lines.push(Line::from(""));
    lines.push(Line::from(vec![
        Span::styled("decision  ", theme.muted),
        Span::styled(
            v.decision.map_or("none", Decision::as_str),
            theme.status_key,
        ),
    ]));
    let mut verdict = v.verdict.clone();
    if let Some(of) = &v.duplicate_of {
        verdict.push_str(&format!(" of {of}"));
    }
    lines.push(Line::from(vec![
        Span::styled("filter    ", theme.muted),
        Span::styled(
            clean(&verdict),
            if v.verdict == "kept" {
                theme.pass
            } else {
                theme.fail
            },
        ),
    ]));
    if let Some(s) = status {
        lines.push(Line::from(""));
        lines.push(Line::styled(clean(s), theme.filter));
    }
    lines
}

/// The critic's scores, each against its default minimum, or a note that there are
/// none yet.
fn score_lines<'a>(
    critique: Option<&crate::service::evalset::CritiqueRecord>,
    theme: &Theme,
) -> Vec<Line<'a>> {
    let Some(cr) = critique else {
        return vec![Line::styled(
            "not critiqued yet (raglab evalset critique)",
            theme.muted,
        )];
    };
    let mut lines = vec![Line::styled(
        format!("scores by {} (minimum)", clean(&cr.critic_model)),
        theme.title,
    )];
    let mins = Thresholds::default().0;
    for (((k, _), s), min) in AXES.iter().zip(cr.scores()).zip(mins) {
        let style = if s < min { theme.fail } else { theme.pass };
        let min = if min == 0 {
            "(not applied)".to_string()
        } else {
            format!("(>= {min})")
        };
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<20}"), theme.text),
            Span::styled(format!("{s} "), style),
            Span::styled(min, theme.muted),
        ]));
    }
    lines
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::core::candidates::CandidateRecord;

    fn view(id: &str, question: &str) -> CandidateView {
        CandidateView {
            candidate: CandidateRecord {
                candidate_id: id.into(),
                kind: "fact".into(),
                chunk_ids: vec![format!("{id}#chunk")],
                question: question.into(),
                answer: "A yearly vaccine.".into(),
                ..CandidateRecord::default()
            },
            critique: None,
            critiques: 0,
            decision: None,
            verdict: "kept".into(),
            duplicate_of: None,
        }
    }

    fn screen(pane: &EvalsetPane) -> String {
        crate::tui::ui::pane_screen(pane, 160, 30)
    }

    /// With no candidate the pane says which command makes some; loaded, `j` moves to
    /// the next candidate and `a` asks to store its acceptance, said on screen, and the
    /// stored decision reloads the list.
    #[test]
    fn a_candidate_is_chosen_by_keys_and_its_decision_asked_for() {
        let mut pane = EvalsetPane::default();
        pane.on_loaded(Ok(Vec::new()));
        assert!(screen(&pane).contains(HOW_TO), "{}", screen(&pane));
        pane.on_loaded(Ok(vec![
            view("c1", "How is the flu spread?"),
            view("c2", "Who should get a flu vaccine?"),
        ]));
        pane.update(Action::Down);
        assert_eq!(
            pane.current().map(|c| c.candidate.candidate_id.as_str()),
            Some("c2")
        );
        assert!(screen(&pane).contains("Who should get a flu vaccine?"));
        let Some(Effect::DecideCandidate {
            candidate_id,
            decision,
        }) = pane.update(Action::AcceptCandidate)
        else {
            panic!("accepting asks for a decision to be stored");
        };
        assert_eq!(
            (candidate_id.as_str(), decision),
            ("c2", Some(Decision::Accept))
        );
        assert!(
            screen(&pane).contains("saving accept of c2"),
            "{}",
            screen(&pane)
        );
        assert_eq!(pane.saves_in_flight(), 1);
        let next = pane.on_decided(Ok("accepted c2".into()));
        assert!(matches!(next, Some(Effect::LoadEvalset)));
        assert_eq!(pane.saves_in_flight(), 0);
    }
}
