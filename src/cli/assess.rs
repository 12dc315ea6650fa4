//! `raglab assess pool|next|grade|progress` and `raglab qrels export`: relevance
//! assessment on pooled runs, and the grown qrels it yields.

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Subcommand;

use crate::service::Context;
use crate::service::assess::{self, PoolRequest};

#[derive(Debug, Subcommand)]
pub enum AssessCmd {
    /// Pool TREC run files (the union of each run's top K per question, TREC-style)
    /// and queue the pooled chunks that are not shipped targets for every assessor,
    /// in one seeded order that hides which run retrieved a chunk and at what rank.
    /// `eval retrieval --run-out DIR` writes such run files. The newest pool is in
    /// force.
    Pool {
        /// raglab's questions JSONL `{id, text, relevant}`: the questions assessed
        /// and their shipped targets (the qrels that `qrels export` grows).
        #[arg(long)]
        queries: PathBuf,
        /// The run files to pool, comma-separated (`qid Q0 docid rank score tag`; each
        /// ranked by score, ties by document id descending, as trec_eval ranks).
        #[arg(long, value_delimiter = ',', required = true)]
        runs: Vec<PathBuf>,
        /// Pool depth K: each run's top K chunks per question are pooled.
        #[arg(long)]
        depth: usize,
        /// Pool only N of the pooled questions, chosen with the seed (default: all).
        #[arg(long)]
        sample: Option<usize>,
        /// Seed of the question sample and of the queue order.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// Print a JSON document (`raglab.assess-pool/1`) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Show the next pair of your queue (`--reviewer NAME`): the question and the
    /// chunk, without the run, the rank, the target or anyone's grade.
    Next {
        /// Print a JSON document (`raglab.assess-next/1`) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Grade CHUNK for QUESTION as `--reviewer NAME`: 0 not relevant, 1 relevant, 2
    /// highly relevant. Signed with your study key and appended (the latest grade of
    /// each assessor counts); a shipped target is not graded.
    Grade {
        /// The question id.
        question: String,
        /// The chunk id.
        chunk: String,
        /// 0 (not relevant), 1 (relevant) or 2 (highly relevant).
        grade: u32,
        /// Print a JSON document (`raglab.assess-grade/1`) instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Per assessor: pooled pairs graded / pooled pairs to grade; and every two
    /// assessors' agreement (raw, Cohen's kappa, linearly weighted kappa) over the
    /// pairs both graded.
    Progress {
        /// Print a JSON document (`raglab.assess-progress/1`) instead of the text.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum QrelsCmd {
    /// Write TREC qrels (`qid 0 docid grade`): the shipped targets of the pool's
    /// questions at grade 1, and every other graded chunk at the median of its
    /// assessors' latest grades, rounded down (1 and 2 give 1; 0 and 1 give 0).
    Export {
        /// Write to FILE (default: standard output).
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// The assessor named by `--reviewer`.
fn assessor(reviewer: Option<&str>) -> Result<&str> {
    match reviewer {
        Some(r) => Ok(r),
        None => bail!("name the assessor with --reviewer NAME"),
    }
}

pub async fn run(ctx: &Context, cmd: AssessCmd, reviewer: Option<&str>) -> Result<()> {
    match cmd {
        AssessCmd::Pool {
            queries,
            runs,
            depth,
            sample,
            seed,
            json,
        } => {
            let req = PoolRequest {
                queries,
                runs,
                depth,
                sample,
                seed,
            };
            pool(ctx, &req, json).await
        }
        AssessCmd::Next { json } => next(ctx, assessor(reviewer)?, json).await,
        AssessCmd::Grade {
            question,
            chunk,
            grade,
            json,
        } => {
            let who = assessor(reviewer)?;
            let done = assess::grade_chunk(ctx, who, &question, &chunk, grade).await?;
            if json {
                #[derive(serde::Serialize)]
                struct GradeDoc<'a> {
                    question_id: &'a str,
                    chunk_id: &'a str,
                    grade: u32,
                    assessor: &'a str,
                    #[serde(flatten)]
                    done: &'a assess::Graded,
                }
                let doc = GradeDoc {
                    question_id: &question,
                    chunk_id: &chunk,
                    grade,
                    assessor: who,
                    done: &done,
                };
                return super::json_schema::print(super::json_schema::ASSESS_GRADE, &doc);
            }
            say!(
                "graded {chunk} for {question}: {grade} (by {who}, key {}); {} left to grade",
                done.key,
                done.remaining
            );
            Ok(())
        }
        AssessCmd::Progress { json } => progress(ctx, json).await,
    }
}

async fn pool(ctx: &Context, req: &PoolRequest, json: bool) -> Result<()> {
    let made = assess::make_pool(ctx, req).await?;
    if json {
        #[derive(serde::Serialize)]
        struct PoolDoc<'a> {
            runs: Vec<String>,
            depth: usize,
            seed: u64,
            sample: Option<usize>,
            #[serde(flatten)]
            made: &'a assess::PoolMade,
            to_grade: usize,
        }
        let doc = PoolDoc {
            runs: req.runs.iter().map(|r| r.display().to_string()).collect(),
            depth: req.depth,
            seed: req.seed,
            sample: req.sample,
            made: &made,
            to_grade: made.pairs - made.targets,
        };
        return super::json_schema::print(super::json_schema::ASSESS_POOL, &doc);
    }
    say!(
        "pooled {} questions at depth {} from {} runs (seed {}): {} pairs, {} of them shipped targets, {} to grade",
        made.questions,
        req.depth,
        req.runs.len(),
        req.seed,
        made.pairs,
        made.targets,
        made.pairs - made.targets
    );
    if made.unknown_questions > 0 {
        tell!(
            "{} questions of the runs are not in {} and were not pooled",
            made.unknown_questions,
            req.queries.display()
        );
    }
    Ok(())
}

async fn next(ctx: &Context, who: &str, json: bool) -> Result<()> {
    let next = assess::next_pair(ctx, who).await?;
    if json {
        #[derive(serde::Serialize)]
        struct NextDoc {
            next: Option<assess::NextPair>,
        }
        return super::json_schema::print(super::json_schema::ASSESS_NEXT, &NextDoc { next });
    }
    let Some(p) = next else {
        say!("nothing left to grade in the pool");
        return Ok(());
    };
    say!("question {}: {}", p.question_id, p.question);
    say!("chunk {} ({} left to grade)", p.chunk_id, p.remaining);
    let path = if p.header_path.is_empty() {
        p.title.clone()
    } else {
        format!("{} > {}", p.title, p.header_path.join(" > "))
    };
    say!("{path}");
    say!();
    for line in p.text.lines() {
        say!("  {line}");
    }
    say!();
    say!(
        "grade it: raglab assess grade {} {} 0|1|2",
        p.question_id,
        p.chunk_id
    );
    Ok(())
}

async fn progress(ctx: &Context, json: bool) -> Result<()> {
    let p = assess::progress(ctx).await?;
    if json {
        return super::json_schema::print(super::json_schema::ASSESS_PROGRESS, &p);
    }
    say!(
        "pool: {} questions, depth {}, seed {}, runs {}",
        p.questions,
        p.depth,
        p.seed,
        p.runs.join(", ")
    );
    if p.assessors.is_empty() {
        say!("no grades yet");
    }
    for a in &p.assessors {
        say!(
            "{}: {} / {} pooled pairs graded ({} grades in all)",
            a.assessor,
            a.graded,
            a.pooled,
            a.all_graded
        );
    }
    let num = |v: Option<f64>| v.map_or_else(|| "undefined".to_string(), |v| format!("{v:.3}"));
    for a in &p.agreement {
        say!(
            "{} vs {}: {} shared pairs, raw agreement {}, kappa {}, linear weighted kappa {}",
            a.first,
            a.second,
            a.pairs,
            num(a.raw),
            num(a.kappa),
            num(a.linear_kappa)
        );
    }
    for r in &p.refused {
        tell!("not counted: {r}");
    }
    Ok(())
}

pub async fn qrels(ctx: &Context, cmd: QrelsCmd) -> Result<()> {
    match cmd {
        QrelsCmd::Export { out } => {
            let done = assess::export_qrels(ctx, out.as_deref()).await?;
            match &out {
                Some(path) => say!(
                    "wrote {}: {} judgements of {} questions ({} from grades, median of the assessors' latest grades rounded down; the rest shipped targets at 1)",
                    path.display(),
                    done.judgements,
                    done.questions,
                    done.graded
                ),
                None => print!("{}", done.text),
            }
        }
    }
    Ok(())
}
