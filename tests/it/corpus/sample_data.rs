//! The shipped sample as a newcomer meets it: every question reads as a question (no
//! empty focus, no doubled `?`, no "(are)", one final `?`), every document has a real
//! title, every question's targets are chunks of the header chunking of
//! `sample-data/guidance` (in process, the chunker `raglab ingest` runs), and the sizes
//! the sample's provenance states are the files' sizes. No model.

use crate::common;

use std::collections::{BTreeSet, HashMap};

use raglab::core::chunk::Chunk;

/// MedQuAD's question templates: what follows one must name something.
const TEMPLATES: [&str; 8] = [
    "What are the symptoms of",
    "What are the treatments for",
    "Who is at risk for",
    "How to prevent",
    "How to diagnose",
    "What causes",
    "What is",
    "What are",
];

/// What is wrong with a question's text (nothing: well formed).
fn problems(text: &str) -> Vec<&'static str> {
    let mut out = Vec::new();
    if text.contains("(are)") {
        out.push("\"(are)\"");
    }
    let squeezed: String = text.chars().filter(|c| !c.is_whitespace()).collect();
    if squeezed.contains("??") {
        out.push("doubled '?'");
    }
    if !text.ends_with('?') || text.matches('?').count() != 1 {
        out.push("not ending in a single '?'");
    }
    if text.trim_end_matches('?').ends_with(char::is_whitespace) {
        out.push("space before '?'");
    }
    if !text.chars().next().is_some_and(char::is_uppercase) {
        out.push("not capitalised");
    }
    // "(are)" is template, not focus: "What is (are) ?" asks about nothing.
    let unfilled = text.replace("(are)", "");
    let empty_focus = TEMPLATES.iter().any(|t| {
        unfilled
            .strip_prefix(t)
            .is_some_and(|rest| !rest.chars().any(char::is_alphanumeric))
    });
    if empty_focus {
        out.push("empty focus");
    }
    out
}

#[test]
fn the_check_flags_medquads_malformed_questions() {
    for (bad, why) in [
        (
            "Who is at risk for Parasites - Ascariasis? ?",
            "doubled '?'",
        ),
        ("How to prevent ?", "empty focus"),
        ("What is (are) ?", "\"(are)\""),
        ("What is (are) ?", "empty focus"),
        ("What is (are) Q Fever ?", "space before '?'"),
        ("how vaccines prevent disease", "not ending in a single '?'"),
        ("what is botulism?", "not capitalised"),
    ] {
        assert!(problems(bad).contains(&why), "`{bad}`: {:?}", problems(bad));
    }
    assert!(problems("What are Head Lice?").is_empty());
    assert!(problems("Hantavirus: how can HPS be prevented?").is_empty());
}

#[test]
fn every_shipped_question_is_well_formed() {
    let questions = common::sample_questions();
    let bad: Vec<String> = questions
        .iter()
        .filter_map(|q| {
            let text = q["text"].as_str().expect("text");
            let p = problems(text);
            (!p.is_empty()).then(|| format!("{}: `{text}` ({})", q["id"], p.join(", ")))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} malformed:\n{}",
        bad.len(),
        bad.join("\n")
    );
    let ids: BTreeSet<&str> = questions
        .iter()
        .map(|q| q["id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids.len(), questions.len(), "question ids are unique");
}

#[test]
fn every_document_has_a_real_title() {
    let mut titled = 0;
    for entry in walk(&common::sample_guidance()) {
        let text = std::fs::read_to_string(&entry).expect("read");
        let stem = entry.file_stem().and_then(|s| s.to_str()).expect("stem");
        assert!(!stem.starts_with("untitled"), "{}", entry.display());
        let front = text
            .lines()
            .find_map(|l| l.strip_prefix("title:"))
            .map(str::trim);
        let header = text
            .lines()
            .find_map(|l| l.strip_prefix("# "))
            .map(str::trim);
        for t in [front, header] {
            let t = t.unwrap_or_else(|| panic!("{}: no title", entry.display()));
            assert!(
                t.chars().any(char::is_alphanumeric) && !t.eq_ignore_ascii_case("untitled"),
                "{}: title `{t}`",
                entry.display()
            );
        }
        assert_eq!(front, header, "{}", entry.display());
        titled += 1;
    }
    assert!(titled > 0);
    // And as the chunker reads them: no chunk's header path starts untitled.
    for c in common::sample_chunks() {
        let first = c
            .header_path
            .first()
            .map_or(c.title.as_str(), String::as_str);
        assert!(
            first.chars().any(char::is_alphanumeric) && !first.eq_ignore_ascii_case("untitled"),
            "{}: {:?}",
            c.id,
            c.header_path
        );
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
    out.sort();
    out
}

#[test]
fn every_target_is_a_chunk_and_the_provenance_states_the_sizes() {
    let chunks = common::sample_chunks();
    let by_id: HashMap<&str, &Chunk> = chunks.iter().map(|c| (c.id.as_str(), c)).collect();
    assert_eq!(by_id.len(), chunks.len(), "chunk ids are unique");
    let questions = common::sample_questions();
    let mut two = 0;
    for q in &questions {
        let targets: Vec<&str> = q["relevant"]
            .as_array()
            .expect("relevant")
            .iter()
            .map(|t| t.as_str().expect("id"))
            .collect();
        assert!(!targets.is_empty(), "{}: no target", q["id"]);
        for t in &targets {
            assert!(
                by_id.contains_key(t),
                "{}: target {t} is not a chunk",
                q["id"]
            );
        }
        // The reference answer is the targets' text.
        let answer: Vec<&str> = targets.iter().map(|t| by_id[t].text.trim()).collect();
        assert_eq!(
            q["answer"].as_str().expect("answer"),
            answer.join("\n\n"),
            "{}",
            q["id"]
        );
        two += usize::from(targets.len() == 2);
    }
    let docs: BTreeSet<&str> = chunks.iter().map(|c| c.doc_id.as_str()).collect();
    let provenance = std::fs::read_to_string(common::repo().join("sample-data/PROVENANCE.md"))
        .expect("sample-data/PROVENANCE.md");
    let sizes = format!(
        "{} documents, {} passages (one chunk each), {} questions ({two} with two targets)",
        docs.len(),
        chunks.len(),
        questions.len()
    );
    assert!(
        provenance.contains(&sizes),
        "the provenance does not state `{sizes}`"
    );
    assert!(
        common::repo()
            .join("sample-data/LICENSE-MedQuAD-CC-BY-4.0.txt")
            .is_file()
    );
}
