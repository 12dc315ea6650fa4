//! Rules of the test suite itself, read from its files.
//!
//! Tests are grouped in folders by use case. Tests that run llama.cpp each use every
//! core of this 2-core machine, so they all live in one folder, `tests/it/models/`, and
//! nextest runs that folder (`test(/^models::/)` in `.config/nextest.toml`) one test at
//! a time (two at a time in the `ci` profile, where each runs one llama.cpp thread). A
//! module that starts a model outside the folder runs beside the model tests, and both
//! slow until their waits run out (a replay test did, beside the evaluation-set test):
//! this test fails on such a module, on a filter that is not the folder, and on a test
//! file that no `mod` line declares (it would silently never run).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The filter that picks the model tests: the folder, nothing else.
const MODEL_FILTER: &str = "test(/^models::/)";

fn it_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/it")
}

/// Whether a module's source starts a model: the GGUF files, an embedding `index`,
/// a generation or judging command, or a llama-server.
fn starts_a_model(source: &str) -> bool {
    const MARKS: [&str; 11] = [
        "common::model(",
        "common::models_dir(",
        "sample_indexed(",
        "five_docs_indexed(",
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

/// Every test module under `dir` with its path (`study::study_pinned`) and source; the
/// shared helpers (`common`), the folders' own `mod.rs` and this module (whose source
/// holds the marks it looks for) aside.
fn modules(dir: &Path, prefix: &str, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .expect("a tests/it folder")
        .map(|e| e.expect("entry").path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
        let path = format!("{prefix}{name}");
        if p.is_dir() {
            if name != "common" {
                modules(&p, &format!("{path}::"), out);
            }
        } else if p.extension().is_some_and(|x| x == "rs")
            && !["mod", "main", "suite_rules"].contains(&name.as_str())
        {
            out.push((path, std::fs::read_to_string(&p).expect("source")));
        }
    }
}

fn all_modules() -> Vec<(String, String)> {
    let mut out = Vec::new();
    modules(&it_dir(), "", &mut out);
    out
}

/// The filter of `profile`'s override that puts tests in `group`.
fn group_filter(nextest: &str, profile: &str, group: &str) -> String {
    let doc: toml::Value = toml::from_str(nextest).expect("nextest.toml parses");
    let overrides = doc["profile"][profile]["overrides"]
        .as_array()
        .expect("overrides");
    overrides
        .iter()
        .find(|o| o.get("test-group").and_then(|g| g.as_str()) == Some(group))
        .and_then(|o| o["filter"].as_str())
        .expect("an override for the group")
        .to_string()
}

/// The module paths a filter names (`test(/^models::shards::/)` names
/// `models::shards`).
fn filter_modules(filter: &str) -> BTreeSet<String> {
    filter
        .split("test(/^")
        .skip(1)
        .map(|rest| {
            let pattern = rest.split("/)").next().expect("a test path");
            // `models::a::` names a module; `models::a::some_test` a test of it.
            match pattern.strip_suffix("::") {
                Some(module) => module.to_string(),
                None => pattern
                    .rsplit_once("::")
                    .map_or(pattern, |(module, _)| module)
                    .to_string(),
            }
        })
        .collect()
}

fn nextest() -> String {
    std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".config/nextest.toml"))
        .expect(".config/nextest.toml")
}

#[test]
fn every_module_that_starts_a_model_is_in_the_models_folder() {
    let outside: Vec<String> = all_modules()
        .into_iter()
        .filter(|(path, src)| starts_a_model(src) && !path.starts_with("models::"))
        .map(|(path, _)| path)
        .collect();
    assert!(
        outside.is_empty(),
        "modules that start a model outside tests/it/models: {outside:?}"
    );
    let nextest = nextest();
    // The README's test command runs the `ci` profile (model tests two at a time), a
    // plain `cargo nextest run` the default one (one at a time): both pick the folder.
    assert_eq!(group_filter(&nextest, "default", "llama"), MODEL_FILTER);
    assert_eq!(group_filter(&nextest, "ci", "llama-pair"), MODEL_FILTER);
}

/// The tests that keep several model processes busy at once run alone in the `ci`
/// profile: the override names modules that exist, all in the models folder.
#[test]
fn the_tests_that_run_alone_name_existing_model_modules() {
    let doc: toml::Value = toml::from_str(&nextest()).expect("nextest.toml parses");
    let alone = doc["profile"]["ci"]["overrides"]
        .as_array()
        .expect("overrides")
        .iter()
        .find(|o| o.get("threads-required").is_some())
        .and_then(|o| o["filter"].as_str())
        .expect("a threads-required override")
        .to_string();
    let names: BTreeSet<String> = all_modules().into_iter().map(|(p, _)| p).collect();
    let named = filter_modules(&alone);
    assert!(named.len() >= 3, "{named:?}");
    for m in &named {
        assert!(
            m.starts_with("models::") && names.contains(m),
            "{m} is not a module of tests/it/models"
        );
    }
}

/// Every test file is declared by a `mod` line of its folder (`main.rs` at the top,
/// `mod.rs` below): an undeclared file compiles to nothing and its tests never run.
#[test]
fn every_test_file_is_declared() {
    fn check(dir: &Path, undeclared: &mut Vec<PathBuf>) {
        let parent = if dir == it_dir() { "main.rs" } else { "mod.rs" };
        let declared = std::fs::read_to_string(dir.join(parent)).expect("the folder's module file");
        for e in std::fs::read_dir(dir).expect("folder") {
            let p = e.expect("entry").path();
            let name = p.file_stem().expect("stem").to_string_lossy().into_owned();
            if name == "mod" || name == "main" {
                continue;
            }
            let is_module = p.is_dir() || p.extension().is_some_and(|x| x == "rs");
            if is_module
                && !declared
                    .lines()
                    .any(|l| l.trim().ends_with(&format!("mod {name};")))
            {
                undeclared.push(p.clone());
            }
            if p.is_dir() && name != "common" {
                check(&p, undeclared);
            }
        }
    }
    let mut undeclared = Vec::new();
    check(&it_dir(), &mut undeclared);
    assert!(
        undeclared.is_empty(),
        "test files no mod line declares: {undeclared:?}"
    );
}

#[test]
fn the_model_marks_tell_model_modules_from_the_others() {
    assert!(starts_a_model(r#"env.ok(&["index", "--json"]);"#));
    assert!(starts_a_model(r#"env.ok(&["ingest", d, "--index"]);"#));
    assert!(starts_a_model("common::sample_indexed(&env);"));
    assert!(!starts_a_model(r#"env.ok(&["index", "--sparse-only"]);"#));
    assert!(!starts_a_model(r#"env.ok(&["ingest", d]); words("index")"#));
    assert_eq!(
        filter_modules(
            "test(/^models::a::/) | test(/^models::b_c::/) | test(/^models::d::one_test/)"
        )
        .into_iter()
        .collect::<Vec<_>>(),
        [
            "models::a".to_string(),
            "models::b_c".to_string(),
            "models::d".to_string()
        ]
    );
}
