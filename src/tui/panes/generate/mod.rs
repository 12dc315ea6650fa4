//! Generate pane: answer the Query pane's current question with its current ranking
//! (method, alpha, k), streaming tokens as they come. A live line shows tokens/s,
//! tokens so far and elapsed time; `s` stops (the partial answer is kept and marked
//! stopped), `v` shows the exact prompt, `r` regenerates with the next seed, and the
//! question's previous answers are listed. Tokens update state at any rate; the event
//! loop draws at most once per frame. `p` replays a stored answer at its recorded
//! speed (no model needed: a demo on a machine without the generator), labelled as a
//! replay with the answer's id, model and date so it is never taken for a live one.
//! `c` opens the Compare view of two stored answer runs ([`compare`]). `t` switches
//! the prompt template among the configured ones; the question's title names the one
//! the next answer uses, the prompt view (`v`) and the previous answers the one each
//! answer used (`name@hash`).

pub mod compare;

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, List, ListItem, Paragraph, Wrap};

use crate::core::grounded::GroundedRecord;
use crate::core::question::Question;
use crate::core::sampling::Sampling;
use crate::core::template::TemplateChoice;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::answer::AnswerRecord;
use crate::tui::action::Action;
use crate::tui::effect::{Effect, GenJob, ReplayJob};
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

pub struct GeneratePane {
    question: Option<Question>,
    text: String,
    prompt: Option<String>,
    show_prompt: bool,
    running: bool,
    started: Option<Instant>,
    first_token: Option<Instant>,
    /// Prompt tokens the local model has read, of how many: shown until the first
    /// token, since a long prompt on the CPU takes tens of seconds.
    prompt_read: Option<(usize, usize)>,
    /// When the last generation ended (freezes the live line).
    finished: Option<Instant>,
    tokens: usize,
    ticket: u64,
    stop: Arc<AtomicBool>,
    sampling: Sampling,
    last: Option<AnswerRecord>,
    previous: Vec<AnswerRecord>,
    status: Option<String>,
    scroll: u16,
    model: String,
    /// Where the current answer is generated: `CPU · layers offloaded 0/31`, the GPU's
    /// name, or `endpoint URL` (known once the generator is loaded).
    backend: Option<String>,
    /// The stored answer a judge is judging (the stream is the judge's output).
    judging: Option<String>,
    /// The stored answer being (or last) replayed; None while generating live.
    replay: Option<Box<AnswerRecord>>,
    /// The generator's file is missing: `g` cannot work, `p` can.
    generator_missing: bool,
    /// Stored answers there are to replay (None: not read yet).
    stored: Option<usize>,
    /// The Compare view of two answer runs (`c`).
    compare: compare::RunsCompare,
    /// The prompt templates `t` switches between, and the one the next answer uses.
    templates: Vec<TemplateChoice>,
    template: usize,
    /// The template of the answer on screen, `name@hash` (known once its prompt is
    /// built, or from the stored answer replayed).
    used_template: Option<String>,
    /// Each grounded answer's scores as shown under it (`answers ground`): answer id ->
    /// one line per judge.
    grounded: HashMap<String, Vec<String>>,
    /// Answers that are blind study items: their grounded scores, the judge's, are
    /// hidden as their judge labels are.
    blind: HashSet<String>,
}

/// What the Generate pane is set up with: the generator's name as shown, whether its
/// file is missing (`g` cannot work, `p` can), the sampling of live answers, and the
/// prompt templates to switch between (the first is used until `t`; none: the
/// configured one, and `t` says how to add more).
#[derive(Debug, Clone, Default)]
pub struct GenerateSettings {
    pub model: String,
    pub generator_missing: bool,
    pub sampling: Sampling,
    pub templates: Vec<TemplateChoice>,
}

impl GeneratePane {
    pub fn new(settings: GenerateSettings) -> Self {
        let GenerateSettings {
            model,
            generator_missing,
            sampling,
            templates,
        } = settings;
        Self {
            question: None,
            text: String::new(),
            prompt: None,
            show_prompt: false,
            running: false,
            started: None,
            first_token: None,
            prompt_read: None,
            finished: None,
            tokens: 0,
            ticket: 0,
            stop: Arc::new(AtomicBool::new(false)),
            sampling,
            last: None,
            previous: Vec::new(),
            status: None,
            scroll: 0,
            model,
            backend: None,
            judging: None,
            replay: None,
            generator_missing,
            stored: None,
            compare: compare::RunsCompare::default(),
            templates,
            template: 0,
            used_template: None,
            grounded: HashMap::new(),
            blind: HashSet::new(),
        }
    }

    /// The stored grounded records (the latest per answer and judge), read with the
    /// study.
    pub fn set_grounded(&mut self, records: &[GroundedRecord]) {
        self.grounded.clear();
        for r in records {
            self.grounded
                .entry(r.answer_id.clone())
                .or_default()
                // Sanitised once here, not at every draw (the judge's name is a
                // file or a server's model name: text from outside).
                .push(clean(&format!(
                    "grounded by {}: {}",
                    r.judge_model,
                    crate::core::grounded::scores_line(r)
                )));
        }
    }

    /// The answers whose judge's verdicts the viewer may not see yet.
    pub fn set_blind(&mut self, blind: HashSet<String>) {
        self.blind = blind;
    }

    /// The grounded line of the answer on screen (the one replayed, else the last one
    /// generated): its scores by each judge, why they are hidden, or nothing when it
    /// was never grounded.
    fn grounded_line(&self) -> Option<String> {
        let id = &self.replay.as_deref().or(self.last.as_ref())?.answer_id;
        let lines = self.grounded.get(id)?;
        Some(if self.blind.contains(id) {
            "grounded scores hidden: this answer is a blind study item".into()
        } else {
            lines.join(" | ")
        })
    }

    /// The template the next answer uses, if templates were configured.
    pub fn template(&self) -> Option<&TemplateChoice> {
        self.templates.get(self.template)
    }

    /// `t`: the next configured template (after the last, the first again).
    fn next_template(&mut self) {
        self.status = Some(match self.templates.len() {
            0 | 1 => format!(
                "one prompt template ({}): list more files in [prompts] free_form_alternatives of the config to switch",
                self.template().map_or("shipped", |t| t.name.as_str())
            ),
            n => {
                self.template = (self.template + 1) % n;
                format!(
                    "prompt template {} ({} of {n}): g answers with it",
                    self.template().map_or("", |t| t.name.as_str()),
                    self.template + 1
                )
            }
        });
    }

    /// The stored answers to the question on screen, newest first.
    pub fn set_previous(&mut self, previous: Vec<AnswerRecord>) {
        self.previous = previous;
    }

    /// How many answers are stored (the study's read), for the replay.
    pub fn set_stored(&mut self, n: usize) {
        self.stored = Some(n);
    }

    /// Stored answers there are to replay (None: not read yet).
    pub fn stored(&self) -> Option<usize> {
        self.stored
    }

    /// Say `what` in the pane's status line.
    pub fn say(&mut self, what: String) {
        self.status = Some(what);
    }

    /// What the status line says.
    pub fn status(&self) -> Option<&str> {
        self.status.as_deref()
    }

    /// Whether an answer (live, judged or replayed) is streaming.
    pub fn is_running(&self) -> bool {
        self.running
    }

    /// The text streamed so far (sanitized).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Tokens streamed so far.
    pub fn tokens(&self) -> usize {
        self.tokens
    }

    /// The last finished answer.
    pub fn last(&self) -> Option<&AnswerRecord> {
        self.last.as_ref()
    }

    /// The question on screen.
    pub fn question(&self) -> Option<&Question> {
        self.question.as_ref()
    }

    /// The stored answer being (or last) replayed.
    pub fn replaying(&self) -> Option<&AnswerRecord> {
        self.replay.as_deref()
    }

    /// Whether the generator's file is missing.
    pub fn generator_missing(&self) -> bool {
        self.generator_missing
    }

    /// The next answer is drawn with the next seed (`r`: regenerate).
    pub fn next_seed(&mut self) {
        self.sampling.seed = self.sampling.seed.wrapping_add(1);
    }

    /// The Compare view of two answer runs.
    pub fn compare(&self) -> &compare::RunsCompare {
        &self.compare
    }

    /// Open the Compare view's run picker on `runs` (name, stored answers).
    pub fn open_compare(&mut self, runs: Vec<(String, usize)>) {
        self.compare.open_picker(runs);
    }

    /// Two answer runs were compared (or could not be).
    pub fn on_compared(
        &mut self,
        ticket: u64,
        result: Result<crate::service::evaluate::AnswerRunsComparison, String>,
    ) {
        self.compare.on_compared(ticket, result);
    }

    /// A new ticket and stop flag, the old run told to stop, the text cleared.
    fn begin(&mut self) {
        self.stop.store(true, Ordering::Relaxed); // supersede a running job
        self.stop = Arc::new(AtomicBool::new(false));
        self.ticket += 1;
        self.text.clear();
        self.prompt = None;
        self.tokens = 0;
        self.scroll = 0;
        self.running = true;
        self.started = Some(Instant::now());
        self.first_token = None;
        self.prompt_read = None;
        self.finished = None;
        self.status = None;
        self.judging = None;
        self.used_template = None;
    }

    /// Replay the stored answer after the last one replayed (of `question_id` when it
    /// has stored answers, else of any question); the jobs pick it.
    pub fn start_replay(&mut self, question_id: Option<String>) -> Effect {
        let after = self.replay.as_ref().map(|a| a.answer_id.clone());
        self.begin();
        self.status = Some("looking for a stored answer…".into());
        Effect::Replay(ReplayJob {
            ticket: self.ticket,
            question_id,
            after,
            stop: Arc::clone(&self.stop),
        })
    }

    /// The jobs picked `a` to replay (or found none).
    pub fn on_replay_start(&mut self, ticket: u64, a: Option<AnswerRecord>) {
        if ticket != self.ticket {
            return;
        }
        let Some(a) = a else {
            self.running = false;
            self.finished = Some(Instant::now());
            self.status = Some(
                "no stored answers to replay: store some with `raglab generate --questions FILE`"
                    .into(),
            );
            return;
        };
        self.started = Some(Instant::now());
        self.status = None;
        self.prompt = Some(clean(&a.prompt));
        self.used_template = Some(clean(&a.template_label()));
        self.question = Some(Question {
            id: a.question_id.clone(),
            text: a.question.clone(),
            ..Question::default()
        });
        self.replay = Some(Box::new(a));
    }

    /// The replay ended (all text shown, or stopped).
    pub fn on_replay_done(&mut self, ticket: u64, stopped: bool) {
        if ticket != self.ticket {
            return;
        }
        self.running = false;
        self.finished = Some(Instant::now());
        let Some(a) = &self.replay else { return };
        let took = self
            .started
            .zip(self.finished)
            .map_or(0.0, |(s, e)| e.duration_since(s).as_secs_f64());
        self.status = Some(if stopped {
            format!("replay stopped after {took:.1} s")
        } else {
            self.text = clean(&a.answer);
            format!(
                "replay finished in {took:.1} s (recorded {:.1} s)",
                crate::core::replay::duration_ms(a.output_tokens, a.ttft_ms, a.gen_tokens_per_s)
                    / 1e3
            )
        });
    }

    /// "replay of ID (model, recorded DATE)", while a replay is shown.
    pub fn replay_label(&self) -> Option<String> {
        self.replay.as_ref().map(|a| {
            format!(
                "replay of {} ({}, recorded {})",
                clean(&a.answer_id),
                clean(a.model_file.trim_end_matches(".gguf")),
                clean(&a.created_at)
            )
        })
    }

    /// Show a judge at work on a stored answer: the pane streams the judge's output
    /// under a new ticket (superseding a generation's display; that generation still
    /// finishes and is saved).
    pub fn start_judging(&mut self, answer_id: &str) -> u64 {
        self.begin();
        self.replay = None;
        self.status = Some(format!("judging {}…", clean(answer_id)));
        self.judging = Some(answer_id.to_string());
        self.ticket
    }

    /// The judge finished: its labels (saved by the caller) or why it failed.
    pub fn on_judged(
        &mut self,
        ticket: u64,
        result: Result<crate::service::answer::JudgementRecord, String>,
    ) {
        if ticket != self.ticket {
            return;
        }
        self.running = false;
        self.finished = Some(Instant::now());
        self.status = Some(match result {
            Ok(j) => format!("judgement saved ({}): {}", j.judge_model, j.labels_line()),
            Err(e) => format!("not judged: {e}"),
        });
    }

    /// Start generating for `q` with the given retrieval settings.
    pub fn start(
        &mut self,
        q: Question,
        ranking: crate::core::retrieval::RunConfig,
        k: usize,
    ) -> Option<Effect> {
        if q.text.trim().is_empty() {
            self.status = Some("no question: pick one in the Query pane first".into());
            return None;
        }
        self.begin();
        self.replay = None;
        self.question = Some(q.clone());
        Some(Effect::Generate(GenJob {
            ticket: self.ticket,
            question: q,
            ranking,
            k,
            sampling: self.sampling.clone(),
            template: self.template().and_then(|t| t.file.clone()),
            stop: Arc::clone(&self.stop),
        }))
    }

    /// The answer's prompt was built: its exact text, where it runs, and its template
    /// (`name@hash`).
    pub fn on_prompt(&mut self, ticket: u64, prompt: String, backend: String, template: String) {
        if ticket == self.ticket {
            self.prompt = Some(clean(&prompt));
            self.backend = Some(clean(&backend));
            self.used_template = Some(clean(&template));
        }
    }

    /// The local model has read `decoded` of the prompt's `total` tokens.
    pub fn on_prompt_read(&mut self, ticket: u64, decoded: usize, total: usize) {
        if ticket == self.ticket {
            self.prompt_read = Some((decoded, total));
        }
    }

    pub fn on_token(&mut self, ticket: u64, piece: &str) {
        if ticket == self.ticket {
            self.first_token.get_or_insert_with(Instant::now);
            self.tokens += 1;
            self.text.push_str(&clean(piece));
        }
    }

    /// Quitting: stop a running generation at its next token; its partial answer is
    /// still saved, marked stopped.
    pub fn stop_for_quit(&mut self) {
        if self.running && self.replay.is_some() {
            // A replay saves nothing: nothing to wait for.
            self.stop.store(true, Ordering::Relaxed);
            self.running = false;
        } else if self.running {
            self.stop.store(true, Ordering::Relaxed);
            self.status = Some("stopping: the partial answer will be saved".into());
        }
    }

    pub fn on_done(&mut self, ticket: u64, result: Result<AnswerRecord, String>) {
        if ticket != self.ticket {
            return;
        }
        self.running = false;
        self.finished = Some(Instant::now());
        match result {
            Ok(a) => {
                self.text = clean(&a.answer);
                self.status = Some(if a.stopped {
                    "stopped: partial answer saved".into()
                } else {
                    "answer saved".into()
                });
                self.previous.insert(0, a.clone());
                self.last = Some(a);
            }
            Err(e) => self.status = Some(e),
        }
    }

    /// The question and the generator's name.
    fn draw_question(&self, f: &mut Frame, head: Rect, theme: &Theme) {
        let q = self.question.as_ref().map_or_else(
            || "(press g in the Query pane or here to generate)".into(),
            |q| clean(&q.text),
        );
        let title = match self.replay_label() {
            Some(r) => format!(" Question · {r} · NOT a live generation "),
            None if self.generator_missing => format!(
                " Question · generator {} not found: p replays a stored answer ({}) ",
                clean(&self.model),
                self.stored
                    .map_or_else(|| "reading them…".into(), |n| format!("{n} stored"))
            ),
            None => format!(
                " Question · generator {} · prompt {}{} ",
                clean(&self.model),
                clean(self.template().map_or("shipped", |t| t.name.as_str())),
                match self.templates.len() {
                    0 | 1 => String::new(),
                    n => format!(" ({} of {n}, t switches)", self.template + 1),
                }
            ),
        };
        f.render_widget(
            Paragraph::new(Line::styled(q, theme.text)).block(
                Block::bordered()
                    .title(Span::styled(title, theme.title))
                    .border_style(theme.border),
            ),
            head,
        );
    }

    /// State, tokens, tokens/s, elapsed time and sampling; the status.
    fn draw_live_line(&self, f: &mut Frame, live: Rect, theme: &Theme) {
        let status = clean(self.status.as_deref().unwrap_or_default());
        f.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!(" {} ", clean(&self.live_line())), theme.muted),
                Span::styled(status, theme.filter),
            ])),
            live,
        );
    }

    /// The streamed answer, or the exact prompt (`v`).
    fn draw_answer(&self, f: &mut Frame, main: Rect, theme: &Theme) {
        let (title, text) = if self.show_prompt {
            (
                format!(
                    " Prompt{} (exact text sent to the model; v: back) ",
                    self.used_template
                        .as_ref()
                        .map_or_else(String::new, |t| format!(" · template {t}"))
                ),
                self.prompt
                    .clone()
                    .unwrap_or_else(|| "(prompt not built yet)".into()),
            )
        } else if let Some(id) = &self.judging {
            (
                format!(" Judge of {} (greedy, the rubric's grammar) ", clean(id)),
                self.text.clone(),
            )
        } else {
            (
                " Answer (g generate · s stop · r new seed · v prompt · p replay stored) "
                    .to_string(),
                self.text.clone(),
            )
        };
        f.render_widget(
            Paragraph::new(
                text.lines()
                    .map(|l| Line::styled(l.to_string(), theme.text))
                    .collect::<Vec<_>>(),
            )
            .wrap(Wrap { trim: false })
            .scroll((self.scroll, 0))
            .block(
                Block::bordered()
                    .title(Span::styled(title, theme.title))
                    .title_bottom(Span::styled(
                        self.grounded_line()
                            .filter(|_| !self.show_prompt && self.judging.is_none())
                            .map_or_else(String::new, |g| format!(" {g} ")),
                        theme.muted,
                    ))
                    .border_style(if self.running {
                        theme.focused_border
                    } else {
                        theme.border
                    }),
            ),
            main,
        );
    }

    /// Earlier answers to this question.
    fn draw_previous(&self, f: &mut Frame, side: Rect, theme: &Theme) {
        let items: Vec<ListItem> = self
            .previous
            .iter()
            .map(|a| {
                ListItem::new(vec![
                    Line::styled(
                        format!(
                            "seed {} · {} tok · {:.0} ms · {}{}",
                            a.seed,
                            a.output_tokens,
                            a.total_ms,
                            clean(&a.template_label()),
                            if a.stopped { " · stopped" } else { "" }
                        ),
                        theme.muted,
                    ),
                    Line::styled(
                        clean(&crate::core::text::snippet(&a.answer, 60)),
                        theme.text,
                    ),
                ])
            })
            .collect();
        f.render_widget(
            List::new(items).block(
                Block::bordered()
                    .title(Span::styled(" Previous answers ", theme.title))
                    .border_style(theme.border),
            ),
            side,
        );
    }

    fn live_line(&self) -> String {
        let now = self.finished.unwrap_or_else(Instant::now);
        let elapsed = self
            .started
            .map_or(0.0, |s| now.duration_since(s).as_secs_f64());
        if let Some(a) = &self.replay {
            return format!(
                "{} · {elapsed:.1}s · recorded: {} tokens, first token {:.0} ms, {:.1} tok/s, {:.1} s · paced by words (no tokenizer)",
                if self.running { "replaying" } else { "replay" },
                a.output_tokens,
                a.ttft_ms,
                a.gen_tokens_per_s,
                crate::core::replay::duration_ms(a.output_tokens, a.ttft_ms, a.gen_tokens_per_s)
                    / 1e3
            );
        }
        let rate = match (self.first_token, self.tokens) {
            (Some(f), n) if n > 1 => (n - 1) as f64 / now.duration_since(f).as_secs_f64().max(1e-6),
            _ => 0.0,
        };
        // Time to first token: from the key press to the first piece on screen.
        let ttft = match (self.started, self.first_token) {
            (Some(s), Some(f)) => format!("ttft {:.0} ms", f.duration_since(s).as_secs_f64() * 1e3),
            _ => "ttft -".into(),
        };
        let s = &self.sampling;
        let state = match (self.running, self.judging.is_some(), self.prompt_read) {
            (true, false, Some((read, total))) if self.first_token.is_none() => format!(
                "reading the prompt: {read} of {total} tokens ({}%)",
                read * 100 / total.max(1)
            ),
            (true, true, _) => "judging".into(),
            (true, false, _) => "generating".into(),
            _ => "idle".into(),
        };
        format!(
            "{state} · {} · {} tokens · {rate:.1} tok/s · {ttft} · {elapsed:.1}s · T={} top-k={} top-p={} min-p={} rep={} seed={} max={}",
            self.backend.as_deref().unwrap_or("-"),
            self.tokens,
            s.temperature,
            s.top_k,
            s.top_p,
            s.min_p,
            s.repeat_penalty,
            s.seed,
            s.max_tokens
        )
    }
}

impl PaneView for GeneratePane {
    /// Apply an action (none of this pane's own actions has an effect: generating is
    /// started by the app, which knows the Query pane's question and settings).
    fn update(&mut self, action: Action) -> Option<Effect> {
        if self.compare.open {
            return self.compare.update(action);
        }
        match action {
            Action::StopGeneration if self.running => {
                self.stop.store(true, Ordering::Relaxed);
                self.status = Some("stopping…".into());
            }
            Action::ViewPrompt => self.show_prompt = !self.show_prompt,
            Action::NextTemplate if !self.running => self.next_template(),
            Action::NextTemplate => {
                self.status =
                    Some("the answer is being generated: s stops it, then t switches".into());
            }
            Action::Down => self.scroll = self.scroll.saturating_add(1),
            Action::Up => self.scroll = self.scroll.saturating_sub(1),
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let [head, live, body] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Length(1),
            Constraint::Min(5),
        ])
        .areas(area);
        let [main, side] =
            Layout::horizontal([Constraint::Percentage(72), Constraint::Percentage(28)])
                .areas(body);
        self.draw_question(f, head, theme);
        self.draw_live_line(f, live, theme);
        self.draw_answer(f, main, theme);
        self.draw_previous(f, side, theme);
        if self.compare.open {
            self.compare.draw(f, theme);
        }
    }

    fn overlay_open(&self) -> bool {
        self.compare.open
    }

    fn overlay_section(&self) -> &'static str {
        self.compare.section()
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    fn screen(pane: &GeneratePane) -> String {
        crate::tui::ui::pane_screen(pane, 260, 16)
    }

    fn choice(name: &str, file: Option<&str>) -> TemplateChoice {
        TemplateChoice {
            name: name.into(),
            file: file.map(std::path::PathBuf::from),
        }
    }

    fn question() -> Question {
        Question {
            id: "q1".into(),
            text: "How is rabies prevented?".into(),
            ..Question::default()
        }
    }

    /// The file of the template a `g` would use.
    fn next_job_template(pane: &mut GeneratePane) -> Option<std::path::PathBuf> {
        match pane.start(
            question(),
            crate::core::retrieval::RunConfig::new(
                crate::core::retrieval::Method::Hybrid,
                crate::core::retrieval::Sparse::Bm25,
                0.7,
            ),
            5,
        ) {
            Some(Effect::Generate(job)) => job.template,
            other => panic!("expected a generation, got {other:?}"),
        }
    }

    /// `t` steps through the configured templates and back to the first; the title
    /// names the one the next answer uses, and the job carries its file.
    #[test]
    fn t_switches_the_template_the_next_answer_uses() {
        let mut pane = GeneratePane::new(GenerateSettings {
            model: "m.gguf".into(),
            templates: vec![
                choice("shipped", None),
                choice("brief", Some("/t/brief.txt")),
                choice("free-form-citing", Some("/t/cite.txt")),
            ],
            ..GenerateSettings::default()
        });
        assert!(screen(&pane).contains("prompt shipped (1 of 3, t switches)"));
        assert_eq!(next_job_template(&mut pane), None);
        pane.running = false;
        pane.update(Action::NextTemplate);
        let shown = screen(&pane);
        assert!(
            shown.contains("prompt brief (2 of 3, t switches)"),
            "{shown}"
        );
        assert!(shown.contains("prompt template brief (2 of 3): g answers with it"));
        assert_eq!(
            next_job_template(&mut pane),
            Some(std::path::PathBuf::from("/t/brief.txt"))
        );
        // While an answer streams, `t` waits: the running answer keeps its template.
        pane.update(Action::NextTemplate);
        assert!(screen(&pane).contains("prompt brief (2 of 3"));
        pane.running = false;
        pane.update(Action::NextTemplate);
        pane.update(Action::NextTemplate);
        assert!(screen(&pane).contains("prompt shipped (1 of 3"));
    }

    /// With one template `t` says how to configure more; the prompt view names the
    /// template the answer on screen used, as its prompt arrived.
    #[test]
    fn one_template_says_how_to_add_more_and_v_names_the_one_used() {
        let mut pane = GeneratePane::new(GenerateSettings {
            templates: vec![choice("shipped", None)],
            ..GenerateSettings::default()
        });
        pane.update(Action::NextTemplate);
        assert!(screen(&pane).contains("[prompts] free_form_alternatives"));
        let _ = pane.start(
            question(),
            crate::core::retrieval::RunConfig::new(
                crate::core::retrieval::Method::Hybrid,
                crate::core::retrieval::Sparse::Bm25,
                0.7,
            ),
            5,
        );
        let ticket = pane.ticket;
        pane.on_prompt(
            ticket,
            "the exact prompt".into(),
            "CPU".into(),
            "shipped@0123456789ab".into(),
        );
        pane.update(Action::ViewPrompt);
        let shown = screen(&pane);
        assert!(
            shown.contains("Prompt · template shipped@0123456789ab"),
            "{shown}"
        );
        assert!(shown.contains("the exact prompt"));
        // A late prompt of an earlier answer changes nothing.
        pane.on_prompt(ticket - 1, "old".into(), "CPU".into(), "old@1".into());
        assert!(!screen(&pane).contains("old@1"));
    }

    /// Until the first token, the live line says how much of the prompt the model has
    /// read; a late report of an earlier answer changes nothing; the first token
    /// turns the line to generating.
    #[test]
    fn the_live_line_reads_the_prompt_until_the_first_token() {
        let mut pane = GeneratePane::new(GenerateSettings::default());
        let _ = pane.start(
            question(),
            crate::core::retrieval::RunConfig::new(
                crate::core::retrieval::Method::Hybrid,
                crate::core::retrieval::Sparse::Bm25,
                0.7,
            ),
            5,
        );
        let ticket = pane.ticket;
        assert!(screen(&pane).contains("generating ·"));
        pane.on_prompt_read(ticket, 512, 2000);
        assert!(
            screen(&pane).contains("reading the prompt: 512 of 2000 tokens (25%)"),
            "{}",
            screen(&pane)
        );
        pane.on_prompt_read(ticket - 1, 1999, 2000);
        assert!(screen(&pane).contains("512 of 2000 tokens"));
        pane.on_prompt_read(ticket, 2000, 2000);
        assert!(screen(&pane).contains("reading the prompt: 2000 of 2000 tokens (100%)"));
        pane.on_token(ticket, "Rabies");
        let shown = screen(&pane);
        assert!(shown.contains("generating ·") && !shown.contains("reading the prompt"));
    }

    /// A replayed answer shows its grounded scores under it, as every judge gave
    /// them; hidden while the answer is a blind study item; nothing for an answer
    /// never grounded.
    #[test]
    fn a_replayed_answer_shows_its_grounded_scores_unless_blind() {
        let mut pane = GeneratePane::new(GenerateSettings::default());
        pane.set_grounded(&[GroundedRecord {
            answer_id: "run/q1/s7".into(),
            judge_model: "judge.gguf".into(),
            faithfulness: Some(0.75),
            context_recall: Some(1.0),
            answer_correctness: Some(0.5),
            ..GroundedRecord::default()
        }]);
        let replay = |pane: &mut GeneratePane, id: &str| {
            let Effect::Replay(job) = pane.start_replay(None) else {
                panic!("a replay job");
            };
            pane.on_replay_start(
                job.ticket,
                Some(AnswerRecord {
                    answer_id: id.into(),
                    question_id: "q1".into(),
                    question: "How is rabies prevented?".into(),
                    answer: "By vaccination.".into(),
                    ..AnswerRecord::default()
                }),
            );
        };
        replay(&mut pane, "run/q1/s7");
        let shown = screen(&pane);
        assert!(
            shown.contains(
                "grounded by judge.gguf: faithfulness 0.750 · context precision undefined · context recall 1.000 · answer correctness 0.500"
            ),
            "{shown}"
        );
        pane.set_blind(HashSet::from(["run/q1/s7".to_string()]));
        let shown = screen(&pane);
        assert!(shown.contains("grounded scores hidden: this answer is a blind study item"));
        assert!(!shown.contains("faithfulness 0.750"), "{shown}");
        replay(&mut pane, "run/q1/s8");
        let shown = screen(&pane);
        assert!(!shown.contains("grounded"), "{shown}");
    }
}
