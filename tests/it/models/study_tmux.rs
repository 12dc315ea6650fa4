//! A whole blind two-reviewer study through the real binary in tmux: two reviewers in
//! two processes label the same 20 items on a non-default rubric (six criteria,
//! yes/no/partly); neither sees the other before both submit; a change after reveal
//! is kept, marked, and reaches the other process's Agreement pane by itself; the lead
//! adjudicates disagreements in a third process; the exported final labels and
//! `agree --json` match values computed here by hand from the label plan.
//!
//! Figures (printed with `--no-capture`): keystrokes per item, key press to saved
//! p50/p95 (from the TUI's log), refresh delay between two processes.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::Env;
use common::tmux::Tmux;

const ITEMS: usize = 20;
const LABELS: [&str; 3] = ["yes", "no", "partly"];
/// Criterion keys in rubric order, and sorted (the disagreement list's order).
const CRITERIA: [&str; 6] = [
    "grounded", "complete", "accurate", "clear", "safe", "concise",
];

/// The label plan: alice's label of item i on criterion c, and bob's (different on
/// about a quarter of the units).
fn plan(reviewer: &str, i: usize, c: usize) -> &'static str {
    let a = (i * 7 + c * 3 + i / 3) % 3;
    let b = if (i * 3 + c).is_multiple_of(4) {
        (a + 1) % 3
    } else {
        a
    };
    LABELS[if reviewer == "alice" { a } else { b }]
}

/// The judge's label (stored as judgements of the items' answers): alice's, except on
/// a third of the units.
fn judge_plan(i: usize, c: usize) -> &'static str {
    let a = LABELS
        .iter()
        .position(|l| *l == plan("alice", i, c))
        .expect("label");
    LABELS[if (i + c).is_multiple_of(3) {
        (a + 2) % 3
    } else {
        a
    }]
}

/// Store the judge's labels as real judgement records of the items' answers.
fn store_judgements(env: &Env) {
    use raglab::service::answer::{JudgementRecord, judgements};
    let ws = raglab::store::workspace::Workspace::open(env.workspace()).expect("workspace");
    let rows: Vec<JudgementRecord> = (0..ITEMS)
        .map(|i| JudgementRecord {
            answer_id: format!("ans-{i:02}"),
            run: "study".into(),
            judge_model: "judge-model.gguf".into(),
            rubric: "six-criteria".into(),
            rubric_version: "2".into(),
            criteria: CRITERIA.iter().map(|c| (*c).to_string()).collect(),
            labels: (0..CRITERIA.len())
                .map(|c| judge_plan(i, c).to_string())
                .collect(),
            rationale: String::new(),
            prompt: String::new(),
            raw_output: String::new(),
            created_at: String::new(),
            endpoint: None,
            repeat: None,
            seed: None,
            temperature: None,
        })
        .collect();
    tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(judgements(&ws).append(&rows))
        .expect("judgements");
}

fn key_of(label: &str) -> char {
    label.chars().next().expect("label")
}

/// The item shown: the number in its question "ITEM-iNN".
fn item_on(screen: &str) -> usize {
    let at = screen.find("ITEM-i").expect("an item on screen");
    screen[at + 6..at + 8].parse().expect("two digits")
}

/// Label every item in the reviewer's own order: six label keys per item (the
/// criterion advances by itself), then `]`. Returns the order seen.
fn label_all(t: &Tmux, who: &str) -> Vec<usize> {
    let mut seen = Vec::new();
    for n in 1..=ITEMS {
        let s = t.wait(who, Duration::from_secs(10), |s| {
            s.contains(&format!("item {n}/{ITEMS}"))
        });
        let i = item_on(&s);
        let keys: String = (0..CRITERIA.len())
            .map(|c| key_of(plan(who, i, c)))
            .collect();
        t.type_text(who, &keys);
        t.type_text(who, "]");
        seen.push(i);
    }
    t.wait(who, Duration::from_secs(20), |s| {
        s.contains(&format!("{ITEMS}/{ITEMS} done")) && !s.contains("saving…")
    });
    seen
}

/// Cohen's kappa of two label lists (computed here, independently of raglab).
fn kappa(a: &[&str], b: &[&str]) -> f64 {
    let n = a.len() as f64;
    let p_o = a.iter().zip(b).filter(|(x, y)| x == y).count() as f64 / n;
    let p_e: f64 = LABELS
        .iter()
        .map(|l| {
            (a.iter().filter(|x| *x == l).count() as f64 / n)
                * (b.iter().filter(|x| *x == l).count() as f64 / n)
        })
        .sum();
    (p_o - p_e) / (1.0 - p_e)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    let pos = q * (v.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (pos - lo as f64)
}

/// Create the study's `n` items `i00`.. from an items file (each question names its
/// item, so a screen shows which item is open), with answer ids when `answer_ids`.
fn create_items(env: &Env, n: usize, answer_ids: bool) {
    let items = env.dir.path().join("items.jsonl");
    let rows: String = (0..n)
        .map(|i| {
            let answer_id = if answer_ids {
                format!(", \"answer_id\": \"ans-{i:02}\"")
            } else {
                String::new()
            };
            format!(
                "{{\"item_id\": \"i{i:02}\", \"question\": \"ITEM-i{i:02}: how is disease {i} prevented?\", \"reference_answer\": \"Reference {i}.\", \"target_chunk\": \"Guidance text {i}.\", \"answer\": \"Answer {i}.\"{answer_id}}}\n"
            )
        })
        .collect();
    std::fs::write(&items, rows).expect("items");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
}

#[test]
fn a_blind_two_reviewer_study_with_adjudication() {
    let env = Env::new();
    let dir = env.dir.path().to_path_buf();
    let rubric = common::repo().join("tests/data/rubrics/six_yes_no_partly.toml");
    let rubric = rubric.to_str().expect("utf8");
    create_items(&env, ITEMS, true);
    env.ok(&["annotate", "assign", "--reviewers", "alice,bob"]);
    store_judgements(&env);

    let t = Tmux::new(&env);
    // Bob labels everything first, in his own process.
    t.start("bob", &["--reviewer", "bob", "--rubric", rubric], &dir);
    t.type_text("bob", "4");
    let bob_order = label_all(&t, "bob");

    // Alice, in another process, has submitted nothing: blind everywhere.
    t.start("alice", &["--reviewer", "alice", "--rubric", rubric], &dir);
    t.type_text("alice", "5");
    let s = t.settled("alice", Duration::from_secs(20), |s| {
        s.contains("blind: none of the 20")
    });
    // The status bar shows the workspace's path, a random temporary folder whose name
    // may hold `i0` itself: it is left out of the check.
    let s = s.replace(dir.to_str().expect("utf8"), "TMP");
    assert!(
        !s.contains("i0") && !s.contains("bob"),
        "per-item detail leaked:\n{s}"
    );
    t.type_text("alice", "4");
    t.wait("alice", Duration::from_secs(10), |s| {
        s.contains("item 1/20")
    });
    t.type_text("alice", "r");
    let s = t.settled("alice", Duration::from_secs(5), |s| {
        s.contains("blind until every reviewer")
    });
    assert!(
        !s.contains("bob:") && !s.contains("judge:"),
        "bob's labels before alice submitted:\n{s}"
    );
    let alice_order = label_all(&t, "alice");
    assert_ne!(
        alice_order, bob_order,
        "each reviewer has their own seeded order"
    );
    // Both submitted: `r` shows bob's labels on alice's last item.
    t.type_text("alice", "r");
    t.wait("alice", Duration::from_secs(5), |s| s.contains("bob: "));

    // Alice watches the Agreement pane (tab: `5` picks criterion 5 in Annotate); bob
    // changes one label after reveal. Alice's pane refreshes by itself: the refresh
    // delay between two processes.
    t.press("alice", "Tab");
    t.wait("alice", Duration::from_secs(20), |s| {
        s.contains("0 changed after reveal")
    });
    let changed_item = bob_order[ITEMS - 1];
    let old = plan("bob", changed_item, 0);
    let new = LABELS[(LABELS.iter().position(|l| *l == old).expect("label") + 1) % 3];
    // Bob's pane learns of alice's submissions by itself; he reveals, then relabels.
    t.wait("bob", Duration::from_secs(10), |s| {
        t.type_text("bob", "r");
        std::thread::sleep(Duration::from_millis(100));
        s.contains("alice: ")
    });
    t.type_text("bob", &format!("1{}", key_of(new)));
    t.wait("bob", Duration::from_secs(10), |s| {
        s.contains("changed after reveal: kept")
    });
    let saved_at = Instant::now();
    t.wait("alice", Duration::from_secs(15), |s| {
        s.contains("1 changed after reveal")
    });
    let refresh = saved_at.elapsed();

    // The lead adjudicates the first three disagreements (list order: item, then
    // criterion key), choosing `yes` with a rationale.
    let mut disagreements: Vec<(usize, &str, usize)> = Vec::new();
    for i in 0..ITEMS {
        let mut crits: Vec<(&str, usize)> = CRITERIA.iter().copied().zip(0..).collect();
        crits.sort();
        for (k, c) in crits {
            if plan("alice", i, c) != plan("bob", i, c) {
                disagreements.push((i, k, c));
            }
        }
    }
    t.start(
        "lead",
        &["--role", "lead", "--reviewer", "lena", "--rubric", rubric],
        &dir,
    );
    t.type_text("lead", "5");
    let d = disagreements.len();
    t.wait("lead", Duration::from_secs(20), |s| {
        s.contains(&format!("Disagreements ({d}, 0 adjudicated)"))
    });
    for (n, _) in disagreements.iter().take(3).enumerate() {
        t.press("lead", "Enter");
        t.wait("lead", Duration::from_secs(5), |s| {
            s.contains("final label?")
        });
        t.type_text("lead", "y");
        t.type_text("lead", &format!("reason {n}"));
        t.press("lead", "Enter");
        t.wait("lead", Duration::from_secs(15), |s| {
            s.contains(&format!("({d}, {} adjudicated)", n + 1))
        });
        t.type_text("lead", "]");
    }
    for who in ["lead", "alice", "bob"] {
        t.quit(who);
        let err = std::fs::read_to_string(dir.join(format!("{who}.err"))).unwrap_or_default();
        assert!(!err.contains("NOT saved"), "{who}: {err}");
    }

    // The adjudicated set, by hand.
    let out = env.ok(&[
        "--role",
        "lead",
        "--rubric",
        rubric,
        "labels",
        "export",
        "--final",
        "--reviewers",
        "alice,bob",
    ]);
    let exported: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(exported.len(), ITEMS * CRITERIA.len());
    for row in &exported {
        let i: usize = row["item_id"].as_str().expect("id")[1..]
            .parse()
            .expect("n");
        let k = row["criterion"].as_str().expect("criterion");
        let c = CRITERIA
            .iter()
            .position(|x| *x == k)
            .expect("known criterion");
        let (a, b) = (plan("alice", i, c), plan("bob", i, c));
        let adjudicated = disagreements
            .iter()
            .take(3)
            .position(|(di, dk, _)| *di == i && *dk == k);
        let (label, source) = match (adjudicated, a == b) {
            (Some(_), _) => (serde_json::json!("yes"), "adjudicated"),
            (None, true) => (serde_json::json!(a), "agreed"),
            (None, false) => (serde_json::Value::Null, "unresolved"),
        };
        assert_eq!(
            (&row["label"], row["source"].as_str()),
            (&label, Some(source)),
            "{row}"
        );
        if let Some(n) = adjudicated {
            assert_eq!(row["rationale"], format!("reason {n}"));
            assert_eq!(row["adjudicator"], "lena");
        }
    }

    // Agreement on the blind labels, by hand; and on the newest labels.
    for (flag, changed) in [(None, false), (Some("--after-reveal"), true)] {
        let mut args = vec![
            "--role",
            "lead",
            "--rubric",
            rubric,
            "agree",
            "--json",
            "--bootstrap",
            "200",
            "--reviewers",
            "alice,bob",
        ];
        args.extend(flag);
        let j = env.json(&args);
        assert_eq!(j["changed_after_reveal"], 1);
        assert_eq!(j["labels_after_reveal"], 1);
        let bob = |i: usize, c: usize| {
            if changed && i == changed_item && c == 0 {
                new
            } else {
                plan("bob", i, c)
            }
        };
        for (r, c) in (0..CRITERIA.len()).map(Some).chain([None]).enumerate() {
            let cs: Vec<usize> = c.map_or((0..CRITERIA.len()).collect(), |c| vec![c]);
            let a: Vec<&str> = (0..ITEMS)
                .flat_map(|i| cs.iter().map(move |&c| plan("alice", i, c)))
                .collect();
            let b: Vec<&str> = (0..ITEMS)
                .flat_map(|i| cs.iter().map(move |&c| bob(i, c)))
                .collect();
            let got = j["rows"][r]["pairs"][0][1]["kappa"]["value"]
                .as_f64()
                .expect("kappa");
            let jl: Vec<&str> = (0..ITEMS)
                .flat_map(|i| cs.iter().map(move |&c| judge_plan(i, c)))
                .collect();
            let d1 = j["judge_within_noise"][r][1]["vs_first"]["value"]
                .as_f64()
                .expect("delta");
            assert!(
                (d1 - (kappa(&jl, &a) - kappa(&a, &b))).abs() < 1e-12,
                "row {r}: judge within noise {d1}"
            );
            let d2 = j["judge_within_noise"][r][1]["vs_second"]["value"]
                .as_f64()
                .expect("delta");
            assert!((d2 - (kappa(&jl, &b) - kappa(&a, &b))).abs() < 1e-12);
            assert!(
                (got - kappa(&a, &b)).abs() < 1e-12,
                "row {r}: {got} vs {}",
                kappa(&a, &b)
            );
        }
    }

    // The judge against the final labels (agreed + the three adjudicated), pooled.
    let (mut jf, mut fin) = (Vec::new(), Vec::new());
    for i in 0..ITEMS {
        for (c, k) in CRITERIA.iter().enumerate() {
            let adjudicated = disagreements
                .iter()
                .take(3)
                .any(|(di, dk, _)| *di == i && dk == k);
            let (a, b) = (plan("alice", i, c), plan("bob", i, c));
            if adjudicated || a == b {
                fin.push(if adjudicated { "yes" } else { a });
                jf.push(judge_plan(i, c));
            }
        }
    }
    let csv = dir.join("agreement.csv");
    let md = dir.join("agreement.md");
    let j = env.json(&[
        "--role",
        "lead",
        "--rubric",
        rubric,
        "agree",
        "--json",
        "--bootstrap",
        "200",
        "--reviewers",
        "alice,bob",
        "--csv",
        csv.to_str().expect("utf8"),
        "--markdown",
        md.to_str().expect("utf8"),
    ]);
    let got = j["judge_vs_final"][CRITERIA.len()][1]["kappa"]["value"]
        .as_f64()
        .expect("judge vs final");
    assert!((got - kappa(&jf, &fin)).abs() < 1e-12, "{got}");
    assert_eq!(j["judge_models"][0], "judge-model.gguf");
    let csv = std::fs::read_to_string(csv).expect("csv");
    assert_eq!(csv.lines().count(), 2 + CRITERIA.len() + 2, "{csv}");
    assert!(csv.contains("B = 200, seed 20240601") && csv.contains("\"Overall\""));
    let md = std::fs::read_to_string(md).expect("markdown");
    assert!(md.contains("| paper Overall (n=100) | 0.56 [0.48, 0.64]"));
    assert!(md.contains("noise)"), "{md}");

    // Headless, a reviewer outside the pair who submitted nothing is blind too.
    let out = env
        .cmd()
        .args([
            "--reviewer",
            "carol",
            "--rubric",
            rubric,
            "agree",
            "--bootstrap",
            "50",
        ])
        .output()
        .expect("raglab");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("blind: none of the 20"));

    // Figures.
    let log = std::fs::read_to_string(dir.join("data").join("raglab.log"))
        .or_else(|_| walk_logs(&dir.join("data")).ok_or(std::io::Error::other("no log")))
        .expect("the TUI's log");
    let mut ms: Vec<f64> = log
        .lines()
        .filter_map(|l| l.split("key_to_saved_ms=").nth(1))
        .filter_map(|v| v.split_whitespace().next()?.parse().ok())
        .collect();
    assert!(
        ms.len() >= 2 * ITEMS * CRITERIA.len(),
        "every label save is logged"
    );
    eprintln!(
        "keystrokes per item: {} (6 label keys + `]`); key press to saved over {} labels: p50 {:.1} ms, p95 {:.1} ms; refresh delay between processes: {:.2} s",
        CRITERIA.len() + 1,
        ms.len(),
        quantile(&mut ms, 0.5),
        quantile(&mut ms, 0.95),
        refresh.as_secs_f64()
    );
    assert!(refresh < Duration::from_secs(10));
}

/// A signed study opened the careless way: the real TUI started without `--reviewer`
/// by bob (his own config folder, so his own key) on a study with a roster (lena
/// leads; ann and bob review, assigned as a pair). Item i00 is revealed (both
/// submitted, one disagreement), i01 is not (ann submitted, bob did not). Until a
/// name is taken, the Agreement pane shows no name, label or note; the name `ann`
/// is refused (bob does not hold ann's key); `bob` is taken and every view is
/// drawn again for him: i00's disagreement with both notes, nothing of i01.
#[test]
fn a_signed_study_opened_without_a_reviewer_shows_no_labels_until_the_key_holder_names_themselves()
{
    let env = Env::new();
    let dir = env.dir.path().to_path_buf();
    let config = |who: &str| dir.join(who).join("config");
    let run = |who: &str, args: &[&str]| {
        let out = env
            .cmd()
            .env("RAGLAB_CONFIG_DIR", config(who))
            .args(args)
            .output()
            .expect("raglab");
        let (o, e) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "{who}: raglab {args:?}: {e}\n{o}");
        o
    };
    let items = dir.join("study.jsonl");
    let rows: String = (0..2)
        .map(|i| {
            format!(
                "{{\"item_id\": \"i{i:02}\", \"question\": \"ITEM-i{i:02}: how is disease {i} treated?\", \"answer\": \"Answer {i}.\", \"answer_id\": \"ans-{i:02}\"}}\n"
            )
        })
        .collect();
    std::fs::write(&items, rows).expect("items");
    run(
        "lena",
        &[
            "annotate",
            "create",
            "--from-file",
            items.to_str().expect("utf8"),
        ],
    );
    let key = |who: &str| run(who, &["study", "key"]).trim().to_string();
    run(
        "lena",
        &["study", "roster", "add", "lena", &key("lena"), "--lead"],
    );
    for who in ["ann", "bob"] {
        run("lena", &["study", "roster", "add", who, &key(who)]);
    }
    run("lena", &["annotate", "assign", "--reviewers", "ann,bob"]);
    let criteria: Vec<String> = raglab::service::base::default_rubric()
        .criteria
        .iter()
        .map(|c| c.key.clone())
        .collect();
    for (who, item, first) in [
        ("ann", "i00", "pass"),
        ("bob", "i00", "fail"),
        ("ann", "i01", "pass"),
    ] {
        let file = dir.join(format!("{who}-{item}.jsonl"));
        let text: String = criteria
            .iter()
            .enumerate()
            .map(|(n, c)| {
                let v = if n == 0 { first } else { "pass" };
                format!(
                    "{{\"item_id\": \"{item}\", \"reviewer\": \"{who}\", \"criterion\": \"{c}\", \"label\": \"{v}\", \"note\": \"{who}-{item}-secret\"}}\n"
                )
            })
            .collect();
        std::fs::write(&file, text).expect("labels");
        run(who, &["labels", "import", file.to_str().expect("utf8")]);
    }

    let t = Tmux::new(&env);
    let bob = config("bob");
    t.start_as("bob", Some(&bob), &[], &dir);
    let leaks = |s: &str| -> Vec<&str> {
        [
            "secret",
            "ann/",
            "/bob",
            "ann:",
            "bob:",
            "Disagreements",
            "ITEM-i0",
        ]
        .into_iter()
        .filter(|w| s.contains(w))
        .collect()
    };
    t.type_text("bob", "5");
    let s = t.settled("bob", Duration::from_secs(30), |s| {
        s.contains("without an identity")
    });
    assert!(
        leaks(&s).is_empty(),
        "the Agreement pane for no one shows {:?}:\n{s}",
        leaks(&s)
    );
    t.type_text("bob", "4");
    t.wait("bob", Duration::from_secs(10), |s| {
        s.contains("Who is labelling?")
    });
    // bob does not hold ann's key: the name is refused, and nothing is shown.
    t.type_text("bob", "ann");
    t.press("bob", "Enter");
    let s = t.settled("bob", Duration::from_secs(10), |s| {
        s.contains("you are not ann on this study")
    });
    assert!(!s.contains("secret") && !s.contains("ITEM-i0"), "{s}");
    t.press("bob", "Tab");
    let s = t.settled("bob", Duration::from_secs(10), |s| {
        s.contains("without an identity")
    });
    assert!(!s.contains("secret"), "after a refused name:\n{s}");
    t.type_text("bob", "4");
    t.wait("bob", Duration::from_secs(10), |s| {
        s.contains("Who is labelling?")
    });
    for _ in 0.."ann".len() {
        t.press("bob", "BSpace");
    }
    t.type_text("bob", "bob");
    t.press("bob", "Enter");
    t.wait("bob", Duration::from_secs(10), |s| s.contains("item 1/2"));
    t.press("bob", "Tab");
    let s = t.settled("bob", Duration::from_secs(30), |s| {
        s.contains("Disagreements (1")
    });
    assert!(s.contains("κ ann/bob"), "{s}");
    assert!(
        s.contains("ann-i00-secret") || s.contains("bob-i00-secret"),
        "revealed i00's notes:\n{s}"
    );
    assert!(
        !s.contains("ann-i01-secret"),
        "i01 is not revealed to bob:\n{s}"
    );
    assert!(s.contains("1 items not yet revealed to you"), "{s}");
    t.quit("bob");
}

/// The first `*.log` file under `dir`, read whole.
fn walk_logs(dir: &Path) -> Option<String> {
    for e in std::fs::read_dir(dir).ok()?.flatten() {
        let p = e.path();
        if p.is_dir() {
            if let Some(s) = walk_logs(&p) {
                return Some(s);
            }
        } else if p.extension().is_some_and(|x| x == "log") {
            return std::fs::read_to_string(p).ok();
        }
    }
    None
}

/// Carol's labels: alice's plan, changed on about a quarter of the units (not where
/// bob's change).
fn carol_plan(i: usize, c: usize) -> &'static str {
    let a = LABELS
        .iter()
        .position(|l| *l == plan("alice", i, c))
        .expect("label");
    LABELS[if (i * 5 + c) % 4 == 1 { (a + 2) % 3 } else { a }]
}

/// Anyone's label in the three-reviewer study.
fn plan3(who: &str, i: usize, c: usize) -> &'static str {
    match who {
        "carol" => carol_plan(i, c),
        _ => plan(who, i, c),
    }
}

/// Three reviewers, two per item, and a gold item every reviewer gets unmarked: each
/// labels their queue in their own process; a reviewer sees no one else's labels
/// before submitting; the lead's `agree --json` gives each reviewer's accuracy on the
/// gold item as counted here from the label plan, and every reviewer's agreement;
/// a reviewer's own `agree --json` carries no gold field.
#[test]
fn a_three_reviewer_study_with_a_gold_item() {
    const N: usize = 7;
    const GOLD: usize = 6;
    let env = Env::new();
    let dir = env.dir.path().to_path_buf();
    let rubric = common::repo().join("tests/data/rubrics/six_yes_no_partly.toml");
    let rubric = rubric.to_str().expect("utf8");
    create_items(&env, N, false);
    // The gold item's expected labels: alice's plan, so alice scores 6/6.
    let gold = dir.join("gold.jsonl");
    let rows: String = CRITERIA
        .iter()
        .enumerate()
        .map(|(c, k)| {
            format!(
                "{{\"item_id\": \"i{GOLD:02}\", \"criterion\": \"{k}\", \"label\": \"{}\"}}\n",
                plan("alice", GOLD, c)
            )
        })
        .collect();
    std::fs::write(&gold, rows).expect("gold");
    env.ok(&[
        "--rubric",
        rubric,
        "annotate",
        "gold",
        gold.to_str().expect("utf8"),
    ]);
    let out = env.ok(&[
        "annotate",
        "assign",
        "--reviewers",
        "alice,bob,carol",
        "--per-item",
        "2",
    ]);
    let said = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(said.contains("(1 gold, to every reviewer)"), "{said}");
    // Six items two per reviewer over three reviewers, plus the gold item: 5 each.
    let queue = (N - 1) * 2 / 3 + 1;

    let t = Tmux::new(&env);
    for who in ["alice", "bob", "carol"] {
        t.start(who, &["--reviewer", who, "--rubric", rubric], &dir);
        t.type_text(who, "4");
        for n in 1..=queue {
            let s = t.wait(who, Duration::from_secs(10), |s| {
                s.contains(&format!("item {n}/{queue}"))
            });
            assert!(!s.contains("gold"), "the gold item is marked:\n{s}");
            let i = item_on(&s);
            if who == "carol" && n == 1 {
                // Nothing of the others shows before carol submits.
                t.type_text(who, "r");
                let s = t.settled(who, Duration::from_secs(5), |s| {
                    s.contains("blind until every reviewer")
                });
                assert!(!s.contains("alice:") && !s.contains("bob:"), "{s}");
            }
            let keys: String = (0..CRITERIA.len())
                .map(|c| key_of(plan3(who, i, c)))
                .collect();
            t.type_text(who, &keys);
            t.type_text(who, "]");
        }
        t.wait(who, Duration::from_secs(20), |s| {
            s.contains(&format!("{queue}/{queue} done")) && !s.contains("saving…")
        });
        t.quit(who);
        let err = std::fs::read_to_string(dir.join(format!("{who}.err"))).unwrap_or_default();
        assert!(!err.contains("NOT saved"), "{who}: {err}");
    }

    let lead = env.json(&["--role", "lead", "--rubric", rubric, "agree", "--json"]);
    let gold = lead["gold"]
        .as_array()
        .expect("the lead sees gold accuracy");
    for who in ["alice", "bob", "carol"] {
        let g = gold
            .iter()
            .find(|g| g["reviewer"] == who)
            .unwrap_or_else(|| panic!("no gold row for {who}: {gold:?}"));
        let correct = (0..CRITERIA.len())
            .filter(|&c| plan3(who, GOLD, c) == plan("alice", GOLD, c))
            .count();
        assert_eq!(g["units"], CRITERIA.len(), "{g}");
        assert_eq!(g["correct"], correct, "{who}: {g}");
        let acc = g["accuracy"]["value"].as_f64().expect("accuracy");
        assert!((acc - correct as f64 / CRITERIA.len() as f64).abs() < 1e-12);
    }
    let raters: Vec<&str> = lead["raters"]["raters"]
        .as_array()
        .expect("every reviewer's agreement")
        .iter()
        .map(|r| r.as_str().expect("name"))
        .collect();
    assert_eq!(raters, ["alice", "bob", "carol"]);
    let mine = env.json(&["--reviewer", "alice", "--rubric", rubric, "agree", "--json"]);
    assert!(
        mine.get("gold").is_none(),
        "gold shown to a reviewer: {mine}"
    );
}
