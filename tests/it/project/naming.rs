//! One name per concept: no two public types of the crate share a name, so a reader
//! (and an import) never has to ask which `Scored` or `Role` is meant. The exceptions
//! are listed with their reason; a new duplicate fails here.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Type names allowed twice, with why.
const ALLOWED: [(&str, &str); 1] = [
    // `infer::Result` and `store::Result`: each layer's error type in the std idiom
    // (`std::io::Result`), always used through its module.
    ("Result", "a layer's own Result alias"),
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("src folder") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The public (or crate-visible) structs, enums, type aliases and traits of `source`.
fn type_names(source: &str) -> Vec<String> {
    source
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let rest = l
                .strip_prefix("pub ")
                .or_else(|| l.strip_prefix("pub(crate) "))
                .or_else(|| l.strip_prefix("pub(super) "))?;
            let rest = ["struct ", "enum ", "type ", "trait "]
                .iter()
                .find_map(|k| rest.strip_prefix(k))?;
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            name.starts_with(|c: char| c.is_ascii_uppercase())
                .then_some(name)
        })
        .collect()
}

#[test]
fn no_type_name_is_defined_twice() {
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut files,
    );
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("source");
        for name in type_names(&src) {
            seen.entry(name).or_default().push(f.display().to_string());
        }
    }
    let twice: Vec<(&String, &Vec<String>)> = seen
        .iter()
        .filter(|(name, files)| files.len() > 1 && !ALLOWED.iter().any(|(a, _)| a == name))
        .collect();
    assert!(twice.is_empty(), "type names defined twice: {twice:#?}");
    // An exception that is no longer needed is taken off the list.
    for (name, why) in ALLOWED {
        assert!(
            seen.get(name).is_some_and(|f| f.len() > 1),
            "`{name}` ({why}) is defined once now: remove it from ALLOWED"
        );
    }
}

#[test]
fn type_names_are_read_from_declarations() {
    let src = "pub struct A {\n    pub(crate) enum B,\n pub(crate) type C = u8;\nstruct D;\npub fn e() {}\n";
    assert_eq!(type_names(src), ["A", "B", "C"]);
}
