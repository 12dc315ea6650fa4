//! A folder of deliberately bad inputs: each is reported with its reason, the rest
//! still ingests, and a killed ingest never leaves a dataset later commands trip over.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use common::{Env, sample_guidance};

fn reason_for<'a>(skipped: &'a [serde_json::Value], needle: &str) -> &'a str {
    skipped
        .iter()
        .find(|s| s["path"].as_str().is_some_and(|p| p.contains(needle)))
        .and_then(|s| s["reason"].as_str())
        .unwrap_or_else(|| panic!("{needle} not reported as skipped: {skipped:?}"))
}

#[test]
fn bad_files_are_reported_and_the_rest_ingests() {
    let env = Env::new();
    let dir = env.dir.path().join("bad");
    std::fs::create_dir_all(dir.join("sub")).expect("mkdir");
    let w = |name: &str, bytes: &[u8]| std::fs::write(dir.join(name), bytes).expect("write");
    w("good.md", b"# Good\n\n## Overview\n\nReal text here.\n");
    w("sub/also-good.txt", b"plain text guidance");
    w("empty.md", b"");
    w("blank.md", b"  \n\n\t\n");
    w("binary.md", b"PK\x03\x04\x00\x00binary");
    w("latin1.txt", b"caf\xe9 au lait");
    let mut long = b"start\n".to_vec();
    long.extend(std::iter::repeat_n(b'x', 2 << 20));
    w("minified.txt", &long);
    w("only-headers.md", b"# Title\n## Empty\n");
    w("notes.pdf", b"%PDF-1.4");
    w(
        "records.jsonl",
        b"{\"id\": \"a\", \"text\": \"alpha\"}\n{not json}\n{\"id\": \"a\", \"text\": \"again\"}\n{\"id\": \"b\"}\n[1,2]\n{\"id\": \"c\", \"text\": \"gamma\", \"title\": \"C\"}\n",
    );
    let missing = dir.join("does-not-exist.md");
    let out = env.json(&[
        "ingest",
        dir.to_str().expect("utf8"),
        missing.to_str().expect("utf8"),
        "--json",
    ]);
    let skipped = out["skipped"].as_array().expect("skipped").clone();

    assert_eq!(reason_for(&skipped, "empty.md"), "empty file");
    assert_eq!(reason_for(&skipped, "blank.md"), "empty file");
    assert!(reason_for(&skipped, "binary.md").starts_with("binary file"));
    assert_eq!(
        reason_for(&skipped, "latin1.txt"),
        "not valid UTF-8 (invalid byte at offset 3)"
    );
    assert!(reason_for(&skipped, "minified.txt").starts_with("line 2 is 2097152 bytes long"));
    assert!(reason_for(&skipped, "only-headers.md").contains("no text"));
    assert!(reason_for(&skipped, "notes.pdf").contains("unsupported"));
    assert!(reason_for(&skipped, "records.jsonl:2").starts_with("invalid JSON"));
    assert!(reason_for(&skipped, "records.jsonl:3").contains("duplicate record id `a`"));
    assert!(reason_for(&skipped, "records.jsonl:4").contains("no `text`"));
    assert!(reason_for(&skipped, "records.jsonl:5").contains("not a JSON object"));
    assert!(
        reason_for(&skipped, "does-not-exist.md")
            .to_lowercase()
            .contains("no such file")
    );
    assert_eq!(skipped.len(), 12, "{skipped:#?}");

    // good.md, sub/also-good.txt, records a and c; only-headers.md was read but empty.
    let list = env.json(&["corpus", "list", "--json"])["items"].take();
    let mut ids: Vec<&str> = list
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    ids.sort_unstable();
    assert_eq!(
        ids,
        vec!["a#top", "c#top", "good#overview", "sub/also-good#top"]
    );
    let shown = env.json(&["corpus", "show", "a#top", "--json"]);
    assert_eq!(
        shown["text"], "alpha",
        "the first of two duplicate records wins"
    );
}

/// A symbolic link inside a corpus folder can point at any file the user can read
/// (`x.txt -> ~/.aws/credentials`): it is skipped with its reason unless the user
/// asks for links to be followed.
#[test]
fn symlinked_files_in_a_folder_are_not_followed_unless_asked() {
    let env = Env::new();
    let secret = env.dir.path().join("secret.txt");
    std::fs::write(&secret, b"aws_secret_access_key = hunter2").expect("write");
    let dir = env.dir.path().join("corpus");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(
        dir.join("real.md"),
        b"# Real\n\n## Body\n\nGuidance text.\n",
    )
    .expect("write");
    std::os::unix::fs::symlink(&secret, dir.join("x.txt")).expect("link");
    let corpus = dir.to_str().expect("utf8");
    let out = env.json(&["ingest", corpus, "--json"]);
    let skipped = out["skipped"].as_array().expect("skipped").clone();
    assert!(reason_for(&skipped, "x.txt").contains("symbolic link, not followed"));
    let list = env.json(&["corpus", "list", "--json"])["items"].take();
    let ids: Vec<&str> = list
        .as_array()
        .expect("list")
        .iter()
        .filter_map(|c| c["id"].as_str())
        .collect();
    assert_eq!(ids, vec!["real#body"], "the link's target is not ingested");
    // Asked for, the link is read like a file.
    env.ok(&["ingest", corpus, "--follow-symlinks"]);
    let shown = env.json(&["corpus", "show", "x#top", "--json"]);
    assert!(
        shown["text"]
            .as_str()
            .is_some_and(|t| t.contains("hunter2"))
    );
}

#[test]
fn nothing_ingestible_is_an_error() {
    let env = Env::new();
    let dir = env.dir.path().join("empty");
    std::fs::create_dir_all(&dir).expect("mkdir");
    std::fs::write(dir.join("e.md"), b"").expect("write");
    let out = env
        .cmd()
        .args(["ingest", dir.to_str().expect("utf8")])
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("e.md: empty file"), "{stdout}");
}

/// SIGKILL an ingest at several points: afterwards the workspace holds either the old
/// or the new complete corpus, never a broken or partial one.
#[test]
fn killed_ingest_leaves_a_consistent_dataset() {
    let env = Env::new();
    env.ok(&["ingest", sample_guidance().to_str().expect("utf8")]);
    let big = env.dir.path().join("big");
    std::fs::create_dir_all(&big).expect("mkdir");
    for d in 0..40 {
        let mut s = format!("# Doc {d}\n");
        for k in 0..100 {
            s.push_str(&format!(
                "## Section {k}\n\nGuidance text {d} {k} about hand washing and vaccines.\n\n"
            ));
        }
        std::fs::write(big.join(format!("d{d:02}.md")), s).expect("write");
    }
    let delays = [5u64, 40, 90, 150, 250, 400, 700];
    let mut outcomes = Vec::new();
    for ms in delays {
        let mut child = env
            .cmd()
            .args(["ingest", big.to_str().expect("utf8")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        std::thread::sleep(Duration::from_millis(ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let stats = env.json(&["corpus", "stats", "--json"]);
        let chunks = stats["chunks"].as_u64().expect("chunks");
        assert!(
            chunks == 261 || chunks == 261 + 4000,
            "after kill at {ms} ms: {chunks} chunks"
        );
        outcomes.push(chunks);
    }
    // Finishing the ingest afterwards still works and gives the full corpus.
    let done = env.json(&["ingest", big.to_str().expect("utf8"), "--json"]);
    assert_eq!(done["total_chunks"], 4261, "outcomes before: {outcomes:?}");
}
