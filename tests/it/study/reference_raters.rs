//! `raglab agree --reviewers a,b,c --json` through the real binary on a study of
//! three reviewers: the anxiety ratings of tests/data/multi_rater (20 subjects,
//! 3 raters, ordered labels 1-6; a second criterion with some labels missing),
//! imported as signed labels, against the values of the `krippendorff` package,
//! statsmodels and scikit-learn (scripts/multi_rater_reference.py) to 1e-9; the
//! lead sees every item, a reviewer only the items revealed to them.

use std::path::PathBuf;

use serde_json::Value;

use crate::common::Env;

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/multi_rater")
        .join(file)
}

/// A table's rows: per subject, one optional label per rater.
fn table(file: &str) -> Vec<Vec<Option<String>>> {
    std::fs::read_to_string(data(file))
        .expect("table")
        .lines()
        .skip(1)
        .map(|l| {
            l.split(',')
                .skip(1)
                .map(|v| (!v.is_empty()).then(|| v.to_string()))
                .collect()
        })
        .collect()
}

const RUBRIC: &str = r#"name = "anxiety"
version = "1"
labels = ["1", "2", "3", "4", "5", "6"]
ordered = true

[[criteria]]
key = "full"
name = "full"
definition = "Anxiety, every rating."

[[criteria]]
key = "missing"
name = "missing"
definition = "Anxiety, some ratings left out."
"#;

/// The study: 20 items, each labelled by rater1..rater3 on both criteria (item by
/// item, rater by rater), from the two tables.
fn study() -> (Env, String) {
    let env = Env::new();
    let dir = env.dir.path();
    let rubric = dir.join("anxiety.toml");
    std::fs::write(&rubric, RUBRIC).expect("rubric");
    let rubric = rubric.to_str().expect("utf8").to_string();
    let (full, missing) = (table("anxiety.csv"), table("anxiety_missing.csv"));
    let mut items = String::new();
    let mut labels = String::new();
    for s in 0..full.len() {
        items.push_str(&format!(
            "{{\"item_id\": \"s{s:02}\", \"question\": \"Q{s}?\", \"answer\": \"A{s}\"}}\n"
        ));
        for r in 0..3 {
            for (key, t) in [("full", &full), ("missing", &missing)] {
                if let Some(v) = &t[s][r] {
                    labels.push_str(&format!(
                        "{{\"item_id\": \"s{s:02}\", \"reviewer\": \"rater{}\", \"criterion\": \"{key}\", \"label\": \"{v}\"}}\n",
                        r + 1
                    ));
                }
            }
        }
    }
    let (fi, fl) = (dir.join("items.jsonl"), dir.join("labels.jsonl"));
    std::fs::write(&fi, items).expect("items");
    std::fs::write(&fl, labels).expect("labels");
    let r = rubric.as_str();
    env.ok(&[
        "--rubric",
        r,
        "annotate",
        "create",
        "--from-file",
        fi.to_str().expect("utf8"),
    ]);
    env.ok(&[
        "--rubric",
        r,
        "labels",
        "import",
        fl.to_str().expect("utf8"),
    ]);
    (env, rubric)
}

fn close(what: &str, got: &Value, want: &Value) {
    let (g, w) = (got.as_f64(), want.as_f64());
    let (Some(g), Some(w)) = (g, w) else {
        panic!("{what}: {got} vs reference {want}");
    };
    assert!((g - w).abs() < 1e-9, "{what}: {g} vs reference {w}");
}

/// Every row of `raters` (the JSON's all-reviewer report) against the reference rows.
fn check(raters: &Value, want_rows: &Value) {
    let rows = raters["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "full, missing, Overall");
    for row in rows {
        let name = row["criterion"].as_str().expect("name");
        let want = &want_rows[name];
        for (got, key) in [
            ("fleiss_kappa", "fleiss"),
            ("alpha_nominal", "alpha_nominal"),
            ("alpha_ordinal", "alpha_ordinal"),
            ("alpha_interval", "alpha_interval"),
        ] {
            close(&format!("{name} {key}"), &row[got]["value"], &want[key]);
        }
        assert_eq!(row["complete_units"], want["complete_units"], "{name}");
        let pairs = row["pairs"].as_array().expect("pairs");
        let want_pairs = want["pairs"].as_array().expect("pairs");
        assert_eq!(pairs.len(), want_pairs.len());
        for (p, w) in pairs.iter().zip(want_pairs) {
            assert_eq!((&p["first"], &p["second"]), (&w["first"], &w["second"]));
            assert_eq!(p["units"], w["units"]);
            for k in ["kappa", "linear", "quadratic"] {
                close(&format!("{name} {} {k}", p["first"]), &p[k]["value"], &w[k]);
            }
            let (lo, hi) = (p["kappa"]["lo"].as_f64(), p["kappa"]["hi"].as_f64());
            assert!(lo.expect("lo") <= hi.expect("hi"), "{name}: a CI");
        }
    }
}

/// irrCAC's AC1 and Brennan-Prediger (scripts/chance_corrected_reference.py).
fn chance_reference() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("chance_corrected.json")).expect("ref"))
        .expect("json")
}

/// A coefficient (raglab's JSON shape) against irrCAC's: value, pa, pe, se and the
/// interval, each to 1e-9.
fn check_chance(what: &str, got: &Value, want: &Value, n: &Value) {
    close(
        &format!("{what} value"),
        &got["value"],
        &want["coefficient"],
    );
    for k in ["pa", "pe", "se"] {
        close(&format!("{what} {k}"), &got[k], &want[k]);
    }
    close(&format!("{what} lo"), &got["lo"], &want["ci95"][0]);
    close(&format!("{what} hi"), &got["hi"], &want["ci95"][1]);
    assert_eq!(&got["units"], n, "{what}: units");
}

/// Label counts per subject of a table (subjects x raters, missing allowed).
fn counts(rows: &[Vec<Option<String>>], labels: &[String]) -> Vec<Vec<u32>> {
    rows.iter()
        .map(|r| {
            let mut c = vec![0u32; labels.len()];
            for v in r.iter().flatten() {
                c[labels.iter().position(|l| l == v).expect("a known label")] += 1;
            }
            c
        })
        .collect()
}

fn labels_of(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("labels")
        .iter()
        .map(|l| l.as_str().expect("label").to_string())
        .collect()
}

/// Gwet's AC1 and Brennan-Prediger against irrCAC 0.4.4 on Fleiss' diagnoses (six
/// raters; full, some labels missing, both pooled), the anxiety ratings with subjects
/// left with one label or none, and two PubMedQA rater pairs (1,000 items).
#[test]
fn ac1_and_brennan_prediger_match_irrcac() {
    use raglab::core::agreement::chance::{Chance, chance_corrected};
    let irrcac = chance_reference();
    let as_json = |units: &[Vec<u32>], q: usize, kind| {
        serde_json::to_value(chance_corrected(units, q, kind)).expect("json")
    };
    let check = |what: &str, units: &[Vec<u32>], q: usize, want: &Value| {
        let ac1 = as_json(units, q, Chance::Ac1);
        check_chance(&format!("{what} AC1"), &ac1, &want["ac1"], &want["n"]);
        let bp = as_json(units, q, Chance::BrennanPrediger);
        check_chance(&format!("{what} BP"), &bp, &want["bp"], &want["n"]);
    };
    let diagnoses = &irrcac["sets"]["diagnoses"];
    let labels = labels_of(&diagnoses["labels"]);
    let full = counts(&table("diagnoses.csv"), &labels);
    let missing = counts(&table("diagnoses_missing.csv"), &labels);
    check("diagnoses", &full, 5, &diagnoses["rows"]["full"]);
    check(
        "diagnoses missing",
        &missing,
        5,
        &diagnoses["rows"]["missing"],
    );
    let pooled: Vec<Vec<u32>> = full.iter().chain(&missing).cloned().collect();
    check(
        "diagnoses Overall",
        &pooled,
        5,
        &diagnoses["rows"]["Overall"],
    );

    let sparse = &irrcac["anxiety_sparse"];
    let labels = labels_of(&sparse["labels"]);
    let rows: Vec<Vec<Option<String>>> = sparse["table"]
        .as_array()
        .expect("table")
        .iter()
        .map(|r| {
            r.as_array()
                .expect("row")
                .iter()
                .map(|v| v.as_u64().map(|n| n.to_string()))
                .collect()
        })
        .collect();
    check("anxiety sparse", &counts(&rows, &labels), 6, sparse);

    let pubmedqa = &irrcac["pubmedqa"];
    let labels = labels_of(&pubmedqa["labels"]);
    let lines: Vec<Value> = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/pubmedqa_pqal/raters.jsonl"),
    )
    .expect("raters")
    .lines()
    .map(|l| serde_json::from_str(l).expect("line"))
    .collect();
    for pair in pubmedqa["pairs"].as_array().expect("pairs") {
        let (a, b) = (
            pair["first"].as_str().expect("first"),
            pair["second"].as_str().expect("second"),
        );
        let rows: Vec<Vec<Option<String>>> = lines
            .iter()
            .map(|l| {
                [a, b]
                    .iter()
                    .map(|k| l[*k].as_str().map(str::to_string))
                    .collect()
            })
            .collect();
        check(
            &format!("pubmedqa {a}/{b}"),
            &counts(&rows, &labels),
            3,
            pair,
        );
    }
}

fn reference() -> Value {
    serde_json::from_str(&std::fs::read_to_string(data("reference.json")).expect("ref"))
        .expect("json")
}

#[test]
fn three_reviewers_match_krippendorff_statsmodels_and_sklearn() {
    let (env, rubric) = study();
    let reference = reference();
    let agree = |who: &[&str]| {
        let mut args = vec!["--rubric", rubric.as_str()];
        args.extend_from_slice(who);
        args.extend(["agree", "--reviewers", "rater1,rater2,rater3"]);
        args.extend(["--bootstrap", "200", "--json"]);
        env.json(&args)
    };
    let lead = agree(&["--role", "lead"]);
    assert_eq!(
        lead["raters"]["raters"],
        serde_json::json!(["rater1", "rater2", "rater3"])
    );
    assert_eq!(lead["raters"]["items"], 20);
    assert_eq!(lead["raters"]["ordered"], true);
    check(&lead["raters"], &reference["sets"]["anxiety"]["rows"]);
    let irrcac = chance_reference();
    for row in lead["raters"]["rows"].as_array().expect("rows") {
        let name = row["criterion"].as_str().expect("name");
        let want = &irrcac["sets"]["anxiety"]["rows"][name];
        check_chance(name, &row["ac1"], &want["ac1"], &want["n"]);
        check_chance(name, &row["brennan_prediger"], &want["bp"], &want["n"]);
    }

    // rater3 sees the items revealed to them only (two reviewers submitted, rater3
    // among them); their labels given before their own submission are blind.
    let seen = &reference["anxiety_seen_by_rater3"];
    let mine = agree(&["--reviewer", "rater3"]);
    assert_eq!(mine["raters"]["items"], seen["items"]);
    check(&mine["raters"], &seen["rows"]);

    // Text output: the all-reviewer table, every number whole.
    let mut args = vec!["--rubric", rubric.as_str(), "--role", "lead", "agree"];
    args.extend(["--reviewers", "rater1,rater2,rater3", "--bootstrap", "200"]);
    let text = String::from_utf8_lossy(&env.ok(&args).stdout).to_string();
    for want in [
        "Every reviewer (rater1, rater2, rater3)",
        "α ordinal",
        "Pairwise quadratic weighted kappa",
    ] {
        assert!(text.contains(want), "`{want}` in:\n{text}");
    }
    let overall = &lead["raters"]["rows"][2]["alpha_ordinal"];
    let cell = format!(
        "{:.2} [{:.2}, {:.2}]",
        overall["value"].as_f64().expect("v"),
        overall["lo"].as_f64().expect("lo"),
        overall["hi"].as_f64().expect("hi")
    );
    assert!(text.contains(&cell), "`{cell}` in:\n{text}");
    // A name given twice is refused.
    let out = env
        .cmd()
        .args([
            "--rubric",
            rubric.as_str(),
            "--role",
            "lead",
            "agree",
            "--reviewers",
            "rater1,rater1",
        ])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("twice"));
}

/// Every `v.vv [` on the screen closes its interval on the same line: no cut number.
fn no_cut_interval(screen: &str) {
    for line in screen.lines() {
        let chars: Vec<char> = line.chars().collect();
        for i in 0..chars.len().saturating_sub(5) {
            let starts = chars[i].is_ascii_digit()
                && chars[i + 1] == '.'
                && chars[i + 4] == ' '
                && chars[i + 5] == '[';
            if starts {
                let rest: String = chars[i + 5..].iter().take(16).collect();
                assert!(rest.contains(']'), "a cut interval `{rest}` in:\n{screen}");
            }
        }
    }
}

/// The Agreement pane of the lead at 200 x 50 on the three-reviewer study, driven by
/// keys: the every-reviewer band shows Fleiss' kappa, alpha and the pairwise matrix
/// with the reference values; no table cuts a number; `l` scrolls, `j` moves the
/// matrix to the next criterion.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agreement_pane_shows_every_reviewer_whole_at_200_columns() {
    use raglab::tui::app::{App, Pane};
    let (env, rubric) = study();
    let reference = reference();
    let mut config = raglab::config::Config::default();
    config.annotation.rubric = Some(rubric.into());
    let ctx = crate::common::context(&env, config);
    let opts = raglab::tui::TuiOptions {
        lead: true,
        reviewer: Some("lena".into()),
        ..Default::default()
    };
    let keymap = raglab::tui::keymap::Keymap::default_keymap();
    let mut app = raglab::tui::build_app(&ctx, &opts, keymap)
        .await
        .expect("app");
    let (mut jobs, mut rx) = raglab::tui::jobs::Jobs::new(&ctx);
    jobs.set_viewer(app.annotate.viewer());
    jobs.load_background();
    let done = |a: &App| !a.agreement.is_computing() && a.agreement.shown().is_some();
    let limit = std::time::Duration::from_secs(60);
    crate::common::pump(&mut jobs, &mut app, &mut rx, limit, done).await;
    app.pane = Pane::Agreement;
    let screen = crate::common::screen(&app, 200, 50);
    for want in [
        "Every reviewer (3)",
        "Fleiss κ",
        "α ordinal",
        "α interval",
        "Pairwise κ · full",
    ] {
        assert!(screen.contains(want), "`{want}` in:\n{screen}");
    }
    no_cut_interval(&screen);
    let rows = &reference["sets"]["anxiety"]["rows"];
    let two = |v: &Value| format!("{:.2} [", v.as_f64().expect("value"));
    for key in ["fleiss", "alpha_nominal", "alpha_ordinal", "alpha_interval"] {
        for row in ["full", "missing", "Overall"] {
            let want = two(&rows[row][key]);
            assert!(screen.contains(&want), "{row} {key} `{want}` in:\n{screen}");
        }
    }
    // The matrix of `full`: rater1/rater2 kappa above, quadratic weighted below.
    let pair = &rows["full"]["pairs"][0];
    for key in ["kappa", "quadratic"] {
        let want = two(&pair[key]);
        assert!(
            screen.contains(&want),
            "full rater1/rater2 {key} `{want}`:\n{screen}"
        );
    }
    // Every column of the pair table shows whole, scrolled to where needed.
    let mut seen = screen.clone();
    for _ in 0..9 {
        crate::common::tui::press(&mut app, &mut jobs, 'l');
        let s = crate::common::screen(&app, 200, 50);
        no_cut_interval(&s);
        seen.push_str(&s);
    }
    for header in [
        "Δκ j/rater1−rater1/rater2",
        "Δκ j/rater2−rater1/rater2",
        "κ judge/final",
    ] {
        assert!(
            seen.contains(header),
            "`{header}` whole on some scroll:\n{seen}"
        );
    }
    crate::common::tui::press(&mut app, &mut jobs, 'j');
    let screen = crate::common::screen(&app, 200, 50);
    assert!(screen.contains("Pairwise κ · missing"), "{screen}");
    let want = two(&rows["missing"]["pairs"][1]["kappa"]);
    assert!(
        screen.contains(&want),
        "missing rater1/rater3 `{want}`:\n{screen}"
    );
    jobs.settle(std::time::Duration::from_secs(10)).await;
}
