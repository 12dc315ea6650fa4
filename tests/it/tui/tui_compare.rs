//! The Evaluation pane's comparison with a pinned configuration, driven by keys on a
//! real evaluation of the shipped sample (BM25 and TF-IDF, so no model is needed):
//! `P` pins the selected configuration and the box lists the other against it on the
//! chart's metric, with the numbers `raglab compare --json` prints (all pairs) read the
//! other way round where the pinned one was that report's candidate; `m` moves the
//! metric; `P` again unpins.

use crate::common;

use std::time::Duration;

use raglab::config::Config;
use raglab::tui::app::Pane;
use raglab::tui::keymap::Keymap;
use serde_json::Value;

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pinning_a_configuration_compares_the_others_with_it() {
    let env = common::Env::new();
    common::sample_sparse_evaluated(&env);
    let report = env.json(&["compare", "--json"]);
    let ctx = common::context(&env, Config::default());
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, mut rx) = raglab::tui::jobs::Jobs::new(&ctx);
    jobs.load_background();
    common::press(&mut app, &mut jobs, '6');
    assert_eq!(app.pane, Pane::Evaluation);
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(120),
        |a| {
            a.evaluation
                .overview()
                .is_some_and(|o| o.comparison.is_some())
        },
    )
    .await;
    let screen = common::screen(&app, 220, 50);
    assert!(!screen.contains(" vs bm25"), "not pinned yet:\n{screen}");

    // j selects tfidf, P pins it: bm25 is listed against tfidf. The report compared
    // tfidf (candidate) with bm25 (baseline): read the other way round here.
    common::press(&mut app, &mut jobs, 'j');
    common::press(&mut app, &mut jobs, 'P');
    let screen = common::screen(&app, 220, 50);
    assert!(screen.contains(" vs tfidf on nDCG@10"), "{screen}");
    let rows = report["rows"].as_array().expect("rows");
    let row = |metric: &str| -> &Value {
        rows.iter()
            .find(|r| r["metric"] == metric && r["baseline"] == "bm25" && r["candidate"] == "tfidf")
            .unwrap_or_else(|| panic!("no {metric} row"))
    };
    let line = |screen: &str| -> String {
        screen
            .lines()
            .find(|l| l.contains("bm25 ") && l.contains('['))
            .unwrap_or_else(|| panic!("no bm25 row:\n{screen}"))
            .to_string()
    };
    let check = |screen: &str, r: &Value| {
        let l = line(screen);
        let want = [
            format!("{:+.4}", -f(&r["difference"])),
            format!("[{:+.4}, {:+.4}]", -f(&r["ci"][1]), -f(&r["ci"][0])),
            format!("{}/{}/{}", r["losses"], r["ties"], r["wins"]),
            p_text(f(&r["randomisation_p_holm"])),
            p_text(f(&r["t_test_p_holm"])),
        ];
        for w in want {
            assert!(l.contains(&w), "`{w}` not in `{l}`");
        }
    };
    check(&screen, row("nDCG@10"));
    assert!(
        screen.contains(&format!("Holm over all {} comparisons", rows.len())),
        "{screen}"
    );
    // m: the next metric (P@1), the same box.
    common::press(&mut app, &mut jobs, 'm');
    let screen = common::screen(&app, 220, 50);
    assert!(screen.contains(" vs tfidf on P@1"), "{screen}");
    check(&screen, row("P@1"));
    // P again: the breakdown is back.
    common::press(&mut app, &mut jobs, 'P');
    let screen = common::screen(&app, 220, 50);
    assert!(!screen.contains(" vs tfidf"), "{screen}");
    assert!(screen.contains("groups · by topic"), "{screen}");
}
