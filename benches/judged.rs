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
//! The rankings are written as TREC run files once; each round reads and orders them as
//! `eval runs` does (`read_run`, trec_eval's order), scores every query, and compares
//! every pair. The ratio is printed for the whole and for the scoring alone.
//!
//! `cargo bench --bench judged [-- QUERIES CONFIGS]` (default 14000 10).

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use raglab::core::incomplete::JudgedDocs;
use raglab::core::metrics::{Qrel, order_run};
use raglab::core::retrieval::{QueryOutcome, judged_outcome, outcome};
use raglab::core::rng::Rng;
use raglab::core::significance::score_table;
use raglab::service::base::read_run;
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
                    // Distinct documents (a run file ranks a document once per query).
                    let mut seen = std::collections::HashSet::new();
                    let mut ranked: Vec<String> = Vec::with_capacity(DEPTH);
                    while ranked.len() < DEPTH {
                        let d = format!("d{}", rng.next_u64() % UNIVERSE);
                        if !qrels[q].contains_key(&d) && seen.insert(d.clone()) {
                            ranked.push(d);
                        }
                    }
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

/// Write each configuration's rankings as a TREC run file under `dir`.
fn write_runs(dir: &std::path::Path, qids: &[String], runs: &[Vec<Vec<String>>]) -> Vec<PathBuf> {
    runs.iter()
        .enumerate()
        .map(|(c, run)| {
            let mut text = String::new();
            for (q, ranked) in qids.iter().zip(run) {
                for (i, d) in ranked.iter().enumerate() {
                    text.push_str(&format!("{q} Q0 {d} {} {} config-{c}\n", i + 1, DEPTH - i));
                }
            }
            let path = dir.join(format!("config-{c}.trec"));
            std::fs::write(&path, text).expect("write run");
            path
        })
        .collect()
}

/// `eval runs`' work: every run file read and ordered, every configuration's queries
/// scored (with the incomplete-judgement measures when `docs` is given), every pair
/// compared. Returns (reading s, scoring s, comparison s).
fn eval_runs(
    qrels: &HashMap<String, Qrel>,
    qids: &[String],
    files: &[PathBuf],
    docs: Option<&JudgedDocs>,
) -> (f64, f64, f64) {
    let started = Instant::now();
    let runs: Vec<HashMap<String, Vec<(String, f64)>>> = files
        .iter()
        .map(|f| read_run(f).expect("read run"))
        .collect();
    let reading = started.elapsed().as_secs_f64();
    let started = Instant::now();
    let outcomes: Vec<Vec<QueryOutcome>> = runs
        .iter()
        .map(|run| {
            qids.iter()
                .filter_map(|q| {
                    let mut hits = run.get(q)?.clone();
                    order_run(&mut hits);
                    let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
                    Some(match docs {
                        Some(d) => judged_outcome(q, &ranked, &qrels[q], &KS, d),
                        None => outcome(q, &ranked, &qrels[q], &KS),
                    })
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
    (reading, scoring, started.elapsed().as_secs_f64())
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
    let dir = tempfile::tempdir().expect("temp dir");
    let files = write_runs(dir.path(), &qids, &runs);
    println!(
        "{queries} queries x {configs} configurations, run files of {DEPTH} per query, every pair compared; synthetic qrels and runs"
    );
    println!(
        "{:<6} {:>28} {:>28} {:>9} {:>8}",
        "round", "without: read+score+compare s", "with: read+score+compare s", "scoring", "whole"
    );
    for round in 1..=3 {
        let (r0, s0, c0) = eval_runs(&qrels, &qids, &files, None);
        let (r1, s1, c1) = eval_runs(&qrels, &qids, &files, Some(&docs));
        println!(
            "{round:<6} {:>28} {:>28} {:>8.2}x {:>7.3}x",
            format!("{r0:.2} + {s0:.2} + {c0:.2}"),
            format!("{r1:.2} + {s1:.2} + {c1:.2}"),
            s1 / s0,
            (r1 + s1 + c1) / (r0 + s0 + c0)
        );
    }
    println!(
        "whole: `eval runs` with bpref, Judged@10 and Hole@10 over `eval runs` without them (goal: at most 1.10x)"
    );
}
