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
//! - **new**: ranking on demand in the pane's two steps: the lists 100 deep
//!   (`service::retrieval::lists_on_demand`), drawn at once with the places outside
//!   the lists pending (**first frame**), then the places of the lists' chunks and of
//!   the target ranked on demand (`places_on_demand`) and drawn again (**placed**).
//!
//! The old screen and the new placed screen are compared on every question (they must
//! be identical).
//!
//! Each path runs over all the questions in its own pass (old first), so a question
//! follows the same path's previous one, as in the TUI; the new path pauses
//! `RAGLAB_PANE_PAUSE_MS` (default 1000) before each key, a reader's pause in which the
//! machine idles. A scan right after a 2 s pause takes ~1.5x one run back to back on
//! this VM, and one right after the old path's million-entry sorts ~3x.
//!
//! `cargo bench --bench query_pane [-- N...]` (default 20000; `RAGLAB_PANE_QUERIES`
//! questions, default 20; prints p50/p95 in ms).

use std::time::Instant;

use raglab::core::compare::WholePlaces;
use raglab::core::question::Question;
use raglab::core::retrieval::QueryLists;
use raglab::service::evaluate::pane_workload;
use raglab::service::retrieval::{DEFAULT_DEPTH, QueryTimings, lists_on_demand, places_on_demand};
use raglab::tui::effect::Effect;
use raglab::tui::panes::PaneView;
use raglab::tui::panes::query::QueryPane;
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
    let ids: Vec<&str> = cut.chunk_ids().chain([target]).collect();
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
    let pause = std::time::Duration::from_millis(
        std::env::var("RAGLAB_PANE_PAUSE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(1000),
    );
    let rt = raglab::service::base::runtime()?;
    let ctx = raglab::service::Context::new(None)?;
    let theme = Theme::builtin("dark")?;
    println!(
        "chunks | old p50 / p95 ms | new first frame p50 / p95 ms | new placed p50 / p95 ms | identical screens | load s"
    );
    for n in sizes {
        let w = rt.block_on(pane_workload(&ctx, n, n_queries + 1, &|l| eprintln!("{l}")))?;
        let info = raglab::tui::app::chunk_info(&w.chunks);
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
        let mut pane = QueryPane::new(questions.clone(), Vec::new(), info.clone());
        let mut term = Terminal::new(TestBackend::new(200, 50))?;
        let (mut old, mut first, mut placed, mut same) = (Vec::new(), Vec::new(), Vec::new(), 0);
        // The new path's stages: the first step's dense, BM25 and TF-IDF lists, then
        // the second step's dense, BM25 and TF-IDF places.
        let mut stages: [Vec<f64>; 6] = Default::default();
        let none = QueryTimings::default();
        let ms = |s: Instant| s.elapsed().as_secs_f64() * 1e3;
        let open = |pane: &mut QueryPane, i: usize| -> anyhow::Result<(u64, String, Instant)> {
            let started = Instant::now();
            let Some(Effect::Search { ticket, text }) = pane.submit(questions[i].clone()) else {
                anyhow::bail!("asking a question did not search");
            };
            Ok((ticket, text, started))
        };
        // Each path runs over every question in its own pass, so each question follows
        // the same path's previous one, as in the TUI. (Interleaved, the new path's scan
        // followed the old path's million-entry sorts and ran 3x slower than after a
        // scan of its own.) Question 0 warms each path (TF-IDF norms, id tables, the
        // int8 copy).
        let mut old_screens = Vec::new();
        for (i, (_, q, target)) in w.queries.iter().enumerate() {
            // Old: every chunk ranked, then one frame.
            let (ticket, text, started) = open(&mut pane, i)?;
            let (lists, places, _) = old_way(&w, &text, q, target)?;
            pane.on_result(ticket, Ok((lists, places, none)));
            old_screens.push(format!(
                "{:?}",
                term.draw(|f| pane.draw(f, f.area(), &theme))?.buffer
            ));
            if i > 0 {
                old.push(ms(started));
            }
        }
        // The old path's whole lists (a million entries each) freed before the new
        // path starts (a fresh pane): the pane never holds such lists now.
        let mut pane = QueryPane::new(questions.clone(), Vec::new(), info);
        for (i, (_, q, target)) in w.queries.iter().enumerate() {
            let targets = std::slice::from_ref(target);
            // A reader's pause between two questions: the machine idles, as it does
            // between a reviewer's keys.
            std::thread::sleep(pause);
            // New: the lists drawn, then the places.
            let (ticket, text, started) = open(&mut pane, i)?;
            let (lists, within, t1) = lists_on_demand(
                &w.sparse,
                &w.vectors,
                &text,
                Some(q),
                DEFAULT_DEPTH,
                targets,
            )?;
            pane.on_result(ticket, Ok((lists.clone(), within, none)));
            term.draw(|f| pane.draw(f, f.area(), &theme))?;
            let first_ms = ms(started);
            let (places, t2) =
                places_on_demand(&w.sparse, &w.vectors, &text, Some(q), &lists, targets)?;
            pane.on_places(ticket, Ok((places, none)));
            let new_screen = format!(
                "{:?}",
                term.draw(|f| pane.draw(f, f.area(), &theme))?.buffer
            );
            let placed_ms = ms(started);
            if i > 0 {
                first.push(first_ms);
                placed.push(placed_ms);
                let each = [
                    t1.dense_ms,
                    t1.bm25_ms,
                    t1.tfidf_ms,
                    t2.dense_ms,
                    t2.bm25_ms,
                    t2.tfidf_ms,
                ];
                for (v, t) in stages.iter_mut().zip(each) {
                    v.push(t);
                }
            }
            same += usize::from(old_screens[i] == new_screen);
        }
        let p50 = |v: &[f64]| pct(v, 0.5);
        eprintln!(
            "{n}: new path p50 ms: lists dense {:.1}, bm25 {:.1}, tf-idf {:.1}; places dense {:.1}, bm25 {:.1}, tf-idf {:.1}",
            p50(&stages[0]),
            p50(&stages[1]),
            p50(&stages[2]),
            p50(&stages[3]),
            p50(&stages[4]),
            p50(&stages[5])
        );
        println!(
            "{n} | {:.1} / {:.1} | {:.1} / {:.1} | {:.1} / {:.1} | {same}/{} | {:.1}",
            pct(&old, 0.5),
            pct(&old, 0.95),
            pct(&first, 0.5),
            pct(&first, 0.95),
            pct(&placed, 0.5),
            pct(&placed, 0.95),
            w.queries.len(),
            w.load_s
        );
    }
    Ok(())
}
