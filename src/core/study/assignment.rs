//! k-of-n assignments: each item goes to `k` of the study's `n` reviewers, seeded
//! and balanced.
//!
//! The rule, so that anyone can check a design by hand:
//! - Items are taken in a seeded shuffle of their given order. Each item picks its
//!   `k` reviewers one at a time: the reviewer with the fewest items so far, then
//!   the fewest items shared so far with the reviewers already picked for this item,
//!   then a seeded random draw.
//! - Load is picked first, so every reviewer ends with `floor(N k / n)` or
//!   `ceil(N k / n)` of the `N` items (each pick takes one of the least loaded, so
//!   the loads never differ by more than one). Shared items come second, so every
//!   pair of reviewers shares items about equally, which the pairwise kappa matrix
//!   needs (a plain rotation would leave some pairs with none).
//! - An item's reviewers are listed in the order of the given reviewer list, so
//!   with `k = n` every item gets the list itself (`--reviewers alice,bob` is the
//!   pair assignment of earlier studies).

use crate::core::rng::Rng;

/// Why a design cannot be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DesignError {
    #[error("each item needs at least two reviewers (got {0} per item)")]
    TooFew(usize),
    #[error("{per_item} reviewers per item, but only {reviewers} reviewers were named")]
    TooMany { per_item: usize, reviewers: usize },
    #[error("reviewer {0} is named twice")]
    Twice(String),
}

/// For each item (in the given order), the indices into `reviewers` of its `k`
/// reviewers, ascending. `items` is how many items there are.
pub fn design(
    items: usize,
    reviewers: &[String],
    k: usize,
    seed: u64,
) -> Result<Vec<Vec<usize>>, DesignError> {
    let n = reviewers.len();
    if k < 2 {
        return Err(DesignError::TooFew(k));
    }
    if k > n {
        return Err(DesignError::TooMany {
            per_item: k,
            reviewers: n,
        });
    }
    for (i, r) in reviewers.iter().enumerate() {
        if reviewers[..i].contains(r) {
            return Err(DesignError::Twice(r.clone()));
        }
    }
    let mut rng = Rng::new(seed);
    let order = rng.sample_indices(items, items);
    let mut load = vec![0usize; n];
    // shared[a * n + b]: items reviewers a and b share so far.
    let mut shared = vec![0usize; n * n];
    let mut out = vec![Vec::new(); items];
    for item in order {
        let mut picked: Vec<usize> = Vec::with_capacity(k);
        for _ in 0..k {
            let best = (0..n)
                .filter(|r| !picked.contains(r))
                .map(|r| {
                    let together: usize = picked.iter().map(|&p| shared[p * n + r]).sum();
                    (load[r], together, rng.next_u64(), r)
                })
                .min()
                .map(|(_, _, _, r)| r);
            let Some(r) = best else { break };
            for &p in &picked {
                shared[p * n + r] += 1;
                shared[r * n + p] += 1;
            }
            load[r] += 1;
            picked.push(r);
        }
        picked.sort_unstable();
        out[item] = picked;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("r{i}")).collect()
    }

    fn loads(d: &[Vec<usize>], n: usize) -> Vec<usize> {
        let mut l = vec![0; n];
        for r in d.iter().flatten() {
            l[*r] += 1;
        }
        l
    }

    #[test]
    fn every_item_gets_k_distinct_reviewers_and_loads_differ_by_at_most_one() {
        for (items, n, k) in [(10, 3, 2), (7, 5, 3), (12, 4, 2), (1, 6, 4), (0, 3, 2)] {
            for seed in [1, 2, 99] {
                let d = design(items, &names(n), k, seed).expect("design");
                assert_eq!(d.len(), items);
                for rs in &d {
                    assert_eq!(rs.len(), k);
                    assert!(rs.windows(2).all(|w| w[0] < w[1]), "ascending, distinct");
                }
                // 10 items x 2 of 3 = 20 slots: 7, 7, 6 (floor 6, ceil 7).
                let l = loads(&d, n);
                let (lo, hi) = (items * k / n, (items * k).div_ceil(n));
                assert!(l.iter().all(|&x| x == lo || x == hi), "{l:?}");
                assert_eq!(l.iter().sum::<usize>(), items * k);
            }
        }
        let l = loads(&design(10, &names(3), 2, 5).expect("design"), 3);
        let mut sorted = l.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![6, 7, 7]);
    }

    #[test]
    fn every_pair_shares_items() {
        // 12 items, 2 of 4: 6 pairs; a rotation r0r1, r2r3, ... would leave r1r2 with
        // none. Sharing is picked second, so every pair shares at least one item.
        let d = design(12, &names(4), 2, 3).expect("design");
        for a in 0..4 {
            for b in a + 1..4 {
                let together = d
                    .iter()
                    .filter(|rs| rs.contains(&a) && rs.contains(&b))
                    .count();
                assert!(together >= 1, "r{a} and r{b} share no item: {d:?}");
            }
        }
    }

    #[test]
    fn seeded_and_all_of_n_is_the_list() {
        let r = names(5);
        assert_eq!(design(20, &r, 3, 7), design(20, &r, 3, 7));
        assert_ne!(design(20, &r, 3, 7), design(20, &r, 3, 8));
        let d = design(4, &names(2), 2, 11).expect("pairs");
        assert!(d.iter().all(|rs| *rs == vec![0, 1]));
    }

    #[test]
    fn impossible_designs_are_refused() {
        assert_eq!(design(3, &names(3), 1, 1), Err(DesignError::TooFew(1)));
        assert_eq!(
            design(3, &names(3), 4, 1),
            Err(DesignError::TooMany {
                per_item: 4,
                reviewers: 3
            })
        );
        let twice = vec!["a".to_string(), "b".into(), "a".into()];
        assert_eq!(design(3, &twice, 2, 1), Err(DesignError::Twice("a".into())));
    }
}
