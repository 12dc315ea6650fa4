//! One text field for every place the TUI takes typed text (the corpus filter, a typed
//! question, the reviewer's name, a note): the same keys, the same cursor, the same
//! sanitised drawing everywhere.

use ratatui::style::Style;
use ratatui::text::{Line, Span};

use crate::core::text::sanitize_for_terminal as clean;

/// What a key did to the field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputEvent {
    /// The text changed (typed or erased a character).
    Changed,
    /// Enter: the field closed with this text.
    Submitted(String),
    /// Escape: the field closed and its text was dropped.
    Cancelled,
}

/// A single-line text field that is either being edited or closed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextInput {
    text: String,
    active: bool,
}

impl TextInput {
    /// Open the field, empty.
    pub fn open(&mut self) {
        self.text.clear();
        self.active = true;
    }

    /// Open the field with `text` already in it.
    pub fn open_with(&mut self, text: &str) {
        self.text = text.to_string();
        self.active = true;
    }

    pub fn is_active(&self) -> bool {
        self.active
    }

    pub fn text(&self) -> &str {
        &self.text
    }

    /// Replace the text without opening the field (e.g. a picked question).
    pub fn set(&mut self, text: &str) {
        self.text = text.to_string();
    }

    /// Empty the field, leaving it open or closed as it is.
    pub fn clear(&mut self) {
        self.text.clear();
    }

    pub fn push(&mut self, c: char) -> InputEvent {
        // Control characters never enter a field: they could not be drawn safely.
        if !c.is_control() {
            self.text.push(c);
        }
        InputEvent::Changed
    }

    pub fn backspace(&mut self) -> InputEvent {
        self.text.pop();
        InputEvent::Changed
    }

    /// Close the field keeping its text, and hand the text over.
    pub fn submit(&mut self) -> InputEvent {
        self.active = false;
        InputEvent::Submitted(self.text.clone())
    }

    /// Close the field and drop its text.
    pub fn cancel(&mut self) -> InputEvent {
        self.active = false;
        self.text.clear();
        InputEvent::Cancelled
    }

    /// The field as one line: its (sanitised) text, with a cursor while editing.
    pub fn line(&self, style: Style) -> Line<'static> {
        let mut spans = vec![Span::styled(clean(&self.text), style)];
        if self.active {
            spans.push(Span::styled("▏", style));
        }
        Line::from(spans)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typing_submitting_and_cancelling() {
        let mut t = TextInput::default();
        assert!(!t.is_active());
        t.open();
        for c in "flu\u{1b}x".chars() {
            t.push(c);
        }
        assert_eq!(t.text(), "flux", "the escape character is refused");
        t.backspace();
        assert_eq!(t.submit(), InputEvent::Submitted("flu".into()));
        assert!(!t.is_active());
        assert_eq!(t.text(), "flu", "a submitted field keeps its text");
        t.open_with("note");
        assert_eq!(t.cancel(), InputEvent::Cancelled);
        assert_eq!(t.text(), "");
        let shown: String = {
            let mut u = TextInput::default();
            u.open_with("a\u{202e}b");
            u.line(Style::default())
                .spans
                .iter()
                .map(|s| s.content.to_string())
                .collect()
        };
        assert!(shown.ends_with('▏'));
    }
}
