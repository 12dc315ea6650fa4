//! Exact dense top-k: a blocked copy of the vectors scanned by a SIMD dot kernel
//! into a k-sized heap.
//!
//! **Same scores, bit for bit, as the scalar scan.** A row's score is
//! `row.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()`: products added one
//! after another from `-0.0` (the neutral element std's `Sum` for `f32` starts
//! from), each product and each sum rounded to f32 (Rust never fuses them into an
//! FMA). Vectorising *along* a row would change that order; here the vector lanes
//! run *across* rows instead: rows are stored in panels of [`LANES`] rows, column
//! after column (`panel[j * LANES + lane] = row[lane][j]`), and lane `l` of the
//! accumulator adds `row[l][j] * q[j]` for `j = 0, 1, ...` in order, exactly the
//! scalar sum of row `l`. Padding lanes of the last panel are zeros and never read
//! back.
//!
//! **Same order.** The heap keeps the k best by (score by `f32::total_cmp`, then
//! chunk id), larger first, which is the total order the full sort used: so its k
//! rows, sorted, are the full sort's first k.
//!
//! **Speed.** With AVX2 (detected at run time) a panel's 32 lanes are four 8-lane
//! registers with four independent add chains; the scan streams the panels once
//! and is bound by memory bandwidth. Scores are written per tile of
//! [`TILE_PANELS`] panels into a stack buffer, so a query allocates only its heap.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Rows per panel (four AVX2 registers of eight f32 lanes).
pub const LANES: usize = 32;

/// Panels scored per call of the kernel (2,048 rows, 8 KiB of scores).
const TILE_PANELS: usize = 64;

/// The vectors in panel layout: `ceil(rows / LANES)` panels of `dim * LANES` floats.
#[derive(Debug, Clone, Default)]
pub struct Panels {
    dim: usize,
    rows: usize,
    data: Vec<f32>,
}

impl Panels {
    /// Panels of the row-major `rows` (`rows.len() / dim` rows of `dim` floats).
    pub fn new(row_major: &[f32], dim: usize) -> Self {
        if dim == 0 {
            return Self::default();
        }
        let rows = row_major.len() / dim;
        let panel_len = dim * LANES;
        let mut data = vec![0.0f32; rows.div_ceil(LANES) * panel_len];
        for (r, row) in row_major.chunks_exact(dim).enumerate() {
            let panel = &mut data[(r / LANES) * panel_len..][..panel_len];
            let lane = r % LANES;
            for (col, &x) in panel.chunks_exact_mut(LANES).zip(row) {
                col[lane] = x;
            }
        }
        Self { dim, rows, data }
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Score of every row (in row order) against `query`, passed to `visit` tile by
    /// tile as `(first row, scores)`; scores past the last row are padding and cut.
    pub fn scan(&self, query: &[f32], mut visit: impl FnMut(usize, &[f32])) {
        if self.dim == 0 {
            return;
        }
        let tile_len = TILE_PANELS * LANES * self.dim;
        let mut scores = [0.0f32; TILE_PANELS * LANES];
        for (t, tile) in self.data.chunks(tile_len).enumerate() {
            let panels = tile.len() / (LANES * self.dim);
            let out = &mut scores[..panels * LANES];
            dots(tile, self.dim, query, out);
            let first = t * TILE_PANELS * LANES;
            let live = self.rows.saturating_sub(first).min(out.len());
            visit(first, &out[..live]);
        }
    }

    /// The `k` best rows by (score, then `key` of the row), best first, with scores.
    pub fn top_k<'a, K>(
        &self,
        query: &[f32],
        k: usize,
        key: impl Fn(usize) -> &'a K,
    ) -> Vec<(f32, usize)>
    where
        K: Ord + ?Sized + 'a,
    {
        if k == 0 {
            return Vec::new();
        }
        let mut heap: BinaryHeap<Reverse<Entry<'a, K>>> = BinaryHeap::with_capacity(k + 1);
        self.scan(query, |first, scores| {
            for (i, &score) in scores.iter().enumerate() {
                let row = first + i;
                if heap.len() < k {
                    heap.push(Reverse(Entry {
                        score,
                        key: key(row),
                        row,
                    }));
                    continue;
                }
                let Some(Reverse(worst)) = heap.peek() else {
                    continue;
                };
                // Most rows lose on the score alone: the key is read only on a tie.
                let wins = match score.total_cmp(&worst.score) {
                    Ordering::Greater => true,
                    Ordering::Less => false,
                    Ordering::Equal => key(row) > worst.key,
                };
                if wins {
                    heap.pop();
                    heap.push(Reverse(Entry {
                        score,
                        key: key(row),
                        row,
                    }));
                }
            }
        });
        // Ascending `Reverse`: best entry first.
        heap.into_sorted_vec()
            .into_iter()
            .map(|Reverse(e)| (e.score, e.row))
            .collect()
    }
}

/// A row in the heap, ordered by (score by `total_cmp`, key): greater is better.
struct Entry<'a, K: ?Sized> {
    score: f32,
    key: &'a K,
    row: usize,
}

impl<K: Ord + ?Sized> Ord for Entry<'_, K> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| self.key.cmp(other.key))
    }
}

impl<K: Ord + ?Sized> PartialOrd for Entry<'_, K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<K: Ord + ?Sized> PartialEq for Entry<'_, K> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl<K: Ord + ?Sized> Eq for Entry<'_, K> {}

/// Dot products of whole panels (`out.len() / LANES` of them) with `query`, on the
/// widest instruction set this CPU has.
fn dots(panels: &[f32], dim: usize, query: &[f32], out: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    avx2::dots(panels, dim, query, out);
    #[cfg(not(target_arch = "x86_64"))]
    dots_portable(panels, dim, query, out);
}

/// The kernel: lane `l` of a panel sums `row[l][j] * q[j]` for `j` in order from
/// `-0.0`, the scalar sum of that row (see the module notes).
#[inline(always)]
fn dots_portable(panels: &[f32], dim: usize, query: &[f32], out: &mut [f32]) {
    for (panel, out) in panels
        .chunks_exact(dim * LANES)
        .zip(out.as_chunks_mut::<LANES>().0)
    {
        let mut acc = [-0.0f32; LANES];
        for (col, &q) in panel.as_chunks::<LANES>().0.iter().zip(query) {
            for (a, &x) in acc.iter_mut().zip(col) {
                *a += x * q;
            }
        }
        *out = acc;
    }
}

/// The same kernel compiled for AVX2, behind a safe function that only calls it
/// where the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    /// Panel dot products with AVX2, or the portable kernel where AVX2 is missing.
    pub fn dots(panels: &[f32], dim: usize, query: &[f32], out: &mut [f32]) {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: `dots_avx2` is safe code (the portable kernel, bounds checked)
            // compiled with AVX2 enabled; the only requirement a `target_feature`
            // function adds is that the CPU supports the feature, checked just above.
            unsafe { dots_avx2(panels, dim, query, out) }
        } else {
            super::dots_portable(panels, dim, query, out);
        }
    }

    #[target_feature(enable = "avx2")]
    fn dots_avx2(panels: &[f32], dim: usize, query: &[f32], out: &mut [f32]) {
        super::dots_portable(panels, dim, query, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scalar(row: &[f32], q: &[f32]) -> f32 {
        row.iter().zip(q).map(|(a, b)| a * b).sum::<f32>()
    }

    #[test]
    fn panel_scores_are_the_scalar_sums_bit_for_bit() {
        let dim = 7;
        let rows = 70; // three panels, the last one partly padding
        let data: Vec<f32> = (0..rows * dim)
            .map(|i| ((i * 37 % 101) as f32 - 50.0) / 13.0)
            .collect();
        let q: Vec<f32> = (0..dim).map(|j| (j as f32 - 3.0) / 7.0).collect();
        let p = Panels::new(&data, dim);
        let mut got = Vec::new();
        p.scan(&q, |first, s| {
            assert_eq!(first, got.len());
            got.extend_from_slice(s);
        });
        assert_eq!(got.len(), rows);
        for (r, s) in got.iter().enumerate() {
            let want = scalar(&data[r * dim..(r + 1) * dim], &q);
            assert_eq!(s.to_bits(), want.to_bits(), "row {r}");
        }
    }

    /// A zero row against a query with negative parts: every product is `-0.0`, and
    /// the scalar sum stays `-0.0` (std starts from `-0.0`), which `total_cmp` puts
    /// below `+0.0`.
    #[test]
    fn negative_zero_sums_match() {
        let data = vec![0.0, 0.0, 1.0, 0.0];
        let q = vec![-1.0, -1.0];
        let mut got = Vec::new();
        Panels::new(&data, 2).scan(&q, |_, s| got.extend_from_slice(s));
        assert_eq!(got[0].to_bits(), scalar(&data[..2], &q).to_bits());
        assert!(got[0].is_sign_negative());
    }
}
