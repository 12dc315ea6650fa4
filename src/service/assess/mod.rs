//! Relevance assessment: qrels that grow beyond each question's shipped target
//! (the rules are [`crate::core::assessment`]'s).
//!
//! - `make_pool` pools TREC run files (TREC's top-k pooling, as `eval runs` reads
//!   them; `eval retrieval --run-out DIR` writes such files) and stores the pool with
//!   every question of the questions file and its targets (`assess_pool.lance`).
//! - `next_pair` gives an assessor the next pair of their queue: the question and the
//!   chunk, never the run or rank that brought it, the target, or any grade;
//!   `queue_head` the same with the pairs skipped in the TUI's assessment view passed
//!   over, and the count graded.
//! - `grade_chunk` stores one grade (0, 1, 2), signed with the user's study key
//!   (`grades.lance`, append-only; under a study roster only the assessor's own key
//!   is accepted and only rows signed by the key in force count).
//! - `progress` counts each assessor's graded pairs of the pool and the assessors'
//!   agreement over the pairs two of them graded.
//! - `export_qrels` writes the grown qrels: targets at grade 1, every other graded
//!   pair at the median of its assessors' latest grades, rounded down.

mod grades;
mod pool;

pub use grades::{
    AssessProgress, GRADES, Graded, NextPair, QrelsExport, QueueHead, export_qrels, grade_chunk,
    grades_table, next_pair, progress, queue_head,
};
pub use pool::{POOL, PoolMade, PoolRequest, make_pool, pool_table};
