//! Annotate and Agreement panes driven by keys in a TestBackend: labelling with single
//! keys, blind mode, undo, and the agreement table with real numbers.

use crate::common;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::core::agreement::Bootstrap;
use raglab::service::base::default_rubric;
use raglab::service::study::{Agreement, Item, Label, agreement_table, current};
use raglab::tui::app::{App, Pane};
use raglab::tui::effect::Effect;
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::agreement::{AgreementPane, AgreementSettings};
use raglab::tui::panes::annotate::{AnnotatePane, AnnotateSettings};

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
            ..Default::default()
        })
        .collect()
}

fn app(reviewer: Option<&str>) -> App {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Annotate;
    app.annotate = AnnotatePane::new(AnnotateSettings {
        reviewer: reviewer.map(str::to_string),
        ..AnnotateSettings::default()
    });
    app.annotate
        .load(items(3), Vec::new(), std::collections::HashMap::new());
    app
}

/// The item on screen.
fn shown(app: &App) -> String {
    app.annotate.item().expect("an item").item_id.clone()
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
    let first = shown(&app);
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
            .all(|l| l.reviewer == "alice" && l.item_id == first)
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
            .labels()
            .iter()
            .filter(|l| l.criterion == "factual_consistency")
            .count(),
        2
    );
    // `]` next item, `u` first unlabelled (the labelled item is first in alice's order).
    keys(&mut app, "]]u");
    assert_eq!(app.annotate.position(), 1);
    assert_ne!(shown(&app), first);
}

#[test]
fn other_labels_stay_hidden_until_the_item_is_done() {
    let mut app = app(Some("alice"));
    let rubric = default_rubric();
    let item = shown(&app);
    let bob: Vec<Label> = rubric
        .criteria
        .iter()
        .map(|c| Label::new(&item, "bob", &c.key, Some("fail"), None, &rubric.version))
        .collect();
    // Read with the study, as another process's commit would be.
    app.annotate
        .load(items(3), bob, std::collections::HashMap::new());
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
    let item = shown(&app);
    assert!(
        app.annotate
            .label_of(&item, "alice", "completeness")
            .is_none()
    );
    assert!(
        app.annotate
            .label_of(&item, "alice", "faithfulness")
            .is_some()
    );
    assert_eq!(app.annotate.labels().len(), 3, "history keeps all versions");
    assert_eq!(
        app.annotate.criterion(),
        1,
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
    assert_eq!(app.annotate.reviewer(), Some("carol"));
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
    app.agreement.on_result(Agreement {
        rows,
        reviewers: ("ann".into(), "bob".into()),
        ..Agreement::default()
    });
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
    assert!(screen.contains("paper Overall n=100"));
    assert!(screen.contains("Confusion"));
}

fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
}

#[test]
fn a_long_answer_and_chunk_are_readable_to_their_last_line() {
    let mut app = app(Some("alice"));
    let words = |p: &str| {
        (0..5000)
            .map(|i| format!("{p}{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let id = shown(&app);
    let mut long = app.annotate.items().to_vec();
    for it in &mut long {
        if it.item_id == id {
            it.answer = words("w");
            it.target_chunk = words("t");
        }
    }
    app.annotate
        .load(long, Vec::new(), std::collections::HashMap::new());
    let screen = render(&app);
    assert!(screen.contains("w0 w1"), "{screen}");
    assert!(!screen.contains("w4999"));
    // `h` focuses the model answer (the last text), `G` goes to its last line.
    keys(&mut app, "hG");
    let screen = render(&app);
    assert!(screen.contains("w4999"), "last word shown: {screen}");
    let pos = regex_lines(&screen);
    assert!(pos.0 > 1 && pos.1 == pos.2, "at the bottom: {pos:?}");
    // `K` one line up: the last word leaves the window (at most 41 columns per line).
    keys(&mut app, "K");
    let up = regex_lines(&render(&app));
    assert_eq!((up.0, up.1), (pos.0 - 1, pos.1 - 1));
    // Zoom: the answer fills the pane, the other texts are gone.
    key(&mut app, KeyCode::Enter);
    let screen = render(&app);
    assert!(!screen.contains(" Question "), "zoomed: {screen}");
    assert!(screen.contains(" Answer "));
    let zoomed = regex_lines(&screen);
    assert!(zoomed.2 < pos.2, "a wider text wraps into fewer lines");
    key(&mut app, KeyCode::Esc);
    // `h` moves the focus to the target chunk, whose own scroll starts at the top.
    keys(&mut app, "hG");
    let screen = render(&app);
    assert!(screen.contains("t4999"), "{screen}");
    assert_eq!(regex_lines(&screen), up, "the answer kept its own position");
}

/// (first, last, total) of the model answer's "Answer A-B/N" title.
fn regex_lines(screen: &str) -> (usize, usize, usize) {
    let at = screen.find(" Answer ").expect("the answer's title");
    let rest = &screen[at + 8..];
    let (range, rest) = rest.split_once('/').expect("A-B/N");
    let total: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let (a, b) = range.split_once('-').expect("range");
    (
        a.parse().expect("a"),
        b.parse().expect("b"),
        total.parse().expect("total"),
    )
}

fn six_criteria_app(reviewer: &str) -> App {
    let rubric = raglab::service::base::load_rubric(Some(
        &common::repo().join("tests/data/rubrics/six_yes_no_partly.toml"),
    ))
    .expect("rubric");
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Annotate;
    app.annotate = AnnotatePane::new(AnnotateSettings {
        reviewer: Some(reviewer.into()),
        rubric,
        ..AnnotateSettings::default()
    });
    app.annotate
        .load(items(2), Vec::new(), std::collections::HashMap::new());
    app
}

#[test]
fn any_rubric_six_criteria_yes_no_partly_by_first_letters() {
    let mut app = six_criteria_app("alice");
    let fx = keys(&mut app, "ynpyny");
    let saved = commit_all(&mut app, fx);
    let got: Vec<(&str, &str)> = saved
        .iter()
        .map(|l| (l.criterion.as_str(), l.label.as_deref().unwrap_or("")))
        .collect();
    assert_eq!(
        got,
        vec![
            ("grounded", "yes"),
            ("complete", "no"),
            ("accurate", "partly"),
            ("clear", "yes"),
            ("safe", "no"),
            ("concise", "yes")
        ]
    );
    assert!(saved.iter().all(|l| l.rubric_version == "2"));
    let screen = render(&app);
    assert!(screen.contains("1/2 done"), "{screen}");
    assert!(screen.contains("[y=yes n=no p=partly]"));
    // `6` picks criterion 6; `N` writes a note on it (`n` is the label "no" here): a new
    // version with the same label and the note, shown to its author.
    keys(&mut app, "6N");
    assert!(app.annotate.is_typing_note());
    keys(&mut app, "cites no source");
    let fx: Vec<Effect> = key(&mut app, KeyCode::Enter).into_iter().collect();
    let noted = commit_all(&mut app, fx);
    assert_eq!(noted[0].criterion, "concise");
    assert_eq!(noted[0].label.as_deref(), Some("yes"));
    assert_eq!(noted[0].note.as_deref(), Some("cites no source"));
    assert!(render(&app).contains("your note: cites no source"));
    // The help screen is generated from the rubric and says which bindings it takes.
    keys(&mut app, "?");
    let help = common::screen(&app, 170, 120);
    assert!(help.contains("label partly"), "{help}");
    assert!(help.contains("Labels of rubric six-criteria v2 (6 criteria"));
    assert!(help.contains("a label key takes this key here"));
}

#[test]
fn others_labels_and_notes_appear_once_both_submitted() {
    let mut app = app(Some("alice"));
    let rubric = default_rubric();
    let item = shown(&app);
    let bob: Vec<Label> = rubric
        .criteria
        .iter()
        .map(|c| {
            Label::new(
                &item,
                "bob",
                &c.key,
                Some("fail"),
                Some(&format!("bob on {}", c.key)),
                &rubric.version,
            )
        })
        .collect();
    // Read with the study, as another process's commit would be.
    app.annotate
        .load(items(3), bob, std::collections::HashMap::new());
    let fx = keys(&mut app, "ppp");
    commit_all(&mut app, fx);
    keys(&mut app, "r");
    let screen = render(&app);
    assert!(
        !screen.contains("bob on"),
        "notes hidden before reveal: {screen}"
    );
    assert!(screen.contains("blind until every reviewer of this item submits it"));
    let fx = keys(&mut app, "p");
    commit_all(&mut app, fx);
    keys(&mut app, "r");
    let screen = render(&app);
    assert!(screen.contains("bob: fail"), "{screen}");
    assert!(screen.contains("bob's note: bob on clarity"), "{screen}");
    // A change after reveal is saved, kept, and said to be marked.
    let fx = keys(&mut app, "1f");
    commit_all(&mut app, fx);
    assert!(render(&app).contains("changed after reveal"));
    let l = app.annotate.labels().last().expect("label");
    assert!(app.annotate.blinding().after_reveal(l));
}

#[test]
fn the_lead_adjudicates_a_disagreement_with_a_rationale() {
    use raglab::core::annotation::Disagreement;
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Agreement;
    app.annotate = AnnotatePane::new(AnnotateSettings {
        reviewer: Some("lena".into()),
        lead: true,
        ..AnnotateSettings::default()
    });
    app.agreement = AgreementPane::new(AgreementSettings {
        lead: true,
        lead_name: Some("lena".into()),
        rubric: Some(default_rubric()),
    });
    let rows = no_labels_table();
    let disagreements = ["i1", "i2"]
        .iter()
        .map(|i| Disagreement {
            item_id: (*i).into(),
            criterion: "clarity".into(),
            first: "pass".into(),
            second: "fail".into(),
            first_note: Some("clear enough".into()),
            second_note: Some("jargon".into()),
            judge: Some("fail".into()),
            final_label: None,
        })
        .collect();
    app.agreement.on_result(Agreement {
        rows,
        reviewers: ("ann".into(), "bob".into()),
        disagreements,
        ..Agreement::default()
    });
    keys(&mut app, "]");
    let screen = render(&app);
    assert!(screen.contains("▶i2"), "{screen}");
    assert!(screen.contains("note: jargon") && screen.contains("judge: fail"));
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(render(&app).contains("final label? p=pass f=fail"));
    assert!(keys(&mut app, "f").is_empty());
    // Without a rationale nothing is saved.
    assert!(key(&mut app, KeyCode::Enter).is_none());
    assert!(render(&app).contains("a rationale is required"));
    keys(&mut app, "uses undefined jargon");
    let fx: Vec<Effect> = key(&mut app, KeyCode::Enter).into_iter().collect();
    let saved = saves(fx);
    let l = &saved[0].1;
    assert_eq!(
        (
            l.item_id.as_str(),
            l.reviewer.as_str(),
            l.criterion.as_str()
        ),
        ("i2", "final", "clarity")
    );
    assert_eq!(l.label.as_deref(), Some("fail"));
    assert_eq!(l.note.as_deref(), Some("uses undefined jargon"));
    assert_eq!(l.adjudicator.as_deref(), Some("lena"));
    // The commit is tracked like any label: quitting would wait for it.
    assert_eq!(app.annotate.saves_in_flight(), 1);
}

#[test]
fn a_reviewer_cannot_adjudicate() {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Agreement;
    app.agreement = AgreementPane::new(AgreementSettings {
        rubric: Some(default_rubric()),
        ..AgreementSettings::default()
    });
    app.agreement.on_result(Agreement {
        rows: no_labels_table(),
        ..Agreement::default()
    });
    key(&mut app, KeyCode::Enter);
    assert!(!app.agreement.adjudicating());
    assert!(render(&app).contains("adjudication is for the study lead"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_answer_goes_to_annotation_with_one_key() {
    use raglab::service::answer::AnswerRecord;
    let env = common::Env::new();
    let ctx = raglab::service::Context::with(
        raglab::config::Paths {
            config_dir: env.dir.path().join("config"),
            data_dir: env.dir.path().join("data"),
        },
        raglab::config::Config::default(),
        &env.workspace(),
    )
    .expect("context");
    let answer = AnswerRecord {
        answer_id: "tui/typed-1/s42@1".into(),
        run: "tui".into(),
        question_id: "typed-1".into(),
        question: "How is measles spread?".into(),
        reference_answer: Some("Through the air.".into()),
        answer: "By coughing and sneezing.".into(),
        ..AnswerRecord::default()
    };
    raglab::service::answer::save_answer(&ctx, &answer)
        .await
        .expect("stored");
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Generate;
    assert!(key(&mut app, KeyCode::Char('a')).is_none(), "no answer yet");
    // The answer finishes as a live one does (the first generation's ticket is 0).
    app.generate.on_done(0, Ok(answer.clone()));
    let Some(Effect::AddItem { answer_id }) = key(&mut app, KeyCode::Char('a')) else {
        panic!("`a` sends the answer");
    };
    assert_eq!(answer_id, answer.answer_id);
    // What the job runs: the item is the stored answer's question, reference and text.
    use raglab::service::study::add_answer_item;
    assert!(add_answer_item(&ctx, &answer_id).await.expect("added"));
    assert!(
        !add_answer_item(&ctx, &answer_id).await.expect("again"),
        "once"
    );
    let study = raglab::service::study::load_study(&ctx)
        .await
        .expect("study");
    assert_eq!(study.items.len(), 1);
    let item = &study.items[0];
    assert_eq!(
        (
            item.set.as_str(),
            item.question.as_str(),
            item.answer.as_str()
        ),
        ("tui", "How is measles spread?", "By coughing and sneezing.")
    );
    assert_eq!(item.reference_answer, "Through the air.");
    assert_eq!(item.answer_id.as_deref(), Some(answer_id.as_str()));
}

#[test]
fn e_exports_the_agreement_table_once_computed() {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Agreement;
    assert!(key(&mut app, KeyCode::Char('e')).is_none());
    assert!(render(&app).contains("nothing to export yet"));
    app.agreement.on_result(Agreement {
        rows: no_labels_table(),
        reviewers: ("ann".into(), "bob".into()),
        ..Agreement::default()
    });
    assert!(matches!(
        key(&mut app, KeyCode::Char('e')),
        Some(Effect::ExportAgreement)
    ));
}

/// A note typed on a criterion that has no label yet is saved with that criterion's
/// label, not with whichever criterion is labelled next; leaving the item while it
/// waits is refused once with what to do, the second try leaves and says the note
/// was not saved, and quitting with one waiting asks first and names it afterwards.
#[test]
fn a_note_waits_for_its_own_criterion_and_is_never_dropped_silently() {
    let mut app = app(Some("alice"));
    let first = shown(&app);
    // `n` on faithfulness (criterion 1, unlabelled), a note, enter; then `2` and label
    // completeness: the note is not attached there.
    let fx = keys(&mut app, "nunclear source");
    assert!(fx.is_empty());
    key(&mut app, KeyCode::Enter);
    assert!(render(&app).contains("note kept for"), "{}", render(&app));
    let fx = keys(&mut app, "2p");
    let saved = commit_all(&mut app, fx);
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].criterion, "completeness");
    assert_eq!(saved[0].note, None, "the note went to another criterion");
    // `]` is refused once: still on the item, told why.
    keys(&mut app, "]");
    assert_eq!(shown(&app), first);
    let screen = render(&app);
    assert!(screen.contains("not saved yet"), "{screen}");
    // Labelling faithfulness saves the note with it; then `]` moves at once.
    let fx = keys(&mut app, "1f");
    let saved = commit_all(&mut app, fx);
    assert_eq!(saved[0].criterion, "faithfulness");
    assert_eq!(saved[0].note.as_deref(), Some("unclear source"));
    keys(&mut app, "]");
    assert_ne!(shown(&app), first);

    // A second note left waiting: `]` twice leaves without it and says so.
    let second = shown(&app);
    keys(&mut app, "nforgotten");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "]");
    assert_eq!(shown(&app), second);
    keys(&mut app, "]");
    assert_ne!(shown(&app), second);
    assert!(
        render(&app).contains("NOT saved: note on item"),
        "{}",
        render(&app)
    );

    // Quitting with a note waiting: the first `q` asks, the second quits, and the
    // report printed after quitting names the note.
    keys(&mut app, "nlast words");
    key(&mut app, KeyCode::Enter);
    keys(&mut app, "q");
    assert!(!app.should_quit, "quit with an unsaved note without asking");
    keys(&mut app, "q");
    assert!(app.should_quit);
    let report = app
        .unsaved_report()
        .expect("a report of what was not saved");
    assert!(
        report.contains("forgotten") && report.contains("last words"),
        "{report}"
    );
}

/// The agreement rows of ann and bob before any label (10 resamples, seed 1).
fn no_labels_table() -> Vec<raglab::service::study::AgreementRow> {
    agreement_table(
        &default_rubric(),
        &current(&[]),
        ("ann", "bob"),
        Bootstrap {
            resamples: 10,
            seed: 1,
        },
    )
}
