//! Grading a chunk's relevance from the Query pane, on a real workspace without a
//! model (five sample documents, a sparse-only index, `[retrieval] method = "bm25"`):
//! the TUI opened in process with `--reviewer alice` and the questions whose targets
//! the documents hold. Before any pool, `a` then `2` is refused and the screen says to
//! run `raglab assess pool`; after `eval retrieval --run-out` and `assess pool` through
//! the binary, the same keys on the question's top non-target chunk store exactly that
//! grade in `grades.lance`, signed by this user's study key (counted by `raglab assess
//! progress`), the screen says the grade and the queue left and marks the chunk; the
//! question's shipped target is refused, said on screen, and nothing more is stored.

use std::time::Duration;

use crossterm::event::KeyCode;
use raglab::core::assessment::Grade;
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::common;
use crate::common::tui::{key, press, pump};

fn render(app: &App) -> String {
    common::screen(app, 200, 50)
}

/// `a`, then `grade`: the grade keys open on `chunk` and the job's answer is applied.
async fn grade(
    app: &mut App,
    jobs: &mut Jobs,
    rx: &mut UnboundedReceiver<Msg>,
    chunk: &str,
    grade: char,
) -> String {
    press(app, jobs, 'a');
    let s = render(app);
    assert!(s.contains(&format!("chunk {chunk}")), "{s}");
    press(app, jobs, grade);
    assert_eq!(app.pane, raglab::tui::app::Pane::Query, "the digit graded");
    pump(
        jobs,
        app,
        rx,
        |_, a| a.query.grading().in_flight() == 0,
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    render(app)
}

/// Focus the results and select row `row` (from 0), by keys.
fn select(app: &mut App, jobs: &mut Jobs, row: usize) {
    press(app, jobs, 'l');
    for _ in 0..app.query.k() {
        press(app, jobs, 'k');
    }
    for _ in 0..row {
        press(app, jobs, 'j');
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_grade_given_by_keys_is_stored_signed_and_said_and_without_a_pool_it_says_to_pool() {
    let (env, questions) = common::five_docs_sparse();
    let ctx = common::tui::context(&env, common::bm25_without_model(&env));
    let opts = raglab::tui::TuiOptions {
        questions: Some(questions.clone()),
        reviewer: Some("alice".into()),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = common::tui::on_query_pane(&ctx, &opts).await;

    // The first question, ranked by BM25.
    let question = app.query.questions()[0].clone();
    key(&mut app, &mut jobs, KeyCode::Enter);
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| !a.query.is_busy() && a.query.lists().is_some(),
        Duration::from_secs(60),
        (0, 0),
    )
    .await;
    let ranking: Vec<String> = app
        .query
        .lists()
        .expect("lists")
        .ranking_for(app.query.config())
        .into_iter()
        .take(app.query.k())
        .map(str::to_string)
        .collect();
    let target = question.relevant[0].clone();
    let (row, chunk) = ranking
        .iter()
        .enumerate()
        .find(|(_, id)| !question.relevant.contains(id))
        .map(|(i, id)| (i, id.clone()))
        .expect("a non-target chunk in the top k");
    let target_row = ranking
        .iter()
        .position(|id| *id == target)
        .expect("the target in the top k");

    // No pool yet: refused, and the screen says what to run.
    select(&mut app, &mut jobs, row);
    let s = grade(&mut app, &mut jobs, &mut rx, &chunk, '2').await;
    assert!(s.contains(&format!("NOT graded {chunk} 2")), "{s}");
    assert!(s.contains("raglab assess pool"), "{s}");
    assert!(!s.contains(&format!("[2] {chunk}")), "{s}");

    // A BM25 run of the questions, pooled at depth 3.
    let to_grade = common::bm25_pool(&env, &questions, None);

    // The same keys now store the grade, signed; the screen says it and marks it.
    let s = grade(&mut app, &mut jobs, &mut rx, &chunk, '2').await;
    let key_hex = String::from_utf8_lossy(&env.ok(&["study", "key"]).stdout)
        .trim()
        .to_string();
    let short: String = key_hex.chars().take(12).collect();
    assert!(
        s.contains(&format!(
            "graded {chunk} 2 (highly relevant) for {} as alice (key {short}…); {} left in your queue",
            question.id,
            to_grade - 1
        )),
        "{s}"
    );
    assert!(s.contains(&format!("[2] {chunk}")), "{s}");

    // The shipped target is refused, and said.
    select(&mut app, &mut jobs, target_row);
    let s = grade(&mut app, &mut jobs, &mut rx, &target, '1').await;
    assert!(
        s.contains(&format!("NOT graded {target} 1 (relevant)")),
        "{s}"
    );
    assert!(s.contains("is a shipped target"), "{s}");

    // grades.lance holds exactly the one grade, signed by this user's key...
    let rows: Vec<Grade> = raglab::service::assess::grades_table(&ctx.workspace)
        .read_all()
        .await
        .expect("grades");
    assert_eq!(rows.len(), 1, "{rows:?}");
    let g = &rows[0];
    assert_eq!(
        (
            g.question_id.as_str(),
            g.chunk_id.as_str(),
            g.assessor.as_str(),
            g.grade
        ),
        (question.id.as_str(), chunk.as_str(), "alice", 2)
    );
    assert_eq!(g.signer.as_deref(), Some(key_hex.as_str()));
    assert!(g.signature.is_some());
    // ...and its signature holds: `assess progress` counts it.
    let progress = String::from_utf8_lossy(&env.ok(&["assess", "progress"]).stdout).into_owned();
    assert!(
        progress.contains(&format!(
            "alice: 1 / {to_grade} pooled pairs graded (1 grades in all)"
        )),
        "{progress}"
    );
}
