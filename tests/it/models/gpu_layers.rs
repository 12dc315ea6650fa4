//! Layers offloaded: the flag wins over the config, the config over the build's
//! default (every layer in a CUDA build, none in a CPU build), and `bench generate`
//! reports where the model ran. SmolLM2-135M has 30 transformer blocks (its
//! `config.json`: num_hidden_layers = 30), which llama.cpp counts as 31 offloadable
//! layers with the output layer. Prompt tokens/s measured by raglab's wall clock (which
//! waits for the device) can never beat llama.cpp's own decode-time counter.

use crate::common;

use raglab::infer::generate::{GenConfig, Generator};

fn bench(env: &common::Env, q: &str, flag: Option<&str>) -> serde_json::Value {
    let mut args = Vec::new();
    if let Some(n) = flag {
        args.extend(["--gpu-layers", n]);
    }
    args.extend([
        "bench",
        "generate",
        "--questions",
        q,
        "--k",
        "1",
        "--max-tokens",
        "8",
        "--repeat",
        "2",
        "--threads",
        "1",
        "--json",
    ]);
    env.json(&args)
}

#[test]
fn gpu_layers_resolve_flag_then_config_then_default_and_bench_reports_the_device() {
    let env = common::Env::new();
    common::sample_indexed(&env);
    let q = common::repo().join("sample-data/questions.jsonl");
    let q = q.to_str().expect("utf8");
    let default = if cfg!(feature = "cuda") { 999 } else { 0 };

    let out = bench(&env, q, None);
    assert_eq!(out["gpu_layers_requested"], default, "{out}");
    assert_eq!(out["layers_total"], 31, "{out}");
    if !cfg!(feature = "cuda") {
        assert_eq!(out["device"], "CPU");
        assert_eq!(out["layers_offloaded"], 0);
    }
    let raglab = out["raglab_prompt_tokens_per_s"].as_f64().expect("rate");
    let llama = out["llama_prompt_tokens_per_s"].as_f64().expect("rate");
    assert!(
        raglab > 0.0 && raglab <= llama * 1.02,
        "raglab {raglab} vs llama.cpp {llama}"
    );

    let config = env.dir.path().join("config");
    std::fs::create_dir_all(&config).expect("mkdir");
    std::fs::write(config.join("config.toml"), "[models]\ngpu_layers = 7\n").expect("config");
    assert_eq!(bench(&env, q, None)["gpu_layers_requested"], 7);
    let out = bench(&env, q, Some("999"));
    assert_eq!(
        out["gpu_layers_requested"], 999,
        "the flag wins over the config"
    );
    if !cfg!(feature = "cuda") {
        assert_eq!(out["device"], "CPU", "a CPU build offloads nothing: {out}");
        assert_eq!(out["layers_offloaded"], 0);
    }
}

#[test]
fn the_generator_reports_its_placement() {
    let mut cfg = GenConfig::new(common::model(raglab::config::DEFAULT_GEN_MODEL));
    cfg.threads = 1;
    cfg.n_gpu_layers = 999;
    let g = Generator::spawn(&cfg).expect("load");
    let p = &g.info.placement;
    assert_eq!(p.layers_total, 31);
    if cfg!(feature = "cuda") {
        assert!(p.device == "CPU" || p.layers_offloaded == 31, "{p:?}");
    } else {
        assert_eq!(p.describe(), "CPU · layers offloaded 0/31");
    }
}
