//! What an evaluation is asked: the questions and where their judgements come from,
//! the methods, cut-offs and outputs; and the questions read with their judgements.

use std::collections::HashMap;
use std::path::PathBuf;

use anyhow::Result;

use crate::core::metrics::Qrel;
use crate::core::question::Question;
use crate::core::retrieval::{Method, Sparse};
use crate::service::base::{ModelChoice, read_questions};

/// Where the questions and their relevance judgements come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuerySet {
    /// raglab's JSONL questions `{id, text, relevant: [chunk ids], topic?}`; a qrels
    /// file (TREC's `qid 0 docid rel` or BEIR's `query-id corpus-id score`), when
    /// given, overrides their `relevant`.
    Questions {
        file: PathBuf,
        qrels: Option<PathBuf>,
    },
    /// A BEIR folder: the queries of `queries.jsonl` that `qrels/SPLIT.tsv` judges,
    /// with its graded judgements.
    Beir { dir: PathBuf, split: String },
}

/// What to evaluate.
#[derive(Debug, Clone)]
pub struct RetrievalEval {
    pub queries: QuerySet,
    pub methods: Vec<Method>,
    /// The sparse sides hybrid and linear fuse with (each is evaluated).
    pub sparse: Vec<Sparse>,
    /// Sweep alpha over 0.50, 0.55, ..., 0.95 for hybrid and linear instead of using
    /// `alpha`.
    pub alpha_sweep: bool,
    /// The dense weight (flag or config); `None`: each method's default
    /// ([`Method::default_alpha`]: 0.7 for hybrid, equal weights for linear).
    pub alpha: Option<f64>,
    /// Recall and nDCG cutoffs; the largest is the failure cutoff.
    pub k: Vec<usize>,
    /// Write one TREC run file per configuration into this folder.
    pub run_out: Option<PathBuf>,
    /// Write every query's target ranks here (`.csv` or `.jsonl`).
    pub per_query: Option<PathBuf>,
    pub embed: ModelChoice,
    pub depth: usize,
    /// Dense lists from the in-memory IVF ([`crate::store::vectors::VectorSet::ann_search`]), probing this many lists.
    pub ann_nprobes: Option<usize>,
    /// The corpus variant ranked (C_F by default).
    pub variant: crate::core::variant::Variant,
    /// The name under which shards store their ranked lists (`--batch`).
    pub batch: String,
    /// Rank nothing: compute the report from the lists the shards of `batch` stored.
    pub merge: bool,
    /// A rerank stage: every configuration is evaluated as it is and reranked.
    pub rerank: Option<crate::service::retrieval::rerank::RerankSetup>,
    /// Threads of a local rerank model.
    pub rerank_threads: Option<i32>,
}

/// The batch name shards use unless told otherwise.
pub const DEFAULT_BATCH: &str = "retrieval";

/// Read the questions and their relevance judgements (a qrels file wins over the
/// questions' `relevant`).
pub(super) fn read_queries(req: &RetrievalEval) -> Result<(Vec<Question>, HashMap<String, Qrel>)> {
    let (file, qrels_file) = match &req.queries {
        QuerySet::Questions { file, qrels } => (file, qrels),
        QuerySet::Beir { dir, split } => {
            return crate::service::base::beir::read_queries(dir, split);
        }
    };
    let queries = read_questions(file)?;
    let mut qrels: HashMap<String, Qrel> = HashMap::new();
    if let Some(path) = qrels_file {
        qrels = crate::service::base::read_qrels(path)?;
    } else {
        for q in &queries {
            qrels.insert(
                q.id.clone(),
                q.relevant.iter().map(|d| (d.clone(), 1)).collect(),
            );
        }
    }
    Ok((queries, qrels))
}

/// Whether the judgements come from a qrels file (`--qrels` or a BEIR folder): then
/// every configuration is also scored by bpref, Judged@k and Hole@k. Judgements made
/// from the questions' own targets judge nothing beyond them, so these measures are
/// not given.
pub(super) fn judgements_from_file(req: &RetrievalEval) -> bool {
    match &req.queries {
        QuerySet::Questions { qrels, .. } => qrels.is_some(),
        QuerySet::Beir { .. } => true,
    }
}
