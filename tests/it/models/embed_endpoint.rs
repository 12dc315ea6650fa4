//! Embeddings from an OpenAI-compatible endpoint: a real `llama-server --embeddings`
//! serving the MiniLM GGUF (a separate program: its own tokenizer call, batching and
//! pooling) must agree with raglab's in-process embedder: the same token ids (inputs
//! cut at the same limit, closing `[SEP]` kept) and cosine > 0.999 per text on sample
//! guidance pages, long ones included. Then through the binary: a workspace whose
//! config marks the server `embeddings = true` is indexed and evaluated through it,
//! and its dense run matches the run of a workspace embedded in process.

use crate::common;

use std::collections::HashMap;
use std::time::Duration;

use raglab::config::DEFAULT_EMBED_MODEL;
use raglab::infer::embed::{EmbedConfig, Embedder};
use raglab::infer::endpoint::EndpointSpec;

use common::server::Server;

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let dot: f64 = a
        .iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum();
    let n = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (n(a) * n(b))
}

/// Sample guidance pages: whole pages (most longer than the 256-token cut) and their
/// first paragraphs.
fn sample_texts() -> Vec<String> {
    let mut files: Vec<_> = walk(&common::sample_guidance());
    files.sort();
    let mut out = Vec::new();
    for f in files.iter().step_by(files.len() / 6).take(6) {
        let text = std::fs::read_to_string(f).expect("read");
        let first = text
            .split("\n\n")
            .find(|p| p.split_whitespace().count() > 8)
            .unwrap_or(&text)
            .to_string();
        out.push(text);
        out.push(first);
    }
    out
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).expect("dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p);
        }
    }
    out
}

#[test]
fn endpoint_vectors_agree_with_the_in_process_embedder() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = Server::start_embeddings(tmp.path(), "embed");
    let mut local = EmbedConfig::new(common::model(DEFAULT_EMBED_MODEL));
    local.threads = 1;
    let mut remote = local.clone();
    remote.endpoint = Some(EndpointSpec {
        idle_timeout: Duration::from_secs(60),
        context_tokens: 512,
        ..EndpointSpec::new(server.url())
    });
    let local = Embedder::spawn(&local).expect("local embedder");
    let remote = Embedder::spawn(&remote).expect("endpoint embedder");
    assert_eq!(remote.info.dim, local.info.dim);
    assert_eq!(
        remote.info.name, local.info.name,
        "one vector set per model"
    );
    let texts = sample_texts();
    assert!(texts.len() >= 10);
    let long = texts
        .iter()
        .filter(|t| local.tokens(t).expect("tokens").len() == local.info.max_tokens)
        .count();
    assert!(long >= 3, "only {long} texts reach the token cut");
    for t in &texts {
        assert_eq!(
            remote.tokens(t).expect("tokens"),
            local.tokens(t).expect("tokens"),
            "token ids differ for {:.60}",
            t
        );
    }
    let a = local.embed_documents(&texts).expect("local vectors");
    let b = remote.embed_documents(&texts).expect("endpoint vectors");
    let mut worst = 1.0f64;
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        let c = cosine(x, y);
        worst = worst.min(c);
        assert!(c > 0.999, "text {i}: cosine {c} ({:.60})", texts[i]);
    }
    eprintln!(
        "endpoint vs in-process embeddings: worst cosine {worst:.6} over {} texts",
        texts.len()
    );
}

/// Per query of a TREC run file: the top chunk and its score.
fn top_of_run(path: &std::path::Path) -> HashMap<String, (String, f64)> {
    let mut top = HashMap::new();
    for line in std::fs::read_to_string(path).expect("run").lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() >= 5 && f[3] == "1" {
            top.insert(
                f[0].to_string(),
                (f[2].to_string(), f[4].parse().expect("score")),
            );
        }
    }
    top
}

#[test]
fn index_and_eval_retrieval_run_on_an_embedding_endpoint() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = Server::start_embeddings(tmp.path(), "embed");
    let questions = common::repo().join("sample-data/questions.jsonl");
    // Five documents: indexing and dense retrieval through the endpoint agree with the
    // in-process model on a small corpus as on the whole sample; every question is ranked.
    let guidance = common::sample_subset(tmp.path(), &common::FIVE_DOCS);
    let mut tops = Vec::new();
    for on_endpoint in [true, false] {
        let env = common::Env::new();
        if on_endpoint {
            let config = env.dir.path().join("config");
            std::fs::create_dir_all(&config).expect("mkdir");
            std::fs::write(
                config.join("config.toml"),
                format!(
                    "[[endpoints]]\nurl = \"{}\"\nembeddings = true\ntimeout_s = 60\n",
                    server.url()
                ),
            )
            .expect("config");
        }
        let ingested = env.json(&["ingest", guidance.to_str().expect("utf8"), "--json"]);
        let summary = env.json(&["index", "--json"]);
        assert_eq!(
            summary["embedded"], ingested["chunks"],
            "every chunk embedded: {summary}"
        );
        let runs = env.dir.path().join("runs");
        env.ok(&[
            "eval",
            "retrieval",
            "--queries",
            questions.to_str().expect("utf8"),
            "--methods",
            "dense",
            "--run-out",
            runs.to_str().expect("utf8"),
        ]);
        // One run file, named by its configuration (`dense-MODEL.trec`).
        let run = std::fs::read_dir(&runs)
            .expect("runs")
            .flatten()
            .map(|e| e.path())
            .find(|p| p.extension().is_some_and(|x| x == "trec"))
            .expect("a dense run file");
        tops.push(top_of_run(&run));
    }
    let (remote, local) = (&tops[0], &tops[1]);
    assert_eq!(remote.len(), local.len());
    let same = local
        .iter()
        .filter(|(q, (id, _))| remote.get(*q).is_some_and(|(r, _)| r == id))
        .count();
    let worst = local
        .iter()
        .map(|(q, (_, s))| (remote[q].1 - s).abs())
        .fold(0.0, f64::max);
    // Ties between near-identical chunks may swap; scores agree closely.
    assert!(
        same * 100 >= local.len() * 98,
        "top chunk agrees for {same} of {} queries",
        local.len()
    );
    assert!(worst < 2e-3, "top-1 cosine differs by up to {worst}");
}

/// llama-server closes a connection after 5 s without a request. A client that kept
/// the pooled connection longer sent its next request on a closed socket ("error
/// sending request for url (…/tokenize)"): seen on a busy machine, after a local step
/// of a few seconds. Each call after a pause longer than the server's keep-alive must
/// still be answered. The pause is a wait on the clock, not a race: the failure it
/// guards against happens whenever the pause is over 5 s, however busy the machine.
#[test]
fn a_pause_longer_than_the_servers_keep_alive_loses_no_request() {
    let tmp = tempfile::tempdir().expect("tmp");
    let server = Server::start_embeddings(tmp.path(), "embed");
    let mut cfg = EmbedConfig::new(common::model(DEFAULT_EMBED_MODEL));
    cfg.threads = 1;
    cfg.endpoint = Some(EndpointSpec {
        idle_timeout: Duration::from_secs(60),
        context_tokens: 512,
        ..EndpointSpec::new(server.url())
    });
    let remote = Embedder::spawn(&cfg).expect("endpoint embedder");
    let text = "Wash your hands with soap and water for at least 20 seconds.";
    let first = remote.tokens(text).expect("tokens before the pause");
    for pause in [5, 6] {
        std::thread::sleep(Duration::from_secs(pause));
        assert_eq!(
            remote.tokens(text).expect("tokens after a pause"),
            first,
            "after {pause} s"
        );
        let v = remote
            .embed_query(text)
            .expect("embedding after the tokenize call");
        assert_eq!(v.len(), remote.info.dim);
    }
}
