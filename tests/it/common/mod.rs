//! Helpers shared by the integration tests: run the real binary in an isolated
//! environment (temporary config, data and workspace folders).
#![allow(dead_code)]

pub mod answer_runs;
pub mod hostile;
pub mod json_doc;
pub mod moto;
pub mod records;
pub mod rerank_server;
pub mod server;
pub mod tmux;
pub mod tui;

pub use tui::{context, press};

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub struct Env {
    pub dir: tempfile::TempDir,
}

impl Env {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("ws")
    }

    pub fn cmd(&self) -> Command {
        let mut c = Command::new(raglab_bin());
        c.env("RAGLAB_CONFIG_DIR", self.dir.path().join("config"))
            .env("RAGLAB_MODELS_DIR", models_dir())
            .env("RAGLAB_DATA_DIR", self.dir.path().join("data"))
            .env_remove("RAGLAB_WORKSPACE")
            .arg("--workspace")
            .arg(self.workspace());
        c
    }

    /// Run with arguments; panic with stderr when it fails. Each command's wall time
    /// goes to stderr (shown with `--no-capture`, or beside a failure): where a slow
    /// test spends its time.
    pub fn ok(&self, args: &[&str]) -> Output {
        let started = std::time::Instant::now();
        let out = self.cmd().args(args).output().expect("spawn raglab");
        eprintln!(
            "[{:6.2} s] raglab {}",
            started.elapsed().as_secs_f64(),
            args.join(" ")
        );
        assert!(
            out.status.success(),
            "raglab {args:?} failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        out
    }

    /// Run with arguments and read the JSON document printed, checked against its
    /// documentation (docs/reference/json.md).
    pub fn json(&self, args: &[&str]) -> serde_json::Value {
        let out = self.ok(args);
        let doc = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "raglab {args:?} printed invalid JSON ({e}): {}",
                String::from_utf8_lossy(&out.stdout)
            )
        });
        json_doc::check(&doc, args);
        doc
    }
}

pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Two small guidance pages (rabies and flu prevention) in `dir`/docs, for tests that
/// need a tiny corpus; returns the folder.
pub fn two_pages(dir: &Path) -> PathBuf {
    let docs = dir.join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    std::fs::write(
        docs.join("rabies.md"),
        "# Rabies\n\n## Prevention\n\nVaccinate dogs and cats against rabies. Avoid wild animals such as bats.\n",
    )
    .expect("write");
    std::fs::write(
        docs.join("flu.md"),
        "# Flu\n\n## Prevention\n\nGet a flu vaccine every year. Wash your hands often.\n",
    )
    .expect("write");
    docs
}

pub fn sample_guidance() -> PathBuf {
    repo().join("sample-data").join("guidance")
}

/// The whole sample ingested with its sparse index only, and its questions evaluated
/// under BM25 and TF-IDF (no model needed): two real retrieval configurations to
/// compare, gate and list.
pub fn sample_sparse_evaluated(env: &Env) {
    env.ok(&["ingest", sample_guidance().to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let questions = repo().join("sample-data/questions.jsonl");
    env.ok(&[
        "eval",
        "retrieval",
        "--queries",
        questions.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf",
    ]);
}

/// Five sample documents (19 chunks, two of them over 512 MiniLM tokens): a corpus for
/// tests whose point a few documents make as well as the whole sample.
pub const FIVE_DOCS: [&str; 5] = [
    "rabies/rabies",
    "h1n1flu/2009-h1n1-flu",
    "parasites/parasites-babesiosis",
    "hantavirus/hantavirus",
    "parasites/parasites-hookworm",
];

/// Some sample documents (`TOPIC/DOC`, no extension) copied under `dir/guidance`
/// with their sample paths, so their chunk ids are the sample's: for tests whose
/// point needs a few documents, not the model time of all 59.
pub fn sample_subset(dir: &Path, docs: &[&str]) -> PathBuf {
    let root = dir.join("guidance");
    for d in docs {
        let src = sample_guidance().join(format!("{d}.md"));
        let dst = root.join(format!("{d}.md"));
        std::fs::create_dir_all(dst.parent().expect("parent")).expect("mkdir");
        std::fs::copy(&src, &dst).expect("copy");
    }
    root
}

/// A chunk of one section holding `text` (for indexes built in process).
pub fn text_chunk(id: String, text: String) -> raglab::core::chunk::Chunk {
    raglab::core::chunk::Chunk {
        id,
        doc_id: "d".into(),
        title: "t".into(),
        topic: None,
        header_path: vec!["h".into()],
        word_count: text.split_whitespace().count(),
        byte_start: 0,
        byte_end: text.len(),
        text,
        ordinal: 0,
        token_count: None,
        token_model: None,
    }
}

/// The chunks of the header chunking of `sample-data/guidance`, in process (what
/// `raglab ingest` stores).
pub fn sample_chunks() -> Vec<raglab::core::chunk::Chunk> {
    use raglab::core::chunk::{Chunker, chunk_document};
    use raglab::store::sources::{SourceSet, collect_files, read_file};
    let mut set = SourceSet::default();
    let files = collect_files(&[sample_guidance()], false, &mut set.skipped);
    let mut seen = std::collections::HashMap::new();
    for (root, path) in &files {
        read_file(
            root,
            path,
            raglab::core::corpus::InputLimits::default(),
            &mut seen,
            &mut set,
        );
    }
    set.docs
        .iter()
        .flat_map(|d| chunk_document(d, Chunker::Headers))
        .collect()
}

/// `raglab eval retrieval` of the sample questions in `env`'s workspace with `args`,
/// and the failures it wrote (`eval/last-failures.json`).
pub fn eval_sample(env: &Env, args: &[&str]) -> Vec<serde_json::Value> {
    let questions = repo().join("sample-data/questions.jsonl");
    let q = questions.to_str().expect("utf8");
    env.ok(&[&["eval", "retrieval", "--queries", q][..], args].concat());
    let file = env.workspace().join("eval/last-failures.json");
    serde_json::from_str(&std::fs::read_to_string(&file).expect("failures file"))
        .expect("failures JSON")
}

/// The sample questions (`sample-data/questions.jsonl`).
pub fn sample_questions() -> Vec<serde_json::Value> {
    let text =
        std::fs::read_to_string(repo().join("sample-data/questions.jsonl")).expect("questions");
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect()
}

/// The models the tests use: `tests/models/` inside the repository (ignored by git),
/// filled by `scripts/setup.sh` with links to the models it installed. Tests read
/// nothing outside the repository and their temporary folders.
pub fn models_dir() -> PathBuf {
    repo().join("tests").join("models")
}

/// Path of a test model; panics with the fix when setup has not run.
pub fn model(file: &str) -> PathBuf {
    let p = models_dir().join(file);
    assert!(
        p.is_file(),
        "{} missing: run scripts/setup.sh first",
        p.display()
    );
    p
}

/// Draw the TUI into a `width` x `height` TestBackend (dark theme) and return the
/// screen as text, one line per row.
pub fn screen(app: &raglab::tui::app::App, width: u16, height: u16) -> String {
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(width, height))
        .expect("terminal");
    let theme = raglab::tui::theme::Theme::builtin("dark").expect("theme");
    term.draw(|f| raglab::tui::ui::draw(app, f, &theme))
        .expect("draw");
    raglab::tui::ui::buffer_text(term.backend().buffer())
}

/// The frugality formula of SPEC §7 written out independently of raglab, to recompute
/// a report's A, C and F from its own dA, dC, tA and tC:
/// A = sign(dA)(exp(|dA|/tA) - 1), C = exp(dC/tC) - 1, F = tanh(A - C).
pub fn frugality_by_hand(da: f64, dc: f64, ta: f64, tc: f64) -> (f64, f64, f64) {
    let a = if da < 0.0 { -1.0 } else { 1.0 } * ((da.abs() / ta).exp() - 1.0);
    let c = (dc / tc).exp() - 1.0;
    (a, c, (a - c).tanh())
}

/// The event loop's background half: apply the jobs' messages (and poll for new
/// evaluations and study commits, as the loop does between events) until `done`
/// holds; panics after `limit`.
pub async fn pump(
    jobs: &mut raglab::tui::jobs::Jobs,
    app: &mut raglab::tui::app::App,
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<raglab::tui::jobs::Msg>,
    limit: std::time::Duration,
    done: impl Fn(&raglab::tui::app::App) -> bool,
) {
    let deadline = std::time::Instant::now() + limit;
    while !done(app) {
        assert!(
            std::time::Instant::now() < deadline,
            "the TUI's jobs did not get there within {limit:?}"
        );
        jobs.poll_study();
        if let Ok(msg) = tokio::time::timeout(std::time::Duration::from_millis(50), rx.recv()).await
        {
            jobs.apply(app, msg.expect("job channel open"));
        }
    }
}

/// The `raglab` binary under test: nextest's run-time path when it gives one (a run
/// from an archive, extracted away from a target folder that other builds may be
/// rewriting), else the path cargo built it at.
pub fn raglab_bin() -> PathBuf {
    std::env::var_os("NEXTEST_BIN_EXE_raglab").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_raglab")),
        PathBuf::from,
    )
}

/// The five documents ingested and sparse-indexed (no model), and a questions file of
/// the sample questions whose targets they hold (at least ten).
pub fn five_docs_sparse() -> (Env, PathBuf) {
    let env = Env::new();
    let docs = sample_subset(env.dir.path(), &FIVE_DOCS);
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let held = |t: &serde_json::Value| {
        let id = t.as_str().expect("a chunk id");
        FIVE_DOCS.iter().any(|d| id.starts_with(&format!("{d}#")))
    };
    let lines: Vec<String> = sample_questions()
        .into_iter()
        .filter(|q| q["relevant"].as_array().expect("relevant").iter().all(held))
        .map(|q| q.to_string())
        .collect();
    assert!(lines.len() >= 10, "{} questions", lines.len());
    let file = env.dir.path().join("questions.jsonl");
    std::fs::write(&file, lines.join("\n") + "\n").expect("write questions");
    (env, file)
}

/// Run `args` with `--run M --method M` for M = bm25, then hybrid, each with
/// `--embed-model` naming a file that does not exist: a sparse run reads no dense
/// side, so it must succeed; the hybrid one must fail naming the missing file.
pub fn only_hybrid_needs_the_embedder(env: &Env, args: &[&str]) {
    let missing = env.dir.path().join("no-such-embedder.gguf");
    let missing = missing.to_str().expect("utf8");
    let run = |method: &str| {
        env.cmd()
            .args(args)
            .args([
                "--run",
                method,
                "--method",
                method,
                "--embed-model",
                missing,
            ])
            .output()
            .expect("spawn")
    };
    let sparse = run("bm25");
    let said = String::from_utf8_lossy(&sparse.stderr);
    assert!(sparse.status.success(), "{said}");
    let dense = run("hybrid");
    let err = String::from_utf8_lossy(&dense.stderr);
    assert!(!dense.status.success() && err.contains(missing), "{err}");
}

/// A config where BM25 ranks and the embedding model is not there (nothing loads).
pub fn bm25_without_model(env: &Env) -> raglab::config::Config {
    let mut config = raglab::config::Config::default();
    config.retrieval.method = Some(raglab::core::retrieval::Method::Bm25);
    config.models.embed = Some(env.dir.path().join("no-such-model.gguf"));
    config
}

/// A BM25 run of `questions` (`eval retrieval --run-out`), pooled at depth 3 (`assess
/// pool`, `--sample N` when given); returns how many pooled pairs are to grade, as the
/// command says it.
pub fn bm25_pool(env: &Env, questions: &Path, sample: Option<usize>) -> usize {
    let runs = env.dir.path().join("runs");
    let questions = questions.to_str().expect("utf8");
    env.ok(&[
        "eval",
        "retrieval",
        "--queries",
        questions,
        "--methods",
        "bm25",
        "--run-out",
        runs.to_str().expect("utf8"),
    ]);
    let run = runs.join("bm25.trec");
    let sample = sample.map(|n| n.to_string());
    let mut args = vec![
        "assess",
        "pool",
        "--queries",
        questions,
        "--runs",
        run.to_str().expect("utf8"),
        "--depth",
        "3",
    ];
    if let Some(n) = &sample {
        args.extend(["--sample", n.as_str()]);
    }
    let out = env.ok(&args);
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    said.trim()
        .strip_suffix(" to grade")
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("pairs to grade in: {said}"))
}

/// Copy the folder `from` into `to` (made), files and sub-folders alike.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read folder") {
        let e = e.expect("entry");
        let dst = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &dst);
        } else {
            std::fs::copy(e.path(), &dst).expect("copy");
        }
    }
}

/// Give `target` the workspace `build` makes, building it once per test run (per
/// process outside nextest): the first test to ask for `name` builds it in a fresh
/// environment (others wait on a file lock rather than build it again), and every
/// test gets a copy of that workspace folder and what the build printed. Why:
/// ingesting and embedding the same documents is the same work in each test, and
/// with one llama.cpp thread per test it was a large share of the suite. Nothing is
/// kept across runs (the run's id names the folder; folders of runs over a day old
/// are removed).
pub fn shared_workspace_at(
    target: &Path,
    name: &str,
    build: impl FnOnce(&Env) -> String,
) -> String {
    let run =
        std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| format!("pid-{}", std::process::id()));
    let tmp = std::env::temp_dir();
    let root = tmp.join(format!("raglab-test-fixtures-{run}"));
    std::fs::create_dir_all(&root).expect("fixture folder");
    let lock = std::fs::File::create(root.join(format!("{name}.lock"))).expect("lock file");
    lock.lock().expect("lock");
    let built = root.join(name);
    if !built.join("output.txt").exists() {
        remove_old_fixtures(&tmp);
        let fresh = Env::new();
        let output = build(&fresh);
        let _ = std::fs::remove_dir_all(&built);
        copy_dir(&fresh.workspace(), &built.join("ws"));
        std::fs::write(built.join("output.txt"), output).expect("mark");
    }
    lock.unlock().expect("unlock");
    copy_dir(&built.join("ws"), target);
    std::fs::read_to_string(built.join("output.txt")).expect("output")
}

/// Fixture folders of earlier runs, a day old or more.
fn remove_old_fixtures(tmp: &Path) {
    let day = std::time::Duration::from_secs(24 * 3600);
    for e in std::fs::read_dir(tmp).into_iter().flatten().flatten() {
        let old = e
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > day);
        if old
            && e.file_name()
                .to_string_lossy()
                .starts_with("raglab-test-fixtures-")
        {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// `out`'s stdout and stderr, as a shell shows them.
fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The whole sample guidance ingested and indexed (59 documents, 261 chunks, embedded
/// with MiniLM: `raglab ingest sample-data/guidance --index`), shared within a test
/// run, in `target`; returns what the command printed.
pub fn sample_indexed_at(target: &Path) -> String {
    shared_workspace_at(target, "sample-indexed", |e| {
        printed(&e.ok(&[
            "ingest",
            sample_guidance().to_str().expect("utf8"),
            "--index",
        ]))
    })
}

/// [`sample_indexed_at`] `env`'s workspace.
pub fn sample_indexed(env: &Env) {
    sample_indexed_at(&env.workspace());
}

/// [`FIVE_DOCS`] ingested and indexed (19 chunks, embedded with MiniLM), shared
/// within a test run.
pub fn five_docs_indexed(env: &Env) {
    shared_workspace_at(&env.workspace(), "five-docs-indexed", |e| {
        let docs = sample_subset(e.dir.path(), &FIVE_DOCS);
        printed(&e.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]))
    });
}
