//! `raglab compare` at scale: 14,000 queries x 10 configurations, four metrics (nDCG@10,
//! MRR, P@1, Recall@10), 10,000 permutations and 2,000 bootstrap resamples, against a
//! baseline (9 pairs) and over all 45 pairs, on the cores of this machine.
//!
//! The per-query scores are synthetic, made for speed (no corpus is ranked): each
//! query has a difficulty, each configuration a strength, and the rank of the first
//! relevant chunk follows from both plus noise; the metrics are those of that rank
//! (RR = 1/rank, P@1, Recall@10 and nDCG@10 of one relevant chunk), so they tie as often
//! as real ones do. A second table of continuous scores without ties is the worst case
//! for the randomisation test, which skips tied queries.
//!
//! Each comparison runs twice on the same table, in one run: with the randomisation test
//! as it was (`sign_flip_p_one_by_one`, one permutation at a time) and as it is
//! (`sign_flip_p`, 64 permutations summed side by side); the rows must be equal, p-values
//! to the last bit, or the bench fails.
//!
//! `cargo bench --bench compare [-- QUERIES CONFIGS]` (default 14000 10).

use std::time::Instant;

use raglab::core::rng::Rng;
use raglab::core::significance::{
    RunScores, ScoreTable, SignFlip, TestSettings, sign_flip_p, sign_flip_p_one_by_one,
};
use raglab::service::evaluate::{CompareRequest, ComparisonReport, compare_table_with};

/// Uniform in [0, 1).
fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The metrics of a first relevant rank (None: not retrieved in the top 100).
fn metrics_of(rank: Option<u32>) -> [f64; 4] {
    match rank {
        None => [0.0; 4],
        Some(r) => {
            let top10 = r <= 10;
            [
                if top10 {
                    1.0 / f64::from(r + 1).log2()
                } else {
                    0.0
                },
                1.0 / f64::from(r),
                f64::from(u8::from(r == 1)),
                f64::from(u8::from(top10)),
            ]
        }
    }
}

fn table(queries: usize, configs: usize, ties: bool) -> ScoreTable {
    let mut rng = Rng::new(2024);
    let difficulty: Vec<f64> = (0..queries).map(|_| unit(&mut rng) * 4.0).collect();
    let runs = (0..configs)
        .map(|c| {
            let strength = c as f64 * 0.03;
            let mut scores: Vec<Vec<f64>> = (0..4).map(|_| Vec::with_capacity(queries)).collect();
            for d in &difficulty {
                let noise = unit(&mut rng) * 2.0;
                let m = if ties {
                    let log_rank = (d + noise - strength - 1.0).max(0.0);
                    let rank = log_rank.exp().round() as u32;
                    metrics_of((rank <= 100).then_some(rank.max(1)))
                } else {
                    let v = (1.0 - d / 4.0 + strength - noise / 4.0).clamp(0.0, 1.0);
                    [v, v * 0.9, v * 0.8, v * 0.7]
                };
                for (s, v) in scores.iter_mut().zip(m) {
                    s.push(v);
                }
            }
            RunScores {
                label: format!("config-{c}"),
                absent: 0,
                scores,
            }
        })
        .collect();
    ScoreTable {
        qids: (0..queries).map(|i| format!("q{i}")).collect(),
        metrics: vec![
            "nDCG@10".into(),
            "MRR".into(),
            "P@1".into(),
            "Recall@10".into(),
        ],
        runs,
        clusters: Vec::new(),
    }
}

/// One comparison with the randomisation test `flip`: the report and its seconds.
fn timed(t: &ScoreTable, req: &CompareRequest, flip: SignFlip) -> (ComparisonReport, f64) {
    let started = Instant::now();
    match compare_table_with(t, req, "bench".into(), &[], flip) {
        Ok(r) => (r, started.elapsed().as_secs_f64()),
        Err(e) => {
            eprintln!("compare failed: {e:#}");
            std::process::exit(1);
        }
    }
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let queries = args.first().copied().unwrap_or(14_000);
    let configs = args.get(1).copied().unwrap_or(10);
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    let settings = TestSettings::default();
    println!(
        "{queries} queries x {configs} configurations, 4 metrics, {} permutations, {} resamples, {threads} threads",
        settings.permutations, settings.resamples
    );
    println!(
        "{:<22} {:>8} {:>12} {:>14} {:>14} {:>8}",
        "scores", "pairs", "comparisons", "one-by-one s", "batched s", "speed-up"
    );
    for (name, ties) in [("rank-based (ties)", true), ("continuous (no ties)", false)] {
        let t = table(queries, configs, ties);
        for baseline in [Some("config-0".to_string()), None] {
            let req = CompareRequest {
                baseline: baseline.clone(),
                settings,
                ..CompareRequest::default()
            };
            let (old, old_s) = timed(&t, &req, sign_flip_p_one_by_one);
            let (new, new_s) = timed(&t, &req, sign_flip_p);
            if old.rows != new.rows {
                eprintln!("the batched randomisation test changed a result");
                std::process::exit(1);
            }
            let pairs = if baseline.is_some() {
                "baseline"
            } else {
                "all"
            };
            println!(
                "{name:<22} {pairs:>8} {:>12} {old_s:>14.2} {new_s:>14.2} {:>7.2}x",
                new.rows.len(),
                old_s / new_s
            );
        }
    }
    println!("rows of both implementations equal (p-values bit for bit)");
}
