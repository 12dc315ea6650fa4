//! Labels: validation, durability under SIGKILL, two concurrent writers, agreement.

use crate::common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use common::Env;

fn with_items(n: usize) -> Env {
    let env = Env::new();
    let f = env.dir.path().join("items.jsonl");
    let mut s = String::new();
    for i in 0..n {
        s.push_str(&format!(
            "{{\"item_id\": \"i{i}\", \"question\": \"Q{i}?\", \"reference_answer\": \"R{i}\", \"target_chunk\": \"T{i}\", \"answer\": \"A{i}\"}}\n"
        ));
    }
    std::fs::write(&f, s).expect("write");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        f.to_str().expect("utf8"),
    ]);
    env
}

fn exported_ids(env: &Env) -> HashSet<String> {
    let out = env.ok(&["--role", "lead", "labels", "export", "--format", "jsonl"]);
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).expect("json")["label_id"]
                .as_str()
                .expect("id")
                .to_string()
        })
        .collect()
}

#[test]
fn bad_imports_are_rejected_whole() {
    let env = with_items(3);
    let f = env.dir.path().join("labels.jsonl");
    let good = "{\"item_id\": \"i0\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"pass\"}\n";
    for (bad, why) in [
        (
            "{\"item_id\": \"nope\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"pass\"}",
            "unknown item",
        ),
        (
            "{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"tone\", \"label\": \"pass\"}",
            "unknown criterion",
        ),
        (
            "{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"maybe\"}",
            "is not a label",
        ),
        (
            "{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"pass\", \"rubric_version\": \"9\"}",
            "mix rubric versions",
        ),
        // A misspelled key is an error naming the line, never a retraction.
        (
            "{\"item_id\": \"i0\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"lable\": \"fail\"}",
            "labels.jsonl:2: not a label row",
        ),
        (
            "{\"item_id\": \"i0\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"lable\": \"fail\"}",
            "unknown field `lable`",
        ),
        (
            "{\"item_id\": \"i0\", \"reviewer\": \"ann\", \"criterion\": \"clarity\"}",
            "missing field `label`",
        ),
        (
            "{\"item_id\": \"i0\", \"reviewer\": \"judge\", \"criterion\": \"clarity\", \"label\": \"pass\"}",
            "reserved for the LLM judge",
        ),
        (
            "{\"item_id\": \"i0\", \"reviewer\": \"ann\\u001b[2J\", \"criterion\": \"clarity\", \"label\": \"pass\"}",
            "may hold only letters",
        ),
    ] {
        std::fs::write(&f, format!("{good}{bad}\n")).expect("write");
        let out = env
            .cmd()
            .args(["labels", "import", f.to_str().expect("utf8")])
            .output()
            .expect("spawn");
        assert!(!out.status.success(), "{why} accepted");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(why), "expected `{why}` in: {err}");
        assert!(
            exported_ids(&env).is_empty(),
            "nothing partially imported ({why})"
        );
    }
    std::fs::write(&f, good).expect("write");
    env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    assert_eq!(exported_ids(&env).len(), 1);
    // A retraction is explicit: `"label": null` appends an undo version.
    let undo = "{\"item_id\": \"i0\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": null}\n";
    std::fs::write(&f, undo).expect("write");
    env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    let out = env.ok(&["--role", "lead", "labels", "export", "--format", "jsonl"]);
    let rows: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    let labels: Vec<&serde_json::Value> = rows.iter().map(|r| &r["label"]).collect();
    assert_eq!(
        labels,
        [&serde_json::json!("pass"), &serde_json::Value::Null]
    );
}

/// Items files are strict too: an unknown field or a line that is not an object is
/// refused with its line number, and nothing is created.
#[test]
fn bad_item_files_are_refused_whole() {
    let env = Env::new();
    let f = env.dir.path().join("items.jsonl");
    let good = "{\"item_id\": \"a\", \"question\": \"Q?\", \"answer\": \"A\"}\n";
    for (bad, why) in [
        ("[1,2]", "items.jsonl:2: not an item"),
        (
            "{\"item_id\": \"b\", \"question\": \"Q?\", \"answr\": \"A\"}",
            "unknown field `answr`",
        ),
    ] {
        std::fs::write(&f, format!("{good}{bad}\n")).expect("write");
        let out = env
            .cmd()
            .args([
                "annotate",
                "create",
                "--from-file",
                f.to_str().expect("utf8"),
            ])
            .output()
            .expect("spawn");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(why), "{why}: {err}");
        assert!(
            !env.workspace().join("items.lance").exists(),
            "items created ({why})"
        );
    }
}

/// Kill a labelling process at random points many times: every label it reported as
/// saved must be there afterwards.
#[test]
fn every_saved_label_survives_sigkill() {
    let env = with_items(5);
    let mut reported: HashSet<String> = HashSet::new();
    let mut rng = raglab::core::rng::Rng::new(11);
    for round in 0..12 {
        let mut child = env
            .cmd()
            .args([
                "labels",
                "stress",
                "--reviewer",
                &format!("r{round}"),
                "--count",
                "1000",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        std::thread::sleep(Duration::from_millis(150 + rng.below(600) as u64));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        while let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            if let Some(id) = line
                .strip_prefix("saved ")
                .and_then(|r| r.split_whitespace().next())
            {
                reported.insert(id.to_string());
            }
        }
    }
    assert!(
        reported.len() > 10,
        "the stress runs saved too little to test: {}",
        reported.len()
    );
    let stored = exported_ids(&env);
    let missing: Vec<_> = reported.difference(&stored).collect();
    assert!(
        missing.is_empty(),
        "{} reported labels lost: {missing:?}",
        missing.len()
    );
}

#[test]
fn two_concurrent_writers_lose_nothing() {
    let env = with_items(4);
    let spawn = |who: &str| {
        env.cmd()
            .args(["labels", "stress", "--reviewer", who, "--count", "25"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn")
    };
    let (a, b) = (spawn("alice"), spawn("bob"));
    let mut saved = HashSet::new();
    for child in [a, b] {
        let out = child.wait_with_output().expect("wait");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        for l in String::from_utf8_lossy(&out.stdout).lines() {
            saved.insert(l.split_whitespace().nth(1).expect("id").to_string());
        }
    }
    assert_eq!(saved.len(), 50);
    assert_eq!(exported_ids(&env), saved);
}

#[test]
fn agreement_table_matches_hand_computation() {
    let env = with_items(4);
    // Clarity: ann p p f f, bob p f f f -> kappa 0.5, macro-F1 (bob as reference) (0.8 + 2/3) / 2.
    let f = env.dir.path().join("labels.jsonl");
    let mut s = String::new();
    for (i, (a, b)) in [
        ("pass", "pass"),
        ("pass", "fail"),
        ("fail", "fail"),
        ("fail", "fail"),
    ]
    .iter()
    .enumerate()
    {
        s.push_str(&format!("{{\"item_id\": \"i{i}\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"{a}\"}}\n"));
        s.push_str(&format!("{{\"item_id\": \"i{i}\", \"reviewer\": \"bob\", \"criterion\": \"clarity\", \"label\": \"{b}\"}}\n"));
    }
    std::fs::write(&f, s).expect("write");
    env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    let out = env.json(&[
        "--role",
        "lead",
        "agree",
        "--bootstrap",
        "500",
        "--seed",
        "3",
        "--json",
    ]);
    let rows = out["rows"].as_array().expect("rows");
    let clarity = rows
        .iter()
        .find(|r| r["criterion"] == "Clarity")
        .expect("clarity row");
    let rep = &clarity["pairs"][0][1];
    assert!((rep["kappa"]["value"].as_f64().expect("k") - 0.5).abs() < 1e-12);
    assert!(
        (rep["macro_f1"]["value"].as_f64().expect("f") - (0.8 + 2.0 / 3.0) / 2.0).abs() < 1e-12
    );
    assert!(
        clarity["pairs"][1][1].is_null(),
        "no judge labels -> no data"
    );
    let again = env.json(&[
        "--role",
        "lead",
        "agree",
        "--bootstrap",
        "500",
        "--seed",
        "3",
        "--json",
    ]);
    assert_eq!(out["rows"], again["rows"], "same seed, same intervals");
    // A change of mind is a new version; the history keeps both.
    std::fs::write(&f, "{\"item_id\": \"i1\", \"reviewer\": \"ann\", \"criterion\": \"clarity\", \"label\": \"fail\"}\n").expect("write");
    env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    let hist = env.ok(&["--role", "lead", "labels", "history", "i1"]);
    let h = String::from_utf8_lossy(&hist.stdout);
    assert_eq!(h.lines().filter(|l| l.contains("ann")).count(), 2, "{h}");
    let out = env.json(&["--role", "lead", "agree", "--bootstrap", "200", "--json"]);
    let clarity = out["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["criterion"] == "Clarity")
        .cloned()
        .expect("row");
    assert_eq!(
        clarity["pairs"][0][1]["raw_agreement"]["value"].as_f64(),
        Some(1.0)
    );
}

/// `labels export --final` piped holds exactly the bytes `--out FILE` writes, in both
/// formats, an item id with a bidirectional override included: untrusted text is made
/// visible only on a terminal, never in a file or a pipe.
#[test]
fn a_piped_final_export_is_the_file_export_byte_for_byte() {
    let env = Env::new();
    let items = env.dir.path().join("items.jsonl");
    let tricky = "i\u{202e}1";
    std::fs::write(
        &items,
        format!(
            "{}\n",
            serde_json::json!({"item_id": tricky, "question": "Q?", "reference_answer": "R", "target_chunk": "T", "answer": "A"})
        ),
    )
    .expect("write");
    env.ok(&[
        "annotate",
        "create",
        "--from-file",
        items.to_str().expect("utf8"),
    ]);
    let labels = env.dir.path().join("labels.jsonl");
    let mut s = String::new();
    for reviewer in ["ann", "bob"] {
        for criterion in [
            "faithfulness",
            "completeness",
            "factual_consistency",
            "clarity",
        ] {
            s.push_str(&format!(
                "{}\n",
                serde_json::json!({"item_id": tricky, "reviewer": reviewer, "criterion": criterion, "label": "pass"})
            ));
        }
    }
    std::fs::write(&labels, s).expect("write");
    env.ok(&["labels", "import", labels.to_str().expect("utf8")]);
    for format in ["jsonl", "csv"] {
        let export = [
            "--role", "lead", "labels", "export", "--final", "--format", format,
        ];
        let piped = env.ok(&export).stdout;
        let file = env.dir.path().join(format!("finals.{format}"));
        env.ok(&[&export[..], &["--out", file.to_str().expect("utf8")]].concat());
        let written = std::fs::read(&file).expect("export file");
        assert_eq!(piped, written, "{format}");
        let text = String::from_utf8(written).expect("utf8");
        assert_eq!(text.matches("clarity").count(), 1, "{text}");
        assert!(text.contains('\u{202e}'), "{format}: {text}");
    }
}

/// `labels export` writes every version (a change of mind and an undo included) in
/// each format, and the three formats carry the same rows; the parquet file is read
/// back with the parquet crate's own reader and checked column by column against
/// the JSONL export (which takes a different path: lance -> arrow-json).
#[test]
fn export_includes_every_version_in_every_format() {
    use arrow_array::Array as _;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    let env = with_items(2);
    let f = env.dir.path().join("labels.jsonl");
    let rows = [
        r#"{"item_id": "i0", "reviewer": "ann", "criterion": "clarity", "label": "pass", "note": "comma, \"quote\""}"#,
        r#"{"item_id": "i1", "reviewer": "bob", "criterion": "clarity", "label": "fail"}"#,
    ];
    std::fs::write(&f, rows.join("\n")).expect("write");
    env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    // A change of mind, then an undo (null label), each a new version.
    for change in [
        r#"{"item_id": "i0", "reviewer": "ann", "criterion": "clarity", "label": "fail"}"#,
        r#"{"item_id": "i1", "reviewer": "bob", "criterion": "clarity", "label": null}"#,
    ] {
        std::fs::write(&f, change).expect("write");
        env.ok(&["labels", "import", f.to_str().expect("utf8")]);
    }

    let jsonl: Vec<serde_json::Value> =
        String::from_utf8_lossy(&env.ok(&["--role", "lead", "labels", "export"]).stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
    assert_eq!(jsonl.len(), 4, "two labels, a change and an undo");
    let i0: Vec<&str> = jsonl
        .iter()
        .filter(|r| r["item_id"] == "i0")
        .map(|r| r["label"].as_str().expect("label"))
        .collect();
    assert_eq!(i0, ["pass", "fail"], "both versions, in order");

    let csv_path = env.dir.path().join("labels.csv");
    env.ok(&[
        "--role",
        "lead",
        "labels",
        "export",
        "--format",
        "csv",
        "--out",
        csv_path.to_str().expect("utf8"),
    ]);
    let csv = std::fs::read_to_string(&csv_path).expect("csv");
    assert_eq!(csv.lines().count(), 1 + 4, "header + every version");
    assert!(
        csv.contains(r#""comma, ""quote""""#),
        "RFC 4180 quoting: {csv}"
    );

    let pq_path = env.dir.path().join("labels.parquet");
    env.ok(&[
        "--role",
        "lead",
        "labels",
        "export",
        "--format",
        "parquet",
        "--out",
        pq_path.to_str().expect("utf8"),
    ]);
    let bytes = std::fs::read(&pq_path).expect("parquet");
    assert_eq!(&bytes[..4], b"PAR1");
    assert_eq!(&bytes[bytes.len() - 4..], b"PAR1");
    assert!(!env.dir.path().join("labels.parquet.partial").exists());
    let reader =
        ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&pq_path).expect("open"))
            .expect("parquet metadata")
            .build()
            .expect("reader");
    let batches: Vec<_> = reader.collect::<Result<_, _>>().expect("batches");
    let total: usize = batches.iter().map(|b| b.num_rows()).sum();
    assert_eq!(total, jsonl.len());
    let mut row = 0;
    for b in &batches {
        let col = |name: &str| {
            b.column_by_name(name)
                .unwrap_or_else(|| panic!("column {name}"))
                .clone()
        };
        let seq = col("seq");
        let seq = seq
            .as_any()
            .downcast_ref::<arrow_array::UInt64Array>()
            .expect("seq is a typed UInt64 column");
        let label = col("label");
        let label = label
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("label is utf8");
        let ids = col("label_id");
        let ids = ids
            .as_any()
            .downcast_ref::<arrow_array::StringArray>()
            .expect("label_id is utf8");
        for i in 0..b.num_rows() {
            let want = &jsonl[row];
            assert_eq!(ids.value(i), want["label_id"].as_str().expect("id"));
            assert_eq!(seq.value(i), want["seq"].as_u64().expect("seq"));
            let got = (!label.is_null(i)).then(|| label.value(i));
            assert_eq!(got, want["label"].as_str(), "row {row}");
            row += 1;
        }
    }

    let out = env
        .cmd()
        .args(["labels", "export", "--format", "xml"])
        .output()
        .expect("spawn");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("possible values"));
}

/// Two `annotate create` of the same file at once, five times over: each reads the
/// items before appending, so both may store the same item; every command then sees
/// each item once (`annotate assign` counts them), whatever was stored.
#[test]
fn items_created_twice_at_once_are_seen_once() {
    let mut doubled = 0;
    for round in 0..5 {
        let env = Env::new();
        let f = env.dir.path().join("items.jsonl");
        let rows: String = (0..20)
            .map(|i| {
                format!(
                    "{{\"item_id\": \"i{i}\", \"question\": \"Q{i}?\", \"answer\": \"A{i}\"}}\n"
                )
            })
            .collect();
        std::fs::write(&f, rows).expect("write");
        let spawn = || {
            env.cmd()
                .args([
                    "annotate",
                    "create",
                    "--from-file",
                    f.to_str().expect("utf8"),
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn")
        };
        for child in [spawn(), spawn()] {
            let out = child.wait_with_output().expect("wait");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let ws = raglab::store::workspace::Workspace::open(env.workspace()).expect("ws");
        let stored: Vec<raglab::core::annotation::Item> = tokio::runtime::Runtime::new()
            .expect("runtime")
            .block_on(raglab::service::study::items_table(&ws).read_all())
            .expect("items");
        doubled += stored.len() - 20;
        let out = env.ok(&[
            "--role",
            "lead",
            "annotate",
            "assign",
            "--reviewers",
            "ann,bob",
        ]);
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(said.contains("assigned 20 items"), "round {round}: {said}");
    }
    eprintln!("items stored twice by the racing creates: {doubled} over 5 rounds of 20");
}

/// After a batch commit failed (here: one label in it is bad), the batch is committed
/// label by label, and a label already stored (as after a commit whose reply was
/// lost) is not stored again.
#[test]
fn a_batch_retried_label_by_label_stores_no_label_twice() {
    use raglab::config::{Config, Paths};
    use raglab::service::{Context, base::default_rubric, study};
    let env = with_items(2);
    let ctx = Context::with(
        Paths {
            config_dir: env.dir.path().join("config"),
            data_dir: env.dir.path().join("data"),
        },
        Config::default(),
        &env.workspace(),
    )
    .expect("context");
    let rubric = default_rubric();
    let (c, v) = (rubric.criteria[0].key.clone(), rubric.version.clone());
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let items = rt.block_on(study::read_items(&ctx)).expect("items");
    let good = |i: &str| study::Label::new(i, "ann", &c, Some("pass"), None, &v);
    let (first, second) = (good("i0"), good("i1"));
    // The first was committed, but its writer never heard back.
    rt.block_on(study::save_label(&ctx, &rubric, &items, &first))
        .expect("committed");
    let bad = study::Label::new("i0", "ann", &c, Some("maybe"), None, &v);
    let batch = [first.clone(), bad, second.clone()];
    // One bad label refuses the batch's commit; each is then committed once.
    let each = rt.block_on(study::commit_labels(&ctx, &rubric, &items, &batch));
    assert!(each[0].is_ok() && each[2].is_ok(), "{each:?}");
    // Refused by the study's rules (giving it again would not help), told apart from a
    // store that failed.
    let Err(study::SaveError::Refused(why)) = &each[1] else {
        panic!("the bad one is refused: {each:?}");
    };
    assert!(why.contains("`maybe` is not a label"), "{why}");
    let stored = exported_ids(&env);
    assert_eq!(
        stored,
        HashSet::from([first.label_id, second.label_id]),
        "each good label stored once"
    );
    let out = env.ok(&["--role", "lead", "labels", "export", "--format", "jsonl"]);
    let rows = String::from_utf8_lossy(&out.stdout);
    assert_eq!(rows.lines().count(), 2, "{rows}");
}
