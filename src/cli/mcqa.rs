//! `raglab eval mcqa`: multiple-choice accuracy by k, by topic (with the coefficient of
//! variation across topics) and by whether and where the target chunk was retrieved.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use serde::Serialize;

use super::generate::GeneratorArgs;
use super::{Context, print_json};
use crate::core::mcqa::{Accuracy, Report, report};
use crate::core::retrieval::Method;
use crate::infer::generate::Generator;
use crate::service::generation::file_sha256;
use crate::service::mcqa::{McqaRecord, McqaRunner, mcqa_table, outcomes, read_questions};
use crate::service::retrieval::{Retriever, embed_config};

#[derive(Debug, Args)]
pub struct McqaArgs {
    /// JSONL `{id, text, options: [..], answer (text or letter), relevant?, topic?}`.
    #[arg(long)]
    pub questions: PathBuf,
    /// Numbers of chunks to try; 0 is the no-retrieval baseline (SPEC: 1,3,5,10).
    #[arg(long, value_delimiter = ',', default_value = "0,1,3,5,10")]
    pub ks: Vec<usize>,
    /// Run name; re-running continues the run.
    #[arg(long, default_value = "mcqa")]
    pub run: String,
    #[arg(long, default_value = "hybrid")]
    pub method: Method,
    #[arg(long, default_value_t = 0.7)]
    pub alpha: f64,
    /// Context budget in generator tokens.
    #[arg(long, default_value_t = crate::core::prompt::DEFAULT_CONTEXT_BUDGET)]
    pub context_budget: usize,
    /// Answer at most this many new questions.
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub generator: GeneratorArgs,
    /// Only report what the run has stored.
    #[arg(long)]
    pub report_only: bool,
    /// Print the run's stored answers for these questions (JSON array) instead of the
    /// report: every prompt, choice and target rank, for stepping through failures.
    #[arg(long)]
    pub list: bool,
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
    report: &'a Report,
}

pub async fn run(ctx: &Context, args: McqaArgs) -> Result<()> {
    let questions = read_questions(&args.questions)?;
    let mut ks = args.ks.clone();
    ks.sort_unstable();
    ks.dedup();
    if !args.report_only {
        answer_questions(ctx, &args, &questions, &ks).await?;
    }
    let ids: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let records: Vec<McqaRecord> = mcqa_table(&ctx.workspace)
        .read_all::<McqaRecord>()
        .await?
        .into_iter()
        .filter(|r| r.run == args.run && ids.contains(r.question_id.as_str()))
        .collect();
    if records.is_empty() {
        bail!(
            "run `{}` has no answers for these questions yet (drop --report-only to answer them)",
            args.run
        );
    }
    if args.list {
        return print_json(&records);
    }
    let rep = report(&outcomes(&records));
    let first = records.iter().find(|r| r.k > 0).or(records.first());
    let answered: HashSet<&str> = records.iter().map(|r| r.question_id.as_str()).collect();
    if args.json {
        return print_json(&JsonReport {
            run: &args.run,
            model_file: first.map(|r| r.model_file.as_str()),
            method: first.map(|r| r.method.as_str()),
            alpha: first.map(|r| r.alpha),
            questions: answered.len(),
            report: &rep,
        });
    }
    if let Some(r) = first {
        let retrieval = match r.method.as_str() {
            "none" => "no retrieval".to_string(),
            "hybrid" => format!("hybrid a={:.2} (weighted RRF, c=60)", r.alpha),
            "linear" => format!("linear a={:.2} (min-max)", r.alpha),
            m => m.to_string(),
        };
        println!(
            "MCQA run `{}`: {} questions, {}, {retrieval}",
            args.run,
            answered.len(),
            r.model_file,
        );
    }
    print!("{}", render(&rep));
    Ok(())
}

/// Answer every (question, k) the run lacks, committing per question.
async fn answer_questions(
    ctx: &Context,
    args: &McqaArgs,
    questions: &[crate::service::mcqa::McqQuestion],
    ks: &[usize],
) -> Result<()> {
    // The run's stored answers, read once: what is done, and with which settings.
    let stored: Vec<McqaRecord> = mcqa_table(&ctx.workspace)
        .read_all::<McqaRecord>()
        .await?
        .into_iter()
        .filter(|r| r.run == args.run)
        .collect();
    let done: HashSet<(String, u32)> = stored
        .iter()
        .map(|r| (r.question_id.clone(), r.k))
        .collect();
    let mut todo: Vec<(&crate::service::mcqa::McqQuestion, HashSet<u32>)> = questions
        .iter()
        .map(|q| {
            let skip: HashSet<u32> = ks
                .iter()
                .map(|&k| k as u32)
                .filter(|k| done.contains(&(q.id.clone(), *k)))
                .collect();
            (q, skip)
        })
        .filter(|(_, skip)| skip.len() < ks.len())
        .collect();
    todo.truncate(args.limit.unwrap_or(usize::MAX));
    if todo.is_empty() {
        eprintln!("run `{}`: nothing left to answer", args.run);
        return Ok(());
    }
    let gcfg = args.generator.config(ctx);
    let generator = Generator::spawn(&gcfg)?;
    if !generator.info.has_chat_template {
        bail!(
            "{} has no chat template; choose an instruction-tuned GGUF",
            gcfg.model.display()
        );
    }
    check_run_is_consistent(&stored, args, &generator.info.file)?;
    let retriever = if ks.iter().any(|&k| k > 0) {
        let r = Retriever::open(&ctx.workspace, Some(&embed_config(ctx, None, Some(1)))).await?;
        if !r.is_fresh() {
            bail!("the indexes are out of date with the chunks: run `raglab index` first");
        }
        let missing = questions
            .iter()
            .filter(|q| !q.relevant.is_empty() && q.relevant.iter().all(|t| r.chunk(t).is_none()))
            .count();
        if missing > 0 {
            // A common cause: JSONL records chunked by headers get ids `ID#top`.
            let docs: HashSet<&str> = r.chunks.iter().map(|c| c.doc_id.as_str()).collect();
            let doc_ids = questions
                .iter()
                .any(|q| q.relevant.iter().any(|t| docs.contains(t.as_str())));
            eprintln!(
                "warning: {missing} question(s) name target chunks that are not in this workspace; they count as \"target not retrieved\"{}",
                if doc_ids {
                    " (their targets are document ids: ingest with `--chunker none` to keep one chunk per record, named by its id)"
                } else {
                    ""
                }
            );
        }
        Some(r)
    } else {
        None
    };
    let runner = McqaRunner {
        run: args.run.clone(),
        retriever: retriever.as_ref(),
        generator: &generator,
        model_sha256: file_sha256(&gcfg.model)?,
        method: args.method,
        alpha: args.alpha,
        context_budget: args.context_budget,
    };
    eprintln!(
        "run `{}`: {} questions x k in {:?} with {}",
        args.run,
        todo.len(),
        ks,
        generator.info.file
    );
    let bar = super::index::progress_bar("answering");
    bar.set_length(todo.len() as u64);
    let (mut n, mut correct) = (0usize, 0usize);
    for (q, skip) in todo {
        let recs = runner.answer(q, ks, &skip)?;
        n += recs.len();
        correct += recs.iter().filter(|r| r.correct).count();
        // One commit per question: an interrupted run resumes at the next question.
        mcqa_table(&ctx.workspace).append(&recs).await?;
        bar.inc(1);
        bar.set_message(format!("{correct}/{n} correct"));
    }
    bar.finish_and_clear();
    Ok(())
}

/// A run mixes no models or retrieval settings: refuse to continue it with others.
fn check_run_is_consistent(stored: &[McqaRecord], args: &McqaArgs, model_file: &str) -> Result<()> {
    let method = args.method.to_string();
    if let Some(r) = stored.iter().find(|r| {
        r.model_file != model_file
            || (r.k > 0 && (r.method != method || (r.alpha - args.alpha).abs() > 1e-12))
    }) {
        bail!(
            "run `{}` was answered with {} ({} a={}); continue it with the same settings or choose another --run",
            args.run,
            r.model_file,
            r.method,
            r.alpha
        );
    }
    Ok(())
}

fn cell(a: &Accuracy) -> String {
    match (a.accuracy, a.lo, a.hi) {
        (Some(v), Some(lo), Some(hi)) => format!("{v:.3} [{lo:.2}, {hi:.2}] n={}", a.n),
        _ => "-".into(),
    }
}

fn short(a: &Accuracy) -> String {
    a.accuracy
        .map_or_else(|| "-".into(), |v| format!("{v:.3} ({})", a.n))
}

/// The report as text tables.
pub fn render(rep: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n{:>3}  {:<28} {:<14} {:<14} {:<14} {:<14} {:<14} choices",
        "k",
        "accuracy [95% Wilson]",
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
            "{:>3}  {:<28} {:<14} {:<14} {:<14} {:<14} {:<14} {}",
            row.k,
            cell(&row.overall),
            share,
            dash(&row.retrieved),
            dash(&row.not_retrieved),
            dash(&row.rank1),
            dash(&row.rank2_plus),
            choices.join(" ")
        );
    }
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
    let _ = writeln!(
        s,
        "\nk = 0: no retrieval. \"target in\": share of questions whose target chunk was in the prompt; r: its fused rank there.\nIntervals: 95% Wilson. CV: population σ over topic accuracies / their mean (undefined with < 2 topics)."
    );
    s
}
