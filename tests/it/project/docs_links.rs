//! The documentation stays true to the repository and to the binary: every relative link in
//! README.md and docs/**/*.md names a file that exists (and, with `#anchor`, a heading of
//! that markdown file under GitHub's slug rule); every page under docs/ is linked from the
//! README; and every `raglab ...` command quoted in a fenced `sh` block of the README or a
//! guide (docs/guide-*.md) parses: each word that names a subcommand is one of the
//! subcommands `raglab ... --help` lists, each flag is one of the options it lists, and
//! `raglab SUBCOMMAND... --help` exits 0. Only std, the manifest folder and the built binary
//! are used; nothing outside the repository is read.

use std::collections::{HashMap, HashSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

/// README.md and every markdown file under docs/, in a stable order.
fn doc_files() -> Vec<PathBuf> {
    let mut files = vec![root().join("README.md")];
    markdown_under(&root().join("docs"), &mut files);
    files.sort();
    files
}

fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            markdown_under(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

/// Whether `line` opens or closes a fenced code block (``` or ~~~, indented or not).
fn fence(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if t.starts_with("```") {
        Some("```")
    } else if t.starts_with("~~~") {
        Some("~~~")
    } else {
        None
    }
}

/// `text` without its inline code spans (a run of n backticks up to the next run of exactly
/// n): what a renderer reads as markdown rather than as code.
fn without_code_spans(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let run_at = |i: usize| chars[i..].iter().take_while(|&&c| c == '`').count();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        if chars[i] != '`' {
            out.push(chars[i]);
            i += 1;
            continue;
        }
        let n = run_at(i);
        let mut j = i + n;
        let mut close = None;
        while j < chars.len() {
            if chars[j] == '`' {
                let m = run_at(j);
                if m == n {
                    close = Some(j + m);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match close {
            Some(end) => {
                out.push(' ');
                i = end;
            }
            None => {
                out.extend(&chars[i..i + n]);
                i += n;
            }
        }
    }
    out
}

/// The markdown outside fenced code blocks, inline code removed, one string per line.
fn prose_lines(markdown: &str) -> Vec<String> {
    let mut open: Option<&str> = None;
    let mut lines = Vec::new();
    for line in markdown.lines() {
        match (open, fence(line)) {
            (None, Some(f)) => open = Some(f),
            (Some(o), Some(f)) if o == f => open = None,
            (None, None) => lines.push(line.to_string()),
            _ => {}
        }
    }
    without_code_spans(&lines.join("\n"))
        .lines()
        .map(str::to_string)
        .collect()
}

/// The targets of the links in `markdown`'s prose: inline links and images
/// (`[text](target)`, `![alt](target "title")`) and reference definitions (`[id]: target`).
fn link_targets(markdown: &str) -> Vec<String> {
    let mut targets = Vec::new();
    for line in prose_lines(markdown) {
        let t = line.trim_start();
        if t.starts_with('[')
            && let Some(end) = t.find(']')
            && t[end..].starts_with("]:")
        {
            if let Some(target) = t[end + 2..].split_whitespace().next() {
                targets.push(target.to_string());
            }
            continue;
        }
        let mut rest = line.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(close) = after.find(')') else {
                break;
            };
            let inner = after[..close].trim();
            let target = inner.split_whitespace().next().unwrap_or_default();
            targets.push(target.trim_matches(['<', '>']).to_string());
            rest = &after[close + 1..];
        }
    }
    targets
}

/// GitHub's anchor for a heading: lowercase; letters, digits, `-` and `_` kept, each space
/// turned into `-`, everything else (punctuation, backticks, symbols) dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of `markdown`'s headings (ATX headings outside code), a repeated slug
/// numbered `-1`, `-2`... as GitHub numbers it.
fn anchors(markdown: &str) -> HashSet<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = HashSet::new();
    let mut open: Option<&str> = None;
    for line in markdown.lines() {
        match (open, fence(line)) {
            (None, Some(f)) => {
                open = Some(f);
                continue;
            }
            (Some(o), Some(f)) if o == f => {
                open = None;
                continue;
            }
            (Some(_), _) => continue,
            (None, None) => {}
        }
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let text = line[hashes..].trim().trim_end_matches('#');
        let base = slug(text);
        let n = seen.entry(base.clone()).or_insert(0);
        out.insert(if *n == 0 {
            base.clone()
        } else {
            format!("{base}-{n}")
        });
        *n += 1;
    }
    out
}

/// `path` with `.` and `..` resolved lexically (the file may not exist).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// What is wrong with the link `target` written in the file `from` (`None` when it
/// resolves). Links with a scheme (`https:`, `mailto:`) are not checked.
fn check_link(from: &Path, target: &str) -> Option<String> {
    if target.is_empty() {
        return Some("empty link target".into());
    }
    if target.contains("://") || target.starts_with("mailto:") {
        return None;
    }
    let (file, anchor) = match target.split_once('#') {
        Some((f, a)) => (f, Some(a)),
        None => (target, None),
    };
    let dir = from.parent().unwrap_or(Path::new("."));
    let path = if file.is_empty() {
        from.to_path_buf()
    } else {
        normalise(&dir.join(file))
    };
    if !path.starts_with(root()) {
        return Some(format!("`{target}` points outside the repository"));
    }
    if !path.exists() {
        return Some(format!("`{target}`: no such file {}", path.display()));
    }
    let anchor = anchor?;
    if path.extension().is_none_or(|e| e != "md") {
        return None;
    }
    if anchors(&read(&path)).contains(anchor) {
        None
    } else {
        Some(format!(
            "`{target}`: {} has no heading with anchor #{anchor}",
            path.display()
        ))
    }
}

/// A word of a shell line, or one of the operators that end a command.
#[derive(Debug, PartialEq)]
enum Word {
    Text(String),
    Op,
}

/// Split one shell line into words as sh would: quotes group, `#` at the start of a word
/// begins a comment, `&&`, `||`, `;` and `|` end a command.
fn shell_words(line: &str) -> Vec<Word> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
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
            ' ' | '\t' | '&' | '|' | ';' => {
                if in_word {
                    words.push(Word::Text(std::mem::take(&mut word)));
                    in_word = false;
                }
                if c != ' ' && c != '\t' {
                    if (c == '&' || c == '|') && chars.peek() == Some(&c) {
                        chars.next();
                    }
                    words.push(Word::Op);
                }
            }
            _ => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(Word::Text(word));
    }
    words
}

/// Whether a shell word is a `NAME=value` assignment that precedes a command.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty()
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    })
}

/// The `raglab` (or `raglab-cuda`) commands quoted in `markdown`'s fenced `sh` blocks,
/// each as its arguments after the program name: continuation lines joined, comments and
/// leading `NAME=value` assignments dropped.
fn quoted_commands(markdown: &str) -> Vec<Vec<String>> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    let mut open: Option<&str> = None;
    let mut pending = String::new();
    for line in markdown.lines() {
        match (open, fence(line)) {
            (None, Some(f)) => {
                open = Some(f);
                let info = line.trim_start().trim_start_matches(f).trim();
                in_sh = matches!(info, "sh" | "bash" | "shell" | "console");
                continue;
            }
            (Some(o), Some(f)) if o == f => {
                open = None;
                in_sh = false;
                continue;
            }
            _ => {}
        }
        if open.is_none() || !in_sh {
            continue;
        }
        if let Some(head) = line.strip_suffix('\\') {
            pending.push_str(head);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let joined = std::mem::take(&mut pending);
        for segment in shell_words(&joined).split(|w| *w == Word::Op) {
            let mut texts = segment.iter().filter_map(|w| match w {
                Word::Text(t) => Some(t.clone()),
                Word::Op => None,
            });
            let program = texts.find(|t| !is_assignment(t));
            if matches!(program.as_deref(), Some("raglab" | "raglab-cuda")) {
                commands.push(texts.collect());
            }
        }
    }
    commands
}

/// What `raglab PATH... --help` lists: its subcommands, and its options with whether each
/// takes a value.
#[derive(Debug, Default)]
struct Help {
    subcommands: HashSet<String>,
    options: HashMap<String, bool>,
}

fn parse_help(text: &str) -> Help {
    let mut help = Help::default();
    let mut in_commands = false;
    for line in text.lines() {
        let t = line.trim();
        if t == "Commands:" {
            in_commands = true;
            continue;
        }
        if in_commands {
            match t.split_whitespace().next() {
                Some(name) if line.starts_with(' ') => {
                    help.subcommands.insert(name.to_string());
                }
                _ => in_commands = false,
            }
            continue;
        }
        if !t.starts_with('-') {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim_end_matches(',');
            let is_long = w.starts_with("--") && w.len() > 2;
            let is_short = w.len() == 2
                && w.starts_with('-')
                && w.chars().nth(1).is_some_and(|c| c.is_ascii_alphanumeric());
            if !(is_long || is_short) {
                break;
            }
            let takes_value = words.get(i + 1).is_some_and(|n| n.starts_with('<'));
            help.options.insert(w.to_string(), takes_value);
        }
    }
    help
}

/// `raglab PATH... --help`, run once per path.
struct Binary {
    seen: HashMap<Vec<String>, Result<Help, String>>,
}

impl Binary {
    fn new() -> Self {
        Binary {
            seen: HashMap::new(),
        }
    }

    fn help(&mut self, path: &[String]) -> Result<&Help, String> {
        let entry = self.seen.entry(path.to_vec()).or_insert_with(|| {
            let out = Command::new(crate::common::raglab_bin())
                .args(path)
                .arg("--help")
                .env_remove("RAGLAB_WORKSPACE")
                .env("NO_COLOR", "1")
                .output()
                .map_err(|e| format!("spawn raglab: {e}"))?;
            if !out.status.success() {
                return Err(format!(
                    "`raglab {} --help` exited with {}: {}",
                    path.join(" "),
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
            Ok(parse_help(&String::from_utf8_lossy(&out.stdout)))
        });
        entry.as_ref().map_err(Clone::clone)
    }

    /// Whether the quoted command `args` (after `raglab`) parses: its subcommand path
    /// exists, every flag is an option of that path, and `--help` on the path exits 0.
    fn check(&mut self, args: &[String]) -> Result<(), String> {
        let mut path: Vec<String> = Vec::new();
        let mut i = 0;
        while i < args.len() {
            let arg = &args[i];
            let help = self.help(&path)?;
            let flag = arg.split_once('=').map_or(arg.as_str(), |(f, _)| f);
            if flag.starts_with('-') && flag.len() > 1 {
                let Some(&takes_value) = help.options.get(flag) else {
                    return Err(format!("`raglab {}` has no option {flag}", path.join(" ")));
                };
                i += if takes_value && !arg.contains('=') {
                    2
                } else {
                    1
                };
                continue;
            }
            if !help.subcommands.is_empty() {
                if !help.subcommands.contains(arg) {
                    return Err(format!(
                        "`raglab {}` has no subcommand `{arg}`",
                        path.join(" ")
                    ));
                }
                path.push(arg.clone());
            }
            i += 1;
        }
        let help = self.help(&path)?;
        if !path.is_empty() && !help.subcommands.is_empty() {
            return Err(format!("`raglab {}` needs a subcommand", path.join(" ")));
        }
        Ok(())
    }
}

fn words(line: &str) -> Vec<String> {
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for file in doc_files() {
        for target in link_targets(&read(&file)) {
            checked += 1;
            if let Some(why) = check_link(&file, &target) {
                broken.push(format!("{}: {why}", file.display()));
            }
        }
    }
    assert!(
        checked > 50,
        "only {checked} links found: is the parser blind?"
    );
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_linked_from_the_readme() {
    let readme = root().join("README.md");
    let linked: HashSet<PathBuf> = link_targets(&read(&readme))
        .iter()
        .map(|t| normalise(&root().join(t.split('#').next().unwrap_or_default())))
        .collect();
    let missing: Vec<String> = doc_files()
        .into_iter()
        .filter(|f| *f != readme && !linked.contains(f))
        .map(|f| f.display().to_string())
        .collect();
    assert!(
        missing.is_empty(),
        "pages not linked from README.md:\n{}",
        missing.join("\n")
    );
}

#[test]
fn every_command_quoted_in_a_guide_parses() {
    let mut files = vec![root().join("README.md")];
    files.extend(doc_files().into_iter().filter(|f| {
        f.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("guide-"))
    }));
    let mut binary = Binary::new();
    let mut failures = Vec::new();
    let mut checked = 0;
    for file in &files {
        for args in quoted_commands(&read(file)) {
            checked += 1;
            if let Err(why) = binary.check(&args) {
                failures.push(format!(
                    "{}: `raglab {}`: {why}",
                    file.display(),
                    args.join(" ")
                ));
            }
        }
    }
    assert!(
        checked > 20,
        "only {checked} raglab commands found in the guides"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn slugs_follow_githubs_rule() {
    assert_eq!(
        slug("GPU: CUDA build and layers offloaded"),
        "gpu-cuda-build-and-layers-offloaded"
    );
    assert_eq!(
        slug("Layers offloaded (`--gpu-layers`, `[models] gpu_layers`)"),
        "layers-offloaded---gpu-layers-models-gpu_layers"
    );
    assert_eq!(
        slug("Retrieval metrics (trec_eval conventions)"),
        "retrieval-metrics-trec_eval-conventions"
    );
    let md = "# A\n\n## Same\n\n```sh\n# not a heading\n```\n\n## Same\n";
    let expected: HashSet<String> = ["a", "same", "same-1"].map(String::from).into();
    assert_eq!(anchors(md), expected);
}

#[test]
fn links_in_code_are_not_links() {
    let md = "see [a](x.md#y) and `[b](not-a-link)` and\n```\n[c](code)\n```\n![i](img.png \"t\")\n[ref]: docs/z.md\n";
    assert_eq!(link_targets(md), ["x.md#y", "img.png", "docs/z.md"]);
}

#[test]
fn a_broken_link_is_reported() {
    let readme = root().join("README.md");
    assert_eq!(check_link(&readme, "docs/methods.md#retrieval"), None);
    assert_eq!(check_link(&readme, "docs/methods.md"), None);
    assert!(check_link(&readme, "docs/no-such-page.md").is_some());
    assert!(check_link(&readme, "docs/methods.md#no-such-heading").is_some());
    assert!(check_link(&readme, "#no-such-heading").is_some());
    assert!(check_link(&readme, "../outside.md").is_some());
    assert_eq!(check_link(&readme, "https://example.org/x"), None);
}

#[test]
fn commands_are_read_as_sh_reads_them() {
    let md = "```sh\nraglab eval retrieval --queries q.jsonl \\\n    --k 1,5   # cut-offs\n\
              RAGLAB_LOG=debug raglab index && raglab search \"a # b\" -k 3\n\
              python x.py --raglab raglab\n```\n```toml\nraglab = 1\n```\n";
    assert_eq!(
        quoted_commands(md),
        [
            words("eval retrieval --queries q.jsonl --k 1,5"),
            words("index"),
            vec!["search".into(), "a # b".into(), "-k".into(), "3".into()],
        ]
    );
}

#[test]
fn a_command_that_does_not_parse_is_reported() {
    let mut binary = Binary::new();
    assert_eq!(
        binary.check(&words("eval retrieval --queries x --k 1,5 --json")),
        Ok(())
    );
    assert_eq!(
        binary.check(&words(
            "--workspace w --reviewer alice agree --after-reveal"
        )),
        Ok(())
    );
    assert_eq!(
        binary.check(&words("corpus show parasites/giardia#top")),
        Ok(())
    );
    assert!(binary.check(&words("eval retreival --queries x")).is_err());
    assert!(
        binary
            .check(&words("eval retrieval --queries x --alpha-sweeep"))
            .is_err()
    );
    assert!(binary.check(&words("eval")).is_err());
    assert!(binary.check(&words("--no-such-global ingest x")).is_err());
}

/// docs/reference/json.md documents every `--json` shape raglab prints, at its current
/// version, in the order of the code's list, and no other.
#[test]
fn the_json_page_documents_every_shape_at_its_version() {
    let code: Vec<String> = raglab::cli::json_schema::ALL
        .iter()
        .map(|s| s.id())
        .collect();
    assert_eq!(crate::common::json_doc::documented_ids(), code);
}
