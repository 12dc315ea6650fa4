//! The Annotate pane's guidelines overlay (`i`): the current criterion's definition,
//! the rubric's guidelines for it and its worked examples (each with its label and
//! why), over the middle of the pane. It follows the criterion (`1`-`9`, `j`/`k`) and
//! closes with `i` again or `esc`. The texts come from the rubric file, cleaned of
//! terminal controls when the rubric was read, and are the same for every item.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use crate::core::rubric::Rubric;
use crate::tui::theme::Theme;

/// The overlay's lines for criterion `criterion` of `rubric`.
pub fn lines(rubric: &Rubric, criterion: usize, theme: &Theme) -> Vec<Line<'static>> {
    let Some(c) = rubric.criteria.get(criterion) else {
        return Vec::new();
    };
    let mut out = vec![
        Line::styled(c.name.clone(), theme.title),
        Line::styled(c.definition.clone(), theme.text),
        Line::raw(""),
    ];
    match &c.guidelines {
        Some(g) => out.extend(g.lines().map(|l| Line::styled(l.to_string(), theme.text))),
        None => out.push(Line::styled(
            "The rubric gives no guidelines for this criterion.",
            theme.muted,
        )),
    }
    for (n, e) in c.examples.iter().enumerate() {
        out.push(Line::raw(""));
        out.push(Line::from(vec![
            Span::styled(format!("Example {}: ", n + 1), theme.title),
            Span::styled(e.label.clone(), theme.selected),
        ]));
        out.extend(
            e.text
                .lines()
                .map(|l| Line::styled(format!("  {l}"), theme.text)),
        );
        if !e.why.is_empty() {
            out.extend(
                e.why
                    .lines()
                    .map(|l| Line::styled(format!("  why: {l}"), theme.muted)),
            );
        }
    }
    out
}

/// Draw the overlay over `area` (four fifths of it, centred).
pub fn draw(f: &mut Frame, area: Rect, rubric: &Rubric, criterion: usize, theme: &Theme) {
    let [middle] = Layout::vertical([Constraint::Percentage(80)])
        .flex(Flex::Center)
        .areas(area);
    let [popup] = Layout::horizontal([Constraint::Percentage(80)])
        .flex(Flex::Center)
        .areas(middle);
    f.render_widget(Clear, popup);
    f.render_widget(
        Paragraph::new(lines(rubric, criterion, theme))
            .wrap(Wrap { trim: false })
            .block(theme.block(
                format!(" Guidelines · {} (i or esc: close) ", rubric.name),
                true,
            )),
        popup,
    );
}
