//! The analyst's path from an evaluation to its failures, through the real TUI
//! (`tui::build_app` + the real background jobs, keys as the event loop hands them):
//! `eval retrieval` on the sample writes the failures of every configuration; the
//! failures browser filters them; `n` / `p` step through them, each opened in the
//! configuration that failed it; the why panel shows the target's rank against an
//! independent run of `raglab search`; the alpha curve agrees with 21 such runs; a
//! pinned baseline's rank deltas agree with two runs; without an embedding model the
//! pane still ranks with BM25 and TF-IDF and says why dense is off.

use crate::common;

use std::time::Duration;

use common::tui::{key as press_key, press};
use crossterm::event::KeyCode;
use raglab::config::{Config, DEFAULT_EMBED_MODEL, Paths};
use raglab::service::Context;
use raglab::tui::app::App;
use raglab::tui::jobs::{Jobs, Msg};
use raglab::tui::keymap::Keymap;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

fn render(app: &App) -> String {
    common::screen(app, 220, 50)
}

/// Run the event loop's message half (receive, apply) until `done` holds (60 s at
/// most).
async fn pump(
    jobs: &mut Jobs,
    app: &mut App,
    rx: &mut UnboundedReceiver<Msg>,
    done: impl Fn(&Jobs, &App) -> bool,
) {
    common::tui::pump(jobs, app, rx, done, Duration::from_secs(60), (0, 0)).await;
}

/// Type `question` in the Query pane, search, and wait for the ranked lists (the
/// first step of ranking on demand: places outside the lists still pending).
async fn ask_first(
    app: &mut App,
    jobs: &mut Jobs,
    rx: &mut UnboundedReceiver<Msg>,
    question: &str,
) {
    press(app, jobs, '/');
    for c in question.chars() {
        press(app, jobs, c);
    }
    press_key(app, jobs, KeyCode::Enter);
    pump(jobs, app, rx, |_, a| {
        !a.query.is_busy() && a.query.lists().is_some()
    })
    .await;
}

/// [`ask_first`], then wait for the whole-corpus places.
async fn ask(app: &mut App, jobs: &mut Jobs, rx: &mut UnboundedReceiver<Msg>, question: &str) {
    ask_first(app, jobs, rx, question).await;
    pump(jobs, app, rx, |_, a| {
        !a.query.whole().is_pending() || a.query.status().is_some()
    })
    .await;
}

/// The sample ingested and indexed, and evaluated at cut-off 1 (every question whose
/// target is not first fails) with every method.
fn evaluated() -> (common::Env, Vec<Value>) {
    let env = common::Env::new();
    common::sample_indexed(&env);
    let failures = common::eval_sample(&env, &["--k", "1"]);
    (env, failures)
}

/// The TUI on `env`'s workspace, its retrieval loaded; `embed` false: no embedding
/// model configured.
async fn open_tui(env: &common::Env, embed: bool) -> (App, Jobs, UnboundedReceiver<Msg>) {
    let mut config = Config::default();
    config.models.embed = embed.then(|| common::model(DEFAULT_EMBED_MODEL));
    if !embed {
        config.models.embed = Some(env.dir.path().join("no-such-model.gguf"));
    }
    let ctx = common::tui::context(env, config);
    // The sample's questions listed: a typed question that is one of them keeps its
    // target.
    let opts = raglab::tui::TuiOptions {
        questions: Some(common::repo().join("sample-data/questions.jsonl")),
        ..Default::default()
    };
    common::tui::on_query_pane(&ctx, &opts).await
}

/// The configuration label a failure records, as the browser shows it.
fn config_label(f: &Value) -> String {
    let c = &f["config"];
    let method = c["method"].as_str().expect("method");
    match (c["sparse"].as_str(), c["alpha"].as_f64()) {
        (Some(s), Some(a)) => format!("{method}-{s}-a{a:.2}"),
        _ => method.to_string(),
    }
}

/// `raglab search` (a separate process and code path: the service's search, not the
/// TUI's cached lists) ranked chunk ids, 100 deep as the evaluation ranks.
fn search_ids(
    env: &common::Env,
    question: &str,
    method: &str,
    sparse: &str,
    alpha: f64,
) -> Vec<String> {
    let v = env.json(&[
        "search",
        question,
        "--method",
        method,
        "--sparse",
        sparse,
        "--alpha",
        &format!("{alpha:.2}"),
        "--k",
        "100",
        "--json",
    ]);
    v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["chunk_id"].as_str().expect("id").to_string())
        .collect()
}

fn line_with<'a>(screen: &'a str, needle: &str) -> &'a str {
    screen
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with `{needle}`:\n{screen}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_browsed_filtered_and_stepped_through_in_their_configuration() {
    let (env, failures) = evaluated();
    let labels: std::collections::BTreeSet<String> = failures.iter().map(config_label).collect();
    assert!(
        labels.len() >= 4,
        "every method's failures are recorded: {labels:?}"
    );
    let (mut app, mut jobs, mut rx) = open_tui(&env, true).await;
    assert_eq!(app.query.failures().len(), failures.len());
    assert!(app.query.status().is_none(), "{:?}", app.query.status());

    // The browser: all failures, then filtered by configuration, then by topic.
    press(&mut app, &mut jobs, 'f');
    let n = failures.len();
    assert!(render(&app).contains(&format!("Failures {n}/{n}")));
    press(&mut app, &mut jobs, 'm');
    let first_label = labels.iter().next().expect("a label").clone();
    let of_label: Vec<&Value> = failures
        .iter()
        .filter(|f| config_label(f) == first_label)
        .collect();
    let screen = render(&app);
    assert!(
        screen.contains(&format!(
            "Failures {}/{n} · config {first_label} (m)",
            of_label.len()
        )),
        "{screen}"
    );
    press(&mut app, &mut jobs, 't');
    let topic = {
        let mut t: Vec<&str> = of_label
            .iter()
            .filter_map(|f| f["topic"].as_str())
            .collect();
        t.sort();
        t[0].to_string()
    };
    let both: Vec<&Value> = of_label
        .iter()
        .copied()
        .filter(|f| f["topic"].as_str() == Some(topic.as_str()))
        .collect();
    let screen = render(&app);
    assert!(
        screen.contains(&format!(
            "Failures {}/{n} · config {first_label} (m) · topic {topic} (t)",
            both.len()
        )),
        "{screen}"
    );
    // Back to every topic, then step with n / p through this configuration's failures.
    while app.query.browser().topic.0.is_some() {
        press(&mut app, &mut jobs, 't');
    }
    press_key(&mut app, &mut jobs, KeyCode::Esc);

    let m = of_label.len();
    for (key, pos) in [('n', 0), ('n', 1), ('n', 2), ('p', 1)] {
        if pos >= m {
            continue;
        }
        // The figure: key to a drawn Query pane on the failure (search over the whole
        // corpus, cut, fusion, why panel, alpha curve, one frame).
        let started = std::time::Instant::now();
        press(&mut app, &mut jobs, key);
        pump(&mut jobs, &mut app, &mut rx, |_, a| {
            !a.query.is_busy() && !a.query.whole().is_pending()
        })
        .await;
        let screen = render(&app);
        eprintln!(
            "opened failure {} ({first_label}) in {:.1} ms",
            pos + 1,
            started.elapsed().as_secs_f64() * 1e3
        );
        assert_eq!(app.query.failure_pos(), Some(pos));
        let f = of_label[pos];
        assert!(
            screen.contains(&format!("failure {}/{m}", pos + 1)),
            "{screen}"
        );
        let text = f["text"].as_str().expect("text");
        let prefix: String = text.chars().take(30).collect();
        assert!(
            screen.contains(&prefix),
            "question `{prefix}` not shown:\n{screen}"
        );
        // Opened in its configuration: method, sparse side and alpha.
        let c = &f["config"];
        let method = c["method"].as_str().expect("method");
        assert!(line_with(&screen, " method ").contains(&format!(" method {method} ")));
        if let Some(a) = c["alpha"].as_f64() {
            assert!(
                screen.contains(&format!("a = {a:.2}")),
                "alpha {a}:\n{screen}"
            );
        }
        // The why panel's rank is the evaluation's (single targets), and agrees with
        // `raglab search` in that configuration.
        if f["relevant"].as_array().map(Vec::len) == Some(1) {
            let target = f["relevant"][0].as_str().expect("target");
            let label = match c["sparse"].as_str() {
                Some(s) => format!("{method}-{s}"),
                None => method.to_string(),
            };
            let row = line_with(&screen, &format!("│{label} "));
            let ids = search_ids(
                &env,
                text,
                method,
                c["sparse"].as_str().unwrap_or("bm25"),
                c["alpha"].as_f64().unwrap_or(0.5),
            );
            let by_search = ids.iter().position(|i| i == target).map(|i| i + 1);
            assert_eq!(
                by_search.map(|r| r as u64),
                f["rank"].as_u64(),
                "search vs eval"
            );
            match f["rank"].as_u64() {
                Some(r) => assert!(row.contains(&format!("#{r} ")), "#{r} not in `{row}`"),
                None => assert!(row.contains("not in list"), "`{row}`"),
            }
            // The id as far as the panel's width shows it.
            let shown: String = target.chars().take(60).collect();
            assert!(screen.contains(&format!("target {shown}")), "{screen}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alpha_curve_and_baseline_deltas_agree_with_independent_searches() {
    let (env, failures) = evaluated();
    // A hybrid failure with one target.
    let f = failures
        .iter()
        .find(|f| {
            f["config"]["method"] == "hybrid" && f["relevant"].as_array().map(Vec::len) == Some(1)
        })
        .expect("a hybrid failure");
    let text = f["text"].as_str().expect("text").to_string();
    let target = f["relevant"][0].as_str().expect("target").to_string();
    let (mut app, mut jobs, mut rx) = open_tui(&env, true).await;
    ask(&mut app, &mut jobs, &mut rx, &text).await;
    // Hybrid, BM25 side, a = 0.70 (the defaults).
    let screen = render(&app);
    assert!(
        screen.contains(" method hybrid  sparse bm25  a = 0.70 "),
        "{screen}"
    );

    // The curve: `raglab search` at each of the 21 weights.
    let grid: Vec<f64> = (0..=20).map(|i| f64::from(i) * 0.05).collect();
    let ranks: Vec<Option<usize>> = grid
        .iter()
        .map(|&a| {
            search_ids(&env, &text, "hybrid", "bm25", a)
                .iter()
                .position(|i| *i == target)
                .map(|i| i + 1)
        })
        .collect();
    let (best_a, best_r) = grid
        .iter()
        .zip(&ranks)
        .filter_map(|(&a, r)| r.map(|r| (a, r)))
        .min_by(|x, y| x.1.cmp(&y.1).then(x.0.total_cmp(&y.0)))
        .expect("the target is ranked somewhere");
    let now = ranks[14].map_or("-".to_string(), |r| format!("#{r}"));
    let title = format!("best a={best_a:.2} #{best_r} · now {now}");
    assert!(
        screen.contains(&title),
        "`{title}` not on screen:\n{screen}"
    );

    // Pin hybrid a=0.70 as the baseline, switch to BM25 alone (m: hybrid -> linear ->
    // bm25), and read each row's delta against two independent searches.
    press(&mut app, &mut jobs, 'P');
    press(&mut app, &mut jobs, 'm');
    press(&mut app, &mut jobs, 'm');
    let screen = render(&app);
    assert!(screen.contains(" method bm25 "), "{screen}");
    assert!(screen.contains("baseline hybrid-bm25-a0.70"), "{screen}");
    let base = search_ids(&env, &text, "hybrid", "bm25", 0.7);
    let now = search_ids(&env, &text, "bm25", "bm25", 0.7);
    let k = app.query.k();
    let mut checked = 0;
    for (i, id) in now.iter().take(k).enumerate() {
        let want = match base.iter().take(k).position(|b| b == id) {
            Some(b) if b == i => "=".to_string(),
            Some(b) if b > i => format!("↑{}", b - i),
            Some(b) => format!("↓{}", i - b),
            None => "new".to_string(),
        };
        let row = line_with(&screen, &format!("{id}  "));
        let cells: Vec<&str> = row.split_whitespace().collect();
        assert!(
            cells.contains(&want.as_str()),
            "row {} `{row}`: want {want}",
            i + 1
        );
        checked += 1;
    }
    assert!(checked >= 5, "{checked} rows checked");
    let dropped: Vec<&String> = base
        .iter()
        .take(k)
        .filter(|b| !now.iter().take(k).any(|n| n == *b))
        .collect();
    let line = line_with(&screen, "baseline hybrid-bm25-a0.70");
    if dropped.is_empty() {
        assert!(line.contains("nothing dropped"), "{line}");
    } else {
        assert!(line.contains(&format!("dropped: {}", dropped[0])), "{line}");
    }
    // The target opens wherever it ranks, its question terms highlighted.
    press(&mut app, &mut jobs, 't');
    let screen = render(&app);
    assert!(
        screen.contains(&format!("target {target} (j/k scroll, esc closes)")),
        "{screen}"
    );
}

/// The Query pane's retriever on `env` as the TUI opens it (MiniLM configured, one
/// embedding thread), with the context and model choice it was opened with.
async fn browsing_with_minilm(
    env: &common::Env,
) -> (
    Context,
    raglab::service::ModelChoice,
    (raglab::service::retrieval::Retriever, Option<String>),
) {
    let mut config = Config::default();
    config.models.embed = Some(common::model(DEFAULT_EMBED_MODEL));
    let ctx = common::tui::context(env, config);
    let embed = raglab::service::ModelChoice {
        threads: Some(1),
        ..Default::default()
    };
    let opened = raglab::service::retrieval::open_for_browsing(&ctx, &embed)
        .await
        .expect("retriever");
    (ctx, embed, opened)
}

/// The model loads but its vectors are gone (or stale): the Query pane's retriever
/// keeps the chunks and sparse index it read, with dense off and the reason, and ranks
/// with BM25 exactly as a retriever opened for BM25 alone does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_vectors_gone_browsing_keeps_the_sparse_lists_and_says_why() {
    use raglab::core::retrieval::Method;
    let env = common::Env::new();
    common::sample_indexed(&env);
    std::fs::remove_dir_all(env.workspace().join("embeddings")).expect("vectors removed");
    let (ctx, embed, (r, off)) = browsing_with_minilm(&env).await;
    let off = off.expect("dense off");
    assert!(off.starts_with("dense off ("), "{off}");
    assert!(off.contains("out of date with the chunks"), "{off}");
    assert!(r.embedder.is_none() && r.vectors.is_empty());
    let alone = raglab::service::retrieval::open_for(&ctx, Method::Bm25, &embed)
        .await
        .expect("bm25 retriever");
    assert_eq!(r.chunks.len(), alone.chunks.len());
    for q in ["measles vaccine schedule", "how is tuberculosis spread"] {
        let (a, _) = r.query(q, 20).expect("query");
        let (b, _) = alone.query(q, 20).expect("query");
        assert!(a.dense.is_empty() && !a.bm25.is_empty(), "{q}");
        assert_eq!(a.bm25, b.bm25, "{q}");
        assert_eq!(a.tfidf, b.tfidf, "{q}");
    }
    // A document ingested since the index: the sparse index is stale too, which is an
    // error (run `raglab index`), not a retriever without dense.
    let extra = env.dir.path().join("extra.md");
    std::fs::write(
        &extra,
        "# Extra\n\nA page ingested after the index was built.\n",
    )
    .expect("write");
    env.ok(&["ingest", extra.to_str().expect("utf8")]);
    let err = match raglab::service::retrieval::open_for_browsing(&ctx, &embed).await {
        Ok(_) => panic!("a stale sparse index opened"),
        Err(e) => format!("{e:#}"),
    };
    assert!(err.contains("out of date with the chunks"), "{err}");
    assert!(err.contains("raglab index"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_embedding_model_the_query_pane_ranks_with_bm25_and_tfidf() {
    let env = common::Env::new();
    common::sample_indexed(&env);
    let (mut app, mut jobs, mut rx) = open_tui(&env, false).await;
    let screen = render(&app);
    assert!(screen.contains("dense off ("), "{screen}");
    assert!(
        screen.contains("`raglab index` embeds the chunks"),
        "{screen}"
    );
    assert!(screen.contains(" method bm25 "), "{screen}");
    let question = "How is measles spread?";
    ask(&mut app, &mut jobs, &mut rx, question).await;
    let screen = render(&app);
    let want = search_ids(&env, question, "bm25", "bm25", 0.7);
    assert!(!want.is_empty());
    let first = line_with(&screen, &format!("{}  ", want[0]));
    assert!(first.contains(" 1 ") || first.contains("│ 1"), "{first}");
    // m never reaches a dense method: bm25 -> tfidf -> bm25.
    press(&mut app, &mut jobs, 'm');
    assert!(render(&app).contains(" method tfidf "));
    press(&mut app, &mut jobs, 'm');
    assert!(render(&app).contains(" method bm25 "));
    // An opened chunk marks the question's terms (the theme's filter style).
    press(&mut app, &mut jobs, 'l');
    press(&mut app, &mut jobs, 'o');
    let theme = raglab::tui::theme::Theme::builtin("dark").expect("theme");
    let mut term = ratatui::Terminal::new(ratatui::backend::TestBackend::new(220, 50)).expect("t");
    term.draw(|f| raglab::tui::ui::draw(&app, f, &theme))
        .expect("draw");
    let buf = term.backend().buffer().clone();
    let mut marked = Vec::new();
    for y in 0..buf.area.height {
        let mut word = String::new();
        for x in 0..buf.area.width {
            let c = &buf[(x, y)];
            if c.fg == theme.filter.fg.expect("filter colour")
                && c.symbol().chars().all(char::is_alphanumeric)
            {
                word.push_str(c.symbol());
            } else if !word.is_empty() {
                marked.push(std::mem::take(&mut word).to_lowercase());
            }
        }
    }
    let terms = ["how", "is", "measles", "spread"];
    assert!(
        marked.iter().any(|w| w == "measles"),
        "measles not highlighted: {marked:?}"
    );
    assert!(
        marked.iter().all(|w| terms.contains(&w.as_str())),
        "only question terms are highlighted: {marked:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_questions_answers_show_their_target_rank_and_are_judged_and_sent_from_the_query_pane() {
    let env = common::Env::new();
    common::sample_indexed(&env);
    let questions = common::repo().join("sample-data/questions.jsonl");
    let qfile = questions.to_str().expect("utf8");
    let gen_model = common::model(raglab::config::DEFAULT_GEN_MODEL);
    let gen_model = gen_model.to_str().expect("utf8");
    for (run, k) in [("k1", "1"), ("k3", "3")] {
        env.ok(&[
            "generate",
            "--questions",
            qfile,
            "--limit",
            "1",
            "--run",
            run,
            "--k",
            k,
            "--max-tokens",
            "16",
            "--model",
            gen_model,
        ]);
    }
    let stored = env.json(&["report", "answers", "--list"])["items"].take();
    let stored = stored.as_array().expect("answers");
    assert_eq!(stored.len(), 2);

    let mut config = Config::default();
    config.models.embed = Some(common::model(DEFAULT_EMBED_MODEL));
    config.models.generate = Some(common::model(raglab::config::DEFAULT_GEN_MODEL));
    let paths = Paths {
        config_dir: env.dir.path().join("config"),
        data_dir: env.dir.path().join("data"),
    };
    let ctx = Context::with(paths, config, &env.workspace()).expect("context");
    let opts = raglab::tui::TuiOptions {
        questions: Some(questions.clone()),
        ..Default::default()
    };
    let mut app = raglab::tui::build_app(&ctx, &opts, Keymap::default_keymap())
        .await
        .expect("app");
    let (mut jobs, mut rx) = Jobs::new(&ctx);
    jobs.load_background();
    press(&mut app, &mut jobs, '2');
    pump(&mut jobs, &mut app, &mut rx, |j, a| {
        j.retriever_ready() && a.query.stored().len() == 2
    })
    .await;
    // The first listed question is the one answered.
    press_key(&mut app, &mut jobs, KeyCode::Enter);
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        !a.query.is_busy() && a.query.lists().is_some() && !a.query.whole().is_pending()
    })
    .await;
    press(&mut app, &mut jobs, 'A');
    let screen = render(&app);
    assert!(screen.contains("Answers to `"), "{screen}");
    for a in stored {
        let run = a["run"].as_str().expect("run");
        let want_target = match a["target_prompt_rank"].as_u64() {
            Some(r) => format!("#{r}"),
            None if a["target_rank"].as_u64().is_some() => "dropped".into(),
            None => "not retrieved".into(),
        };
        let row = line_with(&screen, &format!("{run} · hybrid a=0.70 k={}", a["k"]));
        assert!(
            row.contains(&format!(" {want_target} ")),
            "`{want_target}` not in `{row}`"
        );
        assert!(row.contains("not judged"), "{row}");
    }
    // J judges the selected (newest) answer; the judge streams into the Generate pane.
    let selected = app.query.answers().rows[0].answer_id.clone();
    press(&mut app, &mut jobs, 'J');
    assert!(render(&app).contains(&format!("Judge of {selected}")));
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        !a.generate.is_running()
    })
    .await;
    let screen = render(&app);
    assert!(screen.contains("judgement saved ("), "{screen}");
    let saved = raglab::service::answer::judgements(&ctx.workspace)
        .read_all::<raglab::service::answer::JudgementRecord>()
        .await
        .expect("judgements");
    assert_eq!(saved.len(), 1);
    assert_eq!(saved[0].answer_id, selected);
    let labels: Vec<String> = saved[0]
        .criteria
        .iter()
        .zip(&saved[0].labels)
        .map(|(c, l)| format!("{c}={l}"))
        .collect();
    assert!(
        screen.contains(&labels.join(", ")),
        "{labels:?} not shown:\n{screen}"
    );
    // Back in the Query pane the panel shows the stored labels; `a` sends the answer
    // to annotation.
    press(&mut app, &mut jobs, '2');
    let screen = render(&app);
    assert!(screen.contains(&labels[0]), "{screen}");
    press(&mut app, &mut jobs, 'a');
    pump(&mut jobs, &mut app, &mut rx, |_, a| {
        a.message
            .as_deref()
            .is_some_and(|m| m.contains("annotation"))
    })
    .await;
    let study = raglab::service::study::load_study(&ctx)
        .await
        .expect("study");
    assert!(
        study
            .items
            .iter()
            .any(|i| i.answer_id.as_deref() == Some(selected.as_str())),
        "the answer is an annotation item"
    );
    jobs.settle(Duration::from_secs(30)).await;
}

/// The Query pane ranks on demand (the lists 100 deep and the places of the chunks
/// they hold and of the targets) where it ranked the whole corpus: driven by keys
/// through the real jobs, every sample question's screen, its target opened, is the
/// one the whole-corpus lists (`Retriever::query` at depth = every chunk, the pane's
/// old path) draw, and the places shown are those lists' ranks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_query_pane_ranks_on_demand_as_the_whole_ranking_does() {
    use raglab::core::compare::WholePlaces;
    use raglab::service::retrieval::DEFAULT_DEPTH;
    let env = common::Env::new();
    common::sample_indexed(&env);
    let (mut app, mut jobs, mut rx) = open_tui(&env, true).await;
    let (_, _, (r, off)) = browsing_with_minilm(&env).await;
    assert!(off.is_none(), "dense on: {off:?}");
    let all = r.chunks.len().max(DEFAULT_DEPTH);
    let questions = app.query.questions().to_vec();
    assert!(questions.len() >= 5, "{}", questions.len());
    let mut deeper = 0;
    for q in questions.iter().filter(|q| !q.relevant.is_empty()) {
        // The same pane state from the whole-corpus lists.
        let (full, _) = r.query(&q.text, all).expect("full");
        let every: Vec<String> = r.chunks.iter().map(|c| c.id.clone()).collect();
        let whole = WholePlaces::from_full(&full, &every);
        let show = |p: Option<raglab::core::compare::Place>, unknown: &str| {
            p.map_or(unknown.to_string(), |p| format!("#{}", p.rank))
        };
        // First the lists: the target's place in each list that holds it, every other
        // place pending (drawn as such, never as absent; on the sample, 100 deep, the
        // targets sit inside every list that holds them: the pending marks are proved
        // in `rank_on_demand::the_query_pane_draws_the_lists_first_then_the_places`).
        ask_first(&mut app, &mut jobs, &mut rx, &q.text).await;
        assert!(app.query.status().is_none(), "{:?}", app.query.status());
        assert!(app.query.whole().is_pending(), "{}: places pending", q.text);
        press(&mut app, &mut jobs, 't');
        let first = render(&app);
        let target = &q.relevant[0];
        let cut = full.truncated(DEFAULT_DEPTH);
        let held = |list: &[raglab::core::fusion::Scored],
                    p: Option<raglab::core::compare::Place>| {
            if list.iter().any(|s| &s.id == target) {
                show(p, "…")
            } else {
                "…".to_string()
            }
        };
        let p = whole.get(target).copied().unwrap_or_default();
        let expected = format!(
            "dense {} · bm25 {} · tfidf {}",
            held(&cut.dense, p.dense),
            held(&cut.bm25, p.bm25),
            held(&cut.tfidf, p.tfidf)
        );
        assert!(
            first.contains(&expected) && first.contains("(placing…)"),
            "{}: before the places, the opened target shows {expected}\n{first}",
            q.text
        );
        // Then the places.
        pump(&mut jobs, &mut app, &mut rx, |_, a| {
            !a.query.whole().is_pending() || a.query.status().is_some()
        })
        .await;
        assert!(app.query.status().is_none(), "{:?}", app.query.status());
        let on_demand = render(&app);
        assert!(
            !on_demand.contains("placing…"),
            "{}: placed\n{on_demand}",
            q.text
        );
        let got = app.query.lists().expect("lists").truncated(DEFAULT_DEPTH);
        let want = full.truncated(DEFAULT_DEPTH);
        assert_eq!(got.dense, want.dense, "{}: dense 100 deep", q.text);
        assert_eq!(got.bm25, want.bm25, "{}: bm25 100 deep", q.text);
        assert_eq!(got.tfidf, want.tfidf, "{}: tfidf 100 deep", q.text);
        for (id, _) in whole_ids(&app) {
            assert_eq!(
                app.query.whole().get(&id),
                whole.get(&id),
                "{}: places of {id}",
                q.text
            );
        }
        let expected = format!(
            "dense {} · bm25 {} · tfidf {}",
            show(p.dense, "-"),
            show(p.bm25, "-"),
            show(p.tfidf, "-")
        );
        assert!(
            on_demand.contains(&expected),
            "{}: the opened target shows {expected}\n{on_demand}",
            q.text
        );
        deeper += [p.dense, p.bm25, p.tfidf]
            .iter()
            .flatten()
            .filter(|p| p.rank > 10)
            .count();
        let (ticket, timings) = (app.query.ticket(), app.query.timings());
        app.query.on_result(ticket, Ok((full, whole, timings)));
        assert_eq!(on_demand, render(&app), "{}: same screen", q.text);
        press_key(&mut app, &mut jobs, KeyCode::Esc);
    }
    assert!(deeper > 0, "some target sits below the top 10 somewhere");
}

/// Every chunk the pane holds a place for.
fn whole_ids(app: &App) -> Vec<(String, ())> {
    let Some(lists) = app.query.lists() else {
        return Vec::new();
    };
    let mut ids: Vec<String> = lists
        .dense
        .iter()
        .chain(&lists.bm25)
        .chain(&lists.tfidf)
        .map(|s| s.id.clone())
        .collect();
    if let Some(q) = app.query.current() {
        ids.extend(q.relevant.iter().cloned());
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), app.query.whole().len(), "one place per chunk");
    ids.into_iter().map(|i| (i, ())).collect()
}
