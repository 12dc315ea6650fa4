use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;

fn md(id: &str, text: &str) -> SourceDoc {
    SourceDoc {
        id: id.into(),
        title: "Doc".into(),
        topic: None,
        format: DocFormat::Markdown,
        text: text.into(),
        origin: format!("{id}.md"),
        metadata: BTreeMap::new(),
    }
}

fn summary(chunks: &[Chunk]) -> Vec<(String, String, String)> {
    chunks
        .iter()
        .map(|c| (c.id.clone(), c.header_path.join(" > "), c.text.clone()))
        .collect()
}

#[test]
fn nested_headers_carry_their_path() {
    let doc = md(
        "measles",
        "# Measles\n\nIntro text.\n\n## Vaccination\n\nGet two doses.\n\n### Who should get it\n\nChildren.\n\n## Symptoms\n\nFever.\n",
    );
    let chunks = chunk_document(&doc, Chunker::Headers);
    assert_eq!(
        summary(&chunks),
        vec![
            (
                "measles#measles".into(),
                "Measles".into(),
                "Intro text.".into()
            ),
            (
                "measles#vaccination".into(),
                "Measles > Vaccination".into(),
                "Get two doses.".into()
            ),
            (
                "measles#who-should-get-it".into(),
                "Measles > Vaccination > Who should get it".into(),
                "Children.".into()
            ),
            (
                "measles#symptoms".into(),
                "Measles > Symptoms".into(),
                "Fever.".into()
            ),
        ]
    );
    assert_eq!(
        chunks[2].indexed_text(),
        "Measles > Vaccination > Who should get it\n\nChildren."
    );
    for c in &chunks {
        assert_eq!(&doc.text[c.byte_start..c.byte_end], c.text);
    }
}

#[test]
fn text_before_first_header_is_its_own_chunk() {
    let chunks = chunk_document(&md("d", "Preface line.\n\n# A\nBody\n"), Chunker::Headers);
    assert_eq!(chunks[0].id, "d#top");
    assert!(chunks[0].header_path.is_empty());
    assert_eq!(chunks[0].path_label(), "Doc");
    assert_eq!(chunks[0].text, "Preface line.");
    assert_eq!(chunks[1].id, "d#a");
}

#[test]
fn empty_sections_are_skipped_and_repeats_numbered() {
    let doc = md(
        "d",
        "# Title\n\n## Empty\n\n   \n## Notes\none\n## Notes\ntwo\n## Notes\nthree",
    );
    let ids: Vec<_> = chunk_document(&doc, Chunker::Headers)
        .into_iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(ids, vec!["d#notes", "d#notes-2", "d#notes-3"]);
}

#[test]
fn setext_headers_split_sections() {
    let doc = md(
        "d",
        "Guide\n=====\n\nIntro\n\nDetails\n-------\nMore text\n",
    );
    let s = summary(&chunk_document(&doc, Chunker::Headers));
    assert_eq!(s[0], ("d#guide".into(), "Guide".into(), "Intro".into()));
    assert_eq!(
        s[1],
        (
            "d#details".into(),
            "Guide > Details".into(),
            "More text".into()
        )
    );
}

#[test]
fn code_fence_hash_lines_stay_in_their_section() {
    let doc = md(
        "d",
        "# Setup\n```bash\n# install\napt install x\n```\n# Use\nrun it\n",
    );
    let chunks = chunk_document(&doc, Chunker::Headers);
    assert_eq!(chunks.len(), 2);
    assert_eq!(chunks[0].text, "```bash\n# install\napt install x\n```");
}

#[test]
fn front_matter_is_not_a_chunk() {
    let doc = md("d", "---\ntitle: T\n---\n# T\n## Overview\nText\n");
    let chunks = chunk_document(&doc, Chunker::Headers);
    assert_eq!(
        summary(&chunks),
        vec![("d#overview".into(), "T > Overview".into(), "Text".into())]
    );
}

#[test]
fn none_chunker_uses_the_document_id() {
    let doc = SourceDoc {
        format: DocFormat::Record,
        ..md("rec-1", "  some text \n")
    };
    let chunks = chunk_document(&doc, Chunker::None);
    assert_eq!(
        summary(&chunks),
        vec![("rec-1".into(), String::new(), "some text".into())]
    );
}

/// A BEIR passage is one chunk under every chunker, never split at a header, its
/// header path the title, its id the passage id; without a title its header path is
/// empty; with neither title nor text it gives no chunk.
#[test]
fn a_passage_is_one_chunk_whatever_the_chunker() {
    let doc = SourceDoc {
        format: DocFormat::Passage,
        title: "Measles".into(),
        ..md("CDC_QA-1-2", "\n# Not a header here\nText.\n")
    };
    for chunker in [Chunker::Headers, Chunker::None, Chunker::DEFAULT_WINDOW] {
        assert_eq!(
            summary(&chunk_document(&doc, chunker)),
            vec![(
                "CDC_QA-1-2".into(),
                "Measles".into(),
                "# Not a header here\nText.".into()
            )],
            "{chunker}"
        );
    }
    let untitled = SourceDoc {
        title: String::new(),
        ..doc.clone()
    };
    let c = chunk_document(&untitled, Chunker::Headers);
    assert!(c[0].header_path.is_empty());
    assert_eq!(c[0].indexed_text(), "\n\n# Not a header here\nText.");
    let title_only = SourceDoc {
        text: " \n".into(),
        ..doc.clone()
    };
    let c = chunk_document(&title_only, Chunker::Headers);
    assert_eq!((c.len(), c[0].text.as_str()), (1, ""));
    assert_eq!(c[0].indexed_text(), "Measles\n\n");
    let empty = SourceDoc {
        title: String::new(),
        ..title_only
    };
    assert!(chunk_document(&empty, Chunker::Headers).is_empty());
}

#[test]
fn windows_overlap_and_track_char_boundaries() {
    let text = "é".repeat(12); // 2 bytes per char
    let doc = SourceDoc {
        format: DocFormat::Text,
        ..md("w", &text)
    };
    let chunks = chunk_document(
        &doc,
        Chunker::Window {
            size: 5,
            overlap: 2,
        },
    );
    let starts: Vec<_> = chunks.iter().map(|c| c.byte_start).collect();
    assert_eq!(starts, vec![0, 6, 12, 18]);
    assert_eq!(chunks[0].text.chars().count(), 5);
    assert_eq!(chunks[3].text.chars().count(), 3);
    assert_eq!(chunks[1].id, "w@6");
}

#[test]
fn window_chunks_know_their_section() {
    let doc = md("d", "# A\naaaaaaaaaa\n# B\nbbbbbbbbbb\n");
    let chunks = chunk_document(
        &doc,
        Chunker::Window {
            size: 8,
            overlap: 0,
        },
    );
    assert_eq!(chunks.first().map(|c| c.header_path.clone()), Some(vec![]));
    assert_eq!(
        chunks.last().map(|c| c.header_path.clone()),
        Some(vec!["B".to_string()])
    );
}

#[test]
fn ids_are_stable_across_runs() {
    let doc = md("x/y", "# A\none\n## B\ntwo\n");
    assert_eq!(
        chunk_document(&doc, Chunker::Headers),
        chunk_document(&doc, Chunker::Headers)
    );
}

fn line_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        "#{1,4} [A-Za-z]{1,6}",
        Just("```".to_string()),
        Just("===".to_string()),
        Just("---".to_string()),
        Just(String::new()),
        "  [a-z#]{1,8}",
    ]
}

proptest! {
    /// Header chunks never overlap, appear in order, and every byte left out of them is
    /// whitespace or part of a header line.
    #[test]
    fn header_chunks_cover_the_document_without_overlap(lines in prop::collection::vec(line_strategy(), 0..40)) {
        let text = lines.join("\n");
        let doc = md("p", &text);
        let chunks = chunk_document(&doc, Chunker::Headers);
        let body = crate::core::corpus::front_matter(&text).1;
        let heads = markdown::headers(&text, body);
        let mut covered = vec![false; text.len()];
        for b in &mut covered[..body] { *b = true; } // front matter is metadata, not text
        let mut last_end = 0;
        for c in &chunks {
            prop_assert!(c.byte_start >= last_end, "overlap or disorder");
            prop_assert!(c.byte_start < c.byte_end);
            prop_assert_eq!(&text[c.byte_start..c.byte_end], c.text.as_str());
            last_end = c.byte_end;
            for b in &mut covered[c.byte_start..c.byte_end] { *b = true; }
        }
        for h in &heads {
            for b in &mut covered[h.start..h.end] { *b = true; }
        }
        for (i, byte) in text.bytes().enumerate() {
            prop_assert!(covered[i] || byte.is_ascii_whitespace(), "byte {} ({:?}) lost", i, byte as char);
        }
        let mut ids: Vec<_> = chunks.iter().map(|c| c.id.clone()).collect();
        ids.sort();
        ids.dedup();
        prop_assert_eq!(ids.len(), chunks.len(), "duplicate ids");
    }
}
