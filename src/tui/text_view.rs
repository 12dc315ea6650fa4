//! A scrollable, wrapped view of one long text (a 5,000-word chunk or answer is read
//! to its last line): line, page, top and bottom moves, and the position shown as
//! "lines 41-80 of 312". The text is wrapped here, not by the widget, so the position
//! and the last page are exact for the width actually drawn.

use unicode_width::UnicodeWidthChar;

/// Word-wrap `text` to `width` columns: breaks at spaces, hard-breaks words longer
/// than a line, keeps blank lines (paragraphs) and never trims a line's indentation.
pub fn wrap(text: &str, width: usize) -> Vec<String> {
    let width = width.max(1);
    let mut out = Vec::new();
    for para in text.split('\n') {
        let mut line = String::new();
        let mut cols = 0;
        for word in split_keep_spaces(para) {
            let w: usize = word.chars().map(|c| c.width().unwrap_or(0)).sum();
            if cols + w <= width {
                line.push_str(word);
                cols += w;
                continue;
            }
            if word.trim().is_empty() {
                // A space at the end of a line: drop it, the break replaces it.
                out.push(end_line(&mut line));
                cols = 0;
                continue;
            }
            if cols > 0 {
                out.push(end_line(&mut line));
                cols = 0;
            }
            for c in word.chars() {
                let cw = c.width().unwrap_or(0);
                if cols + cw > width && cols > 0 {
                    out.push(std::mem::take(&mut line));
                    cols = 0;
                }
                line.push(c);
                cols += cw;
            }
        }
        out.push(line);
    }
    out
}

/// Take a finished line, without the spaces before its break.
fn end_line(line: &mut String) -> String {
    let kept = line.trim_end_matches(' ').len();
    line.truncate(kept);
    std::mem::take(line)
}

/// Words and the runs of spaces between them, in order.
fn split_keep_spaces(s: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in s.char_indices() {
        let space = c == ' ';
        if in_space.is_some_and(|was| was != space) {
            parts.push(&s[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < s.len() {
        parts.push(&s[start..]);
    }
    parts
}

/// A scroll position over wrapped lines. The offset is clamped when drawn, so moves
/// never need the width.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    pub top: usize,
}

/// One move of a [`Scroll`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScrollMove {
    Line(isize),
    Page(isize),
    Top,
    Bottom,
}

impl Scroll {
    /// Apply a move for a view of `height` rows over `total` lines.
    pub fn apply(&mut self, m: ScrollMove, height: usize, total: usize) {
        let last = total.saturating_sub(height.max(1));
        let page = height.saturating_sub(1).max(1) as isize;
        let top = self.top.min(last) as isize;
        self.top = match m {
            ScrollMove::Line(d) => (top + d).clamp(0, last as isize) as usize,
            ScrollMove::Page(d) => (top + d * page).clamp(0, last as isize) as usize,
            ScrollMove::Top => 0,
            ScrollMove::Bottom => last,
        };
    }

    /// The visible window `[start, end)` for `height` rows over `total` lines.
    pub fn window(&self, height: usize, total: usize) -> (usize, usize) {
        let start = self.top.min(total.saturating_sub(height.max(1)));
        (start, (start + height).min(total))
    }
}

/// "41-80/312": the lines shown and the total, short enough for the title of a
/// quarter-width column.
pub fn position(start: usize, end: usize, total: usize) -> String {
    format!("{}-{end}/{total}", (start + 1).min(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_at_words_and_keeps_every_character() {
        let text = "the quick brown fox jumps over the lazy dog\n\nsupercalifragilistic";
        let lines = wrap(text, 10);
        assert_eq!(
            lines,
            vec![
                "the quick",
                "brown fox",
                "jumps over",
                "the lazy",
                "dog",
                "",
                "supercalif",
                "ragilistic"
            ]
        );
        for l in &lines {
            assert!(l.chars().count() <= 10);
        }
        let words: Vec<&str> = text.split_whitespace().collect();
        let back = lines.join(" ");
        let again: Vec<&str> = back.split_whitespace().collect();
        assert_eq!(again.concat(), words.concat());
    }

    #[test]
    fn scrolls_to_the_last_line_and_not_past_it() {
        let mut s = Scroll::default();
        s.apply(ScrollMove::Bottom, 10, 95);
        assert_eq!(s.window(10, 95), (85, 95));
        s.apply(ScrollMove::Line(5), 10, 95);
        assert_eq!(s.top, 85);
        s.apply(ScrollMove::Page(-1), 10, 95);
        assert_eq!(s.top, 76);
        s.apply(ScrollMove::Top, 10, 95);
        assert_eq!(s.window(10, 95), (0, 10));
        assert_eq!(position(0, 10, 95), "1-10/95");
        assert_eq!(position(0, 0, 0), "0-0/0");
    }
}
