//! The runs matrix corrects an answer run's judge pass rates with the study's final
//! human labels (no model: answers, judgements and two reviewers' labels stored as
//! their commands store them). Twelve answers of run `r`, all judged; six are study
//! items that ann and bob labelled alike (their agreed label is the final one). The
//! matrix's numbers are checked against PPI and Rogan-Gladen written out by hand here
//! (the estimators themselves are checked against ppi_py and statsmodels in
//! `core::study::correction`).

use crate::common::{self, Env, records};

use raglab::config::Config;
use raglab::service::answer::{judgements, save_answer};
use raglab::service::base::default_rubric;
use raglab::service::report::{RunsRequest, runs_matrix};
use raglab::service::study;

/// (judge's faithfulness label, the humans' label) of q0..q11; only q0..q5 are items.
const LABELS: [(bool, Option<bool>); 12] = [
    (true, Some(true)),
    (true, Some(true)),
    (true, Some(false)),
    (false, Some(false)),
    (true, Some(true)),
    (false, Some(true)),
    (true, None),
    (true, None),
    (false, None),
    (true, None),
    (true, None),
    (false, None),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_run_is_corrected_by_its_final_human_labels() {
    let env = Env::new();
    let ctx = common::context(&env, Config::default());
    let word = |p: bool| if p { "pass" } else { "fail" };
    let mut judged = Vec::new();
    for (i, (judge, _)) in LABELS.iter().enumerate() {
        let a = records::answer("r", &format!("q{i}"), 3, "hybrid", 1.0 + i as f64);
        save_answer(&ctx, &a).await.expect("save answer");
        judged.push(records::judged(&a, &[word(*judge)]));
    }
    judgements(&ctx.workspace)
        .append(&judged)
        .await
        .expect("judgements");
    let items = env.dir.path().join("items.jsonl");
    let text: String = (0..6)
        .map(|i| {
            format!(
                "{{\"item_id\": \"i{i}\", \"question\": \"question q{i}?\", \"answer\": \"a\", \"answer_id\": \"r/q{i}/s42\"}}\n"
            )
        })
        .collect();
    std::fs::write(&items, text).expect("items");
    study::create_items(&ctx, &study::ItemSource::File(items), None, None)
        .await
        .expect("items");
    let mut rows = String::new();
    for (i, (_, human)) in LABELS.iter().enumerate().take(6) {
        for who in ["ann", "bob"] {
            rows.push_str(&format!(
                "{{\"item_id\": \"i{i}\", \"reviewer\": \"{who}\", \"criterion\": \"faithfulness\", \"label\": \"{}\"}}\n",
                word(human.expect("an item"))
            ));
        }
    }
    let file = env.dir.path().join("labels.jsonl");
    std::fs::write(&file, rows).expect("labels");
    study::import_labels(&ctx, &default_rubric(), &file)
        .await
        .expect("import");

    let sight = study::sight(&ctx, &study::Viewer::Lead)
        .await
        .expect("sight");
    let m = runs_matrix(&ctx, &RunsRequest::default(), &sight)
        .await
        .expect("matrix");
    let row = m.rows.iter().find(|r| r.label == "r").expect("row r");
    let c = &row.corrected["faithfulness"];
    assert_eq!((c.n_human, c.n_judge_only), (6, 6));
    assert!(c.too_few, "6 human labels are fewer than 30");
    // By hand. Labelled (human Y, judge f): (1,1) (1,1) (0,1) (0,0) (1,1) (1,0);
    // judge-only f~: 1 1 0 1 1 0. Raw judge rate 8/12.
    assert!((c.raw_judge - 8.0 / 12.0).abs() < 1e-12);
    assert!((c.human - 4.0 / 6.0).abs() < 1e-12);
    // PPI (lam = 1): mean(f~) + mean(Y - f) = 4/6 + (0 + 0 - 1 + 0 + 0 + 1)/6 = 4/6.
    let ppi = c.ppi.expect("ppi");
    assert!((ppi.interval.estimate - 4.0 / 6.0).abs() < 1e-12);
    // sens = 3/4 (human passes q0 q1 q4 q5; judge passes three), spec = 1/2.
    assert!((c.sensitivity.expect("sens").estimate - 0.75).abs() < 1e-12);
    assert!((c.specificity.expect("spec").estimate - 0.5).abs() < 1e-12);
    // Rogan-Gladen: (8/12 + 0.5 - 1) / (0.75 + 0.5 - 1) = (1/6) / 0.25 = 2/3.
    let rg = c.rogan_gladen.expect("rogan-gladen");
    assert!((rg.estimate - 2.0 / 3.0).abs() < 1e-12);
    assert!(
        m.notes.iter().any(|n| n.contains("only 6 human label(s)")),
        "{:?}",
        m.notes
    );
    // A reviewer sees the corrections too only through what blinding lets them see; a
    // viewer with no identity gets the matrix without them.
    let nobody = study::sight(&ctx, &study::Viewer::Nobody)
        .await
        .expect("sight");
    let m = runs_matrix(&ctx, &RunsRequest::default(), &nobody)
        .await
        .expect("matrix");
    let row = m.rows.iter().find(|r| r.label == "r").expect("row r");
    assert!(row.corrected.is_empty());
}
