//! Embedding checkpoints of `raglab index` (real lance, the real MiniLM GGUF, the
//! sample guidance): a run killed after some checkpoints resumes where it stopped,
//! and after `index` the vectors dataset keeps one version whose bytes on disk stay
//! within twice its own data.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{Env, sample_guidance};

/// Bytes of every file under `dir`.
fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| {
            let e = e.expect("entry");
            let meta = e.metadata().expect("metadata");
            if meta.is_dir() {
                dir_bytes(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// The one vectors dataset of the workspace (`embeddings/MODEL.lance`), once present.
fn vectors_dir(ws: &Path) -> Option<PathBuf> {
    std::fs::read_dir(ws.join("embeddings"))
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "lance"))
}

/// Committed versions of a lance dataset (one manifest per version).
fn versions(dataset: &Path) -> usize {
    std::fs::read_dir(dataset.join("_versions"))
        .map(|d| {
            d.filter_map(Result::ok)
                .filter(|e| e.path().extension().is_some_and(|x| x == "manifest"))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn killed_index_resumes_and_leaves_one_compact_version() {
    let env = Env::new();
    let guidance = sample_guidance();
    env.ok(&["ingest", guidance.to_str().expect("utf8")]);
    let ws = env.workspace();

    // Checkpoints every 32 chunks; killed (SIGKILL) once two have been committed.
    let mut child = env
        .cmd()
        .args(["index", "--checkpoint-every", "32", "--json"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn raglab index");
    let deadline = Instant::now() + Duration::from_secs(600);
    while vectors_dir(&ws).is_none_or(|d| versions(&d) < 2) {
        assert!(
            child.try_wait().expect("poll").is_none(),
            "index ended before its second checkpoint: the test cannot interrupt it"
        );
        assert!(Instant::now() < deadline, "no checkpoint within 10 minutes");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        child.try_wait().expect("poll").is_none(),
        "index finished before it could be killed"
    );
    child.kill().expect("kill");
    child.wait().expect("reap");

    let resumed = env.json(&["index", "--json"]);
    let chunks = resumed["chunks"].as_u64().expect("chunks");
    let embedded = resumed["embedded"].as_u64().expect("embedded");
    assert!(chunks > 100, "the sample has {chunks} chunks");
    assert!(
        embedded + 64 <= chunks,
        "the resumed run embedded {embedded} of {chunks}: the two checkpoints were not kept"
    );
    assert!(
        embedded > 0,
        "killed before the end, so some chunks were left"
    );

    // Current and whole: nothing left to embed, every chunk searchable densely.
    let again = env.json(&["index", "--json"]);
    assert_eq!(again["embedded"], 0, "{again}");
    let hits = env.json(&[
        "search",
        "--method",
        "dense",
        "--k",
        "3",
        "--json",
        "rabies vaccine",
    ]);
    assert_eq!(hits["results"].as_array().map(Vec::len), Some(3), "{hits}");

    // One version; its bytes at most twice the vectors' own (chunks x 384 f32).
    let dataset = vectors_dir(&ws).expect("vectors dataset");
    assert_eq!(versions(&dataset), 1, "old versions left in {dataset:?}");
    let data = chunks * 384 * 4;
    let on_disk = dir_bytes(&dataset);
    assert!(
        on_disk <= 2 * data,
        "{on_disk} bytes on disk for {data} bytes of vectors"
    );
    eprintln!(
        "chunks {chunks}, resumed run embedded {embedded}; {on_disk} bytes on disk for {data} bytes of vectors ({:.2}x)",
        on_disk as f64 / data as f64
    );
}
