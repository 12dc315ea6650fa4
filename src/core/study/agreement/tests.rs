use super::*;

fn pairs(a: &[&str], b: &[&str]) -> Vec<(String, String)> {
    a.iter()
        .zip(b)
        .map(|(x, y)| ((*x).to_string(), (*y).to_string()))
        .collect()
}

#[test]
fn hand_computed_two_by_two() {
    let c = Confusion::new(&pairs(&["p", "p", "f", "f"], &["p", "f", "f", "f"]));
    assert_eq!(c.labels, vec!["f", "p"]);
    assert_eq!(c.counts, vec![vec![2, 0], vec![1, 1]]);
    assert!((raw_agreement(&c).expect("def") - 0.75).abs() < 1e-15);
    // p_e = 0.5*0.75 + 0.5*0.25 = 0.5 -> kappa = 0.25 / 0.5
    assert!((cohen_kappa(&c).expect("def") - 0.5).abs() < 1e-15);
    // F1(f) = 2*2/(2+3) = 0.8, F1(p) = 2*1/(2+1) = 2/3
    assert!((macro_f1(&c).expect("def") - (0.8 + 2.0 / 3.0) / 2.0).abs() < 1e-15);
}

#[test]
fn three_classes_hand_computed() {
    // A: y y n m ; B: y n n y
    let c = Confusion::new(&pairs(&["y", "y", "n", "m"], &["y", "n", "n", "y"]));
    // p_o = 2/4; marginals A: y .5 n .25 m .25, B: y .5 n .5 m 0 -> p_e = .25 + .125 = .375
    assert!((cohen_kappa(&c).expect("def") - (0.5 - 0.375) / 0.625).abs() < 1e-15);
    // F1: y: tp1, A2, B2 -> .5; n: tp1, A1, B2 -> 2/3; m: tp0 -> 0
    assert!((macro_f1(&c).expect("def") - (0.5 + 2.0 / 3.0) / 3.0).abs() < 1e-15);
}

#[test]
fn kappa_undefined_when_chance_agreement_is_one() {
    let c = Confusion::new(&pairs(&["pass", "pass"], &["pass", "pass"]));
    assert_eq!(cohen_kappa(&c), None);
    assert_eq!(raw_agreement(&c), Some(1.0));
    let r = agreement(
        &[pairs(&["pass"], &["pass"])],
        Bootstrap {
            resamples: 50,
            seed: 1,
        },
    );
    assert_eq!(r.kappa.value, None);
    assert_eq!(r.kappa.undefined_resamples, 50);
    assert_eq!(r.kappa.lo, None);
}

#[test]
fn perfect_disagreement_is_minus_one() {
    let c = Confusion::new(&pairs(&["p", "f"], &["f", "p"]));
    assert!((cohen_kappa(&c).expect("def") + 1.0).abs() < 1e-15);
}

#[test]
fn percentile_interpolates_like_numpy() {
    let v = [1.0, 2.0, 3.0, 4.0];
    assert_eq!(percentile(&v, 0.0), Some(1.0));
    assert_eq!(percentile(&v, 100.0), Some(4.0));
    // numpy.percentile([1,2,3,4], 2.5) = 1.075
    assert!((percentile(&v, 2.5).expect("def") - 1.075).abs() < 1e-12);
}

fn typical_items() -> Vec<Vec<(String, String)>> {
    let mut rng = Rng::new(42);
    (0..120)
        .map(|_| {
            (0..4)
                .map(|_| {
                    let a = if rng.below(10) < 6 { "pass" } else { "fail" };
                    let b = if rng.below(10) < 8 {
                        a
                    } else if a == "pass" {
                        "fail"
                    } else {
                        "pass"
                    };
                    (a.to_string(), b.to_string())
                })
                .collect()
        })
        .collect()
}

#[test]
fn bootstrap_ci_contains_point_and_is_reproducible() {
    let items = typical_items();
    let boot = Bootstrap {
        resamples: 1000,
        seed: 9,
    };
    let r = agreement(&items, boot);
    for e in [r.kappa, r.macro_f1, r.raw_agreement] {
        let (v, lo, hi) = (e.value.expect("v"), e.lo.expect("lo"), e.hi.expect("hi"));
        assert!(lo <= v && v <= hi, "{lo} <= {v} <= {hi}");
        assert!(hi - lo > 0.0 && hi - lo < 0.5);
    }
    assert_eq!(r, agreement(&items, boot), "same seed, same CI");
    let other = agreement(
        &items,
        Bootstrap {
            resamples: 1000,
            seed: 10,
        },
    );
    assert_ne!(
        r.kappa.lo, other.kappa.lo,
        "another seed moves the interval"
    );
    assert_eq!(r.units, 480);
}

#[test]
fn pooled_items_resample_whole_items() {
    // Two criteria per item; pooled counts use every pair.
    let items = vec![
        pairs(&["p", "f"], &["p", "f"]),
        pairs(&["p", "p"], &["f", "p"]),
    ];
    let r = agreement(
        &items,
        Bootstrap {
            resamples: 10,
            seed: 1,
        },
    );
    assert_eq!(r.confusion.total(), 4);
    assert_eq!(r.items, 2);
}

fn triples(h1: &str, h2: &str, j: &str) -> Vec<Vec<[String; 3]>> {
    h1.chars()
        .zip(h2.chars())
        .zip(j.chars())
        .map(|((a, b), c)| vec![[a.to_string(), b.to_string(), c.to_string()]])
        .collect()
}

#[test]
fn judge_within_noise_point_estimate_by_hand() {
    // h1 p p f f, h2 p f f f: kappa 0.5 (p_o 3/4, p_e 1/2). The judge copies h1:
    // kappa(judge, h1) = 1 -> +0.5; kappa(judge, h2) = 0.5 -> 0.
    let items = triples("ppff", "pfff", "ppff");
    let r = judge_within_noise(
        &items,
        Bootstrap {
            resamples: 200,
            seed: 3,
        },
    );
    assert_eq!(r.items, 4);
    assert!((r.vs_first.value.expect("defined") - 0.5).abs() < 1e-12);
    assert!(r.vs_second.value.expect("defined").abs() < 1e-12);
}

#[test]
fn judge_within_noise_resamples_are_paired() {
    // Recompute every resample independently: the same item draws (same Rng stream)
    // feed both kappas; the percentiles must match exactly.
    let h1 = "ppffpfpfppffpfpfppfp";
    let h2 = "pfffpfppppffffpfpffp";
    let j = "ppfppfpfpfffpfpppffp";
    let items = triples(h1, h2, j);
    let boot = Bootstrap {
        resamples: 500,
        seed: 11,
    };
    let r = judge_within_noise(&items, boot);
    let mut rng = Rng::new(boot.seed);
    let (mut d1, mut d2) = (Vec::new(), Vec::new());
    let n = items.len();
    for _ in 0..boot.resamples {
        let draw: Vec<usize> = (0..n).map(|_| rng.below(n)).collect();
        let pairs = |a: usize, b: usize| -> Vec<(String, String)> {
            draw.iter()
                .map(|&i| (items[i][0][a].clone(), items[i][0][b].clone()))
                .collect()
        };
        let kappa = |a, b| cohen_kappa(&Confusion::new(&pairs(a, b)));
        if let (Some(hh), Some(j1)) = (kappa(0, 1), kappa(2, 0)) {
            d1.push(j1 - hh);
        }
        if let (Some(hh), Some(j2)) = (kappa(0, 1), kappa(2, 1)) {
            d2.push(j2 - hh);
        }
    }
    d1.sort_by(f64::total_cmp);
    d2.sort_by(f64::total_cmp);
    let close = |a: Option<f64>, b: Option<f64>| {
        let (a, b) = (a.expect("defined"), b.expect("defined"));
        assert!((a - b).abs() < 1e-12, "{a} vs {b}");
    };
    close(r.vs_first.lo, percentile(&d1, 2.5));
    close(r.vs_first.hi, percentile(&d1, 97.5));
    close(r.vs_second.lo, percentile(&d2, 2.5));
    close(r.vs_second.hi, percentile(&d2, 97.5));
    assert_eq!(r.vs_first.undefined_resamples + d1.len(), boot.resamples);
    assert!(r.vs_first.contains_zero().is_some());
}
