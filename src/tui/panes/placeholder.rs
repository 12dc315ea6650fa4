//! Panes whose features have not landed yet say so plainly.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Paragraph, Wrap};

use crate::tui::theme::Theme;

pub fn draw(f: &mut Frame, area: Rect, theme: &Theme, name: &str, what: &str) {
    let text = vec![
        Line::styled(format!("{name}: not yet available"), theme.title),
        Line::raw(""),
        Line::styled(what.to_string(), theme.muted),
    ];
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .block(Block::bordered().border_style(theme.border)),
        area,
    );
}
