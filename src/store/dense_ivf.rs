//! Approximate dense top-k: an inverted file (IVF) over the int8 copy of the vectors.
//!
//! **What it answers.** The rows are clustered into lists around unit centres
//! (spherical k-means). A search scores the query against every centre, takes the
//! `nprobes` lists with the best centres, and returns the exact top k *of the rows in
//! those lists*: the same f32 scores, order and ties (by key) as the exact scan
//! restricted to them (the int8 pre-scan and f32 rescoring of [`Quantised`], so no
//! row of a probed list is lost to rounding). What it can miss is a true neighbour
//! filed in a list it did not probe; the bench reports recall against the exact scan.
//!
//! **Why its own index rather than lance's.** lance's IVF search costs about 3 ms a
//! query even at 20k rows (planning, async streams, an Arrow batch), and its PQ codes
//! lose the small differences that order a cluster's members. Here a probe reads a
//! few contiguous int8 runs of the copy already in memory.
//!
//! **Build.** k-means runs on a sample (`TRAIN_PER_LIST` rows a list) for
//! `ITERATIONS` rounds, assigning with the int8 kernel (assignment only decides where
//! a row is filed, so rounding costs recall at most, never correctness); every row
//! is then filed under its best centre and the int8 bytes are copied list by list, so
//! each list is one contiguous run.

use std::ops::Range;

use super::dense_scan::{Quantised, ScanStats, exact_score};
use crate::core::rng::Rng;

/// Sample rows per list for the k-means rounds.
const TRAIN_PER_LIST: usize = 48;
/// k-means rounds over the sample.
const ITERATIONS: usize = 10;

/// The clustered int8 copy and its centres.
#[derive(Debug, Clone, Default)]
pub struct Ivf {
    dim: usize,
    /// `lists * dim` floats, each centre of unit length.
    centres: Vec<f32>,
    /// List `l` holds rows `order[starts[l]..starts[l + 1]]`.
    starts: Vec<usize>,
    /// Row of the set for each row of `copy`.
    order: Vec<u32>,
    /// The set's int8 rows, list after list.
    copy: Quantised,
}

/// How one IVF search went.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IvfStats {
    pub lists_probed: usize,
    /// Rows of the probed lists (each scanned in int8).
    pub rows_scanned: usize,
    /// Rows rescored in f32.
    pub rescored: usize,
}

/// The default number of lists for `rows` rows: about `sqrt(rows) / 2` (500 lists of
/// 2,000 rows at a million), so the centres cost little next to the lists probed.
pub fn default_lists(rows: usize) -> usize {
    ((rows as f64).sqrt() / 2.0).round().clamp(1.0, 4096.0) as usize
}

impl Ivf {
    /// Cluster the `row_major` rows (`dim` floats each; `set` is their int8 copy) into
    /// `lists` lists (at most one per row), reproducibly for a `seed`.
    pub fn build(set: &Quantised, row_major: &[f32], dim: usize, lists: usize, seed: u64) -> Ivf {
        let rows = set.rows();
        if rows == 0 || dim == 0 {
            return Ivf {
                dim,
                starts: vec![0; 2],
                ..Ivf::default()
            };
        }
        let lists = lists.clamp(1, rows);
        let mut rng = Rng::new(seed);
        let mut sample: Vec<u32> = rng
            .sample_indices(rows, (lists * TRAIN_PER_LIST).min(rows))
            .into_iter()
            .map(|r| r as u32)
            .collect();
        // The first `lists` sampled rows (a random choice) start the centres.
        let mut centres: Vec<f32> = sample[..lists]
            .iter()
            .flat_map(|&r| unit(&row_major[r as usize * dim..][..dim]))
            .collect();
        sample.sort_unstable();
        let train = set.gather(&sample);
        for _ in 0..ITERATIONS {
            let assigned = train.assign(&centres);
            let mut sums = vec![0f64; lists * dim];
            let mut counts = vec![0usize; lists];
            for (&r, &c) in sample.iter().zip(&assigned) {
                let row = &row_major[r as usize * dim..][..dim];
                if !row.iter().all(|v| v.is_finite()) {
                    continue;
                }
                counts[c as usize] += 1;
                for (s, &v) in sums[c as usize * dim..][..dim].iter_mut().zip(row) {
                    *s += f64::from(v);
                }
            }
            for (c, centre) in centres.chunks_exact_mut(dim).enumerate() {
                if counts[c] == 0 {
                    // An empty list starts again from a random sampled row.
                    let r = sample[rng.below(sample.len())] as usize;
                    centre.copy_from_slice(&unit(&row_major[r * dim..][..dim]));
                } else {
                    let sum: Vec<f32> = sums[c * dim..][..dim].iter().map(|&s| s as f32).collect();
                    centre.copy_from_slice(&unit(&sum));
                }
            }
        }
        let assigned = set.assign(&centres);
        let mut starts = vec![0usize; lists + 1];
        for &c in &assigned {
            starts[c as usize + 1] += 1;
        }
        for l in 0..lists {
            starts[l + 1] += starts[l];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; rows];
        for (r, &c) in assigned.iter().enumerate() {
            order[next[c as usize]] = r as u32;
            next[c as usize] += 1;
        }
        let copy = set.gather(&order);
        Ivf {
            dim,
            centres,
            starts,
            order,
            copy,
        }
    }

    pub fn lists(&self) -> usize {
        self.starts.len() - 1
    }

    /// Rows of the set filed in list `l`.
    pub fn list_rows(&self, l: usize) -> &[u32] {
        &self.order[self.starts[l]..self.starts[l + 1]]
    }

    /// Bytes held besides the set itself (centres, list order, int8 copy).
    pub fn bytes(&self) -> usize {
        self.centres.len() * 4
            + self.order.len() * 4
            + self.copy.scanned_bytes()
            + self.copy.rows() * 4
    }

    /// The `nprobes` lists whose centres score best against `query` (ties: the lower
    /// list first), best first.
    pub fn probe(&self, query: &[f32], nprobes: usize) -> Vec<usize> {
        if query.len() != self.dim || self.dim == 0 {
            return Vec::new();
        }
        let mut scored: Vec<(f32, usize)> = self
            .centres
            .chunks_exact(self.dim)
            .map(|c| exact_score(c, query))
            .enumerate()
            .map(|(l, s)| (s, l))
            .collect();
        let by = |a: &(f32, usize), b: &(f32, usize)| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1));
        let n = nprobes.min(scored.len());
        if n == 0 {
            return Vec::new();
        }
        if n < scored.len() {
            scored.select_nth_unstable_by(n - 1, by);
            scored.truncate(n);
        }
        scored.sort_by(by);
        scored.into_iter().map(|(_, l)| l).collect()
    }

    /// The `k` best rows of the `nprobes` best lists by (exact f32 score, then key),
    /// best first, as rows of `row_major` (the f32 vectors the set was made from).
    pub fn top_k<'a, K>(
        &self,
        row_major: &[f32],
        query: &[f32],
        k: usize,
        nprobes: usize,
        key: impl Fn(usize) -> &'a K,
    ) -> (Vec<(f32, usize)>, IvfStats)
    where
        K: Ord + ?Sized + 'a,
    {
        let probed = self.probe(query, nprobes);
        let mut ranges: Vec<Range<usize>> = probed
            .iter()
            .map(|&l| self.starts[l]..self.starts[l + 1])
            .collect();
        // In copy order, so the scan walks memory forwards.
        ranges.sort_by_key(|r| r.start);
        let rows_scanned = ranges.iter().map(|r| r.len()).sum();
        let (top, ScanStats { rescored, .. }) = self.copy.top_k_in(
            row_major,
            query,
            k,
            &ranges,
            |i| self.order[i] as usize,
            key,
        );
        let stats = IvfStats {
            lists_probed: probed.len(),
            rows_scanned,
            rescored,
        };
        (top, stats)
    }
}

/// `v` scaled to unit length (all zeros stay zeros).
fn unit(v: &[f32]) -> Vec<f32> {
    let norm = v
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 && norm.is_finite() {
        v.iter().map(|&x| (f64::from(x) / norm) as f32).collect()
    } else {
        vec![0.0; v.len()]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::rng::Rng;
    use proptest::prelude::*;

    /// Clustered rows with duplicates (ties broken by key), a query near one row.
    fn case() -> impl Strategy<Value = (usize, Vec<f32>, Vec<f32>, usize, usize, usize, u64)> {
        (2usize..12, 1usize..400, 1usize..40, any::<u64>()).prop_flat_map(|(dim, rows, k, seed)| {
            let lists = 1usize..(rows.min(30) + 1);
            (lists, 1usize..32).prop_map(move |(lists, nprobes)| {
                let mut rng = Rng::new(seed);
                let mut f = || (rng.next_u64() >> 40) as f32 / (1u64 << 24) as f32 - 0.5;
                let centres: Vec<Vec<f32>> =
                    (0..4).map(|_| (0..dim).map(|_| f()).collect()).collect();
                let mut data = Vec::with_capacity(rows * dim);
                for r in 0..rows {
                    if r % 7 == 3 && r > 0 {
                        // A duplicate of the row before: an exact tie.
                        let prev = data[(r - 1) * dim..r * dim].to_vec();
                        data.extend(prev);
                        continue;
                    }
                    let c = &centres[r % 4];
                    let row: Vec<f32> = c.iter().map(|&x| x + 0.3 * f()).collect();
                    data.extend(unit(&row));
                }
                let query: Vec<f32> = (0..dim).map(|_| f()).collect();
                (dim, data, query, k, lists, nprobes, seed)
            })
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(96))]

        /// The answer is the exact top k of the probed lists' rows (a full sort of
        /// them by f32 score, then key); with every list probed, of every row. Every
        /// row is filed in exactly one list.
        #[test]
        fn top_k_is_the_exact_top_k_of_the_probed_lists(
            (dim, data, query, k, lists, nprobes, seed) in case()
        ) {
            let rows = data.len() / dim;
            // Keys out of row order and unique whatever `rows` (with a row count that
            // is a multiple of 37 the first part takes only rows / 37 values).
            let keys: Vec<String> = (0..rows).map(|r| format!("k{:05}-{r:03}", (r * 37) % rows)).collect();
            let set = Quantised::new(&data, dim);
            let ivf = Ivf::build(&set, &data, dim, lists, seed);
            let mut filed: Vec<u32> = (0..ivf.lists()).flat_map(|l| ivf.list_rows(l).to_vec()).collect();
            filed.sort_unstable();
            prop_assert_eq!(filed, (0..rows as u32).collect::<Vec<_>>());
            for probes in [nprobes, ivf.lists()] {
                let probed = ivf.probe(&query, probes);
                prop_assert_eq!(probed.len(), probes.min(ivf.lists()));
                let mut want: Vec<(f32, usize)> = probed
                    .iter()
                    .flat_map(|&l| ivf.list_rows(l).iter().map(|&r| r as usize))
                    .map(|r| (exact_score(&data[r * dim..][..dim], &query), r))
                    .collect();
                want.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| keys[b.1].cmp(&keys[a.1])));
                want.truncate(k);
                let (got, stats) = ivf.top_k(&data, &query, k, probes, |r| keys[r].as_str());
                let bits = |v: &[(f32, usize)]| v.iter().map(|&(s, r)| (s.to_bits(), r)).collect::<Vec<_>>();
                prop_assert_eq!(bits(&got), bits(&want));
                prop_assert!(stats.rescored <= stats.rows_scanned);
            }
        }
    }
}
