//! Rules of the test suite itself, read from its files.
//!
//! Tests that run llama.cpp each use every core of this 2-core machine, so nextest runs
//! them one at a time in the `llama` group, picked by module name in
//! `.config/nextest.toml` (two at a time in the `ci` profile, where each runs one
//! llama.cpp thread). A module that starts a model but is missing from that filter
//! runs beside the others, and both slow until their waits run out (a replay test did,
//! beside the evaluation-set test). This test fails on such a module, and on a filter
//! entry that names no module.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn it_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it")
}

/// Whether a module's source starts a model: the GGUF files, an embedding `index`,
/// a generation or judging command, or a llama-server.
fn starts_a_model(source: &str) -> bool {
    const MARKS: [&str; 9] = [
        "common::model(",
        "common::models_dir(",
        "\"--index\"",
        "server::Server",
        "\"generate\",",
        "\"judge\",",
        "\"summarise\",",
        "DEFAULT_EMBED_MODEL",
        "DEFAULT_GEN_MODEL",
    ];
    MARKS.iter().any(|m| source.contains(m))
        || source
            .lines()
            .any(|l| l.contains("[\"index\"") && !l.contains("--sparse-only"))
}

/// The module names in the filter of the default profile's override that puts tests
/// in `group`.
fn group_modules(nextest: &str, group: &str) -> BTreeSet<String> {
    profile_group_modules(nextest, "default", group)
}

/// The module names in the filter of `profile`'s override that puts tests in `group`.
fn profile_group_modules(nextest: &str, profile: &str, group: &str) -> BTreeSet<String> {
    let doc: toml::Value = toml::from_str(nextest).expect("nextest.toml parses");
    let overrides = doc["profile"][profile]["overrides"]
        .as_array()
        .expect("overrides");
    let filter = overrides
        .iter()
        .find(|o| o.get("test-group").and_then(|g| g.as_str()) == Some(group))
        .and_then(|o| o["filter"].as_str())
        .expect("an override for the group");
    filter
        .split("test(/^")
        .skip(1)
        .map(|rest| rest.split("::").next().expect("a module").to_string())
        .collect()
}

fn modules(dir: &Path) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("tests/it")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .map(|p| {
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&p).expect("source"))
        })
        .filter(|(name, _)| name != "main" && name != "suite_rules")
        .collect();
    out.sort();
    out
}

#[test]
fn every_module_that_starts_a_model_runs_in_the_serial_group() {
    let nextest = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".config/nextest.toml"),
    )
    .expect(".config/nextest.toml");
    let group = group_modules(&nextest, "llama");
    let all = modules(&it_dir());
    let names: BTreeSet<&str> = all.iter().map(|(n, _)| n.as_str()).collect();
    let missing: Vec<&str> = all
        .iter()
        .filter(|(name, src)| starts_a_model(src) && !group.contains(name))
        .map(|(name, _)| name.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "modules that start a model but are not in the llama group: {missing:?}"
    );
    let stale: Vec<&String> = group
        .iter()
        .filter(|g| !names.contains(g.as_str()))
        .collect();
    assert!(
        stale.is_empty(),
        "the llama group names no such module: {stale:?}"
    );
    // The README's test command runs the `ci` profile, where model tests run two at
    // a time: it must cover the very same modules.
    assert_eq!(
        profile_group_modules(&nextest, "ci", "llama-pair"),
        group,
        "the ci profile's llama-pair filter and the default llama filter differ"
    );
}

#[test]
fn the_model_marks_tell_model_modules_from_the_others() {
    assert!(starts_a_model(r#"env.ok(&["index", "--json"]);"#));
    assert!(starts_a_model(r#"env.ok(&["ingest", d, "--index"]);"#));
    assert!(!starts_a_model(r#"env.ok(&["index", "--sparse-only"]);"#));
    assert!(!starts_a_model(r#"env.ok(&["ingest", d]); words("index")"#));
    let group = group_modules(
        "[[profile.default.overrides]]\nfilter = 'test(/^a::/) | test(/^b_c::x/)'\ntest-group = 'llama'\n",
        "llama",
    );
    assert_eq!(
        group.into_iter().collect::<Vec<_>>(),
        ["a".to_string(), "b_c".to_string()]
    );
}
