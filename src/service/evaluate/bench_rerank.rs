//! `bench rerank`: a GGUF pointwise reranker's cost per question, its candidates
//! decoded whole (each prompt on its own, as llama-server does) and with their
//! common prefix shared (one decode call), side by side in one run, each against
//! llama.cpp's own prompt-evaluation time for the same call; and how far the two
//! ways' P(yes) lie apart. The machine is shared and noisy, so every question runs
//! both ways in turn, the first way alternating, and figures are ratios.

use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use crate::core::prompt::ChatMessage;
use crate::core::stats::timing_quantile as pct;
use crate::core::template::TemplateKind;
use crate::infer::pointwise::{Decode, PointwiseScores};
use crate::service::base::{Context, ModelChoice, load_generator, read_questions};
use crate::service::retrieval::Retriever;
use crate::service::retrieval::rerank::{document, pointwise_prompt};

/// What `bench rerank` runs.
#[derive(Debug, Clone)]
pub struct RerankBench<'a> {
    pub questions: &'a Path,
    /// Questions timed (the file's first ones).
    pub limit: usize,
    /// Candidates per question: BM25's first `depth` chunks.
    pub depth: usize,
    pub model: ModelChoice,
}

/// One way of decoding, over every question timed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DecodeFigures {
    /// Tokens decoded per question (median).
    pub tokens: f64,
    /// Wall time per question, ms (median): tokenising, context and decode.
    pub wall_ms: f64,
    /// llama.cpp's own prompt-evaluation time per question, ms (median).
    pub llama_prompt_ms: f64,
    /// Sum of wall times over the sum of llama.cpp's prompt-evaluation times.
    pub wall_over_llama: f64,
}

/// The bench's result.
#[derive(Debug, Clone, Serialize)]
pub struct RerankBenchReport {
    pub model: String,
    pub questions: usize,
    pub candidates: usize,
    pub whole: DecodeFigures,
    pub shared: DecodeFigures,
    /// Shared wall time over whole wall time, summed over the questions.
    pub shared_over_whole: f64,
    /// Largest and mean |P(yes) shared - P(yes) whole| over every pair.
    pub max_abs_diff: f64,
    pub mean_abs_diff: f64,
    /// Questions whose candidates the two ways put in the same order.
    pub same_order: usize,
}

/// Time both ways of decoding on the workspace's BM25 candidates of the first
/// `limit` questions.
pub async fn bench_rerank(ctx: &Context, args: &RerankBench<'_>) -> Result<RerankBenchReport> {
    let questions = read_questions(args.questions)?;
    let questions: Vec<_> = questions.into_iter().take(args.limit).collect();
    if questions.is_empty() || args.depth == 0 {
        bail!("no question to time: give --limit and --depth of at least 1");
    }
    let r = Retriever::open(&ctx.workspace, None).await?;
    r.ensure_fresh()?;
    let template = ctx.template(TemplateKind::Rerank, ctx.config.rerank.prompt.as_deref())?;
    let mut cfg = ctx.gen_config(&args.model);
    cfg.reuse_prefix = false;
    let generator = load_generator(&cfg)?;
    let mut runs: [Vec<PointwiseScores>; 2] = [Vec::new(), Vec::new()];
    for (n, q) in questions.iter().enumerate() {
        let (lists, _) = r.query(&q.text, args.depth)?;
        let prompts: Vec<Vec<ChatMessage>> = lists
            .bm25
            .iter()
            .take(args.depth)
            .filter_map(|s| r.chunk(&s.id))
            .map(|c| {
                let doc = document(c);
                vec![ChatMessage::user(pointwise_prompt(
                    &template, &q.text, &doc,
                ))]
            })
            .collect();
        if prompts.is_empty() {
            continue;
        }
        let order = if n % 2 == 0 { [0, 1] } else { [1, 0] };
        for way in order {
            let decode = [Decode::Whole, Decode::SharedPrefix][way];
            runs[way].push(generator.score_yes_no(prompts.clone(), decode)?);
        }
    }
    let [whole, shared] = runs;
    if whole.is_empty() {
        bail!("BM25 found no candidate for these questions");
    }
    let diffs: Vec<f64> = whole
        .iter()
        .zip(&shared)
        .flat_map(|(w, s)| w.p_yes.iter().zip(&s.p_yes).map(|(a, b)| (a - b).abs()))
        .collect();
    let sum = |v: &[PointwiseScores], f: fn(&PointwiseScores) -> f64| v.iter().map(f).sum::<f64>();
    Ok(RerankBenchReport {
        model: generator.info.name.clone(),
        questions: whole.len(),
        candidates: whole.iter().map(|w| w.p_yes.len()).sum(),
        shared_over_whole: sum(&shared, |s| s.wall_ms) / sum(&whole, |s| s.wall_ms),
        max_abs_diff: diffs.iter().copied().fold(0.0, f64::max),
        mean_abs_diff: diffs.iter().sum::<f64>() / diffs.len().max(1) as f64,
        same_order: whole
            .iter()
            .zip(&shared)
            .filter(|(w, s)| ranked(&w.p_yes) == ranked(&s.p_yes))
            .count(),
        whole: figures(&whole),
        shared: figures(&shared),
    })
}

/// Candidate indices by score, highest first, ties in first-stage order.
fn ranked(scores: &[f64]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..scores.len()).collect();
    idx.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    idx
}

fn figures(runs: &[PointwiseScores]) -> DecodeFigures {
    let median = |f: fn(&PointwiseScores) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        pct(&v, 0.5)
    };
    let wall: f64 = runs.iter().map(|r| r.wall_ms).sum();
    let llama: f64 = runs.iter().map(|r| r.llama_prompt_ms).sum();
    DecodeFigures {
        tokens: median(|r| r.tokens as f64),
        wall_ms: median(|r| r.wall_ms),
        llama_prompt_ms: median(|r| r.llama_prompt_ms),
        wall_over_llama: wall / llama,
    }
}
