//! The all-reviewer agreement at scale: Fleiss' kappa, Krippendorff's alpha, the
//! pairwise kappa matrix (and, for ordered labels, ordinal and interval alpha and
//! linear and quadratic weighted kappa) with B = 2000 bootstrap resamples, per
//! criterion and Overall, for 10,000 items x 5 reviewers x 6 criteria.
//!
//! The labels are synthetic, made for speed: each unit has a true label, each
//! reviewer gives it with probability 0.75 and a uniform random label otherwise,
//! and 5% of the labels are missing.
//!
//! `cargo bench --bench raters [-- ITEMS REVIEWERS CRITERIA]` (default 10000 5 6).

use std::time::Instant;

use raglab::core::agreement::Bootstrap;
use raglab::core::agreement::raters::{Ratings, rater_agreement};
use raglab::core::rng::Rng;

fn ratings(
    items: usize,
    raters: usize,
    criteria: usize,
    labels: &[&str],
    ordered: bool,
) -> Ratings {
    let mut rng = Rng::new(2026);
    let mut r = Ratings::new(
        (0..raters).map(|i| format!("reviewer{i}")).collect(),
        labels.iter().map(|l| (*l).to_string()).collect(),
        ordered,
        (0..criteria).map(|c| format!("criterion{c}")).collect(),
    );
    for _ in 0..items {
        let truth: Vec<usize> = (0..criteria).map(|_| rng.below(labels.len())).collect();
        let given: Vec<Vec<Option<&str>>> = truth
            .iter()
            .map(|&t| {
                (0..raters)
                    .map(|_| {
                        let l = if rng.below(4) < 3 {
                            t
                        } else {
                            rng.below(labels.len())
                        };
                        (rng.below(20) > 0).then_some(labels[l])
                    })
                    .collect()
            })
            .collect();
        r.push_item(|c, rater| given[c][rater]);
    }
    r
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let items = args.first().copied().unwrap_or(10_000);
    let raters = args.get(1).copied().unwrap_or(5);
    let criteria = args.get(2).copied().unwrap_or(6);
    let boot = Bootstrap::default();
    println!(
        "{items} items x {raters} reviewers x {criteria} criteria, B = {}, one thread",
        boot.resamples
    );
    println!("{:<34} {:>10} {:>10}", "labels", "statistics", "seconds");
    let scales: [(&str, &[&str], bool); 3] = [
        ("pass/fail (nominal)", &["pass", "fail"], false),
        ("yes/partly/no (ordered)", &["no", "partly", "yes"], true),
        ("1-5 (ordered)", &["1", "2", "3", "4", "5"], true),
    ];
    for (name, labels, ordered) in scales {
        let r = ratings(items, raters, criteria, labels, ordered);
        let started = Instant::now();
        let rep = rater_agreement(&r, boot);
        let secs = started.elapsed().as_secs_f64();
        let per_row =
            2 + 2 * usize::from(ordered) + rep.rows[0].pairs.len() * (1 + 2 * usize::from(ordered));
        let overall = rep.rows.last().map(|row| row.alpha_nominal);
        println!(
            "{name:<34} {:>10} {secs:>10.2}   (Overall alpha {:?})",
            per_row * rep.rows.len(),
            overall.and_then(|e| e.value)
        );
    }
}
