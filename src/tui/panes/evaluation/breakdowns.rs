//! The lower boxes of the Evaluation pane, each a breakdown of one evaluation:
//! the selected configuration by topic or target length, MCQA
//! accuracy by k and by target rank, and the judge's pass rates by target-rank
//! bucket, each with the paper's values or findings beside them.

use ratatui::Frame;
use ratatui::layout::{Constraint, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Row, Table, Wrap};

use crate::core::mcqa::Accuracy;
use crate::core::paper;
use crate::core::stats::bucket_lower_bound;
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::evaluate::MethodResult;
use crate::service::evaluate::{BUCKETS, EvalOverview};
use crate::tui::theme::Theme;

/// What to run when there is nothing to show: (what it produces, the command).
pub const HOW_TO: [(&str, &str); 3] = [
    (
        "retrieval",
        "raglab eval retrieval --queries sample-data/questions.jsonl --alpha-sweep --methods bm25,tfidf,dense,hybrid,linear",
    ),
    (
        "MCQA",
        "raglab eval mcqa --questions FILE (docs/methods.md: Multiple-choice accuracy)",
    ),
    (
        "judge",
        "raglab generate --questions FILE --run RUN, then raglab judge",
    ),
];

/// nDCG@10 per topic (or target-length bucket) of one configuration, with its eta^2
/// and the paper's.
pub fn draw_breakdown(
    f: &mut Frame,
    area: Rect,
    r: &MethodResult,
    by_length: bool,
    scroll: usize,
    theme: &Theme,
) {
    let b = if by_length {
        &r.by_target_length
    } else {
        &r.by_topic
    };
    let mut groups: Vec<(&String, &crate::core::metrics::MeanMetrics)> = b.groups.iter().collect();
    if by_length {
        groups.sort_by_key(|(g, _)| bucket_lower_bound(g));
    }
    let reference = if by_length {
        paper::LENGTH_NOTE
    } else {
        paper::TOPIC_ETA2_SOURCE
    };
    let width = usize::from(area.width.saturating_sub(40)).max(4);
    let mut lines = vec![
        Line::styled(
            format!(
                "η² of nDCG@10 = {} · paper: {reference}",
                b.eta_squared_ndcg10
                    .map_or_else(|| "undefined".into(), |e| format!("{e:.4}"))
            ),
            theme.title,
        ),
        Line::styled(
            format!(
                "{:<22} {:>4} {:>7}",
                if by_length { "words" } else { "topic" },
                "n",
                "nDCG@10"
            ),
            theme.muted,
        ),
    ];
    for (g, m) in groups.iter().skip(scroll) {
        let bar = "█".repeat((m.ndcg10 * width as f64).round() as usize);
        lines.push(Line::from(vec![
            Span::styled(
                format!(
                    "{:<22} {:>4} {:>7.4} ",
                    clean(&crate::core::text::snippet(g, 22)),
                    m.queries,
                    m.ndcg10
                ),
                theme.text,
            ),
            Span::styled(bar, theme.score_bar),
        ]));
    }
    f.render_widget(
        Paragraph::new(lines).block(theme.block(
            format!(
                " {} · {} groups · by {} (t) ",
                clean(&r.label),
                b.groups.len(),
                if by_length { "target length" } else { "topic" }
            ),
            false,
        )),
        area,
    );
}

/// Rows the MCQA box takes: borders, header, one per k, the CV and the paper's notes.
pub fn mcqa_height(o: &EvalOverview) -> u16 {
    o.mcqa.as_ref().map_or(3, |s| {
        s.report.report.by_k.len() as u16 + 4 + paper::MCQA_NOTES.len() as u16
    })
}

/// Rows the judge box takes: borders, header, one per criterion, two notes.
pub fn judge_height(o: &EvalOverview) -> u16 {
    o.judge.as_ref().map_or(3, |j| j.rows.len() as u16 + 5)
}

/// Rows the citations box takes: none without scored citations, else borders, header
/// and one per (run, judge).
pub fn citations_height(o: &EvalOverview) -> u16 {
    if o.citations.is_empty() {
        0
    } else {
        o.citations.len() as u16 + 3
    }
}

/// Citation recall and precision per run and entailment judge (`answers cite`), the
/// numbers of `report answers --json`: each mean over the answers where it is
/// defined, the undefined ones counted beside it, and the cited chunks that were not
/// in the prompt.
pub fn draw_citations(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    if o.citations.is_empty() {
        return;
    }
    let mean = |v: Option<f64>, undefined: usize| match v {
        Some(v) => format!("{v:.3} ({undefined} undef.)"),
        None => format!("undefined ({undefined})"),
    };
    let rows: Vec<Row> = o
        .citations
        .iter()
        .map(|c| {
            Row::new(vec![
                clean(&c.run),
                clean(&c.judge_model),
                c.scored.to_string(),
                mean(c.recall, c.recall_undefined),
                mean(c.precision, c.precision_undefined),
                c.citations.to_string(),
                c.outside_prompt.len().to_string(),
            ])
            .style(theme.text)
        })
        .collect();
    let header = Row::new(vec![
        "run",
        "entailment judge",
        "answers",
        "recall",
        "precision",
        "citations",
        "outside the prompt",
    ])
    .style(theme.title);
    let widths = [
        Constraint::Length(18),
        Constraint::Min(20),
        Constraint::Length(8),
        Constraint::Length(20),
        Constraint::Length(20),
        Constraint::Length(10),
        Constraint::Length(18),
    ];
    f.render_widget(
        Table::new(rows, widths).header(header).block(theme.block(
            " Citations (raglab answers cite): recall = sentences entailed by their citations, precision = citations needed ".to_string(),
            false,
        )),
        area,
    );
}

/// Rows the grounded box takes: none without grounded scores, else borders, header
/// and one per (run, judge).
pub fn grounded_height(o: &EvalOverview) -> u16 {
    if o.grounded.is_empty() {
        0
    } else {
        o.grounded.len() as u16 + 3
    }
}

/// Grounded means per run and judge (`answers ground`), the numbers of `report
/// answers --json`'s `grounded`: each mean over the answers where the metric is
/// defined, the undefined ones counted beside it.
pub fn draw_grounded(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    if o.grounded.is_empty() {
        return;
    }
    let rows: Vec<Row> = o
        .grounded
        .iter()
        .map(|g| {
            Row::new(vec![
                clean(&g.run),
                clean(&g.judge_model),
                g.answers.to_string(),
                g.faithfulness.cell(),
                g.context_precision.cell(),
                g.context_recall.cell(),
                g.answer_correctness.cell(),
            ])
            .style(theme.text)
        })
        .collect();
    let header = Row::new(vec![
        "run",
        "judge",
        "answers",
        "faithfulness",
        "ctx precision",
        "ctx recall",
        "correctness",
    ])
    .style(theme.title);
    let widths = [
        Constraint::Length(18),
        Constraint::Min(16),
        Constraint::Length(8),
        Constraint::Length(18),
        Constraint::Length(18),
        Constraint::Length(18),
        Constraint::Length(18),
    ];
    f.render_widget(
        Table::new(rows, widths).header(header).block(theme.block(
            " Grounded (raglab answers ground): means over defined values, (n undefined) beside ".to_string(),
            false,
        )),
        area,
    );
}

fn acc(a: &Accuracy) -> String {
    a.with_ci()
}

fn short(a: &Accuracy) -> String {
    a.short()
}

/// A box saying what is missing and which command produces it.
fn missing(f: &mut Frame, area: Rect, title: &str, text: String, theme: &Theme) {
    f.render_widget(
        Paragraph::new(text)
            .wrap(Wrap { trim: true })
            .style(theme.muted)
            .block(theme.block(title.to_string(), false)),
        area,
    );
}

/// MCQA accuracy per k (overall, target in / not in the prompt, rank 1 / 2+, per
/// rank), and the paper's findings.
pub fn draw_mcqa(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    let Some(saved) = &o.mcqa else {
        let text = format!("No MCQA evaluation yet: run `{}`", HOW_TO[1].1);
        return missing(f, area, " MCQA accuracy ", text, theme);
    };
    let s = &saved.report;
    let rows: Vec<Row> = s.report.by_k.iter().map(|k| mcqa_row(k, theme)).collect();
    let notes = mcqa_notes(&s.report, theme);
    let title = format!(
        " MCQA · run {} · {} · {} questions · {} a={} · written {} ",
        clean(&s.run),
        clean(s.model_file.as_deref().unwrap_or("-")),
        s.questions,
        clean(s.method.as_deref().unwrap_or("-")),
        s.alpha.map_or_else(|| "-".into(), |a| format!("{a:.2}")),
        clean(&saved.written_at)
    );
    let block = theme.block(title, false);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let table_h = (rows.len() as u16 + 1).min(inner.height.saturating_sub(notes.len() as u16));
    let [t, n] =
        ratatui::layout::Layout::vertical([Constraint::Length(table_h), Constraint::Min(0)])
            .areas(inner);
    let widths = [
        Constraint::Length(3),
        Constraint::Length(26),
        Constraint::Length(12),
        Constraint::Length(12),
        Constraint::Length(12),
        Constraint::Length(12),
        Constraint::Min(10),
    ];
    let header = Row::new(vec![
        "k",
        "accuracy [95% Wilson]",
        "target in",
        "not in",
        "r=1",
        "r>=2",
        "by rank",
    ])
    .style(theme.title);
    f.render_widget(Table::new(rows, widths).header(header), t);
    f.render_widget(Paragraph::new(notes).wrap(Wrap { trim: true }), n);
}

/// One k's row: overall accuracy with its CI, then by whether and where the target
/// was retrieved (ranks with no question left out).
fn mcqa_row<'a>(k: &crate::core::mcqa::KRow, theme: &Theme) -> Row<'a> {
    let by_rank: Vec<String> = k
        .by_rank
        .iter()
        .filter(|(_, a)| a.n > 0)
        .map(|(r, a)| format!("r{r} {}", short(a)))
        .collect();
    Row::new(vec![
        k.k.to_string(),
        acc(&k.overall),
        short(&k.retrieved),
        short(&k.not_retrieved),
        short(&k.rank1),
        short(&k.rank2_plus),
        by_rank.join(" "),
    ])
    .style(theme.text)
}

/// The coefficient of variation across topics per k, then the paper's notes.
fn mcqa_notes<'a>(report: &crate::core::mcqa::Report, theme: &Theme) -> Vec<Line<'a>> {
    let cv: Vec<String> = report
        .ks
        .iter()
        .zip(&report.cv)
        .map(|(k, c)| {
            format!(
                "k={k} {}",
                c.map_or_else(|| "undef".into(), |v| format!("{v:.3}"))
            )
        })
        .collect();
    let mut notes = vec![Line::styled(
        format!("CV across topics: {}", cv.join(" · ")),
        theme.text,
    )];
    notes.extend(
        paper::MCQA_NOTES
            .iter()
            .map(|n| Line::styled(format!("paper {n}"), theme.muted)),
    );
    notes
}

/// The judge's pass rate per criterion and target-rank bucket, the paper's beside.
pub fn draw_judge(f: &mut Frame, area: Rect, o: &EvalOverview, theme: &Theme) {
    let Some(j) = &o.judge else {
        let text = format!("No judged answers yet: run `{}`", HOW_TO[2].1);
        return missing(f, area, " Judge pass rates by target rank ", text, theme);
    };
    let mut header = vec!["criterion".to_string()];
    header.extend(BUCKETS.iter().map(|b| match b.chars().next() {
        Some(c) if c.is_ascii_digit() || c == '>' => format!("r {b}"),
        _ => (*b).to_string(),
    }));
    header.push("paper".into());
    let rows: Vec<Row> = j
        .rows
        .iter()
        .map(|row| {
            let mut out = vec![clean(&row.criterion)];
            out.extend(BUCKETS.iter().map(|b| {
                row.buckets.iter().find(|r| r.bucket == *b).map_or_else(
                    || "-".into(),
                    |r| format!("{:.2} ({})", r.pass as f64 / r.total as f64, r.total),
                )
            }));
            out.push(
                paper::judge_pass_for(&row.criterion)
                    .unwrap_or("-")
                    .to_string(),
            );
            Row::new(out).style(theme.text)
        })
        .collect();
    let block = theme.block(
        format!(
            " Judge pass rates by target rank in the prompt · {} answers, {} judgements · judge {} ",
            j.answers,
            j.judgements,
            clean(&j.judge_models.join(", "))
        ),
        false,
    );
    let inner = block.inner(area);
    f.render_widget(block, area);
    let [t, n] = ratatui::layout::Layout::vertical([
        Constraint::Length(j.rows.len() as u16 + 1),
        Constraint::Min(0),
    ])
    .areas(inner);
    let mut widths = vec![Constraint::Length(20)];
    widths.extend(std::iter::repeat_n(Constraint::Length(14), BUCKETS.len()));
    widths.push(Constraint::Min(10));
    f.render_widget(
        Table::new(rows, widths).header(Row::new(header).style(theme.title)),
        t,
    );
    f.render_widget(
        Paragraph::new(vec![
            Line::styled(format!("paper {}", paper::JUDGE_RANK_NOTE), theme.muted),
            Line::styled(clean(o.buckets_note), theme.muted),
        ])
        .wrap(Wrap { trim: true }),
        n,
    );
}
