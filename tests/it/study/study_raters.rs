//! Studies beyond two reviewers, end to end on real lance datasets with the real
//! binary for each person (their own config folder, so their own signing key):
//! k-of-n assignments, each reviewer's queue, blinding per item, and the
//! all-reviewer agreement over the labels every reviewer gave.

use std::collections::{BTreeMap, BTreeSet};

use crate::common::{self, Env};
use crate::models::study_keys::{
    all, block, create_n_items, criteria, exported, found_roster, people,
};
use raglab::core::rubric::Rubric;
use raglab::service::base::default_rubric;
use raglab::service::study;
use raglab::tui::panes::annotate::{AnnotatePane, AnnotateSettings};

/// Each reviewer's queue as the Annotate pane builds it from the stored study.
fn queues(env: &Env, rubric: &Rubric, names: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let ctx = common::context(env, raglab::config::Config::default());
    let items = block(study::read_items(&ctx)).expect("items");
    let log = block(study::trusted_log(&ctx)).expect("the study's log");
    assert!(log.refused.is_empty(), "{:?}", log.refused);
    names
        .iter()
        .map(|&name| {
            let mut pane = AnnotatePane::new(AnnotateSettings {
                reviewer: Some(name.to_string()),
                rubric: rubric.clone(),
                ..AnnotateSettings::default()
            });
            pane.load_with(items.clone(), log.labels.clone(), log.schedule.clone());
            let queue = pane.queue().map(|i| i.item_id.clone()).collect();
            (name.to_string(), queue)
        })
        .collect()
}

/// Six items, two of ann, bob and carol each (seeded): the lead's command says
/// the balanced loads (6 x 2 / 3 = 4 each), each reviewer's queue holds exactly
/// the items assigned to them, nobody sees a label of an item before all its
/// reviewers (and they themselves) have submitted it, and agreement counts every
/// reviewer who labelled an item.
#[test]
fn two_of_three_assignments_fill_each_queue_and_count_every_reviewer() {
    let env = Env::new();
    let crit = criteria();
    let rubric = default_rubric();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 6);
    found_roster(&everyone);
    let [lena, ann, bob, carol, _] = &everyone;
    let assign = ["annotate", "assign", "--reviewers", "ann,bob,carol"];
    let (ok, _, err) = ann.run(&[&assign[..], &["--per-item", "2"]].concat());
    assert!(
        !ok && err.contains("annotate assign needs the study lead's key"),
        "{err}"
    );
    let (ok, _, err) = lena.run(&[&assign[..], &["--per-item", "4"]].concat());
    assert!(
        !ok && err.contains("4 reviewers per item, but only 3 reviewers were named"),
        "{err}"
    );
    let said = lena.ok(&[&assign[..], &["--per-item", "2", "--seed", "3"]].concat());
    assert!(
        said.contains("assigned 6 items, 2 reviewers each (seed 3): ann 4, bob 4, carol 4"),
        "{said}"
    );

    // What was stored: two distinct reviewers per item, signed by the lead.
    let ctx = common::context(&env, raglab::config::Config::default());
    let log = block(study::trusted_log(&ctx)).expect("log");
    assert_eq!(log.assignments.len(), 6);
    let mut assigned: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut pairs: BTreeMap<(String, String), usize> = BTreeMap::new();
    for a in &log.assignments {
        let rs = a.reviewers();
        assert_eq!(rs.len(), 2, "{a:?}");
        assert_ne!(rs[0], rs[1]);
        assert!(
            a.more_reviewers.is_none(),
            "a pair stores no further reviewers"
        );
        for r in &rs {
            assigned
                .entry(r.clone())
                .or_default()
                .insert(a.item_id.clone());
        }
        *pairs.entry((rs[0].clone(), rs[1].clone())).or_default() += 1;
    }
    // Loads of 4 each force every pair to share 2 items (ab + ac = ab + bc = ac + bc = 4).
    assert_eq!(pairs.values().copied().collect::<Vec<_>>(), vec![2, 2, 2]);
    let queue = queues(&env, &rubric, &["ann", "bob", "carol"]);
    for name in ["ann", "bob", "carol"] {
        assert_eq!(queue[name], assigned[name], "{name}'s queue");
        assert_eq!(queue[name].len(), 4);
    }

    // ann and bob say pass on every criterion of their items, carol fail.
    let label = |name: &str, v: &str| -> Vec<(String, String, String)> {
        assigned[name]
            .iter()
            .flat_map(|i| all(i, &crit, v))
            .map(|(i, c, v)| (i.to_string(), c.to_string(), v.to_string()))
            .collect()
    };
    let import = |p: &crate::models::study_keys::Person, name: &str, v: &str| {
        let rows = label(name, v);
        let rows: Vec<(&str, &str, &str)> = rows
            .iter()
            .map(|(i, c, v)| (i.as_str(), c.as_str(), v.as_str()))
            .collect();
        let (ok, _, err) = p.import(name, &rows);
        assert!(ok, "{err}");
    };
    let seen_of = |p: &crate::models::study_keys::Person, me: &str| -> BTreeMap<String, usize> {
        let (rows, _) = exported(p, &["--reviewer", me]);
        let mut by: BTreeMap<String, usize> = BTreeMap::new();
        for l in rows {
            *by.entry(l.reviewer).or_default() += 1;
        }
        by
    };
    import(ann, "ann", "pass");
    assert_eq!(seen_of(ann, "ann"), BTreeMap::from([("ann".into(), 16)]));
    import(bob, "bob", "pass");
    // The two items of ann and bob are revealed to both: 2 items x 4 criteria.
    let n = crit.len();
    assert_eq!(
        seen_of(ann, "ann"),
        BTreeMap::from([("ann".into(), 4 * n), ("bob".into(), 2 * n)])
    );
    // carol has submitted nothing: she sees nothing of anyone.
    assert_eq!(seen_of(carol, "carol"), BTreeMap::new());
    import(carol, "carol", "fail");
    // ann sees carol's labels on the items they share, never on bob and carol's.
    assert_eq!(
        seen_of(ann, "ann"),
        BTreeMap::from([
            ("ann".into(), 4 * n),
            ("bob".into(), 2 * n),
            ("carol".into(), 2 * n)
        ])
    );

    // Every reviewer who labelled an item counts. Per criterion: 6 units of two
    // labels, 2 (pass, pass) and 4 (pass, fail). Coincidences o_pp = 4,
    // o_pf = o_fp = 4; n_p = 8, n_f = 4, n = 12: alpha = 1 - 11 * 8 / (2 * 8 * 4)
    // = -0.375. Overall (4 criteria): o_pp = 16, o_pf = o_fp = 16, n_p = 32,
    // n_f = 16, n = 48: alpha = 1 - 47 * 32 / (2 * 32 * 16) = -0.46875.
    // Fleiss' kappa is over units every reviewer labelled: none in 2 of 3.
    let a = lena.agree();
    let report = &a["raters"];
    assert_eq!(report["raters"], serde_json::json!(["ann", "bob", "carol"]));
    let rows = report["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), n + 1);
    for (i, row) in rows.iter().enumerate() {
        let want = if i < n { -0.375 } else { -0.46875 };
        let alpha = row["alpha_nominal"]["value"].as_f64().expect("alpha");
        assert!(
            (alpha - want).abs() < 1e-12,
            "{}: {alpha}",
            row["criterion"]
        );
        assert_eq!(row["units"], if i < n { 6 } else { 24 });
        assert_eq!(row["complete_units"], 0);
        assert!(row["fleiss_kappa"]["value"].is_null());
        // ann and carol always differ (p_o = 0, p_e = 0): kappa 0 over 2 items.
        let ac = row["pairs"]
            .as_array()
            .expect("pairs")
            .iter()
            .find(|p| p["first"] == "ann" && p["second"] == "carol")
            .expect("ann/carol");
        assert_eq!(ac["units"], if i < n { 2 } else { 8 });
        assert_eq!(ac["kappa"]["value"].as_f64(), Some(0.0));
    }
}

/// Write `rows` (JSONL) to a file under `env` and return its path.
fn jsonl(env: &Env, name: &str, rows: &[serde_json::Value]) -> String {
    let path = env.dir.path().join(name);
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).expect("write jsonl");
    path.to_str().expect("utf8").to_string()
}

/// `me`'s screen of every item of their queue, in queue order, each drawn by a
/// fresh TUI moved to it with `]` and then given `keys`, with the item's own id and
/// position blanked (every item here has the same texts).
fn screens_of(env: &Env, me: &str, keys: &str) -> Vec<(String, String)> {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let ctx = common::context(env, raglab::config::Config::default());
    let s = block(study::load_study(&ctx)).expect("study");
    let press = |app: &mut raglab::tui::app::App, c: char| {
        let _ = app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    };
    let fresh = || {
        let mut app = raglab::tui::app::App::new(
            Vec::new(),
            raglab::tui::keymap::Keymap::default_keymap(),
            "ws".into(),
        );
        app.pane = raglab::tui::app::Pane::Annotate;
        app.annotate = AnnotatePane::new(AnnotateSettings {
            reviewer: Some(me.to_string()),
            ..AnnotateSettings::default()
        });
        app.annotate
            .load_with(s.items.clone(), s.labels.clone(), s.schedule.clone());
        app
    };
    let n = fresh().annotate.queue().count();
    (0..n)
        .map(|pos| {
            let mut app = fresh();
            for _ in 0..pos {
                press(&mut app, ']');
            }
            keys.chars().for_each(|c| press(&mut app, c));
            let id = app.annotate.item().expect("item").item_id.clone();
            let screen = common::screen(&app, 150, 40)
                .replace(&format!("item {}/{n}", pos + 1), "item #/#")
                .replace(&id, "ITEM");
            (id, screen)
        })
        .collect()
}

/// Gold items: only the lead sets them (signed; a reviewer's forged row is refused
/// and named), `assign` mixes them into every reviewer's queue, a reviewer's screen
/// of a gold item is the screen of any other item, their agreement report and
/// export carry no trace of gold, and the lead sees each reviewer's accuracy.
#[test]
fn gold_items_reach_every_queue_unmarked_and_the_lead_sees_accuracy() {
    let env = Env::new();
    let crit = criteria();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let everyone = people(&env, &location, &[]);
    let [lena, ann, bob, carol, _] = &everyone;
    // Five items with the same texts: only ids tell them apart.
    let items: Vec<serde_json::Value> = (0..5)
        .map(|i| serde_json::json!({"item_id": format!("i{i}"), "question": "Q?", "answer": "A"}))
        .collect();
    lena.ok(&[
        "annotate",
        "create",
        "--from-file",
        &jsonl(&env, "items.jsonl", &items),
    ]);
    found_roster(&everyone);
    // i4 is gold on every criterion (pass); i3 on the first only (fail).
    let mut gold: Vec<serde_json::Value> = crit
        .iter()
        .map(|c| serde_json::json!({"item_id": "i4", "criterion": c, "label": "pass"}))
        .collect();
    gold.push(serde_json::json!({"item_id": "i3", "criterion": crit[0], "label": "fail"}));
    let file = jsonl(&env, "gold.jsonl", &gold);
    let (ok, _, err) = ann.run(&["annotate", "gold", &file]);
    assert!(
        !ok && err.contains("annotate gold needs the study lead's key"),
        "{err}"
    );
    let bad = jsonl(
        &env,
        "bad.jsonl",
        &[serde_json::json!({"item_id": "i4", "criterion": crit[0], "label": "maybe"})],
    );
    let (ok, _, err) = lena.run(&["annotate", "gold", &bad]);
    assert!(!ok && err.contains("maybe is not a label of"), "{err}");
    assert!(
        lena.ok(&["annotate", "gold", &file])
            .contains(&format!("set {} gold labels", crit.len() + 1))
    );
    // A gold row forged by ann (her own key, straight into the dataset) counts for nothing.
    let ws = raglab::store::workspace::Workspace::open(env.workspace()).expect("ws");
    let bound = block(study::binding(&ws)).expect("study id");
    let mut forged = raglab::core::gold::GoldLabel {
        item_id: "i0".into(),
        criterion: crit[0].clone(),
        label: Some("pass".into()),
        set_at: "now".into(),
        seq: 1,
        signer: Some(ann.keypair().public_hex()),
        signature: None,
        log_rows: None,
    };
    forged.signature = Some(
        ann.keypair()
            .sign_hex(&raglab::core::signing::gold_bytes(&forged, &bound)),
    );
    block(study::gold_table(&ws).append(&[forged])).expect("forger appends");

    let said = lena.ok(&[
        "annotate",
        "assign",
        "--reviewers",
        "ann,bob,carol",
        "--per-item",
        "2",
        "--seed",
        "1",
    ]);
    // 3 regular items x 2 = 6 slots (2 each), plus both gold items for everyone; the
    // forged i0 is no gold item, so it is a regular one.
    assert!(
        said.contains("assigned 5 items (2 gold, to every reviewer), 2 reviewers each (seed 1): ann 4, bob 4, carol 4"),
        "{said}"
    );
    let queue = queues(&env, &default_rubric(), &["ann", "bob", "carol"]);
    for (name, q) in &queue {
        assert!(q.contains("i3") && q.contains("i4"), "{name}: {q:?}");
        assert_eq!(q.len(), 4);
    }

    // Before and after labelling (and asking to see the others with `r`), ann's
    // screen of a gold item is her screen of any other item.
    for keys in ["", "r", "pppp", "ppppr"] {
        let screens = screens_of(&env, "ann", keys);
        let normal = screens
            .iter()
            .find(|(id, _)| id != "i3" && id != "i4")
            .expect("a regular item")
            .1
            .clone();
        for (id, screen) in &screens {
            assert_eq!(*screen, normal, "keys {keys:?}: ann's view of {id} differs");
        }
    }

    // ann and carol say pass everywhere, bob fail. i4 expects pass (4 units), i3
    // fail on one: ann 4 / 5 = 0.8, bob 1 / 5 = 0.2, carol 4 / 5.
    for (p, name, v) in [
        (ann, "ann", "pass"),
        (bob, "bob", "fail"),
        (carol, "carol", "pass"),
    ] {
        let mine: Vec<(String, String)> = queue[name]
            .iter()
            .flat_map(|i| crit.iter().map(move |c| (i.clone(), c.clone())))
            .collect();
        let rows: Vec<(&str, &str, &str)> = mine
            .iter()
            .map(|(i, c)| (i.as_str(), c.as_str(), v))
            .collect();
        let (ok, _, err) = p.import(name, &rows);
        assert!(ok, "{err}");
    }
    let a = lena.agree();
    let refused = a["refused"].to_string();
    assert!(
        refused.contains("gold label of item i0 on")
            && refused.contains("is not signed by the lead's key"),
        "{refused}"
    );
    let gold = a["gold"].as_array().expect("the lead's gold accuracy");
    let by: BTreeMap<&str, &serde_json::Value> = gold
        .iter()
        .map(|g| (g["reviewer"].as_str().expect("name"), g))
        .collect();
    for (name, correct, value) in [("ann", 4, 0.8), ("bob", 1, 0.2), ("carol", 4, 0.8)] {
        let g = by[name];
        assert_eq!(
            (
                g["units"].as_u64(),
                g["correct"].as_u64(),
                g["items"].as_u64()
            ),
            (Some(5), Some(correct), Some(2)),
            "{g}"
        );
        let acc = g["accuracy"]["value"].as_f64().expect("accuracy");
        assert!((acc - value).abs() < 1e-12, "{name}: {acc}");
        let (lo, hi) = (
            g["accuracy"]["lo"].as_f64().expect("lo"),
            g["accuracy"]["hi"].as_f64().expect("hi"),
        );
        assert!(lo <= acc && acc <= hi, "{g}");
    }
    // The lead's text report says the same.
    let text = lena.ok(&["--role", "lead", "agree", "--bootstrap", "200"]);
    assert!(text.contains("Accuracy on gold items"), "{text}");
    // A reviewer's report and export carry no trace of gold.
    let mine = ann.ok(&["--reviewer", "ann", "agree", "--json", "--bootstrap", "200"]);
    let mine: serde_json::Value = serde_json::from_str(&mine).expect("json");
    assert!(mine.get("gold").is_none(), "{mine}");
    assert!(!mine["refused"].to_string().contains("gold"), "{mine}");
    let (rows, err) = exported(ann, &["--reviewer", "ann"]);
    assert!(!err.contains("gold"), "{err}");
    assert!(rows.iter().all(|l| l.reviewer != "gold"));
}
