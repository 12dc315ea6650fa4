//! Which conclusions of a comparison changed between two comparisons of the same
//! configurations: the same runs judged on other qrels (after relevance assessment
//! grew them), or scored again. A conclusion is, per (metric, baseline, candidate),
//! which side leads (the sign of the mean difference; equal means is a tie) and
//! whether the lead is significant (Holm-adjusted randomisation p below 0.05). A row
//! whose lead changes, or which gains or loses significance, is a changed conclusion:
//! the analyst's "hybrid beats BM25 on P@1" may not survive the grown qrels.

use serde::Serialize;

use crate::core::significance::ComparisonRow;

/// The significance level a conclusion is drawn at (Holm-adjusted randomisation p).
pub const LEVEL: f64 = 0.05;

/// Which side of a comparison leads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lead {
    Candidate,
    Baseline,
    Tie,
}

impl Lead {
    fn of(difference: f64) -> Self {
        if difference > 0.0 {
            Self::Candidate
        } else if difference < 0.0 {
            Self::Baseline
        } else {
            Self::Tie
        }
    }
}

/// One conclusion as it was and as it is.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConclusionChange {
    pub metric: String,
    pub baseline: String,
    pub candidate: String,
    pub lead_before: Lead,
    pub lead_after: Lead,
    pub difference_before: f64,
    pub difference_after: f64,
    pub p_holm_before: f64,
    pub p_holm_after: f64,
    /// What changed: `lead`, `lost significance`, `became significant` (a lead change
    /// and a significance change are both named, `lead; lost significance`).
    pub change: String,
}

/// The changed conclusions, and how many rows of `after` found their row in
/// `before` (a row is matched by metric and the two configurations, either way round:
/// a swapped pair's difference is negated).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConclusionsChanged {
    /// What the earlier comparison was (a file name).
    pub before: String,
    pub level: f64,
    pub matched: usize,
    pub unmatched: usize,
    pub changes: Vec<ConclusionChange>,
}

/// Compare the conclusions of `after` with those of `before`.
pub fn changed_conclusions(
    before_name: &str,
    before: &[ComparisonRow],
    after: &[ComparisonRow],
) -> ConclusionsChanged {
    let mut out = ConclusionsChanged {
        before: before_name.to_string(),
        level: LEVEL,
        matched: 0,
        unmatched: 0,
        changes: Vec::new(),
    };
    for a in after {
        let found = before.iter().find_map(|b| {
            if b.metric != a.metric {
                return None;
            }
            if b.baseline == a.baseline && b.candidate == a.candidate {
                Some((b.result.difference, b.result.randomisation_p_holm))
            } else if b.baseline == a.candidate && b.candidate == a.baseline {
                Some((-b.result.difference, b.result.randomisation_p_holm))
            } else {
                None
            }
        });
        let Some((diff_before, p_before)) = found else {
            out.unmatched += 1;
            continue;
        };
        out.matched += 1;
        let (diff_after, p_after) = (a.result.difference, a.result.randomisation_p_holm);
        let (lead_before, lead_after) = (Lead::of(diff_before), Lead::of(diff_after));
        let mut what = Vec::new();
        if lead_before != lead_after {
            what.push("lead");
        }
        match (p_before < LEVEL, p_after < LEVEL) {
            (true, false) => what.push("lost significance"),
            (false, true) => what.push("became significant"),
            _ => {}
        }
        if !what.is_empty() {
            out.changes.push(ConclusionChange {
                metric: a.metric.clone(),
                baseline: a.baseline.clone(),
                candidate: a.candidate.clone(),
                lead_before,
                lead_after,
                difference_before: diff_before,
                difference_after: diff_after,
                p_holm_before: p_before,
                p_holm_after: p_after,
                change: what.join("; "),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::significance::{PairedComparison, WinsTiesLosses};

    fn row(metric: &str, base: &str, cand: &str, diff: f64, p: f64) -> ComparisonRow {
        ComparisonRow {
            metric: metric.into(),
            baseline: base.into(),
            candidate: cand.into(),
            result: PairedComparison {
                queries: 10,
                baseline_mean: 0.5,
                candidate_mean: 0.5 + diff,
                difference: diff,
                ci: None,
                record: WinsTiesLosses::default(),
                randomisation_p: p,
                t_test: None,
                randomisation_p_holm: p,
                t_test_p_holm: None,
            },
            clustered: None,
        }
    }

    #[test]
    fn flips_and_significance_changes_are_named_and_the_rest_is_quiet() {
        let before = [
            row("P@1", "bm25", "hybrid", 0.05, 0.01),
            row("MRR", "bm25", "hybrid", 0.02, 0.30),
            row("nDCG@10", "bm25", "hybrid", 0.03, 0.20),
            row("P@1", "bm25", "dense", -0.04, 0.02),
        ];
        let after = [
            // Lead kept, significance lost.
            row("P@1", "bm25", "hybrid", 0.01, 0.40),
            // Lead flipped, both not significant.
            row("MRR", "bm25", "hybrid", -0.01, 0.60),
            // Unchanged.
            row("nDCG@10", "bm25", "hybrid", 0.04, 0.10),
            // The same pair the other way round: dense - bm25 was -0.04, so bm25 -
            // dense was +0.04; now +0.04 and still significant: unchanged.
            row("P@1", "dense", "bm25", 0.04, 0.01),
            // A row the earlier comparison did not have.
            row("P@1", "bm25", "tfidf", 0.0, 1.0),
        ];
        let c = changed_conclusions("before.json", &before, &after);
        assert_eq!((c.matched, c.unmatched), (4, 1));
        let named: Vec<(&str, &str)> = c
            .changes
            .iter()
            .map(|x| (x.metric.as_str(), x.change.as_str()))
            .collect();
        assert_eq!(named, vec![("P@1", "lost significance"), ("MRR", "lead")]);
        assert_eq!(c.changes[1].lead_before, Lead::Candidate);
        assert_eq!(c.changes[1].lead_after, Lead::Baseline);
    }
}
