//! Annotate and Agreement panes driven by keys in a TestBackend: labelling with single
//! keys, blind mode, undo, and the agreement table with real numbers.

mod common;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::core::agreement::Bootstrap;
use raglab::service::annotation::{Item, Label, agreement_table, current};
use raglab::service::rubric::default_rubric;
use raglab::tui::app::{App, Pane};
use raglab::tui::effect::Effect;
use raglab::tui::keymap::Keymap;

fn items(n: usize) -> Vec<Item> {
    (0..n)
        .map(|i| Item {
            item_id: format!("i{i}"),
            set: "s".into(),
            question: format!("How is disease {i} prevented?"),
            reference_answer: format!("Reference {i}"),
            target_chunk: format!("Target chunk {i}"),
            answer: format!("Model answer {i}"),
            answer_id: None,
        })
        .collect()
}

fn app(reviewer: Option<&str>) -> App {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Annotate;
    app.annotate.items = items(3);
    app.annotate.reviewer = reviewer.map(str::to_string);
    app
}

/// Type `s`; returns the effects the keys asked for (label commits).
fn keys(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars()
        .filter_map(|c| app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)))
        .collect()
}

fn render(app: &App) -> String {
    common::screen(app, 170, 40)
}

/// The labels that the effects ask to commit, with their tickets.
fn saves(effects: Vec<Effect>) -> Vec<(u64, Label)> {
    effects
        .into_iter()
        .map(|e| match e {
            Effect::SaveLabel { ticket, label } => (ticket, label),
            other => panic!("expected a label commit, got {other:?}"),
        })
        .collect()
}

/// Confirm the commits the effects ask for, as the event loop would after each commit.
fn commit_all(app: &mut App, effects: Vec<Effect>) -> Vec<Label> {
    let saves = saves(effects);
    for (t, _) in &saves {
        app.annotate.on_saved(*t, Ok(3.0));
    }
    saves.into_iter().map(|(_, l)| l).collect()
}

#[test]
fn labelling_an_item_with_single_keys() {
    let mut app = app(Some("alice"));
    let fx = keys(&mut app, "pfpp");
    // Four labels queued, shown as saving until committed.
    assert_eq!(fx.len(), 4);
    assert!(render(&app).contains("saving…"));
    let saved = commit_all(&mut app, fx);
    let got: Vec<(&str, Option<&str>)> = saved
        .iter()
        .map(|l| (l.criterion.as_str(), l.label.as_deref()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("faithfulness", Some("pass")),
            ("completeness", Some("fail")),
            ("factual_consistency", Some("pass")),
            ("clarity", Some("pass"))
        ]
    );
    assert!(
        saved
            .iter()
            .all(|l| l.reviewer == "alice" && l.item_id == "i0")
    );
    let screen = render(&app);
    assert!(screen.contains("saved ✓"), "{screen}");
    assert!(screen.contains("1/3 done"));
    // `3` picks a criterion directly (not the Generate pane), `f` relabels it: a new version.
    let fx = keys(&mut app, "3f");
    assert_eq!(app.pane, Pane::Annotate);
    let v2 = commit_all(&mut app, fx);
    assert_eq!(v2[0].criterion, "factual_consistency");
    assert_eq!(
        app.annotate
            .labels
            .iter()
            .filter(|l| l.criterion == "factual_consistency")
            .count(),
        2
    );
    // `]` next item, `u` first unlabelled.
    keys(&mut app, "]]u");
    assert_eq!(app.annotate.pos, 1);
}

#[test]
fn other_labels_stay_hidden_until_the_item_is_done() {
    let mut app = app(Some("alice"));
    let rubric = default_rubric();
    for c in &rubric.criteria {
        app.annotate.labels.push(Label::new(
            "i0",
            "bob",
            &c.key,
            Some("fail"),
            None,
            &rubric.version,
        ));
    }
    keys(&mut app, "r");
    let screen = render(&app);
    assert!(
        !screen.contains("bob"),
        "bob's labels visible before alice finished: {screen}"
    );
    assert!(screen.contains("blind"));
    let fx = keys(&mut app, "ppp");
    commit_all(&mut app, fx);
    keys(&mut app, "r");
    assert!(!render(&app).contains("bob:"), "still one criterion to go");
    let fx = keys(&mut app, "p");
    commit_all(&mut app, fx);
    keys(&mut app, "r");
    let screen = render(&app);
    assert!(screen.contains("bob: fail"), "{screen}");
}

#[test]
fn undo_retracts_the_last_label_as_a_new_version() {
    let mut app = app(Some("alice"));
    let fx = keys(&mut app, "pp");
    commit_all(&mut app, fx);
    let fx = keys(&mut app, "z");
    let undo = commit_all(&mut app, fx);
    assert_eq!(undo.len(), 1);
    assert_eq!(undo[0].criterion, "completeness");
    assert_eq!(undo[0].label, None, "a retraction, not a deletion");
    assert!(
        app.annotate
            .label_of("i0", "alice", "completeness")
            .is_none()
    );
    assert!(
        app.annotate
            .label_of("i0", "alice", "faithfulness")
            .is_some()
    );
    assert_eq!(app.annotate.labels.len(), 3, "history keeps all versions");
    assert_eq!(
        app.annotate.criterion, 1,
        "cursor back on the undone criterion"
    );
}

#[test]
fn reviewer_is_asked_for_when_not_given() {
    let mut app = app(None);
    assert!(render(&app).contains("Who is labelling?"));
    // Typing a name never traps the user: tab still leaves the pane.
    app.handle_key(KeyEvent::new(KeyCode::Tab, KeyModifiers::NONE));
    assert_eq!(app.pane, Pane::Agreement);
    app.pane = Pane::Annotate;
    keys(&mut app, "carol");
    app.handle_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE));
    assert_eq!(app.annotate.reviewer.as_deref(), Some("carol"));
    let fx = keys(&mut app, "p");
    assert_eq!(saves(fx)[0].1.reviewer, "carol");
}

#[test]
fn agreement_table_renders_real_numbers() {
    let rubric = default_rubric();
    let mut labels = Vec::new();
    // Clarity: ann p p f f / bob p f f f -> kappa 0.50; other criteria identical.
    for (i, (a, b)) in [
        ("pass", "pass"),
        ("pass", "fail"),
        ("fail", "fail"),
        ("fail", "fail"),
    ]
    .iter()
    .enumerate()
    {
        for c in &rubric.criteria {
            let (la, lb) = if c.key == "clarity" {
                (*a, *b)
            } else {
                (*a, *a)
            };
            labels.push(Label::new(
                &format!("i{i}"),
                "ann",
                &c.key,
                Some(la),
                None,
                &rubric.version,
            ));
            labels.push(Label::new(
                &format!("i{i}"),
                "bob",
                &c.key,
                Some(lb),
                None,
                &rubric.version,
            ));
        }
    }
    let cur = current(&labels);
    let rows = agreement_table(
        &rubric,
        &cur,
        ("ann", "bob"),
        Bootstrap {
            resamples: 300,
            seed: 1,
        },
    );
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Agreement;
    app.agreement.rows = rows;
    app.agreement.reviewers = Some(("ann".into(), "bob".into()));
    let screen = render(&app);
    assert!(screen.contains("Clarity"));
    assert!(
        screen.contains("0.50 ["),
        "kappa 0.50 with its CI: {screen}"
    );
    assert!(
        screen.contains("1.00"),
        "perfect agreement on the other criteria"
    );
    assert!(screen.contains("paper (n=100)"));
    assert!(screen.contains("Confusion"));
}
