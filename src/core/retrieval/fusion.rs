//! Rank fusion of a dense and a sparse result list.
//!
//! Weighted reciprocal rank fusion, for a document d:
//!
//! ```text
//! R(d; a) = a / (c + r_dense(d)) + (1 - a) / (c + r_sparse(d)),   ranks from 1, c = 60
//! ```
//!
//! A document missing from one list contributes 0 for that list. Higher `a` puts more
//! weight on the dense list. (Engines differ: Qdrant's "weighted RRF" is another
//! formula.) Also min-max linear fusion: each list's scores scaled to [0, 1], then
//! `w * dense + (1 - w) * sparse`, missing = 0.
//!
//! [`Candidates`] is built once per query from the two rank lists; fusing for another
//! `a` only re-scores that table, so an alpha sweep never re-runs a retriever.
//! Ties in fused score break by chunk id descending, as trec_eval would order them.

use std::collections::HashMap;

use serde::Serialize;

/// The RRF constant c.
pub const RRF_C: f64 = 60.0;

/// The alpha grid of a sweep: 0.50, 0.55, ..., 0.95.
pub fn alpha_grid() -> Vec<f64> {
    (0..10).map(|i| 0.5 + 0.05 * f64::from(i)).collect()
}

/// One retrieved item of a single list, best first.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Scored {
    pub id: String,
    pub score: f64,
}

/// A fused result with its provenance in both lists.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FusedHit {
    pub id: String,
    pub dense_rank: Option<usize>,
    pub dense_score: Option<f64>,
    pub sparse_rank: Option<usize>,
    pub sparse_score: Option<f64>,
    pub fused: f64,
}

impl FusedHit {
    /// A hit not (yet) placed in either list.
    pub fn unranked(id: &str) -> Self {
        Self {
            id: id.to_string(),
            dense_rank: None,
            dense_score: None,
            sparse_rank: None,
            sparse_score: None,
            fused: 0.0,
        }
    }
}

/// How to combine the lists.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Fusion {
    /// Weighted RRF with weight `alpha` on dense and constant `c`.
    Rrf { alpha: f64, c: f64 },
    /// Min-max normalised linear fusion with weight `w` on dense.
    MinMax { w: f64 },
}

/// The union of two rank lists, each entry with its rank and score in either list.
#[derive(Debug, Clone, Default)]
pub struct Candidates {
    rows: Vec<FusedHit>,
    dense_range: (f64, f64),
    sparse_range: (f64, f64),
}

fn range(list: &[Scored]) -> (f64, f64) {
    list.iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), s| {
            (lo.min(s.score), hi.max(s.score))
        })
}

impl Candidates {
    /// `dense` and `sparse` are ordered best first; ranks are positions from 1.
    pub fn new(dense: &[Scored], sparse: &[Scored]) -> Self {
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut rows: Vec<FusedHit> = Vec::with_capacity(dense.len() + sparse.len());
        for (list, is_dense) in [(dense, true), (sparse, false)] {
            for (i, s) in list.iter().enumerate() {
                let row = *index.entry(s.id.as_str()).or_insert_with(|| {
                    rows.push(FusedHit::unranked(&s.id));
                    rows.len() - 1
                });
                let r = &mut rows[row];
                // Only the first occurrence counts if a list repeats an id.
                if is_dense && r.dense_rank.is_none() {
                    r.dense_rank = Some(i + 1);
                    r.dense_score = Some(s.score);
                } else if !is_dense && r.sparse_rank.is_none() {
                    r.sparse_rank = Some(i + 1);
                    r.sparse_score = Some(s.score);
                }
            }
        }
        Self {
            rows,
            dense_range: range(dense),
            sparse_range: range(sparse),
        }
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Fused score of one row.
    fn score(&self, r: &FusedHit, fusion: Fusion) -> f64 {
        match fusion {
            Fusion::Rrf { alpha, c } => {
                let d = r.dense_rank.map_or(0.0, |k| alpha / (c + k as f64));
                let s = r
                    .sparse_rank
                    .map_or(0.0, |k| (1.0 - alpha) / (c + k as f64));
                d + s
            }
            Fusion::MinMax { w } => {
                let norm = |v: Option<f64>, (lo, hi): (f64, f64)| {
                    v.map_or(0.0, |v| if hi > lo { (v - lo) / (hi - lo) } else { 1.0 })
                };
                w * norm(r.dense_score, self.dense_range)
                    + (1.0 - w) * norm(r.sparse_score, self.sparse_range)
            }
        }
    }

    /// The fused ranking (all candidates), best first.
    pub fn fuse(&self, fusion: Fusion) -> Vec<FusedHit> {
        let mut out: Vec<FusedHit> = self
            .rows
            .iter()
            .map(|r| FusedHit {
                fused: self.score(r, fusion),
                ..r.clone()
            })
            .collect();
        out.sort_by(|a, b| b.fused.total_cmp(&a.fused).then_with(|| b.id.cmp(&a.id)));
        out
    }

    /// The fused score of `id` (`None` when neither list holds it).
    pub fn fused_score(&self, id: &str, fusion: Fusion) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.id == id)
            .map(|r| self.score(r, fusion))
    }

    /// The 1-based place of `id` in [`Candidates::fuse`]'s order, without sorting:
    /// one pass counting the rows that sort before it (higher score, or an equal score
    /// and a greater id). `None` when `id` is in neither list. Cheap enough to draw a
    /// whole alpha curve on every key press over tens of thousands of candidates.
    pub fn rank_of(&self, id: &str, fusion: Fusion) -> Option<usize> {
        let target = self.rows.iter().find(|r| r.id == id)?;
        let t = self.score(target, fusion);
        let ahead = self
            .rows
            .iter()
            .filter(|r| {
                let s = self.score(r, fusion);
                s.total_cmp(&t).then_with(|| r.id.as_str().cmp(id)).is_gt()
            })
            .count();
        Some(ahead + 1)
    }

    /// Only the ids of the fused ranking, cheaper for sweeps.
    pub fn fused_ids(&self, fusion: Fusion) -> Vec<&str> {
        let mut scored: Vec<(f64, &str)> = self
            .rows
            .iter()
            .map(|r| (self.score(r, fusion), r.id.as_str()))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(a.1)));
        scored.into_iter().map(|(_, id)| id).collect()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn list(ids: &[&str]) -> Vec<Scored> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Scored {
                id: (*id).into(),
                score: 10.0 - i as f64,
            })
            .collect()
    }

    #[test]
    fn rrf_matches_the_formula_by_hand() {
        let c = Candidates::new(&list(&["a", "b", "c"]), &list(&["c", "a", "d"]));
        let hits = c.fuse(Fusion::Rrf {
            alpha: 0.7,
            c: 60.0,
        });
        let get = |id: &str| hits.iter().find(|h| h.id == id).expect("hit").clone();
        // a: dense 1, sparse 2
        assert!((get("a").fused - (0.7 / 61.0 + 0.3 / 62.0)).abs() < 1e-15);
        // b: dense 2 only; d: sparse 3 only -> contributes 0 for the missing list
        assert!((get("b").fused - 0.7 / 62.0).abs() < 1e-15);
        assert!((get("d").fused - 0.3 / 63.0).abs() < 1e-15);
        assert_eq!(get("d").dense_rank, None);
        assert_eq!(get("c").dense_rank, Some(3));
        assert_eq!(get("c").sparse_rank, Some(1));
        assert_eq!(hits[0].id, "a");
        let ids: Vec<_> = hits.iter().map(|h| h.id.as_str()).collect();
        assert_eq!(ids, vec!["a", "c", "b", "d"]);
    }

    #[test]
    fn alpha_extremes_reproduce_single_lists() {
        let dense = list(&["a", "b", "c"]);
        let sparse = list(&["c", "b", "a"]);
        let c = Candidates::new(&dense, &sparse);
        assert_eq!(
            c.fused_ids(Fusion::Rrf {
                alpha: 1.0,
                c: 60.0
            }),
            vec!["a", "b", "c"]
        );
        assert_eq!(
            c.fused_ids(Fusion::Rrf {
                alpha: 0.0,
                c: 60.0
            }),
            vec!["c", "b", "a"]
        );
    }

    #[test]
    fn ties_break_by_id_descending() {
        let c = Candidates::new(&list(&["a", "b"]), &list(&["b", "a"]));
        assert_eq!(
            c.fused_ids(Fusion::Rrf {
                alpha: 0.5,
                c: 60.0
            }),
            vec!["b", "a"]
        );
    }

    #[test]
    fn minmax_normalises_each_list() {
        let dense = vec![
            Scored {
                id: "a".into(),
                score: 0.9,
            },
            Scored {
                id: "b".into(),
                score: 0.5,
            },
        ];
        let sparse = vec![
            Scored {
                id: "b".into(),
                score: 12.0,
            },
            Scored {
                id: "c".into(),
                score: 2.0,
            },
        ];
        let hits = Candidates::new(&dense, &sparse).fuse(Fusion::MinMax { w: 0.5 });
        let get = |id: &str| hits.iter().find(|h| h.id == id).expect("hit").fused;
        assert!((get("a") - 0.5).abs() < 1e-15);
        assert!((get("b") - 0.5).abs() < 1e-15);
        assert!(get("c").abs() < 1e-15);
    }

    #[test]
    fn grid_is_the_spec_grid() {
        let g = alpha_grid();
        assert_eq!(g.len(), 10);
        assert!((g[0] - 0.5).abs() < 1e-12 && (g[9] - 0.95).abs() < 1e-12);
    }

    proptest! {
        /// Fusion keeps every candidate once, sorted by fused score, and a document
        /// ranked first in both lists is first after fusion for every alpha.
        #[test]
        fn fusion_invariants(n in 1usize..30, perm in prop::collection::vec(0usize..1000, 1..30), alpha in 0.0f64..=1.0) {
            let ids: Vec<String> = (0..n).map(|i| format!("d{i}")).collect();
            let dense: Vec<Scored> = ids.iter().enumerate().map(|(i, id)| Scored { id: id.clone(), score: -(i as f64) }).collect();
            let mut order: Vec<usize> = (1..n).collect();
            order.sort_by_key(|i| perm[i % perm.len()].wrapping_mul(*i + 7) % 1009);
            let sparse: Vec<Scored> = std::iter::once(0).chain(order).map(|i| Scored { id: ids[i].clone(), score: 0.0 }).collect();
            let hits = Candidates::new(&dense, &sparse).fuse(Fusion::Rrf { alpha, c: RRF_C });
            prop_assert_eq!(hits.len(), n);
            prop_assert!(hits.windows(2).all(|w| w[0].fused >= w[1].fused));
            prop_assert_eq!(&hits[0].id, "d0");
        }

        /// `rank_of` is the position in the sorted fusion, for either fusion and with
        /// ties (many equal sparse scores), for every id of both lists.
        #[test]
        fn rank_of_is_the_position_in_the_fused_order(
            d in prop::collection::vec(0u8..6, 1..25),
            s in prop::collection::vec(0u8..6, 0..25),
            alpha in 0.0f64..=1.0,
        ) {
            let dense: Vec<Scored> = d.iter().enumerate().map(|(i, v)| Scored { id: format!("x{}", (i * 7) % 31), score: f64::from(*v) }).collect();
            let sparse: Vec<Scored> = s.iter().enumerate().map(|(i, v)| Scored { id: format!("x{}", (i * 5 + 3) % 31), score: f64::from(*v) }).collect();
            let c = Candidates::new(&dense, &sparse);
            for fusion in [Fusion::Rrf { alpha, c: RRF_C }, Fusion::MinMax { w: alpha }] {
                let order = c.fused_ids(fusion);
                for (i, id) in order.iter().enumerate() {
                    prop_assert_eq!(c.rank_of(id, fusion), Some(i + 1));
                }
                prop_assert_eq!(c.rank_of("absent", fusion), None);
            }
        }
    }
}
