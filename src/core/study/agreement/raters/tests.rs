use super::*;

use serde_json::Value;

fn data_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/multi_rater")
}

/// A rating table: one row per subject, one optional label per rater.
fn table(file: &str) -> Vec<Vec<Option<String>>> {
    let text = std::fs::read_to_string(data_dir().join(file)).expect("table");
    text.lines()
        .skip(1)
        .map(|line| {
            line.split(',')
                .skip(1)
                .map(|v| (!v.is_empty()).then(|| v.to_string()))
                .collect()
        })
        .collect()
}

fn reference() -> Value {
    let text = std::fs::read_to_string(data_dir().join("reference.json")).expect("reference");
    serde_json::from_str(&text).expect("json")
}

/// The ratings of one data set: its two tables as the criteria `full` and `missing`.
fn ratings(set: &Value) -> Ratings {
    let labels: Vec<String> = set["labels"]
        .as_array()
        .expect("labels")
        .iter()
        .map(|l| l.as_str().expect("label").to_string())
        .collect();
    let raters = set["raters"].as_u64().expect("raters") as usize;
    let tables = [
        table(set["criteria"]["full"].as_str().expect("file")),
        table(set["criteria"]["missing"].as_str().expect("file")),
    ];
    let mut r = Ratings::new(
        (1..=raters).map(|i| format!("rater{i}")).collect(),
        labels,
        set["ordered"].as_bool().expect("ordered"),
        vec!["full".into(), "missing".into()],
    );
    for (full, missing) in tables[0].iter().zip(&tables[1]) {
        r.push_item(|c, rater| [full, missing][c][rater].as_deref());
    }
    r
}

fn close(name: &str, got: Option<f64>, want: &Value) {
    let want = want
        .as_f64()
        .unwrap_or_else(|| panic!("{name}: no reference"));
    let got = got.unwrap_or_else(|| panic!("{name}: undefined, reference {want}"));
    assert!(
        (got - want).abs() < 1e-9,
        "{name}: {got} vs reference {want}"
    );
}

/// Every statistic of every row against the reference script's values
/// (statsmodels, krippendorff, scikit-learn).
fn check_set(name: &str) {
    let all = reference();
    let set = &all["sets"][name];
    let report = rater_agreement(
        &ratings(set),
        Bootstrap {
            resamples: 200,
            seed: 7,
        },
    );
    assert_eq!(report.rows.len(), 3);
    for row in &report.rows {
        let want = &set["rows"][row.criterion.as_str()];
        let at = |s: &str| format!("{name} {} {s}", row.criterion);
        close(&at("fleiss"), row.fleiss_kappa.value, &want["fleiss"]);
        close(
            &at("alpha nominal"),
            row.alpha_nominal.value,
            &want["alpha_nominal"],
        );
        assert_eq!(
            row.complete_units as u64,
            want["complete_units"].as_u64().expect("n")
        );
        assert_eq!(row.units as u64, want["units"].as_u64().expect("n"));
        if report.ordered {
            let (o, i) = (
                row.alpha_ordinal.expect("ord"),
                row.alpha_interval.expect("int"),
            );
            close(&at("alpha ordinal"), o.value, &want["alpha_ordinal"]);
            close(&at("alpha interval"), i.value, &want["alpha_interval"]);
        } else {
            assert!(row.alpha_ordinal.is_none() && row.alpha_interval.is_none());
        }
        let pairs = want["pairs"].as_array().expect("pairs");
        assert_eq!(row.pairs.len(), pairs.len());
        for (got, want) in row.pairs.iter().zip(pairs) {
            let at = at(&format!("{}/{}", got.first, got.second));
            assert_eq!(got.first, want["first"].as_str().expect("first"));
            assert_eq!(got.units as u64, want["units"].as_u64().expect("units"));
            close(&format!("{at} kappa"), got.kappa.value, &want["kappa"]);
            if report.ordered {
                let linear = got.linear.expect("linear").value;
                close(&format!("{at} linear"), linear, &want["linear"]);
                let quadratic = got.quadratic.expect("quadratic").value;
                close(&format!("{at} quadratic"), quadratic, &want["quadratic"]);
            }
        }
        // Every CI holds its point value on these data.
        let e = row.alpha_nominal;
        assert!(e.lo.expect("lo") <= e.value.expect("v") && e.value <= e.hi);
    }
}

#[test]
fn fleiss_1971_diagnoses_match_statsmodels_krippendorff_and_sklearn() {
    check_set("diagnoses");
}

#[test]
fn ordered_anxiety_ratings_match_krippendorff_and_sklearn_weighted_kappa() {
    check_set("anxiety");
}

#[test]
fn hand_computed_three_raters() {
    // Two units, three raters, labels a/b. Unit 1: a a b; unit 2: b b (third missing).
    let mut r = Ratings::new(
        vec!["x".into(), "y".into(), "z".into()],
        vec!["a".into(), "b".into()],
        false,
        vec!["c".into()],
    );
    let units = [["a", "a", "b"], ["b", "b", ""]];
    for u in &units {
        r.push_item(|_, rater| Some(u[rater]).filter(|l| !l.is_empty()));
    }
    let rep = rater_agreement(
        &r,
        Bootstrap {
            resamples: 10,
            seed: 1,
        },
    );
    let row = &rep.rows[0];
    // Coincidences: unit 1 (m = 3) adds 1/2 per ordered pair: o_aa = 1, o_ab = o_ba = 1;
    // unit 2 (m = 2) adds o_bb = 2. n_a = 2, n_b = 3, n = 5.
    // alpha = 1 - (n - 1) (o_ab + o_ba) / (2 n_a n_b) = 1 - 4 * 2 / 12 = 1/3.
    assert!((row.alpha_nominal.value.expect("alpha") - 1.0 / 3.0).abs() < 1e-12);
    // Fleiss over the complete unit only: P_1 = (2^2 + 1 - 3) / 6 = 1/3,
    // p = (2/3, 1/3), P_e = 5/9, kappa = (1/3 - 5/9) / (4/9) = -1/2.
    assert!((row.fleiss_kappa.value.expect("fleiss") + 0.5).abs() < 1e-12);
    assert_eq!((row.units, row.complete_units, row.items), (2, 1, 2));
    // x/y agree on both units (a, b): kappa 1; x/z only on unit 1 (a vs b):
    // p_o = 0 and p_e = 0, kappa 0.
    assert_eq!(row.pair("x", "y").expect("pair").kappa.value, Some(1.0));
    let xz = row.pair("z", "x").expect("pair");
    assert_eq!((xz.units, xz.kappa.value), (1, Some(0.0)));
    assert_eq!(rep.rows[1].criterion, "Overall");
    assert_eq!(rep.rows[1].alpha_nominal.value, row.alpha_nominal.value);
}

#[test]
fn weighted_kappa_hand_computed() {
    // Labels 0 < 1 < 2; A: 0 1 2, B: 0 2 2. Observed: (0,0) (1,2) (2,2).
    let c = Confusion::with_labels(
        &[("0", "0"), ("1", "2"), ("2", "2")],
        vec!["0".into(), "1".into(), "2".into()],
    );
    // rows (1,1,1), cols (1,0,2), n = 3; E_ij = row_i col_j / 3.
    // linear: observed 1; expected = sum |i-j| r_i c_j / 3 = (0+0+2*2 + 1+0+1*2 + 2+0+0)/3 = 9/3.
    let linear = weighted_kappa(&c, Weights::Linear).expect("linear");
    assert!((linear - (1.0 - 1.0 / 3.0)).abs() < 1e-12);
    // quadratic: observed 1; expected = (0+0+4*2 + 1+0+1*2 + 4+0+0)/3 = 15/3.
    let quadratic = weighted_kappa(&c, Weights::Quadratic).expect("quadratic");
    assert!((quadratic - (1.0 - 1.0 / 5.0)).abs() < 1e-12);
}

#[test]
fn bootstrap_is_seeded_and_skips_undefined_resamples() {
    let all = reference();
    let r = ratings(&all["sets"]["anxiety"]);
    let boot = Bootstrap {
        resamples: 300,
        seed: 11,
    };
    assert_eq!(rater_agreement(&r, boot), rater_agreement(&r, boot));
    let other = rater_agreement(&r, Bootstrap { seed: 12, ..boot });
    assert_ne!(
        other.rows[2].alpha_ordinal,
        rater_agreement(&r, boot).rows[2].alpha_ordinal
    );
    // One unit that everyone labels alike: alpha undefined in every resample.
    let mut same = Ratings::new(
        vec!["x".into(), "y".into(), "z".into()],
        vec!["a".into(), "b".into()],
        false,
        vec!["c".into()],
    );
    same.push_item(|_, _| Some("a"));
    let rep = rater_agreement(&same, boot);
    assert_eq!(rep.rows[0].alpha_nominal.value, None);
    assert_eq!(rep.rows[0].alpha_nominal.undefined_resamples, 300);
    assert_eq!(rep.rows[0].alpha_nominal.lo, None);
}
