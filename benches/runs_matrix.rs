//! The runs matrix at scale: 50 retrieval configurations over 3,000 and 15,000 queries
//! (and 500 source documents as clusters), from the per-query scores `raglab report
//! runs` reads to the Runs pane's first frame (the matrix built and drawn once, 200 x 50
//! cells), then the same with a pinned baseline (49 randomisation tests of 10,000
//! permutations each). Peak memory is the process's resident high-water mark after each
//! size (it only grows: flat means the 15,000-query figure stays near the 3,000 one).
//!
//! The per-query scores are SYNTHETIC, made for speed (no corpus is ranked): each query
//! has a difficulty, each configuration a strength, and the first relevant rank follows
//! from both plus noise; the metrics are those of that rank (nDCG@10, MRR, P@1,
//! Recall@10). They measure speed only, never quality.
//!
//! `cargo bench --bench runs_matrix`.

use std::time::Instant;

use raglab::core::rng::Rng;
use raglab::core::significance::{RunScores, ScoreTable};
use raglab::service::report::{RunsRequest, runs_matrix};
use raglab::tui::panes::PaneView;

const RUNS: usize = 50;
const DOCUMENTS: usize = 500;

fn unit(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// nDCG@10, RR, P@1 and Recall@10 of one relevant chunk at `rank`.
fn metrics_of(rank: u32) -> [f64; 4] {
    let top10 = rank <= 10;
    [
        if top10 {
            1.0 / f64::from(rank + 1).log2()
        } else {
            0.0
        },
        1.0 / f64::from(rank),
        f64::from(u8::from(rank == 1)),
        f64::from(u8::from(top10)),
    ]
}

fn table(queries: usize) -> ScoreTable {
    let mut rng = Rng::new(15_000);
    let difficulty: Vec<f64> = (0..queries).map(|_| unit(&mut rng) * 4.0).collect();
    let runs = (0..RUNS)
        .map(|c| {
            let strength = 1.0 + c as f64 / RUNS as f64;
            let mut scores = vec![vec![0.0; queries]; 4];
            for (q, d) in difficulty.iter().enumerate() {
                let rank = 1 + (d / strength + unit(&mut rng) * 3.0) as u32;
                for (m, v) in metrics_of(rank).into_iter().enumerate() {
                    scores[m][q] = v;
                }
            }
            RunScores {
                label: format!("config-{c:02}"),
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
        clusters: (0..queries)
            .map(|i| format!("d{}", (i * 7919) % DOCUMENTS))
            .collect(),
    }
}

/// The process's resident high-water mark, MiB.
fn peak_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() -> anyhow::Result<()> {
    let rt = raglab::service::base::runtime()?;
    let theme = raglab::tui::theme::Theme::builtin("dark")?;
    println!(
        "synthetic per-query scores: {RUNS} configurations x 4 metrics, {DOCUMENTS} documents as clusters"
    );
    for queries in [3_000, 15_000] {
        let dir = tempfile::tempdir()?;
        let paths = raglab::config::Paths {
            config_dir: dir.path().join("config"),
            data_dir: dir.path().join("data"),
        };
        let ctx = raglab::service::Context::with(
            paths,
            raglab::config::Config::default(),
            &dir.path().join("ws"),
        )?;
        raglab::service::evaluate::save_scores(&ctx, &table(queries))?;
        let sight = raglab::core::blinding::Sight::new(
            raglab::core::blinding::Viewer::Lead,
            Default::default(),
            &[],
        );
        let started = Instant::now();
        let m = rt.block_on(runs_matrix(&ctx, &RunsRequest::default(), &sight))?;
        let mut pane = raglab::tui::panes::runs::RunsPane::default();
        pane.on_loaded(Ok(m));
        let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(200, 50))?;
        let buffer = term
            .draw(|f| pane.draw(f, f.area(), &theme))?
            .buffer
            .clone();
        let first_frame = started.elapsed().as_secs_f64();
        let screen = raglab::tui::ui::buffer_text(&buffer);
        assert!(screen.contains("config-00"), "the frame lists the runs");
        let req = RunsRequest {
            baseline: Some("config-00".into()),
            ..RunsRequest::default()
        };
        let started = Instant::now();
        let pinned = rt.block_on(runs_matrix(&ctx, &req, &sight))?;
        let pinned_s = started.elapsed().as_secs_f64();
        assert_eq!(
            pinned
                .rows
                .iter()
                .filter(|r| r.against_baseline.is_some())
                .count(),
            RUNS - 1
        );
        println!(
            "{queries:>6} queries: first frame {first_frame:.3} s (matrix read, built and drawn); with a pinned baseline {pinned_s:.3} s; peak memory so far {:.0} MiB",
            peak_mib()
        );
    }
    Ok(())
}
