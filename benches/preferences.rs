//! The pairwise study's ranking at scale: Bradley-Terry scores with B = 2000
//! percentile bootstrap resamples over items, for every criterion and Overall (every
//! criterion pooled), as `raglab preferences` computes them.
//!
//! The comparisons are synthetic, made for speed: RUNS runs with true log strengths
//! spread evenly over [-1, 1]; each item compares a random pair of runs, and each of
//! 3 reviewers labels each criterion by the model's win chance, a tie one time in 8.
//!
//! `cargo bench --bench preferences [-- ITEMS RUNS CRITERIA]` (default 10000 5 6).

use std::time::Instant;

use raglab::core::agreement::Bootstrap;
use raglab::core::preference::{PairComparison, scores_with_ci};
use raglab::core::rng::Rng;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let items = args.first().copied().unwrap_or(10_000);
    let runs = args.get(1).copied().unwrap_or(5).max(2);
    let criteria = args.get(2).copied().unwrap_or(6).max(1);
    let strength: Vec<f64> = (0..runs)
        .map(|r| -1.0 + 2.0 * r as f64 / (runs - 1) as f64)
        .collect();
    let mut rng = Rng::new(2026);
    let mut per_criterion: Vec<Vec<PairComparison>> = vec![Vec::new(); criteria];
    for item in 0..items {
        let a = rng.below(runs);
        let b = (a + 1 + rng.below(runs - 1)) % runs;
        let p = 1.0 / (1.0 + (strength[b] - strength[a]).exp());
        for c in per_criterion.iter_mut() {
            for _ in 0..3 {
                let u = rng.next_u64() as f64 / u64::MAX as f64;
                let (winner, loser, tie) = if rng.below(8) == 0 {
                    (a, b, true)
                } else if u < p {
                    (a, b, false)
                } else {
                    (b, a, false)
                };
                c.push(PairComparison {
                    item,
                    winner,
                    loser,
                    tie,
                });
            }
        }
    }
    let boot = Bootstrap::default();
    let started = Instant::now();
    for c in &per_criterion {
        std::hint::black_box(scores_with_ci(runs, c, boot));
    }
    let pooled: Vec<PairComparison> = per_criterion.iter().flatten().copied().collect();
    let overall = scores_with_ci(runs, &pooled, boot);
    let secs = started.elapsed().as_secs_f64();
    let shown: Vec<String> = overall
        .iter()
        .map(|e| format!("{:.3}", e.value.unwrap_or(f64::NAN)))
        .collect();
    println!(
        "preferences: {items} items x {runs} runs x {criteria} criteria x 3 reviewers ({} comparisons), B = {}: {secs:.2} s (Overall scores {}; true {:?})",
        pooled.len(),
        boot.resamples,
        shown.join(", "),
        strength
    );
}
