//! `raglab summarise`: an LLM summary of every chunk (for the corpus variants C_S and
//! C_R), resumable, with progress on stderr.

use std::io::IsTerminal;

use anyhow::Result;
use clap::Args;

use super::args::{GeneratorArgs, ShardArg};
use super::{json_schema, progress_bar};
use crate::core::sampling::Sampling;
use crate::core::template::TemplateKind;
use crate::service::Context;
use crate::service::corpus::{SummaryBatch, SummaryRequest};

#[derive(Debug, Args)]
pub struct SummariseArgs {
    /// Summarise at most this many chunks in this run.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Only chunks over this many tokens (`--over 512`: what C_R replaces); needs the
    /// token counts `raglab index` takes.
    #[arg(long)]
    pub over: Option<usize>,
    /// Summarise with the local model even when `[[endpoints]]` are configured (naming
    /// a model with `--model` does too).
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    #[command(flatten)]
    pub shard: ShardArg,
    /// Output tokens per summary.
    #[arg(long, default_value_t = 96)]
    pub max_tokens: usize,
    /// 0 is greedy (reproducible).
    #[arg(long, default_value_t = 0.0)]
    pub temperature: f32,
    /// Penalty on tokens already generated (1: none).
    #[arg(long, default_value_t = 1.1)]
    pub repeat_penalty: f32,
    /// Sampler seed (used when the temperature is above 0).
    #[arg(long, default_value_t = 42)]
    pub seed: u32,
    /// The summary prompt template (slots `{chunk}` and `{path}`; default: config
    /// `[prompts] summary`, else the shipped one). A chunk summarised with another
    /// template's text is summarised again.
    #[arg(long = "prompt", value_name = "FILE")]
    pub template: Option<std::path::PathBuf>,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

pub async fn run(ctx: &Context, args: SummariseArgs) -> Result<()> {
    // The template is read and its slots checked before any model loads.
    let template = ctx.template(TemplateKind::Summary, args.template.as_deref())?;
    let req = SummaryRequest {
        generator: args.generator.choice(),
        template,
        sampling: Sampling {
            temperature: args.temperature,
            repeat_penalty: args.repeat_penalty,
            seed: args.seed,
            max_tokens: args.max_tokens,
            ..Sampling::default()
        },
        limit: args.limit,
        over: args.over,
        local: args.local,
        shard: args.shard.shard,
    };
    let batch = SummaryBatch::prepare(ctx, req).await?;
    tell!(
        "summarising {} chunks ({} already summarised) with {}, prompt {}",
        batch.work().todo(),
        batch.work().already_done(),
        batch.work().model(),
        batch.template()
    );
    let bar = progress_bar("summarising");
    bar.set_length(batch.work().todo() as u64);
    // A bar on a terminal; plain lines where stderr is a file or a pipe.
    let lines = !std::io::stderr().is_terminal();
    let rep = batch
        .run(ctx, &|n, total| {
            bar.set_position(n as u64);
            if lines {
                eprintln!("summarised {n}/{total}");
            }
        })
        .await;
    bar.finish_and_clear();
    let rep = rep?;
    if args.json {
        return json_schema::print(json_schema::SUMMARISE, &rep);
    }
    tell!(
        "done: {} summaries in {:.1}s ({:.1} per minute), {} output tokens",
        rep.summarised,
        rep.seconds,
        rep.per_minute,
        rep.output_tokens
    );
    if let Some(p) = &rep.pool {
        tell!(
            "summaries per endpoint: {:?}; {} request(s) retried",
            p.served,
            p.retries
        );
    }
    Ok(())
}
