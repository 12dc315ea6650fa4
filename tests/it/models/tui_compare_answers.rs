//! The Generate pane's Compare view of two answer runs, driven by keys on two real
//! judged runs ([`common::answer_runs`]): `c` opens the run picker, `enter` picks run
//! A then run B, the view shows per criterion the numbers `raglab report answers
//! --compare A B --json` prints (pass rates, 2x2 counts, B's wins / ties / losses,
//! McNemar's p and its Holm adjustment), and per question (`j` / `k`) both answers
//! with their targets' places, seeds and labels, differing criteria marked; a
//! question carrying an escape sequence and a bidi override is drawn without them;
//! `?` lists the view's keys; `esc` closes it.

use std::time::Duration;

use crossterm::event::KeyCode;
use raglab::config::Config;
use raglab::tui::app::Pane;
use raglab::tui::keymap::Keymap;
use serde_json::Value;

use crate::common::{self, answer_runs, tui::key};

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// A p-value as the view writes it (the Evaluation pane's rule).
fn p_text(p: f64) -> String {
    if p < 1e-3 {
        format!("{p:.1e}")
    } else {
        format!("{p:.4}")
    }
}

/// The screen line of `criterion` in the view's table.
fn row_line<'a>(screen: &'a str, criterion: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(&format!("{criterion} ")) && l.contains('%'))
        .unwrap_or_else(|| panic!("no row for {criterion}:\n{screen}"))
}

/// Drives the view on `env`'s two judged runs ([`answer_runs::judged_runs`]) and checks
/// it against `report`, their `report answers --compare rag bare --json`. Called by
/// `compare_answers`' test on its runs, so the two real runs are made and judged once.
pub async fn the_compare_view_shows_the_numbers_of_report_answers_compare(
    env: &common::Env,
    report: &Value,
) {
    let report = report.clone();
    let ctx = common::context(env, Config::default());
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, mut rx) = raglab::tui::jobs::Jobs::new(&ctx);
    jobs.load_background();
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(120),
        |a| a.generate.stored().is_some(),
    )
    .await;
    common::press(&mut app, &mut jobs, '3');
    assert_eq!(app.pane, Pane::Generate);

    // c: the picker lists both runs by name (bare, rag) with their answer counts.
    common::press(&mut app, &mut jobs, 'c');
    let screen = common::screen(&app, 200, 60);
    assert!(screen.contains("enter picks run A"), "{screen}");
    let n = answer_runs::QUESTIONS.len();
    for run in ["bare", "rag"] {
        assert!(
            screen
                .lines()
                .any(|l| l.contains(&format!(" {run} ")) && l.contains(&format!("{n} answers"))),
            "{run}:\n{screen}"
        );
    }
    // j, enter: A = rag; k, enter: B = bare, which asks for the comparison.
    common::press(&mut app, &mut jobs, 'j');
    key(&mut app, &mut jobs, KeyCode::Enter);
    let screen = common::screen(&app, 200, 60);
    assert!(screen.contains("enter picks run B"), "{screen}");
    common::press(&mut app, &mut jobs, 'k');
    key(&mut app, &mut jobs, KeyCode::Enter);
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), |a| {
        a.generate.compare().shown.is_some()
    })
    .await;
    let screen = common::screen(&app, 200, 60);
    assert!(
        screen.contains(" Compare · A = rag · B = bare "),
        "{screen}"
    );

    // Per criterion: the numbers of the JSON, as the view writes them.
    let criteria = report["criteria"].as_array().expect("criteria");
    assert!(
        screen.contains(&format!("Holm over the {} criteria", criteria.len())),
        "{screen}"
    );
    for c in criteria {
        let name = c["criterion"].as_str().expect("name");
        let line = row_line(&screen, name);
        let m = &c["mcnemar"];
        let count = |k: &str| m[k].as_u64().expect("count");
        let q = c["questions"].as_u64().expect("questions");
        let want = [
            format!(
                "{}/{q} {:.1}%",
                count("both_pass") + count("only_a"),
                f(&c["pass_rate_a"]) * 100.0
            ),
            format!(
                "{}/{q} {:.1}%",
                count("both_pass") + count("only_b"),
                f(&c["pass_rate_b"]) * 100.0
            ),
            format!(
                "{}/{}/{}/{}",
                count("both_pass"),
                count("only_a"),
                count("only_b"),
                count("both_fail")
            ),
            format!("{}/{}/{}", c["wins"], c["ties"], c["losses"]),
            format!(" {}", p_text(f(&m["p"]))),
            format!(" {}", p_text(f(&c["p_holm"]))),
        ];
        for w in want {
            assert!(line.contains(&w), "`{w}` not in `{line}`");
        }
    }

    // Per question: the first, then each next one with j, as the JSON lists them.
    let questions = report["questions"].as_array().expect("questions");
    for (i, q) in questions.iter().enumerate() {
        if i > 0 {
            common::press(&mut app, &mut jobs, 'j');
        }
        let screen = common::screen(&app, 200, 60);
        let id = q["question_id"].as_str().expect("id");
        assert!(
            screen.contains(&format!("question {}/{} · {id}", i + 1, questions.len())),
            "{screen}"
        );
        let differ: Vec<&str> = q["differ"]
            .as_array()
            .expect("differ")
            .iter()
            .map(|c| c.as_str().expect("criterion"))
            .collect();
        if differ.is_empty() {
            assert!(screen.contains("labels agree"), "{screen}");
        } else {
            assert!(
                screen.contains(&format!("≠ labels differ: {}", differ.join(", "))),
                "{screen}"
            );
        }
        for side in [&q["a"], &q["b"]] {
            let head = format!(
                "target in prompt {} · seed {}",
                side["target_in_prompt"].as_str().expect("place"),
                side["seed"]
            );
            assert!(screen.contains(&head), "`{head}`:\n{screen}");
            for pair in side["labels"].as_array().expect("labels") {
                let (c, l) = (pair[0].as_str().expect("c"), pair[1].as_str().expect("l"));
                let mark = if differ.contains(&c) { "≠" } else { " " };
                let want = format!("{mark} {c:<22} {l}");
                assert!(screen.contains(&want), "`{want}`:\n{screen}");
            }
        }
        if id == answer_runs::HOSTILE_ID {
            // The question's text without the escape sequence, its payload or the
            // bidi override.
            assert!(screen.contains("How is rabies diagnosed?"), "{screen}");
            assert!(screen.contains("tail"), "{screen}");
            assert!(!screen.contains("pwn3d"), "{screen}");
            assert!(
                !screen
                    .chars()
                    .any(|c| c == '\u{1b}' || c == '\u{7}' || c == '\u{202e}'),
                "{screen}"
            );
        }
    }
    // j at the last question stays there; k goes back one.
    common::press(&mut app, &mut jobs, 'j');
    assert_eq!(app.generate.compare().question, questions.len() - 1);
    common::press(&mut app, &mut jobs, 'k');
    assert_eq!(app.generate.compare().question, questions.len() - 2);

    // ? lists the view's keys; esc closes the view.
    common::press(&mut app, &mut jobs, '?');
    let screen = common::screen(&app, 200, 60);
    assert!(
        screen.contains("Compare two answer runs side by side"),
        "{screen}"
    );
    assert!(screen.contains("Compare answer runs: the view"), "{screen}");
    common::press(&mut app, &mut jobs, '?');
    key(&mut app, &mut jobs, KeyCode::Esc);
    let screen = common::screen(&app, 200, 60);
    assert!(!screen.contains(" Compare · A = "), "{screen}");
    assert!(!app.generate.compare().open);
}
