//! The answer report: per run, pass rates per criterion and target-rank bucket,
//! latency and tokens; and the frugality of a RAG run against its no-retrieval
//! baseline (the same model without retrieval).

use std::collections::{BTreeMap, HashMap, HashSet};

use anyhow::{Result, bail};

use super::context::Context;
use super::generation::{AnswerRecord, JudgementRecord, answers, judgements};
use crate::core::frugality::{frugality, std_dev};

/// Target-rank buckets of the pass-rate report: 1, 2-4, 5-7, 8-15, >15, not retrieved.
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

/// The stored answers of `run` (every run without one).
pub async fn list_answers(ctx: &Context, run: Option<&str>) -> Result<Vec<AnswerRecord>> {
    let all: Vec<AnswerRecord> = answers(&ctx.workspace).read_all().await?;
    if all.is_empty() {
        bail!("no answers yet: run `raglab generate --questions FILE` first");
    }
    Ok(all
        .into_iter()
        .filter(|a| run.is_none_or(|r| a.run == r))
        .collect())
}

/// The report of `run` (every run without one), with `baseline` and the frugality
/// score when both are given, as one JSON object keyed by run.
pub async fn answer_report(
    ctx: &Context,
    run: Option<&str>,
    baseline: Option<&str>,
) -> Result<serde_json::Value> {
    let all = list_answers(ctx, None).await?;
    let run = run.map(str::to_string);
    let baseline = baseline.map(str::to_string);
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
        if run.as_ref().is_none_or(|r| &a.run == r)
            || baseline.as_ref().is_some_and(|b| &a.run == b)
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
    // Frugality of the RAG run against the no-retrieval baseline: accuracy is
    // the mean pass rate over criteria; latency the mean total time in seconds.
    if let (Some(rag), Some(base)) = (&run, &baseline) {
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
    Ok(serde_json::Value::Object(out))
}
