//! Application state and its update function. Drawing lives in `ui.rs` and is a pure
//! function of this state.

use crossterm::event::{KeyCode, KeyEvent};

use super::action::Action;
use super::effect::Effect;
use super::keymap::{Key, Keymap};
use super::panes::PaneView;
use super::panes::agreement::AgreementPane;
use super::panes::annotate::{AnnotatePane, AnnotateSettings};
use super::panes::corpus::CorpusPane;
use super::panes::evalset::EvalsetPane;
use super::panes::evaluation::EvaluationPane;
use super::panes::generate::GeneratePane;
use super::panes::query::QueryPane;
use super::panes::runs::RunsPane;
use crate::core::chunk::Chunk;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Corpus,
    Query,
    Generate,
    Annotate,
    Agreement,
    Evaluation,
    Evalset,
    Runs,
}

impl Pane {
    pub const ALL: [Self; 8] = [
        Self::Corpus,
        Self::Query,
        Self::Generate,
        Self::Annotate,
        Self::Agreement,
        Self::Evaluation,
        Self::Evalset,
        Self::Runs,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Self::Corpus => "Corpus",
            Self::Query => "Query",
            Self::Generate => "Generate",
            Self::Annotate => "Annotate",
            Self::Agreement => "Agreement",
            Self::Evaluation => "Evaluation",
            Self::Evalset => "Evalset",
            Self::Runs => "Runs",
        }
    }

    /// Keymap section of the pane.
    pub fn section(self) -> &'static str {
        match self {
            Self::Corpus => "corpus",
            Self::Query => "query",
            Self::Generate => "generate",
            Self::Annotate => "annotate",
            Self::Agreement => "agreement",
            Self::Evaluation => "evaluation",
            Self::Evalset => "evalset",
            Self::Runs => "runs",
        }
    }

    fn index(self) -> usize {
        Self::ALL.iter().position(|p| *p == self).unwrap_or(0)
    }
}

/// Which layer receives keys. Derived from state, never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layer {
    Help,
    Input,
    Pane(Pane),
}

/// Where quitting stands (see [`App::quit_step`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuitStep {
    /// Still waiting; the status bar says for what.
    Wait(String),
    /// Nothing left to wait for (or the wait's limit passed).
    Done,
}

pub struct App {
    pub pane: Pane,
    pub show_help: bool,
    pub help_scroll: u16,
    pub should_quit: bool,
    pub corpus: CorpusPane,
    pub query: QueryPane,
    pub generate: GeneratePane,
    pub annotate: AnnotatePane,
    pub agreement: AgreementPane,
    pub evaluation: EvaluationPane,
    pub evalset: EvalsetPane,
    pub runs: RunsPane,
    pub keymap: Keymap,
    /// Shown in the status bar: workspace and counts.
    pub context_line: String,
    pub message: Option<String>,
}

impl App {
    /// One turn of quitting, called by the event loop after `q` until it returns
    /// [`QuitStep::Done`]. A running generation is stopped (its partial answer is saved,
    /// marked stopped); quitting waits for that save and for every label save in
    /// flight and every relevance grade being stored, at most `limit` in all, showing
    /// how many are left in the status bar.
    pub fn quit_step(
        &mut self,
        waited: std::time::Duration,
        limit: std::time::Duration,
    ) -> QuitStep {
        self.generate.stop_for_quit();
        let saves = self.annotate.saves_in_flight();
        let grades = self.query.grading().in_flight();
        let answer = self.generate.is_running();
        if (saves == 0 && grades == 0 && !answer) || waited >= limit {
            return QuitStep::Done;
        }
        let mut what = Vec::new();
        if saves > 0 {
            what.push(format!(
                "{saves} label save{}",
                if saves == 1 { "" } else { "s" }
            ));
        }
        if grades > 0 {
            what.push(format!(
                "{grades} grade{}",
                if grades == 1 { "" } else { "s" }
            ));
        }
        if answer {
            what.push("the stopped answer's save".to_string());
        }
        let msg = format!(
            "quitting: waiting for {} ({:.0} s left)…",
            what.join(" and "),
            limit.saturating_sub(waited).as_secs_f64()
        );
        self.message = Some(msg.clone());
        QuitStep::Wait(msg)
    }

    /// After quitting: labels that were not saved (failed, or still in flight when
    /// the wait ended), for the message printed once the terminal is restored.
    pub fn unsaved_report(&self) -> Option<String> {
        let mut lines = Vec::new();
        for f in self.annotate.unsaved() {
            lines.push(format!("NOT saved: {f}"));
        }
        if self.generate.is_running() {
            lines.push(
                "the stopped answer was still being generated when raglab stopped waiting: it was not saved"
                    .to_string(),
            );
        }
        let grades = self.query.grading().in_flight();
        if grades > 0 {
            lines.push(format!(
                "{grades} relevance grade(s) still being stored when raglab stopped waiting (check `raglab assess progress`)"
            ));
        }
        for l in self.annotate.in_flight() {
            lines.push(format!(
                "still saving when raglab stopped waiting (check `raglab labels history {}`): {} {} = {}",
                l.item_id,
                l.item_id,
                l.criterion,
                l.label.as_deref().unwrap_or("(undo)")
            ));
        }
        (!lines.is_empty()).then(|| lines.join("\n"))
    }

    pub fn new(chunks: Vec<Chunk>, keymap: Keymap, context_line: String) -> Self {
        let corpus = CorpusPane::new(chunks);
        let info = corpus.chunks().iter().map(query_meta).collect();
        Self {
            pane: Pane::Corpus,
            show_help: false,
            help_scroll: 0,
            should_quit: false,
            query: QueryPane::new(Vec::new(), Vec::new(), info),
            corpus,
            generate: GeneratePane::new(Default::default()),
            annotate: AnnotatePane::new(AnnotateSettings::default()),
            agreement: AgreementPane::default(),
            evaluation: EvaluationPane::default(),
            evalset: EvalsetPane::default(),
            runs: RunsPane::default(),
            keymap,
            context_line,
            message: None,
        }
    }

    /// The current pane.
    pub fn view(&self) -> &dyn PaneView {
        match self.pane {
            Pane::Corpus => &self.corpus,
            Pane::Query => &self.query,
            Pane::Generate => &self.generate,
            Pane::Annotate => &self.annotate,
            Pane::Agreement => &self.agreement,
            Pane::Evaluation => &self.evaluation,
            Pane::Evalset => &self.evalset,
            Pane::Runs => &self.runs,
        }
    }

    fn view_mut(&mut self) -> &mut dyn PaneView {
        match self.pane {
            Pane::Corpus => &mut self.corpus,
            Pane::Query => &mut self.query,
            Pane::Generate => &mut self.generate,
            Pane::Annotate => &mut self.annotate,
            Pane::Agreement => &mut self.agreement,
            Pane::Evaluation => &mut self.evaluation,
            Pane::Evalset => &mut self.evalset,
            Pane::Runs => &mut self.runs,
        }
    }

    pub fn layer(&self) -> Layer {
        if self.show_help {
            Layer::Help
        } else if self.view().editing() {
            Layer::Input
        } else {
            Layer::Pane(self.pane)
        }
    }

    /// Translate a key press into an action for the current layer (text input takes
    /// printable characters itself) and apply it; returns the effect to run, if any.
    pub fn handle_key(&mut self, ev: KeyEvent) -> Option<Effect> {
        let key = Key::from_event(ev);
        let action = match self.layer() {
            Layer::Help => self.keymap.lookup(&["help"], key),
            Layer::Input => {
                let a = self.keymap.lookup(&["input"], key);
                if a.is_none()
                    && let (KeyCode::Char(c), false) = (key.code, key.ctrl)
                {
                    self.view_mut().input_char(c);
                    return None;
                }
                // Non-text keys (tab, C-c) keep their global meaning while typing, so
                // a text field never traps the user in a pane.
                a.or_else(|| self.keymap.lookup(&["global"], key))
            }
            // Rubric label keys come first where labels are given (a rubric may give
            // `n` to "no"): labelling, and a lead's adjudication.
            Layer::Pane(Pane::Annotate)
                if let (KeyCode::Char(c), false, false) = (key.code, key.ctrl, key.alt)
                    && self.annotate.is_label_key(c) =>
            {
                Some(Action::LabelKey(c))
            }
            Layer::Pane(Pane::Agreement)
                if let (KeyCode::Char(c), false, false) = (key.code, key.ctrl, key.alt)
                    && self.agreement.is_label_key(c) =>
            {
                Some(Action::LabelKey(c))
            }
            Layer::Pane(Pane::Agreement) if self.agreement.adjudicating() => {
                self.keymap.lookup(&["agreement", "global"], key)
            }
            Layer::Pane(_) if self.view().overlay_open() => {
                self.keymap.lookup(&[self.view().overlay_section()], key)
            }
            Layer::Pane(p) => self.keymap.lookup(&[p.section(), "global"], key),
        };
        self.update(action?)
    }

    /// Generate an answer to the Query pane's current question with its ranking
    /// settings; `new_seed` moves to the next seed (regenerate).
    pub fn start_generation(&mut self, new_seed: bool) -> Option<Effect> {
        let q = self
            .query
            .current()
            .cloned()
            .or_else(|| self.generate.question().cloned());
        let Some(q) = q else {
            self.message = Some("pick or type a question in the Query pane first".into());
            return None;
        };
        if new_seed {
            self.generate.next_seed();
        }
        self.pane = Pane::Generate;
        self.generate.start(q, self.query.config(), self.query.k())
    }

    /// Move to the pane a number key names; the Evalset and Runs panes read their data
    /// again each time they are opened.
    fn switch_pane(&mut self, action: Action) -> Option<Effect> {
        self.pane = match action {
            Action::PaneCorpus => Pane::Corpus,
            Action::PaneQuery => Pane::Query,
            Action::PaneGenerate => Pane::Generate,
            Action::PaneAnnotate => Pane::Annotate,
            Action::PaneAgreement => Pane::Agreement,
            Action::PaneEvaluation => Pane::Evaluation,
            Action::PaneEvalset => {
                self.evalset.start_loading();
                self.pane = Pane::Evalset;
                return Some(Effect::LoadEvalset);
            }
            Action::PaneRuns => {
                self.pane = Pane::Runs;
                return Some(self.runs.load());
            }
            _ => self.pane,
        };
        None
    }

    /// The Runs pane's `enter`: a retrieval row opens the Query pane ranking in its
    /// configuration (the current question searched again); an answer row opens the
    /// Generate pane's Compare view of the stored runs.
    fn open_run(&mut self) -> Option<Effect> {
        let row = self.runs.current()?.clone();
        if row.kind == "retrieval" {
            let p = &row.pipeline;
            let method = match p.method.parse::<crate::core::retrieval::Method>() {
                Ok(m) => m,
                Err(e) => {
                    self.runs.say(format!("cannot open {}: {e}", row.label));
                    return None;
                }
            };
            let sparse = p.sparse.as_deref().and_then(|s| s.parse().ok());
            self.pane = Pane::Query;
            return self
                .query
                .show_config(&row.label, method, sparse, p.alpha, p.rerank.is_some());
        }
        self.pane = Pane::Generate;
        let _ = self.update(Action::CompareRuns);
        self.message = Some(format!(
            "answers of run {}: pick it in the Compare view (another run beside it), or p in the Query pane's question to replay one",
            crate::core::text::sanitize_for_terminal(&row.label)
        ));
        None
    }

    /// Apply an action: global ones here, the rest by the current pane. Returns the
    /// effect the event loop should hand to the jobs.
    pub fn update(&mut self, action: Action) -> Option<Effect> {
        self.message = None;
        match action {
            Action::Quit => match self.annotate.refuse_leaving() {
                Some(why) => self.message = Some(why.replace("repeat the key", "press q again")),
                None => self.should_quit = true,
            },
            Action::ToggleHelp => {
                self.show_help = !self.show_help;
                self.help_scroll = 0;
            }
            Action::Down if self.show_help => self.help_scroll = self.help_scroll.saturating_add(1),
            Action::Up if self.show_help => self.help_scroll = self.help_scroll.saturating_sub(1),
            Action::NextPane => self.pane = Pane::ALL[(self.pane.index() + 1) % Pane::ALL.len()],
            Action::PrevPane => {
                self.pane = Pane::ALL[(self.pane.index() + Pane::ALL.len() - 1) % Pane::ALL.len()];
            }
            Action::PaneCorpus
            | Action::PaneQuery
            | Action::PaneGenerate
            | Action::PaneAnnotate
            | Action::PaneAgreement
            | Action::PaneEvaluation
            | Action::PaneEvalset
            | Action::PaneRuns => return self.switch_pane(action),
            Action::RunSelected if self.pane == Pane::Runs => return self.open_run(),
            Action::Generate if matches!(self.pane, Pane::Query | Pane::Generate) => {
                return self.start_generation(false);
            }
            Action::Regenerate if self.pane == Pane::Generate => {
                return self.start_generation(true);
            }
            // The question picked in the Query pane, if any (not the one a replay
            // showed: `p` again moves on to the next stored answer).
            Action::ReplayAnswer if self.pane == Pane::Generate => {
                let question = self.query.current().map(|q| q.id.clone());
                return Some(self.generate.start_replay(question));
            }
            // The runs of the stored answers (the study's read of them) to pick from.
            Action::CompareRuns if self.pane == Pane::Generate && !self.generate.compare().open => {
                let mut runs: std::collections::BTreeMap<&str, usize> = Default::default();
                for a in self.query.stored() {
                    *runs.entry(a.run.as_str()).or_default() += 1;
                }
                let runs = runs.into_iter().map(|(r, n)| (r.to_string(), n)).collect();
                self.generate.open_compare(runs);
            }
            Action::SendToAnnotation if self.pane == Pane::Generate => {
                return match self.generate.last().filter(|_| !self.generate.is_running()) {
                    Some(a) => Some(Effect::AddItem {
                        answer_id: a.answer_id.clone(),
                    }),
                    None => {
                        self.message = Some("no finished answer to send to annotation".into());
                        None
                    }
                };
            }
            other => {
                let effect = self.view_mut().update(other);
                // A lead's final label is committed like a reviewer's label (saved,
                // waited for at quit and reported like any label).
                if let Some(label) = self.agreement.take_final() {
                    return self.annotate.queue_external(label);
                }
                return match effect {
                    // The judge streams into the Generate pane: show it.
                    Some(effect @ Effect::Judge { .. }) => {
                        self.pane = Pane::Generate;
                        Some(effect)
                    }
                    effect => effect,
                };
            }
        }
        None
    }
}

/// What the Query pane shows of each chunk, sanitized once (the app builds it from the
/// Corpus pane's views, sharing their strings).
pub fn chunk_info(chunks: &[Chunk]) -> crate::tui::panes::query::ChunkInfo {
    chunks
        .iter()
        .map(|c| query_meta(&crate::tui::panes::corpus::ChunkView::of(c.clone())))
        .collect()
}

/// A chunk's entry in the Query pane's map: its id, and the view's sanitized header
/// path and text (shared, not copied), words and topic.
fn query_meta(
    v: &crate::tui::panes::corpus::ChunkView,
) -> (String, crate::tui::panes::query::ChunkMeta) {
    let meta = crate::tui::panes::query::ChunkMeta {
        path: v.path.clone(),
        text: v.text.clone(),
        words: v.words,
        topic: v.chunk.topic.clone(),
    };
    (v.chunk.id.clone(), meta)
}
