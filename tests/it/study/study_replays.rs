//! Replayed and repeated signed rows, end to end through the real binary on real lance
//! datasets, each person with their own config and data folders (their own key): a
//! reviewer who can append to the workspace (every reviewer can) appends copies of the
//! lead's rows, or rows with the runs of a pair swapped, and nothing changes:
//! - a copy of an old assignment appended after a re-assignment is refused and named;
//!   the re-assignment holds and no item is revealed early;
//! - a copy of an old gold row appended after the lead changed it is refused and
//!   named; the changed expected label holds;
//! - pair orders are the lead's and read first-wins: a row with the runs swapped for
//!   every pair item is refused and named, and the ranking is unchanged (checked
//!   against Bradley-Terry's closed form for two runs);
//! - the judge works on the study's pinned rubric: a differing `--rubric` is refused
//!   with the difference named before any model loads.

use crate::common::records::written;
use crate::models::study_keys::{
    Person, all, block, create_n_items, criteria, found_roster, people,
};
use crate::study::study_pinned::{context_of, history, refused_of, rubric_file, shows, text};
use raglab::core::annotation::Assignment;
use raglab::core::gold::GoldLabel;
use raglab::service::study::{self, PairItem};
use raglab::store::workspace::Workspace;

use crate::common::Env;

/// A JSONL file of `rows` in the test folder; its path.
fn jsonl(env: &Env, name: &str, rows: &[serde_json::Value]) -> String {
    let path = env.dir.path().join(name);
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&path, text).expect("write jsonl");
    text_of(&path)
}

fn text_of(p: &std::path::Path) -> String {
    text(p).to_string()
}

/// i0 assigned to ann and bob; ann submits; i0 re-assigned to ann and carol; bob
/// submits. bob appends a byte-for-byte copy of the first assignment (which, read
/// last-wins, would put ann and bob back in force and reveal i0 to him): it is
/// refused and named, i0 stays blind to bob until carol submits, and no label is lost.
#[test]
fn a_replayed_assignment_after_a_reassignment_changes_nothing() {
    let env = Env::new();
    let crit = criteria();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, carol, _] = &everyone;
    lena.ok(&["annotate", "assign", "--reviewers", "ann,bob"]);
    let ws = Workspace::open(env.workspace()).expect("ws");
    let first: Vec<Assignment> = block(study::assignments_table(&ws).read_all()).expect("rows");
    assert_eq!(first.len(), 2);
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    lena.ok(&["annotate", "assign", "--reviewers", "ann,carol"]);
    assert!(bob.import("bob", &all("i0", &crit, "fail")).0);
    let (_, out, _) = history(bob, "bob", "i0", &[]);
    assert!(!shows(&out, "ann"), "i0 is carol's and ann's now: {out}");

    // bob appends the copy of i0's first assignment.
    let copy: Vec<Assignment> = first.into_iter().filter(|a| a.item_id == "i0").collect();
    block(study::assignments_table(&ws).append(&copy)).expect("replayed");

    let replayed = "assignment of item i0 to ann and bob repeats an earlier assignment (a copied row changes nothing)";
    // Nothing revealed early: not in history, not in export, not in the TUI's read.
    let (ok, out, err) = history(bob, "bob", "i0", &[]);
    assert!(
        ok && !shows(&out, "ann") && shows(&out, "bob"),
        "{out}{err}"
    );
    assert!(err.contains(replayed), "named where it is skipped: {err}");
    let (ok, out, err) = bob.run(&["--reviewer", "bob", "labels", "export"]);
    assert!(ok && !out.contains("\"ann\""), "{out}");
    assert!(err.contains(replayed), "{err}");
    let read = block(study::load_study(&context_of(bob, &env))).expect("study");
    let why: Vec<&str> = read.refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(why, [replayed]);
    assert_eq!(
        read.schedule.newest().get("i0"),
        Some(&("ann".to_string(), "carol".to_string())),
        "the re-assignment holds"
    );
    // The lead's agreement names it, and the lead's report study too.
    let a = lena.agree();
    assert_eq!(refused_of(&a), [replayed], "{a}");
    let dir = env.dir.path().join("report");
    lena.ok(&["--role", "lead", "report", "study", "--out", text(&dir)]);
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap_or_default();
    assert!(report.contains(replayed), "{report}");

    // carol submits: i0 is revealed now, to bob too, and every label is there.
    assert!(carol.import("carol", &all("i0", &crit, "pass")).0);
    let (_, out, _) = history(bob, "bob", "i0", &[]);
    assert!(shows(&out, "ann") && shows(&out, "carol"), "{out}");
    let (ok, out, _) = lena.run(&["--role", "lead", "labels", "export"]);
    assert!(ok);
    assert_eq!(out.lines().count(), 3 * crit.len(), "no label lost");
}

/// The lead sets i1's first criterion to pass, then to fail; ann labels it fail and
/// bob pass. A copy of the pass row appended after is refused and named: fail stays
/// expected, so ann scores 1 of 1 and bob 0 of 1 (read last-wins, the copy would swap
/// them).
#[test]
fn a_replayed_gold_row_is_refused_and_the_changed_label_holds() {
    let env = Env::new();
    let crit = criteria();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    found_roster(&everyone);
    let [lena, ann, bob, ..] = &everyone;
    let gold = |name: &str, label: &str| {
        jsonl(
            &env,
            name,
            &[serde_json::json!({"item_id": "i1", "criterion": crit[0], "label": label})],
        )
    };
    lena.ok(&["annotate", "gold", &gold("pass.jsonl", "pass")]);
    lena.ok(&["annotate", "gold", &gold("fail.jsonl", "fail")]);
    let ws = Workspace::open(env.workspace()).expect("ws");
    let rows: Vec<GoldLabel> = block(study::gold_table(&ws).read_all()).expect("gold");
    assert_eq!(rows.len(), 2);
    // Blind labels (agreement and gold accuracy use those given before reveal).
    let mut ann_i1 = all("i1", &crit, "pass");
    ann_i1[0].2 = "fail";
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(ann.import("ann", &ann_i1).0);
    for item in ["i0", "i1"] {
        assert!(bob.import("bob", &all(item, &crit, "pass")).0);
    }

    // ann appends a copy of the pass row.
    block(study::gold_table(&ws).append(&rows[..1])).expect("replayed");

    let a = lena.agree();
    let replayed = format!(
        "gold label of item i1 on {} repeats an earlier gold label (a copied row changes nothing)",
        crit[0]
    );
    assert_eq!(refused_of(&a), [replayed], "{a}");
    let scored: Vec<(String, u64, u64)> = a["gold"]
        .as_array()
        .expect("gold accuracy")
        .iter()
        .map(|g| {
            (
                g["reviewer"].as_str().unwrap_or_default().to_string(),
                g["correct"].as_u64().unwrap_or(9),
                g["units"].as_u64().unwrap_or(9),
            )
        })
        .collect();
    assert_eq!(
        scored,
        [("ann".to_string(), 1, 1), ("bob".to_string(), 0, 1)],
        "{a}"
    );
}

const RUNS: [&str; 2] = ["alpha-run", "beta-run"];

/// Which run a reviewer prefers on question `q`: alpha on q0 and q1, a tie on q2,
/// beta on q3 (both reviewers, every criterion).
fn preferred(q: usize) -> Option<&'static str> {
    match q {
        0 | 1 => Some(RUNS[0]),
        2 => None,
        _ => Some(RUNS[1]),
    }
}

/// alpha's Bradley-Terry score on any row: per criterion 2 reviewers x 4 questions,
/// alpha wins 4, ties 2, loses 2, so W_alpha = 4 + 2/2 = 5 and W_beta = 2 + 2/2 = 3;
/// with two runs the fit is closed-form, score = ln(W_alpha / W_beta) / 2.
fn alpha_by_hand() -> f64 {
    (5.0_f64 / 3.0).ln() / 2.0
}

/// Each row's (criterion, alpha's score, beta's score) of `preferences --json`.
fn scores(p: &serde_json::Value) -> Vec<(String, f64, f64)> {
    p["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|row| {
            let of = |run: &str| {
                row["scores"]
                    .as_array()
                    .expect("scores")
                    .iter()
                    .find(|s| s["run"] == run)
                    .and_then(|s| s["score"]["value"].as_f64())
                    .expect("a defined score")
            };
            (
                row["criterion"].as_str().unwrap_or_default().to_string(),
                of(RUNS[0]),
                of(RUNS[1]),
            )
        })
        .collect()
}

fn preferences(lena: &Person) -> serde_json::Value {
    let out = lena.ok(&[
        "--role",
        "lead",
        "preferences",
        "--json",
        "--bootstrap",
        "200",
    ]);
    serde_json::from_str(&out).expect("preferences json")
}

/// A signed pairwise study: only the lead creates pair items (their orders signed);
/// ann and bob label them; ann then appends, for every pair item, its order with the
/// runs swapped (which, read last-wins, would invert the ranking). Every swapped row
/// is refused and named, and the ranking is the one computed by hand.
#[test]
fn a_swapped_pair_order_is_refused_and_the_ranking_holds() {
    let env = Env::new();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    found_roster(&everyone);
    let [lena, ann, bob, ..] = &everyone;
    let ctx = context_of(lena, &env);
    for run in RUNS {
        for q in 0..4 {
            let a = written(
                run,
                q,
                &format!("How is the flu prevented (case {q})?"),
                "A yearly vaccine.",
                &format!("Answer {q} of one run."),
                "flu#prevention",
            );
            block(raglab::service::answer::save_answer(&ctx, &a)).expect("answer");
        }
    }
    let pairs = ["annotate", "create", "--pairs", "alpha-run,beta-run"];
    let (ok, _, err) = ann.run(&pairs);
    assert!(
        !ok && err.contains("annotate create --pairs needs the study lead's key"),
        "{err}"
    );
    assert!(lena.ok(&pairs).contains("created 4 pair items"));
    let ws = Workspace::open(env.workspace()).expect("ws");
    let orders: Vec<PairItem> = block(study::pair_items_table(&ws).read_all()).expect("orders");
    assert_eq!(orders.len(), 4);
    let lead_key = lena.key();
    assert!(
        orders
            .iter()
            .all(|o| o.signer.as_deref() == Some(lead_key.as_str()) && o.signature.is_some()),
        "{orders:?}"
    );

    let crit = criteria();
    for p in [ann, bob] {
        let name = p.home.file_name().and_then(|n| n.to_str()).expect("name");
        let mut rows = Vec::new();
        for o in &orders {
            let q: usize = o.question_id[1..].parse().expect("q");
            let label = match preferred(q) {
                None => "tie",
                Some(run) if run == o.first_run => "first",
                Some(_) => "second",
            };
            rows.extend(crit.iter().map(|c| (o.item_id.as_str(), c.as_str(), label)));
        }
        let (ok, _, err) = p.import(name, &rows);
        assert!(ok, "{err}");
    }
    let before = preferences(lena);
    let ranked = scores(&before);
    assert_eq!(ranked.len(), crit.len() + 1);
    for (row, alpha, beta) in &ranked {
        assert!((alpha - alpha_by_hand()).abs() < 1e-9, "{row}: {alpha}");
        assert!((beta + alpha_by_hand()).abs() < 1e-9, "{row}: {beta}");
    }
    assert_eq!(refused_of(&before), Vec::<String>::new());

    // ann appends every order with its runs swapped.
    let swapped: Vec<PairItem> = orders
        .iter()
        .map(|o| PairItem {
            first_run: o.second_run.clone(),
            first_answer_id: o.second_answer_id.clone(),
            second_run: o.first_run.clone(),
            second_answer_id: o.first_answer_id.clone(),
            ..o.clone()
        })
        .collect();
    block(study::pair_items_table(&ws).append(&swapped)).expect("swapped");

    let after = preferences(lena);
    assert_eq!(scores(&after), ranked, "the ranking is unchanged");
    let mut want: Vec<String> = orders
        .iter()
        .map(|o| format!(
            "pair order of item {} comes after the item's first pair order, which counts (an item's order is fixed when it is made)",
            o.item_id
        ))
        .collect();
    let mut got = refused_of(&after);
    want.sort();
    got.sort();
    assert_eq!(got, want);
    let said = lena.ok(&["--role", "lead", "preferences", "--bootstrap", "200"]);
    assert!(
        said.contains("4 stored rows not counted") && said.contains(&want[0]),
        "{said}"
    );
}

/// The lead pins the built-in rubric. `judge --rubric` with one criterion is refused,
/// the difference named, before any model loads: the models folder is empty, so a
/// judge that went on would fail on the missing model instead. Without `--rubric`, or
/// with the pinned rubric's own file, the judge goes on to load its model.
#[test]
fn the_judge_refuses_a_rubric_that_differs_from_the_pinned_one() {
    let env = Env::new();
    let location = text_of(&env.workspace());
    let no_models = env.dir.path().join("no-models");
    std::fs::create_dir_all(&no_models).expect("empty models folder");
    let everyone = people(
        &env,
        &location,
        &[("RAGLAB_MODELS_DIR", text_of(&no_models))],
    );
    create_n_items(&env, &everyone[0], 1);
    found_roster(&everyone);
    let lena = &everyone[0];
    lena.ok(&["study", "rubric", "pin"]);
    let one = rubric_file(&env, "one.toml", |r| r.criteria.truncate(1));
    let same = rubric_file(&env, "same.toml", |_| {});

    // Checked before the judge loads: no model is named in the refusal.
    let judge = |rubric: Option<&str>| {
        let flag: Vec<&str> = rubric.map(|f| vec!["--rubric", f]).unwrap_or_default();
        // (No model can start: the models folder is empty.)
        lena.run(&[&flag[..], &["judge"][..]].concat())
    };
    let (ok, _, err) = judge(Some(text(&one)));
    assert!(
        !ok && err.contains(
            "your rubric lacks criterion completeness that the study's pinned rubric has"
        ) && err.contains("lacks criterion clarity"),
        "{err}"
    );
    assert!(!err.contains(text(&no_models)), "{err}");
    // The pinned rubric (no local one, or the same one named): past the rubric to the
    // model, which the empty folder lacks.
    for rubric in [None, Some(text(&same))] {
        let (ok, _, err) = judge(rubric);
        assert!(!ok && !err.contains("your rubric"), "{rubric:?}: {err}");
        assert!(err.contains(text(&no_models)), "{rubric:?}: {err}");
    }
}

/// An items file of `rows` (id, answer) for `annotate create --from-file`; its path.
fn items_file(env: &Env, name: &str, rows: &[(&str, &str)]) -> String {
    let rows: Vec<serde_json::Value> = rows
        .iter()
        .map(|(id, answer)| serde_json::json!({"item_id": id, "question": format!("{id}?"), "answer": answer}))
        .collect();
    jsonl(env, name, &rows)
}

/// Items are the lead's. i0 and i1 exist before the roster: founding seals them and
/// says so. ann, a member who can append, writes an item row under the id the lead
/// will use next (i2, which ids make easy to foresee) and a row for i0 with another
/// answer; her own `annotate create` is refused. Her i2 row is refused and named, her
/// i0 row changes nothing; once the lead makes i2, the lead's text is the item and
/// ann's row is passed over. Nothing she wrote reaches a reviewer's screen.
#[test]
fn a_members_item_row_under_a_future_id_is_not_an_item() {
    let env = Env::new();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    create_n_items(&env, &everyone[0], 2);
    let founded = found_roster(&everyone);
    assert!(
        founded.contains("sealed the 2 items already in the workspace"),
        "{founded}"
    );
    let [lena, ann, ..] = &everyone;
    let ws = Workspace::open(env.workspace()).expect("ws");

    let mine = items_file(&env, "ann.jsonl", &[("i2", "Drink bleach.")]);
    let (ok, _, err) = ann.run(&["annotate", "create", "--from-file", &mine]);
    assert!(
        !ok && err.contains("annotate create needs the study lead's key"),
        "{err}"
    );
    let forged = |id: &str, answer: &str| study::Item {
        item_id: id.into(),
        set: "items".into(),
        question: format!("{id}?"),
        answer: answer.into(),
        ..Default::default()
    };
    block(
        study::items_table(&ws)
            .append(&[forged("i2", "Drink bleach."), forged("i0", "Drink bleach.")]),
    )
    .expect("ann appends");

    let read = block(study::load_study(&context_of(ann, &env))).expect("study");
    let ids: Vec<&str> = read.items.iter().map(|i| i.item_id.as_str()).collect();
    assert_eq!(ids, ["i0", "i1"]);
    assert_eq!(read.items[0].answer, "A0");
    let why: Vec<&str> = read.refused.iter().map(|r| r.why.as_str()).collect();
    assert_eq!(
        why,
        [
            "item i2 is not sealed by the lead's key (it carries no signature): only the lead puts items in a signed study (`raglab study seal-items` seals what the lead accepts)"
        ]
    );
    // A label for ann's item is refused as one for no item.
    let (ok, _, err) = ann.import("ann", &all("i2", &criteria(), "pass"));
    assert!(!ok && err.contains("i2"), "{err}");

    let genuine = items_file(&env, "lena.jsonl", &[("i2", "A yearly vaccine.")]);
    let (ok, made, err) = lena.run(&["annotate", "create", "--from-file", &genuine]);
    assert!(ok && made.contains("created 1"), "{made}{err}");
    // The lead is told of the planted row as the study read it before.
    assert!(
        err.contains("item rows not counted: 1\n  item i2 is not sealed by the lead's key"),
        "{err}"
    );
    let read = block(study::load_study(&context_of(ann, &env))).expect("study");
    let items: Vec<(&str, &str)> = read
        .items
        .iter()
        .map(|i| (i.item_id.as_str(), i.answer.as_str()))
        .collect();
    assert_eq!(
        items,
        [("i0", "A0"), ("i1", "A1"), ("i2", "A yearly vaccine.")]
    );
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    assert!(ann.import("ann", &all("i2", &criteria(), "pass")).0);
}

/// A study founded before items were sealed: its items are unsealed rows, refused
/// and named in the signed study, until the lead runs `study seal-items`, which
/// lists what it sealed. A reviewer cannot run it.
#[test]
fn study_seal_items_seals_the_items_of_an_older_study() {
    let env = Env::new();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    found_roster(&everyone);
    let [lena, ann, ..] = &everyone;
    let ws = Workspace::open(env.workspace()).expect("ws");
    // As an older raglab wrote them: no seal.
    let old: Vec<study::Item> = (0..2)
        .map(|i| study::Item {
            item_id: format!("i{i}"),
            set: "items".into(),
            question: format!("Q{i}?"),
            answer: format!("A{i}"),
            ..Default::default()
        })
        .collect();
    block(study::items_table(&ws).append(&old)).expect("old items");
    let read = block(study::load_study(&context_of(lena, &env))).expect("study");
    assert!(read.items.is_empty());
    assert_eq!(read.refused.len(), 2);

    let (ok, _, err) = ann.run(&["study", "seal-items"]);
    assert!(
        !ok && err.contains("study seal-items needs the study lead's key"),
        "{err}"
    );
    let (ok, out, err) = lena.run(&["study", "seal-items"]);
    assert!(ok, "{err}");
    assert_eq!(out, "sealed i0  Q0?\nsealed i1  Q1?\n");
    assert!(err.contains("2 items sealed"), "{err}");
    let read = block(study::load_study(&context_of(ann, &env))).expect("study");
    let lead_key = lena.key();
    for (got, stored) in read.items.iter().zip(&old) {
        let unsealed = study::Item {
            signer: None,
            signature: None,
            ..got.clone()
        };
        assert_eq!(&unsealed, stored, "the item as it was stored");
        assert_eq!(got.signer.as_deref(), Some(lead_key.as_str()));
    }
    assert_eq!(read.items.len(), 2);
    assert!(read.refused.is_empty(), "{:?}", read.refused);
    // Run again, nothing is left to seal.
    let (ok, out, _) = lena.run(&["study", "seal-items"]);
    assert!(ok && out.is_empty(), "{out}");
}

/// Answers belong to the workspace, and any member can append one: ann stores an
/// answer of the lead's run under the id the lead's generator will use next (q1,
/// ahead of the lead's own) and one for a question of her own (q2), and an unsigned
/// row is appended beside them (q3). The lead's `annotate create --from-run` makes
/// items only of the lead's signed answers, each of the others left out and named;
/// the lead's TUI `a` on ann's answer is refused; `--answers-by ann` then takes
/// hers, and `--unsigned-answers` the unsigned one. Nothing a member wrote becomes an
/// item unless the lead accepts its signer.
#[test]
fn a_members_answers_become_items_only_when_the_lead_takes_them() {
    let env = Env::new();
    let location = text_of(&env.workspace());
    let everyone = people(&env, &location, &[]);
    found_roster(&everyone);
    let [lena, ann, ..] = &everyone;
    let answer = |q: usize, text: &str| {
        written(
            "rag",
            q,
            &format!("Question {q}?"),
            "A yearly vaccine.",
            text,
            "flu#a",
        )
    };
    let store = |p: &Person, q: usize, text: &str| {
        let ctx = context_of(p, &env);
        block(raglab::service::answer::save_answer(&ctx, &answer(q, text))).expect("answer");
    };
    store(lena, 0, "Genuine 0.");
    store(ann, 1, "Planted 1.");
    store(lena, 1, "Genuine 1.");
    store(ann, 2, "Planted 2.");
    let ws = Workspace::open(env.workspace()).expect("ws");
    let unsigned = answer(3, "Unsigned 3.");
    block(raglab::service::answer::answers(&ws).append(&[unsigned])).expect("unsigned");

    let (ok, _, err) = ann.run(&["annotate", "create", "--from-run", "rag"]);
    assert!(!ok && err.contains("needs the study lead's key"), "{err}");
    let (ok, out, err) = lena.run(&["annotate", "create", "--from-run", "rag"]);
    assert!(ok && out.contains("created 2 items"), "{out}{err}");
    assert!(
        err.contains("items are made from the answers signed by lena (lead)"),
        "{err}"
    );
    assert!(err.contains("left out answers: 3"), "{err}");
    for (q, why) in [
        (
            1,
            "is signed by ann, whose answers the lead did not accept: take them with --answers-by ann",
        ),
        (2, "is signed by ann, whose answers the lead did not accept"),
        (3, "carries no signature"),
    ] {
        assert!(
            err.contains(&format!("answer rag/q{q}/s42 of run rag {why}")),
            "{q}: {err}"
        );
    }
    let items = |p: &Person| -> Vec<(String, String)> {
        let read = block(study::load_study(&context_of(p, &env))).expect("study");
        assert!(read.refused.is_empty(), "{:?}", read.refused);
        read.items
            .into_iter()
            .map(|i| (i.item_id, i.answer))
            .collect()
    };
    let pair = |id: &str, text: &str| (id.to_string(), text.to_string());
    assert_eq!(
        items(ann),
        [
            pair("rag/q0/s42", "Genuine 0."),
            pair("rag/q1/s42", "Genuine 1.")
        ]
    );

    // The lead's TUI sends ann's answer: refused, naming its signer.
    let sent = block(study::add_answer_item(
        &context_of(lena, &env),
        "rag/q2/s42",
    ));
    let err = sent.expect_err("ann's answer").to_string();
    assert!(err.contains("is signed by ann"), "{err}");

    let (ok, out, err) = lena.run(&[
        "annotate",
        "create",
        "--from-run",
        "rag",
        "--answers-by",
        "ann",
    ]);
    assert!(ok && out.contains("created 1 item"), "{out}{err}");
    assert!(
        err.contains("signed by lena (lead), ann") && err.contains("left out answers: 1"),
        "{err}"
    );
    let (ok, out, err) = lena.run(&[
        "annotate",
        "create",
        "--from-run",
        "rag",
        "--unsigned-answers",
    ]);
    assert!(ok && out.contains("created 1 item"), "{out}{err}");
    assert_eq!(
        items(ann),
        [
            pair("rag/q0/s42", "Genuine 0."),
            pair("rag/q1/s42", "Genuine 1."),
            pair("rag/q2/s42", "Planted 2."),
            pair("rag/q3/s42", "Unsigned 3."),
        ],
        "q1 stays the lead's: an item is fixed when it is made"
    );
    // Run again, every answer is an item: nothing to say of the ones left out (an
    // item is fixed when it is made).
    let (ok, out, err) = lena.run(&["annotate", "create", "--from-run", "rag"]);
    assert!(ok && out.contains("no new items"), "{out}{err}");
    assert!(!err.contains("left out"), "{err}");
    let (ok, _, err) = lena.run(&[
        "annotate",
        "create",
        "--from-run",
        "rag",
        "--answers-by",
        "carol-typo",
    ]);
    assert!(
        !ok && err.contains("--answers-by carol-typo: not a name on the study's roster"),
        "{err}"
    );
}
