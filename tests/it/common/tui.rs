//! Driving the TUI in process the way its event loop does: a key press updates the app
//! and its effect goes to the real background jobs; their messages are applied until a
//! condition holds.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use tokio::sync::mpsc::UnboundedReceiver;

/// A key press as the event loop handles it.
pub fn key(app: &mut App, jobs: &mut Jobs, code: KeyCode) {
    if let Some(effect) = app.handle_key(KeyEvent::new(code, KeyModifiers::NONE)) {
        jobs.run(app, effect);
    }
}

/// A character key.
pub fn press(app: &mut App, jobs: &mut Jobs, c: char) {
    key(app, jobs, KeyCode::Char(c));
}

/// Run the event loop's message half (receive, apply) until `done` holds, at most
/// `limit`; returns the screen (`width` x `height`) drawn after each message, as the
/// loop would draw it (none when `width` is 0).
pub async fn pump(
    jobs: &mut Jobs,
    app: &mut App,
    rx: &mut UnboundedReceiver<Msg>,
    done: impl Fn(&Jobs, &App) -> bool,
    limit: Duration,
    (width, height): (u16, u16),
) -> Vec<String> {
    let deadline = tokio::time::Instant::now() + limit;
    let mut screens = Vec::new();
    while !done(jobs, app) {
        let msg = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("the TUI's jobs answered within {limit:?}"))
            .expect("job channel open");
        jobs.apply(app, msg);
        if width > 0 {
            screens.push(super::screen(app, width, height));
        }
    }
    screens
}

/// The TUI as `raglab` opens it on `ctx` (no options), its jobs started.
pub async fn started(ctx: &raglab::service::Context) -> (App, Jobs, UnboundedReceiver<Msg>) {
    let app = raglab::tui::build_app(
        ctx,
        &raglab::tui::TuiOptions::default(),
        raglab::tui::keymap::Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, rx) = Jobs::new(ctx);
    jobs.load_background();
    (app, jobs, rx)
}

/// A context on `env`'s workspace, with its own config and data folders and `config`.
pub fn context(env: &super::Env, config: raglab::config::Config) -> raglab::service::Context {
    let paths = raglab::config::Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    raglab::service::Context::with(paths, config, &env.workspace()).expect("context")
}

/// The TUI as `raglab` opens it on `ctx` with `opts`, its jobs started, moved to the
/// Query pane once retrieval is loaded (60 s at most).
pub async fn on_query_pane(
    ctx: &raglab::service::Context,
    opts: &raglab::tui::TuiOptions,
) -> (App, Jobs, UnboundedReceiver<Msg>) {
    let mut app = raglab::tui::build_app(ctx, opts, raglab::tui::keymap::Keymap::default_keymap())
        .await
        .expect("app");
    let (mut jobs, mut rx) = Jobs::new(ctx);
    jobs.load_background();
    press(&mut app, &mut jobs, '2');
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |j, _| j.retriever_ready(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    (app, jobs, rx)
}

/// The TUI as `raglab` opens it on `ctx` with `opts` (`tui::run` without a terminal):
/// the app, its jobs told the viewer and started on their start-up reads, and their
/// channel.
pub async fn opened(
    ctx: &raglab::service::Context,
    opts: &raglab::tui::TuiOptions,
) -> (App, Jobs, UnboundedReceiver<Msg>) {
    let app = raglab::tui::build_app(ctx, opts, raglab::tui::keymap::Keymap::default_keymap())
        .await
        .expect("app");
    let (mut jobs, rx) = Jobs::new(ctx);
    jobs.set_viewer(app.annotate.viewer());
    jobs.load_background();
    (app, jobs, rx)
}
