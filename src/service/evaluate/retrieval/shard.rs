//! Sharded evaluation: one shard ranks its queries and stores their lists in the
//! workspace; the merge gathers every shard's lists back, checked to be one ranking.

use std::collections::HashMap;
use std::time::Instant;

use anyhow::{Result, bail};

use crate::core::question::Question;
use crate::core::retrieval::QueryLists;
use crate::core::shard::Shard;
use crate::service::base::{Context, Progress};
use crate::store::lists::{self as lists_store, ListsRow};

use super::{RetrievalEval, ShardSummary, open_ranker, rank_all, read_queries};

/// One shard of an evaluation (`--shard i/n`): rank this shard's queries and store
/// their lists in the workspace under `req.batch`, as one commit. No report: the
/// report is `--merge`'s, over every shard's rows.
pub async fn rank_shard(
    ctx: &Context,
    req: &RetrievalEval,
    shard: Shard,
    progress: Progress<'_>,
) -> Result<ShardSummary> {
    let started = Instant::now();
    let (queries, _) = read_queries(req)?;
    let total = queries.len();
    let mine = shard.select(queries, |q| q.id.as_str());
    let r = open_ranker(ctx, req).await?;
    let lists = rank_all(&r, &mine, req, progress).await?;
    let created = crate::service::base::now_rfc3339();
    let rows: Vec<ListsRow> = lists
        .iter()
        .map(|(qid, l)| {
            let mut row = ListsRow {
                batch: req.batch.clone(),
                shard: shard.to_string(),
                qid: qid.clone(),
                depth: req.depth as u64,
                chunks: r.chunks.len() as u64,
                embedding_model: r.model_name.clone(),
                ann_nprobes: req.ann_nprobes.map(|n| n as u64),
                dense_ids: Vec::new(),
                dense_scores: Vec::new(),
                bm25_ids: Vec::new(),
                bm25_scores: Vec::new(),
                tfidf_ids: Vec::new(),
                tfidf_scores: Vec::new(),
                created: created.clone(),
            };
            row.set_lists(l);
            row
        })
        .collect();
    if !rows.is_empty() {
        lists_store::save(&ctx.workspace, &rows).await?;
    }
    Ok(ShardSummary {
        batch: req.batch.clone(),
        shard,
        ranked: rows.len(),
        queries: total,
        dataset: ctx.workspace.uri(lists_store::DATASET),
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The lists every query of the file got from the shards of `req.batch`, in the
/// file's order (as one process ranks them), and the embedding model they used. A
/// query ranked twice (a shard run again) takes its last row. Every query must have
/// lists, and all of them the same depth, corpus size, model and search.
pub(super) async fn gather(
    ctx: &Context,
    req: &RetrievalEval,
    queries: &[Question],
    chunks: usize,
) -> Result<(Vec<(String, QueryLists)>, Option<String>)> {
    let rows = lists_store::load(&ctx.workspace, &req.batch).await?;
    let mut by_qid: HashMap<&str, &ListsRow> = HashMap::new();
    for row in &rows {
        by_qid.insert(row.qid.as_str(), row);
    }
    let missing: Vec<&str> = queries
        .iter()
        .map(|q| q.id.as_str())
        .filter(|id| !by_qid.contains_key(id))
        .collect();
    if !missing.is_empty() {
        return Err(missing_lists(req, queries.len(), &missing, &rows));
    }
    let used: Vec<&ListsRow> = queries.iter().map(|q| by_qid[q.id.as_str()]).collect();
    check_rows(req, &used, chunks)?;
    let model = used.first().and_then(|f| f.embedding_model.clone());
    Ok((
        used.iter().map(|r| (r.qid.clone(), r.lists())).collect(),
        model,
    ))
}

/// The error for queries the shards left without lists: how many, the first, and
/// the shards to run when every stored row came from one shard count.
fn missing_lists(
    req: &RetrievalEval,
    queries: usize,
    missing: &[&str],
    rows: &[ListsRow],
) -> anyhow::Error {
    let counts: std::collections::BTreeSet<u32> = rows
        .iter()
        .filter_map(|r| r.shard.parse::<Shard>().ok())
        .map(Shard::count)
        .collect();
    let shards: std::collections::BTreeSet<String> = match counts.iter().next() {
        Some(&n) if counts.len() == 1 => missing
            .iter()
            .map(|id| format!("{}/{n}", Shard::of(id, n)))
            .collect(),
        _ => std::collections::BTreeSet::new(),
    };
    anyhow::anyhow!(
        "batch `{}`: {} of {} queries have no ranked lists (first: {}){}; run those shards first",
        req.batch,
        missing.len(),
        queries,
        missing[0],
        if shards.is_empty() {
            String::new()
        } else {
            format!(
                ", missing shards {}",
                shards.into_iter().collect::<Vec<_>>().join(", ")
            )
        }
    )
}

/// Every row used was ranked as this merge asks (depth, ANN search), over the corpus
/// as it is now, and with one embedding model.
fn check_rows(req: &RetrievalEval, used: &[&ListsRow], chunks: usize) -> Result<()> {
    let first = used.first().copied();
    let want_ann = req.ann_nprobes.map(|n| n as u64);
    for row in used {
        if row.depth != req.depth as u64 || row.ann_nprobes != want_ann {
            bail!(
                "batch `{}`: query {} was ranked {} deep{}, this merge asks for {} deep{}",
                req.batch,
                row.qid,
                row.depth,
                row.ann_nprobes
                    .map_or(String::new(), |n| format!(" (ANN, nprobes {n})")),
                req.depth,
                want_ann.map_or(String::new(), |n| format!(" (ANN, nprobes {n})")),
            );
        }
        if row.chunks != chunks as u64 {
            bail!(
                "batch `{}`: query {} was ranked over {} chunks, the corpus has {chunks} now: rank the batch again",
                req.batch,
                row.qid,
                row.chunks
            );
        }
        if let Some(f) = first
            && f.embedding_model != row.embedding_model
        {
            bail!(
                "batch `{}` mixes embedding models ({:?} and {:?})",
                req.batch,
                f.embedding_model,
                row.embedding_model
            );
        }
    }
    Ok(())
}
