//! The Agreement pane's tables fit or scroll, and never cut a number: every column
//! is as wide as its widest cell (header included), the first column is always
//! shown, and the columns from the scroll offset on are shown as far as they fit;
//! the title says which columns are shown and that `h`/`l` scroll.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::style::Style;
use ratatui::widgets::{Row, Table};

use crate::tui::theme::Theme;

/// Space between two columns.
const GAP: u16 = 1;

/// A table of text cells: the header and the rows with their styles.
pub struct Grid {
    pub header: Vec<String>,
    pub rows: Vec<(Vec<String>, Style)>,
}

impl Grid {
    pub fn new(header: Vec<String>) -> Self {
        Self {
            header,
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<String>, style: Style) {
        self.rows.push((cells, style));
    }

    /// The width of every column: its widest cell.
    pub fn widths(&self) -> Vec<u16> {
        (0..self.header.len())
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(self.rows.iter().map(|(r, _)| r))
                    .filter_map(|r| r.get(c))
                    .map(|s| u16::try_from(s.chars().count()).unwrap_or(u16::MAX))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// The width the whole table needs (borders included).
    pub fn needed(&self) -> u16 {
        let w = self.widths();
        w.iter().sum::<u16>() + GAP * (w.len().saturating_sub(1) as u16) + 2
    }

    /// The columns shown within `width` (inside the borders) from scroll `offset`:
    /// the first, then data columns from the offset on while they fit. The offset
    /// is clamped so that scrolling stops once the last column shows.
    pub fn columns(&self, width: u16, offset: usize) -> Vec<usize> {
        let w = self.widths();
        let data = w.len().saturating_sub(1);
        let fits = |from: usize| {
            let mut used = w.first().copied().unwrap_or(0);
            let mut shown = vec![0];
            for (c, &cw) in w.iter().enumerate().skip(1 + from) {
                if used + GAP + cw > width && shown.len() > 1 {
                    break;
                }
                used += GAP + cw;
                shown.push(c);
            }
            shown
        };
        // The last offset worth scrolling to: the first from which the rest fits.
        let last = (0..data)
            .find(|&o| fits(o).last() == Some(&data))
            .unwrap_or(0);
        fits(offset.min(last))
    }

    /// Draw the shown columns in a block titled `title` (and the scroll note).
    pub fn render(&self, f: &mut Frame, area: Rect, offset: usize, title: &str, theme: &Theme) {
        let inner = area.width.saturating_sub(2);
        let shown = self.columns(inner, offset);
        let widths = self.widths();
        let data = self.header.len().saturating_sub(1);
        let note = match (shown.get(1), shown.last()) {
            (Some(&a), Some(&b)) if shown.len() - 1 < data => {
                format!(" · columns {a}-{b} of {data}, h/l scroll")
            }
            _ => String::new(),
        };
        let pick = |cells: &[String]| -> Row<'static> {
            Row::new(
                shown
                    .iter()
                    .map(|&c| cells.get(c).cloned().unwrap_or_default())
                    .collect::<Vec<_>>(),
            )
        };
        let rows: Vec<Row> = self
            .rows
            .iter()
            .map(|(cells, style)| pick(cells).style(*style))
            .collect();
        let constraints: Vec<Constraint> = shown
            .iter()
            .map(|&c| Constraint::Length(widths[c]))
            .collect();
        f.render_widget(
            Table::new(rows, constraints)
                .header(pick(&self.header).style(theme.title))
                .column_spacing(GAP)
                .block(theme.block(format!("{title}{note} "), false)),
            area,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid(widths: &[usize]) -> Grid {
        let mut g = Grid::new(widths.iter().map(|&w| "x".repeat(w)).collect());
        g.push(vec!["a".into(); widths.len()], Style::default());
        g
    }

    #[test]
    fn columns_fit_then_scroll_to_the_last() {
        let g = grid(&[5, 4, 4, 4]);
        // 5 + 3 * (1 + 4) = 20: all fit in 20.
        assert_eq!(g.columns(20, 0), vec![0, 1, 2, 3]);
        // In 15: the first and two data columns; scrolling stops at the last.
        assert_eq!(g.columns(15, 0), vec![0, 1, 2]);
        assert_eq!(g.columns(15, 1), vec![0, 2, 3]);
        assert_eq!(g.columns(15, 9), vec![0, 2, 3]);
        assert_eq!(g.needed(), 22);
    }
}
