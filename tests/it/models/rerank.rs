//! The rerank stage against independent references:
//! - pointwise P(yes) from SmolLM2 equals the value from the next-token
//!   log-probabilities a real llama-server reports for the same tokens (`/completion`
//!   with `n_probs`);
//! - through a real `/v1/rerank` server on 127.0.0.1 that scores with MiniLM, the
//!   reranked order is the server's scores sorted, ties in first-stage order, and an
//!   evaluation's reranked P@1 is what those scores give; a second run is served from
//!   the cache;
//! - a hostile rerank server (wrong index, NaN, too few results, slow) gives one clear
//!   error, and the scores cached before it are kept.

use std::collections::HashMap;

use raglab::core::prompt::ChatMessage;
use raglab::core::template::{Template, TemplateKind};
use raglab::infer::generate::{GenConfig, Generator};
use raglab::service::retrieval::rerank::{Decode, pointwise_prompt};
use serde_json::Value;

use crate::common::rerank_server::{Mode, RerankServer};
use crate::common::server::{Server, request};
use crate::common::{self, Env, FIVE_DOCS};

fn corpus() -> HashMap<String, String> {
    let text =
        std::fs::read_to_string(common::repo().join("tests/data/medquad_cdc_sample/corpus.jsonl"))
            .expect("corpus");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            (
                v["id"].as_str().expect("id").to_string(),
                format!(
                    "{}\n{}",
                    v["title"].as_str().unwrap_or(""),
                    v["text"].as_str().expect("text")
                ),
            )
        })
        .collect()
}

fn queries() -> Vec<(String, String, String)> {
    let text =
        std::fs::read_to_string(common::repo().join("tests/data/medquad_cdc_sample/queries.jsonl"))
            .expect("queries");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("json");
            (
                v["id"].as_str().expect("id").to_string(),
                v["text"].as_str().expect("text").to_string(),
                v["relevant"][0].as_str().expect("relevant").to_string(),
            )
        })
        .collect()
}

/// The log-probability of `token` among the first position's top log-probabilities.
fn logprob(reply: &Value, token: i64) -> f64 {
    reply["completion_probabilities"][0]["top_logprobs"]
        .as_array()
        .expect("top_logprobs")
        .iter()
        .find(|p| p["id"].as_i64() == Some(token))
        .unwrap_or_else(|| panic!("token {token} not among the top log-probabilities"))["logprob"]
        .as_f64()
        .expect("logprob")
}

#[test]
fn pointwise_p_yes_equals_llama_servers_next_token_logprobs() {
    let env = Env::new();
    let model = common::model("SmolLM2-135M-Instruct.Q4_1.gguf");
    let mut cfg = GenConfig::new(&model);
    cfg.reuse_prefix = false;
    let g = Generator::spawn(&cfg).expect("load SmolLM2");
    let template = Template::shipped(TemplateKind::Rerank);
    let yes = i64::from(g.tokenize("yes", false).expect("tokens").ids[0]);
    let no = i64::from(g.tokenize("no", false).expect("tokens").ids[0]);
    assert_ne!(yes, no);
    let chunks = corpus();
    // Chunks of under 800 characters: twenty prompts decoded twice stay quick.
    let ids: Vec<&String> = {
        let mut v: Vec<&String> = chunks
            .iter()
            .filter(|(_, t)| t.len() < 800)
            .map(|(id, _)| id)
            .collect();
        v.sort();
        v
    };
    // Four questions, five chunks each (its target and four others): 20 pairs.
    let qs = queries();
    let server = Server::start_with(
        env.dir.path(),
        "smollm2-logprobs",
        "SmolLM2-135M-Instruct.Q4_1.gguf",
        &["-c", "2048", "-np", "1", "-t", "1"],
    );
    let mut pairs = 0;
    let mut worst: f64 = 0.0;
    let mut worst_shared: f64 = 0.0;
    let short_targets = qs.iter().filter(|(_, _, t)| chunks[t].len() < 800);
    for (n, (_, question, target)) in short_targets.step_by(30).take(4).enumerate() {
        let mut docs = vec![chunks[target].clone()];
        docs.extend(
            ids.iter()
                .filter(|id| **id != target)
                .skip(n * 7)
                .take(4)
                .map(|id| chunks[*id].clone()),
        );
        let prompts: Vec<Vec<ChatMessage>> = docs
            .iter()
            .map(|d| vec![ChatMessage::user(pointwise_prompt(&template, question, d))])
            .collect();
        let ours = g
            .score_yes_no(prompts.clone(), Decode::Whole)
            .expect("score");
        assert_eq!(ours.p_yes.len(), 5);
        let shared = g
            .score_yes_no(prompts.clone(), Decode::SharedPrefix)
            .expect("score shared");
        assert!(shared.tokens < ours.tokens, "the prefix is decoded once");
        for (m, (p, s)) in prompts
            .into_iter()
            .zip(ours.p_yes.iter().zip(&shared.p_yes))
        {
            let tokens = g.prompt_tokens(m).expect("tokens").ids;
            let body = serde_json::json!({
                "prompt": tokens,
                "n_predict": 1,
                "n_probs": 200,
                "temperature": 0.0,
                "cache_prompt": false,
            });
            let (status, reply) =
                request(server.port, "/completion", Some(&body.to_string())).expect("reply");
            assert_eq!(status, 200, "{reply}");
            let reply: Value = serde_json::from_str(&reply).expect("json");
            let (l_yes, l_no) = (logprob(&reply, yes), logprob(&reply, no));
            let reference = 1.0 / (1.0 + (l_no - l_yes).exp());
            let diff = (p - reference).abs();
            worst = worst.max(diff);
            assert!(diff < 1e-4, "P(yes) {p} against the server's {reference}");
            // The shared prefix moves scores by batch numerics only: a token at the
            // wrong position or in the wrong sequence would move them by far more.
            worst_shared = worst_shared.max((s - reference).abs());
            pairs += 1;
        }
    }
    assert_eq!(pairs, 20);
    eprintln!(
        "20 pairs, largest |P(yes) - server| = {worst:.2e} decoded whole, {worst_shared:.2e} with the prefix shared"
    );
    assert!(worst_shared < 0.1, "{worst_shared}");
}

/// A workspace of five sample pages, indexed, whose config reranks on `url`.
fn reranking_workspace(env: &Env, url: &str, request_timeout_s: u64) {
    common::five_docs_indexed(env);
    let config = env.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("mkdir");
    std::fs::write(
        config.join("config.toml"),
        format!(
            "[[endpoints]]\nurl = \"{url}\"\nrerank = true\ntimeout_s = {request_timeout_s}\nrequest_timeout_s = {request_timeout_s}\n"
        ),
    )
    .expect("config");
}

fn ids_of(search: &Value) -> Vec<String> {
    search["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["chunk_id"].as_str().expect("id").to_string())
        .collect()
}

/// `order` (first-stage ids) sorted by `scores`, highest first, ties in first-stage
/// order, the first `keep` kept: the rule, computed here on its own.
fn expected(order: &[String], scores: &[f64], keep: usize) -> Vec<String> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].partial_cmp(&scores[a]).expect("finite"));
    idx.into_iter()
        .take(keep)
        .map(|i| order[i].clone())
        .collect()
}

#[test]
fn reranked_order_follows_a_rerank_servers_scores_and_is_cached() {
    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    reranking_workspace(&env, &server.url(), 60);
    let questions = [
        "How can rabies be prevented?",
        "What are the symptoms of hookworm infection?",
        "Who is at risk for hantavirus pulmonary syndrome?",
    ];
    let mut ties = 0;
    for q in questions {
        let first = env.json(&["search", q, "--k", "10", "--json"]);
        let first_ids = ids_of(&first);
        assert_eq!(first_ids.len(), 10);
        let before = server.served().len();
        let reranked = env.json(&["search", q, "--rerank", "--rerank-cut", "10:4", "--json"]);
        let served = server.served();
        assert_eq!(served.len(), before + 1, "one request per question");
        let s = served.last().expect("served");
        assert_eq!(s.query, q);
        assert_eq!(s.documents.len(), 10);
        let want = expected(&first_ids, &s.scores, 4);
        assert_eq!(ids_of(&reranked), want, "{q}: scores {:?}", s.scores);
        let firsts: Vec<u64> = reranked["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|r| r["first_rank"].as_u64().expect("first rank"))
            .collect();
        for (id, f) in want.iter().zip(&firsts) {
            assert_eq!(&first_ids[*f as usize - 1], id);
        }
        let mut sorted = s.scores.clone();
        sorted.sort_by(f64::total_cmp);
        ties += sorted.windows(2).filter(|w| w[0] == w[1]).count();
        // The same search again: every score from the cache, no request.
        let again = env.json(&["search", q, "--rerank", "--rerank-cut", "10:4", "--json"]);
        assert_eq!(server.served().len(), before + 1, "served from the cache");
        assert_eq!(again["rerank_cached"], 10);
        assert_eq!(ids_of(&again), want);
    }
    // Two-decimal scores tie: the first-stage order broke at least one tie above.
    assert!(ties > 0, "no tie was exercised");

    // `bench retrieval --rerank` times the stage after the hybrid ranking: two
    // questions, ten pairs each, scored by the server the first time and found in
    // the cache the second.
    let qfile = env.dir.path().join("bench.jsonl");
    std::fs::write(
        &qfile,
        "{\"id\": \"b1\", \"text\": \"How is rabies spread?\"}\n{\"id\": \"b2\", \"text\": \"Hantavirus symptoms\"}\n",
    )
    .expect("queries");
    let bench = |env: &Env| {
        env.json(&[
            "bench",
            "retrieval",
            "--queries",
            qfile.to_str().expect("utf8"),
            "--rerank",
            "--rerank-cut",
            "10:4",
            "--nprobes",
            "1",
            "--json",
        ])
    };
    let before = server.served().len();
    let b = bench(&env);
    assert_eq!(
        server.served().len(),
        before + 2,
        "one request per question"
    );
    assert_eq!(
        (
            b["rerank"]["scored"].as_u64(),
            b["rerank"]["cached"].as_u64()
        ),
        (Some(20), Some(0))
    );
    let stages: Vec<&str> = b["stages"]
        .as_array()
        .expect("stages")
        .iter()
        .filter_map(|s| s["stage"].as_str())
        .collect();
    assert!(
        stages.contains(&"rerank") && stages.contains(&"total hybrid + rerank"),
        "{stages:?}"
    );
    let b = bench(&env);
    assert_eq!(
        server.served().len(),
        before + 2,
        "the second run asks nothing"
    );
    assert_eq!(
        (
            b["rerank"]["scored"].as_u64(),
            b["rerank"]["cached"].as_u64()
        ),
        (Some(0), Some(20))
    );
}

#[test]
fn a_reranked_evaluation_is_a_configuration_computed_from_the_servers_scores() {
    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    reranking_workspace(&env, &server.url(), 60);
    let qs: Vec<Value> = common::sample_questions()
        .into_iter()
        .filter(|q| {
            let t = q["relevant"][0].as_str().unwrap_or("");
            FIVE_DOCS.iter().any(|d| t.starts_with(d))
        })
        .take(12)
        .collect();
    assert!(qs.len() >= 8, "{} questions", qs.len());
    let file = env.dir.path().join("q.jsonl");
    std::fs::write(
        &file,
        qs.iter().map(|q| format!("{q}\n")).collect::<String>(),
    )
    .expect("write");
    let runs = env.dir.path().join("runs");
    let args = [
        "eval",
        "retrieval",
        "--queries",
        file.to_str().expect("utf8"),
        "--methods",
        "hybrid",
        "--k",
        "1,5",
        "--rerank",
        "--run-out",
        runs.to_str().expect("utf8"),
        "--json",
    ];
    let rep = env.json(&args);
    let labels: Vec<&str> = rep["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["label"].as_str().expect("label"))
        .collect();
    assert_eq!(
        labels,
        ["hybrid-bm25-a0.70", "hybrid-bm25-a0.70+rerank10to5"]
    );
    assert_eq!(rep["breakdown_method"], "hybrid-bm25-a0.70+rerank10to5");
    assert_eq!(rep["rerank_stats"]["scored"], 10 * qs.len());
    // P@1 of the reranked configuration from the server's own scores and the
    // first-stage run file.
    let served = server.served();
    assert_eq!(served.len(), qs.len());
    let first_run = std::fs::read_to_string(
        std::fs::read_dir(&runs)
            .expect("runs")
            .map(|e| e.expect("entry").path())
            .find(|p| {
                let n = p.file_name().expect("name").to_string_lossy().into_owned();
                n.contains("hybrid") && !n.contains("rerank")
            })
            .expect("first-stage run file"),
    )
    .expect("run");
    let mut ranked: HashMap<String, Vec<(usize, String)>> = HashMap::new();
    for line in first_run.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        ranked
            .entry(f[0].to_string())
            .or_default()
            .push((f[3].parse().expect("rank"), f[2].to_string()));
    }
    let mut hits = 0.0;
    for q in &qs {
        let qid = q["id"].as_str().expect("id");
        let text = q["text"].as_str().expect("text");
        let mut order = ranked[qid].clone();
        order.sort();
        let order: Vec<String> = order.into_iter().take(10).map(|(_, id)| id).collect();
        let s = served.iter().find(|s| s.query == text).expect("served");
        let top = &expected(&order, &s.scores, 1)[0];
        if q["relevant"]
            .as_array()
            .expect("relevant")
            .iter()
            .any(|r| r == top.as_str())
        {
            hits += 1.0;
        }
    }
    let p1 = rep["results"][1]["metrics"]["p1"].as_f64().expect("P@1");
    assert!(
        (p1 - hits / qs.len() as f64).abs() < 1e-9,
        "P@1 {p1} against {hits}/{}",
        qs.len()
    );
    assert!(
        std::fs::read_dir(&runs).expect("runs").any(|e| e
            .expect("entry")
            .file_name()
            .to_string_lossy()
            .contains("rerank10to5")),
        "a run file for the reranked configuration"
    );
    // The same evaluation again pays for no pair.
    let again = env.json(&args);
    assert_eq!(again["rerank_stats"]["scored"], 0);
    assert_eq!(again["rerank_stats"]["cached"], 10 * qs.len());
    assert_eq!(server.served().len(), qs.len());
    assert_eq!(again["results"][1]["metrics"], rep["results"][1]["metrics"]);
}

#[test]
fn a_hostile_rerank_server_gives_one_clear_error_and_keeps_the_cache() {
    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    // The deadline leaves an honest reply (11 texts embedded by MiniLM) room on a
    // loaded 2-core machine, where one took over 2 s beside the model tests.
    reranking_workspace(&env, &server.url(), 6);
    let cached_q = "How can rabies be prevented?";
    env.json(&["search", cached_q, "--rerank", "--json"]);
    let cases = [
        (Mode::WrongIndex, "names document 13, but 10 were sent"),
        (Mode::NotANumber, "the rerank reply is not JSON"),
        (Mode::TooFew, "scores 9 documents of the 10 sent"),
        // Silent for 12 s: the idle timeout and the request's deadline are both 6 s
        // here, and whichever fires first names the wait.
        (Mode::Slow, "6 s"),
    ];
    for (i, (mode, why)) in cases.into_iter().enumerate() {
        server.set_mode(mode);
        let q = format!("What is hantavirus, question {i}?");
        let out = env
            .cmd()
            .args(["search", &q, "--rerank"])
            .output()
            .expect("spawn");
        assert!(!out.status.success(), "{mode:?} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "{mode:?}: {err}");
        if mode == Mode::Slow {
            assert!(
                err.contains("no response for 6 s")
                    || err.contains("longer than the request's deadline of 6 s"),
                "{err}"
            );
        }
        assert_eq!(
            err.trim().lines().count(),
            1,
            "{mode:?}: one error line: {err}"
        );
        // What was cached before is still served, with no request.
        let before = server.served().len();
        let again = env.json(&["search", cached_q, "--rerank", "--json"]);
        assert_eq!(again["rerank_cached"], 10, "{mode:?}");
        assert_eq!(server.served().len(), before);
    }
}

/// `generate --rerank`: the prompt holds the kept chunks in the server's order, each
/// answer records the stage and its time (inside `total_ms`), and a run continued
/// without the stage is refused.
#[test]
fn generate_prompts_with_the_reranked_chunks_and_records_the_stage() {
    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    reranking_workspace(&env, &server.url(), 60);
    let q = "How can rabies be prevented?";
    let file = env.dir.path().join("q.jsonl");
    std::fs::write(
        &file,
        format!("{}\n", serde_json::json!({"id": "q1", "text": q})),
    )
    .expect("write");
    let first = ids_of(&env.json(&["search", q, "--k", "10", "--json"]));
    let base = [
        "generate",
        "--questions",
        file.to_str().expect("utf8"),
        "--run",
        "rr",
        "--k",
        "3",
        "--max-tokens",
        "8",
    ];
    let mut args = base.to_vec();
    args.extend(["--rerank", "--rerank-cut", "10:5"]);
    env.ok(&args);
    let s = server.served();
    assert_eq!(s.len(), 1);
    let want = expected(&first, &s[0].scores, 3);
    let listed = env.json(&["report", "answers", "--list", "--run", "rr", "--json"]);
    let item = &listed["items"][0];
    let got: Vec<String> = item["chunk_ids"]
        .as_array()
        .expect("chunk ids")
        .iter()
        .map(|v| v.as_str().expect("id").to_string())
        .collect();
    assert_eq!(got, want);
    assert!(
        item["rerank"]
            .as_str()
            .expect("rerank")
            .starts_with("top 10 reranked, 5 kept by "),
        "{item}"
    );
    let ms = item["rerank_ms"].as_f64().expect("rerank ms");
    assert!(ms > 0.0 && item["total_ms"].as_f64().expect("total") > ms);
    // The same run name without the stage is another pipeline.
    let out = env.cmd().args(base).output().expect("spawn");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no rerank stage"), "{err}");
}

/// `eval mcqa --rerank`: each question is reranked once for all its k (one request to
/// the server), every k > 0 prompts with the first k of the kept chunks in the
/// server's order, the answers record the stage and its time, and the run continued
/// without the stage is refused.
#[test]
fn eval_mcqa_prompts_with_the_reranked_chunks_and_records_the_stage() {
    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    reranking_workspace(&env, &server.url(), 60);
    let q = "How can rabies be prevented?";
    let file = env.dir.path().join("mcq.jsonl");
    let question = serde_json::json!({
        "id": "m1",
        "text": q,
        "options": ["Vaccination", "Antibiotics", "Rest"],
        "answer": "A",
    });
    std::fs::write(&file, format!("{question}\n")).expect("write");
    let file = file.to_str().expect("utf8");
    let first = ids_of(&env.json(&["search", q, "--k", "10", "--json"]));
    let mcqa = ["eval", "mcqa", "--questions", file, "--run", "rr"];
    let staged = [
        &mcqa[..],
        &["--ks", "1,3", "--rerank", "--rerank-cut", "10:5"],
    ]
    .concat();
    env.ok(&staged);
    let s = server.served();
    assert_eq!(s.len(), 1, "one request serves every k");
    let want = expected(&first, &s[0].scores, 5);
    let listed = env.json(&[&mcqa[..], &["--report-only", "--list"]].concat());
    let items = listed["items"].as_array().expect("items");
    assert_eq!(items.len(), 2, "{listed}");
    for item in items {
        let k = item["k"].as_u64().expect("k") as usize;
        let got: Vec<String> = item["chunk_ids"]
            .as_array()
            .expect("chunk ids")
            .iter()
            .map(|v| v.as_str().expect("id").to_string())
            .collect();
        assert_eq!(got, want[..k], "k = {k}");
        assert!(
            item["rerank"]
                .as_str()
                .expect("rerank")
                .starts_with("top 10 reranked, 5 kept by "),
            "{item}"
        );
        let ms = item["rerank_ms"].as_f64().expect("rerank ms");
        assert!(ms > 0.0 && item["retrieval_ms"].as_f64().expect("retrieval") >= ms);
    }
    // A k the run lacks, asked without the stage: another pipeline, refused.
    let out = env
        .cmd()
        .args([&mcqa[..], &["--ks", "1,3,5"]].concat())
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("the rerank stage top 10 reranked"), "{err}");
}

/// The Query pane's rerank column, driven by keys: `R` asks the configured rerank
/// endpoint for the first N chunks' scores, the table then shows the kept chunks in
/// the server's order with their first-stage rank and score; `R` again turns it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_panes_rerank_column_follows_the_servers_scores() {
    use crossterm::event::KeyCode;

    use crate::common::tui::{key, on_query_pane, press, pump};

    let env = Env::new();
    let server = RerankServer::start(Mode::Honest);
    reranking_workspace(&env, &server.url(), 60);
    let q = "How can rabies be prevented?";
    let first = ids_of(&env.json(&["search", q, "--k", "10", "--json"]));
    let mut config = raglab::config::Config::default();
    config.models.embed = Some(common::model(raglab::config::DEFAULT_EMBED_MODEL));
    let mut endpoint: raglab::config::EndpointConfig =
        toml::from_str(&format!("url = \"{}\"\nrerank = true\n", server.url())).expect("endpoint");
    endpoint.max_concurrent = 1;
    config.endpoints = vec![endpoint];
    config.rerank.depth = Some(10);
    config.rerank.keep = Some(4);
    let ctx = common::tui::context(&env, config);
    let (mut app, mut jobs, mut rx) =
        on_query_pane(&ctx, &raglab::tui::TuiOptions::default()).await;
    press(&mut app, &mut jobs, '/');
    for c in q.chars() {
        press(&mut app, &mut jobs, c);
    }
    key(&mut app, &mut jobs, KeyCode::Enter);
    let limit = std::time::Duration::from_secs(60);
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| !a.query.is_busy(),
        limit,
        (0, 0),
    )
    .await;
    press(&mut app, &mut jobs, 'R');
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| a.query.rerank().described.is_some() || (!a.query.rerank().on),
        limit,
        (0, 0),
    )
    .await;
    let served = server.served();
    let s = served.last().expect("served");
    let want = expected(&first, &s.scores, 4);
    let screen = common::screen(&app, 160, 48);
    assert!(
        screen.contains("Reranked: top 10 reranked, 4 kept"),
        "{screen}"
    );
    assert!(
        screen.contains("first") && screen.contains("rerank"),
        "{screen}"
    );
    let rows: Vec<&str> = screen
        .lines()
        .filter(|l| want.iter().any(|id| l.contains(id.as_str())))
        .collect();
    assert_eq!(rows.len(), 4, "{screen}");
    for (row, id) in rows.iter().zip(&want) {
        assert!(row.contains(id.as_str()), "order: {screen}");
        let f = first.iter().position(|x| x == id).expect("first rank") + 1;
        let score = s.scores[f - 1];
        assert!(row.contains(&format!("{score:.4}")), "{row}");
    }
    // Another first stage (`m`: linear, then BM25 alone) asks by itself for the scores
    // its first 10 lack: the server is asked again, never for a chunk twice, and the
    // first 10 of the new ranking all have their score.
    let asked_before = server.served().len();
    press(&mut app, &mut jobs, 'm');
    press(&mut app, &mut jobs, 'm');
    pump(
        &mut jobs,
        &mut app,
        &mut rx,
        |_, a| !a.query.rerank().pending,
        limit,
        (0, 0),
    )
    .await;
    let served = server.served();
    assert!(
        served.len() > asked_before,
        "no new request after the method changed ({} before, {} after)",
        asked_before,
        served.len()
    );
    let texts: std::collections::BTreeSet<&str> = served
        .iter()
        .flat_map(|s| s.documents.iter().map(String::as_str))
        .collect();
    let asked: usize = served.iter().map(|s| s.documents.len()).sum();
    assert_eq!(asked, texts.len(), "a chunk was asked for twice");
    assert_eq!(
        app.query.config().method,
        raglab::core::retrieval::Method::Bm25
    );
    let lists = app.query.lists().expect("lists");
    let bm25 = lists.ranking(raglab::core::retrieval::Method::Bm25, 0.0);
    let unscored: Vec<&&str> = bm25
        .iter()
        .take(10)
        .filter(|id| lists.rerank_score(id).is_none())
        .collect();
    assert!(unscored.is_empty(), "unscored after `m`: {unscored:?}");
    let screen = common::screen(&app, 160, 48);
    assert!(!screen.contains("reranking"), "{screen}");
    press(&mut app, &mut jobs, 'R');
    let screen = common::screen(&app, 160, 48);
    assert!(screen.contains(" Top "), "{screen}");
    assert!(!screen.contains("Reranked:"), "{screen}");
}
