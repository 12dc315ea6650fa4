//! Blinding in every view. A property test over random label logs (labels, changes of
//! mind, retractions, the lead's final labels, the judge's labels, assignments) and
//! every kind of viewer (a reviewer, the second and a third reviewer, the lead, no
//! identity): the Annotate, Agreement and Query panes drawn into a TestBackend, and the
//! text and JSON of `labels export` (jsonl, csv), `labels history`, `labels export
//! --final` and `agree --json`, never hold a label, note or judge label that an
//! independent re-statement of the rule (written out here, not raglab's) forbids, and
//! do hold what it allows. Then the same end to end: the TUI started without a
//! reviewer shows no one's labels until a name is typed, and the real binary's
//! commands and the Evaluation pane's judge pass rates, on a real workspace.

use crate::common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use proptest::prelude::*;
use raglab::core::agreement::Bootstrap;
use raglab::core::annotation::{FINAL, Item, JUDGE, Label};
use raglab::core::answer::{AnswerRecord, JudgementRecord};
use raglab::core::question::Question;
use raglab::service::base::default_rubric;
use raglab::service::study::{self, AgreementRequest, LabelVersion, RaterPair, Sight, Viewer};
use raglab::tui::app::{App, Pane};
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::PaneView;
use raglab::tui::panes::agreement::{AgreementPane, AgreementSettings};

const ITEMS: usize = 3;
const HUMANS: [&str; 3] = ["ann", "bob", "carol"];
/// Everyone whose labels a view may show beside the viewer's own.
const RATERS: [&str; 5] = ["ann", "bob", "carol", JUDGE, FINAL];

fn criteria() -> Vec<String> {
    default_rubric()
        .criteria
        .iter()
        .map(|c| c.key.clone())
        .collect()
}

/// A random study: label events, assignments and which items the judge judged.
#[derive(Debug, Clone)]
struct Case {
    /// (item, reviewer, kind, criterion, value): kinds 0-2 submit every criterion,
    /// 3-4 label one criterion, 5 retracts one.
    events: Vec<(usize, usize, u8, usize, bool)>,
    /// Per item: 0 no assignment, 1 ann+bob, 2 ann+carol, 3 bob+carol.
    assign: Vec<u8>,
    judged: Vec<bool>,
    /// The lead's final labels: (item, criterion, pass).
    finals: Vec<(usize, usize, bool)>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(
            (0..ITEMS, 0..3usize, 0..6u8, 0..4usize, any::<bool>()),
            0..14,
        ),
        prop::collection::vec(prop_oneof![3 => Just(0u8), 1 => 1..4u8], ITEMS),
        prop::collection::vec(any::<bool>(), ITEMS),
        prop::collection::vec((0..ITEMS, 0..4usize, any::<bool>()), 0..3),
    )
        .prop_map(|(events, assign, judged, finals)| Case {
            events,
            assign,
            judged,
            finals,
        })
}

/// The study a case describes: items, the label log (every row with a unique note
/// token `N<k>X`), the judge's labels, the judgements and the assignments.
struct Study {
    items: Vec<Item>,
    /// The labels dataset: human and final labels, in commit order.
    table: Vec<Label>,
    /// `table` with the judge's labels, as the agreement reads them.
    with_judge: Vec<Label>,
    judgements: Vec<JudgementRecord>,
    answers: Vec<AnswerRecord>,
    pairs: HashMap<String, (String, String)>,
}

fn label(k: u64, item: usize, who: &str, c: &str, v: Option<&str>, note: String) -> Label {
    Label {
        label_id: format!("L{k}"),
        item_id: format!("i{item}"),
        reviewer: who.into(),
        criterion: c.into(),
        label: v.map(str::to_string),
        note: Some(note),
        timestamp: format!("t{k}"),
        seq: 1000 + k,
        rubric_version: "1".into(),
        adjudicator: (who == FINAL).then(|| "lena".to_string()),
        signer: None,
        signature: None,
        log_rows: None,
        active_ms: None,
    }
}

fn build(case: &Case) -> Study {
    let crit = criteria();
    let pass = |b: bool| if b { "pass" } else { "fail" };
    let mut table = Vec::new();
    let mut k = 0u64;
    let mut push = |table: &mut Vec<Label>, item, who: &str, c: &str, v: Option<&str>| {
        k += 1;
        table.push(label(k, item, who, c, v, format!("N{k}X")));
    };
    for &(item, who, kind, c, v) in &case.events {
        let who = HUMANS[who];
        match kind {
            0..=2 => {
                for (n, key) in crit.iter().enumerate() {
                    push(&mut table, item, who, key, Some(pass(v ^ (n == c))));
                }
            }
            3 | 4 => push(&mut table, item, who, &crit[c], Some(pass(v))),
            _ => push(&mut table, item, who, &crit[c], None),
        }
    }
    for &(item, c, v) in &case.finals {
        push(&mut table, item, FINAL, &crit[c], Some(pass(v)));
    }
    let items: Vec<Item> = (0..ITEMS)
        .map(|i| Item {
            item_id: format!("i{i}"),
            set: "s".into(),
            question: format!("Question {i}?"),
            reference_answer: format!("Reference {i}"),
            target_chunk: format!("Target {i}"),
            answer: format!("Answer {i}"),
            answer_id: Some(format!("ans-{i}")),
            ..Default::default()
        })
        .collect();
    let mut with_judge = table.clone();
    let mut judgements = Vec::new();
    for (i, _) in case.judged.iter().enumerate().filter(|(_, j)| **j) {
        let labels: Vec<String> = (0..crit.len())
            .map(|n| pass((i + n) % 2 == 0).to_string())
            .collect();
        for (n, c) in crit.iter().enumerate() {
            let mut l = label(0, i, JUDGE, c, Some(&labels[n]), String::new());
            l.label_id = format!("J{i}-{n}");
            l.note = None;
            l.seq = i as u64;
            with_judge.push(l);
        }
        judgements.push(JudgementRecord {
            answer_id: format!("ans-{i}"),
            run: "r".into(),
            judge_model: "jm".into(),
            rubric: "paper".into(),
            rubric_version: "1".into(),
            criteria: crit.clone(),
            labels,
            rationale: String::new(),
            prompt: String::new(),
            raw_output: String::new(),
            created_at: String::new(),
            endpoint: None,
            repeat: None,
            seed: None,
            temperature: None,
        });
    }
    let answers = (0..ITEMS)
        .map(|i| AnswerRecord {
            answer_id: format!("ans-{i}"),
            run: "r".into(),
            question_id: format!("q{i}"),
            question: format!("Question {i}?"),
            answer: format!("Answer {i}"),
            ..AnswerRecord::default()
        })
        .collect();
    let pairs = case
        .assign
        .iter()
        .enumerate()
        .filter(|(_, a)| **a > 0)
        .map(|(i, a)| {
            let (x, y) = match a {
                1 => ("ann", "bob"),
                2 => ("ann", "carol"),
                _ => ("bob", "carol"),
            };
            (format!("i{i}"), (x.to_string(), y.to_string()))
        })
        .collect();
    Study {
        items,
        table,
        with_judge,
        judgements,
        answers,
        pairs,
    }
}

/// The rule, stated again independently: a reviewer has *submitted* an item once
/// every criterion holds a label of theirs at the same time (later retractions do not
/// undo it); an item is *revealed* once its assigned pair (else any two reviewers)
/// have submitted it; a reviewer sees others' labels on an item revealed that they
/// submitted, and always their own; the lead sees all; no one sees nothing.
struct Oracle {
    submitted: HashMap<String, BTreeSet<String>>,
    revealed: HashSet<String>,
}

impl Oracle {
    fn new(s: &Study) -> Self {
        let crit = criteria();
        let mut log: Vec<&Label> = s
            .table
            .iter()
            .filter(|l| l.reviewer != FINAL && l.reviewer != JUDGE)
            .collect();
        log.sort_by_key(|l| l.seq);
        let mut holds: HashMap<(String, String), HashMap<String, bool>> = HashMap::new();
        let mut submitted: HashMap<String, BTreeSet<String>> = HashMap::new();
        for l in log {
            let h = holds
                .entry((l.item_id.clone(), l.reviewer.clone()))
                .or_default();
            h.insert(l.criterion.clone(), l.label.is_some());
            if crit.iter().all(|c| h.get(c) == Some(&true)) {
                submitted
                    .entry(l.item_id.clone())
                    .or_default()
                    .insert(l.reviewer.clone());
            }
        }
        let revealed = (0..ITEMS)
            .map(|i| format!("i{i}"))
            .filter(|i| {
                let subs = submitted.get(i).cloned().unwrap_or_default();
                match s.pairs.get(i) {
                    Some((a, b)) => subs.contains(a) && subs.contains(b),
                    None => subs.len() >= 2,
                }
            })
            .collect();
        Self {
            submitted,
            revealed,
        }
    }

    fn visible(&self, v: &Viewer, item: &str) -> bool {
        match v {
            Viewer::Lead => true,
            Viewer::Nobody => false,
            Viewer::Reviewer(me) => {
                self.revealed.contains(item)
                    && self.submitted.get(item).is_some_and(|s| s.contains(me))
            }
        }
    }

    fn allowed(&self, v: &Viewer, l: &Label) -> bool {
        v.name() == Some(l.reviewer.as_str()) || self.visible(v, &l.item_id)
    }
}

/// The note tokens of the rows `v` may not see.
fn forbidden(s: &Study, o: &Oracle, v: &Viewer) -> Vec<String> {
    s.table
        .iter()
        .filter(|l| !o.allowed(v, l))
        .filter_map(|l| l.note.clone())
        .collect()
}

fn assert_none(what: &str, text: &str, tokens: &[String]) {
    for t in tokens {
        assert!(
            !text.contains(t.as_str()),
            "{what} shows forbidden {t}:\n{text}"
        );
    }
}

fn render(app: &App) -> String {
    common::screen(app, 170, 40)
}

fn key(app: &mut App, c: char) {
    let _ = app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

fn app_for(s: &Study, v: &Viewer) -> App {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    let name = match v {
        Viewer::Reviewer(me) => Some(me.clone()),
        Viewer::Lead => Some("lena".to_string()),
        Viewer::Nobody => None,
    };
    app.annotate = raglab::tui::panes::annotate::AnnotatePane::new(
        raglab::tui::panes::annotate::AnnotateSettings {
            reviewer: name,
            lead: *v == Viewer::Lead,
            rubric: default_rubric(),
            ..Default::default()
        },
    );
    app.agreement = AgreementPane::new(AgreementSettings {
        lead: *v == Viewer::Lead,
        lead_name: None,
        rubric: Some(default_rubric()),
    });
    app.annotate
        .load(s.items.clone(), s.with_judge.clone(), s.pairs.clone());
    app.query.set_blind(app.annotate.blind_answers());
    app
}

/// The Annotate pane on each of the viewer's items, `r` pressed to show the others.
fn check_annotate(app: &mut App, s: &Study, o: &Oracle, v: &Viewer, bad: &[String]) -> usize {
    app.pane = Pane::Annotate;
    if *v == Viewer::Nobody {
        let screen = render(app);
        assert!(screen.contains("Who is labelling?"), "{screen}");
        assert_none("Annotate (no identity)", &screen, bad);
        return 1;
    }
    let me = v.name().unwrap_or("lena").to_string();
    let n = app.annotate.queue().count();
    for _ in 0..n {
        let item = app.annotate.item().expect("an item").item_id.clone();
        key(app, 'r');
        let screen = render(app);
        assert_none("Annotate", &screen, bad);
        let others = RATERS.iter().filter(|r| **r != me);
        for other in others {
            let shown = screen.contains(&format!(" {other}: "))
                || screen.contains(&format!("{other}'s note"));
            let has_rows = s
                .with_judge
                .iter()
                .any(|l| l.item_id == item && l.reviewer == *other);
            if !o.visible(v, &item) {
                assert!(
                    !shown,
                    "{other}'s labels on blind {item} shown to {v:?}:\n{screen}"
                );
            } else if has_rows {
                assert!(
                    shown,
                    "{other}'s labels on revealed {item} not shown to {v:?}:\n{screen}"
                );
            }
        }
        key(app, ']');
    }
    n
}

/// The Agreement pane for every rater pair and label version, each disagreement
/// selected in turn; and `agree --json`'s document.
fn check_agreement(app: &mut App, s: &Study, o: &Oracle, v: &Viewer, bad: &[String]) -> usize {
    app.pane = Pane::Agreement;
    let visible_items = (0..ITEMS)
        .filter(|i| o.visible(v, &format!("i{i}")))
        .count();
    let mut views = 0;
    for pair in [
        RaterPair::Reviewers,
        RaterPair::JudgeFirst,
        RaterPair::JudgeSecond,
    ] {
        for version in [LabelVersion::BeforeReveal, LabelVersion::Latest] {
            let req = AgreementRequest {
                reviewers: None,
                raters: None,
                boot: Bootstrap {
                    resamples: 20,
                    seed: 1,
                },
                pair,
                viewer: v.clone(),
                version,
                judge_model: None,
                gold: Vec::new(),
                window: raglab::service::study::DRIFT_WINDOW,
            };
            while app.agreement.pair() != pair {
                app.agreement.update(raglab::tui::action::Action::NextPair);
            }
            match study::agreement_of(
                &default_rubric(),
                &s.with_judge,
                &(&s.pairs).into(),
                vec![],
                req,
            ) {
                Ok(a) => {
                    assert!(*v != Viewer::Nobody, "an agreement for no one");
                    for d in &a.disagreements {
                        assert!(o.visible(v, &d.item_id), "{v:?} sees {d:?}");
                    }
                    for row in &a.rows {
                        for rep in row.pairs.iter().filter_map(|p| p.1.as_ref()) {
                            assert!(rep.items <= visible_items, "{v:?}: {} items", rep.items);
                        }
                    }
                    let json = raglab::cli::annotate::agree_json(&a).to_string();
                    assert_none("agree --json", &json, bad);
                    views += 1;
                    app.agreement.on_result(a);
                }
                Err(e) => app.agreement.on_error(e.to_string()),
            }
            let screen = render(app);
            assert_none("Agreement", &screen, bad);
            views += 1;
            for _ in 0..app.agreement.disagreements().len().min(6) {
                key(app, ']');
                assert_none("Agreement detail", &render(app), bad);
                views += 1;
            }
        }
    }
    views
}

/// The Query pane's answers panel on each item's answer.
fn check_query(app: &mut App, s: &Study, o: &Oracle, v: &Viewer) -> usize {
    app.pane = Pane::Query;
    let sight = Sight::new(
        v.clone(),
        app.annotate.blinding().clone(),
        app.annotate.items(),
    );
    for i in 0..ITEMS {
        let item = format!("i{i}");
        assert_eq!(sight.judgement(&format!("ans-{i}")), o.visible(v, &item));
        // The question is asked (its search is not run: the panel needs no ranking).
        let _ = app.query.submit(Question {
            id: format!("q{i}"),
            text: format!("Question {i}?"),
            ..Question::default()
        });
        app.query
            .set_stored(s.answers.clone(), s.judgements.clone(), Vec::new());
        app.query.update(raglab::tui::action::Action::ToggleAnswers);
        let screen = render(app);
        let labels_shown = screen.contains("=pass") || screen.contains("=fail");
        let judged = s
            .judgements
            .iter()
            .any(|j| j.answer_id == format!("ans-{i}"));
        assert_eq!(
            labels_shown,
            judged && o.visible(v, &item),
            "{v:?}, {item} judged {judged}:\n{screen}"
        );
        app.query.update(raglab::tui::action::Action::ToggleAnswers);
    }
    ITEMS
}

/// `labels export` (jsonl, csv), `labels history` and `labels export --final`.
fn check_cli(s: &Study, o: &Oracle, v: &Viewer, bad: &[String]) -> usize {
    let rubric = default_rubric();
    let rows = study::visible_label_rows(&rubric, &s.table, &(&s.pairs).into(), v);
    let want: Vec<&str> = s
        .table
        .iter()
        .filter(|l| o.allowed(v, l))
        .map(|l| l.label_id.as_str())
        .collect();
    let jsonl = study::labels_jsonl(&rows).expect("jsonl");
    let got: Vec<String> = jsonl
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["label_id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect();
    assert_eq!(got, want, "export for {v:?}");
    assert_none("labels export", &jsonl, bad);
    assert_none("labels export --format csv", &study::labels_csv(&rows), bad);
    for i in 0..ITEMS {
        let item = format!("i{i}");
        let (h, withheld) = study::history_of(&rubric, &s.table, &(&s.pairs).into(), &item, v);
        let text = raglab::cli::annotate::history_text(&h);
        assert_none("labels history", &text, bad);
        let of_item: Vec<&Label> = s.table.iter().filter(|l| l.item_id == item).collect();
        for l in &of_item {
            let token = l.note.as_deref().expect("note");
            assert_eq!(
                text.contains(token),
                o.allowed(v, l),
                "{v:?} {token}:\n{text}"
            );
        }
        let hidden = of_item.iter().filter(|l| !o.allowed(v, l)).count();
        assert_eq!(withheld, hidden);
    }
    match study::finals_of(&rubric, &s.with_judge, &(&s.pairs).into(), None, v) {
        Ok((finals, _)) => {
            for f in &finals {
                assert!(o.visible(v, &f.item_id), "{v:?}: final row {f:?}");
                let json = serde_json::to_string(f).expect("json");
                assert_none("labels export --final", &json, bad);
            }
        }
        Err(e) => assert!(
            *v == Viewer::Nobody || e.to_string().contains("two reviewers"),
            "{e:#}"
        ),
    }
    3 + 2 * ITEMS
}

fn viewers() -> [Viewer; 5] {
    [
        Viewer::Reviewer("ann".into()),
        Viewer::Reviewer("bob".into()),
        Viewer::Reviewer("carol".into()),
        Viewer::Lead,
        Viewer::Nobody,
    ]
}

static VIEWS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
static CASES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]
    #[test]
    fn no_view_shows_what_blinding_forbids(case in case()) {
        let s = build(&case);
        let o = Oracle::new(&s);
        let mut views = 0;
        for v in viewers() {
            let bad = forbidden(&s, &o, &v);
            let mut app = app_for(&s, &v);
            views += check_annotate(&mut app, &s, &o, &v, &bad);
            views += check_agreement(&mut app, &s, &o, &v, &bad);
            views += check_query(&mut app, &s, &o, &v);
            views += check_cli(&s, &o, &v, &bad);
        }
        let total = VIEWS.fetch_add(views, std::sync::atomic::Ordering::Relaxed) + views;
        let cases = CASES.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
        if cases.is_multiple_of(64) {
            eprintln!("{cases} cases, {total} views checked");
        }
    }
}

/// A real workspace: items i0 and i1 (answers ans-0 and ans-1, both judged), ann and
/// bob submit i0 (revealed), ann submits i1 and bob labels one criterion of it (blind).
async fn workspace(env: &common::Env) -> raglab::service::Context {
    let ctx = common::context(env, raglab::config::Config::default());
    let rubric = default_rubric();
    let dir = env.dir.path();
    let items = dir.join("items.jsonl");
    let mut text = String::new();
    for i in 0..2 {
        text.push_str(&format!(
            "{{\"item_id\": \"i{i}\", \"question\": \"Question {i}?\", \"answer\": \"Answer {i}\", \"answer_id\": \"ans-{i}\"}}\n"
        ));
    }
    std::fs::write(&items, text).expect("items");
    study::create_items(&ctx, &study::ItemSource::File(items), None, None)
        .await
        .expect("items");
    let mut rows = String::new();
    for (item, who, n) in [
        ("i0", "ann", 4),
        ("i0", "bob", 4),
        ("i1", "ann", 4),
        ("i1", "bob", 1),
    ] {
        for (k, c) in rubric.criteria.iter().take(n).enumerate() {
            let v = if who == "bob" && k == 3 {
                "fail"
            } else {
                "pass"
            };
            rows.push_str(&format!(
                "{{\"item_id\": \"{item}\", \"reviewer\": \"{who}\", \"criterion\": \"{}\", \"label\": \"{v}\", \"note\": \"{who}-{item}-secret\"}}\n",
                c.key
            ));
        }
    }
    let file = dir.join("labels.jsonl");
    std::fs::write(&file, rows).expect("labels");
    study::import_labels(&ctx, &rubric, &file)
        .await
        .expect("import");
    for i in 0..2 {
        let answer = AnswerRecord {
            answer_id: format!("ans-{i}"),
            run: "r".into(),
            question_id: format!("q{i}"),
            question: format!("Question {i}?"),
            answer: format!("Answer {i}"),
            ..AnswerRecord::default()
        };
        raglab::service::answer::save_answer(&ctx, &answer)
            .await
            .expect("answer");
        let j = JudgementRecord {
            answer_id: format!("ans-{i}"),
            run: "r".into(),
            judge_model: "jm".into(),
            rubric: rubric.name.clone(),
            rubric_version: rubric.version.clone(),
            criteria: criteria(),
            labels: vec!["fail".into(); 4],
            rationale: String::new(),
            prompt: String::new(),
            raw_output: String::new(),
            created_at: String::new(),
            endpoint: None,
            repeat: None,
            seed: None,
            temperature: None,
        };
        raglab::service::answer::judgements(&ctx.workspace)
            .append(&[j])
            .await
            .expect("judgement");
    }
    ctx
}

/// Started without a reviewer, the TUI computes the Agreement pane for no one: no
/// name, label or note on it; typing a name in the Annotate pane recomputes it (and
/// the Query pane's blind answers) for that reviewer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_reviewer_the_agreement_pane_shows_no_one_until_a_name_is_typed() {
    let env = common::Env::new();
    let ctx = workspace(&env).await;
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, mut rx) = raglab::tui::jobs::Jobs::new(&ctx);
    jobs.set_viewer(app.annotate.viewer());
    jobs.load_background();
    let computed = |a: &App| a.agreement.ticket() > 0 && !a.agreement.is_computing();
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(60),
        computed,
    )
    .await;
    app.pane = Pane::Agreement;
    let screen = render(&app);
    for word in ["ann/", "/bob", "secret", "Disagreements", "no data"] {
        assert!(
            !screen.contains(word),
            "`{word}` on the Agreement pane for no one:\n{screen}"
        );
    }
    assert!(screen.contains("without an identity"), "{screen}");
    let blind: BTreeSet<String> = app.query.answers().blind.iter().cloned().collect();
    assert_eq!(blind, BTreeSet::from(["ans-0".into(), "ans-1".into()]));

    app.pane = Pane::Annotate;
    for c in "bob".chars() {
        common::tui::press(&mut app, &mut jobs, c);
    }
    let before = app.agreement.ticket();
    common::tui::key(&mut app, &mut jobs, KeyCode::Enter);
    assert!(
        app.agreement.ticket() > before,
        "the name asked for a recomputation"
    );
    let done = |a: &App| !a.agreement.is_computing() && a.agreement.shown().is_some();
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), done).await;
    app.pane = Pane::Agreement;
    let screen = render(&app);
    assert!(screen.contains("κ ann/bob"), "{screen}");
    assert!(screen.contains("Disagreements (1"), "{screen}");
    assert!(
        screen.contains("bob-i0-secret"),
        "revealed i0's notes: {screen}"
    );
    assert!(!screen.contains("ann-i1-secret"), "{screen}");
    assert!(
        screen.contains("1 items not yet revealed to you"),
        "{screen}"
    );
    let blind: Vec<&String> = app.query.answers().blind.iter().collect();
    assert_eq!(blind, vec!["ans-1"], "i0 revealed to bob, i1 not");
    jobs.settle(Duration::from_secs(10)).await;
}

/// The real binary's commands as each viewer, and the Evaluation pane's pass rates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_and_pass_rates_run_as_a_viewer() {
    let env = common::Env::new();
    let ctx = workspace(&env).await;
    let run = |args: &[&str]| {
        let out = env.cmd().args(args).output().expect("spawn raglab");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let bob = ["--reviewer", "bob"];
    let (ok, export, err) = run(&[&bob[..], &["labels", "export"]].concat());
    assert!(ok, "{err}");
    assert!(export.contains("ann-i0-secret") && export.contains("bob-i1-secret"));
    assert!(!export.contains("ann-i1-secret"), "{export}");
    assert!(err.contains("some label versions are not shown"), "{err}");
    assert!(
        !err.contains("4 label"),
        "no count of hidden versions: {err}"
    );
    for hint in ["role", "lead", "parquet"] {
        assert!(
            !err.contains(hint),
            "the refusal names a way around it: {err}"
        );
    }
    let (_, csv, _) = run(&[&bob[..], &["labels", "export", "--format", "csv"]].concat());
    assert!(csv.contains("ann-i0-secret") && !csv.contains("ann-i1-secret"));
    let (ok, _, err) = run(&[
        &bob[..],
        &[
            "labels",
            "export",
            "--format",
            "parquet",
            "--out",
            "x.parquet",
        ],
    ]
    .concat());
    assert!(!ok && err.contains("for the study lead"), "{err}");
    let (ok, history, _) = run(&[&bob[..], &["labels", "history", "i1"]].concat());
    assert!(
        ok && history.contains("bob-i1-secret") && !history.contains("ann"),
        "{history}"
    );
    let (ok, finals, err) = run(&[&bob[..], &["labels", "export", "--final"]].concat());
    assert!(ok, "{err}");
    let items: BTreeSet<String> = finals
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json")["item_id"].to_string())
        .collect();
    assert_eq!(items, BTreeSet::from(["\"i0\"".to_string()]), "{finals}");
    let (ok, all, _) = run(&["--role", "lead", "labels", "export"]);
    assert!(ok && all.contains("ann-i1-secret"));
    assert_eq!(all.lines().count(), 13);
    let (ok, nothing, err) = run(&["labels", "export"]);
    assert!(ok && nothing.is_empty(), "{nothing}");
    assert!(err.contains("without an identity"), "{err}");
    let (ok, _, err) = run(&["--reviewer", "carol", "agree", "--bootstrap", "50"]);
    assert!(!ok && err.contains("blind: none of the 2"), "{err}");
    assert!(!err.contains("role") && !err.contains("lead"), "{err}");

    // Judge pass rates: ans-1 is a study item not yet revealed to bob.
    let total = |v: &serde_json::Value| {
        v["r"]["pass_rates"]["faithfulness"]["overall"]["total"]
            .as_u64()
            .unwrap_or(0)
    };
    for (args, want) in [
        (vec!["--reviewer", "bob"], 1),
        (vec!["--role", "lead"], 2),
        (vec![], 0),
    ] {
        let (ok, out, err) = run(&[&args[..], &["report", "answers", "--json"]].concat());
        assert!(ok, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).expect("json");
        assert_eq!(total(&v), want, "{args:?}: {out}");
    }
    for (viewer, want) in [
        (Viewer::Reviewer("bob".into()), 1),
        (Viewer::Lead, 2),
        (Viewer::Nobody, 0),
    ] {
        let sight = study::sight(&ctx, &viewer).await.expect("sight");
        let o = raglab::service::evaluate::overview(&ctx, &sight).await;
        let j = o.judge.clone().expect("judged");
        assert_eq!(j.answers, want, "{viewer:?}");
        let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
        app.pane = Pane::Evaluation;
        app.evaluation.on_loaded(o);
        let screen = common::screen(&app, 220, 50);
        assert!(
            screen.contains(&format!("· {want} answers, {want} judgements")),
            "{viewer:?}:\n{screen}"
        );
    }
}

/// A typed name is taken only against the roster as read. Before the study is read
/// none is taken (the roster that decides is not known yet); a name taken in an
/// unsigned study is dropped once the lead founds a roster that gives it another
/// key, and every view is drawn again for no one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_typed_name_is_checked_against_the_roster_as_read() {
    let env = common::Env::new();
    let ctx = workspace(&env).await;
    let mut app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, mut rx) = raglab::tui::jobs::Jobs::new(&ctx);
    jobs.set_viewer(app.annotate.viewer());
    app.pane = Pane::Annotate;
    for c in "bob".chars() {
        common::tui::press(&mut app, &mut jobs, c);
    }
    common::tui::key(&mut app, &mut jobs, KeyCode::Enter);
    assert_eq!(
        app.annotate.reviewer(),
        None,
        "a name before the roster is read"
    );
    let status = app.annotate.status().unwrap_or_default().to_string();
    assert!(status.contains("still being read"), "{status}");

    jobs.load_background();
    let computed = |a: &App| a.agreement.ticket() > 0 && !a.agreement.is_computing();
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(60),
        computed,
    )
    .await;
    common::tui::key(&mut app, &mut jobs, KeyCode::Enter);
    assert_eq!(app.annotate.reviewer(), Some("bob"), "unsigned: taken");
    let done = |a: &App| !a.agreement.is_computing() && a.agreement.shown().is_some();
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), done).await;
    let blind: Vec<&String> = app.query.answers().blind.iter().collect();
    assert_eq!(blind, vec!["ans-1"]);

    // The lead founds a roster on which bob's key is not this user's.
    let lead = raglab::service::Context::with(
        raglab::config::Paths {
            config_dir: env.dir.path().join("lena/config"),
            data_dir: env.dir.path().join("lena/data"),
        },
        raglab::config::Config::default(),
        &env.workspace(),
    )
    .expect("lead context");
    let lk = study::my_key(&lead).expect("key").public_hex();
    study::roster_add(&lead, "lena", &lk, true)
        .await
        .expect("lead");
    let other = raglab::store::keys::Keypair::load_or_create(&env.dir.path().join("other"))
        .expect("key")
        .public_hex();
    study::roster_add(&lead, "bob", &other, false)
        .await
        .expect("bob");
    let ticket = app.agreement.ticket();
    let redrawn = |a: &App| {
        a.annotate.reviewer().is_none()
            && a.agreement.ticket() > ticket
            && !a.agreement.is_computing()
    };
    common::pump(
        &mut jobs,
        &mut app,
        &mut rx,
        Duration::from_secs(60),
        redrawn,
    )
    .await;
    let status = app.annotate.status().unwrap_or_default().to_string();
    assert!(status.contains("you are not bob"), "{status}");
    app.pane = Pane::Agreement;
    let screen = render(&app);
    assert!(screen.contains("without an identity"), "{screen}");
    assert!(!screen.contains("secret"), "{screen}");
    let blind: BTreeSet<String> = app.query.answers().blind.iter().cloned().collect();
    assert_eq!(blind, BTreeSet::from(["ans-0".into(), "ans-1".into()]));
    jobs.settle(Duration::from_secs(10)).await;
}
