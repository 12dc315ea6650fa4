//! What an analyst compares when a retrieval failed (pure: rank lists in, places and
//! deltas out): where a chunk sits in every list, how the fused rank of the target
//! moves with the dense weight, and how one configuration's ranking differs from a
//! pinned baseline's.

use std::collections::HashMap;

use crate::core::fusion::{Fusion, RRF_C, Scored};
use crate::core::retrieval::{Method, QueryLists, RunConfig};

/// A chunk's 1-based rank and score in one list.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Place {
    pub rank: usize,
    pub score: f64,
}

/// Where one chunk sits in each list of a query, and in the fused list of a
/// configuration. `None`: the list does not hold it (BM25 and TF-IDF hold only chunks
/// that share a term with the question).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Places {
    pub dense: Option<Place>,
    pub bm25: Option<Place>,
    pub tfidf: Option<Place>,
    /// In the configuration's own ranking (its fused list, or its single list).
    pub ranked: Option<Place>,
}

impl Place {
    /// The place of the `i`-th (from 0) item of a list.
    fn at(i: usize, s: &Scored) -> Self {
        Self {
            rank: i + 1,
            score: s.score,
        }
    }
}

fn place_in(list: &[Scored], id: &str) -> Option<Place> {
    list.iter().position(|s| s.id == id).map(|i| Place {
        rank: i + 1,
        score: list[i].score,
    })
}

/// Where a chunk sits in each whole-corpus list of a query (`None`: the list does not
/// hold it).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ListPlaces {
    pub dense: Option<Place>,
    pub bm25: Option<Place>,
    pub tfidf: Option<Place>,
}

/// The whole-corpus places of the chunks a query's view can show: every chunk of its
/// cut lists and its targets. Retrieval computes them for those chunks alone
/// (ranking on demand); a chunk it was not asked about has no known place. Until
/// `placing` is done, only the places each cut list gives its own chunks are known: a
/// chunk a list does not hold is still being placed (or could not be), not absent
/// from the whole list.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct WholePlaces {
    places: HashMap<String, ListPlaces>,
    placing: Placing,
}

/// Whether the places outside the cut lists are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placing {
    /// Every place is known: a chunk without one is not in that list at all.
    #[default]
    Done,
    /// Being ranked.
    Pending,
    /// Ranking them failed: they stay unknown.
    Failed,
}

impl Placing {
    /// How a missing place is shown: `None` when every place is known (the list does
    /// not hold the chunk), else the mark of a place not known.
    pub fn mark(self) -> Option<&'static str> {
        match self {
            Self::Done => None,
            Self::Pending => Some("placing…"),
            Self::Failed => Some("?"),
        }
    }

    /// [`Placing::mark`] where a narrow cell shows it.
    pub fn short_mark(self) -> Option<&'static str> {
        match self {
            Self::Pending => Some("…"),
            other => other.mark(),
        }
    }
}

impl WholePlaces {
    pub fn new(places: HashMap<String, ListPlaces>) -> Self {
        Self {
            places,
            placing: Placing::Done,
        }
    }

    /// The places the cut `lists` give their own chunks, for those chunks and
    /// `extra`; pending until the places outside the lists are ranked.
    pub fn within<S: AsRef<str>>(lists: &QueryLists, extra: &[S]) -> Self {
        let ids: Vec<&str> = lists
            .chunk_ids()
            .chain(extra.iter().map(AsRef::as_ref))
            .collect();
        Self {
            placing: Placing::Pending,
            ..Self::from_full(lists, &ids)
        }
    }

    /// Whether the places outside the cut lists are still being ranked.
    pub fn is_pending(&self) -> bool {
        self.placing == Placing::Pending
    }

    /// The places outside the cut lists will not come (their ranking failed or was
    /// replaced): what is unknown stays unknown.
    pub fn give_up(&mut self) {
        if self.placing == Placing::Pending {
            self.placing = Placing::Failed;
        }
    }

    /// Whether the places outside the cut lists are known.
    pub fn placing(&self) -> Placing {
        self.placing
    }

    /// The places of `ids` read off lists of the whole corpus (every chunk ranked):
    /// the reference ranking on demand must agree with.
    pub fn from_full<S: AsRef<str>>(full: &QueryLists, ids: &[S]) -> Self {
        let ids: Vec<&str> = ids.iter().map(AsRef::as_ref).collect();
        let mut out: HashMap<String, ListPlaces> = ids
            .iter()
            .map(|id| ((*id).to_string(), ListPlaces::default()))
            .collect();
        // One pass over each list, looking each chunk up among the wanted.
        for (i, s) in full.dense.iter().enumerate() {
            if let Some(p) = out.get_mut(s.id.as_str()) {
                p.dense = Some(Place::at(i, s));
            }
        }
        for (i, s) in full.bm25.iter().enumerate() {
            if let Some(p) = out.get_mut(s.id.as_str()) {
                p.bm25 = Some(Place::at(i, s));
            }
        }
        for (i, s) in full.tfidf.iter().enumerate() {
            if let Some(p) = out.get_mut(s.id.as_str()) {
                p.tfidf = Some(Place::at(i, s));
            }
        }
        Self::new(out)
    }

    pub fn get(&self, id: &str) -> Option<&ListPlaces> {
        self.places.get(id)
    }

    pub fn len(&self) -> usize {
        self.places.len()
    }

    pub fn is_empty(&self) -> bool {
        self.places.is_empty()
    }
}

/// Where `id` sits in every whole-corpus list (`whole`: places known wherever the
/// chunk ranks) and in `cfg`'s ranking of `ranked` (the lists cut at the evaluated
/// depth, so the rank is the one an evaluation reports).
pub fn places(whole: &WholePlaces, ranked: &QueryLists, cfg: RunConfig, id: &str) -> Places {
    let lists = ranked;
    let ranked = match cfg.fusion() {
        Some(f) => {
            let c = lists.candidates_with(cfg.sparse);
            c.rank_of(id, f).map(|rank| Place {
                rank,
                score: c.fused_score(id, f).unwrap_or(0.0),
            })
        }
        None => place_in(
            match cfg.method {
                Method::Bm25 => &lists.bm25,
                Method::Tfidf => &lists.tfidf,
                _ => &lists.dense,
            },
            id,
        ),
    };
    let w = whole.get(id).copied().unwrap_or_default();
    Places {
        dense: w.dense,
        bm25: w.bm25,
        tfidf: w.tfidf,
        ranked,
    }
}

/// The dense weights of a per-question alpha curve: 0.00, 0.05, ..., 1.00 (21).
pub fn curve_grid() -> Vec<f64> {
    (0..=20).map(|i| f64::from(i) * 0.05).collect()
}

/// The fusion `cfg`'s method uses at dense weight `alpha`: linear stays linear; every
/// other method is drawn as hybrid RRF (the curve is about fusing, whatever single
/// list is shown).
fn fusion_at(cfg: RunConfig, alpha: f64) -> Fusion {
    match cfg.method {
        Method::Linear => Fusion::MinMax { w: alpha },
        _ => Fusion::Rrf { alpha, c: RRF_C },
    }
}

/// The fused rank of `target` at each weight of `grid`, fusing dense with `cfg`'s
/// sparse side (`None` where neither list holds it).
pub fn alpha_curve(
    lists: &QueryLists,
    cfg: RunConfig,
    target: &str,
    grid: &[f64],
) -> Vec<Option<usize>> {
    let c = lists.candidates_with(cfg.sparse);
    grid.iter()
        .map(|&a| c.rank_of(target, fusion_at(cfg, a)))
        .collect()
}

/// The best point of a curve: the lowest rank, and the first weight that reaches it.
pub fn best_point(grid: &[f64], curve: &[Option<usize>]) -> Option<(f64, usize)> {
    grid.iter()
        .zip(curve)
        .filter_map(|(&a, r)| r.map(|r| (a, r)))
        .min_by(|x, y| x.1.cmp(&y.1).then(x.0.total_cmp(&y.0)))
}

/// How a chunk of the current top k moved against the baseline's ranking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Move {
    Same,
    /// Up by this many places.
    Up(usize),
    /// Down by this many places.
    Down(usize),
    /// Not in the baseline's top k (its baseline rank, if ranked at all).
    New(Option<usize>),
}

/// The current top k against a baseline ranking: one move per current row, and the
/// baseline's top-k chunks that left the top k (with their rank now, if any).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Comparison {
    pub moves: Vec<Move>,
    pub dropped: Vec<(String, usize, Option<usize>)>,
}

/// Compare the top `k` of `current` with the top `k` of `baseline` (both ranked ids).
pub fn compare<S: AsRef<str>, T: AsRef<str>>(
    current: &[S],
    baseline: &[T],
    k: usize,
) -> Comparison {
    let pos = |list: &[&str], id: &str| list.iter().position(|x| *x == id).map(|i| i + 1);
    let cur: Vec<&str> = current.iter().map(AsRef::as_ref).collect();
    let base: Vec<&str> = baseline.iter().map(AsRef::as_ref).collect();
    let moves = cur
        .iter()
        .take(k)
        .enumerate()
        .map(|(i, id)| {
            let now = i + 1;
            match pos(&base, id) {
                Some(b) if b <= k => match b.cmp(&now) {
                    std::cmp::Ordering::Equal => Move::Same,
                    std::cmp::Ordering::Greater => Move::Up(b - now),
                    std::cmp::Ordering::Less => Move::Down(now - b),
                },
                other => Move::New(other),
            }
        })
        .collect();
    let dropped = base
        .iter()
        .take(k)
        .enumerate()
        .filter_map(|(i, id)| match pos(&cur, id) {
            Some(n) if n <= k => None,
            now => Some((id.to_string(), i + 1, now)),
        })
        .collect();
    Comparison { moves, dropped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(ids: &[(&str, f64)]) -> Vec<Scored> {
        ids.iter()
            .map(|(id, s)| Scored {
                id: id.to_string(),
                score: *s,
            })
            .collect()
    }

    /// Dense a, b, c, t; BM25 t, x. By hand, RRF with c = 60 at dense weight w:
    /// t = w/64 + (1-w)/61, a = w/61, b = w/62, c = w/63, x = (1-w)/62. t beats a
    /// while (1-w)·64 > 3w, i.e. w < 64/67 = 0.9552; at w = 1, t is 4th.
    #[test]
    fn alpha_curve_matches_the_formula_by_hand() {
        let lists = QueryLists::new(
            list(&[("t", 9.0), ("x", 3.0)]),
            list(&[("t", 0.9), ("x", 0.2)]),
            list(&[("a", 0.9), ("b", 0.8), ("c", 0.7), ("t", 0.6)]),
        );
        let cfg = RunConfig::new(Method::Hybrid, crate::core::retrieval::Sparse::Bm25, 0.7);
        let grid = curve_grid();
        assert_eq!(grid.len(), 21);
        let curve = alpha_curve(&lists, cfg, "t", &grid);
        assert_eq!(curve[0], Some(1));
        assert_eq!(curve[20], Some(4));
        // 0.50: t = 0.5/64 + 0.5/61 = 0.016009 > a = 0.5/61 = 0.008197.
        assert_eq!(curve[10], Some(1));
        assert_eq!(curve[19], Some(1), "0.95 < 0.9552");
        assert_eq!(best_point(&grid, &curve), Some((0.0, 1)));
        assert_eq!(alpha_curve(&lists, cfg, "nowhere", &grid)[0], None);
        let whole = WholePlaces::from_full(&lists, &["t", "x"]);
        let p = places(&whole, &lists, cfg, "t");
        assert_eq!(
            p.dense,
            Some(Place {
                rank: 4,
                score: 0.6
            })
        );
        assert_eq!(
            p.bm25,
            Some(Place {
                rank: 1,
                score: 9.0
            })
        );
        let r = p.ranked.expect("ranked");
        assert_eq!(r.rank, 1);
        assert!((r.score - (0.7 / 64.0 + 0.3 / 61.0)).abs() < 1e-12);
        let bm25 = places(&whole, &lists, RunConfig::single(Method::Bm25), "x");
        assert_eq!(
            bm25.ranked,
            Some(Place {
                rank: 2,
                score: 3.0
            })
        );
        assert_eq!(bm25.dense, None);
        // Cut at depth 3, t (dense #4) keeps only its BM25 term: at w = 1 it scores 0,
        // tied with x and behind a, b, c; ties break by id descending, so x, then t.
        let cut = lists.truncated(3);
        assert_eq!(alpha_curve(&cut, cfg, "t", &[1.0]), [Some(5)]);
        let p = places(&whole, &cut, cfg, "t");
        assert_eq!(p.dense.map(|p| p.rank), Some(4), "rank from the full list");
        let r = p.ranked.expect("ranked");
        // At w = 0.7: a, b, c = 0.7/61, 0.7/62, 0.7/63 > t = 0.3/61 > x = 0.3/62.
        assert_eq!(r.rank, 4);
        assert!(
            (r.score - 0.3 / 61.0).abs() < 1e-12,
            "no dense term when cut: {}",
            r.score
        );
    }

    #[test]
    fn comparison_names_moves_new_and_dropped() {
        let base = ["a", "b", "c", "d", "e"];
        let now = ["b", "a", "e", "x", "c", "d"];
        let c = compare(&now, &base, 4);
        assert_eq!(
            c.moves,
            vec![
                Move::Up(1),
                Move::Down(1),
                Move::New(Some(5)),
                Move::New(None)
            ]
        );
        // c (#3) is now #5, d (#4) now #6: both left the top 4.
        assert_eq!(
            c.dropped,
            vec![("c".to_string(), 3, Some(5)), ("d".to_string(), 4, Some(6))]
        );
        let same = compare(&base, &base, 5);
        assert!(same.moves.iter().all(|m| *m == Move::Same) && same.dropped.is_empty());
    }
}
