//! Abstention: when no chunk reaches a minimum dense similarity,
//! the system answers that it found no relevant guidance instead of generating from
//! irrelevant context.
//!
//! The signal is the best cosine similarity of the dense list: cosine is on a fixed
//! scale across queries, while BM25 scores and fused RRF scores are not. Choosing the
//! threshold needs two question sets, one the corpus can answer and one it cannot;
//! [`sweep`] reports, per threshold, how often each set would abstain.

use serde::Serialize;

/// The answer given instead of generating.
pub const ABSTAIN_ANSWER: &str = "I could not find relevant guidance for this question in the indexed documents, so I cannot answer it from them.";

/// Whether to abstain: the best dense similarity is below `threshold`. Without a
/// dense list there is no similarity to judge, and the caller must not ask.
pub fn abstains(best_cosine: f64, threshold: f64) -> bool {
    best_cosine < threshold
}

/// One threshold of a sweep.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    pub threshold: f64,
    /// Share of answerable questions that would abstain (wrongly).
    pub answerable_abstain: f64,
    /// Share of unanswerable questions that would abstain (rightly).
    pub unanswerable_abstain: f64,
    /// Youden's J = unanswerable_abstain - answerable_abstain.
    pub j: f64,
}

/// Abstention rates per threshold from the best cosine of each question.
pub fn sweep(answerable: &[f64], unanswerable: &[f64], thresholds: &[f64]) -> Vec<SweepRow> {
    let share = |v: &[f64], t: f64| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().filter(|&&c| abstains(c, t)).count() as f64 / v.len() as f64
        }
    };
    thresholds
        .iter()
        .map(|&t| {
            let a = share(answerable, t);
            let u = share(unanswerable, t);
            SweepRow {
                threshold: t,
                answerable_abstain: a,
                unanswerable_abstain: u,
                j: u - a,
            }
        })
        .collect()
}

/// The row with the largest J (the lowest threshold among ties).
pub fn best(rows: &[SweepRow]) -> Option<&SweepRow> {
    rows.iter()
        .fold(None, |acc: Option<&SweepRow>, r| match acc {
            Some(b) if b.j >= r.j => Some(b),
            _ => Some(r),
        })
}

/// Thresholds `from, from + step, ..., <= to` without float drift.
pub fn grid(from: f64, to: f64, step: f64) -> Vec<f64> {
    if step <= 0.0 || to < from {
        return vec![from];
    }
    let n = ((to - from) / step + 1e-9).floor() as usize;
    (0..=n)
        .map(|i| ((from + i as f64 * step) * 1e6).round() / 1e6)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strictly_below_the_threshold_abstains() {
        assert!(abstains(0.29, 0.3));
        assert!(!abstains(0.3, 0.3));
    }

    #[test]
    fn sweep_by_hand() {
        let answerable = [0.9, 0.6, 0.4, 0.35];
        let unanswerable = [0.1, 0.2, 0.45];
        let rows = sweep(&answerable, &unanswerable, &[0.3, 0.5]);
        // t = 0.3: no answerable below, 2 of 3 unanswerable below.
        assert_eq!(rows[0].answerable_abstain, 0.0);
        assert!((rows[0].unanswerable_abstain - 2.0 / 3.0).abs() < 1e-12);
        // t = 0.5: 0.4 and 0.35 of 4 answerable; all 3 unanswerable.
        assert_eq!(rows[1].answerable_abstain, 0.5);
        assert_eq!(rows[1].unanswerable_abstain, 1.0);
        assert!((rows[1].j - 0.5).abs() < 1e-12);
        assert_eq!(best(&rows).map(|r| r.threshold), Some(0.3));
        assert!(best(&[]).is_none());
    }

    #[test]
    fn grid_has_no_drift() {
        let g = grid(0.05, 0.95, 0.05);
        assert_eq!(g.len(), 19);
        assert_eq!(g[2], 0.15);
        assert_eq!(g.last(), Some(&0.95));
    }
}
