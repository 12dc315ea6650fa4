//! The study's own rules live in the study, end to end through the real binary on
//! real lance datasets, each person with their own config and data folders (their own
//! key, their own memory of the study):
//! - the lead pins the study's rubric, and a reviewer's `--rubric` with fewer criteria
//!   is refused with the difference named, reveals nothing early through any view or
//!   service call, and loses no label;
//! - a new pin keeps earlier reveals, and a replayed copy of an old pin is refused and
//!   named;
//! - a deleted roster is an error naming the file (never an unsigned study), for as
//!   long as the workspace or the reader remembers the study, and a roster replaced by
//!   another study's is named;
//! - roster entries have a position: a rotated key keeps the labels signed before it,
//!   a removed reviewer's later labels are refused, and a replayed old entry changes
//!   nothing.

use std::path::{Path, PathBuf};

use crate::common::Env;
use crate::models::study_keys::{
    Person, all, block, create_n_items, criteria, exported, found_roster, people,
};
use raglab::config::{Config, Paths};
use raglab::core::pinned::RubricPin;
use raglab::core::rubric::Rubric;
use raglab::core::signing::RosterEntry;
use raglab::service::base::{default_rubric, load_rubric, parse_rubric};
use raglab::service::study::{self, Viewer};
use raglab::store::workspace::Workspace;

/// The built-in rubric changed by `edit`, written to `name` in the test folder.
pub(crate) fn rubric_file(env: &Env, name: &str, edit: impl FnOnce(&mut Rubric)) -> PathBuf {
    let mut r = default_rubric();
    edit(&mut r);
    let path = env.dir.path().join(name);
    std::fs::write(&path, study::rubric_toml(&r).expect("toml")).expect("rubric file");
    path
}

pub(crate) fn text(p: &Path) -> &str {
    p.to_str().expect("utf8")
}

/// `p`'s own context on the workspace (their config and data folders).
pub(crate) fn context_of(p: &Person, env: &Env) -> raglab::service::Context {
    raglab::service::Context::with(
        Paths {
            config_dir: p.home.join("config"),
            data_dir: p.home.join("data"),
        },
        Config::default(),
        &env.workspace(),
    )
    .expect("context")
}

/// `labels history ITEM` as `who` sees it: (ok, stdout, stderr).
pub(crate) fn history(p: &Person, who: &str, item: &str, extra: &[&str]) -> (bool, String, String) {
    let args = [
        &["--reviewer", who][..],
        extra,
        &["labels", "history", item][..],
    ]
    .concat();
    p.run(&args)
}

pub(crate) fn shows(out: &str, reviewer: &str) -> bool {
    out.lines()
        .any(|l| l.split_whitespace().nth(1) == Some(reviewer))
}

#[test]
fn a_rubric_with_fewer_criteria_reveals_nothing_once_the_study_pins_its_own() {
    let env = Env::new();
    let crit = criteria();
    let location = text(&env.workspace()).to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, ..] = &everyone;
    let one = rubric_file(&env, "one.toml", |r| r.criteria.truncate(1));
    let one_flag = ["--rubric", text(&one)];
    // ann submits i0; bob labels its first criterion only.
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &[("i0", crit[0].as_str(), "fail")]).0);

    // No rubric pinned (the rule before pins): bob's one-criterion rubric counts i0
    // as submitted and shows him ann's labels.
    let (ok, out, err) = history(bob, "bob", "i0", &one_flag);
    assert!(ok && shows(&out, "ann"), "{out}{err}");
    let (ok, out, err) = lena.run(&["study", "rubric", "show"]);
    assert!(ok && out.starts_with("no rubric pinned"), "{out}{err}");

    // The lead pins the study's rubric (the built-in one).
    let (ok, out, err) = lena.run(&["study", "rubric", "pin"]);
    assert!(
        ok && out.contains("pinned rubric pubhealthbench v1 (4 criteria: faithfulness"),
        "{out}{err}"
    );
    assert!(
        err.contains("in force from the start of the label log"),
        "{err}"
    );

    // The same views with the one-criterion rubric are refused, the difference named.
    let lacks = "your rubric lacks criterion completeness that the study's pinned rubric has";
    for args in [
        &["labels", "history", "i0"][..],
        &["labels", "export"][..],
        &["labels", "export", "--final"][..],
        &["agree"][..],
    ] {
        let (ok, out, err) = bob.run(&[&["--reviewer", "bob"][..], &one_flag[..], args].concat());
        assert!(
            !ok && err.contains(lacks) && !shows(&out, "ann"),
            "{args:?}: {err}"
        );
        assert!(err.contains("lacks criterion clarity"), "{err}");
    }
    let (ok, _, err) = bob.run(&[&one_flag[..], &["labels", "import", text(&one)][..]].concat());
    assert!(!ok && err.contains(lacks), "{err}");

    // Without it the pinned rubric decides: bob sees his own label only.
    let (ok, out, err) = history(bob, "bob", "i0", &[]);
    assert!(ok && !shows(&out, "ann") && shows(&out, "bob"), "{out}");
    assert!(err.contains("some label versions are not shown"), "{err}");
    assert!(
        !err.contains("4 label"),
        "no count of hidden versions: {err}"
    );
    let (rows, _) = exported(bob, &["--reviewer", "bob"]);
    assert!(rows.iter().all(|l| l.reviewer == "bob"), "{rows:?}");
    let (ok, _, err) = bob.run(&["--reviewer", "bob", "agree"]);
    assert!(!ok && err.contains("blind: none of the"), "{err}");

    // A front that hands the service the one-criterion rubric reveals nothing either,
    // and cannot write with it.
    let ctx = context_of(bob, &env);
    let one_rubric = load_rubric(Some(&one)).expect("one");
    let bob_v = Viewer::Reviewer("bob".into());
    let h = block(study::label_history(&ctx, &one_rubric, "i0", &bob_v)).expect("history");
    assert!(h.rows.iter().all(|l| l.reviewer == "bob"), "{:?}", h.rows);
    assert_eq!(h.withheld, crit.len());
    let labels = env.dir.path().join("bob-one.jsonl");
    std::fs::write(
        &labels,
        format!(
            "{{\"item_id\":\"i1\",\"reviewer\":\"bob\",\"criterion\":\"{}\",\"label\":\"pass\"}}\n",
            crit[0]
        ),
    )
    .expect("labels");
    let err = block(study::import_labels(&ctx, &one_rubric, &labels)).expect_err("refused");
    assert!(format!("{err:#}").contains(lacks), "{err:#}");
    // The study as the TUI reads it carries the pinned rubric (the Annotate pane
    // labels with it whatever it started with).
    let read = block(study::load_study(&ctx)).expect("study");
    assert_eq!(read.rubric, Some(default_rubric()));

    // `study rubric show` names the study's rubric, yours and how they differ; its
    // TOML is the pinned rubric.
    let out = bob.ok(&[&one_flag[..], &["study", "rubric", "show"][..]].concat());
    assert!(
        out.starts_with("study rubric pubhealthbench v1 (4 criteria")
            && out.contains("differs, so study commands refuse it")
            && out.contains("lacks criterion clarity"),
        "{out}"
    );
    let toml = bob.ok(&["study", "rubric", "show", "--toml"]);
    assert_eq!(parse_rubric(&toml).expect("toml"), default_rubric());
    // The lead's report study names the refusal in its agreement section.
    let dir = env.dir.path().join("report");
    let (_, out, err) = lena.run(
        &[
            &["--role", "lead"][..],
            &one_flag[..],
            &["report", "study", "--out", text(&dir)][..],
        ]
        .concat(),
    );
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    assert!(
        report.contains(lacks) || err.contains(lacks),
        "{out}{err}{report}"
    );

    // bob completes i0: revealed to him now, and no label was lost.
    assert!(bob.import("bob", &all("i0", &crit, "fail")[1..]).0);
    let (ok, out, _) = history(bob, "bob", "i0", &[]);
    assert!(ok && shows(&out, "ann"), "{out}");
    let (rows, _) = exported(lena, &["--role", "lead"]);
    assert_eq!(rows.len(), 2 * crit.len());
}

#[test]
fn a_new_pin_keeps_earlier_reveals_and_a_replayed_old_pin_is_refused() {
    let env = Env::new();
    let location = text(&env.workspace()).to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, ..] = &everyone;
    let (f, co, cl) = ("faithfulness", "completeness", "clarity");
    let two = rubric_file(&env, "two.toml", |r| {
        r.criteria.retain(|c| c.key == f || c.key == cl);
    });
    let three = rubric_file(&env, "three.toml", |r| {
        r.criteria.retain(|c| c.key != "factual_consistency");
        r.version = "2".into();
    });
    lena.ok(&["study", "rubric", "pin", text(&two)]);
    assert!(
        ann.import("ann", &[("i0", f, "pass"), ("i0", cl, "pass")])
            .0
    );
    assert!(
        bob.import("bob", &[("i0", f, "fail"), ("i0", cl, "pass")])
            .0
    );
    let (_, out, _) = history(bob, "bob", "i0", &[]);
    assert!(shows(&out, "ann"), "revealed under v1: {out}");

    // Version 2 adds completeness: i0 stays revealed where it was.
    let (ok, out, err) = lena.run(&["study", "rubric", "pin", text(&three)]);
    assert!(
        ok && out.contains("pinned rubric pubhealthbench v2 (3 criteria"),
        "{out}{err}"
    );
    assert!(
        err.contains("it follows pubhealthbench v1, from label row 4"),
        "{err}"
    );
    let (_, out, _) = history(bob, "bob", "i0", &[]);
    assert!(shows(&out, "ann"), "still revealed: {out}");
    // On i1 ann submits under v2; bob labels the two criteria of v1 only.
    assert!(
        ann.import(
            "ann",
            &[("i1", f, "pass"), ("i1", co, "pass"), ("i1", cl, "pass")]
        )
        .0
    );
    assert!(
        bob.import("bob", &[("i1", f, "pass"), ("i1", cl, "fail")])
            .0
    );
    let (_, out, _) = history(bob, "bob", "i1", &[]);
    assert!(!shows(&out, "ann"), "blind under v2: {out}");

    // bob, who can append to the workspace, appends a byte-for-byte copy of the v1
    // pin to bring its two criteria back.
    let ws = Workspace::open(env.workspace()).expect("ws");
    let pins: Vec<RubricPin> = block(study::pins_table(&ws).read_all()).expect("pins");
    assert_eq!(pins.len(), 2);
    block(study::pins_table(&ws).append(&pins[..1])).expect("replayed");
    let (_, out, _) = history(bob, "bob", "i1", &[]);
    assert!(!shows(&out, "ann"), "the replay reveals nothing: {out}");
    let replayed =
        "rubric pin pubhealthbench v1 repeats an earlier pin (a copied row changes nothing)";
    let out = lena.ok(&["study", "rubric", "show"]);
    assert!(
        out.starts_with("study rubric pubhealthbench v2")
            && out.contains(&format!("not counted: {replayed}")),
        "{out}"
    );
    let agree = lena.agree();
    let refused: Vec<&str> = agree["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .filter_map(|r| r["why"].as_str())
        .collect();
    assert_eq!(refused, [replayed], "{agree}");

    // Another rubric under the pinned version is refused; the same one writes nothing;
    // a reviewer pins nothing.
    let other = rubric_file(&env, "other.toml", |r| {
        r.criteria.retain(|c| c.key != "factual_consistency");
        r.version = "2".into();
        r.criteria[0].definition = "Changed.".into();
    });
    let (ok, _, err) = lena.run(&["study", "rubric", "pin", text(&other)]);
    assert!(
        !ok && err.contains("give yours another version")
            && err.contains("criterion faithfulness: your definition differs"),
        "{err}"
    );
    let out = lena.ok(&["study", "rubric", "pin", text(&three)]);
    assert!(
        out.contains("already") && out.contains("nothing written"),
        "{out}"
    );
    let (ok, _, err) = ann.run(&["study", "rubric", "pin", text(&two)]);
    assert!(
        !ok && err.contains("study rubric pin needs the study lead's key"),
        "{err}"
    );
    let pins: Vec<RubricPin> = block(study::pins_table(&ws).read_all()).expect("pins");
    assert_eq!(pins.len(), 3, "nothing written by the refused pins");

    // bob completes i1 under v2: revealed, and every label is there.
    assert!(bob.import("bob", &[("i1", co, "fail")]).0);
    let (_, out, _) = history(bob, "bob", "i1", &[]);
    assert!(shows(&out, "ann"), "{out}");
    let (rows, _) = exported(lena, &["--role", "lead"]);
    assert_eq!(rows.len(), 4 + 6);
}

/// Copy a dataset folder (a backup, or another study's roster put in place).
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}

#[test]
fn a_deleted_roster_is_an_error_and_never_an_unsigned_study() {
    let env = Env::new();
    let crit = criteria();
    let location = text(&env.workspace()).to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, carol, mal] = &everyone;
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "fail")).0);
    let before = lena.agree();
    let roster = env.workspace().join(study::ROSTER);
    let backup = env.dir.path().join("roster-backup.lance");
    copy_dir(&roster, &backup);
    std::fs::remove_dir_all(&roster).expect("roster deleted");

    let missing = format!("the study roster {} is missing", text(&roster));
    let founded = env.workspace().join(study::FOUNDED);
    let mal_key = mal.key();
    for (p, args) in [
        (lena, &["--role", "lead", "agree"][..]),
        (lena, &["study", "roster", "list"][..]),
        (ann, &["--reviewer", "ann", "labels", "export"][..]),
        (mal, &["labels", "export"][..]),
        (
            mal,
            &["study", "roster", "add", "mal", mal_key.as_str(), "--lead"][..],
        ),
    ] {
        let (ok, out, err) = p.run(args);
        assert!(
            !ok && err.contains(&missing)
                && err.contains("a study once signed never reads as unsigned")
                && !out.contains("unsigned"),
            "{args:?}: {out}{err}"
        );
        assert!(err.contains(text(&founded)), "{err}");
    }
    let (ok, _, err) = mal.import("ann", &all("i1", &crit, "fail"));
    assert!(!ok && err.contains(&missing), "{err}");

    // The workspace's record deleted too: whoever read the study remembers it.
    std::fs::remove_dir_all(&founded).expect("record deleted");
    let (ok, _, err) = lena.run(&["study", "roster", "list"]);
    let memory = study::memory_file(&lena.home.join("data"), &location);
    assert!(
        !ok && err.contains(&missing) && err.contains(text(&memory)),
        "{err}"
    );
    // What is out of reach: carol never read the study on this machine, so to her
    // it reads as unsigned (the documented limit).
    let out = carol.ok(&["study", "roster", "list"]);
    assert!(out.contains("unsigned study"), "{out}");

    // The roster restored from the backup: every label counts as before.
    copy_dir(&backup, &roster);
    let after = lena.agree();
    assert_eq!(after["rows"], before["rows"]);
    assert_eq!(
        after["refused"].as_array().map(Vec::len),
        Some(0),
        "{after}"
    );
    let (rows, _) = exported(lena, &["--role", "lead"]);
    assert_eq!(rows.len(), 2 * crit.len(), "no label lost");

    // Another study's roster put in its place (mal leads that one) is named.
    let elsewhere = text(&env.dir.path().join("mals-study")).to_string();
    let mal_there = Person::new(&env, "mal", &elsewhere, &[]);
    mal_there.ok(&["study", "roster", "add", "mal", mal_key.as_str(), "--lead"]);
    std::fs::remove_dir_all(&roster).expect("roster removed");
    copy_dir(
        &env.dir.path().join("mals-study").join(study::ROSTER),
        &roster,
    );
    let (ok, _, err) = lena.run(&["--role", "lead", "agree"]);
    assert!(
        !ok && err.contains(&format!("the study roster {} was replaced", text(&roster))),
        "{err}"
    );
    let (ok, _, err) = ann.run(&["--reviewer", "ann", "labels", "export"]);
    assert!(!ok && err.contains("was replaced"), "{err}");
}

/// The refusals `agree --json` names.
pub(crate) fn refused_of(v: &serde_json::Value) -> Vec<String> {
    v["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .filter_map(|r| r["why"].as_str().map(str::to_string))
        .collect()
}

/// ann's key is rotated, then bob is removed: every label given before counts (i0
/// stays revealed), a label signed with ann's old key after the rotation and one of
/// bob's after his removal are refused and named, and a byte-for-byte copy of ann's
/// old roster entry appended to bring her old key back changes nothing.
#[test]
fn a_rotated_key_keeps_earlier_labels_and_a_replayed_old_entry_changes_nothing() {
    let env = Env::new();
    let crit = criteria();
    let location = text(&env.workspace()).to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, ..] = &everyone;
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "fail")).0);
    let ws = Workspace::open(env.workspace()).expect("ws");
    let old_entry: RosterEntry = block(study::roster_table(&ws).read_all())
        .expect("roster")
        .into_iter()
        .find(|e: &RosterEntry| e.name == "ann")
        .expect("ann's entry");

    // ann's new machine, new key.
    let ann_new = Person::new(&env, "ann-new", &location, &[]);
    let new_key = ann_new.key();
    let out = lena.ok(&["study", "roster", "rotate", "ann", &new_key]);
    assert!(
        out.contains(&format!(
            "ann now signs with key {new_key} (from label row 8"
        )),
        "{out}"
    );
    let a = lena.agree();
    assert!(refused_of(&a).is_empty(), "{a}");
    let (rows, _) = exported(lena, &["--role", "lead"]);
    assert_eq!(
        rows.len(),
        2 * crit.len(),
        "ann's labels before the rotation count"
    );
    let (_, out, _) = history(bob, "bob", "i0", &[]);
    assert!(shows(&out, "ann"), "i0 stays revealed: {out}");

    // The old key no longer speaks for ann: raglab refuses the name, and a label
    // signed with it and appended straight to the log is refused and named.
    let (ok, _, err) = ann.run(&["--reviewer", "ann", "labels", "export"]);
    assert!(
        !ok && err.contains("you are not ann on this study's roster"),
        "{err}"
    );
    let bound = block(study::binding(&ws)).expect("study id");
    let stolen = |item: &str, who: &str, p: &Person| {
        let mut l =
            raglab::core::annotation::Label::new(item, who, &crit[0], Some("fail"), None, "1");
        l.log_rows = Some(block(study::labels_table(&ws).count_rows()).expect("rows"));
        study::sign_label(&mut l, &p.keypair(), &bound);
        block(study::labels_table(&ws).append(std::slice::from_ref(&l))).expect("appended");
        l.label_id
    };
    let late = stolen("i1", "ann", ann);
    // ann labels i1 with her new key: it counts.
    assert!(ann_new.import("ann", &all("i1", &crit, "pass")).0);

    // A copy of ann's old roster entry, appended to bring her old key back.
    block(study::roster_table(&ws).append(std::slice::from_ref(&old_entry))).expect("replayed");
    let list = lena.ok(&["study", "roster", "list"]);
    assert!(
        list.contains("not counted: roster entry ann repeats an earlier roster entry (a copied row changes nothing)")
            && list.contains(&new_key),
        "{list}"
    );
    let (ok, _, err) = ann.run(&["--reviewer", "ann", "labels", "export"]);
    assert!(!ok && err.contains("you are not ann"), "{err}");

    // bob is removed: his labels before count, his later ones do not.
    let out = lena.ok(&["study", "roster", "remove", "bob"]);
    assert!(out.contains("removed bob from the roster"), "{out}");
    let (ok, _, err) = bob.run(&["--reviewer", "bob", "labels", "export"]);
    assert!(
        !ok && err.contains("bob is not on this study's roster"),
        "{err}"
    );
    let after_removal = stolen("i1", "bob", bob);
    let a = lena.agree();
    let why = refused_of(&a);
    assert_eq!(why.len(), 3, "{why:#?}");
    assert!(
        why[0].starts_with("roster entry ann repeats an earlier roster entry"),
        "{why:#?}"
    );
    assert!(
        why[1].starts_with(&format!("label {late} of item i1 claims reviewer ann but is not signed by ann's key (it is signed by key")),
        "{why:#?}"
    );
    assert!(
        why[2].starts_with(&format!("label {after_removal} of item i1 claims reviewer bob, who was removed from the study roster from label row")),
        "{why:#?}"
    );
    let (rows, _) = exported(lena, &["--role", "lead"]);
    assert_eq!(
        rows.len(),
        3 * crit.len(),
        "i0 by both, i1 by ann's new key"
    );
    assert_eq!(
        rows.iter().filter(|l| l.reviewer == "bob").count(),
        crit.len()
    );
    // The lead cannot be rotated or removed, nor can a reviewer rotate anyone.
    let (ok, _, err) = lena.run(&["study", "roster", "remove", "lena"]);
    assert!(!ok && err.contains("leads the study"), "{err}");
    let (ok, _, err) = ann_new.run(&["study", "roster", "rotate", "ann", &bob.key()]);
    assert!(!ok && err.contains("needs the study lead's key"), "{err}");
}

/// The lead's TUI is open when the lead pins a rubric (three criteria, v2) from the
/// command line: at the next poll of the study, the Agreement pane adjudicates with
/// the pinned rubric instead of the one it started with (whose final labels the study
/// would refuse).
#[tokio::test(flavor = "multi_thread")]
async fn the_agreement_pane_takes_a_pin_made_after_it_started() {
    let env = Env::new();
    let location = text(&env.workspace()).to_string();
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let lena = &everyone[0];
    let ctx = context_of(lena, &env);
    let opts = raglab::tui::TuiOptions {
        lead: true,
        reviewer: Some("lena".into()),
        ..Default::default()
    };
    let (mut app, mut jobs, mut rx) = crate::common::tui::opened(&ctx, &opts).await;
    let limit = std::time::Duration::from_secs(60);
    crate::common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        !a.annotate.items().is_empty()
    })
    .await;
    assert_eq!(app.agreement.rubric(), Some(&default_rubric()));

    let three = rubric_file(&env, "three.toml", |r| {
        r.criteria.truncate(3);
        r.version = "2".into();
    });
    lena.ok(&["study", "rubric", "pin", text(&three)]);
    let pinned = load_rubric(Some(&three)).expect("three");
    // The event loop's tick: poll (at most every few seconds) and apply what comes.
    let deadline = std::time::Instant::now() + limit;
    while app.agreement.rubric() != Some(&pinned) {
        assert!(
            std::time::Instant::now() < deadline,
            "the pin reached the Agreement pane within {limit:?}"
        );
        jobs.poll_study();
        let wait = std::time::Duration::from_millis(200);
        if let Ok(Some(msg)) = tokio::time::timeout(wait, rx.recv()).await {
            jobs.apply(&mut app, msg);
        }
    }
    assert_eq!(app.annotate.rubric(), &pinned);
}
