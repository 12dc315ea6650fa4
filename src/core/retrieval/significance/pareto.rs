//! Which pipelines are worth considering at all: a row is dominated when another row
//! is at least as good on quality, latency and tokens and strictly better on one of
//! them (higher quality, lower latency, fewer tokens). A dominated row is never the
//! one to ship: some other row gives as much for no more.

/// One row's place in the trade-off. A missing figure (None) is not compared: a row
/// without a quality value neither dominates nor is dominated.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParetoPoint {
    pub quality: Option<f64>,
    /// Milliseconds per question (lower is better).
    pub latency: f64,
    /// Tokens per question (lower is better).
    pub tokens: f64,
}

/// For each point, the index of the first point that dominates it (None: on the front).
pub fn dominated_by(points: &[ParetoPoint]) -> Vec<Option<usize>> {
    points
        .iter()
        .map(|r| {
            let rq = r.quality?;
            points.iter().position(|s| {
                let Some(sq) = s.quality else { return false };
                let at_least = sq >= rq && s.latency <= r.latency && s.tokens <= r.tokens;
                let better = sq > rq || s.latency < r.latency || s.tokens < r.tokens;
                at_least && better
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(q: f64, l: f64, t: f64) -> ParetoPoint {
        ParetoPoint {
            quality: Some(q),
            latency: l,
            tokens: t,
        }
    }

    #[test]
    fn a_known_dominated_row_is_marked_and_the_front_is_not() {
        let points = [
            p(0.70, 10.0, 100.0), // 0: front (best quality)
            p(0.60, 5.0, 100.0),  // 1: front (fastest)
            p(0.60, 8.0, 100.0),  // 2: dominated by 1 (same quality, slower)
            p(0.65, 12.0, 120.0), // 3: dominated by 0 (worse on all three)
            p(0.50, 5.0, 50.0),   // 4: front (fewest tokens)
            p(0.70, 10.0, 100.0), // 5: equal to 0: neither dominates the other
            ParetoPoint {
                quality: None,
                latency: 1.0,
                tokens: 1.0,
            }, // 6: no quality: not compared
        ];
        assert_eq!(
            dominated_by(&points),
            vec![None, None, Some(1), Some(0), None, None, None]
        );
    }
}
