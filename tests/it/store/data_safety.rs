//! Nothing lost: label saves never block the runtime while another process holds the
//! writer lock, quitting waits for saves in flight, and ingest refuses a huge file
//! without reading it.

use crate::common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::Env;
use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::config::{Config, Paths};
use raglab::service::Context;
use raglab::service::base::default_rubric;
use raglab::service::study;
use raglab::service::study::{LABELS, Label, labels_table};
use raglab::tui::app::{Pane, QuitStep};
use raglab::tui::jobs::Jobs;
use raglab::tui::keymap::Keymap;

const ITEMS: usize = 4;

/// A workspace with `ITEMS` annotation items, created by the real binary.
fn with_items() -> Env {
    let env = Env::new();
    let f = env.dir.path().join("items.jsonl");
    let rows: String = (0..ITEMS)
        .map(|i| {
            format!("{{\"item_id\": \"i{i}\", \"question\": \"Q{i}?\", \"answer\": \"A{i}\"}}\n")
        })
        .collect();
    std::fs::write(&f, rows).expect("write items");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        f.to_str().expect("utf8"),
    ]);
    env
}

fn context(env: &Env) -> Context {
    let paths = Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    Context::with(paths, Config::default(), &env.workspace()).expect("context")
}

/// Another process holds `lock` (util-linux `flock`) for `seconds`; returns once it
/// holds it.
fn hold_lock_elsewhere(lock: &Path, seconds: u32) -> Child {
    std::fs::create_dir_all(lock.parent().expect("parent")).expect("lock dir");
    let child = Command::new("flock")
        .arg(lock)
        .args(["sleep", &seconds.to_string()])
        .spawn()
        .expect("spawn flock (util-linux)");
    let probe = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(lock)
        .expect("open lock");
    let start = Instant::now();
    while probe.try_lock().is_ok() {
        probe.unlock().expect("unlock");
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "flock never took the lock"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

fn stored_labels(rt: &tokio::runtime::Runtime, ctx: &Context) -> Vec<Label> {
    rt.block_on(labels_table(&ctx.workspace).read_all())
        .expect("labels")
}

/// Five label saves in flight on a 2-worker runtime while another process holds the
/// labels' writer lock and a third appends labels of its own: the runtime keeps
/// running other tasks (a heartbeat ticks), and once the lock is free every save
/// finishes within a bound and every label of both processes is stored.
#[test]
fn saves_wait_for_the_lock_without_blocking_the_runtime() {
    let env = with_items();
    let ctx = Arc::new(context(&env));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let rubric = default_rubric();
    let items = rt.block_on(study::load_study(&ctx)).expect("study").items;
    let mut holder = hold_lock_elsewhere(&ctx.workspace.lock_path(LABELS), 2);
    let held_at = Instant::now();
    // Another process appends while the lock is held (it waits too, then commits).
    let other = env
        .cmd()
        .args(["labels", "stress", "--reviewer", "bob", "--count", "6"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn stress");
    let saves: Vec<_> = (0..5)
        .map(|n| {
            let (ctx, rubric, items) = (Arc::clone(&ctx), rubric.clone(), items.clone());
            rt.spawn(async move {
                let c = &rubric.criteria[n % rubric.criteria.len()];
                let l = Label::new(
                    &items[n % items.len()].item_id,
                    "alice",
                    &c.key,
                    Some("pass"),
                    None,
                    &rubric.version,
                );
                study::save_label(&ctx, &rubric, &items, &l).await
            })
        })
        .collect();
    let ticks = Arc::new(AtomicUsize::new(0));
    let heartbeat = {
        let ticks = Arc::clone(&ticks);
        rt.spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(20)).await;
                ticks.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    std::thread::sleep(Duration::from_millis(1000));
    let beats = ticks.load(Ordering::Relaxed);
    assert!(
        beats >= 10,
        "the runtime's workers were blocked while saves waited: {beats} heartbeats in 1 s"
    );
    assert!(
        saves.iter().all(|s| !s.is_finished()),
        "a save finished while another process held the lock"
    );
    holder.wait().expect("flock exits");
    let done = rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(30), futures::future::join_all(saves)).await
    });
    let done = done.expect("saves did not finish within 30 s of the lock's release");
    for d in done {
        d.expect("task").expect("save");
    }
    heartbeat.abort();
    let out = other.wait_with_output().expect("stress");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(held_at.elapsed() >= Duration::from_secs(2));
    let stored = stored_labels(&rt, &ctx);
    let by = |who: &str| stored.iter().filter(|l| l.reviewer == who).count();
    assert_eq!((by("alice"), by("bob")), (5, 6), "labels lost");
}

/// `q` with label saves in flight: the status bar says how many are left, quitting
/// waits for them, and every one is stored.
#[test]
fn quitting_waits_for_saves_in_flight() {
    let env = with_items();
    let ctx = context(&env);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut holder = hold_lock_elsewhere(&ctx.workspace.lock_path(LABELS), 1);
    let opts = raglab::tui::TuiOptions {
        reviewer: Some("alice".into()),
        ..Default::default()
    };
    rt.block_on(async {
        let mut app = raglab::tui::build_app(&ctx, &opts, Keymap::default_keymap())
            .await
            .expect("app");
        let (mut jobs, mut rx) = Jobs::new(&ctx);
        let study = study::load_study(&ctx).await.expect("study");
        app.annotate.load(
            study.items,
            study.labels,
            raglab::service::study::pairs_of(&study.assignments),
        );
        app.pane = Pane::Annotate;
        for c in "pfp".chars() {
            if let Some(e) = app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE)) {
                jobs.run(&mut app, e);
            }
        }
        app.handle_key(KeyEvent::new(KeyCode::Char('q'), KeyModifiers::NONE));
        assert!(app.should_quit);
        let limit = Duration::from_secs(20);
        let step = app.quit_step(Duration::ZERO, limit);
        assert!(
            matches!(&step, QuitStep::Wait(m) if m.contains("3 label saves")),
            "{step:?}"
        );
        let screen = common::screen(&app, 150, 30);
        assert!(
            screen.contains("quitting: waiting for 3 label saves"),
            "{screen}"
        );
        let started = Instant::now();
        while app.quit_step(started.elapsed(), limit) != QuitStep::Done {
            if let Ok(Some(msg)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await
            {
                jobs.apply(&mut app, msg);
            }
        }
        assert!(
            app.annotate.saves_in_flight() == 0,
            "quit before the saves were in"
        );
        assert_eq!(app.unsaved_report(), None);
    });
    holder.wait().expect("flock exits");
    let stored = stored_labels(&rt, &ctx);
    let got: Vec<(&str, Option<&str>)> = stored
        .iter()
        .map(|l| (l.criterion.as_str(), l.label.as_deref()))
        .collect();
    assert_eq!(got.len(), 3, "{got:?}");
    for want in [
        ("faithfulness", Some("pass")),
        ("completeness", Some("fail")),
        ("factual_consistency", Some("pass")),
    ] {
        assert!(got.contains(&want), "{want:?} not stored: {got:?}");
    }
}

/// Peak resident memory of this process's waited-for children, in MB (the kernel's
/// own account, through `getrusage`: the one unsafe call of the test suite).
#[allow(unsafe_code)]
fn children_peak_mb() -> f64 {
    // SAFETY: getrusage only writes the struct it is given.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut usage) };
    assert_eq!(rc, 0, "getrusage");
    usage.ru_maxrss as f64 / 1024.0 // kilobytes on Linux
}

/// A 5 GB file (sparse: it takes no disk) in an ingested folder is refused by its
/// size, before it is read: the whole ingest stays under 200 MB of memory and the
/// other documents still ingest.
#[test]
fn a_huge_file_is_refused_without_being_read() {
    let env = Env::new();
    let docs = env.dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("docs");
    std::fs::write(docs.join("ok.md"), "# Measles\n\nVaccinate children.\n").expect("md");
    let huge = std::fs::File::create(docs.join("huge.md")).expect("huge");
    huge.set_len(5 << 30).expect("sparse 5 GB");
    let out = env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let peak = children_peak_mb();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("huge.md") && text.contains("file too large (5368709120 bytes"),
        "{text}"
    );
    assert!(text.contains("ingested 1 documents"), "{text}");
    assert!(peak < 200.0, "ingest peaked at {peak:.0} MB");
}

/// Target ids that are not in the corpus are named (count and first ids) by
/// `eval retrieval`, in its text and JSON output, instead of silently counting as
/// failures.
#[test]
fn missing_target_ids_are_named() {
    let env = Env::new();
    let docs = env.dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("docs");
    std::fs::write(
        docs.join("measles.md"),
        "# Measles\n\n## Vaccination\n\nTwo doses of MMR vaccine protect children.\n\n## Symptoms\n\nFever, cough and a rash.\n",
    )
    .expect("md");
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let chunks = env.json(&["corpus", "list", "--json"])["items"].take();
    let first = chunks[0]["id"].as_str().expect("chunk id").to_string();
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        format!(
            "{{\"id\": \"a\", \"text\": \"MMR vaccine doses\", \"relevant\": [\"{first}\"]}}\n{{\"id\": \"b\", \"text\": \"rash and fever\", \"relevant\": [\"gone-1\", \"{first}\", \"gone-2\"]}}\n{{\"id\": \"c\", \"text\": \"cough\", \"relevant\": [\"gone-1\"]}}\n"
        ),
    )
    .expect("questions");
    let args = [
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "bm25",
    ];
    let out = env.ok(&args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: 2 target chunk ids of 2 questions are not in the corpus (gone-1, gone-2); they count as not retrieved"),
        "{err}"
    );
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let rep = env.json(&json_args);
    assert_eq!(rep["missing_targets"]["count"], 2);
    assert_eq!(rep["missing_targets"]["questions"], 2);
}

/// A commit cut off by a power cut can leave the newest manifest empty (its bytes
/// never reached the disk). The table still opens, at the version before: its rows
/// intact, the empty manifest set aside (renamed, not deleted), and the next append
/// commits on top of what was durable.
#[test]
fn an_empty_newest_manifest_falls_back_to_the_version_before() {
    use raglab::core::citation::CitationRecord;
    let env = Env::new();
    let ctx = context(&env);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let table = raglab::service::answer::citations(&ctx.workspace);
    let rec = |id: &str| CitationRecord {
        answer_id: id.into(),
        run: "r".into(),
        judge_model: "j".into(),
        ..CitationRecord::default()
    };
    let ids = |rows: Vec<CitationRecord>| -> Vec<String> {
        rows.into_iter().map(|r| r.answer_id).collect()
    };
    rt.block_on(table.append(&[rec("a1")]))
        .expect("first commit");
    rt.block_on(table.append(&[rec("a2")]))
        .expect("second commit");
    let versions = ctx
        .workspace
        .path(raglab::service::answer::CITATIONS)
        .join("_versions");
    let manifests: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(&versions)
        .expect("versions")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "manifest"))
        .filter_map(|p| Some((p.file_stem()?.to_str()?.parse().ok()?, p)))
        .collect();
    assert!(manifests.len() >= 2, "{manifests:?}");
    // Lance names manifests by version, or by u64::MAX - version (its V2 naming).
    let inverted = manifests.iter().any(|(n, _)| *n > u64::MAX / 2);
    let newest = if inverted {
        manifests.iter().min_by_key(|(n, _)| *n)
    } else {
        manifests.iter().max_by_key(|(n, _)| *n)
    }
    .expect("a manifest")
    .1
    .clone();
    std::fs::File::create(&newest).expect("truncate the newest manifest");
    let rows: Vec<CitationRecord> = rt
        .block_on(table.read_all())
        .expect("opens at the version before");
    assert_eq!(ids(rows), vec!["a1".to_string()]);
    assert!(!newest.exists());
    assert!(
        newest.with_extension("manifest.empty").exists(),
        "set aside, not deleted"
    );
    rt.block_on(table.append(&[rec("a3")]))
        .expect("an append after the fallback");
    let rows: Vec<CitationRecord> = rt.block_on(table.read_all()).expect("read");
    assert_eq!(ids(rows), vec!["a1".to_string(), "a3".to_string()]);
}
