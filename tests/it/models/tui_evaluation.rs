//! The Evaluation pane (6) on real evaluations: the TUI is started the way `raglab`
//! starts it (`tui::build_app` + the real background jobs) on the sample; before any
//! evaluation it says so and names the command; the real `eval retrieval
//! --alpha-sweep` then runs in another process and the open pane picks the new
//! report up by itself; every number checked on screen is formatted here from the
//! report file read as plain JSON (and that file is checked against the command's own
//! `--json` output). MCQA accuracy is checked the same way on real PubMedQA questions
//! answered by the small generator.

use crate::common;

use std::time::Duration;

use raglab::config::{Config, DEFAULT_EMBED_MODEL};
use raglab::tui::app::{App, Pane};
use raglab::tui::jobs::Jobs;
use raglab::tui::keymap::Keymap;
use serde_json::Value;

fn render(app: &App) -> String {
    common::screen(app, 220, 50)
}

/// The screen line that starts (after the border) with `label` followed by a space.
fn row<'a>(screen: &'a str, label: &str) -> &'a str {
    screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['│', ' '])
                .strip_prefix(label)
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .unwrap_or_else(|| panic!("no row `{label}` on screen:\n{screen}"))
}

fn f4(v: &Value) -> String {
    format!("{:.4}", v.as_f64().expect("number"))
}

async fn start(
    env: &common::Env,
    config: Config,
) -> (
    App,
    Jobs,
    tokio::sync::mpsc::UnboundedReceiver<raglab::tui::jobs::Msg>,
) {
    let ctx = common::context(env, config);
    let app = raglab::tui::build_app(
        &ctx,
        &raglab::tui::TuiOptions::default(),
        Keymap::default_keymap(),
    )
    .await
    .expect("app");
    let (mut jobs, rx) = Jobs::new(&ctx);
    jobs.load_background();
    (app, jobs, rx)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluation_pane_shows_the_last_retrieval_evaluation_beside_the_paper() {
    let env = common::Env::new();
    common::sample_indexed(&env);
    let mut config = Config::default();
    config.models.embed = Some(common::model(DEFAULT_EMBED_MODEL));
    let (mut app, mut jobs, mut rx) = start(&env, config).await;
    common::press(&mut app, &mut jobs, '6');
    assert_eq!(app.pane, Pane::Evaluation);
    let limit = Duration::from_secs(120);
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        a.evaluation.is_loaded()
    })
    .await;
    let empty = render(&app);
    assert!(
        empty.contains("No evaluation has been run in this workspace yet"),
        "{empty}"
    );
    assert!(empty.contains("raglab eval retrieval --queries"), "{empty}");

    // The real evaluation, in another process, while the pane is open.
    let questions = common::repo().join("sample-data/questions.jsonl");
    let printed = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        questions.to_str().expect("utf8"),
        "--alpha-sweep",
        "--methods",
        "bm25,tfidf,dense,hybrid,linear",
        "--json",
    ]);
    let file = env.workspace().join("eval/last-retrieval.json");
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(&file).expect("report file"))
        .expect("report JSON");
    let rep = &saved["report"];
    assert_eq!(
        rep["results"], printed["results"],
        "the file holds the printed report"
    );
    assert_eq!(rep["alpha_sweep"], printed["alpha_sweep"]);
    common::pump(&mut jobs, &mut app, &mut rx, limit, |a| {
        a.evaluation
            .overview()
            .is_some_and(|o| o.retrieval.is_some())
    })
    .await;
    let screen = render(&app);

    // Every configuration's metrics, nDCG@k, failures and eta^2, as the file has them.
    let results = rep["results"].as_array().expect("results");
    assert_eq!(results.len(), 5);
    for r in results {
        let label = r["label"].as_str().expect("label");
        let line = row(&screen, label);
        let m = &r["metrics"];
        let mut want: Vec<String> = ["p1", "recall5", "recall10", "mrr", "ndcg10"]
            .iter()
            .map(|k| f4(&m[*k]))
            .collect();
        for at in ["recall_at", "ndcg_at"] {
            want.extend(r[at].as_array().expect("at k").iter().map(|p| f4(&p[1])));
        }
        want.push(r["failed"].to_string());
        want.push(f4(&r["by_topic"]["eta_squared_ndcg10"]));
        want.push(f4(&r["by_target_length"]["eta_squared_ndcg10"]));
        let cells: Vec<&str> = line.split_whitespace().skip(1).collect();
        for w in &want {
            assert!(cells.contains(&w.as_str()), "{label}: {w} not in `{line}`");
        }
    }
    // The paper's rows beside ours, with their source.
    for (label, values) in [
        ("└ paper Table 3: BM25", "0.65  "),
        ("└ paper Table 3: TF-IDF", "0.61  "),
        ("└ paper Table 4: hybrid TF-IDF a0.75 NV-Embed-v2", "0.80  "),
        ("└ paper Table 3: dense NV-Embed-v2 (best)", "0.76  "),
    ] {
        let line = screen
            .lines()
            .find(|l| l.contains(label))
            .unwrap_or_else(|| panic!("{label}:\n{screen}"));
        assert!(line.contains(values.trim()), "{line}");
    }

    // The alpha chart: title, axis, both fused methods with their best alpha.
    assert!(screen.contains("Alpha sweep: nDCG@10 vs alpha"), "{screen}");
    let alphas: Vec<f64> = rep["alpha_sweep"]
        .as_array()
        .expect("sweep")
        .iter()
        .map(|p| p["alpha"].as_f64().expect("alpha"))
        .collect();
    let (lo, hi) = alphas
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), &x| (a.min(x), b.max(x)));
    assert_eq!(
        (format!("{lo:.2}"), format!("{hi:.2}")),
        ("0.50".into(), "0.95".into())
    );
    assert!(screen.contains("0.50") && screen.contains("0.95") && screen.contains("alpha"));
    let best = |metric: &str| -> Vec<String> {
        rep["best_alpha"]
            .as_array()
            .expect("best")
            .iter()
            .filter(|b| b["metric"] == metric)
            .map(|b| {
                format!(
                    "{}-{} best a {:.2}: {}",
                    b["method"].as_str().expect("method"),
                    b["sparse"].as_str().expect("sparse"),
                    b["alpha"].as_f64().expect("alpha"),
                    f4(&b["value"])
                )
            })
            .collect()
    };
    let legend = best("nDCG@10");
    assert_eq!(legend.len(), 2, "hybrid and linear");
    for l in &legend {
        assert!(screen.contains(l), "legend `{l}` missing:\n{screen}");
    }
    // `m` moves the chart to the next metric (after nDCG@10 comes P@1).
    common::press(&mut app, &mut jobs, 'm');
    let screen = render(&app);
    assert!(screen.contains("Alpha sweep: P@1 vs alpha"), "{screen}");
    for l in best("P@1") {
        assert!(screen.contains(&l), "legend `{l}` missing:\n{screen}");
    }

    // Breakdowns of the selected configuration (j: the second, tfidf): its eta^2 and
    // a topic's nDCG@10, then by target length (`t`).
    common::press(&mut app, &mut jobs, 'j');
    let second = &results[1];
    let screen = render(&app);
    let eta = f4(&second["by_topic"]["eta_squared_ndcg10"]);
    assert!(
        screen.contains(&format!("η² of nDCG@10 = {eta} · paper: §4.1, Figure 2")),
        "{screen}"
    );
    let (topic, m) = second["by_topic"]["groups"]
        .as_object()
        .expect("groups")
        .iter()
        .next()
        .expect("a topic");
    // Topic (padded to 22), group size, nDCG@10, as the breakdown box lays them out.
    let want = format!(
        "{topic:<22} {:>4} {:>7}",
        m["queries"].to_string(),
        f4(&m["ndcg10"])
    );
    assert!(
        topic.chars().count() <= 22 && screen.contains(&want),
        "`{want}` not on screen:\n{screen}"
    );
    common::press(&mut app, &mut jobs, 't');
    let screen = render(&app);
    let eta = f4(&second["by_target_length"]["eta_squared_ndcg10"]);
    assert!(
        screen.contains(&format!("η² of nDCG@10 = {eta} · paper: Figure 1")),
        "{screen}"
    );
    assert!(screen.contains("No MCQA evaluation yet") && screen.contains("No judged answers yet"));
}

/// A workspace with the first 40 PubMedQA abstracts and 3 test questions whose target
/// is among them; returns the questions file.
fn pubmedqa(env: &common::Env) -> std::path::PathBuf {
    let sample = common::repo().join("sample-data").join("pubmedqa");
    let corpus: Vec<String> = std::fs::read_to_string(sample.join("corpus.jsonl"))
        .expect("corpus")
        .lines()
        .take(40)
        .map(str::to_string)
        .collect();
    let ids: Vec<String> = corpus
        .iter()
        .map(|l| {
            serde_json::from_str::<Value>(l).expect("record")["id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect();
    let corpus_file = env.dir.path().join("abstracts.jsonl");
    std::fs::write(&corpus_file, corpus.join("\n")).expect("write corpus");
    env.ok(&[
        "ingest",
        corpus_file.to_str().expect("utf8"),
        "--chunker",
        "none",
        "--index",
    ]);
    let questions: Vec<String> = std::fs::read_to_string(sample.join("mcqa.jsonl"))
        .expect("questions")
        .lines()
        .filter(|l| {
            let q: Value = serde_json::from_str(l).expect("question");
            ids.iter().any(|id| q["relevant"][0] == id.as_str())
        })
        .take(3)
        .map(str::to_string)
        .collect();
    assert_eq!(questions.len(), 3);
    let file = env.dir.path().join("mcqa.jsonl");
    std::fs::write(&file, questions.join("\n")).expect("write questions");
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn evaluation_pane_shows_mcqa_accuracy_by_k_and_rank() {
    let env = common::Env::new();
    let q = pubmedqa(&env);
    env.ok(&[
        "eval",
        "mcqa",
        "--questions",
        q.to_str().expect("utf8"),
        "--ks",
        "0,1,3",
        "--run",
        "m",
    ]);
    let saved: Value = serde_json::from_str(
        &std::fs::read_to_string(env.workspace().join("eval/last-mcqa.json")).expect("mcqa file"),
    )
    .expect("JSON");
    let s = &saved["report"];
    assert_eq!(s["run"], "m");
    assert_eq!(s["questions"], 3);

    let (mut app, mut jobs, mut rx) = start(&env, Config::default()).await;
    common::press(&mut app, &mut jobs, '6');
    common::pump(&mut jobs, &mut app, &mut rx, Duration::from_secs(60), |a| {
        a.evaluation.overview().is_some_and(|o| o.mcqa.is_some())
    })
    .await;
    let screen = render(&app);
    assert!(screen.contains("MCQA · run m"), "{screen}");
    assert!(screen.contains("no retrieval evaluation yet"), "{screen}");
    let short = |a: &Value| -> String {
        a["accuracy"]
            .as_f64()
            .map_or("-".into(), |v| format!("{v:.3} ({})", a["n"]))
    };
    for k in s["report"]["by_k"].as_array().expect("by k") {
        let o = &k["overall"];
        let cell = format!(
            "{:.3} [{:.2}, {:.2}] n={}",
            o["accuracy"].as_f64().expect("acc"),
            o["lo"].as_f64().expect("lo"),
            o["hi"].as_f64().expect("hi"),
            o["n"]
        );
        let line = screen
            .lines()
            .find(|l| {
                l.contains(&cell)
                    && l.trim_start_matches(['│', ' '])
                        .starts_with(&k["k"].to_string())
            })
            .unwrap_or_else(|| panic!("k = {}: `{cell}` not on screen:\n{screen}", k["k"]));
        if k["k"] != 0 {
            for part in ["retrieved", "not_retrieved", "rank1", "rank2_plus"] {
                assert!(
                    line.contains(&short(&k[part])),
                    "{part} of k = {}: `{line}`",
                    k["k"]
                );
            }
            for r in k["by_rank"]
                .as_array()
                .expect("by rank")
                .iter()
                .filter(|r| r[1]["n"] != 0)
            {
                let want = format!("r{} {}", r[0], short(&r[1]));
                assert!(line.contains(&want), "`{want}` not in `{line}`");
            }
        }
    }
    assert!(
        screen.contains("paper Table 5: best accuracy per model 0.956-0.995"),
        "{screen}"
    );
}
