//! Who is who in a study, end to end on real lance datasets: the real binary for each
//! person (each with their own config folder, so their own signing key), and forged
//! rows written straight into the labels and assignments datasets by a second writer
//! (the library on the same workspace, or a second process with the bucket's
//! credentials on moto). Forged, unsigned, edited and copied rows are refused and
//! named, and what counts is exactly what counted before the forgery. Reveal follows
//! the log's own order: a label whose wall clock is set an hour back still lands
//! after the reveal, and a re-assignment after the reveal does not move it.

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::Env;
use raglab::core::annotation::{Assignment, FINAL, Item, Label};
use raglab::service::base::default_rubric;
use raglab::service::study;
use raglab::store::keys::Keypair;
use raglab::store::workspace::Workspace;

/// One person of the study: their own config and data folders on one workspace
/// (shared with the other study modules).
pub(crate) struct Person {
    pub(crate) home: PathBuf,
    ws: String,
    envs: Vec<(&'static str, String)>,
}

impl Person {
    pub(crate) fn new(env: &Env, name: &str, ws: &str, envs: &[(&'static str, String)]) -> Self {
        Self {
            home: env.dir.path().join(name),
            ws: ws.to_string(),
            envs: envs.to_vec(),
        }
    }

    pub(crate) fn cmd(&self) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_raglab"));
        c.env("RAGLAB_CONFIG_DIR", self.home.join("config"))
            .env("RAGLAB_DATA_DIR", self.home.join("data"))
            .env("RAGLAB_MODELS_DIR", common::models_dir())
            .env_remove("RAGLAB_WORKSPACE")
            .envs(self.envs.iter().cloned())
            .args(["--workspace", &self.ws]);
        c
    }

    /// (success, stdout, stderr).
    pub(crate) fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.cmd().args(args).output().expect("spawn raglab");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let (ok, out, err) = self.run(args);
        assert!(ok, "raglab {args:?} failed: {err}\n{out}");
        out
    }

    pub(crate) fn key(&self) -> String {
        self.ok(&["study", "key"]).trim().to_string()
    }

    pub(crate) fn keypair(&self) -> Keypair {
        Keypair::load_or_create(&self.home.join("config")).expect("key")
    }

    /// Import labels `(item, criterion, label)` in `reviewer`'s name.
    pub(crate) fn import(
        &self,
        reviewer: &str,
        rows: &[(&str, &str, &str)],
    ) -> (bool, String, String) {
        let file = self.home.join(format!("labels-{}.jsonl", rows.len()));
        std::fs::create_dir_all(&self.home).expect("home");
        let text: String = rows
            .iter()
            .map(|(i, c, v)| {
                format!(
                    "{{\"item_id\":\"{i}\",\"reviewer\":\"{reviewer}\",\"criterion\":\"{c}\",\"label\":\"{v}\"}}\n"
                )
            })
            .collect();
        std::fs::write(&file, text).expect("write labels");
        self.run(&["labels", "import", file.to_str().expect("utf8")])
    }

    pub(crate) fn agree(&self) -> serde_json::Value {
        let out = self.ok(&["--role", "lead", "agree", "--json", "--bootstrap", "200"]);
        serde_json::from_str(&out).expect("agree json")
    }
}

pub(crate) fn criteria() -> Vec<String> {
    default_rubric()
        .criteria
        .iter()
        .map(|c| c.key.clone())
        .collect()
}

/// Every criterion of `item` labelled `v`.
pub(crate) fn all<'a>(
    item: &'a str,
    crit: &'a [String],
    v: &'a str,
) -> Vec<(&'a str, &'a str, &'a str)> {
    crit.iter().map(|c| (item, c.as_str(), v)).collect()
}

/// lena, ann, bob, carol and mal, each with their own config (own key), on `ws`.
pub(crate) fn people(env: &Env, ws: &str, envs: &[(&'static str, String)]) -> [Person; 5] {
    ["lena", "ann", "bob", "carol", "mal"].map(|n| Person::new(env, n, ws, envs))
}

/// Items i0, i1, created by `lena`.
fn create_items(env: &Env, lena: &Person) {
    create_n_items(env, lena, 2);
}

/// Items i0 .. i(n-1), created by `lena`.
pub(crate) fn create_n_items(env: &Env, lena: &Person, n: usize) {
    let items = env.dir.path().join("items.jsonl");
    let rows: String = (0..n)
        .map(|i| format!("{{\"item_id\":\"i{i}\",\"question\":\"Q{i}?\",\"answer\":\"A{i}\"}}\n"))
        .collect();
    std::fs::write(&items, rows).expect("items");
    lena.ok(&[
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
}

/// The roster: lena (lead), ann, bob, carol; mal holds a key but is on no roster.
/// Returns what founding it said on stderr.
pub(crate) fn found_roster([lena, ann, bob, carol, mal]: &[Person; 5]) -> String {
    // Before any roster the study is unsigned, and says so.
    assert!(
        lena.ok(&["study", "roster", "list"])
            .contains("unsigned study")
    );
    let lk = lena.key();
    // Only the holder of a key may found the roster with it.
    let (ok, _, err) = ann.run(&["study", "roster", "add", "ann", &lk, "--lead"]);
    assert!(!ok && err.contains("KEY must be yours"), "{err}");
    let (ok, _, founded) = lena.run(&["study", "roster", "add", "lena", &lk, "--lead"]);
    assert!(ok, "{founded}");
    for p in [ann, bob, carol] {
        let name = p.home.file_name().and_then(|n| n.to_str()).expect("name");
        lena.ok(&["study", "roster", "add", name, &p.key()]);
    }
    // Only the lead adds to the roster.
    let (ok, _, err) = ann.run(&["study", "roster", "add", "mal", &mal.key()]);
    assert!(!ok && err.contains("only the study lead (lena)"), "{err}");
    let list = lena.ok(&["study", "roster", "list"]);
    assert!(
        list.contains(&format!("{:<24} {:<8} {lk}  (you)", "lena", "lead")),
        "{list}"
    );
    founded
}

/// Items i0, i1 and the roster of [`found_roster`].
fn study_on(env: &Env, ws: &str, envs: &[(&'static str, String)]) -> [Person; 5] {
    let all = people(env, ws, envs);
    create_items(env, &all[0]);
    found_roster(&all);
    all
}

pub(crate) fn block<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(f)
}

fn items() -> Vec<Item> {
    (0..2)
        .map(|i| Item {
            item_id: format!("i{i}"),
            set: "items".into(),
            question: format!("Q{i}?"),
            reference_answer: String::new(),
            target_chunk: String::new(),
            answer: format!("A{i}"),
            answer_id: None,
            ..Default::default()
        })
        .collect()
}

pub(crate) fn exported(p: &Person, args: &[&str]) -> (Vec<Label>, String) {
    let (ok, out, err) = p.run(&[args, &["labels", "export"]].concat());
    assert!(ok, "{err}");
    let rows = out
        .lines()
        .map(|l| serde_json::from_str(l).expect("label row"))
        .collect();
    (rows, err)
}

/// The forgeries, written by a second writer straight into `ws` (the workspace the
/// people use); returns the ids of the rows written and each one's expected reason.
fn forge(ws: &Workspace, ann: &Person, mal: &Person, genuine: &Label) -> Vec<(String, String)> {
    let rubric = default_rubric();
    let (c0, v) = (&rubric.criteria[0].key, rubric.version.as_str());
    let mut out = Vec::new();
    // mal's key, claiming ann.
    // The forger reads the study id from the roster, as anyone can.
    let bound = block(study::binding(ws)).expect("the study id");
    let mut by_mal = Label::new("i0", "ann", c0, Some("fail"), Some("by mal"), v);
    study::sign_label(&mut by_mal, &mal.keypair(), &bound);
    // No signature at all, claiming bob.
    let unsigned = Label::new("i1", "bob", c0, Some("fail"), None, v);
    // ann's genuine row with its label changed (signature kept).
    let mut edited = genuine.clone();
    edited.label_id.push_str("-edited");
    edited.label = Some("fail".into());
    // ann's genuine row again, verbatim (a replay).
    let copied = genuine.clone();
    // A final label claiming the lead, signed by ann.
    let mut fin = Label::new("i1", FINAL, c0, Some("pass"), Some("because"), v);
    fin.adjudicator = Some("lena".into());
    study::sign_label(&mut fin, &ann.keypair(), &bound);
    for (l, kind, why) in [
        (
            &by_mal,
            "label",
            "claims reviewer ann but is not signed by ann's key (it is signed by key",
        ),
        (
            &unsigned,
            "label",
            "claims reviewer bob but is not signed by bob's key (it carries no signature)",
        ),
        (
            &edited,
            "label",
            "claims reviewer ann but is not signed by ann's key (its signature does not match its fields and this study's id)",
        ),
        (&copied, "label", "repeats the id of an earlier label"),
        (
            &fin,
            "final label",
            "claims adjudicator lena but is not signed by the lead's key",
        ),
    ] {
        out.push((
            l.label_id.clone(),
            format!("{kind} {} of item {} {why}", l.label_id, l.item_id),
        ));
    }
    let rows = [by_mal, unsigned, edited, copied, fin];
    block(study::labels_table(ws).append(&rows)).expect("second writer appends labels");
    // An assignment of i0 to ann and mal, signed by ann.
    let mut a = Assignment {
        item_id: "i0".into(),
        first: "ann".into(),
        second: "mal".into(),
        assigned_at: "now".into(),
        seq: 1,
        label_rows: Some(0),
        signer: None,
        signature: None,
        more_reviewers: None,
    };
    study::sign_assignment(&mut a, &ann.keypair(), &bound);
    block(study::assignments_table(ws).append(&[a])).expect("second writer appends assignments");
    out.push((
        "assignment".into(),
        "assignment of item i0 to ann and mal is not signed by the lead's key".into(),
    ));
    out
}

/// The whole forgery case on one workspace location, opened by `open` as a second
/// writer would.
fn forgeries_are_refused_and_named(
    env: &Env,
    ws: &str,
    envs: &[(&'static str, String)],
    open: impl Fn() -> Workspace,
) {
    let crit = criteria();
    let [lena, ann, bob, _carol, mal] = study_on(env, ws, envs);
    let mut a = all("i0", &crit, "pass");
    a.extend(
        ["pass", "fail", "pass", "fail"]
            .iter()
            .zip(&crit)
            .map(|(v, c)| ("i1", c.as_str(), *v)),
    );
    let mut b = all("i0", &crit, "pass");
    b.extend(
        ["pass", "pass", "fail", "fail"]
            .iter()
            .zip(&crit)
            .map(|(v, c)| ("i1", c.as_str(), *v)),
    );
    assert!(ann.import("ann", &a).0);
    assert!(bob.import("bob", &b).0);
    let before = lena.agree();
    assert_eq!(before["signed"], true);
    assert_eq!(
        before["refused"].as_array().map(Vec::len),
        Some(0),
        "{before}"
    );

    // mal cannot import labels in ann's name through raglab: nothing is written.
    let (ok, _, err) = mal.import("ann", &all("i0", &crit, "fail"));
    assert!(
        !ok && err.contains("claims reviewer ann, but your key"),
        "{err}"
    );
    let (genuine, _) = exported(&ann, &["--reviewer", "ann"]);
    let genuine = genuine
        .into_iter()
        .find(|l| l.reviewer == "ann")
        .expect("ann's label");
    // Nor label under ann's name: raglab takes a name only from the holder of its key.
    let (ok, _, err) = mal.run(&["labels", "stress", "--reviewer", "ann", "--count", "3"]);
    assert!(
        !ok && err.contains("you are not ann on this study's roster"),
        "{err}"
    );
    let tried = forge(&open(), &ann, &mal, &genuine);
    assert_eq!(tried.len(), 6);

    let after = lena.agree();
    assert_eq!(
        after["rows"], before["rows"],
        "the forgeries changed the agreement"
    );
    assert_eq!(
        after["changed_after_reveal"],
        before["changed_after_reveal"]
    );
    let refused: Vec<String> = after["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| r["why"].as_str().expect("why").to_string())
        .collect();
    for (_, why) in &tried {
        assert!(
            refused.iter().any(|r| r.starts_with(why.as_str())),
            "not refused as `{why}`: {refused:#?}"
        );
    }
    assert_eq!(refused.len(), tried.len(), "{refused:#?}");
    println!(
        "forged rows refused / tried: {} / {}",
        refused.len(),
        tried.len()
    );

    // The text of `agree` names them too, and exports leave them out and name them.
    let text = lena.ok(&["--role", "lead", "agree", "--bootstrap", "200"]);
    assert!(
        text.contains("6 stored rows not counted") && text.contains(&tried[0].1),
        "{text}"
    );
    let (rows, err) = exported(&lena, &["--role", "lead"]);
    assert_eq!(rows.len(), a.len() + b.len(), "only the genuine labels");
    assert!(
        rows.iter()
            .all(|l| l.signer.is_some() && l.signature.is_some())
    );
    assert!(
        err.contains("6 stored rows not counted") && err.contains(&tried[1].1),
        "{err}"
    );
    let (ok, _, err) = ann.run(&["--reviewer", "ann", "labels", "history", "i0"]);
    assert!(ok && err.contains(&tried[0].1), "{err}");

    // Identity is the key: a name or `--role lead` given by someone else is refused.
    let (ok, _, err) = ann.run(&["--role", "lead", "agree"]);
    assert!(
        !ok && err.contains("--role lead needs the study lead's key"),
        "{err}"
    );
    let (ok, _, err) = mal.run(&["--reviewer", "ann", "labels", "export"]);
    assert!(
        !ok && err.contains("you are not ann on this study's roster"),
        "{err}"
    );
    let (ok, _, err) = mal.run(&["--reviewer", "mal", "labels", "export"]);
    assert!(
        !ok && err.contains("mal is not on this study's roster"),
        "{err}"
    );
    let (ok, _, err) = ann.run(&["annotate", "assign", "--reviewers", "ann,bob"]);
    assert!(
        !ok && err.contains("annotate assign needs the study lead's key"),
        "{err}"
    );
    lena.ok(&["annotate", "assign", "--reviewers", "ann,bob"]);
}

#[test]
fn forged_rows_written_straight_into_the_datasets_are_refused_and_named() {
    let env = Env::new();
    let ws = env.workspace();
    let location = ws.to_str().expect("utf8").to_string();
    forgeries_are_refused_and_named(&env, &location, &[], || {
        Workspace::open(&ws).expect("second writer's workspace")
    });
}

#[cfg(feature = "s3")]
#[test]
fn forged_rows_on_s3_from_a_writer_with_the_bucket_credentials_are_refused() {
    use common::moto::Moto;
    let env = Env::new();
    let moto = Moto::start(env.dir.path(), "study");
    let ws = moto.uri("team/flu");
    let envs = moto.env();
    let options: std::collections::HashMap<String, String> = [
        ("aws_endpoint", format!("http://127.0.0.1:{}", moto.port)),
        ("aws_region", "us-east-1".into()),
        ("aws_access_key_id", "testing".into()),
        ("aws_secret_access_key", "testing".into()),
        ("allow_http", "true".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let local = env.dir.path().join("forger-cache");
    forgeries_are_refused_and_named(&env, &ws, &envs, || {
        Workspace::open_remote(&ws, &local, options.clone()).expect("remote workspace")
    });
}

/// Two studies with the same lead and reviewers, so the same keys. ann's genuine
/// signed labels of study A, appended to study B's labels by a second writer, are
/// refused and named in B; labels ann gave in B before its roster was founded
/// (signed without B's id) do not count once it is, which founding says; what she
/// labels after counts.
#[test]
fn rows_signed_for_another_study_or_before_its_roster_do_not_count() {
    let env = Env::new();
    let crit = criteria();
    let at = |n: &str| env.dir.path().join(n).to_str().expect("utf8").to_string();
    let (a_at, b_at) = (at("study-a"), at("study-b"));
    let [lena_a, ann_a, bob_a, ..] = study_on(&env, &a_at, &[]);
    assert!(ann_a.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob_a.import("bob", &all("i0", &crit, "pass")).0);

    let b = people(&env, &b_at, &[]);
    create_items(&env, &b[0]);
    assert!(b[1].import("ann", &all("i1", &crit, "fail")).0, "unsigned");
    let founded = found_roster(&b);
    assert!(
        founded.contains(&format!(
            "warning: the {} label rows written before the roster was founded",
            crit.len()
        )),
        "{founded}"
    );
    let id_of = |p: &Person| {
        let list = p.ok(&["study", "roster", "list"]);
        list.lines()
            .find_map(|l| l.strip_prefix("study id ").map(str::to_string))
            .unwrap_or_else(|| panic!("no study id in {list}"))
    };
    assert_ne!(id_of(&lena_a), id_of(&b[0]), "each study has its own id");

    // A second writer copies ann's genuine rows of A into B, verbatim.
    let (from, to) = (
        Workspace::open(&a_at).expect("study A"),
        Workspace::open(&b_at).expect("study B"),
    );
    let copied: Vec<Label> = block(study::labels_table(&from).read_all())
        .expect("A's labels")
        .into_iter()
        .filter(|l: &Label| l.reviewer == "ann")
        .collect();
    assert_eq!(copied.len(), crit.len());
    block(study::labels_table(&to).append(&copied)).expect("appended to B");
    assert!(
        b[1].import("ann", &all("i0", &crit, "fail")).0,
        "after founding"
    );
    assert!(b[2].import("bob", &all("i0", &crit, "pass")).0);

    let agree = b[0].agree();
    let refused: Vec<String> = agree["refused"]
        .as_array()
        .expect("refused")
        .iter()
        .map(|r| r["why"].as_str().expect("why").to_string())
        .collect();
    assert_eq!(refused.len(), 2 * crit.len(), "{refused:#?}");
    let (early, from_a): (Vec<&String>, Vec<&String>) =
        refused.iter().partition(|r| r.contains("of item i1 "));
    assert!(early.iter().all(|r| r.ends_with(
        "(it is signed without this study's id: written before the roster was founded, or taken from another study)"
    )), "{early:#?}");
    for l in &copied {
        let want = format!(
            "label {} of item i0 claims reviewer ann but is not signed by ann's key (its signature does not match its fields and this study's id)",
            l.label_id
        );
        assert!(from_a.contains(&&want), "{want} not in {from_a:#?}");
    }
    let (kept, _) = exported(&b[0], &["--role", "lead"]);
    assert_eq!(
        kept.len(),
        2 * crit.len(),
        "only the labels given after founding"
    );
    assert!(kept.iter().all(|l| l.item_id == "i0"
        && l.label.as_deref() == Some(if l.reviewer == "ann" { "fail" } else { "pass" })));
    // Study A is untouched.
    let a = lena_a.agree();
    assert_eq!(a["refused"].as_array().map(Vec::len), Some(0), "{a}");
}

/// A second writer rewrites the label log (`labels.lance` removed and written again
/// from the same genuine rows). ann's label given after the reveal, moved before it
/// to pass as blind, is refused and named, and the agreement is what it was without
/// it; a rewrite that drops one of bob's rows is named at the row that was written
/// after it.
#[test]
fn a_rewritten_label_log_is_named_and_a_label_moved_before_the_reveal_does_not_count() {
    let env = Env::new();
    let crit = criteria();
    let c = crit.len();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let [lena, ann, bob, _, _] = study_on(&env, &location, &[]);
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "pass")).0);
    let blind = lena.agree();
    // After the reveal ann changes her mind on the first criterion.
    assert!(ann.import("ann", &[("i0", crit[0].as_str(), "fail")]).0);
    let honest = lena.agree();
    assert_eq!(honest["labels_after_reveal"], 1, "{honest}");
    assert_eq!(honest["changed_after_reveal"], 1, "{honest}");

    let ws = Workspace::open(env.workspace()).expect("ws");
    let stored: Vec<Label> = block(study::labels_table(&ws).read_all()).expect("labels");
    assert_eq!(stored.len(), 2 * c + 1);
    let rewrite = |rows: Vec<Label>| {
        std::fs::remove_dir_all(ws.path(study::LABELS)).expect("labels removed");
        block(study::labels_table(&ws).append(&rows)).expect("labels rewritten");
    };
    let refused = |v: &serde_json::Value| -> Vec<String> {
        v["refused"]
            .as_array()
            .expect("refused")
            .iter()
            .map(|r| r["why"].as_str().expect("why").to_string())
            .collect()
    };
    let late = stored[2 * c].clone();

    // The late label moved to the front.
    let mut moved = vec![late.clone()];
    moved.extend_from_slice(&stored[..2 * c]);
    rewrite(moved);
    let after = lena.agree();
    assert_eq!(
        refused(&after),
        [format!(
            "label {} of item i0 was written when the label log held {} rows but is stored at row 0: rows before it were removed or it was moved forward (the log was rewritten)",
            late.label_id,
            2 * c
        )]
    );
    assert_eq!(
        after["rows"], blind["rows"],
        "the moved label does not count"
    );
    assert_eq!(after["labels_after_reveal"], 0, "{after}");

    // bob's first row dropped: the late label, written after it, names the gap.
    let mut dropped = stored.clone();
    dropped.remove(c);
    rewrite(dropped);
    let after = lena.agree();
    let why = refused(&after);
    assert_eq!(why.len(), 1, "{why:#?}");
    assert!(
        why[0].starts_with(&format!(
            "label {} of item i0 was written when the label log held {} rows but is stored at row {}",
            late.label_id,
            2 * c,
            2 * c - 1
        )),
        "{why:#?}"
    );
}

/// ann's machine is an hour behind: her change after the reveal carries a clock
/// older than every label of the study, and still counts as after the reveal.
#[test]
fn a_label_with_its_clock_set_an_hour_back_cannot_relabel_blind() {
    let env = Env::new();
    let crit = criteria();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let [lena, ann, bob, _, _] = study_on(&env, &location, &[]);
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "pass")).0);
    let (stored, _) = exported(&lena, &["--role", "lead"]);
    let oldest = stored.iter().map(|l| l.seq).min().expect("labels");
    let rubric = default_rubric();
    let mut late = Label::new(
        "i0",
        "ann",
        &crit[0],
        Some("fail"),
        Some("changed"),
        &rubric.version,
    );
    late.seq = oldest - 3_600_000_000_000;
    late.timestamp = stored[0].timestamp.clone();
    let ws = Workspace::open(env.workspace()).expect("ws");
    let bound = block(study::binding(&ws)).expect("the study id");
    study::sign_label(&mut late, &ann.keypair(), &bound);
    block(study::save_labels(&ws, &rubric, &items(), &[late])).expect("saved");
    // By its clock the label would be the oldest of all, so given blind.
    let (stored, _) = exported(&lena, &["--role", "lead"]);
    assert_eq!(
        stored.last().map(|l| l.seq),
        stored.iter().map(|l| l.seq).min()
    );
    let a = lena.agree();
    assert_eq!(a["refused"].as_array().map(Vec::len), Some(0), "{a}");
    assert_eq!(a["labels_after_reveal"], 1, "{a}");
    assert_eq!(a["changed_after_reveal"], 1, "{a}");
    let first = final_row(&lena, &crit[0]);
    assert_eq!(first["source"], "agreed", "{first}");
    assert_eq!(first["label"], "pass", "the blind label counts: {first}");
}

/// The lead's `labels export --final` row of `criterion` (item i0).
fn final_row(lena: &Person, criterion: &str) -> serde_json::Value {
    lena.ok(&["--role", "lead", "labels", "export", "--final"])
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("final row"))
        .find(|f| f["criterion"] == criterion)
        .expect("final row of the criterion")
}

/// i0 assigned to ann and bob, revealed to them, then assigned to ann and carol: the
/// reveal stays where it happened (bob still sees ann's labels, ann's change is after
/// the reveal); carol, who has not submitted, sees nothing of ann's.
#[test]
fn a_reassignment_after_reveal_does_not_move_it() {
    let env = Env::new();
    let crit = criteria();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let [lena, ann, bob, carol, _] = study_on(&env, &location, &[]);
    lena.ok(&["annotate", "assign", "--reviewers", "ann,bob"]);
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "fail")).0);
    lena.ok(&["annotate", "assign", "--reviewers", "ann,carol"]);
    assert!(ann.import("ann", &[("i0", crit[0].as_str(), "fail")]).0);
    let a = lena.agree();
    assert_eq!(a["changed_after_reveal"], 1, "{a}");
    let (seen, err) = exported(&bob, &["--reviewer", "bob"]);
    let of_ann = seen.iter().filter(|l| l.reviewer == "ann").count();
    assert_eq!(of_ann, crit.len() + 1, "i0 stays revealed to bob: {err}");
    let (seen, _) = exported(&carol, &["--reviewer", "carol"]);
    assert!(seen.iter().all(|l| l.reviewer == "carol"), "carol is blind");
    // Once carol has submitted i0 too, the item (revealed already) is visible to her.
    assert!(carol.import("carol", &all("i0", &crit, "pass")).0);
    let (seen, _) = exported(&carol, &["--reviewer", "carol"]);
    assert!(seen.iter().any(|l| l.reviewer == "ann"));
}

/// The key is made on first use, 0600, and the same key is printed every time.
#[test]
fn the_signing_key_is_made_once_and_kept_0600() {
    let env = Env::new();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let p = Person::new(&env, "ann", &location, &[]);
    let (ok, key, err) = p.run(&["study", "key"]);
    assert!(ok, "{err}");
    let key = key.trim();
    assert_eq!(key.len(), 64);
    assert!(key.chars().all(|c| c.is_ascii_hexdigit()));
    let file = p.home.join("config").join(raglab::store::keys::KEY_FILE);
    assert!(err.contains(file.to_str().expect("utf8")), "{err}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&file)
            .expect("key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "mode {mode:o}");
    }
    assert_eq!(p.key(), key);
    assert_eq!(p.keypair().public_hex(), key);
}

/// The lead's TUI started with `--role lead` but no `--reviewer` adjudicates under the
/// placeholder name `lead`: the adjudication is stored under the roster's lead (lena),
/// so it counts on reload instead of being refused as a claim by someone else.
#[test]
fn an_adjudication_saved_without_the_leads_name_counts_as_the_leads() {
    use raglab::config::{Config, Paths};
    let env = Env::new();
    let crit = criteria();
    let location = env.workspace().to_str().expect("utf8").to_string();
    let [lena, ann, bob, _, _] = study_on(&env, &location, &[]);
    assert!(ann.import("ann", &all("i0", &crit, "pass")).0);
    assert!(bob.import("bob", &all("i0", &crit, "fail")).0);
    let ctx = raglab::service::Context::with(
        Paths {
            config_dir: lena.home.join("config"),
            data_dir: lena.home.join("data"),
        },
        Config::default(),
        &env.workspace(),
    )
    .expect("lena's context");
    let rubric = default_rubric();
    // What the Agreement pane hands to the save job when it knows no name.
    let decided = study::final_label(&rubric, "lead", "i0", &crit[0], "pass", "ann is right");
    block(study::save_label(&ctx, &rubric, &items(), &decided)).expect("saved");
    let a = lena.agree();
    assert_eq!(a["refused"].as_array().map(Vec::len), Some(0), "{a}");
    let first = final_row(&lena, &crit[0]);
    assert_eq!(first["source"], "adjudicated", "{first}");
    assert_eq!(first["label"], "pass", "{first}");
    assert_eq!(first["adjudicator"], "lena", "{first}");
}
