//! The converted MiniLM GGUF, run by llama.cpp, must reproduce embeddings computed
//! independently from the original safetensors weights (scripts/minilm_reference.py:
//! float64 numpy forward pass, HuggingFace tokenizer). A silently wrong conversion
//! (tokens, tensor names, pooling, normalisation) fails here.

use crate::common;

use raglab::config::DEFAULT_EMBED_MODEL;
use raglab::infer::embed::{DEFAULT_BATCH_SEQS, DEFAULT_BATCH_TOKENS, EmbedConfig, Embedder};

#[test]
fn minilm_gguf_matches_the_numpy_reference() {
    let model = common::model(DEFAULT_EMBED_MODEL);
    let reference_path = model.with_file_name("all-MiniLM-L6-v2.reference.json");
    let reference: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&reference_path).expect("reference vectors"))
            .expect("json");
    let cfg = EmbedConfig::new(&model);
    let embedder = Embedder::spawn(&cfg).expect("load embedder");
    assert_eq!(embedder.info.dim, 384);
    let sentences = reference["sentences"].as_array().expect("sentences");
    assert!(sentences.len() >= 8);
    let texts: Vec<String> = sentences
        .iter()
        .map(|s| s["text"].as_str().expect("text").to_string())
        .collect();
    let ours = embedder.embed(texts.clone()).expect("embed");
    let mut worst: f64 = 1.0;
    for (i, s) in sentences.iter().enumerate() {
        let want_ids: Vec<i32> = s["token_ids"]
            .as_array()
            .expect("ids")
            .iter()
            .map(|x| x.as_i64().expect("id") as i32)
            .collect();
        assert_eq!(
            embedder.tokens(&texts[i]).expect("tokens"),
            want_ids,
            "token ids differ for {:?}",
            texts[i]
        );
        let want: Vec<f64> = s["embedding"]
            .as_array()
            .expect("vec")
            .iter()
            .map(|x| x.as_f64().expect("f"))
            .collect();
        let got = &ours[i];
        assert_eq!(got.len(), want.len());
        let dot: f64 = got.iter().zip(&want).map(|(a, b)| f64::from(*a) * b).sum();
        let norm: f64 = got
            .iter()
            .map(|a| f64::from(*a).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!((norm - 1.0).abs() < 1e-4, "not normalised: {norm}");
        let cos = dot / norm;
        worst = worst.min(cos);
        assert!(cos > 0.99, "cosine {cos} for {:?}", texts[i]);
    }
    eprintln!("worst cosine vs numpy reference: {worst:.6}");
    // A mismatched pair must score clearly lower, so the check can fail.
    let a: Vec<f64> = sentences[0]["embedding"]
        .as_array()
        .expect("v")
        .iter()
        .map(|x| x.as_f64().expect("f"))
        .collect();
    let cross: f64 = ours[1].iter().zip(&a).map(|(x, y)| f64::from(*x) * y).sum();
    assert!(cross < 0.9, "different sentences look identical: {cross}");
}

#[test]
fn over_long_input_is_truncated_not_fatal() {
    let model = common::model(DEFAULT_EMBED_MODEL);
    let mut cfg = EmbedConfig::new(&model);
    cfg.threads = 1;
    let embedder = Embedder::spawn(&cfg).expect("load embedder");
    let long = "vaccination schedule ".repeat(2000);
    let ids = embedder.tokens(&long).expect("tokens");
    assert_eq!(ids.len(), 256);
    assert_eq!(ids[0], 101, "[CLS] kept");
    assert_eq!(ids[255], 102, "[SEP] kept at the end");
    let v = embedder.embed(vec![long]).expect("embed long input");
    assert_eq!(v[0].len(), 384);
}

#[test]
fn missing_model_is_a_clear_error() {
    let err = Embedder::spawn(&EmbedConfig::new("/nonexistent/model.gguf"))
        .err()
        .expect("must fail");
    assert!(err.to_string().contains("does not exist"), "{err}");
    let dir = tempfile::tempdir().expect("tmp");
    let bad = dir.path().join("bad.gguf");
    std::fs::write(&bad, b"not a model").expect("write");
    let err = Embedder::spawn(&EmbedConfig::new(&bad))
        .err()
        .expect("must fail");
    assert!(err.to_string().contains("not a GGUF"), "{err}");
}

/// Cosine of two L2-normalised vectors, in f64.
fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

/// Packing several sequences into one encode call must give each text the vector it
/// gets alone. Same weights, same ops: only the summation order inside the larger
/// matrix products and the (exactly zero) masked attention between sequences differ,
/// so the vectors agree to float rounding (measured: cosine 1 - 1e-7 or closer).
/// 0.99999 leaves room for rounding while a vector read from the wrong sequence id
/// (another text) scores below 0.99 here, which the last assertion checks.
#[test]
fn packed_sequences_embed_like_one_at_a_time() {
    let model = common::model(DEFAULT_EMBED_MODEL);
    // Real texts of mixed lengths, in an order that is not sorted by length: sample
    // chunks from a few words to past the 256-token cut, and short questions.
    let mut chunks = common::sample_chunks();
    chunks.sort_by_key(|c| c.indexed_text().len());
    let step = (chunks.len() / 40).max(1);
    let mut texts: Vec<String> = chunks
        .iter()
        .step_by(step)
        .map(|c| c.indexed_text())
        .collect();
    texts.extend(
        common::sample_questions()
            .iter()
            .take(12)
            .map(|q| q["text"].as_str().expect("text").to_string()),
    );
    let n = texts.len();
    texts.rotate_left(n / 3);
    let alone = {
        let mut cfg = EmbedConfig::new(&model);
        cfg.threads = 1;
        cfg.batch_seqs = Some(1);
        Embedder::spawn(&cfg).expect("load embedder")
    };
    let lens: Vec<usize> = texts
        .iter()
        .map(|t| alone.tokens(t).expect("tokens").len())
        .collect();
    assert!(
        lens.iter().min() < Some(&20) && lens.iter().max() == Some(&256),
        "lengths must be mixed: {lens:?}"
    );
    let want = alone.embed(texts.clone()).expect("embed alone");
    let mut worst = 1.0f64;
    // The packing used at 2+ threads, and a wide one (many sequences, long calls).
    // One thread: packing is set explicitly, and the test is not slowed by workers
    // spinning beside other tests.
    for (seqs, tokens) in [(DEFAULT_BATCH_SEQS, DEFAULT_BATCH_TOKENS), (64, 2048)] {
        let mut cfg = EmbedConfig::new(&model);
        cfg.threads = 1;
        (cfg.batch_seqs, cfg.batch_tokens) = (Some(seqs), tokens);
        let packed = Embedder::spawn(&cfg).expect("load embedder");
        let got = packed.embed(texts.clone()).expect("embed packed");
        assert_eq!(got.len(), n);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            let c = cosine(g, w);
            worst = worst.min(c);
            assert!(
                c >= 0.99999,
                "text {i} ({} tokens), packing {seqs}/{tokens}: cosine {c}",
                lens[i]
            );
        }
    }
    eprintln!("worst cosine, packed vs alone, over {n} texts: {worst:.9}");
    // Neighbours in length order are the texts a wrong sequence id would swap in.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| lens[i]);
    let closest = order
        .windows(2)
        .map(|w| cosine(&want[w[0]], &want[w[1]]))
        .fold(f64::MIN, f64::max);
    assert!(closest < 0.99, "two texts embed alike: {closest}");
}

/// A GGUF file cut short (a download that stopped): the error says why in llama.cpp's
/// own words, the log file keeps llama.cpp's errors, and its default filter leaves out
/// llama.cpp's info lines (hundreds per load), which `RAGLAB_LOG=info` lets through.
#[test]
fn a_truncated_model_fails_with_llama_cpps_reason_and_the_log_keeps_only_its_errors() {
    let env = crate::common::Env::new();
    env.ok(&[
        "ingest",
        crate::common::sample_guidance().to_str().expect("utf8"),
    ]);
    let model = crate::common::model(raglab::config::DEFAULT_EMBED_MODEL);
    let whole = std::fs::read(&model).expect("read the model");
    let cut = env.dir.path().join("cut.gguf");
    std::fs::write(&cut, &whole[..100_000]).expect("write");
    let search = |model: &std::path::Path, log: Option<&str>| {
        let mut cmd = env.cmd();
        match log {
            Some(filter) => cmd.env("RAGLAB_LOG", filter),
            None => cmd.env_remove("RAGLAB_LOG"),
        };
        let model = model.to_str().expect("utf8");
        let out = cmd
            .args(["search", "--embed-model", model, "flu"])
            .output()
            .expect("spawn raglab");
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let log_file = env.dir.path().join("data/logs/raglab.log");
    let llama_lines = |level: &str| {
        std::fs::read_to_string(&log_file)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(level) && l.contains("llama-cpp-2:"))
            .count()
    };

    let (ok, stderr) = search(&cut, None);
    assert!(!ok, "a cut model must not load");
    let error = stderr
        .lines()
        .find(|l| l.contains("cannot load model"))
        .unwrap_or_else(|| panic!("no load error: {stderr}"));
    assert!(
        error.contains("llama.cpp said:") && error.contains("failed to read key-value pairs"),
        "the error quotes llama.cpp: {error}"
    );
    assert!(llama_lines(" ERROR ") >= 1, "llama.cpp's errors are logged");
    // A whole model loads (whatever the search then says) with info lines left out...
    search(&model, None);
    assert_eq!(
        llama_lines(" INFO "),
        0,
        "no llama.cpp info lines by default"
    );
    // ... unless asked for.
    search(&model, Some("info"));
    assert!(
        llama_lines(" INFO ") >= 1,
        "RAGLAB_LOG=info lets llama.cpp's info lines through"
    );
}
