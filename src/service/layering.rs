//! The dependency order of the use-case folders, checked against the code: every
//! path a file under `src/service/` names (`use` lines and paths written inline)
//! is read, and an import against the order fails the test with its file and line.
//!
//! A folder may import itself and the folders on lower floors; folders on one floor
//! stand side by side and import none of each other. Inside a folder, the files'
//! imports of each other (`super::file`) must not run in a circle.

use std::collections::BTreeMap;
use std::path::Path;

/// The floors, lowest first. A new folder must be placed here before it is used.
const FLOORS: &[&[&str]] = &[
    &["base"],
    &["corpus"],
    &["retrieval"],
    &["answer"],
    &["evaluate", "evalset", "study"],
    &["report", "assess"],
];

fn floor_of(folder: &str) -> Option<usize> {
    FLOORS.iter().position(|f| f.contains(&folder))
}

/// One file: its path under `src/service/` (`answer/batches.rs`) and its text.
struct Source {
    path: String,
    text: String,
}

/// The identifiers a path continues with after `prefix` on `line`:
/// `crate::service::answer::X` gives `answer`; `crate::service::{base::A, corpus}`
/// gives `base` and `corpus`.
fn heads_after(line: &str, prefix: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (i, _) in line.match_indices(prefix) {
        // `super::` inside `super::super::` is read at the outer one.
        if prefix == "super::" && line[..i].ends_with("super::") {
            continue;
        }
        let rest = &line[i + prefix.len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.push(ident(&item));
                        item.clear();
                    }
                    _ if depth == 0 => item.push(c),
                    _ => {}
                }
            }
            out.push(ident(&item));
        } else {
            out.push(ident(rest));
        }
    }
    out.retain(|s| !s.is_empty());
    out
}

/// The leading identifier of `s` (after spaces).
fn ident(s: &str) -> String {
    s.trim_start()
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The code lines of `text` with their numbers (from 1), comments left out; a path
/// group that spans lines (`use crate::service::{` ... `};`) is joined into the line
/// it starts on.
fn logical_lines(text: &str) -> Vec<(usize, String)> {
    let mut out: Vec<(usize, String)> = Vec::new();
    let mut open = 0usize;
    for (n, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if open > 0
            && let Some((_, joined)) = out.last_mut()
        {
            joined.push(' ');
            joined.push_str(code);
            open = (open + code.matches('{').count()).saturating_sub(code.matches('}').count());
            continue;
        }
        out.push((n + 1, code.to_string()));
        if let Some(i) = code.find("::{") {
            let tail = &code[i..];
            open = tail
                .matches('{')
                .count()
                .saturating_sub(tail.matches('}').count());
        }
    }
    out
}

/// Every import against the order in `sources`, one line each: `file:line: why`.
fn violations(sources: &[Source]) -> Vec<String> {
    let mut out = Vec::new();
    // (folder, file) -> sibling files it imports, with the line of the first import.
    let mut siblings: BTreeMap<(String, String), BTreeMap<String, usize>> = BTreeMap::new();
    for src in sources {
        let mut parts = src.path.split('/');
        let (Some(folder), Some(file)) = (parts.next(), parts.next()) else {
            continue; // service/mod.rs and this file: the map itself.
        };
        let file = file.trim_end_matches(".rs");
        let Some(own) = floor_of(folder) else {
            out.push(format!(
                "{}: folder `{folder}` has no floor in FLOORS",
                src.path
            ));
            continue;
        };
        let mut in_tests = false;
        for (n, code) in logical_lines(&src.text) {
            if code.starts_with("#[cfg(test)]") {
                // A test module's `super::` is its own file, not a sibling.
                in_tests = true;
            }
            let at = format!("{}:{n}", src.path);
            let mut targets = heads_after(&code, "crate::service::");
            if !in_tests {
                targets.extend(heads_after(&code, "super::super::"));
            }
            for target in targets {
                match floor_of(&target) {
                    _ if target == folder => {}
                    Some(f) if f < own => {}
                    Some(f) if f == own => out.push(format!(
                        "{at}: `{folder}` imports `{target}`, which stands beside it \
                         (move the shared piece to a lower folder)"
                    )),
                    Some(_) => out.push(format!(
                        "{at}: `{folder}` imports `{target}`, which stands above it"
                    )),
                    None => out.push(format!(
                        "{at}: `{folder}` imports `service::{target}`, which is no folder \
                         of FLOORS (import from the folder that owns it)"
                    )),
                }
            }
            if !in_tests && file != "mod" {
                for sib in heads_after(&code, "super::") {
                    if sib != "super" && sib != "self" {
                        siblings
                            .entry((folder.to_string(), file.to_string()))
                            .or_default()
                            .entry(sib)
                            .or_insert(n);
                    }
                }
            }
        }
    }
    out.extend(circles(&siblings));
    out
}

/// The circles among the files of each folder, one line each.
fn circles(edges: &BTreeMap<(String, String), BTreeMap<String, usize>>) -> Vec<String> {
    let mut out = Vec::new();
    // 0: not seen, 1: on the current path, 2: done.
    let mut state: BTreeMap<(String, String), u8> = BTreeMap::new();
    fn visit(
        node: &(String, String),
        edges: &BTreeMap<(String, String), BTreeMap<String, usize>>,
        state: &mut BTreeMap<(String, String), u8>,
        path: &mut Vec<(String, String)>,
        out: &mut Vec<String>,
    ) {
        state.insert(node.clone(), 1);
        path.push(node.clone());
        for (sib, line) in edges.get(node).into_iter().flatten() {
            let next = (node.0.clone(), sib.clone());
            match state.get(&next).copied().unwrap_or(0) {
                0 => visit(&next, edges, state, path, out),
                1 => {
                    let start = path.iter().position(|p| *p == next).unwrap_or(0);
                    let ring: Vec<&str> = path[start..].iter().map(|p| p.1.as_str()).collect();
                    out.push(format!(
                        "{}/{}.rs:{line}: a circle of imports in `{}`: {} -> {}",
                        node.0,
                        node.1,
                        node.0,
                        ring.join(" -> "),
                        next.1
                    ));
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(node.clone(), 2);
    }
    for node in edges.keys() {
        if state.get(node).copied().unwrap_or(0) == 0 {
            visit(node, edges, &mut state, &mut Vec::new(), &mut out);
        }
    }
    out
}

/// Every `.rs` file under `dir`, with its path relative to `root`.
fn read_tree(root: &Path, dir: &Path, out: &mut Vec<Source>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::path);
    for e in entries {
        let p = e.path();
        if p.is_dir() {
            read_tree(root, &p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            out.push(Source {
                path: rel.to_string_lossy().replace('\\', "/"),
                text: std::fs::read_to_string(&p)?,
            });
        }
    }
    Ok(())
}

fn source(path: &str, text: &str) -> Source {
    Source {
        path: path.into(),
        text: text.into(),
    }
}

#[test]
fn service_folders_import_only_folders_below_them() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/service");
    let mut sources = Vec::new();
    read_tree(&root, &root, &mut sources).expect("read src/service");
    // The tree really was read: every folder of the order is there.
    for folder in FLOORS.iter().flat_map(|f| f.iter()) {
        assert!(
            sources
                .iter()
                .any(|s| s.path.starts_with(&format!("{folder}/"))),
            "no files read under src/service/{folder}"
        );
    }
    let bad = violations(&sources);
    assert!(
        bad.is_empty(),
        "imports against the order:\n{}",
        bad.join("\n")
    );
}

#[test]
fn an_import_against_the_order_is_named_with_its_file_and_line() {
    let sources = [
        // Allowed: a lower floor, its own folder, a sibling file.
        source(
            "answer/a.rs",
            "use crate::service::base::Context;\nuse super::b::X;\nuse crate::service::answer::Y;\n",
        ),
        // Upward, inline on line 3.
        source(
            "corpus/c.rs",
            "use crate::service::base::{Context, Pool};\n\nlet r = crate::service::retrieval::open(x);\n",
        ),
        // Beside it, inside a group that spans lines.
        source(
            "evaluate/d.rs",
            "use crate::service::{\n    base::Context,\n    study::{Item, Label},\n};\n",
        ),
        // Not a folder of the order; a comment is not an import.
        source(
            "base/e.rs",
            "// crate::service::answer::X\nuse crate::service::Context;\n",
        ),
        // A test module's `super::` is its own file.
        source(
            "answer/b.rs",
            "pub struct X;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
        // A circle among siblings: f -> g -> f.
        source("study/f.rs", "use super::g::A;\n"),
        source("study/g.rs", "fn x() { super::f::b() }\n"),
        // A folder with no floor.
        source("misc/h.rs", "\n"),
    ];
    let mut bad = violations(&sources);
    bad.sort();
    assert_eq!(
        bad,
        vec![
            "base/e.rs:2: `base` imports `service::Context`, which is no folder of FLOORS \
             (import from the folder that owns it)",
            "corpus/c.rs:3: `corpus` imports `retrieval`, which stands above it",
            "evaluate/d.rs:1: `evaluate` imports `study`, which stands beside it \
             (move the shared piece to a lower folder)",
            "misc/h.rs: folder `misc` has no floor in FLOORS",
            "study/g.rs:1: a circle of imports in `study`: f -> g -> f",
        ]
    );
}

#[test]
fn paths_are_read_through_groups_and_nested_supers() {
    assert_eq!(
        heads_after(
            "use crate::service::{base::{A, B}, corpus, answer::C};",
            "crate::service::"
        ),
        vec!["base", "corpus", "answer"]
    );
    assert_eq!(
        heads_after("super::super::evaluate::x()", "super::"),
        vec!["super"]
    );
    assert_eq!(
        heads_after("super::super::evaluate::x()", "super::super::"),
        vec!["evaluate"]
    );
    assert!(heads_after("use std::fmt;", "crate::service::").is_empty());
}
