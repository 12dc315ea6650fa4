//! Shared workspaces on object storage (`--workspace s3://bucket/prefix`), against a
//! real S3-compatible server on 127.0.0.1 (moto): concurrent writers from two
//! processes lose nothing, every dataset lives in the bucket, and the BM25 index is
//! rebuilt locally from the chunks there.
#![cfg(feature = "s3")]

use crate::common;

use std::collections::HashSet;
use std::process::{Command, Stdio};

use common::moto::Moto;
use common::{Env, models_dir, two_pages};

/// The real binary on an `s3://` workspace, with its own local folders (`machine`
/// stands for one workstation: its config, data and derived-data cache).
fn on_s3(env: &Env, moto: &Moto, machine: &str, ws: &str) -> Command {
    let mut c = Command::new(crate::common::raglab_bin());
    let home = env.dir.path().join(machine);
    c.env("RAGLAB_CONFIG_DIR", home.join("config"))
        .env("RAGLAB_DATA_DIR", home.join("data"))
        .env("RAGLAB_MODELS_DIR", models_dir())
        .env_remove("RAGLAB_WORKSPACE")
        .envs(moto.env())
        .args(["--workspace", ws]);
    c
}

fn ok(mut c: Command, what: &str) -> std::process::Output {
    let out = c.output().expect("spawn raglab");
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    out
}

const PER_REVIEWER: usize = 100;

/// Two reviewers on two "machines" (separate local folders, no shared file lock)
/// commit 100 labels each at the same time into one s3:// workspace: all 200 are
/// stored, each once, and the dataset's files are in the bucket, none on disk.
#[test]
fn two_processes_commit_100_labels_each_and_all_200_are_there() {
    let env = Env::new();
    let moto = Moto::start(env.dir.path(), "study");
    let ws = moto.uri("team/flu");
    let items = env.dir.path().join("items.jsonl");
    let rows: String = (0..8)
        .map(|i| {
            format!("{{\"item_id\": \"i{i}\", \"question\": \"Q{i}?\", \"answer\": \"A{i}\"}}\n")
        })
        .collect();
    std::fs::write(&items, rows).expect("write items");
    let mut create = on_s3(&env, &moto, "lead", &ws);
    create.args([
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
    ok(create, "annotate create");

    let stress = |machine: &str, reviewer: &str| {
        let mut c = on_s3(&env, &moto, machine, &ws);
        c.args(["labels", "stress", "--reviewer", reviewer, "--count"])
            .arg(PER_REVIEWER.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c.spawn().expect("spawn stress")
    };
    let a = stress("alice-pc", "alice");
    let b = stress("bob-pc", "bob");
    for (who, child) in [("alice", a), ("bob", b)] {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{who}'s labels failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    let mut export = on_s3(&env, &moto, "lead", &ws);
    export.args(["--role", "lead", "labels", "export", "--format", "jsonl"]);
    let out = ok(export, "labels export");
    let labels: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("label json"))
        .collect();
    let by = |who: &str| labels.iter().filter(|l| l["reviewer"] == who).count();
    assert_eq!(
        (by("alice"), by("bob")),
        (PER_REVIEWER, PER_REVIEWER),
        "labels lost"
    );
    let ids: HashSet<&str> = labels
        .iter()
        .map(|l| l["label_id"].as_str().expect("label_id"))
        .collect();
    assert_eq!(ids.len(), 2 * PER_REVIEWER, "a label stored twice");

    // Every commit is a lance version in the bucket: 200 label commits (plus the
    // ones creating the dataset) are there, and no machine holds a labels dataset.
    let keys = moto.keys("team/flu/labels.lance/_versions/");
    assert!(
        keys.len() >= 2 * PER_REVIEWER,
        "{} versions of labels.lance in the bucket",
        keys.len()
    );
    for machine in ["lead", "alice-pc", "bob-pc"] {
        let local = walk(&env.dir.path().join(machine));
        assert!(
            !local.iter().any(|p| p.contains("labels.lance")),
            "{machine} keeps a labels dataset locally: {local:?}"
        );
    }
}

/// Ingest on one machine, search on another: the chunks come from the bucket and the
/// second machine builds its own BM25 index from them (derived data, local).
#[test]
fn a_second_machine_searches_with_bm25_rebuilt_from_the_chunks_in_the_bucket() {
    let env = Env::new();
    let moto = Moto::start(env.dir.path(), "corpus");
    let ws = moto.uri("guidance");
    let docs = two_pages(env.dir.path());
    let mut ingest = on_s3(&env, &moto, "one", &ws);
    ingest.args(["ingest", docs.to_str().expect("utf8")]);
    ok(ingest, "ingest");
    assert!(
        moto.keys("guidance/chunks.lance/").len() >= 3,
        "the chunks are not in the bucket"
    );

    let search = |machine: &str, query: &str| -> serde_json::Value {
        let mut c = on_s3(&env, &moto, machine, &ws);
        c.args(["search", query, "--method", "bm25", "--json"]);
        serde_json::from_slice(&ok(c, "search").stdout).expect("search json")
    };
    let top = |v: &serde_json::Value| v["results"][0]["chunk_id"].as_str().map(str::to_string);
    let rabies = search("two", "bats rabies vaccinate");
    let flu = search("two", "flu vaccine every year");
    let (r, f) = (top(&rabies), top(&flu));
    assert!(
        r.as_deref().is_some_and(|id| id.contains("rabies")),
        "rabies query ranked {r:?} first: {rabies}"
    );
    assert!(
        f.as_deref().is_some_and(|id| id.contains("flu")),
        "flu query ranked {f:?} first: {flu}"
    );
    // The index machine "two" searched with is its own, built from the bucket's chunks.
    let local = walk(&env.dir.path().join("two"));
    assert!(
        local
            .iter()
            .any(|p| p.contains("bm25") && p.ends_with("meta.json")),
        "no local BM25 index on machine two: {local:?}"
    );
    assert!(!local.iter().any(|p| p.contains("chunks.lance")));
}

fn walk(dir: &std::path::Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p.display().to_string());
        }
    }
    out
}

/// Two machines ingest different documents into one s3:// workspace at the same
/// time, five rounds: every document of both is there after each round. An ingest
/// rewrites the chunks dataset whole; a rewrite is committed only over the version it
/// read, so the later writer redoes its update instead of dropping the other's.
#[test]
fn two_machines_ingesting_at_once_lose_no_document() {
    let env = Env::new();
    let moto = Moto::start(env.dir.path(), "ingest");
    let ws = moto.uri("team/corpus");
    let mut expected = HashSet::new();
    for round in 0..5 {
        let children: Vec<_> = ["alice-pc", "bob-pc"]
            .iter()
            .map(|machine| {
                let dir = env.dir.path().join(format!("{machine}-{round}"));
                std::fs::create_dir_all(&dir).expect("mkdir");
                for n in 0..3 {
                    let name = format!("{machine}-r{round}-d{n}");
                    std::fs::write(
                        dir.join(format!("{name}.md")),
                        format!("# {name}\n\n## Body\n\nGuidance text of {name}.\n"),
                    )
                    .expect("write");
                    expected.insert(format!("{name}#body"));
                }
                let mut c = on_s3(&env, &moto, machine, &ws);
                c.args(["ingest", dir.to_str().expect("utf8")])
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped());
                c.spawn().expect("spawn ingest")
            })
            .collect();
        for child in children {
            let out = child.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "ingest failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let mut list = on_s3(&env, &moto, "lead", &ws);
        list.args(["corpus", "list", "--json"]);
        let listed: serde_json::Value =
            serde_json::from_slice(&ok(list, "corpus list").stdout).expect("json");
        let ids: HashSet<String> = listed["items"]
            .as_array()
            .expect("list")
            .iter()
            .filter_map(|c| c["id"].as_str().map(str::to_string))
            .collect();
        let lost: Vec<_> = expected.difference(&ids).collect();
        assert!(lost.is_empty(), "round {round}: documents lost: {lost:?}");
        assert_eq!(ids.len(), expected.len(), "round {round}: no duplicates");
    }
}
