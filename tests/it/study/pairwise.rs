//! A pairwise preference study through the real binary and the TUI: two runs' answers
//! to six questions become pair items (order drawn and recorded, run names hidden),
//! three reviewers label each criterion first, second or tie, and
//! `raglab --role lead preferences --json` ranks the runs. Checked against numbers
//! computed here by hand: with two runs the Bradley-Terry fit has the closed form
//! score = ln(W_a / W_b) / 2 (W: wins, ties counted half), the head-to-head counts,
//! and Cohen's kappa of two reviewers on the first/second/tie labels by its formula.
//! Single-answer items share the workspace without mixing labels. In the TUI a
//! reviewer sees both answers under "Answer 1" and "Answer 2", labels with f/s/t,
//! and the label is stored under the pairwise rubric.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde_json::Value;

use crate::common::{self, Env};
use raglab::service::answer::save_answer;
use raglab::service::base::default_rubric;
use raglab::service::study::{self, PairItem};
use raglab::tui::app::Pane;

const RUNS: [&str; 2] = ["alpha-run", "beta-run"];
const REVIEWERS: [&str; 3] = ["ann", "bob", "cat"];
const QUESTIONS: usize = 6;

/// The answer of run `r` to question `i` (no run name in it: reviewers must not
/// learn which run wrote what).
fn answer_text(r: usize, i: usize) -> String {
    if r == 0 {
        format!("Vaccinate every year and wash hands (case {i}).")
    } else {
        format!("Garlic keeps every illness away (case {i}).")
    }
}

/// Which run reviewer `v` prefers on item `i`, criterion `c`: Some(run) or None (a
/// tie). Mostly the first run; some ties and some reversals, differing by reviewer.
fn preferred(i: usize, c: usize, v: usize) -> Option<usize> {
    if (i + 2 * c + v).is_multiple_of(5) {
        Some(1)
    } else if (i * c + v) % 7 == 3 {
        None
    } else {
        Some(0)
    }
}

async fn two_runs(env: &Env) -> raglab::service::Context {
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let ctx = common::context(env, raglab::config::Config::default());
    for (r, run) in RUNS.iter().enumerate() {
        for i in 0..QUESTIONS {
            let a = common::records::written(
                run,
                i,
                &format!("How is the flu prevented (case {i})?"),
                "A yearly vaccine.",
                &answer_text(r, i),
                "flu#prevention",
            );
            save_answer(&ctx, &a).await.expect("answer");
        }
    }
    ctx
}

/// Cohen's kappa of two label lists, by its formula.
fn kappa(a: &[String], b: &[String]) -> f64 {
    let n = a.len() as f64;
    let labels: Vec<&String> = a
        .iter()
        .chain(b)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let po = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
    let pe: f64 = labels
        .iter()
        .map(|l| {
            let pa = a.iter().filter(|x| x == l).count() as f64 / n;
            let pb = b.iter().filter(|x| x == l).count() as f64 / n;
            pa * pb
        })
        .sum();
    (po - pe) / (1.0 - pe)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[tokio::test(flavor = "multi_thread")]
async fn a_pairwise_study_ranks_the_runs_blind() {
    let env = Env::new();
    let ctx = two_runs(&env).await;
    let out = env.ok(&["annotate", "create", "--pairs", "alpha-run,beta-run"]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("created 6 pair items"), "{said}");

    // Each item shows both answers in the recorded order and no run name.
    let records: Vec<PairItem> = study::pair_items_table(&ctx.workspace)
        .read_all()
        .await
        .expect("pair records");
    let items = study::read_items(&ctx).await.expect("items");
    assert_eq!((records.len(), items.len()), (QUESTIONS, QUESTIONS));
    let run_of = |name: &str| RUNS.iter().position(|r| *r == name).expect("run");
    let mut orders = Vec::new();
    for rec in &records {
        let item = items
            .iter()
            .find(|i| i.item_id == rec.item_id)
            .expect("item");
        let q: usize = rec.question_id[1..].parse().expect("q");
        let (f, s) = (run_of(&rec.first_run), run_of(&rec.second_run));
        assert_ne!(f, s);
        assert_eq!(
            item.answer,
            format!(
                "── Answer 1 ──\n{}\n\n── Answer 2 ──\n{}",
                answer_text(f, q),
                answer_text(s, q)
            )
        );
        for run in RUNS {
            assert!(
                !item.answer.contains(run)
                    && !item.item_id.contains(run)
                    && !item.set.contains(run),
                "{item:?}"
            );
        }
        orders.push(f);
    }
    assert!(
        orders.contains(&0) && orders.contains(&1),
        "both orders drawn: {orders:?}"
    );
    let again = env.ok(&["annotate", "create", "--pairs", "alpha-run,beta-run"]);
    assert!(String::from_utf8_lossy(&again.stdout).contains("no new pair items"));
    // Single-answer items may share the workspace; their labels stay pass/fail.
    let single = env.ok(&["annotate", "create", "--from-run", "alpha-run"]);
    assert!(String::from_utf8_lossy(&single.stdout).contains("created 6 items"));

    // Three reviewers' labels, first/second/tie through each item's recorded order.
    let keys: Vec<String> = default_rubric()
        .criteria
        .iter()
        .map(|c| c.key.clone())
        .collect();
    let mut rows = String::new();
    let mut given: BTreeMap<(usize, String, usize), String> = BTreeMap::new();
    for rec in &records {
        let q: usize = rec.question_id[1..].parse().expect("q");
        let first = run_of(&rec.first_run);
        for (c, key) in keys.iter().enumerate() {
            for (v, reviewer) in REVIEWERS.iter().enumerate() {
                let label = match preferred(q, c, v) {
                    None => "tie",
                    Some(r) if r == first => "first",
                    Some(_) => "second",
                };
                given.insert((v, rec.item_id.clone(), c), label.to_string());
                rows.push_str(&format!(
                    "{{\"item_id\":\"{}\",\"reviewer\":\"{reviewer}\",\"criterion\":\"{key}\",\"label\":\"{label}\"}}\n",
                    rec.item_id
                ));
            }
        }
    }
    let file = env.dir.path().join("prefs.jsonl");
    std::fs::write(&file, rows).expect("labels");
    env.ok(&["labels", "import", file.to_str().expect("utf8")]);
    // A label from the other kind of item is refused: a single answer's label on a
    // pair item, and a pair's label on a single answer.
    let refuses = |item_id: &str, label: &str| {
        let bad = env.dir.path().join("bad.jsonl");
        std::fs::write(
            &bad,
            format!(
                "{{\"item_id\":\"{item_id}\",\"reviewer\":\"ann\",\"criterion\":\"clarity\",\"label\":\"{label}\"}}\n"
            ),
        )
        .expect("bad");
        let refused = env
            .cmd()
            .args(["labels", "import", bad.to_str().expect("utf8")])
            .output()
            .expect("run");
        assert!(!refused.status.success(), "{item_id} {label} was taken");
        assert!(String::from_utf8_lossy(&refused.stderr).contains("not a label"));
    };
    refuses(&records[0].item_id, "pass");
    refuses("alpha-run/q0/s42", "first");

    // Only the lead ranks.
    let blind = env
        .cmd()
        .args(["--reviewer", "ann", "preferences"])
        .output()
        .expect("run");
    assert!(!blind.status.success());
    assert!(String::from_utf8_lossy(&blind.stderr).contains("study lead"));

    let report: Value = env.json(&["--role", "lead", "preferences", "--json"]);
    assert_eq!(report["schema"], "raglab.preferences/1");
    assert_eq!(report["items"], QUESTIONS);
    let rows = report["rows"].as_array().expect("rows");
    let rubric = default_rubric();
    assert_eq!(rows.len(), rubric.criteria.len() + 1);
    for (c, row) in rows.iter().enumerate() {
        let in_row = |k: usize| c == rubric.criteria.len() || k == c;
        // Hand count over every reviewer's preference in this row.
        let (mut wins, mut ties, mut losses) = (0usize, 0usize, 0usize);
        for q in 0..QUESTIONS {
            for k in (0..rubric.criteria.len()).filter(|k| in_row(*k)) {
                for v in 0..REVIEWERS.len() {
                    match preferred(q, k, v) {
                        Some(0) => wins += 1,
                        Some(_) => losses += 1,
                        None => ties += 1,
                    }
                }
            }
        }
        assert_eq!(row["comparisons"], wins + ties + losses, "{row}");
        let h = &row["head_to_head"][0];
        assert_eq!(
            (h["run"].as_str(), h["against"].as_str()),
            (Some(RUNS[0]), Some(RUNS[1]))
        );
        assert_eq!(
            (h["wins"].as_u64(), h["ties"].as_u64(), h["losses"].as_u64()),
            (Some(wins as u64), Some(ties as u64), Some(losses as u64)),
            "{row}"
        );
        let half =
            ((wins as f64 + ties as f64 / 2.0) / (losses as f64 + ties as f64 / 2.0)).ln() / 2.0;
        let score = |run: &str| {
            row["scores"]
                .as_array()
                .expect("scores")
                .iter()
                .find(|s| s["run"] == run)
                .map(|s| s["score"].clone())
                .expect("score")
        };
        let (a, b) = (score(RUNS[0]), score(RUNS[1]));
        let v = a["value"].as_f64().expect("value");
        assert!(close(v, half), "{row}: {v} vs {half}");
        assert!(close(b["value"].as_f64().expect("value"), -half), "{row}");
        let (lo, hi) = (a["lo"].as_f64().expect("lo"), a["hi"].as_f64().expect("hi"));
        assert!(lo <= v && v <= hi, "{row}");
        // The better run is listed first.
        assert_eq!(row["scores"][0]["run"], RUNS[0]);
    }

    // Reviewers' agreement on preferences: ann-bob kappa on the Overall row equals
    // Cohen's kappa of their labels pooled over items and criteria.
    let agreement = &report["agreement"];
    let overall = agreement["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["criterion"] == "Overall")
        .expect("overall");
    let pair = overall["pairs"]
        .as_array()
        .expect("pairs")
        .iter()
        .find(|p| p["first"] == "ann" && p["second"] == "bob")
        .expect("ann-bob");
    let of = |v: usize| -> Vec<String> {
        given
            .iter()
            .filter(|((r, _, _), _)| *r == v)
            .map(|(_, l)| l.clone())
            .collect()
    };
    let want = kappa(&of(0), &of(1));
    let got = pair["kappa"]["value"].as_f64().expect("kappa");
    assert!(close(got, want), "{got} vs {want}");

    the_lead_sees_the_ranking_in_the_agreement_pane(&env, &report).await;
    the_annotate_pane_labels_a_pair(&env, &records).await;
}

/// The lead opens the TUI: pane 5 shows the preferences band with the scores and CIs
/// of `preferences --json` (same default bootstrap), every criterion and Overall.
async fn the_lead_sees_the_ranking_in_the_agreement_pane(env: &Env, report: &Value) {
    let ctx = common::context(env, raglab::config::Config::default());
    let opts = raglab::tui::TuiOptions {
        lead: true,
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::opened(&ctx, &opts).await;
    common::press(&mut app, &mut jobs, '5');
    assert_eq!(app.pane, Pane::Agreement);
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(120),
        |a| a.agreement.preferences().is_some(),
    )
    .await;
    let screen = common::screen(&app, 200, 60);
    assert!(screen.contains("Pairwise preferences"), "{screen}");
    for row in report["rows"].as_array().expect("rows") {
        let name = row["criterion"].as_str().expect("name");
        let line = screen
            .lines()
            .find(|l| l.contains(name) && l.contains(&row["comparisons"].to_string()))
            .unwrap_or_else(|| panic!("no row {name}: {screen}"));
        for s in row["scores"].as_array().expect("scores") {
            let e = &s["score"];
            let f = |k: &str| e[k].as_f64().expect("number");
            let shown = format!("{:.2} [{:.2}, {:.2}]", f("value"), f("lo"), f("hi"));
            assert!(line.contains(&shown), "{shown} not in {line}");
        }
    }
}

/// A reviewer opens the TUI on the pairwise study: the Annotate pane shows both
/// answers, the pair labels and their keys; `f` labels the first criterion `first`,
/// stored under the pairwise rubric.
async fn the_annotate_pane_labels_a_pair(env: &Env, records: &[PairItem]) {
    let ctx = common::context(env, raglab::config::Config::default());
    let opts = raglab::tui::TuiOptions {
        reviewer: Some("dan".into()),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::opened(&ctx, &opts).await;
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), |a| {
        !a.annotate.items().is_empty()
    })
    .await;
    common::press(&mut app, &mut jobs, '4');
    assert_eq!(app.pane, Pane::Annotate);
    // The queue holds the single answers too: step to a pair item.
    for _ in 0..app.annotate.items().len() {
        let here = app.annotate.item().expect("item").item_id.clone();
        if records.iter().any(|r| r.item_id == here) {
            break;
        }
        common::press(&mut app, &mut jobs, ']');
    }
    let screen = common::screen(&app, 170, 50);
    for want in [
        "Answer 1",
        "Answer 2",
        "f=first",
        "s=second",
        "t=tie",
        "(pairwise)",
    ] {
        assert!(screen.contains(want), "{want}: {screen}");
    }
    for run in RUNS {
        assert!(!screen.contains(run), "{run} shown: {screen}");
    }
    let shown = app.annotate.item().expect("item").item_id.clone();
    assert!(records.iter().any(|r| r.item_id == shown));
    common::press(&mut app, &mut jobs, 'f');
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), |a| {
        common::screen(a, 170, 50).contains("saved ✓")
    })
    .await;
    let labels: Vec<study::Label> = study::labels_table(&ctx.workspace)
        .read_all()
        .await
        .expect("labels");
    let mine: HashMap<&str, &study::Label> = labels
        .iter()
        .filter(|l| l.reviewer == "dan")
        .map(|l| (l.criterion.as_str(), l))
        .collect();
    let first = &default_rubric().criteria[0].key;
    let l = mine.get(first.as_str()).expect("dan's label");
    assert_eq!(
        (l.item_id.as_str(), l.label.as_deref()),
        (shown.as_str(), Some("first"))
    );
    assert_eq!(
        l.rubric_version,
        format!("{}+pairwise", default_rubric().version)
    );
}
