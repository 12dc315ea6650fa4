//! Every `--json` document a test reads through [`super::Env::json`] is checked against
//! docs/reference/json.md: its `schema` names a documented shape, and each field it holds
//! (at any depth) is a documented path of that shape with a documented JSON type. So the
//! page cannot fall behind the output: a new, renamed or retyped field fails the test that
//! printed it until the page says what it is.
//!
//! Page format: a `## raglab.NAME/VERSION` heading per shape, then a table whose rows are
//! `` | `path` | type | meaning | ``. A path is the field names from the top joined by
//! `.`, `[]` after a list's name for its elements, `*` for a key chosen by the data (a
//! configuration's name, a topic). A type is `string`, `integer`, `number` (any number),
//! `boolean`, `object`, `array` or `null`, several joined by ` or `.
//!
//! With `RAGLAB_JSON_DOC_RECORD=FILE`, every observed `schema`, path and type is appended
//! to FILE instead (tab-separated), which is how the page's tables were first drafted.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::OnceLock;

use serde_json::Value;

/// A documented path: segments (`*` any key, `[]` a list's elements) and its types.
struct Field {
    segments: Vec<String>,
    types: Vec<String>,
}

fn page() -> &'static BTreeMap<String, Vec<Field>> {
    static PAGE: OnceLock<BTreeMap<String, Vec<Field>>> = OnceLock::new();
    PAGE.get_or_init(|| {
        let path = super::repo().join("docs/reference/json.md");
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
        parse_page(&text)
    })
}

/// The shapes of the page, by `raglab.NAME/VERSION`.
fn parse_page(text: &str) -> BTreeMap<String, Vec<Field>> {
    let mut shapes = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            current = h
                .trim()
                .starts_with("raglab.")
                .then(|| h.trim().to_string());
            if let Some(id) = &current {
                shapes.insert(id.clone(), Vec::new());
            }
            continue;
        }
        let (Some(id), Some(row)) = (&current, line.strip_prefix("| `")) else {
            continue;
        };
        let Some((path, rest)) = row.split_once("` |") else {
            continue;
        };
        let types = rest.split('|').next().unwrap_or("").trim();
        shapes.get_mut(id).expect("current shape").push(Field {
            segments: segments(path),
            types: types
                .split(" or ")
                .flat_map(|t| t.split('/'))
                .map(|t| t.trim().to_string())
                .collect(),
        });
    }
    shapes
}

fn segments(path: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let mut name = part;
        let mut lists = 0;
        while let Some(n) = name.strip_suffix("[]") {
            name = n;
            lists += 1;
        }
        if !name.is_empty() {
            out.push(name.to_string());
        }
        out.extend(std::iter::repeat_n("[]".to_string(), lists));
    }
    out
}

/// The `raglab.NAME/VERSION` headings of the page, in its order.
pub fn documented_ids() -> Vec<String> {
    let path = super::repo().join("docs/reference/json.md");
    let text =
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    text.lines()
        .filter_map(|l| l.strip_prefix("## raglab."))
        .map(|id| format!("raglab.{}", id.trim()))
        .collect()
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Every (path, type) in `v`, `prefix` first.
fn observed(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<(Vec<String>, &'static str)>) {
    if !prefix.is_empty() {
        out.push((prefix.clone(), type_of(v)));
    }
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                prefix.push(k.clone());
                observed(x, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for x in a {
                prefix.push("[]".into());
                observed(x, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn matches(pattern: &[String], path: &[String]) -> bool {
    pattern.len() == path.len()
        && pattern
            .iter()
            .zip(path)
            .all(|(p, s)| p == s || (p == "*" && s != "[]"))
}

fn type_allowed(documented: &[String], seen: &str) -> bool {
    documented
        .iter()
        .any(|t| t == seen || (t == "number" && seen == "integer"))
}

/// Check `doc`, printed by `raglab args`, against the page; panic naming every field
/// the page does not document (or documents with another type).
pub fn check(doc: &Value, args: &[&str]) {
    let Some(id) = doc.get("schema").and_then(Value::as_str) else {
        panic!("raglab {args:?} printed a JSON document without a `schema` field");
    };
    let mut seen = Vec::new();
    observed(doc, &mut Vec::new(), &mut seen);
    if let Some(file) = std::env::var_os("RAGLAB_JSON_DOC_RECORD") {
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(file)
            .expect("open the record file");
        for (path, ty) in &seen {
            writeln!(f, "{id}\t{}\t{ty}", path.join(".")).expect("record");
        }
        return;
    }
    let Some(fields) = page().get(id) else {
        panic!(
            "raglab {args:?} printed `schema: {id}`, which docs/reference/json.md does not document"
        );
    };
    let mut wrong: Vec<String> = Vec::new();
    for (path, ty) in &seen {
        if path.len() == 1 && path[0] == "schema" {
            continue;
        }
        match fields.iter().find(|f| matches(&f.segments, path)) {
            Some(f) if type_allowed(&f.types, ty) => {}
            Some(f) => wrong.push(format!(
                "{} is {ty}, documented as {}",
                path.join("."),
                f.types.join(" or ")
            )),
            None => wrong.push(format!("{} ({ty}) is not documented", path.join("."))),
        }
    }
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "raglab {args:?} printed {id} fields that docs/reference/json.md does not describe:\n  {}",
        wrong.join("\n  ")
    );
}
