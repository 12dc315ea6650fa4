//! Pipelines through the binary: prompt templates as files (checked before a model
//! loads, recorded by name and SHA-256, compared by name), context policies (oracle,
//! distractors, reversed order), another system's answers imported as a run (strict,
//! idempotent, judged and compared with a raglab run by McNemar), and citation recall
//! and precision with verdicts from a real judge model (SmolLM2), recomputed here from
//! the stored verdicts by ALCE's rules.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::common::{
    self, Env, FIVE_DOCS, answer_runs::QUESTIONS, sample_questions, sample_subset,
};

/// The sample questions of [`QUESTIONS`] written to `dir/questions.jsonl`.
fn questions_file(env: &Env) -> (std::path::PathBuf, Vec<Value>) {
    let qs: Vec<Value> = sample_questions()
        .into_iter()
        .filter(|q| QUESTIONS.contains(&q["id"].as_str().expect("id")))
        .collect();
    let file = env.dir.path().join("questions.jsonl");
    let text: String = qs.iter().map(|q| format!("{q}\n")).collect();
    std::fs::write(&file, text).expect("write questions");
    (file, qs)
}

async fn stored_answers(env: &Env) -> Vec<Value> {
    let ctx = common::context(env, raglab::config::Config::default());
    raglab::service::answer::answers(&ctx.workspace)
        .read_all::<Value>()
        .await
        .expect("answers")
}

fn of_run<'a>(all: &'a [Value], run: &str) -> Vec<&'a Value> {
    all.iter().filter(|a| a["run"] == run).collect()
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|s| s.as_str().expect("string").to_string())
        .collect()
}

fn fails(env: &Env, args: &[&str]) -> String {
    let out = env.cmd().args(args).output().expect("spawn raglab");
    assert!(!out.status.success(), "raglab {args:?} should fail");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A template with a misspelt slot is one clear error, given before any model loads:
/// the generator named here does not exist, and the error is still the template's.
#[test]
fn a_template_with_an_unknown_slot_is_refused_before_any_model_loads() {
    let env = Env::new();
    let docs = sample_subset(env.dir.path(), &FIVE_DOCS[..1]);
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let (qs, _) = questions_file(&env);
    let bad = env.dir.path().join("mine.txt");
    std::fs::write(&bad, "Context: {context}\nQuestion: {quetsion}\n").expect("write");
    let err = fails(
        &env,
        &[
            "generate",
            "--questions",
            qs.to_str().expect("utf8"),
            "--prompt",
            bad.to_str().expect("utf8"),
            "--model",
            "/nonexistent/model.gguf",
        ],
    );
    assert!(
        err.contains("template `mine` (free-form) has unknown slot(s) {quetsion}"),
        "{err}"
    );
    assert!(!err.contains("nonexistent"), "no model was loaded: {err}");
    std::fs::write(&bad, "Context: {context}\n").expect("write");
    let err = fails(
        &env,
        &[
            "generate",
            "--questions",
            qs.to_str().expect("utf8"),
            "--prompt",
            bad.to_str().expect("utf8"),
        ],
    );
    assert!(err.contains("lacks the slot(s) {question}"), "{err}");
    // The judge's template, likewise: checked before the judge model loads.
    std::fs::write(&bad, "{criteria} {question} {answer} {verdict}\n").expect("write");
    let err = fails(
        &env,
        &[
            "judge",
            "--prompt",
            bad.to_str().expect("utf8"),
            "--judge-model",
            "/nonexistent/judge.gguf",
        ],
    );
    assert!(
        err.contains("template `mine` (judge) has unknown slot(s) {verdict}"),
        "{err}"
    );
    assert!(!err.contains("nonexistent"), "no model was loaded: {err}");
    // The evaluation set's three templates, likewise.
    for (args, text, said) in [
        (
            &["evalset", "generate", "--fact-prompt"][..],
            "{path} {chunk} {context}",
            "template `mine` (evalset-fact) has unknown slot(s) {context}",
        ),
        (
            &["evalset", "generate", "--reasoning-prompt"][..],
            "{chunk_a} {path_b}",
            "lacks the slot(s) {chunk_b}",
        ),
        (
            &["evalset", "critique", "--prompt"][..],
            "{criteria} {question} {score}",
            "template `mine` (evalset-critique) has unknown slot(s) {score}",
        ),
    ] {
        std::fs::write(&bad, text).expect("write");
        let model = if args[1] == "generate" {
            "--model"
        } else {
            "--critic-model"
        };
        let err = fails(
            &env,
            &[
                args,
                &[
                    bad.to_str().expect("utf8"),
                    model,
                    "/nonexistent/model.gguf",
                ][..],
            ]
            .concat(),
        );
        assert!(err.contains(said), "{args:?}: {err}");
        assert!(!err.contains("nonexistent"), "no model was loaded: {err}");
    }
}

/// Runs that differ only in their template or context policy, on SmolLM2: each
/// answer records its template's name and hash and its policy; the oracle prompt holds
/// exactly the targets, distractors put the target at the asked place, reversed order
/// puts the best chunk last; `report answers --compare` names both templates; a run
/// continued with another template is refused.
#[tokio::test(flavor = "multi_thread")]
async fn templates_and_context_policies_are_recorded() {
    let env = Env::new();
    common::five_docs_indexed(&env);
    let (qs, questions) = questions_file(&env);
    let qs = qs.to_str().expect("utf8");
    let citing = common::repo().join("assets/prompts/free-form-citing.txt");
    let citing_text = std::fs::read_to_string(&citing).expect("citing template");
    let base = [
        "generate",
        "--questions",
        qs,
        "--max-tokens",
        "4",
        "--limit",
        "2",
        "--k",
        "3",
    ];
    env.ok(&[&base[..], &["--run", "shipped"]].concat());
    env.ok(&[
        &base[..],
        &[
            "--run",
            "citing",
            "--prompt",
            citing.to_str().expect("utf8"),
        ],
    ]
    .concat());
    env.ok(&[&base[..], &["--run", "oracle", "--context", "oracle"]].concat());
    env.ok(&[&base[..], &["--run", "dist", "--context", "distractors@2"]].concat());
    env.ok(&[&base[..], &["--run", "rev", "--order", "reversed"]].concat());
    let all = stored_answers(&env).await;
    let sha = |t: &str| {
        Sha256::digest(t.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let shipped = std::fs::read_to_string(common::repo().join("assets/prompts/free-form.txt"))
        .expect("shipped template");
    for a in of_run(&all, "shipped") {
        assert_eq!(a["template"], "shipped");
        assert_eq!(a["template_sha256"], sha(&shipped));
        assert_eq!(a["context_policy"], "retrieved");
    }
    let cited = of_run(&all, "citing");
    assert_eq!(cited.len(), 2);
    for a in &cited {
        assert_eq!(a["template"], "free-form-citing");
        assert_eq!(a["template_sha256"], sha(&citing_text));
        assert!(
            a["prompt"]
                .as_str()
                .expect("prompt")
                .contains("cite the chunk")
        );
    }
    let targets: HashMap<String, Vec<String>> = questions
        .iter()
        .map(|q| {
            (
                q["id"].as_str().expect("id").to_string(),
                strings(&q["relevant"]),
            )
        })
        .collect();
    for a in of_run(&all, "oracle") {
        let want = &targets[a["question_id"].as_str().expect("qid")];
        assert_eq!(
            &strings(&a["chunk_ids"]),
            want,
            "oracle: exactly the targets"
        );
        assert_eq!(a["context_policy"], "oracle");
    }
    for a in of_run(&all, "dist") {
        let want = &targets[a["question_id"].as_str().expect("qid")];
        let ids = strings(&a["chunk_ids"]);
        assert_eq!(ids.len(), 3, "k chunks");
        assert!(want.contains(&ids[1]), "the target second: {ids:?}");
        assert!(!want.contains(&ids[0]) && !want.contains(&ids[2]));
        assert_eq!(a["context_policy"], "distractors@2");
    }
    for a in of_run(&all, "rev") {
        let ranks: Vec<u64> = a["chunk_ranks"]
            .as_array()
            .expect("ranks")
            .iter()
            .map(|r| r.as_u64().expect("rank"))
            .collect();
        assert_eq!(ranks, vec![3, 2, 1], "best chunk last");
        assert_eq!(a["chunk_order"], "reversed");
    }
    let cmp = env.json(&[
        "report",
        "answers",
        "--compare",
        "shipped",
        "citing",
        "--json",
    ]);
    assert_eq!(
        cmp["template_a"],
        format!("shipped@{}", &sha(&shipped)[..12])
    );
    assert_eq!(
        cmp["template_b"],
        format!("free-form-citing@{}", &sha(&citing_text)[..12])
    );
    let err = fails(
        &env,
        &[
            &base[..],
            &[
                "--run",
                "shipped",
                "--prompt",
                citing.to_str().expect("utf8"),
            ],
        ]
        .concat(),
    );
    assert!(
        err.contains("run `shipped` was answered with the template shipped@"),
        "{err}"
    );
}

/// The constructed external answers: per question, the answer text and its contexts.
/// Sentence by sentence, the citations cover every case ALCE distinguishes: a cited
/// target, a sentence with no citation, an over-citation (two chunks), and a chunk
/// that was not in the prompt.
fn external_lines(
    questions: &[Value],
    chunk_ids: &[String],
) -> (String, Vec<(String, Vec<String>)>) {
    let mut text = String::new();
    let mut contexts = Vec::new();
    for (i, q) in questions.iter().enumerate() {
        let qid = q["id"].as_str().expect("id");
        let target = strings(&q["relevant"])[0].clone();
        let other = chunk_ids
            .iter()
            .find(|c| **c != target)
            .expect("another chunk")
            .clone();
        // The reference's first words, without anything that ends a sentence or opens a
        // bracket, so the sentences are exactly the four written here.
        let reference = q["answer"].as_str().unwrap_or("See the guidance");
        let first: String = reference
            .split_whitespace()
            .take(12)
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .filter(|c| !matches!(c, '.' | '!' | '?' | '[' | ']'))
            .collect();
        let answer = format!(
            "{first} [chunk {target}]. This is what the guidance says. It applies to everyone [{target}, {other}]. More is known [chunk made-up-{i}]."
        );
        let ctx = vec![target.clone(), other.clone()];
        let line = serde_json::json!({
            "question_id": qid,
            "answer": answer,
            "contexts": ctx,
            "latency_ms": 1500.0 + 100.0 * i as f64,
            "output_tokens": 40,
        });
        text.push_str(&format!("{line}\n"));
        contexts.push((qid.to_string(), ctx));
    }
    (text, contexts)
}

/// Another system's answers imported from a file: a bad line imports nothing, a
/// second import adds nothing; the run is judged and compared with a raglab run
/// (McNemar over the same two questions), and its citations are scored by SmolLM2 with
/// every score equal to ALCE's rules applied to the stored verdicts.
#[tokio::test(flavor = "multi_thread")]
async fn an_external_run_is_imported_judged_compared_and_cited() {
    let env = Env::new();
    common::five_docs_indexed(&env);
    let (qs_path, questions) = questions_file(&env);
    let qs = qs_path.to_str().expect("utf8");
    let ctx = common::context(&env, raglab::config::Config::default());
    let chunk_ids: Vec<String> = raglab::service::corpus::chunks_or_empty(&ctx)
        .await
        .expect("chunks")
        .into_iter()
        .map(|c| c.id)
        .collect();
    // Two questions keep the judge's and the entailment judge's work small.
    let (lines, contexts) = external_lines(&questions[..2], &chunk_ids);
    let file = env.dir.path().join("agent.jsonl");
    // One unknown field on the last line: nothing is imported.
    let broken = format!("{lines}{{\"question_id\": \"x\", \"answer\": \"a\", \"context\": []}}\n");
    std::fs::write(&file, broken).expect("write");
    let err = fails(
        &env,
        &[
            "answers",
            "import",
            file.to_str().expect("utf8"),
            "--run",
            "agent",
            "--questions",
            qs,
        ],
    );
    assert!(
        err.contains("unknown field `context`") && err.contains("nothing imported"),
        "{err}"
    );
    assert!(stored_answers(&env).await.is_empty());
    std::fs::write(&file, &lines).expect("write");
    let import = [
        "answers",
        "import",
        file.to_str().expect("utf8"),
        "--run",
        "agent",
        "--questions",
        qs,
        "--system",
        "my-agent",
    ];
    let out = env.ok(&import);
    assert!(String::from_utf8_lossy(&out.stdout).contains("2 answer(s) imported, 0 already there"));
    let out = env.ok(&import);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 answer(s) imported, 2 already there"));
    let all = stored_answers(&env).await;
    let agent = of_run(&all, "agent");
    assert_eq!(agent.len(), 2);
    for a in &agent {
        let want = &contexts
            .iter()
            .find(|(q, _)| a["question_id"] == q.as_str())
            .expect("q")
            .1;
        assert_eq!(&strings(&a["chunk_ids"]), want);
        assert_eq!(a["model_file"], "external:my-agent");
        assert_eq!(a["target_prompt_rank"], 1);
    }
    // The same system without retrieval (no contexts), its frugality baseline.
    let bare: String = questions[..2]
        .iter()
        .enumerate()
        .map(|(i, q)| {
            let line = serde_json::json!({
                "question_id": q["id"],
                "answer": "Ask your doctor.",
                "latency_ms": 500.0 + 100.0 * i as f64,
            });
            format!("{line}\n")
        })
        .collect();
    let bare_file = env.dir.path().join("agent-bare.jsonl");
    std::fs::write(&bare_file, bare).expect("write");
    env.ok(&[
        "answers",
        "import",
        bare_file.to_str().expect("utf8"),
        "--run",
        "agent-bare",
        "--questions",
        qs,
        "--system",
        "my-agent",
    ]);
    // A raglab run over the same questions; all judged; compared.
    env.ok(&[
        "generate",
        "--questions",
        qs,
        "--run",
        "rag",
        "--k",
        "3",
        "--max-tokens",
        "16",
        "--limit",
        "2",
    ]);
    env.ok(&["judge"]);
    // Frugality of the external run against its own no-context baseline: the latency
    // difference by hand, (1500 + 1600) / 2 - (500 + 600) / 2 ms = 1 s.
    let fr = env.json(&["report", "answers", "--baseline", "agent-bare", "--json"]);
    let confs = fr["frugality"]["configurations"]
        .as_array()
        .expect("configurations");
    let agent_conf = confs
        .iter()
        .find(|c| c["run"] == "agent")
        .expect("agent compared");
    assert!(
        (agent_conf["d_latency_s"].as_f64().expect("dC") - 1.0).abs() < 1e-9,
        "{agent_conf}"
    );
    assert_eq!(agent_conf["n_questions"], 2);
    assert!(
        confs.iter().all(|c| c["run"] != "rag"),
        "another model is not paired"
    );
    let cmp = env.json(&["report", "answers", "--compare", "agent", "rag", "--json"]);
    assert_eq!(cmp["template_a"], "external:my-agent");
    let criteria = cmp["criteria"].as_array().expect("criteria");
    assert!(!criteria.is_empty(), "the external run is judged: {cmp}");
    for c in criteria {
        assert_eq!(c["questions"], 2, "every question paired: {c}");
        let m = &c["mcnemar"];
        let total: u64 = ["both_pass", "only_a", "only_b", "both_fail"]
            .iter()
            .map(|k| m[*k].as_u64().expect("count"))
            .sum();
        assert_eq!(total, 2);
    }
    // Citations, judged by SmolLM2.
    env.ok(&["answers", "cite", "--run", "agent"]);
    let records: Vec<Value> = raglab::service::answer::citations(&ctx.workspace)
        .read_all::<Value>()
        .await
        .expect("citations");
    assert_eq!(records.len(), 2);
    let (mut recalls, mut precisions) = (Vec::new(), Vec::new());
    for (i, r) in records.iter().enumerate() {
        let verdicts: Vec<Value> =
            serde_json::from_str(r["verdicts"].as_str().expect("verdicts")).expect("json");
        // The parse, by hand: four sentences, their citations as written.
        let cited: Vec<Vec<String>> = verdicts.iter().map(|v| strings(&v["cited"])).collect();
        let qid = r["answer_id"]
            .as_str()
            .expect("id")
            .split('/')
            .nth(1)
            .expect("qid");
        let ctxs = &contexts.iter().find(|(q, _)| q == qid).expect("q").1;
        let n = questions
            .iter()
            .position(|q| q["id"] == qid)
            .expect("known");
        assert_eq!(
            cited,
            vec![
                vec![ctxs[0].clone()],
                vec![],
                ctxs.clone(),
                vec![format!("made-up-{n}")],
            ],
            "answer {i}"
        );
        // ALCE's rules on the stored verdicts: no citation and a made-up citation are
        // unsupported, with every such citation not needed; a supported single
        // citation is needed; an unsupported one is not.
        let supported: Vec<bool> = verdicts
            .iter()
            .map(|v| v["supported"].as_bool().expect("bool"))
            .collect();
        assert!(!supported[1] && !supported[3]);
        assert_eq!(
            strings(&verdicts[3]["not_needed"]),
            vec![format!("made-up-{n}")]
        );
        if supported[0] {
            assert!(strings(&verdicts[0]["not_needed"]).is_empty());
        } else {
            assert_eq!(strings(&verdicts[0]["not_needed"]), vec![ctxs[0].clone()]);
        }
        let nn2 = strings(&verdicts[2]["not_needed"]);
        if !supported[2] {
            assert_eq!(&nn2, ctxs);
        } else {
            assert!(
                nn2.len() < 2,
                "a supported sentence needs one of its chunks"
            );
        }
        let needed: usize = verdicts
            .iter()
            .map(|v| strings(&v["cited"]).len() - strings(&v["not_needed"]).len())
            .sum();
        let recall = supported.iter().filter(|s| **s).count() as f64 / 4.0;
        let precision = needed as f64 / 4.0;
        assert_eq!(r["recall"].as_f64(), Some(recall));
        assert_eq!(r["precision"].as_f64(), Some(precision));
        assert_eq!(r["citations"], 4);
        assert_eq!(strings(&r["outside_prompt"]), vec![format!("made-up-{n}")]);
        recalls.push(recall);
        precisions.push(precision);
    }
    let report = env.json(&["report", "answers", "--run", "agent", "--json"]);
    let by_judge = report["agent"]["citations"]
        .as_object()
        .expect("citations in the report");
    let (judge, c) = by_judge.iter().next().expect("one judge");
    assert!(judge.contains("SmolLM2"), "{judge}");
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    assert!((c["recall"].as_f64().expect("recall") - mean(&recalls)).abs() < 1e-12);
    assert!((c["precision"].as_f64().expect("precision") - mean(&precisions)).abs() < 1e-12);
    assert_eq!(c["recall_undefined"], 0);
    let outside: BTreeSet<String> = strings(&c["outside_prompt"]).into_iter().collect();
    assert_eq!(outside.len(), 2);
    // The study report shows the same figures, a row per run and judge.
    let dir = env.dir.path().join("study-report");
    env.ok(&["report", "study", "--out", dir.to_str().expect("utf8")]);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    let expected = format!(
        "| agent | {judge} | 2 | {:.4} | 0 | {:.4} | 0 | 8 | 2 |",
        mean(&recalls),
        mean(&precisions)
    );
    assert!(md.contains("## Citations"), "{md}");
    assert!(
        md.lines().any(|l| l == expected),
        "no row {expected} in:\n{md}"
    );
    // And the Evaluation pane (6), from the same numbers.
    let sight = raglab::service::study::sight(&ctx, &raglab::service::study::Viewer::Lead)
        .await
        .expect("sight");
    let overview = raglab::service::evaluate::overview(&ctx, &sight).await;
    let mut app = raglab::tui::app::App::new(
        Vec::new(),
        raglab::tui::keymap::Keymap::default_keymap(),
        "ws".into(),
    );
    app.pane = raglab::tui::app::Pane::Evaluation;
    app.evaluation.on_loaded(overview);
    let screen = common::screen(&app, 220, 60);
    let want = [
        "agent".to_string(),
        format!("{:.3} (0 undef.)", mean(&recalls)),
        format!("{:.3} (0 undef.)", mean(&precisions)),
    ];
    assert!(
        screen.contains("Citations (raglab answers cite)")
            && screen
                .lines()
                .any(|l| want.iter().all(|w| l.contains(w.as_str()))),
        "{want:?} in:\n{screen}"
    );
    // A second cite scores nothing new.
    let out = env.ok(&["answers", "cite", "--run", "agent"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 answer(s) scored (2 already)"));
    // The external run judged again with a user's judge prompt: stored apart, under
    // the judge's name tagged with the template's name and hash (computed here), each
    // prompt from that template; a second run finds nothing left to judge.
    let strict = env.dir.path().join("strict.txt");
    let strict_text =
        "You are a strict grader.\n{criteria}\nQuestion: {question}\nAnswer: {answer}\n";
    std::fs::write(&strict, strict_text).expect("write");
    let judge_strict = [
        "judge",
        "--answers",
        "agent",
        "--prompt",
        strict.to_str().expect("utf8"),
    ];
    env.ok(&judge_strict);
    use sha2::Digest;
    let sha = format!("{:x}", sha2::Sha256::digest(strict_text.as_bytes()));
    let tag = format!("+prompt-strict@{}", &sha[..12]);
    let stored: Vec<raglab::core::answer::JudgementRecord> =
        raglab::service::answer::judgements(&ctx.workspace)
            .read_all()
            .await
            .expect("judgements");
    let tagged: Vec<_> = stored
        .iter()
        .filter(|j| j.judge_model.ends_with(&tag))
        .collect();
    assert_eq!(
        tagged.len(),
        2,
        "{:?}",
        stored.iter().map(|j| &j.judge_model).collect::<Vec<_>>()
    );
    assert!(
        tagged
            .iter()
            .all(|j| j.run == "agent" && j.prompt.starts_with("You are a strict grader."))
    );
    let plain = stored
        .iter()
        .filter(|j| !j.judge_model.contains("+prompt-"))
        .count();
    assert_eq!(
        plain,
        stored.len() - 2,
        "the shipped prompt's judgements are untouched"
    );
    let again = env.ok(&judge_strict);
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("judging 0 answers"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
}
