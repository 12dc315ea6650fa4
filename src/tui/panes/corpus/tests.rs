//! The Corpus pane driven by its keys, checked on the screen it draws.

use super::*;

fn chunk(doc: &str, section: &str, ordinal: usize, text: &str) -> Chunk {
    let title = format!("{}{}", doc[..1].to_uppercase(), &doc[1..]);
    Chunk {
        id: format!("{doc}#{section}"),
        doc_id: doc.into(),
        title: title.clone(),
        topic: None,
        header_path: vec![title, section.into()],
        word_count: text.split_whitespace().count(),
        byte_start: 0,
        byte_end: text.len(),
        text: text.into(),
        ordinal,
        token_count: None,
        token_model: None,
    }
}

/// Two documents: rabies (two chunks) and flu (one).
fn pane() -> CorpusPane {
    CorpusPane::new(vec![
        chunk(
            "rabies",
            "prevention",
            0,
            "Vaccinate dogs and cats against rabies.",
        ),
        chunk(
            "rabies",
            "symptoms",
            1,
            "Fever, then confusion and paralysis.",
        ),
        chunk("flu", "prevention", 0, "Get a flu vaccine every year."),
    ])
}

fn screen(pane: &CorpusPane) -> String {
    crate::tui::ui::pane_screen(pane, 160, 30)
}

/// `/` and typed text filter the documents by title and header path, `enter` keeps
/// the filter, and clearing it brings every document back.
#[test]
fn the_filter_shows_only_matching_documents_until_cleared() {
    let mut pane = pane();
    let all = screen(&pane);
    assert!(all.contains("Rabies") && all.contains("Flu"), "{all}");
    pane.update(Action::StartFilter);
    assert!(pane.editing());
    for c in "flu".chars() {
        pane.input_char(c);
    }
    pane.update(Action::SubmitInput);
    assert!(!pane.editing());
    let filtered = screen(&pane);
    assert!(filtered.contains("Get a flu vaccine"), "{filtered}");
    assert!(!filtered.contains("Rabies"), "{filtered}");
    pane.update(Action::ClearFilter);
    let back = screen(&pane);
    assert!(back.contains("Rabies") && back.contains("Flu"), "{back}");
}

/// Moving between documents and into a document's chunks shows the selected chunk's
/// text.
#[test]
fn moving_through_documents_and_chunks_shows_the_selected_text() {
    let mut pane = pane();
    let doc = |p: &CorpusPane| p.selected_chunk().expect("a chunk").chunk.doc_id.clone();
    let start = doc(&pane);
    pane.update(Action::Down);
    assert_ne!(doc(&pane), start, "Down moves to the other document");
    if doc(&pane) != "rabies" {
        pane.update(Action::Up);
    }
    assert_eq!(doc(&pane), "rabies");
    let first = pane.selected_chunk().expect("a chunk").id.clone();
    pane.update(Action::FocusRight);
    pane.update(Action::Down);
    let chunk = pane.selected_chunk().expect("a chunk");
    assert_eq!(chunk.chunk.doc_id, "rabies", "still the same document");
    assert_ne!(
        chunk.id, first,
        "Down in the chunks moves to the next chunk"
    );
    let text = chunk.text.to_string();
    let shown = screen(&pane);
    assert!(shown.contains(&text), "{shown}");
}
