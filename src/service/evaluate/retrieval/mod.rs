//! Retrieval evaluation (the paper's table per configuration, the alpha sweep of every
//! fused method, breakdowns by topic and target length for every configuration, failed
//! questions, TREC run files, per-query target ranks). What it is asked is in
//! [`request`], what it reports in [`report`], which configurations it scores in
//! [`configs`], the questions' groups in [`groups`], sharded ranking and the merge in
//! [`shard`], the ranked lists between its passes in [`spill`], the failed questions it
//! leaves in [`failures`]. This file holds the passes themselves.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::core::fusion::alpha_grid;
use crate::core::incomplete::{JudgedDocs, mean_judged};
use crate::core::metrics::{MeanSum, Qrel};
use crate::core::per_query::per_query;
use crate::core::question::{EvalConfig, FailedQuestion, MissingTargets, Question};
use crate::core::retrieval::{
    Method, QueryLists, QueryOutcome, RunConfig, Sparse, evaluate, evaluate_judged, judged, mean,
    mean_at_k,
};
use crate::core::significance::{ScoreTable, score_table};
use crate::service::base::{Context, ModelChoice, Progress};
use crate::service::retrieval::Retriever;

mod configs;
mod failures;
mod groups;
mod report;
mod request;
mod shard;
mod spill;

use configs::{best_alphas, configurations, first_stage_configurations, fused_pairs, headline};
pub use failures::last_failures;
use failures::write_failures;
use groups::{Groups, relevant_ids};
pub use report::{BestAlpha, EvalSeconds, MethodResult, RetrievalReport, ShardSummary, SweepPoint};
pub use request::{DEFAULT_BATCH, QuerySet, RetrievalEval};
use request::{judgements_from_file, read_queries};
use shard::gather;
pub use shard::rank_shard;

/// Every rank list of every question, `req.depth` deep (exact or ANN dense lists).
async fn rank_all(
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<Vec<(String, QueryLists)>> {
    let mut lists = Vec::with_capacity(queries.len());
    for block in queries.chunks(BLOCK) {
        let ranked = rank_block(r, block, req.depth, req.ann_nprobes)?;
        lists.extend(block.iter().map(|q| q.id.clone()).zip(ranked));
        progress(lists.len(), queries.len());
    }
    Ok(lists)
}

/// Queries handled per block: enough to keep both cores busy ranking, few enough that
/// a block's lists are a small, fixed amount of memory.
const BLOCK: usize = 64;

/// Evaluate retrieval: rank lists once per question, every configuration (and the
/// sweeps) re-fused from them; writes the failures file, the report for the TUI's
/// Evaluation pane (`eval/last-retrieval.json`) and, if asked, the run files and the
/// per-query file.
///
/// Memory does not grow with the number of queries beyond each configuration's
/// per-query metrics: the lists are ranked block by block into a spill file
/// ([`spill`]), then read back once for the alpha sweep (running sums) and once for
/// the configurations, whose run files and per-query file are written as the blocks
/// pass.
pub async fn evaluate_retrieval(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<RetrievalReport> {
    let (report, scores) = evaluate_scored(ctx, req, progress).await?;
    super::significance::save_scores(ctx, &scores)?;
    Ok(report)
}

/// [`evaluate_retrieval`] without keeping the per-query scores: the report and every
/// configuration's per-query scores (in the report's `results` order), for a caller
/// that evaluates several models or variants and keeps their scores as one table.
pub(super) async fn evaluate_scored(
    ctx: &Context,
    req: &RetrievalEval,
    progress: Progress<'_>,
) -> Result<(RetrievalReport, ScoreTable)> {
    if let Some(p) = &req.per_query {
        super::per_query::format_of(p)?;
    }
    let (queries, qrels) = read_queries(req)?;
    // Merging ranks nothing: the corpus is read for topics and lengths only.
    let r = if req.merge {
        Retriever::open(&ctx.workspace, None).await?
    } else {
        open_ranker(ctx, req).await?
    };
    let missing_targets = find_missing_targets(&r, &queries, &qrels);
    let started = Instant::now();
    let mut ids = spill::Ids::new(&r.chunks, &r.by_id);
    let mut lists = spill::Spill::create(&ctx.workspace.path("eval"))?;
    let (model_name, has_dense) =
        rank_phase(ctx, &r, &queries, req, progress, &mut lists, &mut ids).await?;
    let retrieval_s = started.elapsed().as_secs_f64();

    let sweep_started = Instant::now();
    let sweep = if req.alpha_sweep {
        sweep_phase(&mut lists, &ids, &qrels, &fused_pairs(req))?
    } else {
        Vec::new()
    };
    let sweep_ms = sweep_started.elapsed().as_secs_f64() * 1e3;
    let best = best_alphas(&sweep);
    let configs = configurations(req, &best);
    let rerank_started = Instant::now();
    let stage = rerank_phase(ctx, &r, &queries, req, &best, &mut lists, &ids, progress).await?;
    let retrieval_s = retrieval_s + rerank_started.elapsed().as_secs_f64();
    let lists_of = target_lists(&configs, has_dense);
    let passed = config_phase(
        &mut lists,
        &ids,
        &qrels,
        req,
        &configs,
        &lists_of,
        model_name.as_deref(),
    )?;
    drop(lists);
    let seconds = EvalSeconds {
        retrieval: retrieval_s,
        sweep_ms,
        per_alpha_ms: if sweep.is_empty() {
            0.0
        } else {
            sweep_ms / sweep.len() as f64
        },
    };
    let scores = score_table_of(&queries, &qrels, &configs, &passed.outcomes, &req.k);
    let ranked = Ranked {
        r: &r,
        queries: &queries,
        qrels: &qrels,
        model_name,
        missing_targets,
    };
    let mut report = write_phase(ctx, req, &ranked, &configs, passed, (sweep, best), seconds)?;
    if let Some((described, stats)) = stage {
        report.rerank = Some(described);
        report.rerank_stats = Some(stats);
    }
    super::saved::save(ctx, super::saved::LAST_RETRIEVAL, &report)?;
    Ok((report, scores))
}

/// The lists whose target ranks the per-query file places: each single method's
/// (dense only when ranked), then every fused configuration's that is not reranked.
fn target_lists(configs: &[RunConfig], has_dense: bool) -> Vec<RunConfig> {
    let mut lists_of: Vec<RunConfig> = Vec::new();
    if has_dense {
        lists_of.push(RunConfig::single(Method::Dense));
    }
    lists_of.push(RunConfig::single(Method::Bm25));
    lists_of.push(RunConfig::single(Method::Tfidf));
    lists_of.extend(
        configs
            .iter()
            .filter(|c| c.method.uses_alpha() && c.rerank.is_none()),
    );
    lists_of
}

/// Every configuration's per-query scores over the judged queries, each once, sorted
/// by id (the order `eval runs` uses too, so the same scores give the same resamples
/// and permutations whichever command compares them).
fn score_table_of(
    queries: &[Question],
    qrels: &HashMap<String, Qrel>,
    configs: &[RunConfig],
    outcomes: &[Vec<QueryOutcome>],
    ks: &[usize],
) -> ScoreTable {
    let mut seen = std::collections::HashSet::new();
    let mut qids: Vec<String> = queries
        .iter()
        .filter(|q| judged(qrels, &q.id).is_some() && seen.insert(q.id.as_str()))
        .map(|q| q.id.clone())
        .collect();
    qids.sort();
    let runs: Vec<(String, &[QueryOutcome])> = configs
        .iter()
        .zip(outcomes)
        .map(|(c, o)| (c.label(), o.as_slice()))
        .collect();
    let cluster: HashMap<&str, String> = queries
        .iter()
        .map(|q| (q.id.as_str(), q.cluster()))
        .collect();
    let clusters = qids.iter().map(|q| cluster[q.as_str()].clone()).collect();
    let mut table = score_table(qids, ks, &runs);
    table.clusters = clusters;
    table
}

/// Relevant chunk ids that are not in the corpus, sorted within a query
/// (`relevant_ids`: qrels are a hash map, and warnings must not vary).
fn find_missing_targets(
    r: &Retriever,
    queries: &[Question],
    qrels: &HashMap<String, Qrel>,
) -> MissingTargets {
    let relevant: Vec<Vec<String>> = queries.iter().map(|q| relevant_ids(qrels, &q.id)).collect();
    MissingTargets::find(
        relevant.iter().map(|ids| ids.iter().map(String::as_str)),
        |id| r.by_id.contains_key(id),
    )
}

/// Rank every query into `out` (or, merging, take the lists the shards stored);
/// returns the embedding model of the lists and whether they have dense lists.
async fn rank_phase(
    ctx: &Context,
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    progress: Progress<'_>,
    out: &mut spill::Spill,
    ids: &mut spill::Ids<'_>,
) -> Result<(Option<String>, bool)> {
    if req.merge {
        let (gathered, model) = gather(ctx, req, queries, r.chunks.len()).await?;
        if req.methods.iter().any(|m| m.needs_dense()) && model.is_none() {
            bail!(
                "batch `{}` was ranked without an embedding model: dense methods cannot be merged",
                req.batch
            );
        }
        for (qid, l) in &gathered {
            out.push(qid, ids, l)?;
        }
        let has_dense = model.is_some();
        return Ok((model, has_dense));
    }
    let mut done = 0;
    for block in queries.chunks(BLOCK) {
        let lists = rank_block(r, block, req.depth, req.ann_nprobes)?;
        for (q, l) in block.iter().zip(&lists) {
            out.push(&q.id, ids, l)?;
        }
        done += block.len();
        progress(done, queries.len());
    }
    Ok((r.model_name.clone(), r.has_dense()))
}

/// The rerank stage's scores of every query's candidates: the union of the first N
/// chunks of each first-stage configuration, read from the spilled lists, scored (or
/// found in the cache) and handed to the spill, which attaches them to the lists it
/// reads back. Returns the stage described and its figures; None without a stage.
#[allow(clippy::too_many_arguments)]
async fn rerank_phase(
    ctx: &Context,
    r: &Retriever,
    queries: &[Question],
    req: &RetrievalEval,
    best: &[BestAlpha],
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    progress: Progress<'_>,
) -> Result<Option<(String, crate::service::retrieval::rerank::RerankStats)>> {
    let Some(setup) = &req.rerank else {
        return Ok(None);
    };
    if req.depth < setup.cut.depth {
        bail!(
            "the rerank stage scores the first {} chunks, deeper than the ranking (--depth {})",
            setup.cut.depth,
            req.depth
        );
    }
    let first = first_stage_configurations(req, best);
    let mut wanted: Vec<(String, Vec<String>)> = Vec::with_capacity(queries.len());
    lists.for_each_block(ids, BLOCK, |block| {
        for (qid, l) in block {
            let mut union: Vec<String> = Vec::new();
            for c in &first {
                for id in l.ranking_for(*c).into_iter().take(setup.cut.depth) {
                    if !union.iter().any(|u| u == id) {
                        union.push(id.to_string());
                    }
                }
            }
            wanted.push((qid.clone(), union));
        }
        Ok(())
    })?;
    let text_of: HashMap<&str, &str> = queries
        .iter()
        .map(|q| (q.id.as_str(), q.text.as_str()))
        .collect();
    let choice = ModelChoice {
        model: None,
        threads: req.rerank_threads,
    };
    let mut rr =
        crate::service::retrieval::rerank::Reranker::open(ctx, setup.clone(), &choice).await?;
    let mut scores = HashMap::with_capacity(wanted.len());
    for (i, (qid, chunk_ids)) in wanted.iter().enumerate() {
        let question = text_of.get(qid.as_str()).copied().unwrap_or_default();
        let refs: Vec<&str> = chunk_ids.iter().map(String::as_str).collect();
        let scored = rr.scored_ids(ctx, r, question, &refs).await?;
        scores.insert(qid.clone(), scored);
        progress(i + 1, wanted.len());
    }
    lists.set_rerank(scores);
    Ok(Some((rr.describe(), rr.stats.clone())))
}

/// One block's lists in query order: the block's query embeddings in one request to
/// the embedding worker (which encodes several texts per model call), then the
/// searches on two threads.
fn rank_block(
    r: &Retriever,
    block: &[Question],
    depth: usize,
    ann_nprobes: Option<usize>,
) -> Result<Vec<QueryLists>> {
    let texts: Vec<String> = block.iter().map(|q| q.text.clone()).collect();
    let vectors = r.embed_queries(&texts)?;
    if ann_nprobes.is_some() && vectors.is_none() {
        bail!("ANN search needs an embedding model and the corpus's vectors (raglab index)");
    }
    let vector = |i: usize| vectors.as_ref().and_then(|v| v.get(i)).map(Vec::as_slice);
    let rank = |range: std::ops::Range<usize>| -> Result<Vec<QueryLists>> {
        range
            .map(|i| {
                Ok(
                    r.query_embedded(&block[i].text, vector(i), depth, ann_nprobes)?
                        .0,
                )
            })
            .collect()
    };
    let half = block.len().div_ceil(2);
    let (a, b) = std::thread::scope(|s| {
        let other = s.spawn(|| rank(half..block.len()));
        (rank(0..half), other.join())
    });
    let mut lists = a?;
    lists.extend(b.map_err(|_| anyhow::anyhow!("a ranking thread panicked"))??);
    Ok(lists)
}

/// Each fused method's mean metrics at every alpha of the grid, re-fused from the
/// spilled lists.
fn sweep_phase(
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    qrels: &HashMap<String, Qrel>,
    pairs: &[(Method, Sparse)],
) -> Result<Vec<SweepPoint>> {
    let points: Vec<RunConfig> = pairs
        .iter()
        .flat_map(|&(m, s)| {
            alpha_grid()
                .into_iter()
                .map(move |a| RunConfig::new(m, s, a))
        })
        .collect();
    let mut sums = vec![MeanSum::default(); points.len()];
    lists.for_each_block(ids, BLOCK, |block| {
        for (cfg, sum) in points.iter().zip(&mut sums) {
            for o in evaluate(block, qrels, *cfg, &[]) {
                sum.add(&o.metrics);
            }
        }
        Ok(())
    })?;
    Ok(points
        .iter()
        .zip(sums)
        .map(|(c, s)| SweepPoint {
            method: c.method,
            sparse: c.sparse,
            alpha: c.alpha,
            metrics: s.mean(),
        })
        .collect())
}

/// What the pass over the configurations keeps: each one's per-query outcomes and
/// its run file.
struct Passed {
    outcomes: Vec<Vec<QueryOutcome>>,
    run_files: Vec<Option<PathBuf>>,
}

/// Every configuration's per-query outcomes from the spilled lists, writing its run
/// file (with `--run-out`) and the per-query file (with `--per-query`, placing the
/// targets in `lists_of`) block by block.
fn config_phase(
    lists: &mut spill::Spill,
    ids: &spill::Ids<'_>,
    qrels: &HashMap<String, Qrel>,
    req: &RetrievalEval,
    configs: &[RunConfig],
    lists_of: &[RunConfig],
    model: Option<&str>,
) -> Result<Passed> {
    let mut runs = match &req.run_out {
        Some(dir) => Some(spill::RunFiles::create(dir, configs, model)?),
        None => None,
    };
    let mut per_query_file = match &req.per_query {
        Some(path) => Some(spill::PerQueryFile::create(
            path,
            &per_query(&[], qrels, lists_of),
        )?),
        None => None,
    };
    let docs = judgements_from_file(req).then(|| JudgedDocs::of(qrels));
    let mut outcomes: Vec<Vec<QueryOutcome>> = vec![Vec::new(); configs.len()];
    lists.for_each_block(ids, BLOCK, |block| {
        for (c, o) in configs.iter().zip(&mut outcomes) {
            o.extend(evaluate_judged(block, qrels, *c, &req.k, docs.as_ref()));
        }
        if let Some(runs) = runs.as_mut() {
            runs.write(block)?;
        }
        if let Some(f) = per_query_file.as_mut() {
            f.write(&per_query(block, qrels, lists_of))?;
        }
        Ok(())
    })?;
    let run_files = match runs {
        Some(runs) => runs.finish()?.into_iter().map(Some).collect(),
        None => vec![None; configs.len()],
    };
    if let Some(f) = per_query_file {
        f.finish()?;
    }
    Ok(Passed {
        outcomes,
        run_files,
    })
}

/// The judged queries a configuration retrieved nothing for (absent from its
/// `outcomes`), in the file's order.
fn empty_of<'a>(
    queries: &'a [Question],
    qrels: &HashMap<String, Qrel>,
    outcomes: &[QueryOutcome],
) -> Vec<&'a str> {
    let evaluated: std::collections::HashSet<&str> =
        outcomes.iter().map(|o| o.qid.as_str()).collect();
    queries
        .iter()
        .map(|q| q.id.as_str())
        .filter(|qid| judged(qrels, qid).is_some() && !evaluated.contains(qid))
        .collect()
}

/// What the report is computed from once every query is ranked.
struct Ranked<'a> {
    r: &'a Retriever,
    queries: &'a [Question],
    qrels: &'a HashMap<String, Qrel>,
    model_name: Option<String>,
    missing_targets: MissingTargets,
}

/// Each configuration's result (means, breakdowns, failures), the failures file and
/// the report.
fn write_phase(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    configs: &[RunConfig],
    passed: Passed,
    (sweep, best): (Vec<SweepPoint>, Vec<BestAlpha>),
    seconds: EvalSeconds,
) -> Result<RetrievalReport> {
    let Ranked {
        r, queries, qrels, ..
    } = *ranked;
    let fail_k = req.k.iter().copied().max().unwrap_or(10);
    let groups = Groups::new(r, queries, qrels);
    let head = headline(configs);
    let scored = results_phase(ctx, req, ranked, &groups, configs, passed, (head, fail_k));
    let failures_file = write_failures(ctx, &scored.all_failed)?;
    let (by_topic, by_target_length, breakdown_method) = head
        .and_then(|i| scored.results.get(i))
        .map(|h| {
            (
                h.by_topic.clone(),
                h.by_target_length.clone(),
                h.label.clone(),
            )
        })
        .unwrap_or_else(|| {
            let (t, l) = groups.breakdowns(&[]);
            (t, l, "-".into())
        });
    Ok(RetrievalReport {
        queries: queries.len(),
        evaluated: scored.head_counts.0,
        dropped_without_relevant: queries
            .iter()
            .filter(|q| judged(qrels, &q.id).is_none())
            .count(),
        dropped_empty_results: scored.head_counts.1,
        missing_targets: ranked.missing_targets.clone(),
        embedding_model: ranked.model_name.clone(),
        variant: req.variant,
        summarised: r.summarised,
        depth: req.depth,
        results: scored.results,
        best_alpha: best,
        breakdown_method,
        by_topic,
        by_target_length,
        failed: scored.head_failed,
        failure_cutoff: fail_k,
        failures_file,
        per_query_file: req.per_query.clone(),
        seconds,
        alpha_sweep: sweep,
        rerank: None,
        rerank_stats: None,
    })
}

/// What the configurations' results are: each one's result, the headline's failures
/// and its counts (queries evaluated, judged queries it retrieved nothing for), and
/// every configuration's failures for the failures file.
struct Results {
    results: Vec<MethodResult>,
    head_failed: Vec<FailedQuestion>,
    all_failed: Vec<FailedQuestion>,
    head_counts: (usize, usize),
}

/// Each configuration's means, breakdowns and failures at cut-off `fail_k`; `head`
/// is the headline configuration's index.
fn results_phase(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    groups: &Groups<'_>,
    configs: &[RunConfig],
    passed: Passed,
    (head, fail_k): (Option<usize>, usize),
) -> Results {
    let (queries, qrels) = (ranked.queries, ranked.qrels);
    let mut out = Results {
        results: Vec::new(),
        head_failed: Vec::new(),
        // Every configuration's failures go to the failures file (each carries its
        // configuration), so the TUI's browser filters them by method.
        all_failed: Vec::new(),
        head_counts: (0, 0),
    };
    let runs = configs.iter().zip(passed.outcomes).zip(passed.run_files);
    for (i, ((c, o), run_file)) in runs.enumerate() {
        let empty = empty_of(queries, qrels, &o);
        let config = eval_config(ctx, req, ranked, c);
        let fails = groups.failed(qrels, &o, &empty, fail_k, &config);
        let (by_topic, by_target_length) = groups.breakdowns(&o);
        let at = mean_at_k(&o, &req.k);
        let judgements = judgements_from_file(req)
            .then(|| mean_judged(o.iter().filter_map(|q| q.judged.as_ref()), &req.k));
        out.results.push(MethodResult {
            method: c.method.to_string(),
            sparse: c.method.uses_alpha().then_some(c.sparse),
            alpha: c.method.uses_alpha().then_some(c.alpha),
            label: c.label(),
            rerank: c.rerank,
            run_file,
            metrics: mean(&o),
            recall_at: at.iter().map(|a| (a.k, a.recall)).collect(),
            ndcg_at: at.iter().map(|a| (a.k, a.ndcg)).collect(),
            dropped_empty_results: empty.len(),
            failed: fails.len(),
            judgements,
            by_topic,
            by_target_length,
        });
        if Some(i) == head {
            out.head_failed = fails.clone();
            out.head_counts = (o.len(), empty.len());
        }
        out.all_failed.extend(fails);
    }
    out
}

/// The configuration a failure is recorded with: method, fusion, model, corpus.
fn eval_config(
    ctx: &Context,
    req: &RetrievalEval,
    ranked: &Ranked<'_>,
    c: &RunConfig,
) -> EvalConfig {
    EvalConfig {
        method: c.method,
        sparse: c.method.uses_alpha().then_some(c.sparse),
        alpha: c.method.uses_alpha().then_some(c.alpha),
        embedding_model: ranked.model_name.clone().filter(|_| c.method.needs_dense()),
        corpus: match req.variant {
            crate::core::variant::Variant::Full => ctx.workspace.location(),
            v => format!("{} ({})", ctx.workspace.location(), v.paper_name()),
        },
        chunks: ranked.r.chunks.len(),
        depth: req.depth,
    }
}

/// The retriever that ranks for `req`: indexes current, dense vectors present when a
/// method needs them.
async fn open_ranker(ctx: &Context, req: &RetrievalEval) -> Result<Retriever> {
    let dense = req.methods.iter().any(|m| m.needs_dense());
    let r = crate::service::retrieval::open_ranking(ctx, dense, &req.embed, req.variant).await?;
    if dense && !r.has_dense() {
        bail!("no embeddings for this model: run `raglab index`");
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fusion::Scored;

    /// Lists read back from the spill are the lists written: ids (corpus chunks and
    /// others), scores bit for bit, and the order of queries, across blocks.
    #[test]
    fn spill_reads_back_what_it_wrote() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chunks: Vec<crate::core::chunk::Chunk> = Vec::new();
        let by_id: HashMap<String, usize> = HashMap::new();
        let mut ids = spill::Ids::new(&chunks, &by_id);
        let mut sp = spill::Spill::create(dir.path()).expect("spill");
        let l = |n: usize, salt: f64| -> Vec<Scored> {
            (0..n)
                .map(|i| Scored {
                    id: format!("doc-{}", (i * 7) % 11),
                    score: 1.0 / (i as f64 + salt) - 1e-300,
                })
                .collect()
        };
        let written: Vec<(String, QueryLists)> = (0..5)
            .map(|q| {
                (
                    format!("q{q}"),
                    QueryLists::new(l(q, 1.5), l(2 * q, 0.25), l(3, q as f64 + 0.1)),
                )
            })
            .collect();
        for (qid, lists) in &written {
            sp.push(qid, &mut ids, lists).expect("push");
        }
        let mut read = Vec::new();
        sp.for_each_block(&ids, 2, |block| {
            assert!(block.len() <= 2);
            read.extend(block.iter().cloned());
            Ok(())
        })
        .expect("read");
        assert_eq!(read.len(), written.len());
        for ((qa, a), (qb, b)) in read.iter().zip(&written) {
            assert_eq!(qa, qb);
            for (x, y) in [
                (&a.bm25, &b.bm25),
                (&a.tfidf, &b.tfidf),
                (&a.dense, &b.dense),
            ] {
                assert_eq!(x, y);
                assert!(
                    x.iter()
                        .zip(y)
                        .all(|(s, t)| s.score.to_bits() == t.score.to_bits())
                );
            }
        }
        drop(sp);
        assert_eq!(
            std::fs::read_dir(dir.path()).expect("dir").count(),
            0,
            "spill removed"
        );
    }
}
