//! The terminal UI: app state, actions, event loop, jobs, keymap, theme, panes.
//!
//! Events (keys, resize) become Actions; background work (retrieval, generation, label
//! commits, the agreement bootstrap) runs as jobs and reports back as `Msg`s carrying
//! owned data over an mpsc channel. Drawing is a pure function of state and happens at
//! most once per frame, only when something changed: a stream of tokens costs one draw
//! per frame, not one per token.

pub mod action;
pub mod app;
pub mod effect;
pub mod input;
pub mod jobs;
pub mod keymap;
pub mod layout;
pub mod panes;
pub mod replay;
mod results;
pub mod text_view;
pub mod theme;
pub mod ui;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;

use crate::core::question::Question;
use crate::service::Context;
use crate::service::base::read_questions;
use crate::service::evaluate::last_failures;
use app::App;
use jobs::{Jobs, Msg};
use keymap::Keymap;
use theme::Theme;

/// Shortest time between two frames: coalesces bursts of events into one draw.
pub const FRAME: Duration = Duration::from_millis(16);

/// Resolve the theme: flag, then config, then dark.
pub fn resolve_theme(ctx: &Context, flag: Option<String>) -> Result<Theme> {
    let name = flag
        .or_else(|| ctx.config.theme.clone())
        .unwrap_or_else(|| crate::config::defaults::THEME.into());
    Theme::load(&name, &ctx.paths.themes_dir())
}

/// The questions listed in the Query pane and the failures of the last evaluation.
/// A bad file is not an empty list: its error goes to the status line and the log.
fn load_question_lists(
    ctx: &Context,
    file: Option<&std::path::Path>,
) -> (
    Vec<Question>,
    Vec<crate::core::question::FailedQuestion>,
    Vec<String>,
) {
    let mut errors = Vec::new();
    let questions = match file.map(read_questions) {
        None => Vec::new(),
        Some(Ok(q)) => q,
        Some(Err(e)) => {
            errors.push(format!("{e:#}"));
            Vec::new()
        }
    };
    let failures = match last_failures(ctx) {
        Ok(f) => f,
        Err(e) => {
            errors.push(format!("{e:#}"));
            Vec::new()
        }
    };
    for e in &errors {
        tracing::error!("{e}");
    }
    (questions, failures, errors)
}

/// Options of the TUI beyond the context.
#[derive(Debug, Clone, Default)]
pub struct TuiOptions {
    pub theme: Option<String>,
    pub questions: Option<PathBuf>,
    pub reviewer: Option<String>,
    /// The study lead: sees every label, adjudicates, follows progress.
    pub lead: bool,
}

/// The app as it opens on a workspace: chunks, the questions file, the failures of the
/// last evaluation, the reviewer and the generator's name. Problems with the inputs
/// are shown in the status bar (and logged), never swallowed.
pub async fn build_app(ctx: &Context, opts: &TuiOptions, keymap: Keymap) -> Result<App> {
    build_app_showing(ctx, opts, keymap, &mut |_| {}).await
}

/// [`build_app`], telling `show` each step as it starts and how many chunks are read
/// (the TUI draws it: a million chunks take seconds to read).
pub async fn build_app_showing(
    ctx: &Context,
    opts: &TuiOptions,
    keymap: Keymap,
    show: &mut (dyn FnMut(ui::Opening) + Send),
) -> Result<App> {
    if let Some(name) = &opts.reviewer {
        crate::core::annotation::check_reviewer(name).map_err(anyhow::Error::msg)?;
    }
    let step = |step, done, total| ui::Opening { step, done, total };
    show(step("reading the chunks", 0, 0));
    let chunks = crate::service::corpus::chunks_or_empty_counting(ctx, &mut |done, total| {
        show(step("reading the chunks", done, total));
    })
    .await
    .context("loading chunks")?;
    show(step("reading the summaries", 0, 0));
    let docs = chunks
        .iter()
        .map(|c| c.doc_id.as_str())
        .collect::<std::collections::HashSet<_>>()
        .len();
    let context_line = format!(
        "{} · {} documents · {} chunks",
        ctx.workspace.location(),
        docs,
        chunks.len()
    );
    let summaries = crate::service::corpus::summaries(ctx, &chunks).await;
    show(step("laying out the corpus", 0, 0));
    let mut app = App::new(chunks, keymap, context_line);
    let mut load_errors = Vec::new();
    match summaries {
        Ok(s) => app.corpus.set_summaries(s),
        Err(e) => load_errors.push(format!("summaries: {e:#}")),
    }
    let file = opts
        .questions
        .clone()
        .or_else(|| ctx.config.questions.clone());
    show(step("reading the questions and the last evaluation", 0, 0));
    let (questions, failures, mut errors) = load_question_lists(ctx, file.as_deref());
    errors.extend(load_errors);
    let (generate, template_errors) = generate_settings(ctx);
    errors.extend(template_errors);
    app.query.configure(panes::query::QuerySettings {
        questions,
        failures,
        method: ctx.method(None),
        alpha: ctx.alpha_set(None),
        k: ctx.k(None),
        rerank_cut: crate::service::retrieval::rerank::setup(ctx, &Default::default())
            .ok()
            .map(|stage| stage.cut),
    });
    app.message =
        (!errors.is_empty()).then(|| crate::core::text::sanitize_for_terminal(&errors.join("; ")));
    show(step("checking the study", 0, 0));
    set_up_study_panes(ctx, opts, &mut app).await?;
    app.generate = panes::generate::GeneratePane::new(generate);
    app.corpus.set_note(tiny_model_note(ctx));
    Ok(app)
}

/// The Annotate and Agreement panes for this session's identity. In a study with a
/// roster, `--reviewer NAME` needs NAME's key and `--role lead` the lead's.
async fn set_up_study_panes(ctx: &Context, opts: &TuiOptions, app: &mut App) -> Result<()> {
    let viewer = crate::core::blinding::Viewer::of(opts.reviewer.as_deref(), opts.lead);
    crate::service::study::confirm(ctx, &viewer).await?;
    // The study's pinned rubric when its lead pinned one (a differing local one is
    // refused, its differences named).
    let rubric = crate::service::study::study_rubric(ctx).await?;
    app.annotate = panes::annotate::AnnotatePane::new(panes::annotate::AnnotateSettings {
        reviewer: opts.reviewer.clone(),
        lead: opts.lead,
        rubric: rubric.clone(),
        order_seed: ctx
            .config
            .annotation
            .order_seed
            .unwrap_or(crate::config::defaults::ORDER_SEED),
    });
    // The Query pane grades chunks as the reviewer (`a`, then 0/1/2).
    app.query
        .set_assessor(app.annotate.reviewer().map(str::to_string));
    app.agreement = panes::agreement::AgreementPane::new(panes::agreement::AgreementSettings {
        lead: opts.lead,
        lead_name: opts.reviewer.clone(),
        rubric: Some(rubric),
    });
    Ok(())
}

/// The Generate pane's settings from the config: the generator's name (or the
/// endpoint live answers go to), whether its file is missing, and the prompt
/// templates to switch between; with the errors of template files left out.
pub fn generate_settings(ctx: &Context) -> (panes::generate::GenerateSettings, Vec<String>) {
    let on_endpoints = crate::service::answer::live_on_endpoints(ctx);
    let model = match ctx.config.chat_endpoints().first() {
        Some(e) if on_endpoints => format!("on endpoint {}", e.url),
        _ => ctx.gen_model_name(),
    };
    let (templates, errors) = ctx.free_form_choices();
    let settings = panes::generate::GenerateSettings {
        model,
        generator_missing: !on_endpoints && !ctx.config.gen_model(&ctx.paths).is_file(),
        sampling: Default::default(),
        templates,
    };
    let errors = errors
        .iter()
        .map(|e| format!("prompt template left out: {e:#}"))
        .collect();
    (settings, errors)
}

/// The first screen's note when answers would come from the generator setup ships
/// (SmolLM2-135M, no endpoint): it is tiny, so a newcomer learns at once that its
/// answers show the mechanics, not quality, and how to point raglab at a real model.
pub fn tiny_model_note(ctx: &Context) -> Option<(String, Vec<String>)> {
    let file = ctx.config.gen_model(&ctx.paths);
    let shipped =
        file.file_name().and_then(|n| n.to_str()) == Some(crate::config::DEFAULT_GEN_MODEL);
    if !shipped || crate::service::answer::live_on_endpoints(ctx) {
        return None;
    }
    let config =
        crate::core::text::sanitize_for_terminal(&ctx.paths.config_file().display().to_string());
    Some((
        "The shipped model is tiny".into(),
        vec![
            format!(
                "Answers come from {}, 135 million parameters: it shows the pipeline (retrieval, streaming, judging), not answers worth reading. Retrieval (2 Query) does not depend on it.",
                ctx.gen_model_name()
            ),
            format!(
                "For real answers, a GGUF file: `[models] generate = \"/path/model.gguf\"` in {config}; or a model server: `[[endpoints]]` with `url = \"http://host:8080/v1\"`. See docs/guide-demo.md."
            ),
        ],
    ))
}

/// Why the TUI cannot run here, if it cannot. Keys and the window's size come from
/// the controlling terminal (the terminal library opens `/dev/tty` when standard input
/// is not one); the frames go to standard output, which must reach a screen: a
/// terminal, or a pipe (`raglab | tee log` shows them through `tee`), not a file,
/// where the TUI would wait for keys with nothing shown.
fn no_terminal() -> Option<&'static str> {
    let keys = std::io::stdin().is_terminal()
        || std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open("/dev/tty")
            .is_ok();
    if !keys {
        return Some("there is no terminal to read keys from here");
    }
    if std::io::stdout().is_terminal() {
        return None;
    }
    // `/dev/stdout` names the open standard output (Linux, macOS).
    #[cfg(unix)]
    let pipe = {
        use std::os::unix::fs::FileTypeExt;
        std::fs::metadata("/dev/stdout").is_ok_and(|m| m.file_type().is_fifo())
    };
    #[cfg(not(unix))]
    let pipe = false;
    (!pipe).then_some("standard output is neither a terminal nor a pipe (a file?)")
}

pub async fn run(ctx: Context, opts: TuiOptions) -> Result<()> {
    let started = Instant::now();
    // Said before the workspace is read (a million chunks take seconds), and instead of
    // the terminal library's panic.
    if let Some(why) = no_terminal() {
        anyhow::bail!(
            "the TUI needs a terminal, and {why}: run `raglab` in a terminal, or a subcommand without one (`raglab --help` lists them; most take --json)"
        );
    }
    let theme = resolve_theme(&ctx, opts.theme.clone())?;
    let keymap = Keymap::load(&ctx.paths.keymap_file())?;
    let mut terminal = ratatui::init(); // installs a panic hook that restores the terminal
    let opened = open_showing(&ctx, &opts, keymap, &mut terminal, &theme).await;
    let mut app = match opened {
        Ok(app) => app,
        Err(e) => {
            ratatui::restore();
            return Err(e);
        }
    };
    let (mut jobs, rx) = Jobs::new(&ctx);
    jobs.set_viewer(app.annotate.viewer());
    jobs.load_background();
    let exit_after_first = std::env::var_os("RAGLAB_EXIT_AFTER_FIRST_FRAME").is_some();
    let result = event_loop(
        &mut terminal,
        &mut app,
        &theme,
        &mut jobs,
        rx,
        started,
        exit_after_first,
    )
    .await;
    // A terminal that hung up cannot be restored, nor told that it could not be.
    let _ = ratatui::try_restore();
    jobs.settle(std::time::Duration::from_secs(3)).await;
    result?;
    match app.unsaved_report() {
        None => Ok(()),
        Some(report) => {
            // Also in the log: after a hang-up there is no terminal to print it on.
            tracing::error!("not everything was saved: {report}");
            Err(anyhow::anyhow!("not everything was saved:\n{report}"))
        }
    }
}

/// [`build_app_showing`] with its steps drawn on the opening screen: a new step at once,
/// the count of chunks read at most every 100 ms. Each step's time goes to the log;
/// Ctrl-C or `q` leaves (checked at each call: per batch of chunks and per step).
async fn open_showing(
    ctx: &Context,
    opts: &TuiOptions,
    keymap: Keymap,
    terminal: &mut ratatui::DefaultTerminal,
    theme: &Theme,
) -> Result<App> {
    let location = ctx.workspace.location();
    let (mut last_step, mut step_started) = ("", Instant::now());
    let mut last_draw: Option<Instant> = None;
    let mut show = |o: ui::Opening| {
        let new_step = o.step != last_step;
        if new_step {
            if !last_step.is_empty() {
                let ms = step_started.elapsed().as_secs_f64() * 1e3;
                tracing::info!(ms, step = last_step, "opening");
            }
            (last_step, step_started) = (o.step, Instant::now());
        }
        if new_step || last_draw.is_none_or(|t| t.elapsed() >= Duration::from_millis(100)) {
            let _ = terminal.draw(|f| ui::draw_opening(f, theme, &location, &o));
            last_draw = Some(Instant::now());
        }
        leave_if_asked();
    };
    let app = build_app_showing(ctx, opts, keymap, &mut show).await;
    let ms = step_started.elapsed().as_secs_f64() * 1e3;
    tracing::info!(ms, step = last_step, "opening");
    app
}

/// Ctrl-C or `q` pressed while a workspace opens: leave at once, as Ctrl-C did before
/// the opening screen (raw mode turns Ctrl-C into a key, so it is read here). Opening
/// only reads until its last step, and this runs at a step's start, before that step's
/// work, so nothing is half written. Other keys pressed meanwhile are dropped.
fn leave_if_asked() {
    use crossterm::event::{KeyCode, KeyModifiers};
    while crossterm::event::poll(Duration::ZERO).unwrap_or(false) {
        let Ok(Event::Key(key)) = crossterm::event::read() else {
            continue;
        };
        let ctrl_c =
            key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL);
        if key.kind == KeyEventKind::Press && (ctrl_c || key.code == KeyCode::Char('q')) {
            ratatui::restore();
            eprintln!("raglab: stopped while opening the workspace");
            std::process::exit(130);
        }
    }
}

/// How long quitting waits for label saves and a stopped answer's save.
pub const QUIT_WAIT: Duration = Duration::from_secs(15);

fn log_frame_times(frame_times: &[f64]) {
    if !frame_times.is_empty() {
        let p = |q: f64| crate::core::stats::quantile(frame_times, q).unwrap_or(0.0);
        tracing::info!(
            frames = frame_times.len(),
            p50_ms = p(0.5),
            p95_ms = p(0.95),
            max_ms = p(1.0),
            "frame time while streaming"
        );
    }
}

/// The drawing side of the event loop: frames at most every [`FRAME`], only when
/// something changed, with the first frame's time logged and frame times kept while
/// an answer streams.
struct Frames {
    dirty: bool,
    last_draw: Instant,
    first_drawn: bool,
    streaming_ms: Vec<f64>,
}

impl Frames {
    fn new() -> Self {
        Self {
            dirty: true,
            last_draw: Instant::now() - FRAME,
            first_drawn: false,
            streaming_ms: Vec::new(),
        }
    }

    /// Draw when due. `Ok(true)`: the first frame was drawn and `exit_after_first` asks
    /// to stop there.
    fn draw_if_due(
        &mut self,
        terminal: &mut ratatui::DefaultTerminal,
        app: &App,
        theme: &Theme,
        started: Instant,
        exit_after_first: bool,
    ) -> Result<bool> {
        if !self.dirty || self.last_draw.elapsed() < FRAME {
            return Ok(false);
        }
        let t = Instant::now();
        terminal.draw(|f| ui::draw(app, f, theme))?;
        if app.generate.is_running() {
            self.streaming_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        self.last_draw = Instant::now();
        self.dirty = false;
        if !self.first_drawn {
            let ms = started.elapsed().as_secs_f64() * 1e3;
            tracing::info!(ms, "first frame drawn");
            if exit_after_first {
                eprintln!("first frame after {ms:.1} ms");
                return Ok(true);
            }
            self.first_drawn = true;
        }
        Ok(false)
    }

    /// How long the loop may wait for an event before the next frame is due.
    fn wait(&self) -> Duration {
        if self.dirty {
            FRAME.saturating_sub(self.last_draw.elapsed())
        } else {
            Duration::from_millis(250)
        }
    }
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    theme: &Theme,
    jobs: &mut Jobs,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<Msg>,
    started: Instant,
    exit_after_first: bool,
) -> Result<()> {
    let mut events = EventStream::new();
    use tokio::signal::unix::{SignalKind, signal};
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let mut sighup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    // Once the terminal hangs up (its window closed, an ssh session dropped) nothing can
    // be drawn or read, but the queued and in-flight label saves still finish.
    let mut terminal_gone = false;
    let mut frames = Frames::new();
    let mut quitting: Option<Instant> = None;
    app.query
        .say("loading the retrieval indexes and the embedding model…".into());
    loop {
        if !terminal_gone && frames.draw_if_due(terminal, app, theme, started, exit_after_first)? {
            return Ok(());
        }
        if app.should_quit {
            let since = *quitting.get_or_insert_with(Instant::now);
            if let app::QuitStep::Wait(_) = app.quit_step(since.elapsed(), QUIT_WAIT) {
                // Keep drawing and applying results until the saves are in; keys are
                // no longer taken.
                frames.dirty = true;
            } else {
                log_frame_times(&frames.streaming_ms);
                return Ok(());
            }
        }
        let wait = frames.wait();
        tokio::select! {
            ev = events.next(), if !terminal_gone => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release && quitting.is_none() => {
                    if let Some(effect) = app.handle_key(k) {
                        jobs.run(app, effect);
                    }
                    frames.dirty = true;
                }
                Some(Ok(Event::Resize(..))) => frames.dirty = true,
                Some(Ok(_)) => {}
                // The terminal can no longer be read: quit as after a hang-up, the
                // saves in flight waited for.
                Some(Err(e)) => {
                    tracing::warn!("reading terminal events: {e}; quitting");
                    (terminal_gone, app.should_quit) = (true, true);
                }
                None => (terminal_gone, app.should_quit) = (true, true),
            },
            Some(msg) = rx.recv() => {
                jobs.apply(app, msg);
                // Drain whatever else is queued (e.g. a burst of tokens) before drawing.
                while let Ok(msg) = rx.try_recv() {
                    jobs.apply(app, msg);
                }
                frames.dirty = true;
            }
            // SIGTERM and SIGINT quit like `q`: saves in flight are waited for.
            _ = sigterm.recv() => app.should_quit = true,
            _ = sigint.recv() => app.should_quit = true,
            _ = sighup.recv() => {
                tracing::warn!("the terminal hung up; quitting once the saves in flight are in");
                (terminal_gone, app.should_quit) = (true, true);
            }
            () = tokio::time::sleep(wait) => {
                // The live line (elapsed, tokens/s) ticks while generating.
                if app.generate.is_running() { frames.dirty = true; }
            }
        }
        // Another process's label commits reach the panes within a few seconds.
        jobs.poll_study();
    }
}
