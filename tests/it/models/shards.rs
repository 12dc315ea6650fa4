//! `--shard i/n` through the real binary (SPEC §9): shards split the work by a stable
//! hash of each id, write to the one workspace, and the reports are computed over all
//! rows: four shards of `eval retrieval`, merged, give exactly the one-process report.

use crate::common;

use std::collections::BTreeSet;
use std::process::Stdio;

use common::{Env, sample_guidance};
use proptest::prelude::*;
use raglab::core::shard::{Shard, fnv1a64};
use serde_json::Value;

/// The report without what legitimately differs between two runs: wall times and
/// the per-query file's name.
fn comparable(mut v: Value) -> Value {
    let o = v.as_object_mut().expect("report object");
    o.remove("seconds");
    o.remove("per_query_file");
    v
}

#[test]
fn four_shards_merged_give_exactly_the_one_process_report() {
    let env = Env::new();
    common::sample_indexed(&env);
    let q = common::repo().join("sample-data/questions.jsonl");
    let q = q.to_str().expect("utf8");
    let eval = [
        "eval",
        "retrieval",
        "--queries",
        q,
        "--methods",
        "bm25,tfidf,dense,hybrid,linear",
        "--sparse",
        "bm25,tfidf",
        "--alpha-sweep",
        "--k",
        "1,5,10,20",
        "--threads",
        "1",
    ];
    let dir = env.dir.path();
    let one_pq = dir.join("one.csv");
    let one = env.json(
        &[
            &eval[..],
            &["--json", "--per-query", one_pq.to_str().expect("utf8")],
        ]
        .concat(),
    );
    let one_failures = std::fs::read(env.workspace().join("eval/last-failures.json")).expect("f");

    // Four shard processes at once, committing to the one workspace.
    let children: Vec<_> = (1..=4)
        .map(|i| {
            env.cmd()
                .args(eval)
                .args(["--shard", &format!("{i}/4"), "--batch", "b4", "--json"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn shard")
        })
        .collect();
    let mut ranked = 0;
    for (i, c) in children.into_iter().enumerate() {
        let out = c.wait_with_output().expect("shard");
        assert!(
            out.status.success(),
            "shard {}: {}",
            i + 1,
            String::from_utf8_lossy(&out.stderr)
        );
        let s: Value = serde_json::from_slice(&out.stdout).expect("shard json");
        let ids: Vec<String> = common::sample_questions()
            .iter()
            .map(|q| q["id"].as_str().expect("id").to_string())
            .collect();
        let mine = Shard::new(i as u32 + 1, 4)
            .expect("shard")
            .select(ids, String::as_str);
        assert_eq!(s["ranked"].as_u64(), Some(mine.len() as u64), "{s}");
        assert!(!mine.is_empty(), "shard {} is empty", i + 1);
        ranked += mine.len();
    }
    assert_eq!(ranked, 252);

    let merged_pq = dir.join("merged.csv");
    let merged = env.json(&[
        "eval",
        "retrieval",
        "--queries",
        q,
        "--methods",
        "bm25,tfidf,dense,hybrid,linear",
        "--sparse",
        "bm25,tfidf",
        "--alpha-sweep",
        "--k",
        "1,5,10,20",
        "--merge",
        "--batch",
        "b4",
        "--json",
        "--per-query",
        merged_pq.to_str().expect("utf8"),
    ]);
    // Every metric, sweep point, best alpha, breakdown (eta^2 included) and failure,
    // to the last digit of the printed f64.
    assert_eq!(comparable(merged.clone()), comparable(one.clone()));
    assert!(
        one["results"].as_array().is_some_and(|r| r.len() == 7),
        "{one}"
    );
    assert_eq!(
        std::fs::read(&merged_pq).expect("merged csv"),
        std::fs::read(&one_pq).expect("one csv")
    );
    assert_eq!(
        std::fs::read(env.workspace().join("eval/last-failures.json")).expect("f"),
        one_failures
    );
}

#[test]
fn a_merge_with_a_shard_missing_names_it_and_reports_nothing() {
    let env = Env::new();
    env.ok(&["ingest", sample_guidance().to_str().expect("utf8")]);
    env.ok(&["index", "--sparse-only"]);
    let q = common::repo().join("sample-data/questions.jsonl");
    let q = q.to_str().expect("utf8");
    let base = [
        "eval",
        "retrieval",
        "--queries",
        q,
        "--methods",
        "bm25,tfidf",
    ];
    for i in [1, 2, 4] {
        env.ok(&[&base[..], &["--shard", &format!("{i}/4")]].concat());
    }
    let out = env.cmd().args(base).arg("--merge").output().expect("merge");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    let ids: Vec<String> = common::sample_questions()
        .iter()
        .map(|q| q["id"].as_str().expect("id").to_string())
        .collect();
    let third = Shard::new(3, 4).expect("shard").select(ids, String::as_str);
    assert!(
        err.contains(&format!(
            "{} of 252 queries have no ranked lists",
            third.len()
        )),
        "{err}"
    );
    assert!(err.contains("missing shards 3/4;"), "{err}");
    assert!(!env.workspace().join("eval/last-retrieval.json").exists());
    // The missing shard completes the batch: the merge now equals one process.
    env.ok(&[&base[..], &["--shard", "3/4"]].concat());
    let merged = env.json(&[&base[..], &["--merge", "--json"]].concat());
    let one = env.json(&[&base[..], &["--json"]].concat());
    assert_eq!(comparable(merged), comparable(one));
}

/// Four generation questions and four answers' judgements split over two shards:
/// each shard does exactly its ids, together all of them once.
#[test]
fn generate_judge_and_mcqa_shards_split_by_id_and_cover_everything() {
    let env = Env::new();
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let qf = env.dir.path().join("q.jsonl");
    let texts = [
        "How is rabies prevented?",
        "How do I avoid the flu?",
        "Should my cat get a rabies shot?",
        "How often is the flu vaccine given?",
        "Are bats a rabies risk?",
        "Does hand washing help against flu?",
    ];
    let mut s = String::new();
    for (i, t) in texts.iter().enumerate() {
        s.push_str(&format!(
            "{{\"id\": \"q{i}\", \"text\": \"{t}\", \"answer\": \"ref\", \"relevant\": [\"flu#prevention\"]}}\n"
        ));
    }
    std::fs::write(&qf, s).expect("write");
    let qs = qf.to_str().expect("utf8");
    let ids: Vec<String> = (0..texts.len()).map(|i| format!("q{i}")).collect();
    let of = |i: u32| -> BTreeSet<String> {
        Shard::new(i, 2)
            .expect("shard")
            .select(ids.clone(), String::as_str)
            .into_iter()
            .collect()
    };
    assert!(!of(1).is_empty() && !of(2).is_empty(), "{:?}", of(1));
    let answered = |env: &Env| -> BTreeSet<String> {
        env.json(&["report", "answers", "--run", "s", "--list", "--json"])["items"]
            .as_array()
            .expect("list")
            .iter()
            .map(|a| a["question_id"].as_str().expect("qid").to_string())
            .collect()
    };
    let gen_args = |shard: &str| -> Vec<String> {
        [
            "generate",
            "--questions",
            qs,
            "--run",
            "s",
            "--k",
            "1",
            "--max-tokens",
            "4",
            "--shard",
            shard,
        ]
        .map(String::from)
        .to_vec()
    };
    let gen1: Vec<String> = gen_args("1/2");
    env.ok(&gen1.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(answered(&env), of(1));
    let gen2: Vec<String> = gen_args("2/2");
    env.ok(&gen2.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(answered(&env), ids.iter().cloned().collect());

    // Judge by answer id, one shard at a time.
    let list = env.json(&["report", "answers", "--run", "s", "--list", "--json"])["items"].take();
    let answer_ids: Vec<String> = list
        .as_array()
        .expect("list")
        .iter()
        .map(|a| a["answer_id"].as_str().expect("aid").to_string())
        .collect();
    // Judged answers: one faithfulness label each (one judge model).
    let judged = |env: &Env| -> u64 {
        let r = env.json(&["report", "answers", "--run", "s", "--json"]);
        r["s"]["pass_rates"]["faithfulness"]["overall"]["total"]
            .as_u64()
            .unwrap_or(0)
    };
    let first = Shard::new(1, 2)
        .expect("shard")
        .select(answer_ids.clone(), String::as_str)
        .len() as u64;
    env.ok(&["judge", "--answers", "s", "--shard", "1/2"]);
    assert_eq!(judged(&env), first);
    env.ok(&["judge", "--answers", "s", "--shard", "2/2"]);
    assert_eq!(judged(&env), answer_ids.len() as u64);

    // MCQA: each shard answers its questions; the report covers what all stored.
    let mf = env.dir.path().join("m.jsonl");
    let mut m = String::new();
    for (i, t) in texts.iter().enumerate() {
        m.push_str(&format!(
            "{{\"id\": \"q{i}\", \"text\": \"{t}\", \"options\": [\"yes\", \"no\"], \"answer\": \"yes\"}}\n"
        ));
    }
    std::fs::write(&mf, m).expect("write");
    let ms = mf.to_str().expect("utf8");
    let mcqa = |shard: &str| {
        env.json(&[
            "eval",
            "mcqa",
            "--questions",
            ms,
            "--ks",
            "0",
            "--run",
            "m",
            "--shard",
            shard,
            "--json",
        ])
    };
    assert_eq!(mcqa("2/2")["questions"].as_u64(), Some(of(2).len() as u64));
    assert_eq!(mcqa("1/2")["questions"].as_u64(), Some(texts.len() as u64));
}

/// `index --shard`: two shards embed disjoint halves of the chunks (five sample
/// documents: the rule needs no more), appended side by side; a whole `index`
/// afterwards embeds nothing and dense search works.
#[test]
fn index_shards_embed_disjoint_halves() {
    let env = Env::new();
    let docs = common::sample_subset(env.dir.path(), &common::FIVE_DOCS);
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let chunks = chunk_ids(&env);
    assert_eq!(chunks.len(), 19);
    let mut total = 0;
    for i in 1..=2u32 {
        let s = env.json(&["index", "--shard", &format!("{i}/2"), "--json"]);
        let want = Shard::new(i, 2)
            .expect("shard")
            .select(chunks.clone(), String::as_str)
            .len();
        assert_eq!(s["embedded"].as_u64(), Some(want as u64), "{s}");
        total += want;
    }
    assert_eq!(total, 19);
    assert!(total > 0 && chunks.len() > 2, "both shards had work");
    // Shard 1 again embeds nothing: its vectors are current.
    let again = env.json(&["index", "--shard", "1/2", "--json"]);
    assert_eq!(again["embedded"].as_u64(), Some(0), "{again}");
    let whole = env.json(&["index", "--json"]);
    assert_eq!(whole["embedded"].as_u64(), Some(0), "{whole}");
    assert_eq!(whole["sparse"]["added"].as_u64(), Some(19), "{whole}");
    let hits = env.json(&[
        "search",
        "How is rabies spread?",
        "--method",
        "dense",
        "-k",
        "3",
        "--json",
    ]);
    assert!(
        hits.to_string().contains("rabies"),
        "dense search after sharded indexing: {hits}"
    );
}

/// `summarise --shard`: two shards summarise disjoint sets of chunks, exactly the
/// ids each shard owns by the hash, and together every chunk once.
#[test]
fn summarise_shards_cover_every_chunk_once() {
    let env = Env::new();
    let docs = env.dir.path().join("docs");
    std::fs::create_dir_all(&docs).expect("mkdir");
    for (name, topic) in [("a", "measles"), ("b", "mumps"), ("c", "rubella")] {
        std::fs::write(
            docs.join(format!("{name}.md")),
            format!(
                "# {topic}\n\n## Signs\n\nFever and rash are signs of {topic}.\n\n## Prevention\n\nThe vaccine prevents {topic}.\n"
            ),
        )
        .expect("write");
    }
    env.ok(&["ingest", docs.to_str().expect("utf8")]);
    let chunks = chunk_ids(&env);
    assert_eq!(chunks.len(), 6);
    let summarised = || -> Vec<String> {
        let rt = tokio::runtime::Runtime::new().expect("runtime");
        let ws = raglab::store::workspace::Workspace::open(env.workspace()).expect("ws");
        let mut ids: Vec<String> = rt
            .block_on(raglab::service::corpus::all_summaries(&ws))
            .expect("summaries")
            .into_iter()
            .map(|r| r.chunk_id)
            .collect();
        ids.sort();
        ids
    };
    let mut before = Vec::new();
    for i in 1..=2u32 {
        let r = env.json(&[
            "summarise",
            "--shard",
            &format!("{i}/2"),
            "--max-tokens",
            "6",
            "--threads",
            "2",
            "--json",
        ]);
        let mut want = Shard::new(i, 2)
            .expect("shard")
            .select(chunks.clone(), String::as_str);
        assert_eq!(r["summarised"].as_u64(), Some(want.len() as u64), "{r}");
        want.extend(before.iter().cloned());
        want.sort();
        let now = summarised();
        assert_eq!(now, want, "shard {i}/2 summarised other chunks");
        before = now;
    }
    let mut all = chunks.clone();
    all.sort();
    assert_eq!(before, all);
    let again = env.json(&["summarise", "--json"]);
    assert_eq!(again["summarised"].as_u64(), Some(0), "{again}");
}

/// The ids of the workspace's chunks, as `corpus list` gives them.
fn chunk_ids(env: &Env) -> Vec<String> {
    env.json(&["corpus", "list", "--json"])["items"]
        .as_array()
        .expect("chunks")
        .iter()
        .map(|c| c["id"].as_str().expect("id").to_string())
        .collect()
}

/// The published FNV-1a 64 test vectors (Fowler/Noll/Vo reference test suite).
#[test]
fn fnv1a64_matches_the_reference_vectors() {
    assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
    assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
}

#[test]
fn parses_and_rejects() {
    assert_eq!("2/4".parse::<Shard>(), Ok(Shard::new(2, 4).expect("valid")));
    assert_eq!(" 1 / 1 ".parse::<Shard>(), Ok(Shard::whole()));
    for bad in ["0/4", "5/4", "1/0", "1", "a/b", "-1/4", "2/4/1", ""] {
        assert!(bad.parse::<Shard>().is_err(), "{bad}");
    }
    assert_eq!(Shard::new(3, 7).expect("valid").to_string(), "3/7");
}

/// Hand-computed: fnv1a64("a") = 0xaf63dc4c8601ec8c is even (shard 1 of 2), is
/// 0 mod 4 (its last byte 0x8c = 140 is; shard 1 of 4) and 1 mod 3 (shard 2 of 3).
#[test]
fn a_known_id_lands_in_its_computed_shard() {
    assert_eq!(Shard::of("a", 2), 1);
    assert_eq!(Shard::of("a", 4), 1);
    assert_eq!(Shard::of("a", 3), 2);
    assert!(Shard::new(2, 3).expect("valid").contains("a"));
    assert!(!Shard::new(1, 3).expect("valid").contains("a"));
}

proptest! {
    /// The n shards of any id set are disjoint and together hold every id once,
    /// and the 1/1 shard holds everything.
    #[test]
    fn shards_are_disjoint_and_cover_all_ids(
        ids in prop::collection::hash_set("[a-zA-Z0-9#_./-]{0,24}", 0..200),
        n in 1u32..12,
    ) {
        let ids: Vec<String> = ids.into_iter().collect();
        let mut seen = std::collections::HashMap::new();
        for i in 1..=n {
            let shard = Shard::new(i, n).expect("valid");
            for id in shard.select(ids.clone(), |s| s.as_str()) {
                prop_assert!(seen.insert(id.clone(), i).is_none(), "{} in two shards", id);
            }
        }
        prop_assert_eq!(seen.len(), ids.len());
        prop_assert_eq!(Shard::whole().select(ids.clone(), |s| s.as_str()).len(), ids.len());
    }
}

/// Every file under `dir`.
fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A whole `index` ends by removing the vectors' old versions. On a local workspace a
/// file no version references (what a killed write leaves) goes too; on object
/// storage it stays: the writer lock does not span machines, and such a file may be
/// another machine's `index --shard`, written and not committed yet.
#[test]
#[cfg(feature = "s3")]
fn index_cleanup_spares_unreferenced_files_on_object_storage() {
    let env = Env::new();
    let docs = common::two_pages(env.dir.path());
    env.ok(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let data = files_under(&env.workspace().join("embeddings"))
        .into_iter()
        .find(|p| p.parent().is_some_and(|d| d.ends_with("data")))
        .and_then(|p| p.parent().map(std::path::Path::to_path_buf))
        .expect("the vectors' data folder");
    let stray = data.join("unreferenced-write.lance");
    std::fs::write(&stray, b"a killed write's bytes").expect("write");
    env.ok(&["index"]);
    assert!(!stray.exists(), "a local unreferenced file is removed");

    let moto = common::moto::Moto::start(env.dir.path(), "vectors");
    let ws = moto.uri("team");
    let on_s3 = |args: &[&str]| {
        let out = std::process::Command::new(common::raglab_bin())
            .env("RAGLAB_CONFIG_DIR", env.dir.path().join("s3-config"))
            .env("RAGLAB_DATA_DIR", env.dir.path().join("s3-data"))
            .env("RAGLAB_MODELS_DIR", common::models_dir())
            .env_remove("RAGLAB_WORKSPACE")
            .envs(moto.env())
            .args(["--workspace", ws.as_str()])
            .args(args)
            .output()
            .expect("spawn raglab");
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    on_s3(&["ingest", docs.to_str().expect("utf8"), "--index"]);
    let key = moto
        .keys("team/embeddings/")
        .into_iter()
        .find(|k| k.contains("/data/"))
        .expect("the vectors' data in the bucket");
    let stray_key = format!(
        "{}/data/unreferenced-write.lance",
        key.split("/data/").next().expect("prefix")
    );
    let (status, _) = common::server::send(
        moto.port,
        "PUT",
        &format!("/{}/{stray_key}", moto.bucket),
        Some("another machine's shard, not committed yet"),
    )
    .expect("put");
    assert_eq!(status, 200);
    on_s3(&["index"]);
    assert!(
        moto.keys("team/embeddings/").contains(&stray_key),
        "an unreferenced file in the bucket is kept"
    );
}
