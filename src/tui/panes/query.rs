//! Query pane: type or pick a question, see the top-k with each chunk's dense rank,
//! sparse (BM25) rank and fused score (as a bar), the target chunk marked with its rank
//! in every list; alpha and method change the ranking instantly (the rank lists are
//! cached, only re-fused); open any chunk; step through the last evaluation's failures.
//! Retrieval itself runs as a background job; the newest query wins.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, List, ListItem, ListState, Paragraph, Row, Table, TableState, Wrap};

use crate::core::fusion::{FusedHit, Fusion, RRF_C, Scored};
use crate::core::retrieval::{Method, QueryLists};
use crate::core::text::{sanitize_for_terminal as clean, snippet};
use crate::service::retrieval::QueryTimings;
use crate::tui::action::Action;
use crate::tui::effect::Effect;
use crate::tui::input::TextInput;
use crate::tui::panes::PaneView;
use crate::tui::theme::Theme;

pub use crate::core::question::Question;

/// A typed question: no known target; its id is derived from its text (FNV-1a), so
/// answers to different typed questions never share an id and the same text keeps
/// its id across regenerations.
pub fn typed_question(text: String) -> Question {
    let hash = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    Question {
        id: format!("typed-{hash:016x}"),
        text,
        ..Question::default()
    }
}

/// A target chunk and its rank in the dense, BM25 and current lists.
pub type TargetRanks = (String, Option<usize>, Option<usize>, Option<usize>);

/// One displayed result row.
#[derive(Debug, Clone)]
pub struct ResultRow {
    pub id: String,
    pub path: String,
    pub snippet: String,
    pub hit: FusedHit,
    pub is_target: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Questions,
    Results,
}

/// Chunk lookups the pane needs, resolved by the caller (the retriever's chunks).
pub type ChunkInfo = std::collections::HashMap<String, (String, String)>;

pub struct QueryPane {
    pub questions: Vec<Question>,
    pub failures: Vec<Question>,
    pub failure_pos: Option<usize>,
    pub question_sel: usize,
    /// The question box: a typed question, or the text of the question shown.
    pub input: TextInput,
    pub method: Method,
    pub alpha: f64,
    pub k: usize,
    pub focus: Focus,
    pub result_sel: usize,
    pub open_chunk: bool,
    /// The question whose results are shown (its targets).
    pub current: Option<Question>,
    pub lists: Option<QueryLists>,
    pub timings: QueryTimings,
    pub rows: Vec<ResultRow>,
    /// Where the targets sit in each list (recomputed with the ranking, not per frame).
    pub targets: Vec<TargetRanks>,
    pub busy: bool,
    pub ticket: u64,
    pub status: Option<String>,
    /// (path label, text) of each chunk id, sanitized once.
    pub chunks: ChunkInfo,
}

impl QueryPane {
    pub fn new(questions: Vec<Question>, failures: Vec<Question>, chunks: ChunkInfo) -> Self {
        Self {
            questions,
            failures,
            failure_pos: None,
            question_sel: 0,
            input: TextInput::default(),
            method: Method::Hybrid,
            alpha: crate::core::retrieval::Alpha::DEFAULT.get(),
            k: 15,
            focus: Focus::Questions,
            result_sel: 0,
            open_chunk: false,
            current: None,
            lists: None,
            timings: QueryTimings::default(),
            rows: Vec::new(),
            targets: Vec::new(),
            busy: false,
            ticket: 0,
            status: None,
            chunks,
        }
    }

    /// Ask for retrieval of `q`; any older request is superseded by the new ticket.
    pub fn submit(&mut self, q: Question) -> Option<Effect> {
        if q.text.trim().is_empty() {
            self.status = Some("empty question".into());
            return None;
        }
        self.ticket += 1;
        self.busy = true;
        self.input.set(&q.text);
        let text = q.text.clone();
        self.current = Some(q);
        Some(Effect::Search {
            ticket: self.ticket,
            text,
        })
    }

    /// A finished job; results of superseded tickets are dropped.
    pub fn on_result(&mut self, ticket: u64, result: Result<(QueryLists, QueryTimings), String>) {
        if ticket != self.ticket {
            return;
        }
        self.busy = false;
        match result {
            Ok((lists, timings)) => {
                self.lists = Some(lists);
                self.timings = timings;
                self.result_sel = 0;
                self.status = None;
                self.refuse();
            }
            Err(e) => self.status = Some(e),
        }
    }

    /// The fusion of the current method; single-list methods show the hybrid fused
    /// score beside their own ranks.
    fn fusion(&self) -> Fusion {
        self.method.fusion(self.alpha).unwrap_or(Fusion::Rrf {
            alpha: self.alpha,
            c: RRF_C,
        })
    }

    /// Recompute the displayed ranking from the cached lists (no retrieval).
    pub fn refuse(&mut self) {
        let Some(lists) = &self.lists else { return };
        let fused = lists.candidates.fuse(self.fusion());
        let targets: Vec<String> = self
            .current
            .as_ref()
            .map(|q| q.relevant.clone())
            .unwrap_or_default();
        let single = |list: &[Scored]| -> Vec<FusedHit> {
            list.iter()
                .map(|s| {
                    fused
                        .iter()
                        .find(|h| h.id == s.id)
                        .cloned()
                        .unwrap_or_else(|| FusedHit::unranked(&s.id))
                })
                .collect()
        };
        let order: Vec<FusedHit> = match self.method {
            Method::Hybrid | Method::Linear => fused.clone(),
            Method::Dense => single(&lists.dense),
            Method::Bm25 => single(&lists.bm25),
            Method::Tfidf => single(&lists.tfidf),
        };
        self.rows = order
            .into_iter()
            .take(self.k)
            .map(|hit| {
                let (path, text) = self.chunks.get(&hit.id).cloned().unwrap_or_default();
                ResultRow {
                    id: clean(&hit.id),
                    path,
                    snippet: snippet(&text, 80),
                    is_target: targets.contains(&hit.id),
                    hit,
                }
            })
            .collect();
        self.result_sel = self.result_sel.min(self.rows.len().saturating_sub(1));
        self.targets = self.target_ranks();
    }

    /// Where each target chunk sits in every list (1-based), for the target line.
    pub fn target_ranks(&self) -> Vec<TargetRanks> {
        let (Some(q), Some(lists)) = (&self.current, &self.lists) else {
            return Vec::new();
        };
        let ids = lists.ranking(self.method, self.alpha);
        q.relevant
            .iter()
            .map(|t| {
                let pos = |l: &[Scored]| l.iter().position(|s| &s.id == t).map(|i| i + 1);
                (
                    t.clone(),
                    pos(&lists.dense),
                    pos(&lists.bm25),
                    ids.iter().position(|i| i == t).map(|i| i + 1),
                )
            })
            .collect()
    }

    fn step_failure(&mut self, delta: isize) -> Option<Effect> {
        if self.failures.is_empty() {
            self.status = Some("no failed queries: run `raglab eval retrieval` first".into());
            return None;
        }
        let n = self.failures.len();
        let next = match self.failure_pos {
            None => {
                if delta > 0 {
                    0
                } else {
                    n - 1
                }
            }
            Some(p) => (p as isize + delta).rem_euclid(n as isize) as usize,
        };
        self.failure_pos = Some(next);
        let q = self.failures[next].clone();
        self.submit(q)
    }

    /// The question box, the method line and the timings (or the status).
    fn draw_header(&self, f: &mut Frame, input_area: Rect, info_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let busy = if self.busy { " (searching…)" } else { "" };
        f.render_widget(
            Paragraph::new(self.input.line(theme.text)).block(block(
                format!(" Question{busy} (/ type, enter run) "),
                self.input.is_active(),
            )),
            input_area,
        );
        let formula = match self.method {
            Method::Linear => "linear: w·minmax(dense) + (1-w)·minmax(bm25)".to_string(),
            _ => "R(d;a) = a/(60+r_dense) + (1-a)/(60+r_sparse)".to_string(),
        };
        let failure = match self.failure_pos {
            Some(p) => format!("  failure {}/{}", p + 1, self.failures.len()),
            None if !self.failures.is_empty() => {
                format!("  {} failures (n/p)", self.failures.len())
            }
            None => String::new(),
        };
        let t = &self.timings;
        f.render_widget(
            Paragraph::new(vec![
                Line::from(vec![
                    Span::styled(format!(" method {}  a = {:.2}  ", self.method, self.alpha), theme.title),
                    Span::styled(formula, theme.muted),
                    Span::styled(failure, theme.filter),
                ]),
                Line::styled(
                    match &self.status {
                        Some(s) => format!(" {}", clean(s)),
                        None => format!(
                            " embed {:.1} ms · dense {:.2} ms · bm25 {:.2} ms · tfidf {:.2} ms · fusion {:.3} ms",
                            t.embed_ms, t.dense_ms, t.bm25_ms, t.tfidf_ms, t.fusion_ms
                        ),
                    },
                    if self.status.is_some() { theme.error } else { theme.muted },
                ),
            ]),
            info_area,
        );
    }

    /// The question list of the questions file.
    fn draw_questions(&self, f: &mut Frame, left: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let items: Vec<ListItem> = self
            .questions
            .iter()
            .map(|q| ListItem::new(Line::styled(clean(&q.text), theme.text)))
            .collect();
        let mut state = ListState::default().with_selected(Some(self.question_sel));
        f.render_stateful_widget(
            List::new(items)
                .block(block(
                    format!(" Questions {} ", self.questions.len()),
                    self.focus == Focus::Questions,
                ))
                .highlight_style(theme.selected),
            left,
            &mut state,
        );
    }

    /// The top k with dense rank, BM25 rank and the fused score as a bar.
    fn draw_results(&self, f: &mut Frame, table_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let max = self.rows.iter().map(|r| r.hit.fused).fold(0.0f64, f64::max);
        let rank = |r: Option<usize>| r.map_or("-".to_string(), |r| r.to_string());
        let rows: Vec<Row> = self
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                let width = if max > 0.0 {
                    (r.hit.fused / max * 10.0).round() as usize
                } else {
                    0
                };
                let style = if r.is_target {
                    theme.target_chunk
                } else {
                    theme.text
                };
                Row::new(vec![
                    Line::styled(
                        format!("{}{}", if r.is_target { "▶" } else { " " }, i + 1),
                        style,
                    ),
                    Line::styled(rank(r.hit.dense_rank), theme.rank_dense),
                    Line::styled(rank(r.hit.sparse_rank), theme.rank_sparse),
                    Line::from(vec![
                        Span::styled("█".repeat(width), theme.score_bar),
                        Span::styled(format!(" {:.4}", r.hit.fused), theme.muted),
                    ]),
                    Line::styled(format!("{}  {}", r.id, r.path), style),
                ])
            })
            .collect();
        let header = Row::new(vec!["rank", "dense", "bm25", "fused", "chunk"]).style(theme.title);
        let mut tstate = TableState::default().with_selected(Some(self.result_sel));
        f.render_stateful_widget(
            Table::new(
                rows,
                [
                    Constraint::Length(5),
                    Constraint::Length(6),
                    Constraint::Length(5),
                    Constraint::Length(18),
                    Constraint::Min(10),
                ],
            )
            .header(header)
            .row_highlight_style(theme.selected)
            .block(block(
                format!(" Top {} ", self.k),
                self.focus == Focus::Results,
            )),
            table_area,
            &mut tstate,
        );
    }

    /// Where each target chunk sits in the dense, BM25 and current lists.
    fn draw_targets(&self, f: &mut Frame, target_area: Rect, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        let mut lines = Vec::new();
        let ranks = self.targets.clone();
        if ranks.is_empty() {
            lines.push(Line::styled(
                "no target chunk known for this question",
                theme.muted,
            ));
        }
        for (id, d, s, fr) in ranks {
            let show =
                |r: Option<usize>| r.map_or("not retrieved".to_string(), |r| format!("#{r}"));
            lines.push(Line::from(vec![
                Span::styled(format!("target {} ", clean(&id)), theme.target_chunk),
                Span::styled(format!(" dense {} ", show(d)), theme.rank_dense),
                Span::styled(format!(" bm25 {} ", show(s)), theme.rank_sparse),
                Span::styled(format!(" {} {}", self.method, show(fr)), theme.title),
            ]));
        }
        f.render_widget(
            Paragraph::new(lines).block(block(" Target ".into(), false)),
            target_area,
        );
    }

    /// The opened chunk, over everything (esc closes it).
    fn draw_open_chunk(&self, f: &mut Frame, theme: &Theme) {
        let block = |title: String, focused: bool| theme.block(title, focused);
        if self.open_chunk
            && let Some(r) = self.rows.get(self.result_sel)
        {
            let text = self
                .chunks
                .get(&r.hit.id)
                .map(|(_, t)| t.clone())
                .unwrap_or_default();
            let area = crate::tui::layout::centered(f.area(), 80, 80);
            f.render_widget(Clear, area);
            f.render_widget(
                Paragraph::new(
                    vec![
                        Line::styled(r.path.clone(), theme.header_path),
                        Line::raw(""),
                    ]
                    .into_iter()
                    .chain(
                        text.lines()
                            .map(|l| Line::styled(l.to_string(), theme.text)),
                    )
                    .collect::<Vec<_>>(),
                )
                .wrap(Wrap { trim: false })
                .block(block(format!(" {} (esc closes) ", r.id), true)),
                area,
            );
        }
    }

    /// Move the selection of the focused list by `d` rows.
    fn move_selection(&mut self, d: isize) {
        let (sel, n) = match self.focus {
            Focus::Questions => (&mut self.question_sel, self.questions.len()),
            Focus::Results => (&mut self.result_sel, self.rows.len()),
        };
        if n > 0 {
            *sel = sel.saturating_add_signed(d).min(n - 1);
        }
    }
}

impl PaneView for QueryPane {
    /// Apply an action; a new search is returned as an effect.
    fn update(&mut self, action: Action) -> Option<Effect> {
        if self.open_chunk {
            if matches!(action, Action::CloseOverlay | Action::OpenChunk) {
                self.open_chunk = false;
            }
            return None;
        }
        match action {
            Action::Down | Action::Up => {
                self.move_selection(if action == Action::Down { 1 } else { -1 });
            }
            Action::FocusLeft => self.focus = Focus::Questions,
            Action::FocusRight => self.focus = Focus::Results,
            Action::RunSelected => match self.focus {
                Focus::Questions => {
                    let q = self.questions.get(self.question_sel).cloned()?;
                    self.failure_pos = None;
                    return self.submit(q);
                }
                Focus::Results => self.open_chunk = !self.rows.is_empty(),
            },
            Action::OpenChunk => self.open_chunk = !self.rows.is_empty(),
            Action::StartFilter => self.input.open(),
            Action::SubmitInput => {
                let text = self.input.text().to_string();
                self.input.submit();
                // A typed question has no known target unless it matches a listed one.
                let q = self
                    .questions
                    .iter()
                    .find(|q| q.text == text)
                    .cloned()
                    .unwrap_or_else(|| typed_question(text));
                return self.submit(q);
            }
            Action::CancelInput => {
                self.input.cancel();
                if let Some(q) = &self.current {
                    self.input.set(&q.text);
                }
            }
            Action::InputBackspace => {
                self.input.backspace();
            }
            Action::AlphaUp | Action::AlphaDown => {
                let step = if action == Action::AlphaUp {
                    0.05
                } else {
                    -0.05
                };
                self.alpha = ((self.alpha + step) * 100.0).round().clamp(0.0, 100.0) / 100.0;
                self.refuse();
            }
            Action::CycleMethod => {
                let all = Method::ALL;
                let i = all.iter().position(|m| *m == self.method).unwrap_or(0);
                self.method = all[(i + 1) % all.len()];
                self.refuse();
            }
            Action::NextFailure => return self.step_failure(1),
            Action::PrevFailure => return self.step_failure(-1),
            _ => {}
        }
        None
    }

    fn draw(&self, f: &mut Frame, area: Rect, theme: &Theme) {
        let [input_area, info_area, body] = Layout::vertical([
            Constraint::Length(3),
            Constraint::Length(2),
            Constraint::Min(5),
        ])
        .areas(area);
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(32), Constraint::Percentage(68)])
                .areas(body);
        let [table_area, target_area] =
            Layout::vertical([Constraint::Min(5), Constraint::Length(4)]).areas(right);
        self.draw_header(f, input_area, info_area, theme);
        self.draw_questions(f, left, theme);
        self.draw_results(f, table_area, theme);
        self.draw_targets(f, target_area, theme);
        self.draw_open_chunk(f, theme);
    }

    fn editing(&self) -> bool {
        self.input.is_active()
    }

    fn input_char(&mut self, c: char) {
        self.input.push(c);
    }

    fn overlay_open(&self) -> bool {
        self.open_chunk
    }
}
