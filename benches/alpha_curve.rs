//! How long the Query pane's per-question analysis takes for a corpus of N chunks:
//! building the fusion candidates from whole-corpus lists, cutting them at the
//! evaluated depth, and the target's fused rank at 21 dense weights (the alpha curve)
//! on the cut lists and on the whole lists. Only the computation is timed (the lists'
//! scores are drawn from a fixed-seed generator; their values do not change the work).
//!
//! `cargo bench --bench alpha_curve` (prints p50/p95 in ms of 50 repetitions).

use std::time::Instant;

use raglab::core::compare::{alpha_curve, curve_grid};
use raglab::core::fusion::Scored;
use raglab::core::retrieval::{Method, QueryLists, RunConfig, Sparse};
use raglab::core::stats::timing_quantile as pct;

/// xorshift64: a fixed sequence, no dependency.
fn next(s: &mut u64) -> f64 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    (*s >> 11) as f64 / (1u64 << 53) as f64
}

fn list(n: usize, seed: u64) -> Vec<Scored> {
    let mut s = seed;
    let mut v: Vec<Scored> = (0..n)
        .map(|i| Scored {
            id: format!("doc-{i}#section-{}", i % 17),
            score: next(&mut s),
        })
        .collect();
    v.sort_by(|a, b| b.score.total_cmp(&a.score));
    v
}

fn main() {
    for n in [261usize, 20_000] {
        // Dense ranks every chunk; BM25 and TF-IDF the chunks sharing a term (half).
        let (dense, bm25, tfidf) = (list(n, 1), list(n / 2, 2), list(n / 2, 3));
        let target = dense[n / 3].id.clone();
        let cfg = RunConfig::new(Method::Hybrid, Sparse::Bm25, 0.7);
        let grid = curve_grid();
        let (mut build, mut cut_curve, mut full_curve) = (vec![], vec![], vec![]);
        for _ in 0..50 {
            let t = Instant::now();
            let full = QueryLists::new(bm25.clone(), tfidf.clone(), dense.clone());
            let cut = full.truncated(100);
            build.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(alpha_curve(&cut, cfg, &target, &grid));
            cut_curve.push(t.elapsed().as_secs_f64() * 1e3);
            let t = Instant::now();
            std::hint::black_box(alpha_curve(&full, cfg, &target, &grid));
            full_curve.push(t.elapsed().as_secs_f64() * 1e3);
        }
        println!(
            "{n} chunks: candidates + cut at depth 100 {:.3}/{:.3} ms; alpha curve (21 weights) at depth 100 {:.4}/{:.4} ms, over the whole corpus {:.3}/{:.3} ms (p50/p95)",
            pct(&build, 0.5),
            pct(&build, 0.95),
            pct(&cut_curve, 0.5),
            pct(&cut_curve, 0.95),
            pct(&full_curve, 0.5),
            pct(&full_curve, 0.95),
        );
    }
}
