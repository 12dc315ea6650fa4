//! The questions' groups that every configuration's breakdowns and failures use: each
//! question's topic and target-length bucket, and its relevant chunks.

use std::collections::HashMap;

use crate::core::metrics::Qrel;
use crate::core::question::{EvalConfig, FailedQuestion, Question};
use crate::core::retrieval::{Breakdown, QueryOutcome, breakdown, failures};
use crate::core::stats::{bucket_label, bucket_of};
use crate::service::retrieval::Retriever;

/// The relevant chunk ids of a question, sorted.
pub(super) fn relevant_ids(qrels: &HashMap<String, Qrel>, qid: &str) -> Vec<String> {
    let mut ids: Vec<String> = qrels
        .get(qid)
        .map(|q| {
            q.iter()
                .filter(|(_, r)| **r > 0)
                .map(|(d, _)| d.clone())
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// What the breakdowns and failures of every configuration need to know about the
/// questions: their topic and target-length bucket.
pub(super) struct Groups<'a> {
    by_id: HashMap<&'a str, &'a Question>,
    topic: HashMap<&'a str, String>,
    length: HashMap<&'a str, String>,
}

impl<'a> Groups<'a> {
    pub(super) fn new(
        r: &Retriever,
        queries: &'a [Question],
        qrels: &HashMap<String, Qrel>,
    ) -> Self {
        let by_id: HashMap<&str, &Question> = queries.iter().map(|q| (q.id.as_str(), q)).collect();
        let topic = queries
            .iter()
            .filter_map(|q| {
                let t = q.topic.clone().or_else(|| {
                    q.relevant
                        .first()
                        .and_then(|d| r.chunk(d))
                        .and_then(|c| c.topic.clone())
                })?;
                Some((q.id.as_str(), t))
            })
            .collect();
        let length = queries
            .iter()
            .filter_map(|q| {
                let words = relevant_ids(qrels, &q.id)
                    .iter()
                    .filter_map(|d| r.chunk(d))
                    .map(|c| c.word_count)
                    .max()?;
                Some((q.id.as_str(), bucket_label(bucket_of(words))))
            })
            .collect();
        Self {
            by_id,
            topic,
            length,
        }
    }

    pub(super) fn breakdowns(&self, outcomes: &[QueryOutcome]) -> (Breakdown, Breakdown) {
        (
            breakdown(outcomes, |q| self.topic.get(q).cloned()),
            breakdown(outcomes, |q| self.length.get(q).cloned()),
        )
    }

    /// The failures at cut-off `fail_k` (with the queries retrieved nothing for,
    /// `empty`), each recorded with the configuration that ranked it.
    pub(super) fn failed(
        &self,
        qrels: &HashMap<String, Qrel>,
        outcomes: &[QueryOutcome],
        empty: &[&str],
        fail_k: usize,
        config: &EvalConfig,
    ) -> Vec<FailedQuestion> {
        failures(outcomes, fail_k)
            .into_iter()
            .map(|o| (o.qid.as_str(), o.metrics.first_relevant_rank))
            .chain(empty.iter().map(|&qid| (qid, None)))
            .filter_map(|(qid, rank)| {
                let q = self.by_id.get(qid)?;
                Some(FailedQuestion {
                    question: Question {
                        relevant: relevant_ids(qrels, qid),
                        topic: self.topic.get(qid).cloned(),
                        ..(*q).clone()
                    },
                    rank,
                    config: Some(config.clone()),
                    target_length: self.length.get(qid).cloned(),
                })
            })
            .collect()
    }
}
