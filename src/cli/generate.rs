//! `raglab generate`, `raglab judge`, `raglab report answers`: batch generation with
//! provenance, rubric judging, and the answer report. Batches resume where they stopped.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;

use super::args::{GeneratorArgs, PromptArgs, SamplingArgs, ShardArg, TemperatureArgs};
use super::{json_schema, progress_bar};
use crate::core::context_policy::ContextPolicy;
use crate::core::template::TemplateKind;
use crate::service::answer::GenerationConfig;
use crate::service::answer::{AnswerBatch, BatchRequest, JudgeBatch};
use crate::service::base::read_questions;
use crate::service::evaluate::{answer_report, list_answers};
use crate::service::{Context, ModelChoice};

#[derive(Debug, Args)]
pub struct GenerateArgs {
    /// Questions JSONL `{id, text, answer?, relevant?}`.
    #[arg(long)]
    pub questions: PathBuf,
    /// Run name: answers of one run share it; re-running continues the run.
    #[arg(long, default_value = "default")]
    pub run: String,
    /// Chunks in the prompt (default: config `[retrieval] k`, else 15).
    #[arg(long)]
    pub k: Option<usize>,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Answer without any retrieved context (the LLM-only baseline).
    #[arg(long)]
    pub no_retrieval: bool,
    /// Prompt template file, free-form with {context} and {question} (no-retrieval
    /// with {question} alone under `--no-retrieval`); checked before a model loads.
    /// Default: config `[prompts]`, else the shipped text. Answers record its name
    /// (the file's stem) and the SHA-256 of its text.
    #[arg(long = "prompt", value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Which chunks the prompt holds: retrieved (the top k), oracle (the question's
    /// target chunks only) or distractors@P (the targets at position P among the best
    /// retrieved non-targets, k chunks in all).
    #[arg(long, default_value_t, conflicts_with = "no_retrieval")]
    pub context: crate::core::context_policy::ContextPolicy,
    /// Order of the chunks in the prompt: ranked, or reversed (the best chunk last,
    /// next to the question). The token budget drops the worst-placed chunks first.
    #[arg(long, default_value_t, conflicts_with = "no_retrieval")]
    pub order: crate::core::context_policy::ChunkOrder,
    /// Abstain when the best dense cosine is below this (default: config
    /// `retrieval.abstain_below`, else never). Pick it with `raglab eval abstention`.
    #[arg(long, conflicts_with = "no_retrieval")]
    pub abstain_below: Option<f64>,
    /// Answer at most N questions the run has not answered yet (a rerun goes on).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Corpus variant retrieval ranks (F, S or R; `raglab index --variant V`). The
    /// prompt always holds the full chunks.
    #[arg(long, default_value_t = crate::core::variant::Variant::Full)]
    pub variant: crate::core::variant::Variant,
    /// Answer only this shard's questions (the answers of all shards meet in the
    /// workspace's answers dataset; `report answers` is over all of them).
    #[command(flatten)]
    pub shard: ShardArg,
    /// Generate with the local model even when `[[endpoints]]` are configured (naming
    /// a model with `--model` does too).
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    #[command(flatten)]
    pub sampling: SamplingArgs,
    /// Answer every question N times: repeat r samples with seed `--seed` + r, and its
    /// answers record the repeat and the seed (`report answers` shows the pass rates'
    /// spread across repeats). Repeat 0 is the run without repeats.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// A rerank stage between retrieval and the prompt: the context policy chooses
    /// from the kept chunks. Its time is part of each answer's `total_ms`.
    #[command(flatten)]
    pub rerank: super::args::RerankArgs,
}

pub async fn generate(ctx: &Context, args: GenerateArgs) -> Result<()> {
    let qs = args
        .shard
        .select(read_questions(&args.questions)?, |q| q.id.as_str());
    let rerank = args.rerank.setup(ctx)?;
    let config = generation_config(ctx, &args, &qs, rerank.as_ref())?;
    let req = BatchRequest {
        questions: qs,
        config,
        generator: args.generator.choice(),
        embed: args.prompt.ranking.embed(Some(1)),
        reuse_prefix: !args.generator.no_prefix_reuse,
        limit: args.limit,
        local: args.local,
        repeats: args.repeats,
        rerank,
    };
    let batch = AnswerBatch::prepare(ctx, req).await?;
    if let Some(w) = batch
        .missing_targets()
        .warning("their answers are stored with no target rank")
    {
        tell!("{w}");
    }
    let c = batch.config().clone();
    tell!(
        "run `{}`: {} answers to give ({} already done{}) with {} [{}]",
        c.run,
        batch.work().todo(),
        batch.work().already_done(),
        repeats_said(&c, args.repeats),
        batch.work().model(),
        setup_said(&c)
    );
    let bar = progress_bar("generating");
    bar.set_length(batch.work().todo() as u64);
    let done = batch
        .run(ctx, &|n, _, tokens| {
            bar.set_position(n as u64);
            bar.set_message(format!("{tokens} tokens"));
        })
        .await;
    bar.finish_and_clear();
    let done = done?;
    tell!("done: {} tokens generated", done.tokens);
    if let Some(p) = &done.pool {
        tell!(
            "answers per endpoint: {:?}; {} request(s) retried",
            p.served,
            p.retries
        );
    }
    if let Some(t) = c.abstain_below {
        tell!(
            "abstained on {} question(s) (best cosine below {t})",
            done.abstained
        );
    }
    Ok(())
}

/// The run's configuration from the flags and the config, refusing the combinations
/// that cannot work (a rerank stage or `--ann` without retrieval to act on, an oracle
/// context for a question without targets) before anything loads.
fn generation_config(
    ctx: &Context,
    args: &GenerateArgs,
    qs: &[crate::core::question::Question],
    rerank: Option<&crate::service::retrieval::rerank::RerankSetup>,
) -> Result<GenerationConfig> {
    let kind = if args.no_retrieval {
        TemplateKind::NoRetrieval
    } else {
        TemplateKind::FreeForm
    };
    let template = ctx.template(kind, args.template.as_deref())?;
    if rerank.is_some() && args.no_retrieval {
        bail!("--rerank reranks retrieved chunks: it has nothing to do with --no-retrieval");
    }
    if matches!(
        args.context,
        ContextPolicy::Oracle | ContextPolicy::Distractors(_)
    ) && let Some(q) = qs.iter().find(|q| q.relevant.is_empty())
    {
        bail!(
            "--context {} needs every question's target chunks (`relevant`), and question `{}` has none",
            args.context,
            q.id
        );
    }
    if args.prompt.ranking.ann {
        bail!("--ann is not supported by generate: it retrieves with the exact dense scan");
    }
    let method = args.prompt.method.get(ctx);
    Ok(GenerationConfig {
        run: args.run.clone(),
        template,
        context: args.context,
        order: args.order,
        ranking: crate::core::retrieval::RunConfig::new(
            method,
            args.prompt.sparse,
            args.prompt.ranking.alpha_for(ctx, method),
        ),
        k: ctx.k(args.k),
        context_budget: args.prompt.context_budget,
        no_retrieval: args.no_retrieval,
        sampling: args.sampling.sampling(),
        abstain_below: args.abstain_below,
        variant: args.variant,
        repeat: None,
        rerank: rerank.map(|s| s.describe()),
    })
}

/// `; N repeats, seeds A-B` when the run repeats, else nothing.
fn repeats_said(c: &GenerationConfig, repeats: u32) -> String {
    if repeats > 1 {
        format!(
            "; {} repeats, seeds {}-{}",
            repeats,
            c.sampling.seed,
            c.sampling.seed.wrapping_add(repeats - 1)
        )
    } else {
        String::new()
    }
}

/// The run's retrieval and prompt in a few words.
fn setup_said(c: &GenerationConfig) -> String {
    if c.no_retrieval {
        format!("no retrieval, prompt {}", c.template().label())
    } else {
        // The weight only where the method fuses (a BM25 run has none to show).
        let alpha = if c.ranking.method.uses_alpha() {
            format!(" a={}", c.ranking.alpha)
        } else {
            String::new()
        };
        format!(
            "{}{alpha} k={}, context {} {}, prompt {}",
            c.ranking.method,
            c.k,
            c.context,
            c.order,
            c.template().label()
        )
    }
}

#[derive(Debug, Args)]
pub struct JudgeArgs {
    /// Only answers of this run (default: every run).
    #[arg(long)]
    pub answers: Option<String>,
    /// The judge's prompt template ({criteria}, {question} and {answer} required;
    /// {examples}, {reference} and {chunk} allowed; default: config `[prompts]
    /// judge`, else the shipped text). Judgements made with any other text than the
    /// shipped one are stored under the judge's name + `prompt-NAME@HASH12`.
    #[arg(long, value_name = "FILE")]
    pub prompt: Option<PathBuf>,
    /// GGUF judge model (default: config `models.judge`, else the generator).
    #[arg(long)]
    pub judge_model: Option<PathBuf>,
    /// Judge at most N answers not yet judged by this judge (a rerun goes on).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Judge only this shard's answers (by answer id).
    #[command(flatten)]
    pub shard: ShardArg,
    /// Threads of a local judge model (default: all cores).
    #[arg(long)]
    pub threads: Option<i32>,
    /// Judge with the local model even when `[[endpoints]]` are configured.
    #[arg(long)]
    pub local: bool,
    /// Judge every answer N times: repeat r samples with seed 7 + r, and its judgements
    /// record the repeat, seed and temperature (`report answers` shows the judge's
    /// self-consistency, Cohen's kappa between repeats). Repeat 0 is the judging
    /// without repeats.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub repeats: u32,
    /// The judge's sampling temperature (0: greedy; greedy repeats on one back end give
    /// the same labels, so `--repeats` measures self-consistency only above 0).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
}

pub async fn run_judge(ctx: &Context, args: JudgeArgs) -> Result<()> {
    // The study's rubric where its lead pinned one (a differing `--rubric` refused,
    // each difference named), before anything loads.
    let rubric = crate::service::study::study_rubric(ctx).await?;
    // Checked before the judge loads: a bad slot is one clear error, not a model load.
    let template = ctx.template(
        crate::core::template::TemplateKind::Judge,
        args.prompt.as_deref(),
    )?;
    let model = ModelChoice {
        model: args.judge_model,
        threads: args.threads,
    };
    let batch = JudgeBatch::prepare(
        ctx,
        rubric,
        args.answers.as_deref(),
        &model,
        args.limit,
        args.shard.shard,
        args.local,
        crate::service::answer::JudgeRepeats {
            repeats: args.repeats,
            temperature: args.temperature,
        },
        crate::service::answer::JudgeScope {
            template: Some(template),
            ..Default::default()
        },
    )
    .await?;
    if let Some(w) = batch
        .missing_targets()
        .warning("answers with no target chunk left are not judged")
    {
        tell!("{w}");
    }
    tell!(
        "judging {} answers with {} (rubric {} v{})",
        batch.todo(),
        batch.model(),
        batch.rubric().name,
        batch.rubric().version
    );
    let bar = progress_bar("judging");
    let done = batch.run(ctx, &super::on_progress(&bar)).await;
    bar.finish_and_clear();
    done.map(|_| ())
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    /// RAG run to report (default: every run).
    #[arg(long)]
    pub run: Option<String>,
    /// No-retrieval run: score the frugality of every other run of the same model
    /// against it, over the questions both answered and the judge labelled.
    #[arg(long)]
    pub baseline: Option<String>,
    #[command(flatten)]
    pub temperatures: TemperatureArgs,
    /// Print the stored answer records (every field) instead of the summary.
    #[arg(long)]
    pub list: bool,
    /// Compare two answer runs criterion by criterion: pass rates over the questions
    /// both answered and the judge labelled, McNemar's exact test (Holm over the
    /// criteria), wins / ties / losses.
    #[arg(long, num_args = 2, value_names = ["RUN_A", "RUN_B"], conflicts_with_all = ["baseline", "list", "run"])]
    pub compare: Vec<String>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

/// `raglab report answers` for `viewer`: the judge's labels of study items not yet
/// revealed to the viewer do not count in the pass rates.
pub async fn report(
    ctx: &Context,
    args: ReportArgs,
    viewer: &crate::service::study::Viewer,
) -> Result<()> {
    if args.list {
        return json_schema::print_list(
            json_schema::ANSWERS_LIST,
            &list_answers(ctx, args.run.as_deref()).await?,
        );
    }
    let sight = crate::service::study::sight(ctx, viewer).await?;
    if let [a, b] = args.compare.as_slice() {
        let cmp = crate::service::evaluate::compare_answer_runs(ctx, a, b, &sight).await?;
        return json_schema::print(json_schema::ANSWERS_COMPARE, &cmp);
    }
    let value = answer_report(
        ctx,
        args.run.as_deref(),
        args.baseline.as_deref(),
        args.temperatures.get(),
        &sight,
    )
    .await?;
    // The report is a JSON document in both modes; `--json` is accepted for symmetry.
    json_schema::print(json_schema::ANSWERS_REPORT, &value)
}
