//! The terminal UI: app state, actions, event loop, keymap, theme, panes.
//!
//! Events (keys, resize, ticks) become Actions; background work will report back as
//! Actions over an mpsc channel. Drawing is a pure function of state and happens at
//! most once per frame, only when something changed.

pub mod action;
pub mod app;
pub mod keymap;
pub mod panes;
pub mod theme;
pub mod ui;

use std::time::{Duration, Instant};

use anyhow::{Context as _, Result};
use crossterm::event::{Event, EventStream, KeyEventKind};
use futures::StreamExt;

use crate::cli::Context;
use crate::store::chunks::ChunkStore;
use app::App;
use keymap::Keymap;
use theme::Theme;

/// Shortest time between two frames: coalesces bursts of events into one draw.
const FRAME: Duration = Duration::from_millis(16);

/// Resolve the theme: flag, then config, then dark.
pub fn resolve_theme(ctx: &Context, flag: Option<String>) -> Result<Theme> {
    let name = flag.or_else(|| ctx.config.theme.clone()).unwrap_or_else(|| "dark".into());
    Theme::load(&name, &ctx.paths.themes_dir())
}

pub async fn run(ctx: Context, theme_flag: Option<String>) -> Result<()> {
    let theme = resolve_theme(&ctx, theme_flag)?;
    let keymap = Keymap::load(&ctx.paths.keymap_file())?;
    let chunks = ChunkStore::new(&ctx.workspace).load_all().await.context("loading chunks")?;
    let docs = chunks.iter().map(|c| c.doc_id.as_str()).collect::<std::collections::HashSet<_>>().len();
    let context_line = format!(
        "{} · {} documents · {} chunks",
        ctx.workspace.root().display(),
        docs,
        chunks.len()
    );
    let mut app = App::new(chunks, keymap, context_line);
    let mut terminal = ratatui::init(); // installs a panic hook that restores the terminal
    let result = event_loop(&mut terminal, &mut app, &theme).await;
    ratatui::restore();
    result
}

async fn event_loop(
    terminal: &mut ratatui::DefaultTerminal,
    app: &mut App,
    theme: &Theme,
) -> Result<()> {
    let mut events = EventStream::new();
    let mut sigterm = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .context("installing the SIGTERM handler")?;
    let started = Instant::now();
    let mut dirty = true;
    let mut last_draw = Instant::now() - FRAME;
    let mut first_frame_logged = false;
    loop {
        if dirty && last_draw.elapsed() >= FRAME {
            terminal.draw(|f| ui::draw(app, f, theme))?;
            last_draw = Instant::now();
            dirty = false;
            if !first_frame_logged {
                tracing::info!(ms = started.elapsed().as_secs_f64() * 1e3, "first frame drawn");
                first_frame_logged = true;
            }
        }
        if app.should_quit {
            return Ok(());
        }
        let wait = if dirty { FRAME.saturating_sub(last_draw.elapsed()) } else { Duration::from_secs(1) };
        tokio::select! {
            ev = events.next() => match ev {
                Some(Ok(Event::Key(k))) if k.kind != KeyEventKind::Release => {
                    app.handle_key(k);
                    dirty = true;
                }
                Some(Ok(Event::Resize(..))) => dirty = true,
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e).context("reading terminal events"),
                None => return Ok(()),
            },
            _ = sigterm.recv() => return Ok(()),
            () = tokio::time::sleep(wait) => {}
        }
    }
}
