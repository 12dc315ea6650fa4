//! One pane per folder: its state, its view and the parts it draws. A pane's fields
//! are private and its settings come through its constructor (or `configure`), so
//! nothing outside writes its state, and adding a key to a pane touches its folder,
//! `tui::action` and `tui::keymap` only.

pub mod agreement;
pub mod annotate;
pub mod corpus;
pub mod evalset;
pub mod evaluation;
pub mod generate;
pub mod query;
pub mod runs;

use ratatui::Frame;
use ratatui::layout::Rect;

use super::action::Action;
use super::effect::Effect;
use super::theme::Theme;

/// What every pane does: take actions (returning at most one effect for the jobs),
/// draw itself as a pure function of its state, and say whether a text field or an
/// overlay of it takes the keys. Its help is generated from its keymap section.
pub trait PaneView {
    fn update(&mut self, action: Action) -> Option<Effect>;
    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme);
    /// Whether a text field of the pane takes typed characters.
    fn editing(&self) -> bool {
        false
    }
    /// A typed character, while [`PaneView::editing`].
    fn input_char(&mut self, _c: char) {}
    /// Whether an overlay (an opened chunk) takes the keys.
    fn overlay_open(&self) -> bool {
        false
    }
    /// The keymap section of the open overlay.
    fn overlay_section(&self) -> &'static str {
        "overlay"
    }
}
