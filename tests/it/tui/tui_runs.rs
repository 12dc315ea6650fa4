//! The Runs pane (8) driven by keys on a real evaluation of the shipped sample (BM25
//! and TF-IDF, so no model is needed): the rows and their nDCG@10 are the ones
//! `raglab report runs --json` prints, `P` pins the selected row and the other gets its
//! paired difference, `s` sorts by the quality column, and `enter` on a retrieval row
//! opens the Query pane ranking in that configuration.

use crate::common;

use std::time::Duration;

use raglab::config::Config;
use raglab::tui::app::Pane;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runs_pane_sorts_pins_and_opens_a_row() {
    let env = common::Env::new();
    common::sample_sparse_evaluated(&env);
    let report = env.json(&["report", "runs", "--baseline", "bm25", "--json"]);
    let ctx = common::context(&env, Config::default());
    let (mut app, mut jobs, mut rx) = common::tui::started(&ctx).await;
    common::press(&mut app, &mut jobs, '8');
    assert_eq!(app.pane, Pane::Runs);
    let limit = Duration::from_secs(60);
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        a.runs.matrix().is_some()
    })
    .await;
    let screen = common::screen(&app, 200, 50);
    let rows = report["rows"].as_array().expect("rows");
    for r in rows {
        let q = &r["quality"]["nDCG@10"];
        let want = format!(
            "{:.4} [{:.4},{:.4}]",
            f(&q["mean"]),
            f(&q["ci"][0]),
            f(&q["ci"][1])
        );
        let label = r["label"].as_str().expect("label");
        let line = screen
            .lines()
            .find(|l| l.contains(&format!(" {label} ")) && l.contains("retrieval"))
            .unwrap_or_else(|| panic!("no {label} row:\n{screen}"));
        assert!(line.contains(&want), "`{want}` not in `{line}`");
    }
    assert!(screen.contains("dominated by"), "{screen}");
    // The first row (by kind, then label) is bm25: P pins it, and tfidf gets the
    // difference `report runs --baseline bm25` printed.
    assert_eq!(app.runs.current().map(|r| r.label.as_str()), Some("bm25"));
    common::press(&mut app, &mut jobs, 'P');
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.runs.is_loading() && a.runs.matrix().is_some_and(|m| m.baseline.is_some())
    })
    .await;
    let screen = common::screen(&app, 200, 50);
    let tfidf = rows.iter().find(|r| r["label"] == "tfidf").expect("tfidf");
    let d = &tfidf["against_baseline"];
    let want = format!(
        "{:+.4} [{:+.4},{:+.4}]",
        f(&d["difference"]),
        f(&d["ci"][0]),
        f(&d["ci"][1])
    );
    assert!(screen.contains(&want), "`{want}` not on screen:\n{screen}");
    assert!(screen.contains("baseline bm25"), "{screen}");
    // s: sorted by the quality column, the better configuration first.
    common::press(&mut app, &mut jobs, 's');
    let screen = common::screen(&app, 200, 50);
    assert!(screen.contains("sorted by quality"), "{screen}");
    let best = rows
        .iter()
        .max_by(|a, b| {
            f(&a["quality"]["nDCG@10"]["mean"]).total_cmp(&f(&b["quality"]["nDCG@10"]["mean"]))
        })
        .expect("a row");
    assert_eq!(
        app.runs.current().map(|r| r.label.clone()),
        Some("bm25".to_string()),
        "the selection stays on its row"
    );
    common::press(&mut app, &mut jobs, 'g');
    assert_eq!(
        app.runs.current().map(|r| r.label.as_str()),
        best["label"].as_str()
    );
    // j then enter on tfidf's row (second when bm25 is best, first otherwise): the
    // Query pane ranks as that configuration.
    let target = if best["label"] == "tfidf" { 'g' } else { 'j' };
    common::press(&mut app, &mut jobs, target);
    assert_eq!(app.runs.current().map(|r| r.label.as_str()), Some("tfidf"));
    common::tui::key(&mut app, &mut jobs, crossterm::event::KeyCode::Enter);
    assert_eq!(app.pane, Pane::Query);
    assert_eq!(app.query.config().label(), "tfidf");
    let screen = common::screen(&app, 200, 50);
    assert!(
        screen.contains("ranking as tfidf (from the Runs pane)"),
        "{screen}"
    );
}
