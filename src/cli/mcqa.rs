//! `raglab eval mcqa`: multiple-choice accuracy by k, by topic (with the coefficient of
//! variation across topics) and by whether and where the target chunk was retrieved.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;

use super::args::{GeneratorArgs, PromptArgs, ShardArg, TemperatureArgs};
use super::{json_schema, progress_bar};
use crate::core::mcqa::{Accuracy, Report, report};
use crate::core::text::sanitize_for_terminal as clean;
use crate::service::Context;
use crate::service::evaluate::{
    McqQuestion, McqaRequest, answer_questions, read_mcq_questions, run_records,
};
use crate::service::evaluate::{McqaFrugality, mcqa_frugality};

#[derive(Debug, Args)]
pub struct McqaArgs {
    /// JSONL `{id, text, options: [..], answer (text or letter), relevant?, topic?}`.
    #[arg(long)]
    pub questions: PathBuf,
    /// Numbers of chunks to try; 0 is the no-retrieval baseline (the paper used 1, 3, 5 and 10).
    #[arg(long, value_delimiter = ',', default_value = "0,1,3,5,10")]
    pub ks: Vec<usize>,
    /// Run name; re-running continues the run.
    #[arg(long, default_value = "mcqa")]
    pub run: String,
    #[command(flatten)]
    pub prompt: PromptArgs,
    /// Answer at most this many new questions.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Prompt template file with {context}, {question} and {options} (k > 0); checked
    /// before a model loads. Default: config `[prompts] multiple_choice`, else the
    /// shipped text.
    #[arg(long = "prompt", value_name = "FILE")]
    pub template: Option<PathBuf>,
    /// Prompt template file for k = 0, with {question} and {options}. Default: config
    /// `[prompts] multiple_choice_no_context`, else the shipped text.
    #[arg(long = "prompt-no-context", value_name = "FILE")]
    pub template_no_context: Option<PathBuf>,
    /// Which chunks a prompt with k > 0 holds: retrieved (the top k), oracle (the
    /// question's targets only, whatever k) or distractors@P (the targets at position
    /// P among the best retrieved non-targets, k chunks in all).
    #[arg(long, default_value_t)]
    pub context: crate::core::context_policy::ContextPolicy,
    /// Order of the chunks: ranked, or reversed (the best chunk last).
    #[arg(long, default_value_t)]
    pub order: crate::core::context_policy::ChunkOrder,
    /// A rerank stage between retrieval and the prompts of k > 0: the context policy
    /// chooses from the reranked chunks (each question reranked once for every k).
    #[command(flatten)]
    pub rerank: super::args::RerankArgs,
    /// Answer only this shard's questions; the report is over every stored answer
    /// of the run to the file's questions (all shards that have finished).
    #[command(flatten)]
    pub shard: ShardArg,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    /// Answer with the local model even when `[[endpoints]]` are configured (naming a
    /// model with `--model` does too).
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub temperatures: TemperatureArgs,
    /// Only report what the run has stored.
    #[arg(long)]
    pub report_only: bool,
    /// Print the run's stored answers for these questions (JSON array) instead of the
    /// report: every prompt, choice and target rank, for stepping through failures.
    #[arg(long)]
    pub list: bool,
    /// Print the result as one JSON document (its fields: docs/reference/json.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct JsonReport<'a> {
    run: &'a str,
    model_file: Option<&'a str>,
    method: Option<&'a str>,
    alpha: Option<f64>,
    questions: usize,
    /// The run's rerank stage (None: none).
    rerank: Option<&'a str>,
    report: &'a Report,
    /// Each k > 0 against k = 0 (absent without both).
    frugality: Option<&'a McqaFrugality>,
}

pub async fn run(ctx: &Context, args: McqaArgs) -> Result<()> {
    let questions = read_mcq_questions(&args.questions)?;
    let mut ks = args.ks.clone();
    ks.sort_unstable();
    ks.dedup();
    if !args.report_only {
        answer(ctx, &args, &questions, &ks).await?;
    }
    let records = run_records(ctx, &args.run, &questions).await?;
    if args.list {
        return json_schema::print_list(json_schema::MCQA_LIST, &records);
    }
    // Kept for the TUI's Evaluation pane (a run with no answers leaves the last one).
    let rep = if records.is_empty() {
        report(&[])
    } else {
        crate::service::evaluate::save_mcqa(ctx, &args.run, &records)?.report
    };
    let frugality = mcqa_frugality(&records, args.temperatures.get());
    let first = records.iter().find(|r| r.k > 0).or(records.first());
    let answered: HashSet<&str> = records.iter().map(|r| r.question_id.as_str()).collect();
    if args.json {
        return json_schema::print(
            json_schema::MCQA,
            &JsonReport {
                run: &args.run,
                model_file: first.map(|r| r.model_file.as_str()),
                method: first.map(|r| r.method.as_str()),
                alpha: first.map(|r| r.alpha),
                questions: answered.len(),
                rerank: first.and_then(|r| r.rerank.as_deref()),
                report: &rep,
                frugality: frugality.as_ref(),
            },
        );
    }
    if let Some(r) = first {
        let retrieval = match r.method.as_str() {
            "none" => "no retrieval".to_string(),
            "hybrid" => format!("hybrid a={:.2} (weighted RRF, c=60)", r.alpha),
            "linear" => format!("linear a={:.2} (min-max)", r.alpha),
            m => m.to_string(),
        };
        let stage = r
            .rerank
            .as_deref()
            .map_or_else(String::new, |s| format!(", then rerank: {}", clean(s)));
        say!(
            "MCQA run `{}`: {} questions, {}, {retrieval}{stage}",
            clean(&args.run),
            answered.len(),
            clean(&r.model_file),
        );
    }
    say_part!("{}", render(&rep));
    match &frugality {
        Some(f) => say_part!("{}", render_frugality(f)),
        None => say_part!(
            "\nFrugality: needs answers at k = 0 and at some k > 0 to the same questions.\n"
        ),
    }
    Ok(())
}

/// Answer what the run still lacks, with a progress bar.
async fn answer(
    ctx: &Context,
    args: &McqaArgs,
    questions: &[McqQuestion],
    ks: &[usize],
) -> Result<()> {
    if args.prompt.ranking.ann {
        bail!("--ann is not supported by eval mcqa: it retrieves with the exact dense scan");
    }
    use crate::core::template::TemplateKind;
    let rerank = args.rerank.setup(ctx)?;
    if rerank.is_some() && ks.iter().all(|&k| k == 0) {
        bail!("--rerank reranks retrieved chunks: it has nothing to do at k = 0");
    }
    let pipeline = crate::service::evaluate::McqaPipeline {
        with_context: ctx.template(TemplateKind::MultipleChoice, args.template.as_deref())?,
        without_context: ctx.template(
            TemplateKind::MultipleChoiceNoContext,
            args.template_no_context.as_deref(),
        )?,
        context: args.context,
        order: args.order,
    };
    let req = McqaRequest {
        run: args.run.clone(),
        method: args.prompt.method.get(ctx),
        sparse: args.prompt.sparse,
        alpha: args
            .prompt
            .ranking
            .alpha_for(ctx, args.prompt.method.get(ctx)),
        context_budget: args.prompt.context_budget,
        limit: args.limit,
        model: args.generator.choice(),
        embed: args.prompt.ranking.embed(Some(1)),
        reuse_prefix: !args.generator.no_prefix_reuse,
        local: args.local,
        pipeline,
        rerank,
    };
    let bar = progress_bar("answering");
    let mine = args.shard.select(questions.to_vec(), |q| q.id.as_str());
    let done = answer_questions(
        ctx,
        &req,
        &mine,
        ks,
        &|line| bar.suspend(|| tell!("{}", clean(&line))),
        &|i, total, correct, n| {
            bar.set_length(total as u64);
            bar.set_position(i as u64);
            bar.set_message(format!("{correct}/{n} correct"));
        },
    )
    .await;
    bar.finish_and_clear();
    done
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "undefined".into(), |v| format!("{v:.digits$}"))
}

/// The frugality of each k against k = 0 as a text table.
pub fn render_frugality(f: &McqaFrugality) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nFrugality against k = 0 ({}; cost: {}):\n{}",
        f.accuracy, f.cost, f.formula
    );
    let _ = writeln!(
        s,
        "tA = {} ({}: {})\ntC = {} s ({}: {})",
        opt(f.t_accuracy.value, 4),
        f.t_accuracy.source,
        f.t_accuracy.note,
        opt(f.t_latency_s.value, 4),
        f.t_latency_s.source,
        f.t_latency_s.note
    );
    let _ = writeln!(
        s,
        "{:>3}  {:>5}  {:>8} {:>8} {:>9} {:>9} {:>9}",
        "k", "n", "dA", "dC (s)", "A", "C", "F"
    );
    for c in &f.configurations {
        let p = &c.score.paired;
        let _ = writeln!(
            s,
            "{:>3}  {:>5}  {:>+8.4} {:>+8.4} {:>9} {:>9} {:>9}",
            c.k,
            p.n_questions,
            p.d_accuracy,
            p.d_latency_s,
            opt(c.score.a, 4),
            opt(c.score.c, 4),
            opt(c.score.f, 4),
        );
    }
    s
}

fn cell(a: &Accuracy) -> String {
    a.with_ci()
}

fn short(a: &Accuracy) -> String {
    a.short()
}

/// The report as text tables: by k, by target rank, by topic.
pub fn render(rep: &Report) -> String {
    let mut s = String::new();
    by_k_table(&mut s, rep);
    by_rank_table(&mut s, rep);
    by_topic_table(&mut s, rep);
    let _ = writeln!(
        s,
        "\nk = 0: no retrieval. \"target in\": share of questions whose target chunk was in the prompt; r: its fused rank there.\nIntervals: 95% Wilson. macro-F1: unweighted mean of per-option-letter F1 (letters correct or chosen at that k). CV: population σ over topic accuracies / their mean (undefined with < 2 topics)."
    );
    s
}

/// Accuracy per k, overall and by where the target was.
fn by_k_table(s: &mut String, rep: &Report) {
    let _ = writeln!(
        s,
        "\n{:>3}  {:<28} {:<8} {:<14} {:<14} {:<14} {:<14} {:<14} choices",
        "k",
        "accuracy [95% Wilson]",
        "macro-F1",
        "target in",
        "acc | in",
        "acc | not in",
        "acc | r=1",
        "acc | r>=2"
    );
    for row in &rep.by_k {
        let share = if row.k == 0 || row.overall.n == 0 {
            "-".to_string()
        } else {
            format!("{:.3}", row.retrieved.n as f64 / row.overall.n as f64)
        };
        let choices: Vec<String> = row
            .choices
            .iter()
            .map(|(c, n)| format!("{c}:{n}"))
            .collect();
        let dash = |a: &Accuracy| if row.k == 0 { "-".into() } else { short(a) };
        let _ = writeln!(
            s,
            "{:>3}  {:<28} {:<8} {:<14} {:<14} {:<14} {:<14} {:<14} {}",
            row.k,
            cell(&row.overall),
            row.macro_f1
                .map_or_else(|| "-".into(), |v| format!("{v:.3}")),
            share,
            dash(&row.retrieved),
            dash(&row.not_retrieved),
            dash(&row.rank1),
            dash(&row.rank2_plus),
            choices.join(" ")
        );
    }
}

/// Accuracy by the target's rank in the prompt, for every k of at least 2.
fn by_rank_table(s: &mut String, rep: &Report) {
    let ranked: Vec<_> = rep.by_k.iter().filter(|r| r.k >= 2).collect();
    if !ranked.is_empty() {
        let _ = writeln!(
            s,
            "\naccuracy by target rank (n), and with the target not in the prompt:"
        );
        for row in ranked {
            let ranks: Vec<String> = row
                .by_rank
                .iter()
                .map(|(r, a)| format!("r={r} {}", short(a)))
                .collect();
            let _ = writeln!(
                s,
                "  k={:<3} {}  | not retrieved {}",
                row.k,
                ranks.join("  "),
                short(&row.not_retrieved)
            );
        }
    }
}

/// Accuracy per topic and k, with the coefficient of variation across topics.
fn by_topic_table(s: &mut String, rep: &Report) {
    let width = rep
        .by_topic
        .iter()
        .map(|t| t.topic.chars().count())
        .max()
        .unwrap_or(5)
        .clamp(5, 32);
    let _ = write!(s, "\n{:<width$}", "topic");
    for k in &rep.ks {
        let _ = write!(s, " {:>14}", format!("k={k}"));
    }
    s.push('\n');
    for t in &rep.by_topic {
        let name: String = t.topic.chars().take(width).collect();
        let _ = write!(s, "{name:<width$}");
        for a in &t.by_k {
            let _ = write!(s, " {:>14}", short(a));
        }
        s.push('\n');
    }
    let _ = write!(s, "{:<width$}", "CV (σ/μ)");
    for cv in &rep.cv {
        let _ = write!(
            s,
            " {:>14}",
            cv.map_or_else(|| "undefined".into(), |v| format!("{v:.4}"))
        );
    }
    s.push('\n');
}
