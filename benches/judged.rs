//! What bpref, Judged@k and Hole@k add to `raglab eval runs` at scale: 14,000 queries x
//! 10 configurations, rankings of 100 documents, every pair compared (the command's
//! default), scored once with the incomplete-judgement measures and once without, in
//! one run, interleaved over three rounds.
//!
//! The qrels and rankings are synthetic, made for speed (no corpus is ranked): each
//! query judges 3 relevant documents (grades 1-2) and 7 non-relevant ones out of a
//! universe of 200,000; each configuration ranks 100 documents per query, where each
//! judged document lands with a probability that grows with the configuration's
//! strength, the rest drawn from the universe (most of them unjudged, as in a real pool).
//! Reading the run files is left out: it costs both variants the same, so it would only
//! lower the ratio.
//!
//! `cargo bench --bench judged [-- QUERIES CONFIGS]` (default 14000 10).

use std::collections::HashMap;
use std::time::Instant;

use raglab::core::incomplete::JudgedDocs;
use raglab::core::metrics::Qrel;
use raglab::core::retrieval::{QueryOutcome, judged_outcome, outcome};
use raglab::core::rng::Rng;
use raglab::core::significance::score_table;
use raglab::service::evaluate::{CompareRequest, compare_table};

const UNIVERSE: u64 = 200_000;
const DEPTH: usize = 100;
const KS: [usize; 1] = [10];

fn qrels(queries: usize, rng: &mut Rng) -> HashMap<String, Qrel> {
    (0..queries)
        .map(|q| {
            let mut qrel = Qrel::new();
            for j in 0..10u32 {
                let grade = if j < 3 { 1 + j % 2 } else { 0 };
                qrel.insert(format!("d{}", rng.next_u64() % UNIVERSE), grade);
            }
            (format!("q{q}"), qrel)
        })
        .collect()
}

/// Each configuration's ranking of every query (document ids, best first).
fn rankings(
    qrels: &HashMap<String, Qrel>,
    qids: &[String],
    configs: usize,
    rng: &mut Rng,
) -> Vec<Vec<Vec<String>>> {
    (0..configs)
        .map(|c| {
            let strength = 20 + (c as u64 * 5);
            qids.iter()
                .map(|q| {
                    let mut ranked: Vec<String> = (0..DEPTH)
                        .map(|_| format!("d{}", rng.next_u64() % UNIVERSE))
                        .collect();
                    for doc in qrels[q].keys() {
                        if rng.next_u64() % 100 < strength {
                            let at = (rng.next_u64() % DEPTH as u64) as usize;
                            ranked[at].clone_from(doc);
                        }
                    }
                    ranked
                })
                .collect()
        })
        .collect()
}

/// `eval runs`' work after the files are read: every configuration's queries scored
/// (with the incomplete-judgement measures when `docs` is given), then every pair
/// compared. Returns (scoring s, comparison s).
fn eval_runs(
    qrels: &HashMap<String, Qrel>,
    qids: &[String],
    runs: &[Vec<Vec<String>>],
    docs: Option<&JudgedDocs>,
) -> (f64, f64) {
    let started = Instant::now();
    let outcomes: Vec<Vec<QueryOutcome>> = runs
        .iter()
        .map(|run| {
            qids.iter()
                .zip(run)
                .map(|(q, ranked)| {
                    let ranked: Vec<&str> = ranked.iter().map(String::as_str).collect();
                    match docs {
                        Some(d) => judged_outcome(q, &ranked, &qrels[q], &KS, d),
                        None => outcome(q, &ranked, &qrels[q], &KS),
                    }
                })
                .collect()
        })
        .collect();
    let named: Vec<(String, &[QueryOutcome])> = outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| (format!("config-{i}"), o.as_slice()))
        .collect();
    let table = score_table(qids.to_vec(), &KS, &named);
    let scoring = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let report = compare_table(&table, &CompareRequest::default(), "bench".into(), &[]);
    if let Err(e) = report {
        eprintln!("compare failed: {e:#}");
        std::process::exit(1);
    }
    (scoring, started.elapsed().as_secs_f64())
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let queries = args.first().copied().unwrap_or(14_000);
    let configs = args.get(1).copied().unwrap_or(10);
    let mut rng = Rng::new(2026);
    let qrels = qrels(queries, &mut rng);
    let mut qids: Vec<String> = qrels.keys().cloned().collect();
    qids.sort();
    let runs = rankings(&qrels, &qids, configs, &mut rng);
    let docs = JudgedDocs::of(&qrels);
    println!(
        "{queries} queries x {configs} configurations, rankings of {DEPTH}, every pair compared; synthetic qrels and runs"
    );
    println!(
        "{:<6} {:>22} {:>22} {:>10} {:>10}",
        "round", "without: score + compare s", "with: score + compare s", "scoring", "whole"
    );
    for round in 1..=3 {
        let (s0, c0) = eval_runs(&qrels, &qids, &runs, None);
        let (s1, c1) = eval_runs(&qrels, &qids, &runs, Some(&docs));
        println!(
            "{round:<6} {:>22} {:>22} {:>9.2}x {:>9.3}x",
            format!("{s0:.2} + {c0:.2}"),
            format!("{s1:.2} + {c1:.2}"),
            s1 / s0,
            (s1 + c1) / (s0 + c0)
        );
    }
    println!(
        "whole: `eval runs` with bpref, Judged@10 and Hole@10 over `eval runs` without them (goal: at most 1.10x)"
    );
}
