//! The README's persona sections work as written. A newcomer copies their commands one
//! after another from the clone's root, so this test does the same: it reads the fenced
//! `sh` blocks of each persona section in order and runs every line through `bash`,
//! unchanged, with the real binary first on `PATH` as `raglab`. It starts from the state
//! `scripts/setup.sh --demo` leaves (its own `raglab` lines, read from the script), in a
//! fresh temporary workspace. A fenced `text` block right after an `sh` block is that
//! block's output, cut with `…`: each of its lines must be found in what the commands
//! printed, so the quoted output cannot drift from the binary's.
//!
//! Nothing outside the repository and the test's temporary folder is read or written: the
//! commands run in a temporary "clone root" that links `sample-data/` and `assets/`, with
//! `HOME`, `RAGLAB_CONFIG_DIR` and `RAGLAB_DATA_DIR` in the temporary folder and the models
//! from `tests/models/`. Relative paths in the commands (`q8.jsonl`, `study/alice`,
//! `scale-demo`) land in that temporary root.
//!
//! `raglab ingest sample-data/guidance --index` (the demo's first line, and the
//! scale-out section's into its own workspace) is the command the suite's shared
//! fixture runs once per test run: its workspace is copied in and its printed output
//! checked against the README's quote, rather than embedding the sample twice more.
//!
//! Skipped, and why (printed with `--no-capture`):
//! - `scripts/setup.sh ...`: it installs Debian packages and builds raglab; this test runs
//!   the binary that build made.
//! - commands that open the TUI (`raglab` with global options only): they need a terminal
//!   and a person at the keys (`tests/it/models/study_tmux.rs` and the `tui_*` modules drive the
//!   real TUI). Where the README has a reviewer label in the Annotate pane, the test stands
//!   in with `raglab labels import` under that reviewer's own config folder, with the
//!   labels of the run the README quotes (everything passes, but bob fails one answer on
//!   completeness), so the lead's commands after it have labels to work on.
//! - commands that need a model server (`llama-server`, `curl`): none of the persona
//!   sections has one today; the rule is here so that one added later is named.
//!
//! The test also checks that every number of documents, chunks and questions the docs
//! quote for the sample is the sample's, and that the study guide gives the README's
//! study sequence command for command.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

/// The README's persona sections, by the start of their `##` heading, in reading order.
const PERSONAS: [&str; 4] = [
    "## Demo:",
    "## Analyst:",
    "## Annotator and study lead:",
    "## Scale-out:",
];

/// Global options of `raglab` that take a value: a command made only of these opens the TUI.
const GLOBAL_WITH_VALUE: [&str; 7] = [
    "--workspace",
    "--theme",
    "--questions",
    "--reviewer",
    "--role",
    "--rubric",
    "--gpu-layers",
];

/// One fenced block of a markdown file: its info string and its lines.
#[derive(Debug, Clone)]
struct Block {
    info: String,
    lines: Vec<String>,
}

/// The fenced blocks of each `##` section of `markdown`, keyed by the heading line.
fn sections(markdown: &str) -> Vec<(String, Vec<Block>)> {
    let mut out: Vec<(String, Vec<Block>)> = Vec::new();
    let mut open: Option<Block> = None;
    for line in markdown.lines() {
        if let Some(block) = open.as_mut() {
            if line.trim_start().starts_with("```") {
                let block = open.take().expect("open block");
                if let Some(section) = out.last_mut() {
                    section.1.push(block);
                }
            } else {
                block.lines.push(line.to_string());
            }
            continue;
        }
        if let Some(info) = line.trim_start().strip_prefix("```") {
            open = Some(Block {
                info: info.trim().to_string(),
                lines: Vec::new(),
            });
        } else if line.starts_with("## ") {
            out.push((line.to_string(), Vec::new()));
        }
    }
    out
}

/// The commands of an `sh` block: continuation lines joined, blank lines and comment
/// lines dropped.
fn commands(block: &Block) -> Vec<String> {
    let mut out = Vec::new();
    let mut pending = String::new();
    for line in &block.lines {
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let command = std::mem::take(&mut pending);
        let t = command.trim();
        if !t.is_empty() && !t.starts_with('#') {
            out.push(t.to_string());
        }
    }
    out
}

/// A command's words as sh splits them (quotes group; no expansion), up to a comment.
fn words(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = command.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                in_word = true;
                for q in chars.by_ref() {
                    if q == c {
                        break;
                    }
                    word.push(q);
                }
            }
            '#' if !in_word => break,
            ' ' | '\t' => {
                if in_word {
                    out.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        out.push(word);
    }
    out
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// What the test does with one command.
#[derive(Debug, PartialEq)]
enum Plan {
    Run,
    Skip(&'static str),
    /// Opens the TUI for this reviewer: the test imports their labels instead.
    StandIn {
        reviewer: String,
    },
}

fn plan(command: &str) -> Plan {
    let w = words(command);
    let mut rest = w.iter().skip_while(|x| is_assignment(x));
    let Some(program) = rest.next() else {
        return Plan::Skip("no command");
    };
    if program.starts_with("scripts/setup.sh") {
        return Plan::Skip("set-up installs packages and builds; this test runs its binary");
    }
    if command.contains("llama-server") || program == "curl" {
        return Plan::Skip("needs a model server");
    }
    if program != "raglab" {
        return Plan::Run;
    }
    let args: Vec<&String> = rest.collect();
    let mut i = 0;
    let mut reviewer = None;
    let mut lead = false;
    while i < args.len() {
        let a = args[i].as_str();
        if GLOBAL_WITH_VALUE.contains(&a) {
            let value = args.get(i + 1).map(|v| v.to_string()).unwrap_or_default();
            match a {
                "--reviewer" => reviewer = Some(value),
                "--role" => lead = value == "lead",
                _ => {}
            }
            i += 2;
        } else if a.starts_with('-') {
            i += 1;
        } else {
            // A subcommand: the CLI, not the TUI.
            return Plan::Run;
        }
    }
    match reviewer {
        Some(reviewer) if !lead => Plan::StandIn { reviewer },
        _ => Plan::Skip("opens the TUI, which needs a terminal and a person at the keys"),
    }
}

/// The `raglab` lines `scripts/setup.sh --demo` runs before it opens the TUI, as shell
/// commands (`"$bin"` is the binary it built).
fn demo_setup_commands() -> Vec<String> {
    let script =
        std::fs::read_to_string(common::repo().join("scripts/setup.sh")).expect("setup.sh");
    let body = script
        .split("\n  --demo)\n")
        .nth(1)
        .expect("setup.sh has a --demo case")
        .split("\n    ;;")
        .next()
        .expect("the --demo case ends");
    let block = Block {
        info: "sh".into(),
        lines: body.lines().map(str::to_string).collect(),
    };
    commands(&block)
        .into_iter()
        .filter(|c| c.starts_with("\"$bin\""))
        .map(|c| c.replacen("\"$bin\"", "raglab", 1))
        .collect()
}

/// Whether `expected` (one line of a quoted output, `…` where it was cut) matches one of
/// `output`'s lines: its pieces appear in that line in order, runs of spaces counted as one.
fn matches(expected: &str, output: &str) -> bool {
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let pieces: Vec<String> = expected
        .split('…')
        .map(squeeze)
        .filter(|p| !p.is_empty())
        .collect();
    output.lines().any(|line| {
        let line = squeeze(line);
        let mut at = 0;
        pieces.iter().all(|p| match line[at..].find(p.as_str()) {
            Some(i) => {
                at += i + p.len();
                true
            }
            None => false,
        })
    })
}

/// The temporary clone root and the environment every command runs in.
struct Shell {
    _dir: tempfile::TempDir,
    root: PathBuf,
    bin: PathBuf,
    home: PathBuf,
    config: PathBuf,
    data: PathBuf,
}

impl Shell {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("clone");
        let bin = dir.path().join("bin");
        let home = dir.path().join("home");
        for d in [&root, &bin, &home] {
            std::fs::create_dir_all(d).expect("mkdir");
        }
        for name in ["sample-data", "assets"] {
            std::os::unix::fs::symlink(common::repo().join(name), root.join(name))
                .expect("link into the clone root");
        }
        std::os::unix::fs::symlink(common::raglab_bin(), bin.join("raglab")).expect("link raglab");
        Shell {
            config: dir.path().join("config"),
            data: dir.path().join("data"),
            _dir: dir,
            root,
            bin,
            home,
        }
    }

    /// Run `command` with bash in the clone root; (success, stdout and stderr together).
    fn run(&self, command: &str) -> (bool, String) {
        let path = format!(
            "{}:{}",
            self.bin.display(),
            std::env::var("PATH").unwrap_or_default()
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(command)
            .current_dir(&self.root)
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("RAGLAB_CONFIG_DIR", &self.config)
            .env("RAGLAB_DATA_DIR", &self.data)
            .env("RAGLAB_MODELS_DIR", common::models_dir())
            .env("NO_COLOR", "1")
            .env_remove("RAGLAB_WORKSPACE")
            .output()
            .expect("spawn bash");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// The default workspace, which the persona sections share.
    fn workspace(&self) -> PathBuf {
        self.data.join("workspaces").join("default")
    }

    /// `raglab [--workspace W] ingest sample-data/guidance --index` is the very command
    /// the suite's shared fixture runs once per test run ([`common::sample_indexed_at`]):
    /// its workspace is copied to this command's workspace, and what it printed stands
    /// for this command's output. None for any other command.
    fn served_by_the_shared_fixture(&self, command: &str) -> Option<String> {
        let w = words(command);
        let w: Vec<&str> = w.iter().map(String::as_str).collect();
        let (target, rest) = match w.as_slice() {
            ["raglab", "--workspace", ws, rest @ ..] => (self.root.join(ws), rest),
            ["raglab", rest @ ..] => (self.workspace(), rest),
            _ => return None,
        };
        (rest == ["ingest", "sample-data/guidance", "--index"] && !target.exists())
            .then(|| common::sample_indexed_at(&target))
    }

    /// Stand in for `reviewer` labelling every item in the Annotate pane: import their
    /// labels with the same command prefix (their config folder) as the skipped line.
    fn label_for(&self, command: &str, reviewer: &str) -> String {
        let prefix = &command[..command.find("raglab").expect("a raglab command")];
        let ws = raglab::store::workspace::Workspace::open(self.workspace()).expect("workspace");
        let items = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime")
            .block_on(
                raglab::service::study::items_table(&ws).read_all::<raglab::service::study::Item>(),
            )
            .expect("items");
        // Stored rows: the founding lead's sealed copies repeat the items' ids.
        let mut seen = std::collections::HashSet::new();
        let items: Vec<_> = items
            .into_iter()
            .filter(|i| seen.insert(i.item_id.clone()))
            .collect();
        assert!(!items.is_empty(), "no items to label for {reviewer}");
        let criteria: Vec<String> = raglab::service::base::default_rubric()
            .criteria
            .iter()
            .map(|c| c.key.clone())
            .collect();
        let mut rows = String::new();
        for item in &items {
            for c in &criteria {
                // The README quotes a run where bob failed one answer on completeness.
                let label = if reviewer == "bob"
                    && c == "completeness"
                    && item.item_id.contains("/q-CDC_QA-0000001-2/")
                {
                    "fail"
                } else {
                    "pass"
                };
                rows.push_str(&format!(
                    "{{\"item_id\":\"{}\",\"reviewer\":\"{reviewer}\",\"criterion\":\"{c}\",\"label\":\"{label}\"}}\n",
                    item.item_id
                ));
            }
        }
        let file = self.root.join(format!("labels-{reviewer}.jsonl"));
        std::fs::write(&file, rows).expect("write labels");
        format!("{prefix}raglab labels import {}", file.display())
    }
}

#[test]
fn every_persona_command_runs_as_written_on_the_sample() {
    let readme = std::fs::read_to_string(common::repo().join("README.md")).expect("README");
    let all = sections(&readme);
    let shell = Shell::new();

    let setup = demo_setup_commands();
    assert!(
        setup.iter().any(|c| c.contains(" ingest ")) && setup.iter().any(|c| c.contains(" eval ")),
        "scripts/setup.sh --demo no longer ingests and evaluates as expected: {setup:?}"
    );
    for command in &setup {
        if shell.served_by_the_shared_fixture(command).is_some() {
            continue;
        }
        let (ok, out) = shell.run(command);
        assert!(ok, "set-up's `{command}` failed:\n{out}");
    }

    let mut ran = 0;
    let mut checked_lines = 0;
    let mut skipped = Vec::new();
    for persona in PERSONAS {
        let (_, blocks) = all
            .iter()
            .find(|(heading, _)| heading.starts_with(persona))
            .unwrap_or_else(|| panic!("README has no section `{persona}`"));
        let mut last_output: Option<String> = None;
        for block in blocks {
            match block.info.as_str() {
                "sh" => {
                    let mut output = String::new();
                    let mut all_ran = true;
                    for command in commands(block) {
                        let run = match plan(&command) {
                            Plan::Run => command.clone(),
                            Plan::Skip(why) => {
                                skipped.push(format!("{persona} `{command}`: {why}"));
                                all_ran = false;
                                continue;
                            }
                            Plan::StandIn { reviewer } => {
                                skipped.push(format!(
                                    "{persona} `{command}`: opens the TUI; {reviewer}'s labels imported instead"
                                ));
                                all_ran = false;
                                shell.label_for(&command, &reviewer)
                            }
                        };
                        let (ok, out) = match shell.served_by_the_shared_fixture(&run) {
                            Some(out) => (true, out),
                            None => shell.run(&run),
                        };
                        assert!(ok, "{persona}: `{run}` failed:\n{out}");
                        ran += 1;
                        output.push_str(&out);
                    }
                    last_output = all_ran.then_some(output);
                }
                "text" => {
                    // Output of the sh block before it; a screen of the TUI when that
                    // block only opened the TUI, which this test does not draw.
                    if let Some(output) = last_output.take() {
                        for line in block.lines.iter().filter(|l| !l.trim().is_empty()) {
                            assert!(
                                matches(line, &output),
                                "{persona}: the README quotes\n  {line}\nbut the commands printed:\n{output}"
                            );
                            checked_lines += 1;
                        }
                    }
                }
                _ => last_output = None,
            }
        }
    }
    println!("ran {ran} commands, checked {checked_lines} quoted output lines; skipped:");
    for s in &skipped {
        println!("  {s}");
    }
    assert!(ran >= 15, "only {ran} commands ran: is the parser blind?");
    assert!(
        checked_lines >= 10,
        "only {checked_lines} output lines checked"
    );
    assert!(
        std::fs::read_to_string(shell.root.join("final.jsonl"))
            .expect("the lead's final labels")
            .lines()
            .count()
            > 0,
        "final.jsonl is empty"
    );
}

/// Sentences of the prose of `markdown` (fenced blocks left out): lines joined per
/// paragraph, cut after `.` or `;` followed by a space.
fn sentences(markdown: &str) -> Vec<String> {
    let mut prose = String::new();
    let mut fenced = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            prose.push_str("\n\n");
        } else if !fenced {
            prose.push_str(line);
            prose.push('\n');
        }
    }
    let mut out = Vec::new();
    for paragraph in prose.split("\n\n") {
        let text = paragraph.split_whitespace().collect::<Vec<_>>().join(" ");
        let mut current = String::new();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            current.push(c);
            if (c == '.' || c == ';') && chars.peek() == Some(&' ') {
                out.push(std::mem::take(&mut current));
            }
        }
        if !current.is_empty() {
            out.push(current);
        }
    }
    out
}

/// `text` as a count: digits, with commas only between groups of three (`1,261`; not the
/// `1,5` of `--k 1,5`).
fn count(text: &str) -> Option<u64> {
    let mut groups = text.split(',');
    let first = groups.next()?;
    let ok = !first.is_empty()
        && first.chars().all(|c| c.is_ascii_digit())
        && groups.all(|g| g.len() == 3 && g.chars().all(|c| c.is_ascii_digit()));
    if ok {
        text.replace(',', "").parse().ok()
    } else {
        None
    }
}

/// Counts quoted as `N [up to three words] documents|chunks|questions` in `sentence`.
fn quoted_counts(sentence: &str) -> Vec<(u64, &'static str)> {
    let tokens: Vec<&str> = sentence.split_whitespace().collect();
    let bare = |t: &str| t.trim_matches(|c: char| !c.is_alphanumeric()).to_string();
    // A count is digits, at most after an opening parenthesis (`(261 chunks)`; not `98%`).
    let number = |t: &str| {
        count(
            t.trim_start_matches('(')
                .trim_end_matches([')', ',', ';', ':', '.']),
        )
    };
    let mut out = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        let Some(n) = number(t) else { continue };
        // The number itself must end cleanly (not the `7,` of `bm25 7, tfidf 13`, not `0.725`).
        if t.ends_with(',') || t.ends_with(';') || t.contains('.') {
            continue;
        }
        for next in tokens.iter().skip(i + 1).take(4) {
            if number(next).is_some() {
                break;
            }
            let unit = match bare(next).as_str() {
                "documents" => Some("documents"),
                "chunks" => Some("chunks"),
                "questions" => Some("questions"),
                _ => None,
            };
            if let Some(unit) = unit {
                out.push((n, unit));
                break;
            }
            if next.ends_with([',', ';', ':', ')', '.']) {
                break;
            }
        }
    }
    out
}

fn md_files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let p = entry.path();
        if p.is_dir() {
            md_files_under(&p, out);
        } else if p.extension().is_some_and(|e| e == "md") {
            out.push(p);
        }
    }
}

#[test]
fn the_sample_counts_the_docs_quote_are_the_samples() {
    let mut docs = Vec::new();
    md_files_under(&common::sample_guidance(), &mut docs);
    let actual = [
        ("documents", docs.len() as u64),
        ("chunks", common::sample_chunks().len() as u64),
        ("questions", common::sample_questions().len() as u64),
    ];
    // The pages a newcomer reads. figures.md keeps the earlier sample's counts on purpose
    // (rows measured on it say so), so it is not among them.
    let mut pages = vec![
        common::repo().join("README.md"),
        common::repo().join("docs/glossary.md"),
        common::repo().join("docs/setup.md"),
        common::repo().join("docs/panes.md"),
    ];
    for entry in std::fs::read_dir(common::repo().join("docs"))
        .expect("docs")
        .flatten()
    {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("guide-") && name.ends_with(".md") {
            pages.push(entry.path());
        }
    }
    let mut wrong = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("page");
        for sentence in sentences(&text) {
            if !sentence.to_lowercase().contains("sample") {
                continue;
            }
            for (n, unit) in quoted_counts(&sentence) {
                let (_, want) = actual.iter().find(|(u, _)| *u == unit).expect("unit");
                seen.insert(unit);
                if n != *want {
                    wrong.push(format!(
                        "{}: {n} {unit} (the sample has {want}): {sentence}",
                        page.display()
                    ));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(
        seen.len(),
        3,
        "the docs should quote the sample's documents, chunks and questions; found {seen:?}"
    );
}

#[test]
fn the_study_guide_gives_the_readmes_study_sequence() {
    let readme = std::fs::read_to_string(common::repo().join("README.md")).expect("README");
    let guide = std::fs::read_to_string(common::repo().join("docs/guide-study.md")).expect("guide");
    let readme_blocks = sections(&readme)
        .into_iter()
        .find(|(h, _)| h.starts_with("## Annotator and study lead:"))
        .expect("annotator section")
        .1;
    let guide_commands: Vec<String> = sections(&guide)
        .into_iter()
        .flat_map(|(_, blocks)| blocks)
        .filter(|b| b.info == "sh")
        .flat_map(|b| commands(&b))
        .collect();
    let wanted: Vec<String> = readme_blocks
        .iter()
        .filter(|b| b.info == "sh")
        .flat_map(commands)
        .collect();
    assert!(
        wanted.len() >= 10,
        "the README's study has {} commands",
        wanted.len()
    );
    // The README's commands appear in the guide in the same order.
    let mut at = 0;
    for w in &wanted {
        let Some(found) = guide_commands[at..].iter().position(|g| g == w) else {
            panic!("docs/guide-study.md lacks (or reorders) the README's `{w}`");
        };
        at += found + 1;
    }
}

#[test]
fn the_plan_tells_tui_lines_from_commands() {
    assert_eq!(
        plan("raglab --questions sample-data/questions.jsonl"),
        Plan::Skip("opens the TUI, which needs a terminal and a person at the keys")
    );
    assert_eq!(
        plan("RAGLAB_CONFIG_DIR=study/alice raglab --reviewer alice"),
        Plan::StandIn {
            reviewer: "alice".into()
        }
    );
    assert!(matches!(
        plan("RAGLAB_CONFIG_DIR=study/lena raglab --role lead --reviewer lena"),
        Plan::Skip(_)
    ));
    assert_eq!(
        plan("RAGLAB_CONFIG_DIR=study/lena raglab --role lead agree"),
        Plan::Run
    );
    assert_eq!(
        plan("head -8 sample-data/questions.jsonl > q8.jsonl"),
        Plan::Run
    );
    assert!(matches!(plan("scripts/setup.sh --demo"), Plan::Skip(_)));
    assert!(matches("rank first … chunk", "rank  first  rerank   chunk"));
    assert!(!matches("chunk … rank", "rank first chunk"));
    assert_eq!(
        quoted_counts(
            "a sample of 59 CDC guidance documents (261 chunks) and 252 questions, k 1,5 chunks"
        ),
        vec![(59, "documents"), (261, "chunks"), (252, "questions")]
    );
}
