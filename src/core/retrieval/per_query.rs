//! Where each query's targets sit in every rank list (the rank of the target under
//! the dense, sparse and fused lists): the rows of `eval retrieval --per-query`.

use std::collections::HashMap;

use serde::Serialize;

use crate::core::metrics::Qrel;
use crate::core::retrieval::{QueryLists, RunConfig};

/// A target's 1-based rank and score in one list (both `None`: not retrieved).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TargetPlace {
    pub rank: Option<usize>,
    pub score: Option<f64>,
}

/// One target of a query, placed in every list of the table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TargetPlaces {
    pub id: String,
    /// In the order of [`PerQueryTable::lists`].
    pub places: Vec<TargetPlace>,
}

/// One query: the first chunk of every list, and where each target sits in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerQueryRow {
    pub qid: String,
    /// In the order of [`PerQueryTable::lists`]; `None` for an empty list.
    pub top1: Vec<Option<String>>,
    pub targets: Vec<TargetPlaces>,
}

/// The lists (by configuration label) and one row per query with relevant chunks.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerQueryTable {
    pub lists: Vec<String>,
    pub rows: Vec<PerQueryRow>,
}

/// TargetPlace the relevant chunks (sorted by id) of every judged query in each list of
/// `configs`, ranked exactly as [`QueryLists::scored`] ranks them for the run files.
pub fn per_query(
    lists: &[(String, QueryLists)],
    qrels: &HashMap<String, Qrel>,
    configs: &[RunConfig],
) -> PerQueryTable {
    let rows = lists
        .iter()
        .filter_map(|(qid, l)| {
            let mut targets: Vec<&str> = qrels
                .get(qid)?
                .iter()
                .filter(|(_, r)| **r > 0)
                .map(|(d, _)| d.as_str())
                .collect();
            if targets.is_empty() {
                return None;
            }
            targets.sort_unstable();
            let ranked: Vec<Vec<(String, f64)>> = configs.iter().map(|c| l.scored(*c)).collect();
            Some(PerQueryRow {
                qid: qid.clone(),
                top1: ranked
                    .iter()
                    .map(|r| r.first().map(|(id, _)| id.clone()))
                    .collect(),
                targets: targets
                    .into_iter()
                    .map(|t| TargetPlaces {
                        id: t.to_string(),
                        places: ranked
                            .iter()
                            .map(|r| {
                                let at = r.iter().position(|(id, _)| id == t);
                                TargetPlace {
                                    rank: at.map(|i| i + 1),
                                    score: at.map(|i| r[i].1),
                                }
                            })
                            .collect(),
                    })
                    .collect(),
            })
        })
        .collect();
    PerQueryTable {
        lists: configs.iter().map(RunConfig::label).collect(),
        rows,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::fusion::Scored;
    use crate::core::retrieval::{Method, Sparse};

    fn l(ids: &[&str]) -> Vec<Scored> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| Scored {
                id: (*id).into(),
                score: 10.0 - i as f64,
            })
            .collect()
    }

    #[test]
    fn targets_are_placed_in_every_list_by_hand() {
        // bm25 [a, t], tfidf [u], dense [t, b, u]; targets t and u.
        let lists = vec![
            (
                "q1".to_string(),
                QueryLists::new(l(&["a", "t"]), l(&["u"]), l(&["t", "b", "u"])),
            ),
            ("q2".to_string(), QueryLists::default()),
        ];
        let qrels: HashMap<String, Qrel> = [
            (
                "q1".to_string(),
                [
                    ("u".to_string(), 1),
                    ("t".to_string(), 2),
                    ("x".to_string(), 0),
                ]
                .into_iter()
                .collect(),
            ),
            (
                "q2".to_string(),
                [("z".to_string(), 0)].into_iter().collect(),
            ),
        ]
        .into_iter()
        .collect();
        let hybrid = RunConfig::new(Method::Hybrid, Sparse::Tfidf, 0.6);
        let t = per_query(
            &lists,
            &qrels,
            &[
                RunConfig::single(Method::Dense),
                RunConfig::single(Method::Bm25),
                RunConfig::single(Method::Tfidf),
                hybrid,
            ],
        );
        assert_eq!(t.lists, ["dense", "bm25", "tfidf", "hybrid-tfidf-a0.60"]);
        assert_eq!(t.rows.len(), 1, "q2 has no relevant chunk");
        let row = &t.rows[0];
        // Hybrid with TF-IDF: u = .6/63 + .4/61 = 0.01608 beats t = .6/61 = 0.00984.
        assert_eq!(
            row.top1,
            [
                Some("t".into()),
                Some("a".into()),
                Some("u".into()),
                Some("u".into())
            ]
        );
        assert_eq!(row.targets[0].id, "t");
        let ranks = |i: usize| -> Vec<Option<usize>> {
            row.targets[i].places.iter().map(|p| p.rank).collect()
        };
        assert_eq!(ranks(0), [Some(1), Some(2), None, Some(2)]);
        assert_eq!(ranks(1), [Some(3), None, Some(1), Some(1)]);
        assert_eq!(row.targets[1].places[0].score, Some(8.0));
        let u = row.targets[1].places[3].score.expect("fused");
        assert!((u - (0.6 / 63.0 + 0.4 / 61.0)).abs() < 1e-15);
    }
}
