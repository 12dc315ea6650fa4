use super::*;
use crate::core::metrics::QueryMetrics;
use crate::core::retrieval::{AtK, QueryOutcome};

/// scipy's values (ttest_rel, 2 * t.sf, binomtest), made by
/// scripts/significance_reference.py (tests/data/PROVENANCE.md).
const REFERENCE: &str = include_str!("../../../../tests/data/significance/reference.json");

fn reference() -> serde_json::Value {
    serde_json::from_str(REFERENCE).expect("reference.json")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn close(ours: f64, theirs: f64, rel: f64, what: &str) {
    let tol = rel * theirs.abs().max(1e-300);
    assert!(
        (ours - theirs).abs() <= tol,
        "{what}: ours {ours:e}, reference {theirs:e} (rel diff {:e})",
        ((ours - theirs) / theirs).abs()
    );
}

#[test]
fn wins_ties_losses_and_differences_by_hand() {
    let base = [0.5, 1.0, 0.0, 0.25];
    let cand = [1.0, 1.0, 0.0, 0.2];
    assert_eq!(
        wins_ties_losses(&base, &cand),
        WinsTiesLosses {
            wins: 1,
            ties: 2,
            losses: 1
        }
    );
    let d = differences(&base, &cand);
    assert_eq!(d[0], 0.5);
    assert!((d[3] + 0.05).abs() < 1e-15);
}

/// Holm by hand: p = 0.01, 0.04, 0.03, 0.005 (m = 4). Sorted: 0.005 x 4 = 0.02,
/// 0.01 x 3 = 0.03, 0.03 x 2 = 0.06, 0.04 x 1 = 0.04 -> max(0.06, 0.04) = 0.06.
#[test]
fn holm_step_down_by_hand() {
    let adj = holm(&[0.01, 0.04, 0.03, 0.005]);
    let want = [0.03, 0.06, 0.06, 0.02];
    for (a, w) in adj.iter().zip(want) {
        assert!((a - w).abs() < 1e-15, "{adj:?}");
    }
    // Capped at 1, and monotone: 0.5 x 2 = 1, 0.6 x 1 = 0.6 -> 1.
    assert_eq!(holm(&[0.6, 0.5]), vec![1.0, 1.0]);
    // Ties keep one value; one p-value is its own adjustment.
    assert_eq!(holm(&[0.02, 0.02]), vec![0.04, 0.04]);
    assert_eq!(holm(&[0.3]), vec![0.3]);
    assert!(holm(&[]).is_empty());
}

/// d = 1, 2, 3: S = 6; the 8 sign assignments give +-1 +-2 +-3 in {6, 4, 2, 0, 0,
/// -2, -4, -6}: two reach |S| = 6, so p = 2 / 8. Zeros change nothing.
#[test]
fn exact_sign_flip_by_hand() {
    assert_eq!(sign_flip_exact_p(&[1.0, 2.0, 3.0]), Some(0.25));
    assert_eq!(sign_flip_exact_p(&[0.0, 1.0, 0.0, 2.0, 3.0]), Some(0.25));
    // S = 0: every assignment is as extreme.
    assert_eq!(sign_flip_exact_p(&[0.5, -0.5]), Some(1.0));
    assert_eq!(sign_flip_exact_p(&[0.0, 0.0]), Some(1.0));
    assert_eq!(sign_flip_p(&[0.0, 0.0], 100, 1), 1.0);
    // Reciprocal-rank differences: S = 1, and the full flip gives -1 only up to
    // rounding (1/3 + 1/6 + 1/2 is not summed exactly in binary); it must still count.
    let d = [1.0 / 3.0, 1.0 / 6.0, 0.5];
    assert_eq!(sign_flip_exact_p(&d), Some(0.25));
    assert_eq!(sign_flip_exact_p(&[1.0; 25]), None);
}

/// The sampled test against exact enumeration on small cases: within four standard
/// errors of a proportion over 200,000 permutations (plus the +1 of the convention).
#[test]
fn sampled_sign_flip_matches_exact_enumeration() {
    let cases: Vec<Vec<f64>> = vec![
        vec![
            0.2, -0.1, 0.4, 0.3, -0.05, 0.25, 0.1, 0.0, 0.15, -0.2, 0.35, 0.05,
        ],
        vec![
            1.0, 1.0, 1.0, -1.0, 1.0, 0.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0, -1.0,
        ],
        (1..=16).map(|i| 1.0 / f64::from(i) - 0.3).collect(),
        vec![
            0.5,
            0.5,
            -1.0 / 3.0,
            0.25,
            -0.5,
            0.75,
            1.0,
            -0.25,
            0.5,
            1.0 / 6.0,
        ],
        // All positive, distinct: only the identity and the full flip reach |S|.
        (1..=12).map(f64::from).collect(),
    ];
    let permutations = 200_000;
    for (i, d) in cases.iter().enumerate() {
        let exact = sign_flip_exact_p(d).expect("small");
        let sampled = sign_flip_p(d, permutations, 7 + i as u64);
        let se = (exact * (1.0 - exact) / permutations as f64).sqrt();
        assert!(
            (sampled - exact).abs() <= 4.0 * se + 2.0 / permutations as f64,
            "case {i}: sampled {sampled}, exact {exact}"
        );
    }
    let all_positive = sign_flip_exact_p(&cases[4]).expect("small");
    assert_eq!(all_positive, 2.0 / 4096.0);
    // Seeded: the same seed, the same p; the count is over (1 + P).
    assert_eq!(
        sign_flip_p(&cases[0], 999, 3),
        sign_flip_p(&cases[0], 999, 3)
    );
    let p = sign_flip_p(&cases[0], 999, 3) * 1000.0;
    assert!((p - p.round()).abs() < 1e-9, "p = k / 1000");
    assert_eq!(sign_flip_p(&cases[0], 0, 3), 1.0);
}

/// Many differences (more than one 64-bit word of flips per permutation, and a last
/// group shorter than 8): the sampled p still tracks the t-test's large-sample value.
#[test]
fn sampled_sign_flip_spans_words() {
    let mut rng = crate::core::rng::Rng::new(11);
    let d: Vec<f64> = (0..203)
        .map(|_| (rng.below(1000) as f64 / 1000.0) - 0.47)
        .collect();
    let t = paired_t(&d).expect("defined");
    let p = sign_flip_p(&d, 50_000, 5);
    assert!((p - t.p).abs() < 0.02, "sign flip {p}, t-test {}", t.p);
}

/// The batched test against the one-permutation-at-a-time implementation it replaced:
/// the same p-value to the last bit, over lengths on both sides of a 64-bit word and of
/// a group, tied (rank-based) and continuous differences, zeros, and permutation counts
/// on both sides of a batch (0, 1, 63, 64, 65, 999).
#[test]
fn batched_sign_flip_equals_one_by_one_bit_for_bit() {
    let mut rng = crate::core::rng::Rng::new(31);
    for n in [1usize, 2, 3, 4, 5, 15, 16, 17, 63, 64, 65, 203, 1000, 4099] {
        for kind in 0..3 {
            let d: Vec<f64> = (0..n)
                .map(|_| match kind {
                    // Reciprocal-rank differences: many ties and zeros.
                    0 => 1.0 / (1 + rng.below(5)) as f64 - 1.0 / (1 + rng.below(5)) as f64,
                    // Continuous, slightly positive.
                    1 => (rng.below(10_000) as f64 / 10_000.0) - 0.48,
                    // Pass/fail: -1, 0, 1.
                    _ => rng.below(3) as f64 - 1.0,
                })
                .collect();
            for permutations in [0usize, 1, 63, 64, 65, 999] {
                let seed = rng.next_u64();
                let new = sign_flip_p(&d, permutations, seed);
                let old = sign_flip_p_one_by_one(&d, permutations, seed);
                assert_eq!(
                    new.to_bits(),
                    old.to_bits(),
                    "n {n} kind {kind} permutations {permutations}: {new} vs {old}"
                );
            }
        }
    }
    // A p-value neither 1 nor tiny, so an off-by-one bit or permutation would show.
    let d: Vec<f64> = (0..300)
        .map(|i| ((i * 37) % 101) as f64 / 100.0 - 0.49)
        .collect();
    let p = sign_flip_p(&d, 10_000, 20_240_601);
    assert!(0.01 < p && p < 0.99, "{p}");
    assert_eq!(
        p.to_bits(),
        sign_flip_p_one_by_one(&d, 10_000, 20_240_601).to_bits()
    );
}

#[test]
fn t_test_matches_scipy_ttest_rel() {
    let r = reference();
    let cases = r["ttest_rel"].as_array().expect("cases");
    assert_eq!(cases.len(), 7);
    for c in cases {
        let name = c["name"].as_str().expect("name");
        let (a, b) = (floats(&c["a"]), floats(&c["b"]));
        let t = paired_t(&differences(&a, &b)).expect("defined");
        close(t.t, c["t"].as_f64().expect("t"), 1e-12, name);
        assert_eq!(t.df as u64, c["df"].as_u64().expect("df"), "{name}");
        close(t.p, c["p"].as_f64().expect("p"), 1e-10, name);
    }
    assert_eq!(paired_t(&[0.1, 0.1, 0.1]), None, "sd = 0");
    assert_eq!(paired_t(&[0.3]), None, "n = 1");
    assert_eq!(paired_t(&[]), None);
}

#[test]
fn student_tail_matches_scipy_on_a_grid() {
    let r = reference();
    let grid = r["t_two_sided_tail"].as_array().expect("grid");
    assert_eq!(grid.len(), 72);
    for g in grid {
        let (t, df, p) = (
            g["t"].as_f64().expect("t"),
            g["df"].as_f64().expect("df"),
            g["p"].as_f64().expect("p"),
        );
        let ours = t_two_sided(t, df);
        if p < 1e-290 {
            assert!(ours < 1e-280, "t {t} df {df}: ours {ours:e}, scipy {p:e}");
        } else {
            close(ours, p, 1e-9, &format!("t {t} df {df}"));
        }
        assert_eq!(t_two_sided(-t, df), ours, "symmetric");
    }
}

#[test]
fn incomplete_beta_and_gamma_by_hand() {
    close(ln_gamma(5.0).exp(), 24.0, 1e-14, "Gamma(5)");
    close(
        ln_gamma(0.5),
        std::f64::consts::PI.sqrt().ln(),
        1e-14,
        "Gamma(1/2)",
    );
    close(
        ln_gamma(0.25).exp(),
        3.625_609_908_221_908,
        1e-13,
        "Gamma(1/4)",
    );
    for x in [0.1, 0.37, 0.5, 0.93] {
        close(regularized_beta(x, 1.0, 1.0), x, 1e-14, "I_x(1,1) = x");
        close(
            regularized_beta(x, 3.0, 1.0),
            x.powi(3),
            1e-13,
            "I_x(a,1) = x^a",
        );
        close(
            regularized_beta(x, 1.0, 2.0),
            1.0 - (1.0 - x).powi(2),
            1e-13,
            "I_x(1,b) = 1 - (1-x)^b",
        );
    }
    close(regularized_beta(0.5, 7.5, 7.5), 0.5, 1e-13, "symmetric");
    assert_eq!(regularized_beta(0.0, 2.0, 3.0), 0.0);
    assert_eq!(regularized_beta(1.0, 2.0, 3.0), 1.0);
    // df = 1 is the Cauchy distribution: P(|T| >= 1) = 1/2.
    close(t_two_sided(1.0, 1.0), 0.5, 1e-14, "Cauchy");
    assert_eq!(t_two_sided(0.0, 10.0), 1.0);
}

#[test]
fn mcnemar_matches_scipy_binomtest() {
    let r = reference();
    let cases = r["binomtest"].as_array().expect("cases");
    assert_eq!(cases.len(), 10);
    for c in cases {
        let (b, cc) = (
            c["b"].as_u64().expect("b") as usize,
            c["c"].as_u64().expect("c") as usize,
        );
        let mut outcomes = vec![(true, false); b];
        outcomes.extend(vec![(false, true); cc]);
        outcomes.extend(vec![(true, true); 4]);
        outcomes.push((false, false));
        let m = mcnemar_exact(&outcomes);
        assert_eq!(
            (m.both_pass, m.only_a, m.only_b, m.both_fail),
            (4, b, cc, 1)
        );
        close(
            m.p,
            c["p"].as_f64().expect("p"),
            1e-10,
            &format!("b {b} c {cc}"),
        );
    }
    // By hand: b = 3, c = 7: 2 (1 + 10 + 45 + 120) / 1024.
    close(
        binomial_two_sided_half(3, 10),
        352.0 / 1024.0,
        1e-13,
        "3 of 10",
    );
    assert_eq!(mcnemar_exact(&[(true, true)]).p, 1.0, "no discordant pair");
}

#[test]
fn bootstrap_columns_are_independent_of_each_other() {
    let a = [0.1, 0.5, 0.9, 0.3, 0.7];
    let b = [0.2, 0.5, 1.0, 0.1, 0.9];
    let c = [1.0; 5];
    let together = bootstrap_means(&[&a, &b, &c], 300, 9);
    let alone = bootstrap_means(&[&b], 300, 9);
    assert_eq!(together[1], alone[0]);
    assert_eq!(together.len(), 3);
    assert!(together[2].iter().all(|&m| (m - 1.0).abs() < 1e-15));
    assert_eq!(together[0].len(), 300);
    // Every resampled mean is a mean of 5 of the values.
    let lo = 0.1f64;
    assert!(
        together[0]
            .iter()
            .all(|&m| (lo - 1e-12..=0.9 + 1e-12).contains(&m))
    );
    assert!(
        bootstrap_means(&[&a, &b[..3]], 10, 1)[0].is_empty(),
        "ragged"
    );
}

/// On 2,000 queries the percentile interval of the mean difference is close to the
/// normal interval mean +- 1.96 se (the bootstrap's large-sample limit).
#[test]
fn bootstrap_interval_approaches_the_normal_interval() {
    let mut rng = crate::core::rng::Rng::new(4);
    let base: Vec<f64> = (0..2000).map(|_| rng.below(100) as f64 / 100.0).collect();
    let cand: Vec<f64> = base
        .iter()
        .map(|b| (b + (rng.below(61) as f64 - 25.0) / 100.0).clamp(0.0, 1.0))
        .collect();
    let boot = bootstrap_means(&[&base, &cand], 2000, 17);
    let settings = TestSettings::default();
    let c = compare_pair(&base, &cand, (&boot[0], &boot[1]), &settings);
    let d = differences(&base, &cand);
    let t = paired_t(&d).expect("defined");
    let se = c.difference / t.t;
    let (lo, hi) = c.ci.expect("interval");
    assert!(lo < c.difference && c.difference < hi);
    assert!(
        ((hi - lo) / (2.0 * 1.96 * se) - 1.0).abs() < 0.1,
        "{lo} {hi} {se}"
    );
    assert!(((lo + hi) / 2.0 - c.difference).abs() < 0.2 * se);
}

#[test]
fn compare_pair_and_adjust_by_hand() {
    let base = [0.0, 0.5, 1.0, 0.25];
    let cand = [1.0, 0.5, 1.0, 0.75];
    let boot = bootstrap_means(&[&base, &cand], 1000, 3);
    let s = TestSettings {
        resamples: 1000,
        permutations: 5000,
        seed: 3,
    };
    let c = compare_pair(&base, &cand, (&boot[0], &boot[1]), &s);
    assert_eq!(c.queries, 4);
    assert_eq!((c.baseline_mean, c.candidate_mean), (0.4375, 0.8125));
    assert_eq!(c.difference, 0.375);
    assert_eq!((c.record.wins, c.record.ties, c.record.losses), (2, 2, 0));
    // Nonzero differences 1 and 0.5: of 4 assignments, {} and {both} reach 1.5.
    assert_eq!(sign_flip_exact_p(&differences(&base, &cand)), Some(0.5));
    assert!((c.randomisation_p - 0.5).abs() < 0.03);
    let t = c.t_test.expect("defined");
    assert_eq!(t.df, 3);
    let (lo, hi) = c.ci.expect("ci");
    assert!((0.0..=0.375).contains(&lo) && (0.375..=1.0).contains(&hi));
    let same = compare_pair(&base, &base, (&boot[0], &boot[0]), &s);
    assert_eq!(same.randomisation_p, 1.0);
    assert_eq!(same.t_test, None);
    assert_eq!(same.ci, Some((0.0, 0.0)));
    let mut family = vec![c.clone(), same];
    adjust(&mut family);
    assert_eq!(
        family[0].randomisation_p_holm,
        (2.0 * c.randomisation_p).min(1.0)
    );
    assert_eq!(family[0].t_test_p_holm, Some((2.0 * t.p).min(1.0)));
    assert_eq!(family[1].t_test_p_holm, None);
    assert_eq!(family[1].randomisation_p_holm, 1.0);
}

#[test]
fn pairs_against_a_baseline_or_all() {
    assert_eq!(pairs(3, Some(1)), vec![(1, 0), (1, 2)]);
    assert_eq!(pairs(3, None), vec![(0, 1), (0, 2), (1, 2)]);
    assert!(pairs(1, None).is_empty());
}

fn outcome(qid: &str, p1: f64, rr: f64, at: &[(usize, f64, f64)]) -> QueryOutcome {
    QueryOutcome {
        qid: qid.into(),
        metrics: QueryMetrics {
            p1,
            rr,
            ..QueryMetrics::default()
        },
        at_k: at
            .iter()
            .map(|&(k, recall, ndcg)| AtK { k, recall, ndcg })
            .collect(),
        judged: None,
    }
}

#[test]
fn score_table_zero_fills_absent_queries() {
    assert_eq!(
        metric_names(&[5, 10, 5]),
        ["P@1", "MRR", "Recall@5", "Recall@10", "nDCG@5", "nDCG@10"]
    );
    let a = vec![
        outcome("q2", 1.0, 1.0, &[(5, 1.0, 0.9), (10, 1.0, 0.95)]),
        outcome("q1", 0.0, 0.5, &[(5, 0.5, 0.4), (10, 1.0, 0.6)]),
        outcome("unjudged", 1.0, 1.0, &[]),
    ];
    let b = vec![outcome("q1", 0.0, 0.25, &[(5, 0.0, 0.1), (10, 0.5, 0.3)])];
    let t = score_table(
        vec!["q1".into(), "q2".into()],
        &[5, 10],
        &[("a".into(), &a), ("b".into(), &b)],
    );
    assert_eq!(t.metrics.len(), 6);
    assert_eq!(t.runs[0].absent, 0);
    assert_eq!(t.runs[1].absent, 1);
    assert_eq!(t.runs[0].scores[1], vec![0.5, 1.0], "MRR in qid order");
    assert_eq!(t.runs[0].scores[5], vec![0.6, 0.95], "nDCG@10");
    assert_eq!(t.runs[1].scores[3], vec![0.5, 0.0], "q2 absent from b: 0");
    assert_eq!(t.run("b"), Some(1));
    assert_eq!(t.metric("ndcg@10"), Some(5));
}

/// Outcomes that carry bpref, Judged@k and Hole@k add those columns after the
/// effectiveness metrics; an absent query scores 0 on them too.
#[test]
fn score_table_adds_judgement_columns() {
    use crate::core::incomplete::{Coverage, JudgedMeasures};
    assert_eq!(
        judged_metric_names(&[5, 1, 5]),
        ["bpref", "Judged@5", "Judged@1", "Hole@5", "Hole@1"]
    );
    assert!(is_judged_metric("bpref") && is_judged_metric("judged@10"));
    assert!(is_judged_metric("Hole@3") && !is_judged_metric("nDCG@10"));
    let mut q1 = outcome("q1", 1.0, 1.0, &[(5, 1.0, 1.0)]);
    q1.judged = Some(JudgedMeasures {
        bpref: 0.75,
        at_k: vec![Coverage {
            k: 5,
            judged: 0.6,
            hole: 0.2,
        }],
    });
    let t = score_table(
        vec!["q0".into(), "q1".into()],
        &[5],
        &[("a".into(), std::slice::from_ref(&q1))],
    );
    assert_eq!(
        t.metrics,
        [
            "P@1", "MRR", "Recall@5", "nDCG@5", "bpref", "Judged@5", "Hole@5"
        ]
    );
    assert_eq!(t.runs[0].scores[4], vec![0.0, 0.75]);
    assert_eq!(t.runs[0].scores[5], vec![0.0, 0.6]);
    assert_eq!(t.runs[0].scores[6], vec![0.0, 0.2]);
    // Without them, the table is the effectiveness metrics only.
    q1.judged = None;
    let plain = score_table(vec!["q1".into()], &[5], &[("a".into(), &[q1])]);
    assert_eq!(plain.metrics, metric_names(&[5]));
}

/// Scores written and read back are the same f64s, to the last bit (1/3 and 0.1 + 0.2
/// are where a JSON number parser that is not correctly rounded slips).
#[test]
fn score_tables_round_trip_exactly() {
    let mut rng = crate::core::rng::Rng::new(8);
    let column: Vec<f64> = (0..2000)
        .map(|i| match i % 4 {
            0 => 1.0 / f64::from(i + 3),
            1 => (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64,
            2 => 0.1 + 0.2,
            _ => 1.0 / (f64::from(i) + 2.0).log2(),
        })
        .collect();
    let table = ScoreTable {
        qids: (0..2000).map(|i| format!("q{i}")).collect(),
        metrics: vec!["nDCG@10".into(), "MRR".into()],
        runs: vec![RunScores {
            label: "r".into(),
            absent: 0,
            scores: vec![column.clone(), vec![0.0; 2000]],
        }],
        clusters: Vec::new(),
    };
    let text = serde_json::to_string(&table).expect("json");
    let back: ScoreTable = serde_json::from_str(&text).expect("read back");
    let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&back.runs[0].scores[0]), bits(&column));
    assert_eq!(back, table);
}
