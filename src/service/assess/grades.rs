//! The grade log (`grades.lance`): signed, append-only grades of (question, chunk)
//! pairs; each assessor's queue, progress and agreement; the grown qrels.
//!
//! Blind between assessors: nothing an assessor is shown while assessing ([`NextPair`],
//! [`Graded`]) carries another assessor's grade, and another assessor's grade never
//! takes a pair off their queue. [`progress`] shows counts and agreement statistics
//! over all shared pairs, never a pair's grades; the qrels file that
//! [`export_qrels`] writes holds the combined grades, so under a study roster only the
//! lead's key may write it (the lead sees every grade, as they see every label).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::Path;

use anyhow::{Result, bail};
use serde::Serialize;

use super::pool::pool_in_force;
use crate::core::assessment::{
    self, AssessorAgreement, Grade, MAX_GRADE, PooledQuestion, grade_bytes, grown_qrels, latest,
    qrels_text,
};
use crate::core::signing::{Refusal, short};
use crate::service::base::{Context, now_nanos, now_rfc3339};
use crate::service::study::{labels_table, my_key, roster};
use crate::store::keys;
use crate::store::records::Table;
use crate::store::workspace::Workspace;

/// The grade dataset of a workspace.
pub const GRADES: &str = "grades.lance";

pub fn grades_table(ws: &Workspace) -> Table<'_> {
    Table::of::<Grade>(ws, GRADES)
}

/// The grades that count (checked against the study roster) and those refused.
async fn counted_grades(ctx: &Context) -> Result<(Vec<Grade>, Vec<Refusal>)> {
    let rows: Vec<Grade> = grades_table(&ctx.workspace).read_all().await?;
    let (roster, _) = roster(ctx).await?;
    let checked = assessment::check_grades(rows, &roster, &keys::verify_cached);
    Ok((checked.kept, checked.refused))
}

/// The pool in force, or an error telling how to make one.
async fn pool_or_bail(ctx: &Context) -> Result<Vec<PooledQuestion>> {
    let pool = pool_in_force(&ctx.workspace).await?;
    if pool.is_empty() {
        bail!(
            "no pool in this workspace yet: make one with `raglab assess pool --queries FILE --runs A.trec,B.trec --depth K` (run files from `raglab eval retrieval --run-out DIR`)"
        );
    }
    Ok(pool)
}

fn targets_of(pool: &[PooledQuestion]) -> HashMap<String, HashSet<String>> {
    pool.iter()
        .map(|q| (q.question_id.clone(), q.targets.iter().cloned().collect()))
        .collect()
}

fn members_of(pool: &[PooledQuestion]) -> BTreeMap<String, BTreeSet<String>> {
    pool.iter()
        .filter(|q| !q.members.is_empty())
        .map(|q| (q.question_id.clone(), q.members.iter().cloned().collect()))
        .collect()
}

/// The pairs of `pool` still to grade by `assessor`, in the pool's seeded order.
fn queue_of(
    pool: &[PooledQuestion],
    graded: &BTreeMap<(String, String), BTreeMap<String, u32>>,
    assessor: &str,
) -> Vec<(String, String)> {
    let seed = pool.first().map_or(0, |q| q.seed);
    let order = assessment::seeded_order(&members_of(pool), seed);
    assessment::queue(&order, &targets_of(pool), graded, assessor)
        .into_iter()
        .cloned()
        .collect()
}

/// The next pair of an assessor's queue: what they read to grade it. It holds no
/// run, rank, target or grade (the assessor is blind to all four).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NextPair {
    pub question_id: String,
    pub question: String,
    pub chunk_id: String,
    pub title: String,
    /// The chunk's header path, outermost first.
    pub header_path: Vec<String>,
    pub text: String,
    /// Pairs left in the assessor's queue, this one included.
    pub remaining: usize,
}

/// The next pair `assessor` has to grade in the pool in force (`None`: their queue
/// is empty).
pub async fn next_pair(ctx: &Context, assessor: &str) -> Result<Option<NextPair>> {
    Ok(queue_head(ctx, assessor, &[]).await?.next)
}

/// Where an assessor stands in their queue, as the TUI's assessment view shows it:
/// the pair to grade next and two counts, none of which tells a run, a rank, a target
/// or another assessor's grade.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct QueueHead {
    /// The pair to show (`None`: the queue is empty).
    pub next: Option<NextPair>,
    /// Pool pairs to grade (pooled, not targets) that the assessor has graded, as
    /// [`progress`] counts them.
    pub graded: usize,
}

/// The head of `assessor`'s queue with the pairs in `skipped` passed over: the first
/// pair of the queue not skipped, or, once every pair left was skipped, the queue's
/// first (so skipping never hides a pair for good: a skipped pair stays queued until
/// it is graded). `next_pair` is this with nothing skipped.
pub async fn queue_head(
    ctx: &Context,
    assessor: &str,
    skipped: &[(String, String)],
) -> Result<QueueHead> {
    check_name(assessor)?;
    let pool = pool_or_bail(ctx).await?;
    let (grades, _) = counted_grades(ctx).await?;
    let graded_pairs = latest(&grades);
    let graded = to_grade(&pool)
        .iter()
        .filter(|p| {
            graded_pairs
                .get(*p)
                .is_some_and(|by| by.contains_key(assessor))
        })
        .count();
    let queue = queue_of(&pool, &graded_pairs, assessor);
    let Some((qid, cid)) = queue
        .iter()
        .find(|p| !skipped.contains(*p))
        .or_else(|| queue.first())
    else {
        return Ok(QueueHead { next: None, graded });
    };
    let chunks = crate::service::corpus::chunks(ctx).await?;
    let chunk = crate::service::corpus::find(&chunks, cid)?;
    let question = pool
        .iter()
        .find(|q| &q.question_id == qid)
        .map(|q| q.question.clone())
        .unwrap_or_default();
    let next = NextPair {
        question_id: qid.clone(),
        question,
        chunk_id: cid.clone(),
        title: chunk.title.clone(),
        header_path: chunk.header_path.clone(),
        text: chunk.text.clone(),
        remaining: queue.len(),
    };
    Ok(QueueHead {
        next: Some(next),
        graded,
    })
}

/// The pool's pairs to grade: every pooled (question, chunk) but the shipped targets.
fn to_grade(pool: &[PooledQuestion]) -> HashSet<(String, String)> {
    let targets = targets_of(pool);
    members_of(pool)
        .iter()
        .flat_map(|(q, docs)| docs.iter().map(move |d| (q.clone(), d.clone())))
        .filter(|(q, d)| !targets.get(q).is_some_and(|t| t.contains(d)))
        .collect()
}

fn check_name(assessor: &str) -> Result<()> {
    crate::core::annotation::check_reviewer(assessor).map_err(|e| anyhow::anyhow!("{e}"))
}

/// A grade stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Graded {
    /// The signing key's first hex digits.
    pub key: String,
    /// Pairs left in the assessor's queue.
    pub remaining: usize,
}

/// Store `assessor`'s grade (0, 1 or 2) of `chunk` for `question`, signed with this
/// user's study key. The question must be one of the pool's questions file, the chunk
/// in the corpus and not one of the question's shipped targets (targets are never
/// overwritten). Under a study roster the key must be the one the roster gives
/// `assessor`: a grade signed by another key would be stored only to be left out.
pub async fn grade_chunk(
    ctx: &Context,
    assessor: &str,
    question: &str,
    chunk: &str,
    grade: u32,
) -> Result<Graded> {
    check_name(assessor)?;
    if grade > MAX_GRADE {
        bail!("grade {grade}: give 0 (not relevant), 1 (relevant) or 2 (highly relevant)");
    }
    let pool = pool_or_bail(ctx).await?;
    let Some(q) = pool.iter().find(|q| q.question_id == question) else {
        bail!("no question `{question}` in the pool's questions file");
    };
    if q.targets.iter().any(|t| t == chunk) {
        bail!(
            "chunk `{chunk}` is a shipped target of question `{question}`: targets stay in the qrels at grade 1 and are not graded"
        );
    }
    let chunks = crate::service::corpus::chunks(ctx).await?;
    crate::service::corpus::find(&chunks, chunk)?;
    let key = my_key(ctx)?;
    let (roster, _) = roster(ctx).await?;
    if roster.is_signed() {
        let me = key.public_hex();
        match roster.key_of(assessor) {
            Some(k) if k == me => {}
            Some(k) => bail!(
                "you are not {assessor} on this study's roster: {assessor}'s key is {}, yours is {} (`raglab study key`)",
                short(k),
                short(&me)
            ),
            None => bail!("{assessor} is not on this study's roster: the lead adds them first"),
        }
    }
    let mut row = Grade {
        question_id: question.to_string(),
        chunk_id: chunk.to_string(),
        assessor: assessor.to_string(),
        grade,
        graded_at: now_rfc3339(),
        seq: now_nanos(),
        label_rows: labels_table(&ctx.workspace).count_rows().await?,
        signer: Some(key.public_hex()),
        signature: None,
    };
    row.signature = Some(key.sign_hex(&grade_bytes(&row, roster.binding())));
    grades_table(&ctx.workspace).append(&[row]).await?;
    let (grades, _) = counted_grades(ctx).await?;
    Ok(Graded {
        key: short(&key.public_hex()),
        remaining: queue_of(&pool, &latest(&grades), assessor).len(),
    })
}

/// One assessor's progress on the pool in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AssessorProgress {
    pub assessor: String,
    /// Pool pairs to grade (pooled, not targets) that they have graded.
    pub graded: usize,
    /// Pool pairs to grade.
    pub pooled: usize,
    /// Every pair they have graded, in the pool or not.
    pub all_graded: usize,
}

/// AssessProgress of every assessor with a counted grade, their agreement, and the grade
/// rows refused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AssessProgress {
    pub depth: u32,
    pub runs: Vec<String>,
    pub seed: u64,
    /// Questions with a pool.
    pub questions: usize,
    pub assessors: Vec<AssessorProgress>,
    pub agreement: Vec<AssessorAgreement>,
    pub refused: Vec<Refusal>,
}

/// Each assessor's graded / pooled count on the pool in force, and every two
/// assessors' agreement over the pairs both graded.
pub async fn progress(ctx: &Context) -> Result<AssessProgress> {
    let pool = pool_or_bail(ctx).await?;
    let (grades, refused) = counted_grades(ctx).await?;
    let graded = latest(&grades);
    let members = members_of(&pool);
    let to_grade = to_grade(&pool);
    let names: BTreeSet<&String> = graded.values().flat_map(|by| by.keys()).collect();
    let assessors = names
        .into_iter()
        .map(|name| {
            let mine: Vec<&(String, String)> = graded
                .iter()
                .filter(|(_, by)| by.contains_key(name))
                .map(|(p, _)| p)
                .collect();
            AssessorProgress {
                assessor: name.clone(),
                graded: mine.iter().filter(|p| to_grade.contains(**p)).count(),
                pooled: to_grade.len(),
                all_graded: mine.len(),
            }
        })
        .collect();
    let first = &pool[0];
    Ok(AssessProgress {
        depth: first.depth,
        runs: first.runs.clone(),
        seed: first.seed,
        questions: members.len(),
        assessors,
        agreement: assessment::agreement(&graded),
        refused,
    })
}

/// The grown qrels written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QrelsExport {
    /// The qrels text (`qid 0 docid grade`).
    pub text: String,
    pub questions: usize,
    pub judgements: usize,
    /// Judgements from the assessors' grades (the rest are targets).
    pub graded: usize,
}

/// The grown qrels: the targets of the pool's questions file at grade 1, and every
/// other graded pair at the median of its assessors' latest counted grades, rounded
/// down; written to `out` when given (whole or not at all). Under a study roster it
/// needs the lead's key: the file shows every pair's grades, which an assessor who has
/// not graded a pair must not see.
pub async fn export_qrels(ctx: &Context, out: Option<&Path>) -> Result<QrelsExport> {
    crate::service::study::require_lead(ctx, "qrels export").await?;
    let pool = pool_or_bail(ctx).await?;
    let (grades, _) = counted_grades(ctx).await?;
    let targets: BTreeMap<String, BTreeSet<String>> = pool
        .iter()
        .map(|q| (q.question_id.clone(), q.targets.iter().cloned().collect()))
        .collect();
    let qrels = grown_qrels(&targets, &latest(&grades));
    let text = qrels_text(&qrels);
    if let Some(path) = out {
        crate::service::base::write_whole(path, text.as_bytes())?;
    }
    let judgements = qrels.values().map(BTreeMap::len).sum();
    let target_count: usize = qrels
        .iter()
        .map(|(q, row)| {
            row.keys()
                .filter(|d| targets.get(q).is_some_and(|t| t.contains(*d)))
                .count()
        })
        .sum();
    Ok(QrelsExport {
        text,
        questions: qrels.len(),
        judgements,
        graded: judgements - target_count,
    })
}
