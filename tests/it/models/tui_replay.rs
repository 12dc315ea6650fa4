//! Replay in the Generate pane, on a machine without the generator: real answers are
//! stored first with the small GGUF model (`raglab generate`), then the TUI is started
//! with no generator model present, and `p` replays a stored answer at its recorded
//! speed: part of the text shows before the end, all of it at the end, the replay
//! lasts what the recording says (time to first token + the later tokens at the
//! recorded rate, computed here from the stored figures), it is labelled as a replay
//! of that answer, and `s` stops one midway. The judge's pass rates of those answers
//! then show in the Evaluation pane, equal to `raglab report answers`.

use crate::common;

use std::time::{Duration, Instant};

use raglab::config::{Config, DEFAULT_GEN_MODEL};
use raglab::core::text::sanitize_for_terminal;
use raglab::service::answer::AnswerRecord;
use raglab::tui::app::{App, Pane};
use raglab::tui::jobs::Jobs;
use raglab::tui::keymap::Keymap;

fn render(app: &App) -> String {
    common::screen(app, 220, 50)
}

/// The recorded length of an answer's generation, by its stored figures: the first
/// token after `ttft_ms`, the other `output_tokens - 1` at `gen_tokens_per_s`.
fn recorded_ms(a: &AnswerRecord) -> f64 {
    a.ttft_ms + f64::from(a.output_tokens.saturating_sub(1)) * 1e3 / a.gen_tokens_per_s
}

/// Each line of `text` (its first 80 characters) is on the screen.
fn shows_all(screen: &str, text: &str) -> bool {
    sanitize_for_terminal(text)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .all(|l| screen.contains(&l.chars().take(80).collect::<String>()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stored_answers_replay_at_their_recorded_speed_without_a_generator() {
    let env = common::Env::new();
    // The two questions' document and one more: replay needs stored answers, not the
    // model time of embedding the whole sample.
    let docs = common::sample_subset(
        env.dir.path(),
        &[
            "parasites/acanthamoeba-granulomatous-amebic-encephalitis-gae-keratitis",
            "parasites/parasites-hookworm",
        ],
    );
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let questions: Vec<String> = common::sample_questions()
        .iter()
        .take(2)
        .map(serde_json::Value::to_string)
        .collect();
    let qfile = env.dir.path().join("q.jsonl");
    std::fs::write(&qfile, questions.join("\n")).expect("questions");
    let q = qfile.to_str().expect("utf8");
    let model = common::model(DEFAULT_GEN_MODEL);
    let m = model.to_str().expect("utf8");
    env.ok(&[
        "generate",
        "--questions",
        q,
        "--run",
        "demo",
        "--k",
        "1",
        "--max-tokens",
        "48",
        "--model",
        m,
    ]);
    env.ok(&["judge", "--answers", "demo", "--judge-model", m]);

    // The TUI on a machine without the generator (its default file is not there).
    let ctx = common::context(&env, Config::default());
    let stored = raglab::service::answer::all_answers(&ctx)
        .await
        .expect("answers");
    assert_eq!(stored.len(), 2);
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    assert!(
        app.generate.generator_missing(),
        "the test needs no generator model"
    );
    let (mut jobs, mut rx) = Jobs::new(&ctx);
    jobs.load_background();
    let limit = Duration::from_secs(60);
    // The stored answers are read at start-up (with the annotation study).
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        a.generate.stored().is_some() && a.evaluation.is_loaded()
    })
    .await;
    assert_eq!(app.generate.stored(), Some(2));
    common::press(&mut app, &mut jobs, '3');
    assert_eq!(app.pane, Pane::Generate);
    assert!(render(&app).contains("not found: p replays a stored answer"));

    // (a)-(c): one whole replay, timed from the key press.
    let pressed = Instant::now();
    common::press(&mut app, &mut jobs, 'p');
    let a = app
        .generate
        .replaying()
        .cloned()
        .expect("a stored answer is replayed");
    let a = stored
        .iter()
        .find(|s| s.answer_id == a.answer_id)
        .expect("one of the stored answers");
    let full = sanitize_for_terminal(&a.answer);
    assert!(
        full.split_whitespace().count() >= 4,
        "a short answer: `{full}`"
    );
    let screen = render(&app);
    assert!(
        screen.contains(&format!("replay of {}", a.answer_id)),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("recorded {}", a.created_at)),
        "{screen}"
    );
    assert!(screen.contains("NOT a live generation"), "{screen}");
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.generate.text().trim().is_empty()
    })
    .await;
    let partial = app.generate.text().to_string();
    assert!(
        app.generate.is_running() && partial.len() < full.len(),
        "partial `{partial}` of `{full}`"
    );
    assert!(
        full.starts_with(&partial),
        "`{partial}` is how `{full}` starts"
    );
    assert!(render(&app).contains(partial.trim()));
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.generate.is_running()
    })
    .await;
    let took_ms = pressed.elapsed().as_secs_f64() * 1e3;
    assert_eq!(app.generate.text(), full);
    assert!(shows_all(&render(&app), &full), "{}", render(&app));
    let want = recorded_ms(a);
    // The generation itself, as measured when it was stored (retrieval excluded).
    let measured = a.total_ms - a.retrieval_ms;
    assert!(
        (want - measured).abs() <= 0.05 * measured + 50.0,
        "recorded figures {want} vs {measured} ms"
    );
    // A replay never runs ahead of its recording; on a busy machine it may lag, so the
    // upper bound is loose (an instant replay, or one that ignores the recorded rate
    // by whole multiples, still fails).
    assert!(
        took_ms >= 0.9 * want - 50.0 && took_ms <= 2.0 * want + 2_000.0,
        "replay took {took_ms:.0} ms, recorded {want:.0} ms"
    );
    eprintln!(
        "replay of {} tokens: {took_ms:.0} ms, recorded {want:.0} ms (generation measured {measured:.0} ms)",
        a.output_tokens
    );

    // (d): the next stored answer, stopped midway.
    common::press(&mut app, &mut jobs, 'p');
    let b = app.generate.replaying().cloned().expect("the next answer");
    assert_ne!(
        b.answer_id, a.answer_id,
        "p moves to the next stored answer"
    );
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.generate.text().trim().is_empty()
    })
    .await;
    common::press(&mut app, &mut jobs, 's');
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.generate.is_running()
    })
    .await;
    let stopped = app.generate.text().to_string();
    assert!(
        stopped.len() < sanitize_for_terminal(&b.answer).len(),
        "stopped before the end"
    );
    tokio::time::sleep(Duration::from_millis(400)).await;
    while let Ok(msg) = rx.try_recv() {
        jobs.apply(&mut app, msg);
    }
    assert_eq!(app.generate.text(), stopped, "nothing more after the stop");
    assert!(render(&app).contains("replay stopped"), "{}", render(&app));

    // The judge's pass rates of these answers in the Evaluation pane.
    let report = env.json(&["report", "answers", "--json"]);
    common::press(&mut app, &mut jobs, '6');
    let screen = render(&app);
    for (criterion, buckets) in report["demo"]["pass_rates"]
        .as_object()
        .expect("pass rates")
    {
        let line = screen
            .lines()
            .find(|l| {
                l.trim_start_matches(['│', ' '])
                    .starts_with(criterion.as_str())
            })
            .unwrap_or_else(|| panic!("{criterion} not on screen:\n{screen}"));
        let o = &buckets["overall"];
        let cell = format!("{:.2} ({})", o["rate"].as_f64().expect("rate"), o["total"]);
        assert!(
            line.contains(&cell),
            "{criterion}: `{cell}` not in `{line}`"
        );
    }
}
