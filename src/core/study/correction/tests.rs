use super::*;

/// ppi_py's and statsmodels' values, made by scripts/correction_reference.py
/// (tests/data/PROVENANCE.md).
const REFERENCE: &str = include_str!("../../../../tests/data/correction/reference.json");

fn bools(v: &serde_json::Value) -> Vec<bool> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number") == 1.0)
        .collect()
}

fn same(ours: &Interval, theirs: &serde_json::Value, what: &str) {
    for (o, key) in [
        (ours.estimate, "estimate"),
        (ours.low, "low"),
        (ours.high, "high"),
    ] {
        let t = theirs[key].as_f64().expect("number");
        assert!(
            (o - t).abs() < 1e-10,
            "{what} {key}: ours {o}, reference {t}"
        );
    }
}

#[test]
fn ppi_wilson_and_rogan_gladen_equal_the_references() {
    let r: serde_json::Value = serde_json::from_str(REFERENCE).expect("reference.json");
    let sets = r["sets"].as_array().expect("sets");
    assert_eq!(sets.len(), 4);
    for s in sets {
        let name = s["name"].as_str().expect("name");
        let (h, j) = (bools(&s["human"]), bools(&s["judge"]));
        let labelled: Vec<(bool, bool)> = h.into_iter().zip(j).collect();
        let c = correct(&labelled, &bools(&s["judge_only"]), 0.05).expect("corrected");
        assert!((c.raw_judge - s["raw_judge"].as_f64().expect("raw")).abs() < 1e-12);
        same(
            &c.ppi.expect("ppi").interval,
            &s["ppi"],
            &format!("{name}: PPI"),
        );
        assert_eq!(c.ppi.expect("ppi").lam, 1.0);
        same(
            &c.ppi_plus.expect("ppi++").interval,
            &s["ppi_plus"],
            &format!("{name}: PPI++"),
        );
        same(
            &c.sensitivity.expect("sens"),
            &s["sensitivity"],
            &format!("{name}: sens"),
        );
        same(
            &c.specificity.expect("spec"),
            &s["specificity"],
            &format!("{name}: spec"),
        );
        match (&c.rogan_gladen, s["rogan_gladen"].is_null()) {
            (Some(rg), false) => same(rg, &s["rogan_gladen"], &format!("{name}: Rogan-Gladen")),
            (None, true) => {}
            (ours, _) => panic!("{name}: Rogan-Gladen {ours:?} vs {}", s["rogan_gladen"]),
        }
        assert_eq!(c.too_few, labelled.len() < FEW_HUMAN_LABELS, "{name}");
    }
}

#[test]
fn rogan_gladen_by_hand_and_where_it_is_undefined() {
    // A judge with sensitivity 0.85 and specificity 0.75 reports a true 60% pass rate
    // as 0.85 * 0.60 + 0.25 * 0.40 = 61%; the correction maps it back:
    // (0.61 + 0.75 - 1) / (0.85 + 0.75 - 1) = 0.6.
    let rg = rogan_gladen((0.61, 1000), (0.85, 100), (0.75, 100), 0.05).expect("defined");
    assert!((rg.estimate - 0.6).abs() < 1e-12);
    assert!(rg.low < 0.6 && rg.high > 0.6);
    // The hand case: p = 0.70, spec = 0.85, sens = 0.90:
    // (0.70 + 0.85 - 1) / (0.90 + 0.85 - 1) = 0.55 / 0.75 = 0.7333.
    let hand = rogan_gladen((0.70, 300), (0.90, 60), (0.85, 40), 0.05).expect("defined");
    assert!((hand.estimate - 0.55 / 0.75).abs() < 1e-12);
    assert!((hand.estimate - 0.7333).abs() < 5e-5);
    // A judge no better than chance (sens + spec <= 1) cannot be corrected.
    assert!(rogan_gladen((0.5, 100), (0.5, 10), (0.5, 10), 0.05).is_none());
    // Clipped: a reported rate below the false-pass rate maps to 0.
    let low = rogan_gladen((0.1, 100), (0.9, 50), (0.8, 50), 0.05).expect("defined");
    assert_eq!(low.estimate, 0.0);
}

#[test]
fn a_judge_that_never_varies_takes_no_weight_and_nothing_labelled_gives_nothing() {
    let labelled = [(true, true), (false, true), (true, true)];
    let c = correct(&labelled, &[true, true], 0.05).expect("corrected");
    // Every judge label is a pass: PPI++'s lam is 0, the human mean alone.
    let p = c.ppi_plus.expect("ppi++");
    assert_eq!(p.lam, 0.0);
    assert!((p.interval.estimate - 2.0 / 3.0).abs() < 1e-12);
    assert!(c.too_few);
    assert!(correct(&[], &[true], 0.05).is_none());
    // Wilson by hand: 8 of 10 at 95%: centre (0.8 + z^2/20) / (1 + z^2/10).
    let w = wilson(8, 10, 0.05).expect("interval");
    let z = normal_quantile(0.975);
    let centre = (0.8 + z * z / 20.0) / (1.0 + z * z / 10.0);
    assert!(((w.low + w.high) / 2.0 - centre).abs() < 1e-12);
}
