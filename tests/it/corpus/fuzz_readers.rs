//! No input makes raglab panic: every reader of user files is fed random text and
//! mutations of valid files, and must return a result or an error. A panic fails the
//! property (proptest catches it and shrinks the input to a minimal case).
//!
//! Readers: markdown, plain text, HTML and JSONL documents (ingest, then chunking),
//! questions, question texts, multiple-choice questions, annotation items, label
//! imports, the failures file, and the rubric, keymap, theme and config TOML files.

use std::collections::HashMap;
use std::path::Path;

use proptest::prelude::*;
use raglab::config::{Config, Paths};
use raglab::core::chunk::{Chunker, chunk_document};
use raglab::core::corpus::InputLimits;
use raglab::service::base::{default_rubric, parse_rubric};
use raglab::store::sources::{SourceSet, read_file};
use raglab::tui::keymap::Keymap;
use raglab::tui::theme::Theme;

/// Valid examples of every format, the seeds that mutations start from.
const MARKDOWN: &str = "---\ntitle: Measles\ntopic: vaccines\n---\n# Measles\n\nIntro.\n\n## Symptoms\n\nFever and rash.\n\n### In children\n\n- item\n- item 2\n\n```\n# not a header\n```\n";
const HTML: &str = "<html><head><title>T</title></head><body><h1>Flu</h1><p>Wash <b>hands</b>.</p><h2>Prevention</h2><ul><li>Vaccinate</li></ul><script>x()</script></body></html>";
const DOCS_JSONL: &str = "{\"id\": \"d1\", \"title\": \"Flu\", \"text\": \"# Flu\\n\\nRest.\", \"topic\": \"flu\"}\n{\"id\": \"d2\", \"title\": \"Zika\", \"text\": \"Mosquitoes.\"}\n";
const QUESTIONS: &str = "{\"id\": \"q1\", \"text\": \"How is flu spread?\", \"relevant\": [\"c1\"], \"answer\": \"Droplets\", \"topic\": \"flu\", \"qtype\": \"causes\"}\n";
const MCQ: &str = "{\"id\": \"m1\", \"question\": \"Is it?\", \"options\": {\"A\": \"yes\", \"B\": \"no\"}, \"answer\": \"A\", \"relevant\": [\"c1\"]}\n{\"id\": \"m2\", \"text\": \"Which?\", \"options\": [\"x\", \"y\", \"z\"], \"answer\": \"z\"}\n";
const ITEMS: &str = "{\"item_id\": \"i1\", \"question\": \"Q?\", \"answer\": \"A\", \"reference_answer\": \"R\", \"target_chunk\": \"T\"}\n";
const LABELS: &str = "{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"pass\", \"note\": \"ok\"}\n{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": null}\n";
const FAILURES: &str = "[{\"id\": \"q1\", \"text\": \"Q?\", \"relevant\": [\"c1\"], \"rank\": 12}, {\"qid\": \"q2\", \"question\": \"R?\", \"rank\": null}]";
const RUBRIC: &str = include_str!("../../../assets/rubrics/pubhealthbench.toml");
const KEYMAP: &str = include_str!("../../../assets/keymap.toml");
const THEME: &str = include_str!("../../../themes/light.toml");
const CONFIG: &str = "workspace = \"/tmp/x\"
theme = \"dark\"
[retrieval]
method = \"hybrid\"
alpha = 0.5
k = 10
[models]
embed = \"/m/e.gguf\"
[chunking]
window_size = 400
window_overlap = 40
";

/// Random text: mostly the characters formats are made of, plus any character.
fn noise() -> impl Strategy<Value = String> {
    let structural = prop::sample::select(vec![
        "{",
        "}",
        "[",
        "]",
        "\"",
        ":",
        ",",
        "\n",
        "#",
        "-",
        "=",
        "<",
        ">",
        "/",
        "\\",
        " ",
        "null",
        "true",
        "1e999",
        "-0",
        "\u{0}",
        "\u{1b}[2J",
        "\u{202e}",
        "é",
        "🐛",
        "---\n",
        "```",
        "<h1>",
        "</",
        "&amp;",
        "\r\n",
        "\t",
        "0",
    ])
    .prop_map(str::to_string);
    prop::collection::vec(
        prop_oneof![3 => structural, 1 => any::<char>().prop_map(String::from)],
        0..80,
    )
    .prop_map(|parts| parts.concat())
}

/// A valid file with random edits: bytes deleted, inserted or replaced, lines
/// duplicated or cut.
fn mutated(seed: &'static str) -> impl Strategy<Value = String> {
    let edit = (any::<prop::sample::Index>(), 0u8..5, noise());
    prop::collection::vec(edit, 1..6).prop_map(move |edits| {
        let mut s = seed.to_string();
        for (at, kind, text) in edits {
            let mut cut = at.index(s.len() + 1);
            while !s.is_char_boundary(cut) {
                cut -= 1;
            }
            match kind {
                0 => s.insert_str(cut, &text),
                1 => s.truncate(cut),
                2 => {
                    let end = (cut + text.len()).min(s.len());
                    let mut end = end;
                    while !s.is_char_boundary(end) {
                        end += 1;
                    }
                    s.replace_range(cut..end, &text);
                }
                3 => s = format!("{s}{}", &s[cut..]),
                _ => s = s[cut..].to_string(),
            }
        }
        s
    })
}

fn input(seed: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![noise(), mutated(seed)]
}

fn write(dir: &Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

/// Ingest reads the file, then every document is chunked by every chunker.
fn ingest_one(name: &str, text: &str) {
    let dir = tempfile::tempdir().expect("tmp");
    let path = write(dir.path(), name, text);
    let mut set = SourceSet::default();
    let mut seen = HashMap::new();
    read_file(
        dir.path(),
        &path,
        InputLimits::default(),
        &mut seen,
        &mut set,
    );
    for doc in &set.docs {
        for chunker in [
            Chunker::Headers,
            Chunker::Window {
                size: 7,
                overlap: 2,
            },
            Chunker::None,
        ] {
            let chunks = chunk_document(doc, chunker);
            for c in &chunks {
                let _ = (c.path_label(), c.indexed_text());
            }
        }
    }
}

proptest! {
    // 400 cases per property in the suite; `FUZZ_CASES=20000` for a longer hunt.
    #![proptest_config(ProptestConfig {
        cases: std::env::var("FUZZ_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(400),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]

    #[test]
    fn documents_never_panic(md in input(MARKDOWN), html in input(HTML), docs in input(DOCS_JSONL)) {
        ingest_one("doc.md", &md);
        ingest_one("doc.txt", &md);
        ingest_one("page.html", &html);
        ingest_one("records.jsonl", &docs);
    }

    #[test]
    fn question_files_never_panic(q in input(QUESTIONS), m in input(MCQ)) {
        let dir = tempfile::tempdir().expect("tmp");
        let _ = raglab::service::base::read_questions(&write(dir.path(), "q.jsonl", &q));
        let _ = raglab::service::base::read_texts(&write(dir.path(), "t.jsonl", &q));
        let _ = raglab::service::evaluate::read_mcq_questions(&write(dir.path(), "m.jsonl", &m));
    }

    #[test]
    fn study_files_never_panic(items in input(ITEMS), labels in input(LABELS)) {
        let dir = tempfile::tempdir().expect("tmp");
        let _ = raglab::service::study::items_from_file(&write(dir.path(), "items.jsonl", &items), None);
        let _ = raglab::service::study::read_label_file(
            &write(dir.path(), "labels.jsonl", &labels),
            &default_rubric(),
        );
    }

    #[test]
    fn failures_file_never_panics(text in input(FAILURES)) {
        let dir = tempfile::tempdir().expect("tmp");
        let ctx = raglab::service::Context::with(paths(dir.path()), Config::default(), &dir.path().join("ws"))
            .expect("context");
        write(&ctx.workspace.root().join("eval").tap_mkdir(), "last-failures.json", &text);
        let _ = raglab::service::evaluate::last_failures(&ctx);
    }

    #[test]
    fn settings_files_never_panic(
        rubric in input(RUBRIC),
        keymap in input(KEYMAP),
        theme in input(THEME),
        config in input(CONFIG),
    ) {
        let _ = parse_rubric(&rubric);
        let dir = tempfile::tempdir().expect("tmp");
        let _ = Keymap::load(&write(dir.path(), "keymap.toml", &keymap));
        write(dir.path(), "mine.toml", &theme);
        let _ = Theme::load("mine", dir.path());
        let paths = paths(dir.path());
        std::fs::create_dir_all(&paths.config_dir).expect("config dir");
        std::fs::write(paths.config_file(), &config).expect("config");
        let _ = Config::load(&paths);
    }
}

fn paths(dir: &Path) -> Paths {
    Paths {
        config_dir: dir.join("config"),
        data_dir: dir.join("data"),
    }
}

trait MkDir {
    fn tap_mkdir(self) -> Self;
}

impl MkDir for std::path::PathBuf {
    fn tap_mkdir(self) -> Self {
        std::fs::create_dir_all(&self).expect("mkdir");
        self
    }
}

/// The seeds themselves are valid: the mutations start from real files.
#[test]
fn seeds_are_valid_inputs() {
    let dir = tempfile::tempdir().expect("tmp");
    assert_eq!(
        raglab::service::base::read_questions(&write(dir.path(), "q.jsonl", QUESTIONS))
            .expect("questions")
            .len(),
        1
    );
    assert_eq!(
        raglab::service::evaluate::read_mcq_questions(&write(dir.path(), "m.jsonl", MCQ))
            .expect("mcq")
            .len(),
        2
    );
    assert_eq!(
        raglab::service::study::items_from_file(&write(dir.path(), "i.jsonl", ITEMS), None)
            .expect("items")
            .len(),
        1
    );
    assert_eq!(
        raglab::service::study::read_label_file(
            &write(dir.path(), "l.jsonl", LABELS),
            &default_rubric()
        )
        .expect("labels")
        .len(),
        2
    );
    parse_rubric(RUBRIC).expect("rubric");
    Keymap::load(&write(dir.path(), "k.toml", KEYMAP)).expect("keymap");
    write(dir.path(), "t.toml", THEME);
    Theme::load("t", dir.path()).expect("theme");
    let ctx = raglab::service::Context::with(
        paths(dir.path()),
        Config::default(),
        &dir.path().join("ws"),
    )
    .expect("context");
    write(
        &ctx.workspace.root().join("eval").tap_mkdir(),
        "last-failures.json",
        FAILURES,
    );
    assert_eq!(
        raglab::service::evaluate::last_failures(&ctx)
            .expect("failures")
            .len(),
        2
    );
    let p = paths(dir.path());
    std::fs::create_dir_all(&p.config_dir).expect("dir");
    std::fs::write(p.config_file(), CONFIG).expect("config");
    Config::load(&p).expect("config");
}
