//! The rerank stage: a second scorer reads (question, chunk) pairs for the first N
//! chunks of a first-stage ranking, the N are re-ordered by its score (ties keep the
//! first-stage order) and the first M kept. Seed 002 scores a fused top 10 and keeps
//! 5 (the default here); seed 003 reranks a top 20 and keeps 3.
//!
//! A causal language model scores a pair pointwise: after a prompt that asks whether
//! the passage answers the question, the score is P(yes) = 1 / (1 + exp(l_no - l_yes))
//! from the next-token logits of `yes` and `no` (the monoT5 and Qwen3-Reranker method).
//! Only the difference of the two logits matters, so log-probabilities give the same
//! value as raw logits.
//!
//! Scores are cached under a key of (model, template hash, question, chunk id, chunk
//! text hash): a re-run or an alpha sweep does not pay for a pair twice, and a chunk
//! whose text changed on re-ingest is scored again.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Depth N (chunks scored) and kept M (chunks left) of a rerank stage; M <= N.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RerankCut {
    pub depth: usize,
    pub keep: usize,
}

impl Default for RerankCut {
    /// Seed 002's stage: the top 10 scored, 5 kept.
    fn default() -> Self {
        Self { depth: 10, keep: 5 }
    }
}

impl RerankCut {
    pub fn new(depth: usize, keep: usize) -> Result<Self, String> {
        if depth == 0 || keep == 0 {
            return Err(format!(
                "a rerank stage scores N >= 1 chunks and keeps M >= 1 (got N = {depth}, M = {keep})"
            ));
        }
        if keep > depth {
            return Err(format!(
                "a rerank stage cannot keep more chunks than it scores (N = {depth}, M = {keep})"
            ));
        }
        Ok(Self { depth, keep })
    }

    /// How a configuration label names the stage: `rerank10to5`.
    pub fn label(self) -> String {
        format!("rerank{}to{}", self.depth, self.keep)
    }
}

impl fmt::Display for RerankCut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "top {} reranked, {} kept", self.depth, self.keep)
    }
}

impl FromStr for RerankCut {
    type Err = String;
    /// `N:M` (`10:5`).
    fn from_str(s: &str) -> Result<Self, String> {
        let (n, m) = s
            .split_once(':')
            .ok_or_else(|| format!("`{s}` is not N:M (depth and kept, e.g. 10:5)"))?;
        let parse = |v: &str| {
            v.trim()
                .parse::<usize>()
                .map_err(|_| format!("`{s}` is not N:M (depth and kept, e.g. 10:5)"))
        };
        Self::new(parse(n)?, parse(m)?)
    }
}

/// P(yes) from the next-token logits (or log-probabilities) of `yes` and `no`.
pub fn p_yes(l_yes: f64, l_no: f64) -> f64 {
    1.0 / (1.0 + (l_no - l_yes).exp())
}

/// One chunk after the stage: its rank before and after, and its score.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reranked {
    pub id: String,
    /// Rank in the first-stage ranking, from 1.
    pub first_rank: usize,
    /// Rank after reranking, from 1.
    pub rank: usize,
    pub score: f64,
}

/// Why a scorer's output cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RerankError {
    #[error("the reranker gave {got} scores for {want} chunks")]
    Count { want: usize, got: usize },
    #[error("the reranker gave a score that is not a finite number ({value}) for chunk {index}")]
    NotFinite { index: usize, value: String },
}

/// Re-order the first `cut.depth` ids of `ranked` by `scores` (one per id, in
/// first-stage order), highest first, ties in first-stage order, and keep the first
/// `cut.keep`. A ranking shorter than the depth is reranked whole.
pub fn rerank<S: AsRef<str>>(
    ranked: &[S],
    scores: &[f64],
    cut: RerankCut,
) -> Result<Vec<Reranked>, RerankError> {
    let n = ranked.len().min(cut.depth);
    if scores.len() != n {
        return Err(RerankError::Count {
            want: n,
            got: scores.len(),
        });
    }
    if let Some((index, value)) = scores.iter().enumerate().find(|(_, s)| !s.is_finite()) {
        return Err(RerankError::NotFinite {
            index,
            value: value.to_string(),
        });
    }
    let mut order: Vec<usize> = (0..n).collect();
    // A stable sort keeps equal scores in first-stage order.
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    Ok(order
        .into_iter()
        .take(cut.keep)
        .enumerate()
        .map(|(i, j)| Reranked {
            id: ranked[j].as_ref().to_string(),
            first_rank: j + 1,
            rank: i + 1,
            score: scores[j],
        })
        .collect())
}

/// [`rerank`] with scores looked up by id; ids without a score sort after every
/// scored one, in first-stage order (a ranking is never lost for a missing score).
pub fn rerank_by<'a>(
    ranked: &[&'a str],
    score: impl Fn(&str) -> Option<f64>,
    cut: RerankCut,
) -> Vec<&'a str> {
    let n = ranked.len().min(cut.depth);
    let mut order: Vec<(usize, Option<f64>)> = ranked[..n]
        .iter()
        .enumerate()
        .map(|(i, id)| (i, score(id).filter(|s| s.is_finite())))
        .collect();
    order.sort_by(|a, b| match (a.1, b.1) {
        (Some(x), Some(y)) => y.total_cmp(&x),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    order
        .into_iter()
        .take(cut.keep)
        .map(|(i, _)| ranked[i])
        .collect()
}

/// The cache key of one scored pair.
pub fn cache_key(
    model: &str,
    template_sha256: &str,
    question: &str,
    chunk_id: &str,
    chunk_text: &str,
) -> String {
    let text_sha = Sha256::digest(chunk_text.as_bytes());
    let mut h = Sha256::new();
    for part in [model, template_sha256, question, chunk_id] {
        h.update((part.len() as u64).to_le_bytes());
        h.update(part.as_bytes());
    }
    h.update(text_sha);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reorders_by_score_ties_in_first_stage_order_and_keeps_m() {
        let ranked = ["a", "b", "c", "d", "e", "f"];
        let cut = RerankCut::new(5, 3).expect("cut");
        // f is beyond the depth and never scored; b and d tie.
        let out = rerank(&ranked, &[0.1, 0.7, 0.2, 0.7, 0.9], cut).expect("reranked");
        let ids: Vec<_> = out.iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["e", "b", "d"]);
        assert_eq!(
            out.iter().map(|r| r.first_rank).collect::<Vec<_>>(),
            [5, 2, 4]
        );
        assert_eq!(out.iter().map(|r| r.rank).collect::<Vec<_>>(), [1, 2, 3]);
    }

    #[test]
    fn bad_scores_are_refused() {
        let cut = RerankCut::default();
        assert_eq!(
            rerank(&["a", "b"], &[0.1], cut),
            Err(RerankError::Count { want: 2, got: 1 })
        );
        assert!(matches!(
            rerank(&["a", "b"], &[0.1, f64::NAN], cut),
            Err(RerankError::NotFinite { index: 1, .. })
        ));
    }

    #[test]
    fn lookup_puts_unscored_last_in_first_stage_order() {
        let ranked = ["a", "b", "c", "d"];
        let cut = RerankCut::new(4, 4).expect("cut");
        let scores = |id: &str| match id {
            "c" => Some(0.9),
            "a" => Some(0.2),
            _ => None,
        };
        assert_eq!(rerank_by(&ranked, scores, cut), ["c", "a", "b", "d"]);
    }

    #[test]
    fn p_yes_by_hand() {
        assert!((p_yes(0.0, 0.0) - 0.5).abs() < 1e-12);
        // l_yes - l_no = ln 3: P = 3 / 4.
        assert!((p_yes(3f64.ln(), 0.0) - 0.75).abs() < 1e-12);
        assert!((p_yes(-2.0, 1.0) - 1.0 / (1.0 + 3f64.exp())).abs() < 1e-12);
    }

    #[test]
    fn cuts_parse_and_refuse_nonsense() {
        assert_eq!("20:3".parse::<RerankCut>(), RerankCut::new(20, 3));
        assert!("3:20".parse::<RerankCut>().is_err());
        assert!("0:0".parse::<RerankCut>().is_err());
        assert!("10".parse::<RerankCut>().is_err());
        assert_eq!(RerankCut::default().label(), "rerank10to5");
    }

    #[test]
    fn keys_change_with_every_part() {
        let k = cache_key("m", "t", "q", "c", "text");
        assert_ne!(k, cache_key("m2", "t", "q", "c", "text"));
        assert_ne!(k, cache_key("m", "t2", "q", "c", "text"));
        assert_ne!(k, cache_key("m", "t", "q2", "c", "text"));
        assert_ne!(k, cache_key("m", "t", "q", "c2", "text"));
        assert_ne!(k, cache_key("m", "t", "q", "c", "text2"));
        // Parts are length-prefixed: moving a character across a boundary differs.
        assert_ne!(
            cache_key("ab", "t", "q", "c", "x"),
            cache_key("a", "bt", "q", "c", "x")
        );
    }
}
