//! `raglab report study` through the real binary on the sample data (real lance,
//! tantivy and the MiniLM embedder), with answer runs, judgements, an MCQA run and a
//! two-reviewer study stored in the workspace as their commands store them: every
//! number of `report.md` equals the JSON of the command it summarises (`corpus stats`,
//! `eval retrieval`, `compare`, `eval mcqa`, `report answers`, `agree`), for the lead
//! and for a reviewer, who sees only what blinding lets them; every SVG parses as XML
//! and holds the series it should: one polyline per swept method with one point per
//! alpha, placed on one linear axis by the sweep's values, one bar per topic, one line
//! per criterion.

use crate::common;

use std::path::Path;

use common::Env;
use common::records::{self, MODEL_SHA, judged};
use raglab::config::Config;
use raglab::service::answer::{AnswerRecord, judgements, save_answer};
use raglab::service::base::default_rubric;
use raglab::service::evaluate::{McqaRecord, mcqa_table};
use raglab::service::study;
use serde_json::Value;

const P: &str = "pass";
const F: &str = "fail";

fn answer(
    run: &str,
    q: &str,
    k: u32,
    method: &str,
    seconds: f64,
    rank: Option<u32>,
) -> AnswerRecord {
    AnswerRecord {
        answer: format!("answer of {run} to {q}"),
        target_rank: rank,
        target_prompt_rank: rank,
        ..records::answer(run, q, k, method, seconds)
    }
}

/// A no-retrieval baseline and three RAG runs of one model over q1-q3, each judged
/// on two criteria; the target sat at rank 1 (r3), 3 (r5) and 9 (r10).
async fn store_answers(ctx: &raglab::service::Context) {
    type Run<'a> = (
        &'a str,
        u32,
        &'a str,
        Option<u32>,
        [(&'a [&'a str], f64); 3],
    );
    let runs: [Run; 4] = [
        (
            "base",
            0,
            "none",
            None,
            [(&[P, F], 1.0), (&[F, F], 1.0), (&[P, P], 2.0)],
        ),
        (
            "r3",
            3,
            "hybrid",
            Some(1),
            [(&[P, P], 3.0), (&[P, F], 2.0), (&[P, P], 4.0)],
        ),
        (
            "r5",
            5,
            "dense",
            Some(3),
            [(&[F, F], 1.5), (&[F, F], 1.5), (&[P, F], 1.5)],
        ),
        (
            "r10",
            10,
            "bm25",
            Some(9),
            [(&[P, P], 5.0), (&[P, P], 5.0), (&[P, F], 5.0)],
        ),
    ];
    let mut js = Vec::new();
    for (run, k, method, rank, rows) in runs {
        for (i, (labels, s)) in rows.into_iter().enumerate() {
            let a = answer(run, &format!("q{}", i + 1), k, method, s, rank);
            js.push(judged(&a, labels));
            save_answer(ctx, &a).await.expect("save answer");
        }
    }
    judgements(&ctx.workspace)
        .append(&js)
        .await
        .expect("judgements");
}

/// An MCQA run `m` over four questions at k = 0, 1, 3; returns the questions file.
async fn store_mcqa(ctx: &raglab::service::Context, dir: &Path) -> std::path::PathBuf {
    let gold = ["A", "A", "B", "C"];
    let chosen: [[Option<&str>; 4]; 3] = [
        [Some("A"), Some("B"), Some("B"), Some("B")],
        [Some("A"), Some("A"), Some("B"), None],
        [Some("A"), Some("A"), Some("B"), Some("C")],
    ];
    let ranks: [[Option<u32>; 4]; 3] = [
        [None; 4],
        [Some(1), Some(1), None, None],
        [Some(1), Some(2), Some(3), None],
    ];
    let mut recs = Vec::new();
    for (i, k) in [0u32, 1, 3].into_iter().enumerate() {
        for q in 0..4 {
            let predicted = chosen[i][q];
            recs.push(McqaRecord {
                run: "m".into(),
                question_id: format!("q{q}"),
                k,
                topic: if q < 2 { "rabies" } else { "flu" }.into(),
                method: if k == 0 { "none" } else { "hybrid" }.into(),
                alpha: 0.7,
                embed_model: None,
                options: vec!["yes".into(), "no".into(), "maybe".into()],
                answer: gold[q].into(),
                predicted: predicted.map(str::to_string),
                correct: predicted == Some(gold[q]),
                raw_output: predicted.unwrap_or("?").into(),
                target_ids: vec![],
                chunk_ids: vec![],
                target_rank: ranks[i][q],
                target_list_rank: ranks[i][q],
                prompt: String::new(),
                prompt_tokens: 0,
                retrieval_ms: 0.0,
                total_ms: 500.0 * f64::from(k + 1),
                model_file: "SmolLM2-135M-Instruct.Q4_1.gguf".into(),
                model_sha256: MODEL_SHA.into(),
                created_at: String::new(),
                endpoint: None,
                served_model: None,
                template: None,
                template_sha256: None,
                context_policy: None,
                chunk_order: None,
                rerank: None,
                rerank_ms: None,
            });
        }
    }
    mcqa_table(&ctx.workspace)
        .append(&recs)
        .await
        .expect("mcqa");
    let file = dir.join("mcq.jsonl");
    let lines: String = (0..4)
        .map(|q| {
            format!(
                "{{\"id\": \"q{q}\", \"text\": \"Q{q}?\", \"options\": [\"yes\", \"no\", \"maybe\"], \"answer\": \"{}\"}}\n",
                gold[q]
            )
        })
        .collect();
    std::fs::write(&file, lines).expect("questions");
    file
}

/// Items i0, i1 (answers r3/q1 and r3/q2); ann and bob label all of i0 (revealed),
/// ann all of i1 and bob one criterion of it (blind to both).
async fn store_study(ctx: &raglab::service::Context, dir: &Path) {
    let rubric = default_rubric();
    let items = dir.join("items.jsonl");
    let text: String = (0..2)
        .map(|i| {
            format!(
                "{{\"item_id\": \"i{i}\", \"question\": \"Question {i}?\", \"answer\": \"Answer {i}\", \"answer_id\": \"r3/q{}/s42\"}}\n",
                i + 1
            )
        })
        .collect();
    std::fs::write(&items, text).expect("items");
    study::create_items(ctx, &study::ItemSource::File(items), None, None)
        .await
        .expect("items");
    let mut rows = String::new();
    for (item, who, n) in [
        ("i0", "ann", 4),
        ("i0", "bob", 4),
        ("i1", "ann", 4),
        ("i1", "bob", 1),
    ] {
        for (k, c) in rubric.criteria.iter().take(n).enumerate() {
            let v = if who == "bob" && k >= 2 { F } else { P };
            rows.push_str(&format!(
                "{{\"item_id\": \"{item}\", \"reviewer\": \"{who}\", \"criterion\": \"{}\", \"label\": \"{v}\"}}\n",
                c.key
            ));
        }
    }
    let file = dir.join("labels.jsonl");
    std::fs::write(&file, rows).expect("labels");
    study::import_labels(ctx, &rubric, &file)
        .await
        .expect("import");
}

/// The rows of the first markdown table after the line holding `marker`: header
/// first, the separator left out, each row's cells trimmed.
fn table(md: &str, marker: &str) -> Vec<Vec<String>> {
    let start = md
        .find(marker)
        .unwrap_or_else(|| panic!("no `{marker}` in the report:\n{md}"));
    md[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .filter(|l| !l.starts_with("|---"))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect()
        })
        .collect()
}

/// The row whose first cells are `keys`.
fn find<'a>(rows: &'a [Vec<String>], keys: &[&str]) -> &'a [String] {
    rows.iter()
        .find(|r| r.len() >= keys.len() && r.iter().zip(keys).all(|(c, k)| c == k))
        .unwrap_or_else(|| panic!("no row {keys:?} in {rows:?}"))
}

fn f4(v: &Value) -> String {
    format!(
        "{:.4}",
        v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
    )
}

/// A printed p-value against the JSON's: within half a unit of its last digit.
fn same_p(cell: &str, p: &Value) {
    let p = p.as_f64().expect("p");
    let got: f64 = cell.parse().unwrap_or_else(|_| panic!("p `{cell}`"));
    let tol = if p < 1e-3 { p * 0.006 } else { 0.5e-4 + 1e-12 };
    assert!((got - p).abs() <= tol, "printed {cell}, JSON {p}");
}

/// A kappa cell of `agree`'s markdown, re-made from its JSON estimate.
fn est(e: &Value) -> String {
    match (e["value"].as_f64(), e["lo"].as_f64(), e["hi"].as_f64()) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.2} [{lo:.2}, {hi:.2}]"),
        (Some(v), _, _) => format!("{v:.2}"),
        _ => "undefined".into(),
    }
}

fn svg(dir: &Path, name: &str) -> String {
    std::fs::read_to_string(dir.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Every data series of an SVG chart as its points: the `<polyline>`s drawn 2 px wide
/// (axes and grid lines are 1 px wide).
fn polylines(text: &str) -> Vec<Vec<(f64, f64)>> {
    let doc = roxmltree::Document::parse(text).expect("the SVG parses as XML");
    let all = doc
        .descendants()
        .filter(|n| n.has_tag_name("polyline"))
        .count();
    assert!(all > 0, "no polyline at all");
    doc.descendants()
        .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke-width") == Some("2"))
        .map(|n| {
            let nums: Vec<f64> = n
                .attribute("points")
                .expect("points")
                .split([' ', ','])
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().expect("coordinate"))
                .collect();
            nums.chunks(2).map(|c| (c[0], c[1])).collect()
        })
        .collect()
}

/// `<circle>`s filled with the first series colour (a scatter's points).
fn points(text: &str) -> usize {
    let doc = roxmltree::Document::parse(text).expect("the SVG parses as XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("circle"))
        .filter(|n| {
            n.attribute("fill")
                .is_some_and(|f| f.eq_ignore_ascii_case("#1F77B4"))
        })
        .count()
}

/// `<rect>`s filled with the bar colour.
fn bars(text: &str) -> usize {
    let doc = roxmltree::Document::parse(text).expect("the SVG parses as XML");
    doc.descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter(|n| {
            n.attribute("fill")
                .is_some_and(|f| f.eq_ignore_ascii_case("#1F77B4"))
        })
        .count()
}

/// The names under a bar chart's bars, left to right: the `<text>`s turned 90
/// degrees. Each must be anchored at its start, below the bars' common bottom edge:
/// a name turned about its middle, or starting above that edge, runs into the plot,
/// hidden by the bars.
fn bar_names(text: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(text).expect("the SVG parses as XML");
    let number = |n: &roxmltree::Node, a: &str| -> f64 {
        n.attribute(a).expect(a).parse().expect("a number")
    };
    let bottom = doc
        .descendants()
        .filter(|n| n.has_tag_name("rect"))
        .filter(|n| {
            n.attribute("fill")
                .is_some_and(|f| f.eq_ignore_ascii_case("#1F77B4"))
        })
        .map(|n| number(&n, "y") + number(&n, "height"))
        .fold(f64::NEG_INFINITY, f64::max);
    let mut names: Vec<(f64, String)> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .filter(|n| {
            n.attribute("transform")
                .is_some_and(|t| t.starts_with("rotate(90"))
        })
        .map(|n| {
            assert!(
                number(&n, "y") > bottom,
                "a bar's name starts inside the plot"
            );
            assert_eq!(
                n.attribute("text-anchor"),
                Some("start"),
                "a turned name centred on its tick runs half into the plot"
            );
            (
                number(&n, "x"),
                n.text().unwrap_or_default().trim().to_string(),
            )
        })
        .collect();
    names.sort_by(|a, b| a.0.total_cmp(&b.0));
    names.into_iter().map(|(_, name)| name).collect()
}

fn report(env: &Env, viewer: &[&str], name: &str) -> (String, std::path::PathBuf) {
    let out = env.dir.path().join(name);
    let o = out.to_str().expect("utf8");
    env.ok(&[viewer, &["report", "study", "--out", o][..]].concat());
    let md = std::fs::read_to_string(out.join("report.md")).expect("report.md");
    (md, out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn study_report_numbers_equal_the_commands_json() {
    let env = Env::new();
    common::sample_indexed(&env);
    // Before any evaluation: the corpus, and for the rest the command producing it.
    let (md0, _) = report(&env, &["--role", "lead"], "before");
    assert!(md0.contains("## Corpus") && md0.contains("Source: `raglab corpus stats --json`"));
    assert!(
        md0.contains("no data yet: run `raglab eval retrieval --queries FILE"),
        "{md0}"
    );
    assert!(
        md0.contains("no data yet: run `raglab eval mcqa --questions FILE`"),
        "{md0}"
    );

    let q = common::repo().join("sample-data/questions.jsonl");
    let ev = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        q.to_str().expect("utf8"),
        "--methods",
        "bm25,tfidf,dense,hybrid,linear",
        "--sparse",
        "bm25,tfidf",
        "--alpha-sweep",
        "--json",
    ]);
    let cmp = env.json(&["compare", "--json"]);
    let stats = env.json(&["corpus", "stats", "--json"]);
    let ctx = common::context(&env, Config::default());
    store_answers(&ctx).await;
    let mcq = store_mcqa(&ctx, env.dir.path()).await;
    store_study(&ctx, env.dir.path()).await;
    let mc = env.json(&[
        "eval",
        "mcqa",
        "--questions",
        mcq.to_str().expect("utf8"),
        "--run",
        "m",
        "--report-only",
        "--json",
    ]);
    let lead = ["--role", "lead"];
    let answers = env.json(
        &[
            &lead[..],
            &["report", "answers", "--baseline", "base", "--json"],
        ]
        .concat(),
    );
    let agree = env.json(&[&lead[..], &["agree", "--json"]].concat());
    let started = std::time::Instant::now();
    let (md, dir) = report(&env, &lead, "lead");
    eprintln!(
        "report study on the sample: {:.2} s",
        started.elapsed().as_secs_f64()
    );

    // Corpus.
    let c = table(&md, "## Corpus");
    for (i, key) in ["documents", "chunks", "words"].iter().enumerate() {
        assert_eq!(c[1][i], stats[key].to_string(), "{key}");
    }
    assert_eq!(
        c[1][6],
        stats["topics"]
            .as_object()
            .expect("topics")
            .len()
            .to_string()
    );

    // Retrieval per configuration, the paper's rows beside.
    let t = table(&md, "## Retrieval per configuration");
    let results = ev["results"].as_array().expect("results");
    assert_eq!(t.len(), 1 + results.len() + 4, "{t:?}");
    for r in results {
        let row = find(&t, &[r["label"].as_str().expect("label")]);
        let m = &r["metrics"];
        for (i, key) in ["p1", "recall5", "recall10", "mrr", "ndcg10"]
            .iter()
            .enumerate()
        {
            assert_eq!(row[1 + i], f4(&m[key]), "{} {key}", r["label"]);
        }
        assert_eq!(row[6], m["queries"].to_string());
    }
    assert_eq!(find(&t, &["paper: BM25 (Table 3)"])[5], "0.79");

    // The alpha sweep: table, then the chart's series.
    let sweep = ev["alpha_sweep"].as_array().expect("sweep");
    let st = table(&md, "### Alpha sweep");
    assert_eq!(st.len(), 1 + sweep.len());
    for (row, p) in st[1..].iter().zip(sweep) {
        assert_eq!(row[0], p["method"].as_str().expect("method"));
        assert_eq!(row[1], p["sparse"].as_str().expect("sparse"));
        assert_eq!(
            row[2],
            format!("{:.2}", p["alpha"].as_f64().expect("alpha"))
        );
        assert_eq!(row[7], f4(&p["metrics"]["ndcg10"]));
    }
    let lines = polylines(&svg(&dir, "alpha-sweep.svg"));
    assert_eq!(
        lines.len(),
        4,
        "hybrid and linear, each with BM25 and TF-IDF"
    );
    // One linear y axis maps every value to its pixel: fit it on the extremes of all
    // points, and every point sits within a pixel of its value's place.
    let mut pts: Vec<(f64, f64)> = Vec::new();
    for (line, (method, sparse)) in lines.iter().zip([
        ("hybrid", "bm25"),
        ("hybrid", "tfidf"),
        ("linear", "bm25"),
        ("linear", "tfidf"),
    ]) {
        let values: Vec<f64> = sweep
            .iter()
            .filter(|p| p["method"] == method && p["sparse"] == sparse)
            .map(|p| p["metrics"]["ndcg10"].as_f64().expect("ndcg"))
            .collect();
        assert_eq!(line.len(), 10, "{method}-{sparse}: one point per alpha");
        assert!(
            line.windows(2).all(|w| w[0].0 < w[1].0),
            "alpha grows left to right"
        );
        pts.extend(values.iter().zip(line).map(|(v, p)| (*v, p.1)));
    }
    // Least squares over all 40 points: y = a + b v.
    let n = pts.len() as f64;
    let (mv, my) = (
        pts.iter().map(|p| p.0).sum::<f64>() / n,
        pts.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let var: f64 = pts.iter().map(|p| (p.0 - mv).powi(2)).sum();
    assert!(var > 1e-6, "the sweep varies: {pts:?}");
    let slope = pts.iter().map(|p| (p.0 - mv) * (p.1 - my)).sum::<f64>() / var;
    assert!(slope < 0.0, "higher values are drawn higher");
    for (v, y) in &pts {
        let want = my + slope * (v - mv);
        assert!(
            (y - want).abs() <= 1.5,
            "value {v} at y {y}, the axis puts it at {want}"
        );
    }

    // Breakdowns: eta^2 of every configuration, the headline's groups and chart.
    let eta = table(&md, "### Topic and target-length breakdowns");
    for r in results {
        let row = find(&eta, &[r["label"].as_str().expect("label")]);
        assert_eq!(row[1], f4(&r["by_topic"]["eta_squared_ndcg10"]));
        assert_eq!(row[2], f4(&r["by_target_length"]["eta_squared_ndcg10"]));
    }
    let head = ev["breakdown_method"].as_str().expect("headline");
    let groups = ev["by_topic"]["groups"].as_object().expect("groups");
    let topics = table(&md, "![topic.svg](topic.svg)");
    assert_eq!(topics.len(), 1 + groups.len(), "{head}");
    for (g, m) in groups {
        assert_eq!(find(&topics, &[g])[2], f4(&m["ndcg10"]), "{g}");
    }
    assert_eq!(bars(&svg(&dir, "topic.svg")), groups.len());
    let mut named = bar_names(&svg(&dir, "topic.svg"));
    named.sort();
    // Names past 16 characters are cut to 15 and an ellipsis.
    let mut topic_names: Vec<String> = groups
        .keys()
        .map(|k| match k.chars().count() {
            0..=16 => k.clone(),
            _ => k.chars().take(15).chain(['…']).collect(),
        })
        .collect();
    topic_names.sort();
    assert_eq!(named, topic_names);
    let lengths = ev["by_target_length"]["groups"]
        .as_object()
        .expect("groups");
    assert_eq!(bars(&svg(&dir, "length.svg")), lengths.len());

    // Significance: every row of `compare --json`, same seed, same numbers.
    let sig = table(&md, "## Which configuration is really better?");
    let rows = cmp["rows"].as_array().expect("rows");
    assert_eq!(sig.len(), 1 + rows.len());
    for r in rows {
        let keys = [
            r["metric"].as_str().expect("metric"),
            r["candidate"].as_str().expect("candidate"),
            r["baseline"].as_str().expect("baseline"),
        ];
        let row = find(&sig, &keys);
        assert_eq!(
            row[3],
            format!("{:+.4}", r["difference"].as_f64().expect("diff"))
        );
        let ci = r["ci"].as_array().expect("ci");
        assert_eq!(
            row[4],
            format!(
                "[{:+.4}, {:+.4}]",
                ci[0].as_f64().expect("lo"),
                ci[1].as_f64().expect("hi")
            )
        );
        assert_eq!(
            row[5],
            format!("{}/{}/{}", r["wins"], r["ties"], r["losses"])
        );
        same_p(&row[6], &r["randomisation_p"]);
        same_p(&row[7], &r["randomisation_p_holm"]);
        if r["t_test"].is_null() {
            assert_eq!(row[9], "-");
        } else {
            same_p(&row[9], &r["t_test"]["p"]);
            same_p(&row[10], &r["t_test_p_holm"]);
        }
    }

    // MCQA by k, and its charts.
    let by_k = mc["report"]["by_k"].as_array().expect("by_k");
    let mt = table(&md, "## Multiple-choice accuracy");
    assert_eq!(mt.len(), 1 + by_k.len());
    for k in by_k {
        let row = find(&mt, &[&k["k"].to_string()]);
        assert_eq!(row[1], f4(&k["overall"]["accuracy"]));
        assert_eq!(row[3], k["overall"]["n"].to_string());
        assert_eq!(row[4], f4(&k["macro_f1"]));
    }
    let mk = polylines(&svg(&dir, "mcqa-by-k.svg"));
    assert_eq!(mk.len(), 2, "all questions, target in the prompt");
    assert_eq!(mk[0].len(), by_k.len());
    // k = 3: ranks 1, 2, 3 and one question without its target.
    assert_eq!(bars(&svg(&dir, "mcqa-by-rank.svg")), 4);

    // Judge pass rates: per run as `report answers`, pooled over runs by rank bucket.
    let per_run = table(&md, "Pass rate per criterion per run");
    let col = |t: &[Vec<String>], name: &str| {
        t[0].iter()
            .position(|c| c == name)
            .unwrap_or_else(|| panic!("no column {name} in {:?}", t[0]))
    };
    for run in ["base", "r3", "r5", "r10"] {
        let row = find(&per_run, &[run]);
        let v = &answers[run]["pass_rates"];
        for c in ["faithfulness", "completeness"] {
            assert_eq!(
                row[col(&per_run, c)],
                f4(&v[c]["overall"]["rate"]),
                "{run} {c}"
            );
        }
        assert_eq!(row[2], answers[run]["answers"].to_string());
    }
    let jt = table(&md, "## Judge pass rates by target rank");
    let overall_col = col(&jt, "overall");
    for c in ["faithfulness", "completeness"] {
        let (mut pass, mut total) = (0, 0);
        for run in ["base", "r3", "r5", "r10"] {
            pass += answers[run]["pass_rates"][c]["overall"]["pass"]
                .as_u64()
                .expect("pass");
            total += answers[run]["pass_rates"][c]["overall"]["total"]
                .as_u64()
                .expect("total");
        }
        let cell = &find(&jt, &[c])[overall_col];
        assert!(cell.ends_with(&format!("({pass}/{total})")), "{c}: {cell}");
    }
    let jl = polylines(&svg(&dir, "judge-by-rank.svg"));
    assert_eq!(jl.len(), 2, "one line per criterion");
    assert!(
        jl.iter().all(|l| l.len() == 3),
        "ranks 1, 2-4 and 8-15: {jl:?}"
    );

    // Frugality against the no-retrieval run.
    let ft = table(&md, "Free-form answers against the no-retrieval run");
    let confs = answers["frugality"]["configurations"]
        .as_array()
        .expect("configs");
    assert_eq!(ft.len(), 1 + confs.len());
    for c in confs {
        let row = find(&ft, &[c["run"].as_str().expect("run")]);
        assert_eq!(row[4], f4(&c["d_accuracy"]));
        assert_eq!(row[5], f4(&c["d_latency_s"]));
        assert_eq!(row[8], f4(&c["F"]));
        // F's range when each temperature moves by 30%, from the formula here:
        // tanh(sign(dA)(e^(|dA|/tA) - 1) - (e^(dC/tC) - 1)) over tA, tC x 0.7, 1, 1.3.
        let num = |k: &str| c[k].as_f64().expect("number");
        let (da, dc, ta, tc) = (
            num("d_accuracy"),
            num("d_latency_s"),
            num("t_accuracy"),
            num("t_latency_s"),
        );
        let fs: Vec<f64> = [0.7, 1.0, 1.3]
            .iter()
            .flat_map(|x| {
                [0.7, 1.0, 1.3].map(|y| {
                    let a = da.signum() * ((da.abs() / (ta * x)).exp() - 1.0);
                    let cost = (dc / (tc * y)).exp() - 1.0;
                    (a - cost).tanh()
                })
            })
            .collect();
        let lo = fs.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = fs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        assert_eq!(row[9], format!("{lo:.4}..{hi:.4}"));
    }
    // The trade-off plane: a point per compared run, the three F contours named.
    let plane = svg(&dir, "frugality-answers.svg");
    assert_eq!(points(&plane), confs.len(), "{plane}");
    for level in ["F = -0.5", "F = 0", "F = 0.5"] {
        assert!(plane.contains(level), "{level}");
    }
    let mf = table(&md, "MCQA run `m`, each k against k = 0");
    let mcqa_confs = mc["frugality"]["configurations"]
        .as_array()
        .expect("configs");
    for c in mcqa_confs {
        let row = find(&mf, &[&c["k"].to_string()]);
        assert_eq!(row[2], f4(&c["d_accuracy"]));
        assert_eq!(row[6], f4(&c["F"]));
    }
    assert_eq!(points(&svg(&dir, "frugality-mcqa.svg")), mcqa_confs.len());

    // Agreement as `agree --json` gives it to the lead, and to bob.
    let check_agreement = |md: &str, agree: &Value| {
        let at = table(md, "## Agreement");
        for r in agree["rows"].as_array().expect("rows") {
            let row = find(&at, &[r["criterion"].as_str().expect("criterion")]);
            for (i, pair) in r["pairs"].as_array().expect("pairs").iter().enumerate() {
                let want = if pair[1].is_null() {
                    "no data".to_string()
                } else {
                    est(&pair[1]["kappa"])
                };
                assert_eq!(row[1 + 2 * i], want, "{} pair {i}", r["criterion"]);
            }
        }
        assert!(
            md.contains(&format!("{} left out", agree["hidden_items"])),
            "hidden items"
        );
    };
    check_agreement(&md, &agree);
    let bob = ["--reviewer", "bob"];
    let agree_bob = env.json(&[&bob[..], &["agree", "--json"]].concat());
    assert_ne!(
        agree_bob["hidden_items"], agree["hidden_items"],
        "bob sees less"
    );
    let (md_bob, _) = report(&env, &bob, "bob");
    check_agreement(&md_bob, &agree_bob);
    // The judge's labels of i1 (r3/q2) stay hidden from bob, as in `report answers`.
    let answers_bob = env.json(&[&bob[..], &["report", "answers", "--json"]].concat());
    let per_run_bob = table(&md_bob, "Pass rate per criterion per run");
    assert_eq!(
        find(&per_run_bob, &["r3"])[col(&per_run_bob, "faithfulness")],
        f4(&answers_bob["r3"]["pass_rates"]["faithfulness"]["overall"]["rate"])
    );
    assert_eq!(
        answers_bob["r3"]["pass_rates"]["faithfulness"]["overall"]["total"],
        2
    );
    // Without an identity, no agreement, and the report says why.
    let (md_none, _) = report(&env, &[], "nobody");
    assert!(
        md_none.contains("no labels are shown without an identity"),
        "{md_none}"
    );
}
