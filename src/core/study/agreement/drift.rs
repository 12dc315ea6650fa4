//! Agreement over time: Krippendorff's alpha (nominal, every rater) and the pair's
//! Cohen's kappa per window of items in labelling order, so drift or fatigue shows.
//!
//! - Items come in the order the caller gives (the study orders them by their reveal
//!   in the label log: the moment all their reviewers had submitted them).
//! - Windows are consecutive and do not overlap: items 1..w, w+1..2w, ...; the last
//!   window keeps the remainder (its item count is reported with it).
//! - Each window's statistics pool its items' criteria, as Overall does
//!   ([`super::raters`]: the same alpha and kappa, over the window's items only);
//!   undefined (no expected disagreement, or chance agreement 1) stays undefined.

use serde::Serialize;

use super::Bootstrap;
use super::raters::{Ratings, rater_agreement};

/// One window's agreement.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftPoint {
    /// 1-based positions of the window's first and last item in labelling order.
    pub first: usize,
    pub last: usize,
    /// Krippendorff's alpha (nominal) of every rater, pooled over criteria.
    pub alpha: Option<f64>,
    /// Cohen's kappa of the pair, pooled over criteria.
    pub kappa: Option<f64>,
}

/// Agreement per window of `window` items.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Drift {
    pub window: usize,
    /// The pair whose kappa is drawn.
    pub pair: (String, String),
    pub points: Vec<DriftPoint>,
}

/// The raters' labels on items in labelling order: `items[i][criterion][rater]`.
pub type ItemLabels = Vec<Vec<Option<String>>>;

/// Alpha and the pair's kappa per window of `window` items (at least 1) of `items`
/// (in labelling order); `pair` are indices into `raters`.
pub fn drift(
    raters: &[String],
    labels: &[String],
    criteria: &[String],
    items: &[ItemLabels],
    pair: (usize, usize),
    window: usize,
) -> Drift {
    let window = window.max(1);
    let point_only = Bootstrap {
        resamples: 0,
        seed: 0,
    };
    let name = |i: usize| raters.get(i).cloned().unwrap_or_default();
    let points = items
        .chunks(window)
        .enumerate()
        .map(|(w, chunk)| {
            let mut r = Ratings::new(raters.to_vec(), labels.to_vec(), false, criteria.to_vec());
            for item in chunk {
                r.push_item(|c, rater| item.get(c)?.get(rater)?.as_deref());
            }
            let report = rater_agreement(&r, point_only);
            let overall = report.rows.last();
            DriftPoint {
                first: w * window + 1,
                last: w * window + chunk.len(),
                alpha: overall.and_then(|o| o.alpha_nominal.value),
                kappa: overall
                    .and_then(|o| o.pair(&name(pair.0), &name(pair.1)))
                    .and_then(|p| p.kappa.value),
            }
        })
        .collect();
    Drift {
        window,
        pair: (name(pair.0), name(pair.1)),
        points,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(a: &str, b: &str) -> ItemLabels {
        vec![vec![Some(a.to_string()), Some(b.to_string())]]
    }

    #[test]
    fn windows_by_hand() {
        let raters = vec!["x".to_string(), "y".into()];
        let labels = vec!["pass".to_string(), "fail".into()];
        let crit = vec!["c".to_string()];
        // Window 1 (items 1-4): x p p f f, y p p f f: full agreement, kappa = alpha = 1.
        // Window 2 (items 5-8): x p f p f, y p p f f: p_o = 1/2, marginals 1/2 each,
        // p_e = 1/2, kappa = 0. Alpha: o_pp = 2, o_ff = 2, o_pf = o_fp = 2; n_p = n_f
        // = 4, n = 8: alpha = 1 - 7 * 4 / (2 * 4 * 4) = 1/8.
        // Window 3 (item 9): one unit, x p, y p: no expected disagreement, and p_e = 1:
        // both undefined.
        let items = vec![
            item("pass", "pass"),
            item("pass", "pass"),
            item("fail", "fail"),
            item("fail", "fail"),
            item("pass", "pass"),
            item("fail", "pass"),
            item("pass", "fail"),
            item("fail", "fail"),
            item("pass", "pass"),
        ];
        let d = drift(&raters, &labels, &crit, &items, (0, 1), 4);
        assert_eq!(d.pair, ("x".to_string(), "y".to_string()));
        let spans: Vec<(usize, usize)> = d.points.iter().map(|p| (p.first, p.last)).collect();
        assert_eq!(spans, vec![(1, 4), (5, 8), (9, 9)]);
        assert_eq!(d.points[0].kappa, Some(1.0));
        assert_eq!(d.points[0].alpha, Some(1.0));
        assert!(d.points[1].kappa.expect("kappa").abs() < 1e-12);
        assert!((d.points[1].alpha.expect("alpha") - 0.125).abs() < 1e-12);
        assert_eq!((d.points[2].alpha, d.points[2].kappa), (None, None));
    }
}
