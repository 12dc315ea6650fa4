//! Retrieval through the real binary: tantivy BM25/TF-IDF, llama.cpp MiniLM embeddings
//! in lance, weighted RRF, and `eval retrieval` with its run files.

mod common;

use std::collections::HashMap;

use common::{Env, sample_guidance};
use raglab::core::metrics::{Qrel, order_run, query_metrics};

fn write_docs(env: &Env, docs: &[(&str, &str)]) -> std::path::PathBuf {
    let dir = env.dir.path().join("docs");
    std::fs::create_dir_all(&dir).expect("mkdir");
    for (name, text) in docs {
        std::fs::write(dir.join(name), text).expect("write");
    }
    dir
}

#[test]
fn sparse_methods_rank_by_term_statistics() {
    let env = Env::new();
    let dir = write_docs(
        &env,
        &[
            (
                "a.md",
                "# Rabies\n\nRabies vaccine for dogs. Rabies rabies.",
            ),
            ("b.md", "# Flu\n\nInfluenza vaccine every year."),
            ("c.md", "# Hands\n\nWash hands with soap and water."),
        ],
    );
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    let s = env.json(&["index", "--sparse-only", "--json"]);
    assert_eq!(s["sparse"]["added"], 3);
    for method in ["bm25", "tfidf"] {
        let r = env.json(&["search", "rabies vaccine", "--method", method, "--json"]);
        let ids: Vec<&str> = r["results"]
            .as_array()
            .expect("results")
            .iter()
            .filter_map(|x| x["chunk_id"].as_str())
            .collect();
        assert_eq!(ids.first(), Some(&"a#rabies"), "{method}: {ids:?}");
        assert!(ids.contains(&"b#flu"), "{method}: shares `vaccine`");
        assert!(!ids.contains(&"c#hands"), "{method}: no shared term");
    }
    // TF-IDF cosine by hand (scikit-learn weighting): query {rabies, vaccine}; N = 3.
    // Header paths are indexed too: a = "rabies" (x4) + "vaccine", "for", "dogs".
    let idf = |df: f64| ((1.0 + 3.0) / (1.0 + df)).ln() + 1.0;
    let (i_rab, i_vac, i_1) = (idf(1.0), idf(2.0), idf(1.0));
    let a_vec = [4.0 * i_rab, i_vac, i_1, i_1];
    let a_norm = a_vec.iter().map(|x| x * x).sum::<f64>().sqrt();
    let q_norm = (i_rab * i_rab + i_vac * i_vac).sqrt();
    let expected = (4.0 * i_rab * i_rab + i_vac * i_vac) / (a_norm * q_norm);
    let r = env.json(&["search", "rabies vaccine", "--method", "tfidf", "--json"]);
    let got = r["results"][0]["sparse_rank"].as_u64();
    assert_eq!(got, Some(1), "BM25 also ranks a first");
    // The tf-idf score itself is in the run file of `eval --run-out`.
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        "{\"id\": \"q1\", \"text\": \"rabies vaccine\", \"relevant\": [\"a#rabies\"]}\n",
    )
    .expect("write");
    let runs = env.dir.path().join("runs");
    env.ok(&[
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf",
        "--run-out",
        runs.to_str().expect("utf8"),
    ]);
    let run = std::fs::read_to_string(runs.join("tfidf.run")).expect("run file");
    let first: Vec<&str> = run
        .lines()
        .next()
        .expect("line")
        .split_whitespace()
        .collect();
    assert_eq!(first[2], "a#rabies");
    let s: f64 = first[4].parse().expect("score");
    assert!(
        (s - expected).abs() < 1e-6,
        "tf-idf cosine {s} vs hand-computed {expected}"
    );
}

#[test]
fn index_is_incremental() {
    let env = Env::new();
    let dir = write_docs(
        &env,
        &[("a.md", "# A\n\nalpha text"), ("b.md", "# B\n\nbeta text")],
    );
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    let first = env.json(&["index", "--json"]);
    assert_eq!(first["embedded"], 2);
    std::fs::write(dir.join("c.md"), "# C\n\ngamma text").expect("write");
    std::fs::write(dir.join("a.md"), "# A\n\nalpha text, changed").expect("write");
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    let second = env.json(&["index", "--json"]);
    assert_eq!(
        second["embedded"], 2,
        "only the new and the changed chunk: {second}"
    );
    assert_eq!(second["sparse"]["added"], 2);
    assert_eq!(second["sparse"]["removed"], 1);
    assert_eq!(second["sparse"]["unchanged"], 1);
    let third = env.json(&["index", "--json"]);
    assert_eq!(third["embedded"], 0);
}

/// The whole sample: ingest with indexing, hybrid search provenance, and an evaluation
/// whose run files reproduce the reported metrics.
#[test]
fn sample_search_and_evaluation() {
    let env = Env::new();
    env.ok(&[
        "ingest",
        sample_guidance().to_str().expect("utf8"),
        "--index",
    ]);
    let r = env.json(&[
        "search",
        "How is rabies prevented?",
        "-k",
        "10",
        "--alpha",
        "0.7",
        "--json",
    ]);
    let rows = r["results"].as_array().expect("results");
    assert_eq!(rows.len(), 10);
    for row in rows {
        // Every fused score is the SPEC formula applied to the shown ranks.
        let d = row["dense_rank"].as_f64().map_or(0.0, |r| 0.7 / (60.0 + r));
        let s = row["sparse_rank"]
            .as_f64()
            .map_or(0.0, |r| 0.3 / (60.0 + r));
        let f = row["fused_score"].as_f64().expect("fused");
        assert!((f - (d + s)).abs() < 1e-12, "{row}");
    }
    assert!(
        rows.windows(2)
            .all(|w| w[0]["fused_score"].as_f64() >= w[1]["fused_score"].as_f64())
    );
    assert!(
        rows[0]["chunk_id"]
            .as_str()
            .expect("id")
            .starts_with("rabies/"),
        "{}",
        rows[0]
    );

    let runs = env.dir.path().join("runs");
    let q = common::repo().join("sample-data/questions.jsonl");
    let out = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--alpha-sweep",
        "--run-out",
        runs.to_str().expect("utf8"),
        "--json",
    ]);
    assert_eq!(out["evaluated"], 259);
    assert_eq!(out["alpha_sweep"].as_array().map(Vec::len), Some(10));
    // Recompute each method's nDCG@10 and MRR from its run file with the metric code.
    let questions = common::sample_questions();
    let qrels: HashMap<String, Qrel> = questions
        .iter()
        .map(|q| {
            let rel = q["relevant"]
                .as_array()
                .expect("rel")
                .iter()
                .map(|d| (d.as_str().expect("s").to_string(), 1))
                .collect();
            (q["id"].as_str().expect("id").to_string(), rel)
        })
        .collect();
    for res in out["results"].as_array().expect("results") {
        let method = res["method"].as_str().expect("method");
        let name = match res["alpha"].as_f64() {
            Some(a) => format!("{method}-a{a:.2}"),
            None => method.to_string(),
        };
        let text = std::fs::read_to_string(runs.join(format!("{name}.run"))).expect("run file");
        let mut per: HashMap<String, Vec<(String, f64)>> = HashMap::new();
        for line in text.lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            per.entry(f[0].into())
                .or_default()
                .push((f[2].into(), f[4].parse().expect("score")));
        }
        let mut ndcg = 0.0;
        let mut rr = 0.0;
        let mut n = 0.0;
        for (qid, qrel) in &qrels {
            // Absent from the run (nothing retrieved): dropped, as trec_eval without -c.
            let Some(hits) = per.get(qid) else { continue };
            let mut hits = hits.clone();
            order_run(&mut hits);
            let ranked: Vec<&str> = hits.iter().map(|(d, _)| d.as_str()).collect();
            let m = query_metrics(&ranked, qrel);
            ndcg += m.ndcg10;
            rr += m.rr;
            n += 1.0;
        }
        assert_eq!(
            Some(n),
            res["metrics"]["queries"].as_f64(),
            "{name} queries"
        );
        assert!(
            (ndcg / n - res["metrics"]["ndcg10"].as_f64().expect("n")).abs() < 1e-6,
            "{name} nDCG"
        );
        assert!(
            (rr / n - res["metrics"]["mrr"].as_f64().expect("m")).abs() < 1e-6,
            "{name} MRR"
        );
        assert!(
            res["metrics"]["recall10"].as_f64().expect("r") > 0.5,
            "{name} retrieves something sensible"
        );
    }
    let failures = env.workspace().join("eval/last-failures.json");
    assert!(failures.is_file());

    // The lance ANN index gives an approximate dense list of the same quality.
    env.ok(&["index", "--ann"]);
    let ann = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "dense",
        "--ann",
        "--json",
    ]);
    let exact = out["results"]
        .as_array()
        .expect("r")
        .iter()
        .find(|r| r["method"] == "dense")
        .expect("dense")["metrics"]["recall10"]
        .as_f64()
        .expect("x");
    let approx = ann["results"][0]["metrics"]["recall10"]
        .as_f64()
        .expect("a");
    assert!(approx > 0.9, "ANN recall@10 {approx} vs exact {exact}");
}

/// A question its method retrieves nothing for is absent from that method's run and
/// dropped from its means (trec_eval without -c); the report counts it, per method.
#[test]
fn eval_drops_queries_with_no_results() {
    let env = Env::new();
    let dir = write_docs(
        &env,
        &[
            ("a.md", "# Rabies\n\nRabies vaccine for dogs."),
            ("b.md", "# Flu\n\nInfluenza vaccine every year."),
        ],
    );
    env.ok(&["ingest", dir.to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let q = env.dir.path().join("q.jsonl");
    std::fs::write(
        &q,
        concat!(
            "{\"id\": \"q1\", \"text\": \"rabies vaccine\", \"relevant\": [\"a#rabies\"]}\n",
            "{\"id\": \"q2\", \"text\": \"zzzz qqqq\", \"relevant\": [\"b#flu\"]}\n",
            "{\"id\": \"q3\", \"text\": \"flu\", \"relevant\": []}\n",
        ),
    )
    .expect("write");
    let runs = env.dir.path().join("runs");
    let args = [
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf",
        "--run-out",
        runs.to_str().expect("utf8"),
    ];
    let out = env.json(&[&args[..], &["--json"]].concat());
    assert_eq!(out["queries"], 3);
    assert_eq!(out["evaluated"], 1, "{out}");
    assert_eq!(out["dropped_without_relevant"], 1);
    assert_eq!(out["dropped_empty_results"], 1);
    for res in out["results"].as_array().expect("results") {
        assert_eq!(res["dropped_empty_results"], 1, "{res}");
        assert_eq!(res["metrics"]["queries"], 1, "{res}");
        // q1 alone: a#rabies first. Counting q2 as 0 would halve these.
        assert_eq!(res["metrics"]["mrr"], 1.0, "{res}");
        assert_eq!(res["recall_at"][0][1], 1.0, "{res}");
        let name = res["method"].as_str().expect("method");
        let run = std::fs::read_to_string(runs.join(format!("{name}.run"))).expect("run");
        assert!(run.lines().all(|l| !l.starts_with("q2 ")), "{run}");
    }
    // q2 retrieved nothing: still a failed question for the analyst.
    let failed: Vec<&str> = out["failed"]
        .as_array()
        .expect("failed")
        .iter()
        .filter_map(|f| f["id"].as_str())
        .collect();
    assert_eq!(failed, vec!["q2"], "{}", out["failed"]);
    let text = env.ok(&args);
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("1 with no results") && text.contains("absent from the run"),
        "{text}"
    );
    assert!(
        text.contains("bm25: 1 query with no results (absent from its run) dropped"),
        "{text}"
    );
}
