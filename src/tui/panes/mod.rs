//! One pane per folder: its state (private fields, set up by a constructor that
//! takes its settings), its view, the parts it draws, and its unit tests. Adding a key
//! to a pane touches its folder and the keymap only.

pub mod agreement;
pub mod annotate;
pub mod corpus;
pub mod evalset;
pub mod evaluation;
pub mod generate;
pub mod query;

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
