//! The ranked lists of `eval retrieval --shard i/n` (`eval_lists.lance`): one row per
//! query with its dense, BM25 and TF-IDF lists, so the shards of one evaluation meet
//! in the (shared) workspace and `eval retrieval --merge` computes the report over all
//! of them exactly as one process would. Scores are stored as arrow `Float64` and
//! converted by serde_arrow both ways (no decimal text in between), so they come back
//! bit for bit.

use serde::{Deserialize, Serialize};

use super::Result;
use super::records::Table;
use super::workspace::Workspace;
use crate::core::fusion::Scored;
use crate::core::retrieval::QueryLists;

pub const DATASET: &str = "eval_lists.lance";

/// One query's lists as one shard ranked them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListsRow {
    /// The batch the shards share (`--batch`).
    pub batch: String,
    /// The shard that ranked it (`2/4`).
    pub shard: String,
    pub qid: String,
    pub depth: u64,
    /// Chunks in the corpus when it was ranked.
    pub chunks: u64,
    pub embedding_model: Option<String>,
    /// IVF partitions probed when the dense list came from the ANN index.
    pub ann_nprobes: Option<u64>,
    pub dense_ids: Vec<String>,
    pub dense_scores: Vec<f64>,
    pub bm25_ids: Vec<String>,
    pub bm25_scores: Vec<f64>,
    pub tfidf_ids: Vec<String>,
    pub tfidf_scores: Vec<f64>,
    /// When the row was written (RFC 3339).
    pub created: String,
}

fn split(list: &[Scored]) -> (Vec<String>, Vec<f64>) {
    list.iter().map(|s| (s.id.clone(), s.score)).unzip()
}

fn join(ids: &[String], scores: &[f64]) -> Vec<Scored> {
    ids.iter()
        .zip(scores)
        .map(|(id, &score)| Scored {
            id: id.clone(),
            score,
        })
        .collect()
}

impl ListsRow {
    /// Store `lists` in this row (the other fields are the caller's).
    pub fn set_lists(&mut self, lists: &QueryLists) {
        (self.dense_ids, self.dense_scores) = split(&lists.dense);
        (self.bm25_ids, self.bm25_scores) = split(&lists.bm25);
        (self.tfidf_ids, self.tfidf_scores) = split(&lists.tfidf);
    }

    /// The lists again, as [`QueryLists::new`] builds them from a ranking.
    pub fn lists(&self) -> QueryLists {
        QueryLists::new(
            join(&self.bm25_ids, &self.bm25_scores),
            join(&self.tfidf_ids, &self.tfidf_scores),
            join(&self.dense_ids, &self.dense_scores),
        )
    }
}

pub fn table(ws: &Workspace) -> Table<'_> {
    Table::of::<ListsRow>(ws, DATASET)
}

/// Append one shard's rows as one commit.
pub async fn save(ws: &Workspace, rows: &[ListsRow]) -> Result<u64> {
    table(ws).append_exact(rows).await
}

/// Every stored row of `batch`, in commit order.
pub async fn load(ws: &Workspace, batch: &str) -> Result<Vec<ListsRow>> {
    let t = table(ws);
    if !t.exists().await? {
        return Ok(Vec::new());
    }
    Ok(t.read_exact::<ListsRow>()
        .await?
        .into_iter()
        .filter(|r| r.batch == batch)
        .collect())
}
