//! `raglab generate`, `raglab judge`, `raglab report answers`: batch generation with
//! provenance, rubric judging, and the answer report. Batches resume where they stopped.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context as _, Result, bail};
use clap::Args;

use super::{Context, print_json};
use crate::core::frugality::{frugality, std_dev};
use crate::core::retrieval::Method;
use crate::infer::generate::{GenConfig, Generator, Sampling};
use crate::service::generation::{
    AnswerRecord, Answerer, JudgementRecord, QuestionRecord, RunConfig, answers, default_template,
    existing_answer_ids, file_sha256, judge, judgements,
};
use crate::service::retrieval::{Retriever, embed_config};
use crate::service::rubric::load_rubric;

#[derive(Debug, Args)]
pub struct SamplingArgs {
    #[arg(long, default_value_t = 0.7)]
    pub temperature: f32,
    #[arg(long, default_value_t = 40)]
    pub top_k: i32,
    #[arg(long, default_value_t = 0.95)]
    pub top_p: f32,
    #[arg(long, default_value_t = 0.05)]
    pub min_p: f32,
    #[arg(long, default_value_t = 1.1)]
    pub repeat_penalty: f32,
    #[arg(long, default_value_t = 42)]
    pub seed: u32,
    #[arg(long, default_value_t = 256)]
    pub max_tokens: usize,
}

impl SamplingArgs {
    pub fn sampling(&self) -> Sampling {
        Sampling {
            temperature: self.temperature,
            top_k: self.top_k,
            top_p: self.top_p,
            min_p: self.min_p,
            repeat_penalty: self.repeat_penalty,
            repeat_last_n: 64,
            seed: self.seed,
            max_tokens: self.max_tokens,
        }
    }
}

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Questions JSONL `{id, text, answer?, relevant?}`.
    #[arg(long)]
    pub questions: PathBuf,
    /// Run name: answers of one run share it; re-running continues the run.
    #[arg(long, default_value = "default")]
    pub run: String,
    #[arg(long, default_value_t = 15)]
    pub k: usize,
    #[arg(long, default_value = "hybrid")]
    pub method: Method,
    #[arg(long, default_value_t = 0.7)]
    pub alpha: f64,
    /// Context budget in generator tokens.
    #[arg(long, default_value_t = crate::core::prompt::DEFAULT_CONTEXT_BUDGET)]
    pub context_budget: usize,
    /// Answer without any retrieved context (the LLM-only baseline).
    #[arg(long)]
    pub no_retrieval: bool,
    /// Abstain when the best dense cosine is below this (default: config
    /// `retrieval.abstain_below`, else never). Pick it with `raglab eval abstention`.
    #[arg(long, conflicts_with = "no_retrieval")]
    pub abstain_below: Option<f64>,
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
}

/// Which generator to load and how (shared by the commands that generate).
#[derive(Debug, Args)]
pub struct GeneratorArgs {
    /// GGUF generator (default: config, else SmolLM2 from setup).
    #[arg(long)]
    pub model: Option<PathBuf>,
    #[arg(long)]
    pub threads: Option<i32>,
    /// Layers offloaded to the GPU (builds with `--features cuda`).
    #[arg(long, default_value_t = 0)]
    pub n_gpu_layers: u32,
    /// Decode every prompt whole instead of reusing the KV cache of a prefix shared
    /// with the previous prompt (for timing comparisons).
    #[arg(long)]
    pub no_prefix_reuse: bool,
}

impl GeneratorArgs {
    pub fn config(&self, ctx: &Context) -> GenConfig {
        let mut cfg = gen_config(ctx, self.model.clone(), self.threads, self.n_gpu_layers);
        cfg.reuse_prefix = !self.no_prefix_reuse;
        cfg
    }
}

pub fn read_questions(path: &std::path::Path) -> Result<Vec<QuestionRecord>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: not a question record", path.display(), i + 1))
        })
        .collect()
}

pub fn gen_config(
    ctx: &Context,
    model: Option<PathBuf>,
    threads: Option<i32>,
    n_gpu_layers: u32,
) -> GenConfig {
    let mut cfg = GenConfig::new(model.unwrap_or_else(|| ctx.config.gen_model(&ctx.paths)));
    if let Some(t) = threads {
        cfg.threads = t;
    }
    cfg.n_gpu_layers = n_gpu_layers;
    cfg
}

pub async fn generate(ctx: &Context, args: GenerateArgs) -> Result<()> {
    let questions = read_questions(&args.questions)?;
    let gcfg = args.generator.config(ctx);
    let generator = Generator::spawn(&gcfg)?;
    if !generator.info.has_chat_template {
        bail!(
            "{} has no chat template; choose an instruction-tuned GGUF",
            gcfg.model.display()
        );
    }
    let sha = file_sha256(&gcfg.model)?;
    let retriever = if args.no_retrieval {
        None
    } else {
        let r = Retriever::open(&ctx.workspace, Some(&embed_config(ctx, None, Some(1)))).await?;
        if !r.is_fresh() {
            bail!("the indexes are out of date with the chunks: run `raglab index` first");
        }
        Some(r)
    };
    let config = RunConfig {
        run: args.run.clone(),
        method: args.method,
        alpha: args.alpha,
        k: args.k,
        context_budget: args.context_budget,
        no_retrieval: args.no_retrieval,
        sampling: args.sampling.sampling(),
        abstain_below: if args.no_retrieval {
            None
        } else {
            args.abstain_below.or(ctx.config.retrieval.abstain_below)
        },
    };
    let answerer = Answerer {
        retriever: retriever.as_ref(),
        generator: &generator,
        model_sha256: sha,
        config: &config,
        template: default_template(),
    };
    let done = existing_answer_ids(&ctx.workspace).await?;
    let todo: Vec<&QuestionRecord> = questions
        .iter()
        .filter(|q| {
            !done.contains(&format!(
                "{}/{}/s{}",
                config.run, q.id, config.sampling.seed
            ))
        })
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    let skipped = questions.len().min(args.limit.unwrap_or(usize::MAX))
        - todo.len().min(args.limit.unwrap_or(usize::MAX));
    eprintln!(
        "run `{}`: {} questions to answer ({} already done) with {} [{}]",
        config.run,
        todo.len(),
        skipped,
        generator.info.file,
        if config.no_retrieval {
            "no retrieval".to_string()
        } else {
            format!("{} a={} k={}", config.method, config.alpha, config.k)
        }
    );
    let bar = super::index::progress_bar("generating");
    bar.set_length(todo.len() as u64);
    let mut tokens = 0usize;
    let mut abstained = 0usize;
    for q in todo {
        let prepared = answerer.prepare(q)?;
        let rec = answerer.answer(q, prepared, Arc::new(AtomicBool::new(false)), |_| {})?;
        tokens += rec.output_tokens as usize;
        abstained += usize::from(rec.abstained == Some(true));
        // Each answer is committed before the next starts: an interrupted batch resumes.
        answers(&ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        bar.inc(1);
        bar.set_message(format!("{tokens} tokens"));
    }
    bar.finish_and_clear();
    eprintln!("done: {tokens} tokens generated");
    if let Some(t) = config.abstain_below {
        eprintln!("abstained on {abstained} question(s) (best cosine below {t})");
    }
    Ok(())
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// Only answers of this run (default: every run).
    #[arg(long)]
    pub answers: Option<String>,
    /// GGUF judge model (default: config `models.judge`, else the generator).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Rubric TOML (default: assets/rubrics/pubhealthbench.toml).
    #[arg(long)]
    pub rubric: Option<PathBuf>,
    #[arg(long)]
    pub limit: Option<usize>,
    #[arg(long)]
    pub threads: Option<i32>,
}

pub async fn run_judge(ctx: &Context, args: JudgeArgs) -> Result<()> {
    let rubric = load_rubric(args.rubric.as_deref())?;
    let model = args
        .judge_model
        .clone()
        .or_else(|| ctx.config.models.judge.clone())
        .unwrap_or_else(|| ctx.config.gen_model(&ctx.paths));
    let generator = Generator::spawn(&gen_config(ctx, Some(model), args.threads, 0))?;
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    let judged: HashSet<(String, String)> = judgements(&ctx.workspace)
        .read_all::<JudgementRecord>()
        .await?
        .into_iter()
        .map(|j| (j.answer_id, j.judge_model))
        .collect();
    let chunks = crate::store::chunks::ChunkStore::new(&ctx.workspace)
        .load_all()
        .await?;
    let text_of: HashMap<&str, &str> = chunks
        .iter()
        .map(|c| (c.id.as_str(), c.text.as_str()))
        .collect();
    let todo: Vec<&AnswerRecord> = all
        .iter()
        .filter(|a| args.answers.as_ref().is_none_or(|r| &a.run == r))
        .filter(|a| !judged.contains(&(a.answer_id.clone(), generator.info.file.clone())))
        .take(args.limit.unwrap_or(usize::MAX))
        .collect();
    eprintln!(
        "judging {} answers with {} (rubric {} v{})",
        todo.len(),
        generator.info.file,
        rubric.name,
        rubric.version
    );
    let bar = super::index::progress_bar("judging");
    bar.set_length(todo.len() as u64);
    for a in todo {
        let target = a
            .target_ids
            .iter()
            .filter_map(|t| text_of.get(t.as_str()))
            .copied()
            .collect::<Vec<_>>()
            .join("\n\n");
        let (rec, _) = judge(&generator, &rubric, a, &target, 0.0, 7)?;
        judgements(&ctx.workspace)
            .append(std::slice::from_ref(&rec))
            .await?;
        bar.inc(1);
    }
    bar.finish_and_clear();
    Ok(())
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// RAG run to report (default: every run).
    #[arg(long)]
    pub run: Option<String>,
    /// No-retrieval run for the frugality score.
    #[arg(long)]
    pub baseline: Option<String>,
    /// Print the stored answer records (every field) instead of the summary.
    #[arg(long)]
    pub list: bool,
    #[arg(long)]
    pub json: bool,
}

/// Target-rank buckets of SPEC §5.
pub fn rank_bucket(rank: Option<u32>) -> &'static str {
    match rank {
        Some(1) => "1",
        Some(2..=4) => "2-4",
        Some(5..=7) => "5-7",
        Some(8..=15) => "8-15",
        Some(_) => ">15",
        None => "not retrieved",
    }
}

pub async fn report(ctx: &Context, args: ReportArgs) -> Result<()> {
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    if all.is_empty() {
        bail!("no answers yet: run `raglab generate --questions FILE` first");
    }
    if args.list {
        let rows: Vec<&AnswerRecord> = all
            .iter()
            .filter(|a| args.run.as_ref().is_none_or(|r| &a.run == r))
            .collect();
        return print_json(&rows);
    }
    let judg: Vec<JudgementRecord> = judgements(&ctx.workspace).read_all().await?;
    let by_answer: HashMap<&str, Vec<&JudgementRecord>> =
        judg.iter().fold(HashMap::new(), |mut m, j| {
            m.entry(j.answer_id.as_str())
                .or_insert_with(Vec::new)
                .push(j);
            m
        });
    let mut runs: BTreeMap<&str, Vec<&AnswerRecord>> = BTreeMap::new();
    for a in &all {
        if args.run.as_ref().is_none_or(|r| &a.run == r)
            || args.baseline.as_ref().is_some_and(|b| &a.run == b)
        {
            runs.entry(a.run.as_str()).or_default().push(a);
        }
    }
    let mut out = serde_json::Map::new();
    for (run, answers) in &runs {
        let n = answers.len() as f64;
        let mean = |f: &dyn Fn(&AnswerRecord) -> f64| answers.iter().map(|a| f(a)).sum::<f64>() / n;
        // criterion -> bucket -> (pass, total); judge model names collected
        let mut pass: BTreeMap<String, BTreeMap<&str, (usize, usize)>> = BTreeMap::new();
        let mut judges: HashSet<&str> = HashSet::new();
        for a in answers {
            for j in by_answer.get(a.answer_id.as_str()).into_iter().flatten() {
                judges.insert(&j.judge_model);
                for (c, l) in j.criteria.iter().zip(&j.labels) {
                    for b in ["overall", rank_bucket(a.target_rank)] {
                        let e = pass.entry(c.clone()).or_default().entry(b).or_default();
                        e.1 += 1;
                        e.0 += usize::from(l == "pass");
                    }
                }
            }
        }
        let summary = serde_json::json!({
            "answers": answers.len(),
            "model": answers[0].model_file,
            "no_retrieval": answers[0].no_retrieval,
            "mean_total_ms": mean(&|a| a.total_ms),
            "mean_ttft_ms": mean(&|a| a.ttft_ms),
            "mean_prompt_tokens": mean(&|a| f64::from(a.prompt_tokens)),
            "mean_output_tokens": mean(&|a| f64::from(a.output_tokens)),
            "mean_input_words": mean(&|a| f64::from(a.input_words)),
            "mean_prompt_tokens_per_s": mean(&|a| a.prompt_tokens_per_s),
            "mean_gen_tokens_per_s": mean(&|a| a.gen_tokens_per_s),
            "stopped": answers.iter().filter(|a| a.stopped).count(),
            "judge_models": judges.iter().collect::<Vec<_>>(),
            "pass_rates": pass.iter().map(|(c, b)| {
                let buckets: serde_json::Map<String, serde_json::Value> = b
                    .iter()
                    .map(|(k, (p, t))| (k.to_string(), serde_json::json!({"pass": p, "total": t, "rate": *p as f64 / *t as f64})))
                    .collect();
                (c.clone(), serde_json::Value::Object(buckets))
            }).collect::<serde_json::Map<String, serde_json::Value>>(),
        });
        out.insert((*run).to_string(), summary);
    }
    // Frugality of the RAG run against the no-retrieval baseline (SPEC §7): accuracy is
    // the mean pass rate over criteria; latency the mean total time in seconds.
    if let (Some(rag), Some(base)) = (&args.run, &args.baseline) {
        let acc = |run: &str| -> Option<f64> {
            let rates = out.get(run)?.get("pass_rates")?.as_object()?;
            let v: Vec<f64> = rates
                .values()
                .filter_map(|b| b.get("overall")?.get("rate")?.as_f64())
                .collect();
            (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
        };
        let lat = |run: &str| {
            out.get(run)?
                .get("mean_total_ms")?
                .as_f64()
                .map(|ms| ms / 1e3)
        };
        if let (Some(a1), Some(a0), Some(c1), Some(c0)) = (acc(rag), acc(base), lat(rag), lat(base))
        {
            // One comparison: the temperatures default to the per-answer spread.
            let per = |run: &str| {
                runs.get(run)
                    .map(|v| v.iter().map(|a| a.total_ms / 1e3).collect::<Vec<_>>())
                    .unwrap_or_default()
            };
            let t_c = std_dev(&per(rag)).unwrap_or(1.0).max(1e-9);
            let f = frugality(a1 - a0, c1 - c0, 0.1, t_c);
            out.insert("frugality".into(), serde_json::json!({"rag": rag, "baseline": base, "d_accuracy": a1 - a0, "d_latency_s": c1 - c0, "t_accuracy": 0.1, "t_latency_s": t_c, "score": f}));
        }
    }
    let value = serde_json::Value::Object(out);
    if args.json {
        return print_json(&value);
    }
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(())
}
