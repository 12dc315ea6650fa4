//! The study's newer views driven by keys in a TestBackend: the guidelines overlay of
//! the Annotate pane, the active time each label carries, and the agreement-over-time
//! chart of the Agreement pane, with numbers computed by hand.

use crate::common;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::core::agreement::Bootstrap;
use raglab::core::blinding::{Schedule, Viewer};
use raglab::core::gold::GoldLabel;
use raglab::service::base::{default_rubric, parse_rubric};
use raglab::service::study::{self, AgreementRequest, Item, Label};
use raglab::tui::app::{App, Pane};
use raglab::tui::effect::Effect;
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::agreement::{AgreementPane, AgreementSettings};

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

fn app(reviewer: &str, rubric: raglab::core::rubric::Rubric) -> App {
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Annotate;
    app.annotate = raglab::tui::panes::annotate::AnnotatePane::new(
        raglab::tui::panes::annotate::AnnotateSettings {
            reviewer: Some(reviewer.to_string()),
            rubric,
            ..Default::default()
        },
    );
    app.annotate
        .load(items(3), Vec::new(), std::collections::HashMap::new());
    app
}

fn key(app: &mut App, code: KeyCode) -> Option<Effect> {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn keys(app: &mut App, s: &str) -> Vec<Effect> {
    s.chars()
        .filter_map(|c| key(app, KeyCode::Char(c)))
        .collect()
}

const GUIDED: &str = r#"
name = "guided"
version = "1"
[[criteria]]
key = "faithfulness"
name = "Faithfulness"
definition = "No claims beyond the guidance."
guidelines = """
Fail an answer that adds a dose the guidance does not give.
Pass a faithful paraphrase."""
[[criteria.examples]]
text = "Take two tablets a day."
label = "fail"
why = "The guidance names no dose."
[[criteria]]
key = "clarity"
name = "Clarity"
definition = "Clear and focused."
"#;

#[test]
fn guidelines_overlay_follows_the_criterion_and_closes() {
    let rubric = parse_rubric(GUIDED).expect("rubric");
    let mut app = app("alice", rubric);
    let before = common::screen(&app, 150, 40);
    assert!(!before.contains("Guidelines ·"), "{before}");
    keys(&mut app, "i");
    let s = common::screen(&app, 150, 40);
    for want in [
        "Guidelines · guided (i or esc: close)",
        "No claims beyond the guidance.",
        "Fail an answer that adds a dose the guidance does not give.",
        "Pass a faithful paraphrase.",
        "Example 1: fail",
        "Take two tablets a day.",
        "why: The guidance names no dose.",
    ] {
        assert!(s.contains(want), "missing {want:?}:\n{s}");
    }
    // Criterion 2 has none: the overlay says so.
    keys(&mut app, "2");
    let s = common::screen(&app, 150, 40);
    assert!(
        s.contains("The rubric gives no guidelines for this criterion."),
        "{s}"
    );
    assert!(!s.contains("Take two tablets a day."), "{s}");
    // A label key still labels while it is open (and moves on); esc closes it.
    key(&mut app, KeyCode::Esc);
    let s = common::screen(&app, 150, 40);
    assert!(!s.contains("Guidelines ·"), "{s}");
    // `!` opens it too, and `i` again closes it.
    keys(&mut app, "!");
    assert!(common::screen(&app, 150, 40).contains("Guidelines ·"));
    keys(&mut app, "i");
    assert!(!common::screen(&app, 150, 40).contains("Guidelines ·"));
    // The help overlay lists the key.
    keys(&mut app, "?");
    let help = common::screen(&app, 200, 90);
    assert!(
        help.contains("Guidelines and worked examples of this criterion"),
        "{help}"
    );
}

#[test]
fn each_label_carries_the_active_time_on_its_item() {
    let mut app = app("alice", default_rubric());
    let pause = std::time::Duration::from_millis(150);
    let mut saved: Vec<Label> = Vec::new();
    fn press(app: &mut App, saved: &mut Vec<Label>, c: char) {
        for e in keys(app, &c.to_string()) {
            if let Effect::SaveLabel { label, .. } = e {
                saved.push(label);
            }
        }
    }
    press(&mut app, &mut saved, 'p'); // the first key: no time before it is counted
    std::thread::sleep(pause);
    press(&mut app, &mut saved, 'p');
    std::thread::sleep(pause);
    press(&mut app, &mut saved, 'f');
    press(&mut app, &mut saved, 'p');
    let ms: Vec<u64> = saved
        .iter()
        .map(|l| l.active_ms.expect("every label of the pane is timed"))
        .collect();
    assert_eq!(ms.len(), 4);
    assert_eq!(ms[0], 0);
    assert!(ms[1] >= 150 && ms[2] >= 300, "{ms:?}");
    assert!(ms[3] >= ms[2] && ms[3] < ms[2] + 100, "{ms:?}");
    // The next item starts from nothing; time spent there is its own.
    press(&mut app, &mut saved, ']');
    std::thread::sleep(pause);
    press(&mut app, &mut saved, 'p');
    let next = saved.last().expect("label");
    assert_ne!(next.item_id, saved[0].item_id);
    let t = next.active_ms.expect("timed");
    assert!((150..1000).contains(&t), "{t}");
    // The CSV export carries it.
    let csv = study::labels_csv(&saved);
    assert!(csv.starts_with("label_id,item_id,reviewer,criterion,label,note,timestamp,seq,rubric_version,active_ms\n"), "{csv}");
    assert!(csv.lines().nth(1).expect("row").ends_with(",0"), "{csv}");
}

/// x and y label item `i` on every criterion.
fn both(item: &str, x: &str, y: &str, log: &mut Vec<Label>) {
    for (who, v) in [("x", x), ("y", y)] {
        for c in default_rubric().criteria {
            let mut l = Label::new(item, who, &c.key, Some(v), None, "1");
            l.active_ms = Some(if who == "x" { 30_000 } else { 60_000 });
            log.push(l);
        }
    }
}

/// The lead's report: agreement over time in the order items were revealed, and
/// time per item; the Agreement pane draws the first.
#[test]
fn agreement_over_time_and_time_per_item_by_hand() {
    let mut log = Vec::new();
    // Window 1 (i1-i4): x p p f f, y p p f f: kappa = alpha = 1.
    // Window 2 (i5-i8): x p f p f, y p p f f, every criterion alike: p_o = 1/2,
    // p_e = 1/2, kappa 0; coincidences (x4 criteria) o_pp = o_ff = o_pf = o_fp = 8,
    // n_p = n_f = 16, n = 32: alpha = 1 - 31 * 16 / (2 * 16 * 16) = 1/32.
    for (i, (x, y)) in [
        ("pass", "pass"),
        ("pass", "pass"),
        ("fail", "fail"),
        ("fail", "fail"),
        ("pass", "pass"),
        ("fail", "pass"),
        ("pass", "fail"),
        ("fail", "fail"),
    ]
    .into_iter()
    .enumerate()
    {
        both(&format!("i{}", i + 1), x, y, &mut log);
    }
    // Gold: i1 expects pass and i6 fail on every criterion. x is right on all 8
    // units; y on i1's 4 only: 4 / 8.
    let gold: Vec<GoldLabel> = [("i1", "pass"), ("i6", "fail")]
        .iter()
        .flat_map(|(item, v)| {
            default_rubric()
                .criteria
                .into_iter()
                .map(move |c| GoldLabel {
                    item_id: item.to_string(),
                    criterion: c.key,
                    label: Some(v.to_string()),
                    set_at: String::new(),
                    seq: 0,
                    signer: None,
                    signature: None,
                    log_rows: None,
                })
        })
        .collect();
    let req = |viewer: Viewer| AgreementRequest {
        boot: Bootstrap {
            resamples: 50,
            seed: 1,
        },
        viewer,
        window: 4,
        gold: gold.clone(),
        ..AgreementRequest::default()
    };
    let rubric = default_rubric();
    let a = study::agreement_of(
        &rubric,
        &log,
        &Schedule::default(),
        Vec::new(),
        req(Viewer::Lead),
    )
    .expect("agreement");
    let d = a.drift.as_ref().expect("drift");
    assert_eq!(d.window, 4);
    let spans: Vec<(usize, usize)> = d.points.iter().map(|p| (p.first, p.last)).collect();
    assert_eq!(spans, vec![(1, 4), (5, 8)]);
    assert_eq!(
        (d.points[0].alpha, d.points[0].kappa),
        (Some(1.0), Some(1.0))
    );
    assert!((d.points[1].alpha.expect("alpha") - 1.0 / 32.0).abs() < 1e-12);
    assert!(d.points[1].kappa.expect("kappa").abs() < 1e-12);
    let g = a.gold.as_ref().expect("the lead's gold accuracy");
    assert_eq!(
        (g[0].reviewer.as_str(), g[0].correct, g[0].units),
        ("x", 8, 8)
    );
    assert_eq!(
        (g[1].reviewer.as_str(), g[1].correct, g[1].units),
        ("y", 4, 8)
    );
    assert_eq!(g[1].accuracy.value, Some(0.5));
    // Time per item, the lead's only: x 30 s on each of 8 items, y 60 s.
    let t = a.time.as_ref().expect("the lead's time per item");
    assert_eq!(t[0].reviewer, "x");
    assert_eq!(
        (t[0].items, t[0].median_s, t[0].p90_s),
        (8, Some(30.0), Some(30.0))
    );
    assert!((t[0].items_per_hour.expect("rate") - 120.0).abs() < 1e-9);
    assert!((t[1].items_per_hour.expect("rate") - 60.0).abs() < 1e-9);
    let mine = study::agreement_of(
        &rubric,
        &log,
        &Schedule::default(),
        Vec::new(),
        req(Viewer::Reviewer("x".into())),
    )
    .expect("x's view");
    assert!(mine.time.is_none() && mine.gold.is_none());
    // The pane draws the chart and writes out the newest window.
    let mut app = App::new(Vec::new(), Keymap::default_keymap(), "ws".into());
    app.pane = Pane::Agreement;
    app.agreement = AgreementPane::new(AgreementSettings {
        lead: true,
        ..AgreementSettings::default()
    });
    app.agreement.on_result(a);
    let s = common::screen(&app, 170, 50);
    assert!(
        s.contains("Agreement over time · windows of 4 items, in the order revealed"),
        "{s}"
    );
    assert!(
        s.contains("newest window: items 5-8 · α 0.03 · κ 0.00"),
        "{s}"
    );
    // The lead's band: gold accuracy and time per item.
    let row = |who: &str| {
        s.lines()
            .find(|l| l.contains(&format!("│{who} ")))
            .unwrap_or_else(|| panic!("no row of {who}:\n{s}"))
            .to_string()
    };
    let x = row("x");
    assert!(x.contains("1.00 [1.00, 1.00]") && x.contains("8/8"), "{x}");
    assert!(x.contains("30.0 s") && x.contains("120.0"), "{x}");
    let y = row("y");
    assert!(
        y.contains("0.50 [") && y.contains("4/8") && y.contains("60.0"),
        "{y}"
    );
}
