//! The TUI driven headless: keys in, frames rendered into ratatui's TestBackend.

use crate::common;

use std::collections::HashMap;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use raglab::core::chunk::{Chunk, Chunker, chunk_document};
use raglab::tui::app::{App, Pane};
use raglab::tui::keymap::Keymap;
use raglab::tui::panes::PaneView;

fn app_with(chunks: Vec<Chunk>) -> App {
    App::new(chunks, Keymap::default_keymap(), "test workspace".into())
}

fn render(app: &App) -> String {
    common::screen(app, 140, 40)
}

fn press(app: &mut App, keys: &str) {
    for c in keys.chars() {
        app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
    }
}

fn press_code(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn corpus_pane_shows_documents_chunks_text_and_histogram() {
    let app = app_with(common::sample_chunks());
    let screen = render(&app);
    assert!(screen.contains("Documents 59/59"), "{screen}");
    // Documents are sorted by id: anaplasmosis comes first.
    assert!(screen.contains("Anaplasmosis"), "{screen}");
    assert!(screen.contains("Chunk length (words)"));
    assert!(screen.contains("1 Corpus") && screen.contains("5 Agreement"));
    let first = app.corpus.selected_chunk().expect("a chunk");
    assert!(
        screen.contains(&*first.path),
        "header path of the selected chunk shown"
    );
    assert!(screen.contains("? help"));
}

#[test]
fn keys_move_between_documents_chunks_and_text() {
    let mut app = app_with(common::sample_chunks());
    let doc0 = app.corpus.selected_doc().expect("doc").doc_id.clone();
    press(&mut app, "j");
    let doc1 = app.corpus.selected_doc().expect("doc").doc_id.clone();
    assert_ne!(doc0, doc1);
    press(&mut app, "l"); // focus chunks
    let c0 = app.corpus.selected_chunk().expect("chunk").id.clone();
    press(&mut app, "j");
    let c1 = app.corpus.selected_chunk().expect("chunk").id.clone();
    assert_ne!(c0, c1);
    assert!(
        render(&app).contains(&format!(" {c1} ")),
        "the selected chunk's id titles the text box"
    );
    press(&mut app, "G");
    let last = app.corpus.selected_doc().expect("doc");
    assert_eq!(
        app.corpus.selected_chunk().map(|c| c.id.clone()),
        last.chunks
            .last()
            .map(|&i| app.corpus.chunks()[i].id.clone())
    );
    press(&mut app, "l"); // focus text, scroll
    press(&mut app, "jj");
    assert_eq!(app.corpus.text_scroll(), 2);
    press(&mut app, "hh");
    press(&mut app, "G");
    let last_doc = app.corpus.docs().last().map(|d| d.doc_id.clone());
    assert_eq!(
        app.corpus.selected_doc().map(|d| d.doc_id.clone()),
        last_doc
    );
    press_code(&mut app, KeyCode::Tab);
    assert_eq!(app.pane, Pane::Query);
    assert!(
        render(&app).contains("Questions 0"),
        "the query pane is drawn"
    );
    press(&mut app, "1");
    assert_eq!(app.pane, Pane::Corpus);
    press(&mut app, "q");
    assert!(app.should_quit);
}

#[test]
fn filter_narrows_titles_and_header_paths() {
    let mut app = app_with(common::sample_chunks());
    press(&mut app, "/");
    press(&mut app, "rabies");
    let screen = render(&app);
    assert!(screen.contains("Documents 1/59"), "{screen}");
    assert!(screen.contains("rabies"));
    // While typing, `q` is text, not quit.
    press(&mut app, "q");
    assert!(!app.should_quit);
    assert_eq!(app.corpus.filter_text(), "rabiesq");
    press_code(&mut app, KeyCode::Backspace);
    press_code(&mut app, KeyCode::Enter);
    assert!(!app.corpus.editing());
    // A header-path match shows only the matching chunks of each document.
    press_code(&mut app, KeyCode::Esc);
    press(&mut app, "/");
    press(&mut app, "how common");
    press_code(&mut app, KeyCode::Enter);
    let n = app.corpus.visible().len();
    assert!((1..59).contains(&n));
    assert!(app.corpus.visible().iter().all(|(_, cs)| cs.len() == 1));
    assert!(render(&app).contains("1/"), "partial chunk counts shown");
    press_code(&mut app, KeyCode::Esc);
    assert_eq!(app.corpus.visible().len(), 59);
}

#[test]
fn help_overlay_lists_bindings_from_the_keymap() {
    let mut app = app_with(common::sample_chunks());
    press(&mut app, "?");
    let screen = render(&app);
    assert!(screen.contains(" Help "));
    assert!(
        screen.contains("Filter titles and header paths"),
        "{screen}"
    );
    assert!(screen.contains("Quit"));
    // In help, q closes the overlay instead of quitting.
    press(&mut app, "q");
    assert!(!app.should_quit);
    assert!(!render(&app).contains(" Help "));
}

#[test]
fn escape_sequences_in_chunks_never_reach_the_screen() {
    let doc = raglab::core::corpus::SourceDoc {
        id: "evil".into(),
        title: "Evil \u{1b}]0;pwned\u{7}doc".into(),
        topic: None,
        format: raglab::core::corpus::DocFormat::Markdown,
        text: "# Evil\n\nclear\u{1b}[2J\u{1b}[H screen \u{1b}[31mred\u{1b}[0m and bell\u{7}\n"
            .into(),
        origin: "evil.md".into(),
        metadata: Default::default(),
    };
    let mut app = app_with(chunk_document(&doc, Chunker::Headers));
    press(&mut app, "l");
    let screen = render(&app);
    assert!(screen.contains("clear screen red and bell"), "{screen}");
    assert!(screen.contains("Evil doc"));
    assert!(!screen.contains('\u{1b}') && !screen.contains('\u{7}'));
    assert!(!screen.contains("[2J") && !screen.contains("pwned"));
}

#[test]
fn empty_workspace_says_what_to_do() {
    let app = app_with(Vec::new());
    assert!(render(&app).contains("raglab ingest"));
}

/// The selected chunk's summary is drawn beside its text (to its right, on the same
/// rows), with the token count and its tokenizer above the text; a chunk without a
/// summary has no summary box. Summaries are sanitized like chunk text.
#[test]
fn summary_beside_the_text_and_token_counts() {
    let mut chunks = common::sample_chunks();
    chunks.sort_by(|a, b| a.doc_id.cmp(&b.doc_id).then(a.ordinal.cmp(&b.ordinal)));
    // The first document's second chunk gets a summary and a token count.
    let target = chunks[1].clone();
    assert_eq!(target.doc_id, chunks[0].doc_id);
    chunks[1].token_count = Some(777);
    chunks[1].token_model = Some("all-MiniLM-L6-v2.F16".into());
    let mut app = app_with(chunks);
    app.corpus.set_summaries(HashMap::from([(
        target.id.clone(),
        "Zebrafish summary\u{1b}[2J words".to_string(),
    )]));
    let screen = render(&app);
    assert!(
        !screen.contains("Summary (retrieval"),
        "first chunk: no summary\n{screen}"
    );
    assert!(screen.contains("tokens not counted"), "{screen}");
    press(&mut app, "lj"); // focus chunks, next chunk
    assert_eq!(
        app.corpus.selected_chunk().map(|c| c.chunk.id.clone()),
        Some(target.id)
    );
    let screen = render(&app);
    assert!(screen.contains("Summary (retrieval"), "{screen}");
    // The count and its tokenizer (the line wraps in the narrowed text box).
    assert!(screen.contains("777 tokens"), "{screen}");
    assert!(screen.contains("(all-MiniLM-L6-v2.F16)"), "{screen}");
    assert!(!screen.contains('\u{1b}') && !screen.contains("[2J"));
    // Beside: the summary's row also holds the text box, to its left (columns in
    // characters: box-drawing characters are several bytes).
    let col = |line: &str, pat: &str| line.find(pat).map(|i| line[..i].chars().count());
    // The text box's title is the chunk id (cut to the box's width).
    let id = &app.corpus.selected_chunk().expect("chunk").id;
    let title = format!("┌ {}", &id[..20]);
    let text_start = screen
        .lines()
        .find_map(|l| col(l, &title))
        .expect("text box title");
    let row = screen
        .lines()
        .find(|l| l.contains("Zebrafish summary"))
        .expect("summary drawn");
    let summary_col = col(row, "Zebrafish").expect("column");
    assert!(summary_col > text_start + 10, "{row}");
    let left: String = row.chars().take(summary_col).collect();
    assert!(
        left.matches('│').count() >= 3,
        "text box borders on the left: {row}"
    );
    // Back to the first chunk: the summary box goes.
    press(&mut app, "k");
    assert!(!render(&app).contains("Summary (retrieval"));
}
