//! Corpus variants (SPEC §1, seed 000) through the binary and the real models: chunk
//! token counts against an independent tokenizer, `raglab summarise` killed with
//! SIGKILL and resumed, C_S and C_R indexed and evaluated beside C_F, and generation
//! on C_S receiving the full chunk.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::Env;
use raglab::service::corpus::SummaryRecord;
use serde_json::Value;

/// Five sample documents: 19 chunks, two of them over 512 MiniLM tokens.
const DOCS: [&str; 5] = common::FIVE_DOCS;
const SMOL: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

fn reference() -> Value {
    let p = common::repo().join("tests/data/minilm_token_counts.json");
    serde_json::from_str(&std::fs::read_to_string(p).expect("reference")).expect("json")
}

/// The five documents copied under `dir` with their sample paths (ids unchanged).
fn subset(dir: &Path) -> PathBuf {
    common::sample_subset(dir, &DOCS)
}

fn chunks(env: &Env) -> Vec<Value> {
    env.json(&["corpus", "list", "--json"])["items"]
        .as_array()
        .cloned()
        .expect("chunk list")
}

fn try_summaries(env: &Env) -> anyhow::Result<Vec<SummaryRecord>> {
    let ws = raglab::store::workspace::Workspace::open(env.workspace())?;
    tokio::runtime::Runtime::new()?.block_on(raglab::service::corpus::all_summaries(&ws))
}

fn summaries(env: &Env) -> Vec<SummaryRecord> {
    try_summaries(env).expect("summaries")
}

/// Lower-case words of five letters or more, split as tantivy's default tokenizer
/// splits (on every non-alphanumeric character).
fn words(text: &str) -> HashSet<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.len() >= 5 && w.chars().all(char::is_alphabetic))
        .map(str::to_lowercase)
        .collect()
}

/// The counts the in-process MiniLM embedder takes equal Hugging Face `tokenizers`'
/// counts on every sample chunk (261) and on hand-checked strings; long chunks are
/// counted whole (not cut at the embedder's 256-token input).
#[test]
fn token_counts_match_the_reference_tokenizer() {
    use raglab::core::chunk::{Chunker, chunk_document};
    use raglab::core::corpus::InputLimits;
    use raglab::infer::embed::{EmbedConfig, Embedder};
    use raglab::store::sources::{SourceSet, collect_files, read_file};

    let mut set = SourceSet::default();
    let files = collect_files(&[common::sample_guidance()], false, &mut set.skipped);
    let mut seen = HashMap::new();
    for (root, path) in &files {
        read_file(root, path, InputLimits::default(), &mut seen, &mut set);
    }
    let chunks: Vec<_> = set
        .docs
        .iter()
        .flat_map(|d| chunk_document(d, Chunker::Headers))
        .collect();
    let e = Embedder::spawn(&EmbedConfig::new(common::model(
        "all-MiniLM-L6-v2.F16.gguf",
    )))
    .expect("embedder");
    let texts: Vec<String> = chunks.iter().map(|c| c.indexed_text()).collect();
    let got = e.count_document_tokens(&texts).expect("counts");
    let r = reference();
    let want = r["counts"].as_object().expect("counts");
    assert_eq!(chunks.len(), want.len());
    let mut long = 0;
    for (c, n) in chunks.iter().zip(&got) {
        assert_eq!(Some(*n as u64), want[&c.id].as_u64(), "chunk {}", c.id);
        long += usize::from(*n > 512);
    }
    assert_eq!(long, 34, "34 sample chunks are over 512 tokens");
    assert!(
        got.iter().any(|&n| n > 2000),
        "whole counts, not cut at 256"
    );
    for h in r["hand"].as_array().expect("hand") {
        let text = h["text"].as_str().expect("text").to_string();
        assert_eq!(
            e.count_document_tokens(std::slice::from_ref(&text))
                .expect("count")[0] as u64,
            h["count"].as_u64().expect("count"),
            "{text:?}: {}",
            h["tokens"]
        );
    }
}

/// The whole method on five sample documents with the small local model: token counts
/// stored by `index` (and retaken when the embedding model changes), `summarise`
/// killed mid-run and resumed (no duplicates, nothing lost, provenance with every
/// summary), C_S and C_R indexed, the three variants evaluated in one report, a search
/// on C_S that only the summaries can answer, and generation on C_S receiving the full
/// chunk.
#[test]
fn summarise_index_and_evaluate_the_three_variants() {
    let env = Env::new();
    let docs = subset(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let listed = chunks(&env);
    assert!(
        listed.iter().all(|c| c["token_count"].is_null()),
        "not counted before index"
    );
    let report = env.json(&["index", "--json"]);
    assert_eq!(report["tokens_counted"], 19);
    assert_eq!(report["token_model"], "all-MiniLM-L6-v2.F16");

    // Stored token counts equal the reference tokenizer's.
    let reference = reference();
    let listed = chunks(&env);
    assert_eq!(listed.len(), 19);
    let mut long = Vec::new();
    for c in &listed {
        let id = c["id"].as_str().expect("id");
        assert_eq!(c["token_count"], reference["counts"][id], "chunk {id}");
        assert_eq!(c["token_model"], "all-MiniLM-L6-v2.F16");
        if c["token_count"].as_u64().expect("count") > 512 {
            long.push(id.to_string());
        }
    }
    assert_eq!(long.len(), 2, "{long:?}");
    let shown = String::from_utf8(env.ok(&["corpus", "show", &long[0]]).stdout).expect("utf8");
    assert!(
        shown.contains(&format!(
            "tokens    {} (all-MiniLM-L6-v2.F16 tokenizer)",
            reference["counts"][long[0].as_str()]
        )),
        "{shown}"
    );

    // Another embedding model (the same weights under another name): every count is
    // taken again and recorded with that model; a second index counts nothing.
    let other = env.dir.path().join("other-embedder.gguf");
    std::fs::copy(common::model("all-MiniLM-L6-v2.F16.gguf"), &other).expect("copy model");
    let other = other.to_str().expect("utf8");
    let r = env.json(&["index", "--embed-model", other, "--json"]);
    assert_eq!(
        (r["tokens_counted"].as_u64(), r["token_model"].as_str()),
        (Some(19), Some("other-embedder"))
    );
    assert!(
        chunks(&env)
            .iter()
            .all(|c| c["token_model"] == "other-embedder")
    );
    let r = env.json(&["index", "--embed-model", other, "--json"]);
    assert_eq!(r["tokens_counted"], 0);
    let r = env.json(&["index", "--json"]);
    assert_eq!(r["tokens_counted"], 19, "back to MiniLM: counted again");

    // Summarise, killed (SIGKILL) once a few summaries are committed.
    let err_file = env.dir.path().join("summarise.stderr");
    let mut child = env
        .cmd()
        .args(["summarise", "--max-tokens", "24"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_file).expect("stderr file"))
        .spawn()
        .expect("spawn");
    let deadline = Instant::now() + Duration::from_secs(300);
    // The progress line is printed after its summary is committed, so waiting for
    // "summarised 3/19" means at least three are in the dataset (waiting on the
    // dataset instead races the line: the kill can land between commit and print).
    while !std::fs::read_to_string(&err_file)
        .unwrap_or_default()
        .contains("summarised 3/19")
    {
        assert!(Instant::now() < deadline, "no summaries after 300 s");
        assert!(
            child.try_wait().expect("wait").is_none(),
            "summarise ended early: {}",
            std::fs::read_to_string(&err_file).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
    let before = summaries(&env);
    assert!(
        (3..19).contains(&before.len()),
        "killed mid-run: {}",
        before.len()
    );
    let progress = std::fs::read_to_string(&err_file).expect("stderr");
    assert!(
        progress.contains("summarising 19 chunks (0 already summarised)"),
        "{progress}"
    );
    assert!(
        progress.contains("summarised 3/19"),
        "progress on stderr: {progress}"
    );

    let out = env.ok(&["summarise", "--max-tokens", "24", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!(
            "summarising {} chunks ({} already summarised)",
            19 - before.len(),
            before.len()
        )),
        "{err}"
    );
    let rep: Value = serde_json::from_slice(&out.stdout).expect("json");
    eprintln!(
        "figure: {} summaries in {:.1} s = {:.1} per minute (max 24 tokens, SmolLM2-135M)",
        rep["summarised"],
        rep["seconds"].as_f64().unwrap_or(0.0),
        rep["per_minute"].as_f64().unwrap_or(0.0)
    );
    let all = summaries(&env);
    let ids: HashSet<&str> = all.iter().map(|s| s.chunk_id.as_str()).collect();
    assert_eq!(
        (all.len(), ids.len()),
        (19, 19),
        "one summary per chunk, none twice"
    );
    assert_eq!(
        &all[..before.len()],
        &before[..],
        "what the killed run committed is kept"
    );
    env.ok(&["summarise", "--max-tokens", "24"]);
    assert_eq!(summaries(&env).len(), 19, "a finished run stays as it is");

    // Provenance of a summary.
    let texts: HashMap<String, Value> = listed
        .iter()
        .map(|c| {
            let id = c["id"].as_str().expect("id");
            (id.to_string(), env.json(&["corpus", "show", id, "--json"]))
        })
        .collect();
    let s = &all[0];
    let template = std::fs::read_to_string(common::repo().join("assets/prompts/summarise.txt"))
        .expect("template");
    assert_eq!(s.template, template);
    assert_eq!(s.model_file, SMOL);
    assert_eq!(s.model_sha256.len(), 64);
    assert!(
        s.prompt.contains("<|im_start|>user"),
        "the chat template applied"
    );
    assert!(
        s.prompt
            .contains(texts[&s.chunk_id]["text"].as_str().expect("text"))
    );
    assert!((1..=24).contains(&s.output_tokens), "{}", s.output_tokens);
    assert!(!s.summary.is_empty());
    assert!(s.sampling.contains("\"max_tokens\":24"));
    let shown = String::from_utf8(env.ok(&["corpus", "show", &s.chunk_id]).stdout).expect("utf8");
    assert!(shown.contains(&format!("summary ({SMOL}")), "{shown}");

    // The TUI's Corpus pane loads the summaries from the workspace.
    let ctx = common::context(&env, raglab::config::Config::default());
    let app = tokio::runtime::Runtime::new()
        .expect("runtime")
        .block_on(raglab::tui::build_app(
            &ctx,
            &raglab::tui::TuiOptions::default(),
            raglab::tui::keymap::Keymap::default_keymap(),
        ))
        .expect("app");
    assert_eq!(app.corpus.summary_count(), 19);

    // C_S and C_R indexes; C_S without summaries would have been refused.
    let s_rep = env.json(&["index", "--variant", "S", "--json"]);
    assert_eq!(
        (s_rep["variant"].as_str(), s_rep["summarised"].as_u64()),
        (Some("S"), Some(19))
    );
    let r_rep = env.json(&["index", "--variant", "R", "--json"]);
    assert_eq!(
        (r_rep["variant"].as_str(), r_rep["summarised"].as_u64()),
        (Some("R"), Some(2))
    );

    // A word of some chunk's summary that no full chunk and no other summary holds:
    // BM25 on C_S finds that chunk first; on C_F nothing at all.
    let full_words: HashSet<String> = texts
        .values()
        .flat_map(|c| {
            let path = c["header_path"]
                .as_array()
                .expect("path")
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(" ");
            words(&format!(
                "{} {path} {}",
                c["title"].as_str().unwrap_or_default(),
                c["text"].as_str().unwrap_or_default()
            ))
        })
        .collect();
    let found = all.iter().find_map(|s| {
        let others: HashSet<String> = all
            .iter()
            .filter(|o| o.chunk_id != s.chunk_id)
            .flat_map(|o| words(&o.summary))
            .collect();
        let mut own: Vec<String> = words(&s.summary).into_iter().collect();
        own.sort();
        own.into_iter()
            .find(|w| !full_words.contains(w) && !others.contains(w))
            .map(|w| (s.clone(), w))
    });
    let (target, word) = found.expect("some summary word is in no chunk and no other summary");
    let hits = env.json(&[
        "search",
        &word,
        "--variant",
        "S",
        "--method",
        "bm25",
        "-k",
        "3",
        "--json",
    ]);
    assert_eq!(
        hits["results"][0]["chunk_id"],
        target.chunk_id.as_str(),
        "{word}: {hits}"
    );
    assert_eq!(hits["variant"], "S");
    // Search shows the full chunk, not the summary.
    let full_text = texts[&target.chunk_id]["text"].as_str().expect("text");
    let flat = full_text.split_whitespace().collect::<Vec<_>>().join(" ");
    let snippet = hits["results"][0]["snippet"].as_str().expect("snippet");
    assert!(flat.starts_with(snippet.trim_end_matches('…')), "{snippet}");
    let f_hits = env.json(&[
        "search",
        &word,
        "--variant",
        "F",
        "--method",
        "bm25",
        "--json",
    ]);
    assert_eq!(
        f_hits["results"].as_array().map(Vec::len),
        Some(0),
        "{f_hits}"
    );

    // Generation on C_S: retrieval ranked the summary, the prompt holds the full chunk.
    let q = env.dir.path().join("novel.jsonl");
    std::fs::write(
        &q,
        format!(
            "{{\"id\": \"novel\", \"text\": \"{word}\", \"relevant\": [\"{}\"]}}\n",
            target.chunk_id
        ),
    )
    .expect("write");
    env.ok(&[
        "generate",
        "--questions",
        q.to_str().expect("utf8"),
        "--run",
        "on-s",
        "--variant",
        "S",
        "--method",
        "bm25",
        "--k",
        "1",
        "--max-tokens",
        "4",
    ]);
    let answers =
        env.json(&["report", "answers", "--run", "on-s", "--list", "--json"])["items"].take();
    let a = &answers[0];
    assert_eq!(a["chunk_ids"], serde_json::json!([target.chunk_id]));
    assert_eq!(a["corpus_variant"], "S");
    assert_eq!(a["target_rank"], 1);
    let prompt = a["prompt"].as_str().expect("prompt");
    assert!(
        prompt.contains(full_text),
        "the full chunk is in the prompt"
    );
    if !full_text.contains(&target.summary) {
        assert!(!prompt.contains(&target.summary), "the summary is not");
    }

    // The three variants in one report.
    let wanted: HashSet<&str> = DOCS.iter().copied().collect();
    let qs: Vec<String> = common::sample_questions()
        .into_iter()
        .filter(|q| {
            q["relevant"].as_array().expect("relevant").iter().all(|r| {
                wanted.contains(
                    r.as_str()
                        .and_then(|r| r.split('#').next())
                        .unwrap_or_default(),
                )
            })
        })
        .map(|q| q.to_string())
        .collect();
    assert!(qs.len() >= 15, "{} questions", qs.len());
    let qf = env.dir.path().join("q.jsonl");
    std::fs::write(&qf, qs.join("\n") + "\n").expect("write");
    let qf = qf.to_str().expect("utf8");
    let common_args = [
        "eval",
        "retrieval",
        "--queries",
        qf,
        "--methods",
        "bm25,dense,hybrid",
        "--alpha-sweep",
        "--json",
    ];
    let rep = env.json(&[&common_args[..], &["--variants", "F,S,R"]].concat());
    let reports = rep["reports"].as_array().expect("reports");
    let got: Vec<(&str, u64)> = reports
        .iter()
        .map(|r| {
            (
                r["variant"].as_str().expect("v"),
                r["summarised"].as_u64().expect("n"),
            )
        })
        .collect();
    assert_eq!(got, vec![("F", 0), ("S", 19), ("R", 2)]);
    // C_F in the comparison is the plain evaluation (its means; the eta^2 of the
    // breakdowns may differ in the last bits, summed in hash order).
    let plain = env.json(&common_args);
    let means = |r: &Value| -> Vec<(Value, Value, Value, Value)> {
        r["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|m| {
                (
                    m["label"].clone(),
                    m["metrics"].clone(),
                    m["recall_at"].clone(),
                    m["ndcg_at"].clone(),
                )
            })
            .collect()
    };
    assert_eq!(means(&reports[0]), means(&plain));
    assert_eq!(reports[0]["alpha_sweep"], plain["alpha_sweep"]);
    // The best (method, alpha) per variant and metric is the maximum of that report.
    let metric_key = |m: &str| match m {
        "P@1" => "p1",
        "Recall@5" => "recall5",
        "Recall@10" => "recall10",
        "MRR" => "mrr",
        _ => "ndcg10",
    };
    let best = rep["best"].as_array().expect("best");
    assert_eq!(best.len(), 15, "5 metrics x 3 variants");
    for b in best {
        let r = reports
            .iter()
            .find(|r| r["variant"] == b["variant"])
            .expect("report");
        let key = metric_key(b["metric"].as_str().expect("metric"));
        let max = r["results"]
            .as_array()
            .expect("results")
            .iter()
            .chain(r["alpha_sweep"].as_array().expect("sweep"))
            .map(|x| x["metrics"][key].as_f64().expect("value"))
            .fold(f64::MIN, f64::max);
        assert_eq!(b["value"].as_f64(), Some(max), "{b}");
        assert_eq!(b["model"], "all-MiniLM-L6-v2.F16");
    }
    for o in rep["best_overall"].as_array().expect("overall") {
        let max = best
            .iter()
            .filter(|b| b["metric"] == o["metric"])
            .map(|b| b["value"].as_f64().expect("v"))
            .fold(f64::MIN, f64::max);
        assert_eq!(o["value"].as_f64(), Some(max));
    }
    for r in reports {
        for res in r["results"].as_array().expect("results") {
            let m = &res["metrics"];
            eprintln!(
                "figure: corpus {} {}: P@1 {:.4} MRR {:.4} nDCG@10 {:.4} over {} queries",
                r["variant"],
                res["label"],
                m["p1"].as_f64().unwrap_or(0.0),
                m["mrr"].as_f64().unwrap_or(0.0),
                m["ndcg10"].as_f64().unwrap_or(0.0),
                m["queries"]
            );
        }
    }

    // Another summary template, from a file: a slot the kind lacks is refused before a
    // model loads; a good one summarises again the chunks it is given (its text, not
    // the shipped one, recorded), and a rerun with it goes on with the other chunks.
    let bad = env.dir.path().join("bad-summary.txt");
    std::fs::write(&bad, "Summarise {chunk} for {audience}.").expect("write");
    let refused = env
        .cmd()
        .args(["summarise", "--model", "/nonexistent.gguf", "--prompt"])
        .arg(&bad)
        .output()
        .expect("spawn raglab");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("audience") && !err.contains("nonexistent"),
        "{err}"
    );
    let brief = env.dir.path().join("brief.txt");
    let brief_text = "In one line, what does this guidance say?\n\n{chunk}\n";
    std::fs::write(&brief, brief_text).expect("write");
    let brief_arg = brief.to_str().expect("utf8");
    let args = [
        "summarise",
        "--max-tokens",
        "8",
        "--limit",
        "2",
        "--prompt",
        brief_arg,
    ];
    let rep = env.json(&[&args[..], &["--json"]].concat());
    let hash = {
        use sha2::Digest as _;
        let d = sha2::Sha256::digest(brief_text.as_bytes());
        d.iter().map(|b| format!("{b:02x}")).collect::<String>()
    };
    assert_eq!(rep["template"], format!("brief@{}", &hash[..12]), "{rep}");
    assert_eq!(
        (rep["summarised"].as_u64(), rep["already_done"].as_u64()),
        (Some(2), Some(0))
    );
    let now = summaries(&env);
    assert_eq!(now.len(), 21, "two more summaries, none replaced");
    for s in &now[19..] {
        assert_eq!(s.template, brief_text);
        assert!(
            s.prompt
                .contains("In one line, what does this guidance say?")
        );
    }
    let again = env.json(&[
        "summarise",
        "--max-tokens",
        "8",
        "--limit",
        "1",
        "--prompt",
        brief_arg,
        "--json",
    ]);
    // The two made with this text count as done; the limit takes one other (one: the
    // next chunk in order is one of the long ones, 20 s of prompt on one thread).
    assert_eq!(
        (again["summarised"].as_u64(), again["already_done"].as_u64()),
        (Some(1), Some(2))
    );
    let now = summaries(&env);
    let brief_ids: HashSet<&str> = now[19..].iter().map(|s| s.chunk_id.as_str()).collect();
    assert_eq!(
        (now.len(), brief_ids.len()),
        (22, 3),
        "no chunk twice with one template"
    );
}
