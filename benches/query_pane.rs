//! The Query pane at scale: key to frame when a question is opened, old beside new in
//! one run on the cached synthetic workspaces of `raglab bench retrieval --synthetic N`
//! (SYNTHETIC text and vectors: speeds only).
//!
//! Each timing starts at the key (Enter on a listed question: the pane's `update`) and
//! ends when the frame is drawn into a ratatui `TestBackend`: the retrieval the pane's
//! job runs, `on_result` (cut, fusion, why panel, alpha curve) and the draw. The query
//! vector is given (the synthetic set has no embedding model), so embedding is left
//! out of both.
//! - **old**: every chunk ranked (dense, BM25 and TF-IDF at depth = every chunk, as the
//!   pane asked before) and the places read off those whole lists;
//! - **new**: the lists 100 deep and the places of their chunks and of the target
//!   ranked on demand (`service::retrieval::rank_on_demand`, what the pane asks now).
//!
//! Both screens are compared on every question (they must be identical).
//!
//! `cargo bench --bench query_pane [-- N...]` (default 20000; `RAGLAB_PANE_QUERIES`
//! questions, default 20; prints p50/p95 in ms).

use std::time::Instant;

use raglab::core::compare::WholePlaces;
use raglab::core::question::Question;
use raglab::core::retrieval::QueryLists;
use raglab::service::evaluate::pane_workload;
use raglab::service::retrieval::{DEFAULT_DEPTH, QueryTimings, rank_on_demand};
use raglab::tui::action::Action;
use raglab::tui::effect::Effect;
use raglab::tui::panes::PaneView;
use raglab::tui::panes::query::{ChunkInfo, ChunkMeta, QueryPane};
use raglab::tui::theme::Theme;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn pct(v: &[f64], q: f64) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

/// The pane's retrieval as it was: every list over every chunk, places read off them.
fn old_way(
    w: &raglab::service::evaluate::PaneWorkload,
    text: &str,
    q: &[f32],
    target: &str,
) -> anyhow::Result<(QueryLists, WholePlaces, QueryTimings)> {
    let all = w.chunks.len().max(DEFAULT_DEPTH);
    let dense = w.vectors.search(q, all);
    let bm25 = w.sparse.bm25(text, all)?;
    let tfidf = w.sparse.tfidf(text, all)?;
    let full = QueryLists::new(bm25, tfidf, dense);
    let cut = full.truncated(DEFAULT_DEPTH);
    let ids: Vec<&str> = cut
        .dense
        .iter()
        .chain(&cut.bm25)
        .chain(&cut.tfidf)
        .map(|s| s.id.as_str())
        .chain([target])
        .collect();
    let places = WholePlaces::from_full(&full, &ids);
    Ok((full, places, QueryTimings::default()))
}

fn main() -> anyhow::Result<()> {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![20_000]
    } else {
        sizes
    };
    let n_queries: usize = std::env::var("RAGLAB_PANE_QUERIES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let rt = raglab::service::base::runtime()?;
    let ctx = raglab::service::Context::new(None)?;
    let theme = Theme::builtin("dark")?;
    println!("chunks | old p50 / p95 ms | new p50 / p95 ms | identical screens | load s");
    for n in sizes {
        let w = rt.block_on(pane_workload(&ctx, n, n_queries + 1, &|l| eprintln!("{l}")))?;
        let info: ChunkInfo = w
            .chunks
            .iter()
            .map(|c| {
                let meta = ChunkMeta {
                    path: c.path_label(),
                    text: c.text.clone(),
                    words: c.word_count,
                    topic: c.topic.clone(),
                };
                (c.id.clone(), meta)
            })
            .collect();
        let questions: Vec<Question> = w
            .queries
            .iter()
            .enumerate()
            .map(|(i, (text, _, target))| Question {
                id: format!("q{i}"),
                text: text.clone(),
                relevant: vec![target.clone()],
                ..Question::default()
            })
            .collect();
        let mut pane = QueryPane::new(questions, Vec::new(), info);
        let mut term = Terminal::new(TestBackend::new(200, 50))?;
        let (mut old, mut new, mut same) = (Vec::new(), Vec::new(), 0);
        // The new path's stages: dense, BM25, TF-IDF (each with its rank_of).
        let mut stages: [Vec<f64>; 3] = Default::default();
        // Question 0 warms both paths (TF-IDF norms, id tables, the int8 copy).
        for i in 0..w.queries.len() {
            let mut screens = Vec::new();
            for on_demand in [false, true] {
                let (_, q, target) = &w.queries[i];
                pane.question_sel = i;
                let started = Instant::now();
                let Some(Effect::Search { ticket, text }) = pane.update(Action::RunSelected) else {
                    anyhow::bail!("Enter on a question did not search");
                };
                let result = if on_demand {
                    let r = rank_on_demand(
                        &w.sparse,
                        &w.vectors,
                        &text,
                        Some(q),
                        DEFAULT_DEPTH,
                        std::slice::from_ref(target),
                    )?;
                    if i > 0 {
                        for (v, t) in
                            stages
                                .iter_mut()
                                .zip([r.2.dense_ms, r.2.bm25_ms, r.2.tfidf_ms])
                        {
                            v.push(t);
                        }
                    }
                    r
                } else {
                    old_way(&w, &text, q, target)?
                };
                pane.on_result(ticket, Ok((result.0, result.1, QueryTimings::default())));
                let frame = term.draw(|f| pane.draw(f, f.area(), &theme))?;
                let screen = format!("{:?}", frame.buffer);
                let t = started.elapsed().as_secs_f64() * 1e3;
                if i > 0 {
                    if on_demand { new.push(t) } else { old.push(t) }
                }
                screens.push(screen);
            }
            same += usize::from(screens[0] == screens[1]);
        }
        eprintln!(
            "{n}: new path p50 ms: dense {:.1}, bm25 {:.1}, tf-idf {:.1} (each with its rank_of)",
            pct(&stages[0], 0.5),
            pct(&stages[1], 0.5),
            pct(&stages[2], 0.5)
        );
        println!(
            "{n} | {:.1} / {:.1} | {:.1} / {:.1} | {same}/{} | {:.1}",
            pct(&old, 0.5),
            pct(&old, 0.95),
            pct(&new, 0.5),
            pct(&new, 0.95),
            w.queries.len(),
            w.load_s
        );
    }
    Ok(())
}
