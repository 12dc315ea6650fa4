//! The Query pane's relevance-assessment view (`G`), on a real workspace without a
//! model (five sample documents, a sparse-only index, `[retrieval] method = "bm25"`),
//! the TUI opened in process and driven by keys with its real background jobs.
//!
//! Without `--reviewer` the view says how to give a name and grades nothing; before
//! any pool it says to run `raglab assess pool`. After `eval retrieval --run-out` and
//! `assess pool` through the binary it shows the head of alice's queue, the question
//! on the left and the chunk on the right with the question's terms highlighted (by
//! style, in the buffer) and nothing of the question's target, run or rank; `s` skips
//! a pair (it stays queued), `2` and `0` grade the next two and exactly those grades
//! are stored, signed (counted by `raglab assess progress`); grading the rest empties
//! the queue, and the view says so and how to see progress.

use std::time::Duration;

use crossterm::event::KeyCode;
use raglab::core::assessment::Grade;
use raglab::tui::app::{App, Pane};
use raglab::tui::jobs::{Jobs, Msg};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::common;
use crate::common::tui::{key, press, pump};

const WIDTH: u16 = 200;
const HEIGHT: u16 = 50;

fn render(app: &App) -> String {
    common::screen(app, WIDTH, HEIGHT)
}

/// Each screen line cut in two at the middle column: (left halves, right halves).
fn halves(screen: &str) -> (String, String) {
    let (mut left, mut right) = (String::new(), String::new());
    for line in screen.lines() {
        let chars: Vec<char> = line.chars().collect();
        let mid = chars.len().min(usize::from(WIDTH / 2));
        left.extend(&chars[..mid]);
        left.push('\n');
        right.extend(&chars[mid..]);
        right.push('\n');
    }
    (left, right)
}

/// The words drawn in the theme's highlight style in the right half of the screen,
/// between the progress line and the lines under the panels.
fn highlighted_words(app: &App) -> Vec<String> {
    let mut term =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(WIDTH, HEIGHT)).expect("term");
    let theme = raglab::tui::theme::Theme::builtin("dark").expect("theme");
    term.draw(|f| raglab::tui::ui::draw(app, f, &theme))
        .expect("draw");
    let buf = term.backend().buffer();
    let lit = theme.filter.fg.expect("the highlight has a colour");
    let mut words = Vec::new();
    for y in 2..HEIGHT - 4 {
        let mut word = String::new();
        for x in WIDTH / 2..WIDTH {
            let cell = &buf[(x, y)];
            let sym = cell.symbol();
            if cell.fg == lit && sym.chars().all(char::is_alphanumeric) && !sym.is_empty() {
                word.push_str(sym);
            } else if !word.is_empty() {
                words.push(std::mem::take(&mut word).to_lowercase());
            }
        }
        if !word.is_empty() {
            words.push(word.to_lowercase());
        }
    }
    words
}

/// A key of the view, then the jobs' answers until it waits for none; the screen.
async fn step(
    app: &mut App,
    jobs: &mut Jobs,
    rx: &mut UnboundedReceiver<Msg>,
    code: KeyCode,
) -> String {
    key(app, jobs, code);
    pump(
        jobs,
        app,
        rx,
        |_, a| !a.query.assessment().is_waiting(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    render(app)
}

/// The pair the view shows (question id, chunk id).
fn shown(app: &App) -> (String, String) {
    let (q, c) = app.query.assessment().pair().expect("a pair shown");
    (q.to_string(), c.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_assessment_view_shows_question_beside_chunk_blind_and_grades_the_queue_by_keys() {
    let (env, questions) = common::five_docs_sparse();
    let ctx = common::tui::context(&env, common::bm25_without_model(&env));
    let opts = raglab::tui::TuiOptions {
        questions: Some(questions.clone()),
        reviewer: Some("alice".into()),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::on_query_pane(&ctx, &opts).await;

    // No pool yet: the view says what to run, and a digit stores nothing.
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('G')).await;
    assert!(s.contains("Relevance assessment as alice (blind)"), "{s}");
    assert!(s.contains("no pool in this workspace yet"), "{s}");
    assert!(s.contains("raglab assess pool"), "{s}");
    press(&mut app, &mut jobs, '2');
    assert_eq!(
        app.query.grading().in_flight(),
        0,
        "no grade without a pair"
    );
    assert_eq!(app.pane, Pane::Query, "the digit did not switch panes");
    key(&mut app, &mut jobs, KeyCode::Esc);
    assert!(!app.query.assessment().is_open());
    assert!(!render(&app).contains("Relevance assessment as"));

    // A BM25 run of the questions, two of them pooled at depth 3.
    let to_grade = common::bm25_pool(&env, &questions, Some(2));
    assert!(to_grade >= 3, "{to_grade} pairs to grade");

    // The head of alice's queue: question left, chunk right, terms highlighted.
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('G')).await;
    let (q1, c1) = shown(&app);
    let question = app
        .query
        .questions()
        .iter()
        .find(|q| q.id == q1)
        .cloned()
        .expect("a question of the file");
    assert!(
        s.contains(&format!("0 graded · {to_grade} left in your queue")),
        "{s}"
    );
    let (left, right) = halves(&s);
    assert!(left.contains(&format!("question {q1}")), "{left}");
    let opening: String = question.text.chars().take(40).collect();
    assert!(left.contains(&opening), "{opening:?} in {left}");
    assert!(right.contains(&format!("chunk {c1}")), "{right}");
    assert!(!left.contains(&format!("chunk {c1}")), "{left}");
    // Blind: neither the question's target nor the run or rank that pooled the chunk.
    for t in &question.relevant {
        assert!(
            !s.split_whitespace().any(|w| w == t),
            "target {t} shown: {s}"
        );
    }
    assert!(!s.contains('▶') && !s.contains("bm25"), "{s}");
    assert!(!left.contains("target") && !left.contains("rank"), "{left}");
    let terms = raglab::core::text::query_terms(&question.text);
    let lit = highlighted_words(&app);
    assert!(!lit.is_empty(), "no term highlighted: {s}");
    assert!(
        lit.iter().all(|w| terms.contains(w)),
        "highlighted {lit:?}, terms {terms:?}"
    );

    // `s` skips: another pair, nothing stored, the skipped one still counted as left.
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('s')).await;
    let (q2, c2) = shown(&app);
    assert_ne!((&q2, &c2), (&q1, &c1));
    assert!(
        s.contains(&format!("skipped {c1} for {q1}: it stays in your queue")),
        "{s}"
    );
    assert!(
        s.contains(&format!("0 graded · {to_grade} left in your queue")),
        "{s}"
    );

    // `2` grades the pair shown, the view says so and moves on; then `0`.
    let key_hex = String::from_utf8_lossy(&env.ok(&["study", "key"]).stdout)
        .trim()
        .to_string();
    let short: String = key_hex.chars().take(12).collect();
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('2')).await;
    assert!(
        s.contains(&format!(
            "graded {c2} 2 (highly relevant) for {q2} as alice (key {short}…); {} left in your queue",
            to_grade - 1
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!("1 graded · {} left in your queue", to_grade - 1)),
        "{s}"
    );
    let (q3, c3) = shown(&app);
    assert_ne!((&q3, &c3), (&q2, &c2), "a graded pair leaves the queue");
    assert_ne!(
        (&q3, &c3),
        (&q1, &c1),
        "a skipped pair waits while others are left"
    );
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('0')).await;
    assert!(
        s.contains(&format!(
            "graded {c3} 0 (not relevant) for {q3} as alice (key {short}…); {} left in your queue",
            to_grade - 2
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!("2 graded · {} left in your queue", to_grade - 2)),
        "{s}"
    );

    // grades.lance holds exactly those two grades, signed by this user's key...
    let rows: Vec<Grade> = raglab::service::assess::grades_table(&ctx.workspace)
        .read_all()
        .await
        .expect("grades");
    let mut got: Vec<(String, String, String, u32)> = rows
        .iter()
        .map(|g| {
            assert_eq!(g.signer.as_deref(), Some(key_hex.as_str()), "{g:?}");
            assert!(g.signature.is_some(), "{g:?}");
            (
                g.question_id.clone(),
                g.chunk_id.clone(),
                g.assessor.clone(),
                g.grade,
            )
        })
        .collect();
    got.sort();
    let mut want = vec![
        (q2.clone(), c2.clone(), "alice".to_string(), 2),
        (q3.clone(), c3.clone(), "alice".to_string(), 0),
    ];
    want.sort();
    assert_eq!(got, want);
    // ...and their signatures hold: `assess progress` counts both.
    let progress = String::from_utf8_lossy(&env.ok(&["assess", "progress"]).stdout).into_owned();
    assert!(
        progress.contains(&format!(
            "alice: 2 / {to_grade} pooled pairs graded (2 grades in all)"
        )),
        "{progress}"
    );

    // The rest graded 1: the queue empties, and the view says so and where to look.
    for _ in 0..to_grade {
        if app.query.assessment().pair().is_none() {
            break;
        }
        step(&mut app, &mut jobs, &mut rx, KeyCode::Char('1')).await;
    }
    let s = render(&app);
    assert!(s.contains("Nothing left in your queue"), "{s}");
    assert!(s.contains("raglab assess progress"), "{s}");
    assert!(
        s.contains(&format!("{to_grade} graded · 0 left in your queue")),
        "{s}"
    );
    key(&mut app, &mut jobs, KeyCode::Esc);
    assert!(!app.query.assessment().is_open());
    press(&mut app, &mut jobs, '1');
    assert_eq!(app.pane, Pane::Corpus, "closed: digits switch panes again");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_reviewer_the_assessment_view_says_how_to_give_a_name_and_grades_nothing() {
    let (env, questions) = common::five_docs_sparse();
    let ctx = common::tui::context(&env, common::bm25_without_model(&env));
    let opts = raglab::tui::TuiOptions {
        questions: Some(questions),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::on_query_pane(&ctx, &opts).await;
    let s = step(&mut app, &mut jobs, &mut rx, KeyCode::Char('G')).await;
    assert!(s.contains("Relevance assessment as nobody named"), "{s}");
    assert!(s.contains("start `raglab --reviewer NAME`"), "{s}");
    assert!(s.contains("give your name in the Annotate pane"), "{s}");
    press(&mut app, &mut jobs, '2');
    assert_eq!(
        app.query.grading().in_flight(),
        0,
        "no grade without a name"
    );
    assert_eq!(app.pane, Pane::Query);
    assert!(app.query.assessment().is_open());
    key(&mut app, &mut jobs, KeyCode::Esc);
    assert!(!app.query.assessment().is_open());
    assert!(!render(&app).contains("Relevance assessment as"));
}
