//! Corpus pane: documents with chunk counts, the chunks of the selected document with
//! header paths and word counts, the chunk text (scrollable) with its token count and,
//! beside it, its LLM summary (`raglab summarise`), a filter over titles and header
//! paths, and a histogram of chunk lengths.

use std::collections::HashMap;
use std::sync::Arc;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Bar, BarChart, BarGroup, List, ListItem, ListState, Paragraph, Wrap};

use crate::core::chunk::Chunk;
use crate::core::stats::length_histogram;
use crate::core::text::sanitize_for_terminal as clean;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

const PAGE: usize = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CorpusFocus {
    Documents,
    Chunks,
    Text,
}

/// A chunk as displayed: every string already sanitized, once, at load time. The
/// header path and text are shared with the Query pane (one copy of a large corpus).
#[derive(Debug, Clone)]
pub struct ChunkView {
    pub id: String,
    pub path: Arc<str>,
    pub text: Arc<str>,
    pub words: usize,
    pub chunk: Chunk,
}

impl ChunkView {
    /// `chunk` as displayed, its strings sanitized.
    pub fn of(chunk: Chunk) -> Self {
        Self {
            id: clean(&chunk.id),
            path: clean(&chunk.path_label()).into(),
            text: clean(&chunk.text).into(),
            words: chunk.word_count,
            chunk,
        }
    }
}

#[derive(Debug, Clone)]
pub struct DocView {
    pub doc_id: String,
    pub title: String,
    pub chunks: Vec<usize>,
}

#[derive(Debug)]
pub struct CorpusPane {
    chunks: Vec<ChunkView>,
    docs: Vec<DocView>,
    /// The filter over titles and header paths (`/`).
    filter: TextInput,
    /// Visible documents (index into `docs`) with their visible chunks.
    visible: Vec<(usize, Vec<usize>)>,
    /// Length histogram of the visible chunks (recomputed with the filter, not per frame).
    histogram: Vec<(String, usize)>,
    doc_sel: usize,
    chunk_sel: usize,
    text_scroll: u16,
    focus: CorpusFocus,
    /// Chunk id -> its summary, sanitized (C_S and C_R index these).
    summaries: HashMap<String, String>,
    /// A note under the panes (the first screen a newcomer sees): its title and lines,
    /// sanitized. The TUI sets it when answers come from the tiny model setup ships.
    note: Option<(String, Vec<String>)>,
}

impl CorpusPane {
    /// Every chunk, ordered by document and position in it.
    pub fn chunks(&self) -> &[ChunkView] {
        &self.chunks
    }

    /// The documents, each with its chunks (indices into [`Self::chunks`]).
    pub fn docs(&self) -> &[DocView] {
        &self.docs
    }

    /// The filter as typed.
    pub fn filter_text(&self) -> &str {
        self.filter.text()
    }

    /// The documents the filter shows (indices into [`Self::docs`]), each with its
    /// shown chunks.
    pub fn visible(&self) -> &[(usize, Vec<usize>)] {
        &self.visible
    }

    /// How far the chunk's text is scrolled, in lines.
    pub fn text_scroll(&self) -> u16 {
        self.text_scroll
    }

    /// How many chunks have a summary.
    pub fn summary_count(&self) -> usize {
        self.summaries.len()
    }

    /// Show a note under the panes (title and lines; sanitized here), or none.
    pub fn set_note(&mut self, note: Option<(String, Vec<String>)>) {
        self.note =
            note.map(|(title, lines)| (clean(&title), lines.iter().map(|l| clean(l)).collect()));
    }

    /// Show these summaries (chunk id -> summary text) beside the chunks' text.
    pub fn set_summaries(&mut self, summaries: HashMap<String, String>) {
        self.summaries = summaries
            .into_iter()
            .map(|(id, s)| (id, clean(&s)))
            .collect();
    }

    /// The selected chunk's summary, if it has one.
    pub fn selected_summary(&self) -> Option<&str> {
        let c = self.selected_chunk()?;
        self.summaries.get(&c.chunk.id).map(String::as_str)
    }

    pub fn new(chunks: Vec<Chunk>) -> Self {
        let mut views: Vec<ChunkView> = chunks.into_iter().map(ChunkView::of).collect();
        views.sort_by(|a, b| {
            a.chunk
                .doc_id
                .cmp(&b.chunk.doc_id)
                .then(a.chunk.ordinal.cmp(&b.chunk.ordinal))
        });
        let mut docs: Vec<DocView> = Vec::new();
        for (i, v) in views.iter().enumerate() {
            match docs.last_mut() {
                Some(d) if d.doc_id == v.chunk.doc_id => d.chunks.push(i),
                _ => docs.push(DocView {
                    doc_id: v.chunk.doc_id.clone(),
                    title: clean(&v.chunk.title),
                    chunks: vec![i],
                }),
            }
        }
        let mut pane = Self {
            chunks: views,
            docs,
            filter: TextInput::default(),
            visible: Vec::new(),
            histogram: Vec::new(),
            doc_sel: 0,
            chunk_sel: 0,
            text_scroll: 0,
            focus: CorpusFocus::Documents,
            summaries: HashMap::new(),
            note: None,
        };
        pane.apply_filter();
        pane
    }

    /// Recompute the visible documents and chunks. A document matches when its title
    /// does (all its chunks shown) or when some of its chunks' header paths do (only
    /// those shown). Case-insensitive substring match.
    pub fn apply_filter(&mut self) {
        let needle = self.filter.text().to_lowercase();
        self.visible = self
            .docs
            .iter()
            .enumerate()
            .filter_map(|(d, doc)| {
                if needle.is_empty() || doc.title.to_lowercase().contains(&needle) {
                    return Some((d, doc.chunks.clone()));
                }
                let hits: Vec<usize> = doc
                    .chunks
                    .iter()
                    .copied()
                    .filter(|&c| self.chunks[c].path.to_lowercase().contains(&needle))
                    .collect();
                (!hits.is_empty()).then_some((d, hits))
            })
            .collect();
        let shown = self
            .visible
            .iter()
            .flat_map(|(_, cs)| cs.iter().map(|&c| &self.chunks[c].chunk));
        self.histogram = length_histogram(shown);
        self.doc_sel = self.doc_sel.min(self.visible.len().saturating_sub(1));
        self.chunk_sel = 0;
        self.text_scroll = 0;
    }

    /// The filter box over titles and header paths.
    fn draw_filter(&self, f: &mut Frame, filter_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let filter_title = if self.editing() {
            " Filter (enter/esc) "
        } else {
            " Filter (/) "
        };
        f.render_widget(
            Paragraph::new(self.filter.line(theme.filter))
                .block(block(filter_title.into(), self.editing())),
            filter_area,
        );
    }

    /// Documents with their (matching) chunk counts.
    fn draw_documents(&self, f: &mut Frame, docs_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let doc_items: Vec<ListItem> = self
            .visible
            .iter()
            .map(|(d, cs)| {
                let doc = &self.docs[*d];
                let count = if cs.len() == doc.chunks.len() {
                    format!("{:>3}", cs.len())
                } else {
                    format!("{}/{}", cs.len(), doc.chunks.len())
                };
                ListItem::new(Line::from(vec![
                    Span::styled(format!("{count} "), theme.muted),
                    Span::styled(doc.title.clone(), theme.text),
                ]))
            })
            .collect();
        let docs_title = format!(" Documents {}/{} ", self.visible.len(), self.docs.len());
        let mut state = ListState::default().with_selected(Some(self.doc_sel));
        f.render_stateful_widget(
            List::new(doc_items)
                .block(block(docs_title, self.focus == CorpusFocus::Documents))
                .highlight_style(theme.selected),
            docs_area,
            &mut state,
        );
    }

    /// The chunks of the selected document with header paths and word counts.
    fn draw_chunks(&self, f: &mut Frame, mid: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let chunk_items: Vec<ListItem> = self
            .visible
            .get(self.doc_sel)
            .map(|(_, cs)| {
                cs.iter()
                    .map(|&c| {
                        let v = &self.chunks[c];
                        ListItem::new(Line::from(vec![
                            Span::styled(format!("{:>5}w ", v.words), theme.muted),
                            Span::styled(v.path.to_string(), theme.header_path),
                        ]))
                    })
                    .collect()
            })
            .unwrap_or_default();
        let mut state = ListState::default().with_selected(Some(self.chunk_sel));
        f.render_stateful_widget(
            List::new(chunk_items)
                .block(block(" Chunks ".into(), self.focus == CorpusFocus::Chunks))
                .highlight_style(theme.selected),
            mid,
            &mut state,
        );
    }

    /// The selected chunk's text, scrollable.
    fn draw_text(&self, f: &mut Frame, text_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let (title, body) = match self.selected_chunk() {
            Some(v) => (
                format!(" {} ", v.id),
                vec![
                    Line::styled(v.path.to_string(), theme.header_path),
                    Line::styled(
                        format!(
                            "{} words · {} · bytes {}..{}",
                            v.words,
                            token_label(&v.chunk),
                            v.chunk.byte_start,
                            v.chunk.byte_end
                        ),
                        theme.muted,
                    ),
                    Line::raw(""),
                ]
                .into_iter()
                .chain(
                    v.text
                        .lines()
                        .map(|l| Line::styled(l.to_string(), theme.text)),
                )
                .collect::<Vec<_>>(),
            ),
            None if self.docs.is_empty() => (
                " Text ".into(),
                vec![Line::styled(
                    "No chunks yet: run `raglab ingest PATH`.",
                    theme.muted,
                )],
            ),
            None => (
                " Text ".into(),
                vec![Line::styled("No match for the filter.", theme.muted)],
            ),
        };
        f.render_widget(
            Paragraph::new(body)
                .wrap(Wrap { trim: false })
                .scroll((self.text_scroll, 0))
                .block(block(title, self.focus == CorpusFocus::Text)),
            text_area,
        );
    }

    /// The selected chunk's summary, beside its text.
    fn draw_summary(&self, f: &mut Frame, area: Rect, theme: &Theme, summary: &str) {
        draw_wrapped(
            f,
            area,
            theme,
            " Summary (retrieval only) ",
            summary.lines(),
        );
    }

    /// Chunk lengths of what the filter shows.
    fn draw_histogram(&self, f: &mut Frame, hist_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let bars: Vec<Bar> = self
            .histogram
            .iter()
            .map(|(label, n)| {
                Bar::default()
                    .value(*n as u64)
                    .label(Line::from(label.clone()))
            })
            .collect();
        f.render_widget(
            BarChart::default()
                .block(block(" Chunk length (words) ".into(), false))
                .data(BarGroup::default().bars(&bars))
                .bar_width(6)
                .bar_gap(1)
                .bar_style(theme.histogram)
                .value_style(theme.selected),
            hist_area,
        );
    }

    pub fn selected_doc(&self) -> Option<&DocView> {
        self.visible.get(self.doc_sel).map(|(d, _)| &self.docs[*d])
    }

    pub fn selected_chunk(&self) -> Option<&ChunkView> {
        let (_, cs) = self.visible.get(self.doc_sel)?;
        cs.get(self.chunk_sel).map(|&c| &self.chunks[c])
    }

    fn visible_chunk_count(&self) -> usize {
        self.visible.get(self.doc_sel).map_or(0, |(_, c)| c.len())
    }

    fn move_by(&mut self, delta: isize) {
        let step = |cur: usize, len: usize| -> usize {
            if len == 0 {
                return 0;
            }
            cur.saturating_add_signed(delta).min(len - 1)
        };
        match self.focus {
            CorpusFocus::Documents => {
                let n = step(self.doc_sel, self.visible.len());
                if n != self.doc_sel {
                    self.doc_sel = n;
                    self.chunk_sel = 0;
                    self.text_scroll = 0;
                }
            }
            CorpusFocus::Chunks => {
                let n = step(self.chunk_sel, self.visible_chunk_count());
                if n != self.chunk_sel {
                    self.chunk_sel = n;
                    self.text_scroll = 0;
                }
            }
            CorpusFocus::Text => {
                self.text_scroll = self.text_scroll.saturating_add_signed(delta as i16);
            }
        }
    }
}

/// `523 tokens (all-MiniLM-L6-v2.F16)`, or that they are not counted yet.
fn token_label(c: &Chunk) -> String {
    match (c.token_count, &c.token_model) {
        (Some(n), Some(m)) => format!("{n} tokens ({})", clean(m)),
        (Some(n), None) => format!("{n} tokens"),
        _ => "tokens not counted".into(),
    }
}

/// Rows a bordered, wrapped note of `lines` takes at `width` columns.
fn note_height(lines: &[String], width: u16) -> u16 {
    let inner = usize::from(width.saturating_sub(2)).max(1);
    let rows: usize = lines
        .iter()
        .map(
            |l| match unicode_width::UnicodeWidthStr::width(l.as_str()) {
                w if w <= inner => 1,
                // Wrapping at words can take one row more than the width alone.
                w => w.div_ceil(inner) + 1,
            },
        )
        .sum();
    u16::try_from(rows + 2).unwrap_or(u16::MAX)
}

/// Lines of text, wrapped, in a box titled `title`.
fn draw_wrapped<'a>(
    f: &mut Frame,
    area: Rect,
    theme: &Theme,
    title: &str,
    lines: impl Iterator<Item = &'a str>,
) {
    let body: Vec<Line> = lines
        .map(|l| Line::styled(l.to_string(), theme.text))
        .collect();
    f.render_widget(
        Paragraph::new(body)
            .wrap(Wrap { trim: false })
            .block(theme.block(title.to_string(), false)),
        area,
    );
}

impl PaneView for CorpusPane {
    /// Handle an action aimed at this pane (browsing has no effects).
    fn update(&mut self, action: Action) -> Option<Effect> {
        let big = isize::MAX / 2;
        match action {
            Action::Down => self.move_by(1),
            Action::Up => self.move_by(-1),
            Action::PageDown => self.move_by(PAGE as isize),
            Action::PageUp => self.move_by(-(PAGE as isize)),
            Action::Top => self.move_by(-big),
            Action::Bottom => self.move_by(big),
            Action::FocusRight => {
                self.focus = match self.focus {
                    CorpusFocus::Documents => CorpusFocus::Chunks,
                    _ => CorpusFocus::Text,
                }
            }
            Action::FocusLeft => {
                self.focus = match self.focus {
                    CorpusFocus::Text => CorpusFocus::Chunks,
                    _ => CorpusFocus::Documents,
                }
            }
            Action::StartFilter => {
                let kept = self.filter.text().to_string();
                self.filter.open_with(&kept);
            }
            Action::ClearFilter => {
                self.filter.clear();
                self.apply_filter();
            }
            Action::SubmitInput => {
                self.filter.submit();
            }
            Action::CancelInput => {
                self.filter.cancel();
                self.apply_filter();
            }
            Action::InputBackspace => {
                self.filter.backspace();
                self.apply_filter();
            }
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let area = match &self.note {
            Some(note) => {
                let height = note_height(&note.1, area.width);
                let [main, below] =
                    Layout::vertical([Constraint::Min(8), Constraint::Length(height)]).areas(area);
                draw_wrapped(
                    f,
                    below,
                    theme,
                    &format!(" {} ", note.0),
                    note.1.iter().map(String::as_str),
                );
                main
            }
            None => area,
        };
        let [left, mid, right] = Layout::horizontal([
            Constraint::Percentage(30),
            Constraint::Percentage(30),
            Constraint::Percentage(40),
        ])
        .areas(area);
        let [filter_area, docs_area] =
            Layout::vertical([Constraint::Length(3), Constraint::Min(3)]).areas(left);
        let [text_area, hist_area] =
            Layout::vertical([Constraint::Min(5), Constraint::Length(9)]).areas(right);
        self.draw_filter(f, filter_area, theme);
        self.draw_documents(f, docs_area, theme);
        self.draw_chunks(f, mid, theme);
        match self.selected_summary() {
            Some(summary) => {
                let [text, side] =
                    Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                        .areas(text_area);
                self.draw_text(f, text, theme);
                self.draw_summary(f, side, theme, summary);
            }
            None => self.draw_text(f, text_area, theme),
        }
        self.draw_histogram(f, hist_area, theme);
    }

    /// Whether the filter box takes the keys.
    fn editing(&self) -> bool {
        self.filter.is_active()
    }

    /// Typed text while the filter box is being edited.
    fn input_char(&mut self, c: char) {
        self.filter.push(c);
        self.apply_filter();
    }
}

#[cfg(test)]
mod tests;
