//! Making a pool: the runs' top-k union per question ([`crate::core::assessment::pool`]),
//! a seeded sample of the pooled questions, stored as one commit of
//! `assess_pool.lance` (the newest pool is in force).

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use anyhow::{Result, bail};

use crate::core::assessment::{self, PooledQuestion};
use crate::service::base::{Context, now_nanos, now_rfc3339, read_questions, read_run};
use crate::store::records::Table;
use crate::store::workspace::Workspace;

/// The pool dataset of a workspace.
pub const POOL: &str = "assess_pool.lance";

pub fn pool_table(ws: &Workspace) -> Table<'_> {
    Table::of::<PooledQuestion>(ws, POOL)
}

/// What to pool.
#[derive(Debug, Clone)]
pub struct PoolRequest {
    /// raglab's questions `{id, text, relevant}`: the questions assessed and their
    /// shipped targets.
    pub queries: PathBuf,
    /// TREC run files (`qid Q0 docid rank score tag`).
    pub runs: Vec<PathBuf>,
    /// Each run's top `depth` is pooled.
    pub depth: usize,
    /// Pool only this many of the pooled questions, chosen with `seed`.
    pub sample: Option<usize>,
    /// Seeds the question sample and the queue order.
    pub seed: u64,
}

/// The pool made.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct PoolMade {
    /// Questions with a pool.
    pub questions: usize,
    /// (question, chunk) pairs pooled.
    pub pairs: usize,
    /// Pooled pairs that are shipped targets (judged already, never queued).
    pub targets: usize,
    /// Questions the runs hold that the questions file does not (not pooled).
    pub unknown_questions: usize,
}

/// Pool the runs and store the pool; every pooled chunk must be in the workspace's
/// corpus (runs of another corpus would queue chunks nobody can read).
pub async fn make_pool(ctx: &Context, req: &PoolRequest) -> Result<PoolMade> {
    if req.depth == 0 {
        bail!("--depth must be at least 1");
    }
    if req.runs.is_empty() {
        bail!("name at least one run file");
    }
    let questions = read_questions(&req.queries)?;
    let runs = req
        .runs
        .iter()
        .map(|p| read_run(p))
        .collect::<Result<Vec<_>>>()?;
    let mut pooled = assessment::pool(&runs, req.depth);
    let known: HashSet<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let before = pooled.len();
    pooled.retain(|q, _| known.contains(q.as_str()));
    let unknown_questions = before - pooled.len();
    let ids: Vec<String> = pooled.keys().cloned().collect();
    let chosen: HashSet<String> = assessment::sample_questions(&ids, req.sample, req.seed)
        .into_iter()
        .collect();
    pooled.retain(|q, _| chosen.contains(q));
    let corpus: HashSet<String> = crate::service::corpus::chunks(ctx)
        .await?
        .into_iter()
        .map(|c| c.id)
        .collect();
    if let Some((q, d)) = pooled
        .iter()
        .find_map(|(q, docs)| docs.iter().find(|d| !corpus.contains(*d)).map(|d| (q, d)))
    {
        bail!(
            "the runs rank chunk `{d}` for question `{q}`, and this workspace's corpus has no such chunk: pool runs of this workspace's corpus (`raglab eval retrieval --run-out DIR` writes them)"
        );
    }
    let (pool, made_at) = (now_nanos(), now_rfc3339());
    let runs: Vec<String> = req.runs.iter().map(|p| p.display().to_string()).collect();
    let mut made = PoolMade {
        questions: pooled.len(),
        pairs: 0,
        targets: 0,
        unknown_questions,
    };
    let rows: Vec<PooledQuestion> = questions
        .into_iter()
        .map(|q| {
            let members: Vec<String> = pooled
                .remove(&q.id)
                .map(|m| m.into_iter().collect())
                .unwrap_or_default();
            let targets: BTreeSet<&String> = q.relevant.iter().collect();
            made.pairs += members.len();
            made.targets += members.iter().filter(|d| targets.contains(d)).count();
            PooledQuestion {
                pool,
                question_id: q.id,
                question: q.text,
                targets: q.relevant,
                members,
                depth: u32::try_from(req.depth).unwrap_or(u32::MAX),
                runs: runs.clone(),
                seed: req.seed,
                made_at: made_at.clone(),
            }
        })
        .collect();
    pool_table(&ctx.workspace).append(&rows).await?;
    Ok(made)
}

/// The pool in force: the rows of the newest pool stored (empty when none was made).
pub(super) async fn pool_in_force(ws: &Workspace) -> Result<Vec<PooledQuestion>> {
    let rows: Vec<PooledQuestion> = pool_table(ws).read_all().await?;
    let newest = rows.last().map(|r| r.pool);
    Ok(rows
        .into_iter()
        .filter(|r| Some(r.pool) == newest)
        .collect())
}
