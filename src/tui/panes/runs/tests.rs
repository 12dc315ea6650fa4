use std::collections::BTreeMap;

use super::*;
use crate::core::significance::ClusteredInterval;
use crate::service::report::{Pipeline, QualityEstimate};

fn estimate(mean: f64) -> QualityEstimate {
    QualityEstimate {
        n: 100,
        mean,
        interval: ClusteredInterval {
            se_naive: 0.02,
            se_clustered: Some(0.03),
            clusters: 20,
            design_effect: Some(2.25),
            ci: (mean - 0.06, mean + 0.06),
            mde_80: 0.084,
        },
    }
}

fn row(label: &str, kind: &str, quality: &[(&str, f64)], dominated_by: Option<&str>) -> RunRow {
    RunRow {
        label: label.into(),
        kind: kind.into(),
        pipeline: Pipeline {
            method: label.split('-').next().unwrap_or(label).into(),
            ..Pipeline::default()
        },
        questions: 100,
        quality: quality
            .iter()
            .map(|(c, m)| ((*c).to_string(), estimate(*m)))
            .collect::<BTreeMap<_, _>>(),
        cost: Default::default(),
        dominated_by: dominated_by.map(str::to_string),
        against_baseline: None,
        corrected: BTreeMap::new(),
    }
}

fn matrix() -> RunsMatrix {
    RunsMatrix {
        quality: "nDCG@10".into(),
        baseline: None,
        clusters: "20 clusters of 100 queries".into(),
        holm_family: "no baseline pinned".into(),
        rows: vec![
            row(
                "tfidf",
                "retrieval",
                &[("nDCG@10", 0.61), ("Recall@5", 0.9)],
                Some("bm25"),
            ),
            row(
                "bm25",
                "retrieval",
                &[("nDCG@10", 0.75), ("Recall@5", 0.8)],
                None,
            ),
            row("rag", "answers", &[("correct", 0.4)], None),
        ],
        notes: vec!["answer rows: no judge latency".into()],
    }
}

fn screen(pane: &RunsPane) -> String {
    crate::tui::ui::pane_screen(pane, 170, 40)
}

/// Loaded, the pane lists every run with its quality and mark; `s` sorts by the
/// quality column (best first); `P` asks for the matrix around the selected row as
/// baseline, and again unpins; `c` asks for it around the next quality column; a
/// failed load says why and what makes runs.
#[test]
fn runs_are_sorted_pinned_and_reread_by_keys() {
    let mut pane = RunsPane::default();
    assert!(screen(&pane).contains("reading the runs"));
    pane.on_loaded(Ok(matrix()));
    let s = screen(&pane);
    assert!(s.contains("sorted by kind"), "{s}");
    assert!(s.contains("dominated by bm25"), "{s}");
    assert!(s.contains("0.7500 [0.6900,0.8100]"), "{s}");
    // By kind: the retrieval rows first, by label within a kind.
    assert_eq!(pane.current().map(|r| r.label.as_str()), Some("bm25"));
    pane.update(Action::SortNext);
    assert!(screen(&pane).contains("sorted by quality"));
    let order: Vec<&str> = pane
        .matrix()
        .expect("matrix")
        .rows
        .iter()
        .map(|r| r.label.as_str())
        .collect();
    assert_eq!(
        order,
        ["bm25", "tfidf", "rag"],
        "best nDCG@10 first, no column last"
    );
    pane.update(Action::Down);
    assert_eq!(pane.current().map(|r| r.label.as_str()), Some("tfidf"));
    let Some(Effect::LoadRuns { quality, baseline }) = pane.update(Action::PinBaseline) else {
        panic!("pinning asks for the matrix around the baseline");
    };
    assert_eq!(
        (quality.as_deref(), baseline.as_deref()),
        (Some("nDCG@10"), Some("tfidf"))
    );
    let Some(Effect::LoadRuns { baseline, .. }) = pane.update(Action::PinBaseline) else {
        panic!("pinning again asks for the matrix without one");
    };
    assert_eq!(baseline, None);
    let Some(Effect::LoadRuns { quality, .. }) = pane.update(Action::CycleQuality) else {
        panic!("the next column asks for the matrix around it");
    };
    // Columns by name (Recall@5, correct, nDCG@10): after nDCG@10 comes the first.
    assert_eq!(quality.as_deref(), Some("Recall@5"));
    pane.on_loaded(Err("no runs in this workspace yet".into()));
    let s = screen(&pane);
    assert!(
        s.contains("no runs in this workspace yet") && s.contains("raglab eval retrieval"),
        "{s}"
    );
}
