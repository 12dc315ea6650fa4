//! `scripts/ray_eval.py` on a local Ray cluster against an `s3://` workspace on a real
//! S3-compatible server (moto): four shards of `eval retrieval`, run as Ray tasks and
//! merged, give exactly the one-process report.
//!
//! Ray binds to the machine's outward address unless it has none, so the experiment
//! runs in its own network namespace with only loopback up (`unshare -rn`, then
//! `ip link set lo up`): the outer test re-runs this test binary there, where the
//! inner test starts moto, Ray and raglab, all on 127.0.0.1.
#![cfg(feature = "s3")]

use crate::common;

use std::process::Command;
use std::time::Instant;

use common::moto::Moto;
use common::{models_dir, repo, sample_guidance};
use serde_json::Value;

const INNER: &str = "RAGLAB_TEST_IN_NETNS";

#[test]
fn four_ray_shards_on_s3_give_exactly_the_one_process_report() {
    let exe = std::env::current_exe().expect("test binary");
    // The inner test's full name, as the harness knows it (this module's path without
    // the crate's name), so a move of this file keeps it found.
    let inner = format!(
        "{}::inner_ray_eval_in_a_loopback_namespace",
        module_path!().split_once("::").map_or("", |(_, m)| m)
    );
    let out = Command::new("unshare")
        .args(["-rn", "sh", "-c", "ip link set lo up && exec \"$0\" \"$@\""])
        .arg(exe)
        .args(["--exact", inner.as_str(), "--ignored", "--nocapture"])
        .env(INNER, "1")
        .output()
        .expect("run unshare (util-linux)");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{text}");
    assert!(out.status.success(), "the namespaced run failed");
    assert!(
        text.contains("1 passed"),
        "the inner test did not run and pass: {text}"
    );
}

/// The report without what legitimately differs between two runs (wall times).
fn comparable(mut v: Value) -> Value {
    let o = v.as_object_mut().expect("report object");
    o.remove("seconds");
    o.remove("per_query_file");
    v
}

#[test]
#[ignore = "run by four_ray_shards_on_s3_give_exactly_the_one_process_report inside its namespace"]
fn inner_ray_eval_in_a_loopback_namespace() {
    assert!(
        std::env::var_os(INNER).is_some(),
        "run through four_ray_shards_on_s3_give_exactly_the_one_process_report"
    );
    let dir = tempfile::tempdir().expect("tmp");
    let moto = Moto::start(dir.path(), "evals");
    let ws = moto.uri("sample");
    let raglab_path = crate::common::raglab_bin();
    let raglab = raglab_path.to_str().expect("utf8 path");
    let cmd = |program: &str| {
        let mut c = Command::new(program);
        c.env("RAGLAB_CONFIG_DIR", dir.path().join("config"))
            .env("RAGLAB_DATA_DIR", dir.path().join("data"))
            .env("RAGLAB_MODELS_DIR", models_dir())
            .env_remove("RAGLAB_WORKSPACE")
            .env("RAY_USAGE_STATS_ENABLED", "0")
            .envs(moto.env());
        c
    };
    let run = |mut c: Command, what: &str| -> Vec<u8> {
        let out = c.output().expect(what);
        assert!(
            out.status.success(),
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let mut ingest = cmd(raglab);
    ingest
        .args(["--workspace", &ws, "ingest"])
        .arg(sample_guidance())
        .arg("--index");
    run(ingest, "ingest --index");

    let q = repo().join("sample-data/questions.jsonl");
    let eval: Vec<String> = [
        "--workspace",
        &ws,
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf,dense,hybrid",
        "--sparse",
        "bm25,tfidf",
        "--k",
        "1,5,10",
        "--threads",
        "1",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();

    let t = Instant::now();
    let mut one = cmd(raglab);
    one.args(["eval", "retrieval"]).args(&eval).arg("--json");
    let one: Value = serde_json::from_slice(&run(one, "one-process eval")).expect("json");
    let one_s = t.elapsed().as_secs_f64();

    let python = repo().join("tests/bin/pyenv/bin/python");
    assert!(
        python.exists(),
        "{} missing: run scripts/setup.sh --test (it installs ray and links the tool environment there)",
        python.display()
    );
    let timings = dir.path().join("ray-timings.json");
    let t = Instant::now();
    let mut ray = cmd(python.to_str().expect("utf8"));
    ray.arg(repo().join("scripts/ray_eval.py"))
        .args([
            "--raglab",
            raglab,
            "--shards",
            "4",
            "--batch",
            "ray4",
            "--timings",
        ])
        .arg(&timings)
        .arg("--")
        .args(&eval);
    let merged: Value = serde_json::from_slice(&run(ray, "ray_eval.py")).expect("json");
    let ray_s = t.elapsed().as_secs_f64();
    let timings: Value =
        serde_json::from_slice(&std::fs::read(&timings).expect("timings")).expect("json");

    assert_eq!(comparable(merged.clone()), comparable(one.clone()));
    assert!(one["evaluated"].as_u64().is_some_and(|n| n > 200), "{one}");
    // The four shards' lists are in the bucket, stored by the Ray tasks.
    assert!(
        !moto.keys("sample/eval_lists.lance/").is_empty(),
        "no shard lists in the bucket"
    );
    eprintln!(
        "one process: {one_s:.1} s; ray_eval.py with 4 shards: {ray_s:.1} s in all ({timings})"
    );
}
