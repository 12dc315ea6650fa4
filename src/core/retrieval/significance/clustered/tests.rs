use super::*;

/// statsmodels' and scipy's values, made by scripts/clustered_reference.py
/// (tests/data/PROVENANCE.md).
const REFERENCE: &str = include_str!("../../../../../tests/data/significance/clustered.json");

fn reference() -> serde_json::Value {
    serde_json::from_str(REFERENCE).expect("clustered.json")
}

fn floats(v: &serde_json::Value) -> Vec<f64> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect()
}

fn groups(v: &serde_json::Value) -> Vec<usize> {
    let names: Vec<String> = v
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g.to_string())
        .collect();
    cluster_numbers(&names)
}

fn near(ours: f64, theirs: f64, tol: f64, what: &str) {
    assert!(
        (ours - theirs).abs() <= tol,
        "{what}: ours {ours:e}, reference {theirs:e}"
    );
}

#[test]
fn clustered_se_equals_statsmodels_cluster_cov_on_unequal_clusters() {
    let r = reference();
    let sets = r["clustered"].as_array().expect("sets");
    assert_eq!(sets.len(), 5);
    for set in sets {
        let name = set["name"].as_str().expect("name");
        let g = groups(&set["groups"]);
        let m = if set.get("values").is_some() {
            clustered_mean(&floats(&set["values"]), &g).expect("a mean")
        } else {
            clustered_difference(&floats(&set["baseline"]), &floats(&set["candidate"]), &g)
                .expect("a difference")
        };
        near(m.mean, set["mean"].as_f64().expect("mean"), 1e-12, name);
        let se = m.se_clustered.expect("ten clusters");
        near(se, set["se_clustered"].as_f64().expect("se"), 1e-9, name);
        near(
            m.se_naive,
            set["se_naive"].as_f64().expect("naive"),
            1e-12,
            name,
        );
        assert_eq!(m.clusters, 10, "{name}");
        let deff = m.design_effect.expect("a design effect");
        near(deff, (se / m.se_naive).powi(2), 1e-12, name);
        if let Some(b) = set.get("se_binary") {
            // sqrt(p(1-p)/n) on 0/1 values.
            near(m.se_naive, b.as_f64().expect("binary"), 1e-12, name);
        }
    }
}

#[test]
fn normal_quantile_and_tail_equal_scipy() {
    let r = reference();
    for pair in r["normal"]["ppf"].as_array().expect("ppf") {
        let (p, z) = (pair[0].as_f64().expect("p"), pair[1].as_f64().expect("z"));
        near(normal_quantile(p), z, 1e-13 * z.abs().max(1.0), "ppf");
    }
    for pair in r["normal"]["sf"].as_array().expect("sf") {
        let (z, sf) = (pair[0].as_f64().expect("z"), pair[1].as_f64().expect("sf"));
        near(
            normal_upper_tail(z),
            sf,
            1e-13 * sf.max(1e-300).max(1e-3),
            "sf",
        );
    }
}

#[test]
fn by_hand_two_clusters_of_two() {
    // y = 1, 0 | 1, 1: mean 0.75, e = 0.25, -0.75 | 0.25, 0.25; cluster sums -0.5, 0.5;
    // V = 2/1 * (0.25 + 0.25) / 16 = 1/16, SE = 0.25. Naive: sum e^2 = 0.75,
    // SE = sqrt(0.75)/4 = sqrt(0.75/16) (= sqrt(p(1-p)/n) with p = 0.75, n = 4).
    let m = clustered_mean(&[1.0, 0.0, 1.0, 1.0], &[0, 0, 1, 1]).expect("mean");
    assert!((m.mean - 0.75).abs() < 1e-15);
    assert!((m.se_clustered.expect("two clusters") - 0.25).abs() < 1e-15);
    assert!((m.se_naive - (0.75f64 / 16.0).sqrt()).abs() < 1e-15);
    assert!((m.design_effect.expect("deff") - (1.0 / 16.0) / (0.75 / 16.0)).abs() < 1e-12);
    // One cluster: no clustered SE; intervals fall back to the naive one,
    // sqrt(0.25 + 0.25) / 2.
    let one = clustered_mean(&[1.0, 0.0], &[3, 3]).expect("mean");
    assert_eq!((one.clusters, one.se_clustered), (1, None));
    assert!((one.se() - 0.5f64.sqrt() / 2.0).abs() < 1e-15);
    assert!(clustered_mean(&[], &[]).is_none());
    assert!(clustered_mean(&[1.0], &[0, 1]).is_none());
}

#[test]
fn mde_by_hand() {
    // (1.959964 + 0.841621) * 0.02 = 0.0560317.
    assert!((mde_80(0.02) - 0.056_031_7).abs() < 1e-12);
    let m = clustered_mean(&[1.0, 0.0, 1.0, 1.0], &[0, 0, 1, 1]).expect("mean");
    assert!((m.mde_80() - 2.801_585 * 0.25).abs() < 1e-12);
}

#[test]
fn the_gate_passes_only_when_the_lower_end_clears_the_margin() {
    let base = [0.5, 0.6, 0.7, 0.8, 0.4, 0.3];
    let clusters = [0, 0, 1, 1, 2, 2];
    // Against itself: every difference 0, interval [0, 0]: passes any margin > 0, not 0.
    let same = non_inferiority(&base, &base, &clusters, 0.01, 0.05).expect("verdict");
    assert!(same.pass);
    assert_eq!((same.lower, same.upper), (0.0, 0.0));
    assert!(
        !non_inferiority(&base, &base, &clusters, 0.0, 0.05)
            .expect("v")
            .pass
    );
    // Worse by 0.1 everywhere: interval [-0.1, -0.1].
    let worse: Vec<f64> = base.iter().map(|b| b - 0.1).collect();
    let v = non_inferiority(&base, &worse, &clusters, 0.05, 0.05).expect("verdict");
    assert!(!v.pass);
    assert!((v.lower + 0.1).abs() < 1e-12);
    assert!(
        non_inferiority(&base, &worse, &clusters, 0.11, 0.05)
            .expect("v")
            .pass
    );
    // A spread difference: lower = mean - z_{0.975} se, checked by hand.
    let cand = [0.45, 0.6, 0.75, 0.8, 0.35, 0.3];
    let v = non_inferiority(&base, &cand, &clusters, 0.02, 0.05).expect("verdict");
    let d = clustered_difference(&base, &cand, &clusters).expect("d");
    let z = normal_quantile(0.975);
    assert!((v.lower - (d.mean - z * d.se())).abs() < 1e-15);
    assert_eq!(v.pass, v.lower > -0.02);
    assert!(matches!(
        non_inferiority(&base, &cand, &clusters, -0.1, 0.05),
        Err(GateError::Margin(_))
    ));
    assert!(matches!(
        non_inferiority(&base, &cand, &clusters, 0.1, 1.0),
        Err(GateError::Alpha(_))
    ));
    assert!(matches!(
        non_inferiority(&base, &cand[..3], &clusters, 0.1, 0.05),
        Err(GateError::Lengths(..))
    ));
}

#[test]
fn cluster_numbers_follow_first_appearance() {
    assert_eq!(
        cluster_numbers(&["b", "a", "b", "c", "a"]),
        vec![0, 1, 0, 2, 1]
    );
}
