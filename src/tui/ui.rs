//! Drawing: a pure function of the app state. No IO, no locks, no awaits.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Clear, Paragraph, Tabs};
use unicode_width::UnicodeWidthStr;

use super::app::{App, Layer, Pane};
use super::theme::Theme;
use crate::core::text::sanitize_for_terminal as clean;

pub fn draw(app: &App, f: &mut Frame, theme: &Theme) {
    let [tabs_area, body, status] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(f.area());
    let titles: Vec<Line> = Pane::ALL
        .iter()
        .enumerate()
        .map(|(i, p)| Line::from(format!(" {} {} ", i + 1, p.title())))
        .collect();
    let selected = Pane::ALL.iter().position(|p| *p == app.pane).unwrap_or(0);
    f.render_widget(
        Tabs::new(titles)
            .select(selected)
            .style(theme.tab)
            .highlight_style(theme.tab_active)
            .divider(" "),
        tabs_area,
    );

    app.view().draw(f, body, theme);

    draw_status(app, f, status, theme);
    if app.layer() == Layer::Help {
        draw_help(app, f, theme);
    }
    scrub(f.buffer_mut());
}

/// A step of opening a workspace, for the screen shown while the TUI reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opening {
    /// What is being read or built, e.g. "reading the chunks".
    pub step: &'static str,
    /// Chunks read so far and in all (`total` 0: not counted in this step).
    pub done: usize,
    pub total: usize,
}

/// The screen shown while a workspace opens: where, which step, how many chunks read.
pub fn draw_opening(f: &mut Frame, theme: &Theme, workspace: &str, o: &Opening) {
    let area = f.area();
    let progress = if o.total > 0 {
        format!(
            "{}: {} of {} ({}%)",
            o.step,
            thousands(o.done),
            thousands(o.total),
            o.done * 100 / o.total
        )
    } else {
        format!("{}…", o.step)
    };
    let lines = vec![
        Line::from(Span::styled(
            format!("Opening {}", clean(workspace)),
            theme.title,
        )),
        Line::from(""),
        Line::from(progress),
    ];
    let height = (lines.len() as u16).min(area.height);
    let [_, middle, _] = Layout::vertical([
        Constraint::Fill(1),
        Constraint::Length(height),
        Constraint::Fill(1),
    ])
    .areas(area);
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).alignment(ratatui::layout::Alignment::Center),
        middle,
    );
    scrub(f.buffer_mut());
}

/// What `pane` draws on a `width` x `height` screen in the dark theme, one line per
/// row: for the panes' tests that read their screen.
#[cfg(test)]
pub fn pane_screen(pane: &dyn crate::tui::panes::PaneView, width: u16, height: u16) -> String {
    let backend = ratatui::backend::TestBackend::new(width, height);
    let mut term = ratatui::Terminal::new(backend).expect("terminal");
    let theme = crate::tui::theme::Theme::builtin("dark").expect("theme");
    let frame = term.draw(|f| pane.draw(f, f.area(), &theme)).expect("draw");
    buffer_text(frame.buffer)
}

/// What `buf` shows, one line per row: for tests that read a screen.
pub fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    (0..buf.area.height)
        .map(|y| {
            (0..buf.area.width)
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `1234567` as `1,234,567`.
fn thousands(n: usize) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The last line of defence: every cell of the frame passes through the one
/// sanitiser, so no escape, control or bidi character can reach the terminal, even
/// from a string a pane forgot to clean (panes clean their text when they load it, so
/// the payload of an escape sequence is removed too, not only its control bytes).
pub fn scrub(buf: &mut ratatui::buffer::Buffer) {
    use crate::core::text::{is_terminal_safe, sanitize_for_terminal};
    for cell in &mut buf.content {
        if !is_terminal_safe(cell.symbol()) {
            let clean = sanitize_for_terminal(cell.symbol()).replace(['\n', '\t'], " ");
            cell.set_symbol(if clean.is_empty() { " " } else { &clean });
        }
    }
}

fn draw_status(app: &App, f: &mut Frame, area: Rect, theme: &Theme) {
    let mut spans = vec![Span::styled(
        format!(" {} ", clean(&app.context_line)),
        theme.status_bar,
    )];
    if let Some(m) = &app.message {
        spans.push(Span::styled(format!(" {} ", clean(m)), theme.error));
    }
    let hints = match app.layer() {
        Layer::Input => " enter apply  esc cancel ",
        Layer::Help => " esc close ",
        Layer::Pane(_) => " ? help  tab pane  q quit ",
    };
    // Display width, not chars: a CJK title or an emoji takes two cells.
    let used: usize = spans.iter().map(|s| s.content.width()).sum();
    let pad = usize::from(area.width).saturating_sub(used + hints.width());
    spans.push(Span::styled(" ".repeat(pad), theme.status_bar));
    spans.push(Span::styled(hints, theme.status_key));
    f.render_widget(
        Paragraph::new(Line::from(spans)).style(theme.status_bar),
        area,
    );
}

fn draw_help(app: &App, f: &mut Frame, theme: &Theme) {
    let mut sections = vec![
        ("Everywhere", "global"),
        (app.pane.title(), app.pane.section()),
    ];
    if app.pane == Pane::Query {
        sections.push(("Failures browser (f)", "failures"));
        sections.push(("Answers of the question (A)", "answers"));
        sections.push(("Opened chunk", "overlay"));
        sections.push(("Grading the selected chunk (a, as --reviewer)", "grade"));
        sections.push(("Relevance assessment view (G, as --reviewer)", "assess"));
    }
    if app.pane == Pane::Generate {
        sections.push(("Compare answer runs: picking (c)", "runs_pick"));
        sections.push(("Compare answer runs: the view", "runs_compare"));
    }
    let labelling = matches!(app.pane, Pane::Annotate | Pane::Agreement);
    let label_keys = if labelling {
        rubric_label_keys(app.annotate.shown_rubric())
    } else {
        Vec::new()
    };
    let mut lines = if labelling {
        label_key_lines(app.annotate.shown_rubric(), &label_keys, theme)
    } else {
        Vec::new()
    };
    for (heading, section) in sections {
        let rows = app.keymap.help_rows(section);
        if rows.is_empty() {
            continue;
        }
        lines.push(Line::styled(heading.to_string(), theme.title));
        for (keys, mut desc) in rows {
            let shadowed = section == app.pane.section()
                && keys.split(", ").any(|k| {
                    let mut c = k.chars();
                    matches!((c.next(), c.next()), (Some(ch), None) if label_keys.iter().any(|(lk, _)| *lk == ch))
                });
            if shadowed {
                desc.push_str(" (a label key takes this key here)");
            }
            lines.push(Line::from(vec![
                Span::styled(format!("  {keys:<18}"), theme.status_key),
                Span::styled(desc, theme.text),
            ]));
        }
        lines.push(Line::raw(""));
    }
    lines.push(Line::styled(
        "Keys come from assets/keymap.toml; override them in CONFIG_DIR/keymap.toml.",
        theme.muted,
    ));
    let area = super::layout::centered(f.area(), 70, 80);
    f.render_widget(Clear, area);
    f.render_widget(
        Paragraph::new(lines).scroll((app.help_scroll, 0)).block(
            Block::bordered()
                .title(" Help ")
                .border_style(theme.focused_border),
        ),
        area,
    );
}

/// The label keys of the rubric (they win over the pane's bindings while labelling),
/// one per label, sorted.
fn rubric_label_keys(rubric: &crate::core::rubric::Rubric) -> Vec<(char, String)> {
    let mut v: Vec<(char, String)> = rubric
        .criteria
        .iter()
        .flat_map(|c| rubric.labels_of(c).iter())
        .map(|l| (rubric.key_of(l), l.clone()))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The help's first section while labelling: the rubric and its label keys.
fn label_key_lines<'a>(
    rubric: &crate::core::rubric::Rubric,
    label_keys: &[(char, String)],
    theme: &Theme,
) -> Vec<Line<'a>> {
    let mut lines = vec![Line::styled(
        format!(
            "Labels of rubric {} v{} ({} criteria; 1-{} pick one)",
            clean(&rubric.name),
            clean(&rubric.version),
            rubric.criteria.len(),
            rubric.criteria.len().min(9)
        ),
        theme.title,
    )];
    for (k, l) in label_keys {
        lines.push(Line::from(vec![
            Span::styled(format!("  {k:<18}"), theme.status_key),
            Span::styled(format!("label {l}"), theme.text),
        ]));
    }
    lines.push(Line::raw(""));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::Terminal;
    use ratatui::backend::TestBackend;

    /// The opening screen of `step` with `done` of `total` chunks read.
    fn screen(step: &'static str, done: usize, total: usize, workspace: &str) -> String {
        let o = Opening { step, done, total };
        let mut term = Terminal::new(TestBackend::new(70, 9)).expect("terminal");
        let theme = Theme::builtin("dark").expect("theme");
        let frame = term
            .draw(|f| draw_opening(f, &theme, workspace, &o))
            .expect("draw");
        buffer_text(frame.buffer)
    }

    #[test]
    fn the_opening_screen_says_where_which_step_and_how_far() {
        let s = screen(
            "reading the chunks",
            420_000,
            1_000_000,
            "/data/ws\u{1b}[31m",
        );
        assert!(s.contains("Opening /data/ws"), "{s}");
        assert!(!s.contains('\u{1b}'), "escapes scrubbed: {s}");
        assert!(
            s.contains("reading the chunks: 420,000 of 1,000,000 (42%)"),
            "{s}"
        );
        let s = screen("reading the summaries", 0, 0, "/data/ws");
        assert!(s.contains("reading the summaries…"), "{s}");
        assert!(!s.contains("of 0"), "{s}");
    }

    #[test]
    fn thousands_groups_digits_by_three() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(261), "261");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }
}
