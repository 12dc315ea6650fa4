//! Exact dense top-k: an int8 copy of the vectors scanned with SIMD, then every row
//! whose score could still reach the top k rescored in f32.
//!
//! **The f32 score is the truth.** A row's score is
//! `row.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()` ([`exact_score`]):
//! products added one after another from `-0.0`, each product and sum rounded to f32
//! (Rust never fuses them into an FMA). The answer of [`Quantised::top_k`] is the
//! `k` best rows by that score (by `f32::total_cmp`, then by key), exactly those of a
//! full f32 scan and sort, with the same score bits.
//!
//! **Why int8 first.** The scan is bound by memory bandwidth: an int8 copy is a
//! quarter of the f32 bytes (384 MB instead of 1.5 GB at 1M x 384), and integer dot
//! products are exact, so the kernel's result does not depend on the order it adds in.
//!
//! **Why the pre-scan loses nothing.** Row `r` is stored as `s_r * q_r` (per-row
//! scale `s_r = max|x| / 127`, `q_r` in `[-127, 127]`), the query as `s_q * q_q`; the
//! approximate score is `a_r = s_r * s_q * (q_r . q_q)`. With the rounding errors
//! `e_r = x_r - s_r q_r` and `e_q`, the real dot product differs from `a_r` by
//! `s_r q_r . e_q + e_r . s_q q_q + e_r . e_q`, each term bounded by Cauchy-Schwarz
//! (or by max-error times L1 norm, whichever is smaller), and the f32 score differs
//! from the real dot product by at most `gamma_n |x| |y|` (`gamma_n = n u / (1 - n u)`,
//! `u = 2^-24`). [`Quantised`] keeps the largest of each per-row quantity, so one bound
//! `B` per query holds for every row: `|f_r - a_r| <= B`. Let `T` be the k-th largest
//! `a_r`. At least k rows have `f_r >= T - B`, so the k-th best f32 score is
//! `>= T - B`, and every row of the true top k has `a_r >= f_r - B >= T - 2B`. The
//! scan keeps exactly those rows as candidates and rescores them in f32. A set with a
//! non-finite value, or a query with one, takes the plain f32 scan instead.
//!
//! **Layout.** Rows sit in panels of [`LANES`] (8) rows; a panel stores, for each
//! group of 4 dimensions, the 4 bytes of row 0, then of row 1, ... (32 bytes, one
//! AVX2 register). A register's eight 32-bit lanes are then eight rows, and each
//! group adds `x[4g..4g+4] . q[4g..4g+4]` into its row's lane with one
//! `maddubs`/`madd` pair: no horizontal sums. Padding dimensions and rows are zeros.
//! The panels sit on huge pages where the kernel allows it ([`super::huge_pages`]):
//! a scan crosses 192 pages at a million rows instead of 98,304.
//!
//! **Threads.** One query's scan splits its panels over the machine's cores once the
//! set is large enough for a thread's start-up (tens of microseconds) to vanish.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Rows per panel: the eight 32-bit lanes of an AVX2 register.
pub const LANES: usize = 8;

/// Dimensions per group: four bytes of a row in one 32-bit lane.
const GROUP: usize = 4;

/// Panels scored per call of the kernel (4,096 rows, 16 KiB of sums).
const TILE_PANELS: usize = 512;

/// Below this many rows one thread scans the whole set (start-up would cost more
/// than the split saves: two threads at 20,000 rows took 1.3-1.6 ms against one
/// thread's 1.0 ms).
pub const PARALLEL_ROWS: usize = 65_536;

/// Threads a scan of `rows` rows (or a sparse pass over as many documents) is split
/// over: one below [`PARALLEL_ROWS`], else one per core up to 8 (the scan is bound
/// by memory bandwidth, which a few cores already fill).
pub(super) fn scan_threads(rows: usize) -> usize {
    if rows < PARALLEL_ROWS {
        return 1;
    }
    std::thread::available_parallelism().map_or(1, |n| n.get().min(8))
}

/// The f32 score of one row: the sum every search's answer is defined by.
#[inline]
pub fn exact_score(row: &[f32], query: &[f32]) -> f32 {
    row.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()
}

/// Round-off of an n-term f32 dot product relative to `sum |x_i y_i|`.
fn gamma(n: usize) -> f64 {
    let nu = n as f64 * f64::from(f32::EPSILON) / 2.0;
    nu / (1.0 - nu).max(f64::MIN_POSITIVE)
}

/// One vector quantised to int8 with its scale and the sizes the error bound needs.
struct QuantRow {
    scale: f32,
    /// `max_j |x_j - s q_j|`.
    max_error: f64,
    /// `|x - s q|_2`.
    error_norm: f64,
    /// `sum_j |s q_j|`.
    abs_sum: f64,
    /// `|s q|_2`.
    quant_norm: f64,
    /// `|x|_2`.
    norm: f64,
}

/// Quantise `x` into `out` (same length); `None` if `x` holds a non-finite value.
fn quantise(x: &[f32], out: &mut [i8]) -> Option<QuantRow> {
    if x.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let max = x.iter().fold(0.0f32, |m, v| m.max(v.abs()));
    let scale = max / 127.0;
    let (mut max_error, mut err2, mut abs_sum, mut q2, mut n2) = (0.0f64, 0.0, 0.0, 0.0, 0.0);
    for (o, &v) in out.iter_mut().zip(x) {
        let q = if scale > 0.0 {
            (v / scale).round().clamp(-127.0, 127.0)
        } else {
            0.0
        };
        *o = q as i8;
        let deq = f64::from(scale) * f64::from(q);
        let e = (f64::from(v) - deq).abs();
        max_error = max_error.max(e);
        err2 += e * e;
        abs_sum += deq.abs();
        q2 += deq * deq;
        n2 += f64::from(v) * f64::from(v);
    }
    Some(QuantRow {
        scale,
        max_error,
        error_norm: err2.sqrt(),
        abs_sum,
        quant_norm: q2.sqrt(),
        norm: n2.sqrt(),
    })
}

/// The largest of each per-row quantity over the whole set.
#[derive(Debug, Clone, Copy, Default)]
struct Maxima {
    max_error: f64,
    error_norm: f64,
    abs_sum: f64,
    quant_norm: f64,
    norm: f64,
}

impl Maxima {
    fn take(&mut self, r: &QuantRow) {
        self.max_error = self.max_error.max(r.max_error);
        self.error_norm = self.error_norm.max(r.error_norm);
        self.abs_sum = self.abs_sum.max(r.abs_sum);
        self.quant_norm = self.quant_norm.max(r.quant_norm);
        self.norm = self.norm.max(r.norm);
    }

    /// `B`: a bound on `|f_r - a_r|` for every row against query `q` (module notes),
    /// with a relative margin for the f64 arithmetic and for `a_r`'s own f32 rounding.
    fn bound(&self, q: &QuantRow, dim: usize) -> f64 {
        let rows_times_query_error =
            (self.quant_norm * q.error_norm).min(self.abs_sum * q.max_error);
        let query_times_rows_error =
            (q.quant_norm * self.error_norm).min(q.abs_sum * self.max_error);
        let both_errors =
            (self.error_norm * q.error_norm).min(dim as f64 * self.max_error * q.max_error);
        let float_sum = gamma(dim) * self.norm * q.norm;
        // `a_r` is computed as f32 `s_r * (sum as f32)`, then times `s_q` in f64: at most
        // three f32 roundings of a value no larger than `|s_r q_r| |s_q q_q|`.
        let approx_rounding = 4.0 * f64::from(f32::EPSILON) * self.quant_norm * q.quant_norm;
        (rows_times_query_error + query_times_rows_error + both_errors)
            .max(0.0)
            .mul_add(1.0 + 1e-6, float_sum + approx_rounding)
            * (1.0 + 1e-6)
    }
}

/// The int8 copy of a set of row-major f32 vectors, in panel layout.
#[derive(Debug, Clone, Default)]
pub struct Quantised {
    dim: usize,
    groups: usize,
    rows: usize,
    /// `ceil(rows / LANES)` panels of `groups * LANES * GROUP` bytes.
    panels: Vec<i8>,
    /// `s_r` of each row.
    scales: Vec<f32>,
    maxima: Maxima,
    /// A row holds a non-finite value: every search takes the f32 scan.
    f32_only: bool,
}

/// How one search went: for the bench and its figures.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScanStats {
    /// Rows rescored in f32 after the int8 pre-scan.
    pub rescored: usize,
    /// The int8 pre-scan was skipped (non-finite values or an all-zero query).
    pub f32_scan: bool,
}

impl Quantised {
    /// The int8 panels of `row_major` (`row_major.len() / dim` rows of `dim` floats).
    pub fn new(row_major: &[f32], dim: usize) -> Self {
        if dim == 0 {
            return Self::default();
        }
        let rows = row_major.len() / dim;
        let groups = dim.div_ceil(GROUP);
        let panel_len = groups * LANES * GROUP;
        let mut panels = super::huge_pages::zeroed(rows.div_ceil(LANES) * panel_len);
        let mut scales = Vec::with_capacity(rows);
        let mut maxima = Maxima::default();
        let mut f32_only = false;
        let mut q = vec![0i8; groups * GROUP];
        for (r, row) in row_major.chunks_exact(dim).enumerate() {
            let Some(info) = quantise(row, &mut q[..dim]) else {
                f32_only = true;
                scales.push(0.0);
                continue;
            };
            maxima.take(&info);
            scales.push(info.scale);
            let panel = &mut panels[(r / LANES) * panel_len..][..panel_len];
            let lane = r % LANES;
            for (g, four) in q.chunks_exact(GROUP).enumerate() {
                panel[(g * LANES + lane) * GROUP..][..GROUP].copy_from_slice(four);
            }
        }
        Self {
            dim,
            groups,
            rows,
            panels,
            scales,
            maxima,
            f32_only,
        }
    }

    /// The query in int8 (padded to whole groups) and its sizes, or `None` where the
    /// pre-scan cannot be used: a set or query holding a non-finite value, a query of
    /// another dimension, or an all-zero query.
    fn quantise_query(&self, query: &[f32]) -> (Vec<i8>, Option<QuantRow>) {
        let mut qq = vec![0i8; self.groups * GROUP];
        let info = if self.f32_only || query.len() != self.dim {
            None
        } else {
            quantise(query, &mut qq[..self.dim]).filter(|q| q.scale > 0.0)
        };
        (qq, info)
    }

    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Bytes of the int8 copy a query's scan reads.
    pub fn scanned_bytes(&self) -> usize {
        self.panels.len()
    }

    /// The `k` best rows of `row_major` (the f32 vectors this copy was made from) by
    /// (exact f32 score by `total_cmp`, then `key` of the row), best first, with their
    /// scores, and how the search went.
    pub fn top_k<'a, K>(
        &self,
        row_major: &[f32],
        query: &[f32],
        k: usize,
        key: impl Fn(usize) -> &'a K,
    ) -> (Vec<(f32, usize)>, ScanStats)
    where
        K: Ord + ?Sized + 'a,
    {
        let all = 0..self.rows;
        self.top_k_in(row_major, query, k, std::slice::from_ref(&all), |i| i, key)
    }

    /// The place of each of `wanted` (row numbers) in the ranking of every row by
    /// (exact f32 score by `total_cmp`, then `key`, both descending), as [`top_k`] ranks
    /// with `k` = all rows: `(rank, score)` with rank = 1 + the rows that come before
    /// it. No sort and no list of the whole set: the wanted rows' f32 scores are the
    /// thresholds; one int8 pre-scan counts every row whose approximate score is more
    /// than `B` above a threshold (its f32 score beats it whatever the rounding) and
    /// rescores in f32 only the rows within `B` of one, each part of the scan on its
    /// own core. A row beats a run of the (sorted) thresholds at once: counts are
    /// added to a difference array, so a row costs a binary search, not one
    /// comparison per threshold; only exact ties compare keys.
    ///
    /// [`top_k`]: Quantised::top_k
    pub fn ranks_of<'a, K>(
        &self,
        row_major: &[f32],
        query: &[f32],
        wanted: &[usize],
        key: impl Fn(usize) -> &'a K + Sync,
    ) -> Vec<(usize, f32)>
    where
        K: Ord + ?Sized + 'a,
    {
        if wanted.is_empty() {
            return Vec::new();
        }
        let dim = self.dim;
        let score = |r: usize| exact_score(&row_major[r * dim..(r + 1) * dim], query);
        // Wanted rows by exact score ascending.
        let mut sorted: Vec<(f32, usize, usize)> = wanted
            .iter()
            .enumerate()
            .map(|(i, &r)| (score(r), r, i))
            .collect();
        sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (qq, q_info) = self.quantise_query(query);
        let m = sorted.len();
        let tally = match &q_info {
            Some(q) => {
                let s_q = f64::from(q.scale);
                let window = self.maxima.bound(q, self.dim) / s_q;
                let centre = |t: f32| f64::from(t) / s_q;
                Tally {
                    above: sorted.iter().map(|t| centre(t.0) + window).collect(),
                    below: sorted.iter().map(|t| centre(t.0) - window).collect(),
                }
            }
            // The plain f32 scan: every row is near every threshold.
            None => Tally {
                above: vec![f64::INFINITY; m],
                below: vec![f64::NEG_INFINITY; m],
            },
        };
        let job = RankJob {
            row_major,
            dim,
            query,
            sorted: &sorted,
            tally: &tally,
            score: &score,
            key: &key,
        };
        let query_bytes = QueryBytes::new(&qq);
        let panels = self.rows.div_ceil(LANES);
        let parts = scan_threads(self.rows);
        let exact = q_info.is_none();
        let diffs: Vec<Vec<isize>> = on_each(&split_panels(panels, parts), |range| {
            self.rank_part(&query_bytes, range.clone(), &job, exact)
        });
        let mut out = vec![(0, 0.0f32); m];
        let mut running = 0isize;
        for (j, &(t, _, i)) in sorted.iter().enumerate() {
            running += diffs.iter().map(|d| d[j]).sum::<isize>();
            out[i] = (running.unsigned_abs() + 1, t);
        }
        out
    }

    /// [`Quantised::ranks_of`] over `panels`: a difference array over the sorted
    /// thresholds (`diff[j]` summed up to `j` counts the rows before threshold `j`).
    /// `exact`: no int8 copy to use; every row is scored in f32.
    fn rank_part<'a, K, S, F>(
        &self,
        query: &QueryBytes,
        panels: std::ops::Range<usize>,
        job: &RankJob<'_, S, F>,
        exact: bool,
    ) -> Vec<isize>
    where
        K: Ord + ?Sized + 'a,
        S: Fn(usize) -> f32,
        F: Fn(usize) -> &'a K,
    {
        let (tally, sorted) = (job.tally, job.sorted);
        let m = sorted.len();
        let mut diff = vec![0isize; m + 1];
        let lowest = tally.below.first().copied().unwrap_or(f64::INFINITY);
        let highest = tally.above.last().copied().unwrap_or(f64::INFINITY);
        if exact {
            let rows = (panels.start * LANES)..(panels.end * LANES).min(self.rows);
            for row in rows {
                Self::count_near(job, row, (job.score)(row), 0, m, &mut diff);
            }
            return diff;
        }
        // Near rows waiting to be scored in f32 eight at a time (eight independent
        // sums: one row's chain of dependent adds no longer sets the pace).
        let mut pending: Vec<(usize, usize, usize)> = Vec::with_capacity(8);
        let flush = |pending: &mut Vec<(usize, usize, usize)>, diff: &mut [isize]| {
            let rows: Vec<usize> = pending.iter().map(|p| p.0).collect();
            let scores = score_rows(job.row_major, job.dim, job.query, &rows);
            for (&(row, from, to), s) in pending.iter().zip(scores) {
                Self::count_near(job, row, s, from, to, diff);
            }
            pending.clear();
        };
        self.approx_tiles(query, panels, |first, approx| {
            for (i, &v) in approx.iter().enumerate() {
                let row = first + i;
                let v = f64::from(v);
                if v < lowest {
                    continue;
                }
                if v > highest {
                    diff[0] += 1;
                    diff[m] -= 1;
                    continue;
                }
                // Thresholds surely beaten: the first `beaten` (more than the bound
                // below `v`); those up to `reached` are within the bound.
                let beaten = tally.above.partition_point(|&a| a < v);
                let reached = tally.below.partition_point(|&b| b <= v);
                diff[0] += 1;
                diff[beaten] -= 1;
                if reached > beaten {
                    pending.push((row, beaten, reached));
                    if pending.len() == 8 {
                        flush(&mut pending, &mut diff);
                    }
                }
            }
            flush(&mut pending, &mut diff);
        });
        diff
    }

    /// [`Quantised::rank_part`]'s count for a row near thresholds `from..to`: scored
    /// in f32 (`s`), it beats those below its score, and those equal to it when its
    /// key is greater.
    #[inline]
    fn count_near<'a, K, S, F>(
        job: &RankJob<'_, S, F>,
        row: usize,
        s: f32,
        from: usize,
        to: usize,
        diff: &mut [isize],
    ) where
        K: Ord + ?Sized + 'a,
        S: Fn(usize) -> f32,
        F: Fn(usize) -> &'a K,
    {
        let sorted = job.sorted;
        let run = &sorted[from..to];
        let below = from + run.partition_point(|t| t.0.total_cmp(&s).is_lt());
        diff[from] += 1;
        diff[below] -= 1;
        for (j, t) in sorted.iter().enumerate().take(to).skip(below) {
            if t.0.total_cmp(&s).is_gt() {
                break;
            }
            if t.1 != row && (job.key)(row) > (job.key)(t.1) {
                diff[j] += 1;
                diff[j + 1] -= 1;
            }
        }
    }

    /// The approximate score (the row's scale times its int8 dot product with
    /// `query`) of every row of `panels`, a tile of panels at a time (the tile's
    /// int8 bytes stay in cache while they are summed): `on_tile(first, approx)`
    /// gets the scores of rows `first..first + approx.len()`, in row order.
    fn approx_tiles(
        &self,
        query: &QueryBytes,
        panels: std::ops::Range<usize>,
        mut on_tile: impl FnMut(usize, &[f32]),
    ) {
        let panel_len = self.groups * LANES * GROUP;
        let mut sums = vec![0i32; TILE_PANELS * LANES];
        let mut approx = vec![0f32; TILE_PANELS * LANES];
        let mut panel = panels.start;
        while panel < panels.end {
            let n = (panels.end - panel).min(TILE_PANELS);
            let bytes = &self.panels[panel * panel_len..(panel + n) * panel_len];
            let out = &mut sums[..n * LANES];
            dots(bytes, self.groups, query, out);
            let first = panel * LANES;
            let live = self.rows.saturating_sub(first).min(out.len());
            for (i, (a, &sum)) in approx[..live].iter_mut().zip(&out[..live]).enumerate() {
                *a = self.scales[first + i] * sum as f32;
            }
            on_tile(first, &approx[..live]);
            panel += n;
        }
    }

    /// A copy holding the rows `order` of this one, in that order (row `i` of the copy
    /// is row `order[i]` here): the same bytes and scales, and the same error maxima
    /// (a bound for every row here holds for any subset of them).
    pub fn gather(&self, order: &[u32]) -> Quantised {
        let panel_len = self.groups * LANES * GROUP;
        let mut panels = super::huge_pages::zeroed(order.len().div_ceil(LANES) * panel_len);
        let mut scales = Vec::with_capacity(order.len());
        for (to, &from) in order.iter().enumerate() {
            let from = from as usize;
            scales.push(self.scales[from]);
            let (src, src_lane) = (
                &self.panels[(from / LANES) * panel_len..][..panel_len],
                from % LANES,
            );
            let (dst, dst_lane) = (
                &mut panels[(to / LANES) * panel_len..][..panel_len],
                to % LANES,
            );
            for g in 0..self.groups {
                dst[(g * LANES + dst_lane) * GROUP..][..GROUP]
                    .copy_from_slice(&src[(g * LANES + src_lane) * GROUP..][..GROUP]);
            }
        }
        Quantised {
            dim: self.dim,
            groups: self.groups,
            rows: order.len(),
            panels,
            scales,
            maxima: self.maxima,
            f32_only: self.f32_only,
        }
    }

    /// For every row, the centre (`centres`: row-major, `dim` floats each) with the
    /// largest approximate dot product, by the int8 kernel: a clustering's assignment,
    /// where the int8 rounding only moves rows that are nearly as close to two
    /// centres. Ties go to the first centre; an all-zero or non-finite centre is
    /// never chosen. Rows are split over the cores; each tile of rows stays in cache
    /// while every centre is scored against it.
    pub fn assign(&self, centres: &[f32]) -> Vec<u32> {
        let dim = self.dim;
        if dim == 0 || self.rows == 0 {
            return vec![0; self.rows];
        }
        let queries: Vec<(usize, QueryBytes, f32)> = centres
            .chunks_exact(dim)
            .enumerate()
            .filter_map(|(c, centre)| {
                let mut q = vec![0i8; self.groups * GROUP];
                let info = quantise(centre, &mut q[..dim]).filter(|i| i.scale > 0.0)?;
                Some((c, QueryBytes::new(&q), info.scale))
            })
            .collect();
        let panels = self.rows.div_ceil(LANES);
        // Split whatever the size: every row is scored against every centre.
        let parts = scan_threads(PARALLEL_ROWS.max(self.rows));
        let assign_part = |range: std::ops::Range<usize>| -> Vec<u32> {
            const TILE: usize = 64;
            let panel_len = self.groups * LANES * GROUP;
            let first_row = range.start * LANES;
            let end_row = (range.end * LANES).min(self.rows);
            let mut best = vec![(f32::NEG_INFINITY, 0u32); end_row.saturating_sub(first_row)];
            let mut sums = vec![0i32; TILE * LANES];
            let mut panel = range.start;
            while panel < range.end {
                let n = (range.end - panel).min(TILE);
                let bytes = &self.panels[panel * panel_len..(panel + n) * panel_len];
                let first = panel * LANES;
                let live = self.rows.saturating_sub(first).min(n * LANES);
                for (c, q, s_c) in &queries {
                    dots(bytes, self.groups, q, &mut sums[..n * LANES]);
                    for (i, &sum) in sums[..live].iter().enumerate() {
                        let v = self.scales[first + i] * sum as f32 * s_c;
                        let b = &mut best[first + i - first_row];
                        if v > b.0 {
                            *b = (v, *c as u32);
                        }
                    }
                }
                panel += n;
            }
            best.into_iter().map(|(_, c)| c).collect()
        };
        on_each(&split_panels(panels, parts), |range| {
            assign_part(range.clone())
        })
        .into_iter()
        .flatten()
        .collect()
    }

    /// [`Quantised::top_k`] among the rows in `ranges` only (rows of this copy): the
    /// `k` best by (exact f32 score, then key), where row `i` of this copy is row
    /// `original(i)` of `row_major` and the answer names rows of `row_major`. The
    /// int8 pre-scan finds the k-th largest approximate score `T` among the rows
    /// scanned; every row within `2B` of it is rescored in f32 (module notes). The
    /// rows are split over the cores once there are enough of them.
    pub fn top_k_in<'a, K>(
        &self,
        row_major: &[f32],
        query: &[f32],
        k: usize,
        ranges: &[std::ops::Range<usize>],
        original: impl Fn(usize) -> usize,
        key: impl Fn(usize) -> &'a K,
    ) -> (Vec<(f32, usize)>, ScanStats)
    where
        K: Ord + ?Sized + 'a,
    {
        if k == 0 || self.rows == 0 {
            return (Vec::new(), ScanStats::default());
        }
        let ranges: Vec<std::ops::Range<usize>> = ranges
            .iter()
            .map(|r| r.start.min(self.rows)..r.end.min(self.rows))
            .collect();
        let (qq, q_info) = self.quantise_query(query);
        let Some(q_info) = q_info else {
            let all: Vec<usize> = ranges
                .iter()
                .flat_map(|r| r.clone())
                .map(&original)
                .collect();
            let stats = ScanStats {
                rescored: all.len(),
                f32_scan: true,
            };
            return (rescore(row_major, self.dim, query, &all, k, &key), stats);
        };
        // In units of `s_r * (q_r . q_q)`, the scan's own numbers: `a_r / s_q`.
        let window = 2.0 * self.maxima.bound(&q_info, self.dim) / f64::from(q_info.scale);
        let quantised_query = QueryBytes::new(&qq);
        let rows: usize = ranges.iter().map(|r| r.len()).sum();
        let parts = scan_threads(rows);
        let scan = |pieces: &[std::ops::Range<usize>]| {
            let mut scan = PreScan::new(k, window);
            for r in pieces {
                scan.scan(self, &quantised_query, r.clone());
            }
            scan.finish()
        };
        let pieces = split_rows(&ranges, parts);
        let scans: Vec<PartScan> = on_each(&pieces, |p| scan(p));
        let candidates: Vec<usize> = candidates(&scans, k, window)
            .into_iter()
            .map(original)
            .collect();
        let stats = ScanStats {
            rescored: candidates.len(),
            f32_scan: false,
        };
        (
            rescore(row_major, self.dim, query, &candidates, k, &key),
            stats,
        )
    }
}

/// `f` of every item, each on its own thread (one item: on this one), in order; a
/// panic in one is raised again here.
pub(super) fn on_each<I: Sync, T: Send>(items: &[I], f: impl Fn(&I) -> T + Sync) -> Vec<T> {
    if let [one] = items {
        return vec![f(one)];
    }
    std::thread::scope(|s| {
        let handles: Vec<_> = items
            .iter()
            .map(|item| {
                let f = &f;
                s.spawn(move || f(item))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// `panels` panels cut into `parts` runs of panels of about equal length.
fn split_panels(panels: usize, parts: usize) -> Vec<std::ops::Range<usize>> {
    let per_part = panels.div_ceil(parts.max(1)).max(1);
    (0..parts.max(1))
        .map(|p| (p * per_part).min(panels)..((p + 1) * per_part).min(panels))
        .collect()
}

/// `ranges` cut into at most `parts` runs of about equal rows, each a whole number of
/// panels long (but the last), so no two parts compute the same panel.
fn split_rows(ranges: &[std::ops::Range<usize>], parts: usize) -> Vec<Vec<std::ops::Range<usize>>> {
    let rows: usize = ranges.iter().map(|r| r.len()).sum();
    let per = rows
        .div_ceil(parts.max(1))
        .next_multiple_of(LANES)
        .max(LANES);
    let mut out = vec![Vec::new()];
    let mut room = per;
    for r in ranges {
        let mut r = r.clone();
        while !r.is_empty() {
            if room == 0 {
                out.push(Vec::new());
                room = per;
            }
            let take = r.len().min(room);
            out.last_mut()
                .unwrap_or_else(|| unreachable!())
                .push(r.start..r.start + take);
            r.start += take;
            room -= take;
        }
    }
    out
}

/// The rows of a pre-scan's parts that could still be in the top `k`: within
/// `window` of the k-th largest approximate score over every part.
fn candidates(scans: &[PartScan], k: usize, window: f64) -> Vec<usize> {
    let mut best: Vec<f32> = scans.iter().flat_map(|s| s.best.iter().copied()).collect();
    let threshold = if best.len() < k {
        f64::NEG_INFINITY
    } else {
        let (_, kth, _) = best.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
        f64::from(*kth)
    };
    scans
        .iter()
        .flat_map(|s| s.candidates.iter())
        .filter(|&&(v, _)| f64::from(v) >= threshold - window)
        .map(|&(_, r)| r as usize)
        .collect()
}

/// A pre-scan in progress: the k largest approximate scores seen and every row
/// within `window` of the k-th largest at the time it was seen (a superset of those
/// within `window` of the final k-th largest, which only grows).
struct PreScan {
    k: usize,
    window: f64,
    best: BinaryHeap<Reverse<OrdF32>>,
    candidates: Vec<(f32, u32)>,
    prune_at: usize,
}

impl PreScan {
    fn new(k: usize, window: f64) -> Self {
        PreScan {
            k,
            window,
            best: BinaryHeap::with_capacity(k + 1),
            candidates: Vec::new(),
            prune_at: 4 * k + 1024,
        }
    }

    /// Scan `rows` of `set` (the panels holding them; their other rows are skipped).
    fn scan(&mut self, set: &Quantised, query: &QueryBytes, rows: std::ops::Range<usize>) {
        if rows.is_empty() {
            return;
        }
        let (k, window) = (self.k, self.window);
        let panels = rows.start / LANES..rows.end.div_ceil(LANES);
        let (best, candidates) = (&mut self.best, &mut self.candidates);
        let prune_at = &mut self.prune_at;
        set.approx_tiles(query, panels, |first, approx| {
            for (i, &v) in approx.iter().enumerate() {
                let row = first + i;
                if !rows.contains(&row) {
                    continue;
                }
                let floor = match best.peek() {
                    Some(Reverse(w)) if best.len() >= k => f64::from(w.0),
                    _ => f64::NEG_INFINITY,
                };
                if f64::from(v) >= floor - window {
                    candidates.push((v, row as u32));
                }
                if best.len() < k {
                    best.push(Reverse(OrdF32(v)));
                } else if f64::from(v) > floor {
                    best.pop();
                    best.push(Reverse(OrdF32(v)));
                }
            }
            if candidates.len() > *prune_at
                && let Some(Reverse(w)) = best.peek()
                && best.len() >= k
            {
                let floor = f64::from(w.0) - window;
                candidates.retain(|&(v, _)| f64::from(v) >= floor);
                *prune_at = (*prune_at).max(2 * candidates.len());
            }
        });
    }

    fn finish(self) -> PartScan {
        PartScan {
            best: self.best.into_iter().map(|Reverse(v)| v.0).collect(),
            candidates: self.candidates,
        }
    }
}

/// The thresholds of [`Quantised::ranks_of`] ascending, in the scan's units, widened
/// by the bound: a row above `above[j]` surely beats the j-th; one below `below[j]`
/// surely does not.
struct Tally {
    above: Vec<f64>,
    below: Vec<f64>,
}

/// What every part of a [`Quantised::ranks_of`] scan shares: the wanted rows as
/// (exact score, row, position asked) by score ascending, their thresholds in the
/// scan's units, and how to score and key a row.
struct RankJob<'j, S, F> {
    row_major: &'j [f32],
    dim: usize,
    query: &'j [f32],
    sorted: &'j [(f32, usize, usize)],
    tally: &'j Tally,
    score: &'j S,
    key: &'j F,
}

/// What one part of a scan found.
struct PartScan {
    best: Vec<f32>,
    candidates: Vec<(f32, u32)>,
}

/// An f32 ordered by `total_cmp` (approximate scores are finite: never NaN).
#[derive(Debug, Clone, Copy)]
struct OrdF32(f32);

impl Ord for OrdF32 {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}
impl PartialOrd for OrdF32 {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl PartialEq for OrdF32 {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for OrdF32 {}

/// The quantised query as the kernel reads it: per group of four dimensions, the
/// four bytes as one i32 and their absolute values as another.
struct QueryBytes {
    bytes: Vec<i32>,
    abs_bytes: Vec<i32>,
}

impl QueryBytes {
    fn new(q: &[i8]) -> Self {
        let pack = |f: &dyn Fn(i8) -> i8| -> Vec<i32> {
            q.chunks_exact(GROUP)
                .map(|four| {
                    i32::from_le_bytes([
                        f(four[0]) as u8,
                        f(four[1]) as u8,
                        f(four[2]) as u8,
                        f(four[3]) as u8,
                    ])
                })
                .collect()
        };
        QueryBytes {
            bytes: pack(&|b| b),
            abs_bytes: pack(&|b| b.abs()),
        }
    }
}

/// The exact f32 scores ([`exact_score`]) of up to eight `rows`, computed together:
/// eight independent sums, each added in the scalar order. Entry `i` is row `rows[i]`'s
/// score; entries past `rows.len()` are unused. No allocation: it runs for every
/// rescored group of eight.
fn score_rows(row_major: &[f32], dim: usize, query: &[f32], rows: &[usize]) -> [f32; 8] {
    let mut acc = [-0.0f32; 8];
    let mut starts: [&[f32]; 8] = [&[]; 8];
    for (start, &r) in starts.iter_mut().zip(rows) {
        *start = &row_major[r * dim..(r + 1) * dim];
    }
    let starts = &starts[..rows.len()];
    for (j, &q) in query.iter().enumerate().take(dim) {
        for (a, row) in acc.iter_mut().zip(starts) {
            *a += row[j] * q;
        }
    }
    acc
}

/// Exact f32 scores of `rows`, and the `k` best by (score, key), best first.
fn rescore<'a, K>(
    row_major: &[f32],
    dim: usize,
    query: &[f32],
    rows: &[usize],
    k: usize,
    key: &impl Fn(usize) -> &'a K,
) -> Vec<(f32, usize)>
where
    K: Ord + ?Sized + 'a,
{
    let mut scored: Vec<(f32, usize)> = Vec::with_capacity(rows.len());
    for eight in rows.chunks(8) {
        let scores = score_rows(row_major, dim, query, eight);
        scored.extend(scores.into_iter().zip(eight.iter().copied()));
    }
    let by = |a: &(f32, usize), b: &(f32, usize)| {
        b.0.total_cmp(&a.0).then_with(|| key(b.1).cmp(key(a.1)))
    };
    if k < scored.len() {
        scored.select_nth_unstable_by(k, by);
        scored.truncate(k);
    }
    scored.sort_by(by);
    scored
}

/// Integer dot products of whole panels (`out.len() / LANES` of them) with the query,
/// on the widest instruction set this CPU has. Integer sums are exact, so every
/// kernel gives the same numbers.
fn dots(panels: &[i8], groups: usize, query: &QueryBytes, out: &mut [i32]) {
    #[cfg(target_arch = "x86_64")]
    avx2::dots(panels, groups, query, out);
    #[cfg(not(target_arch = "x86_64"))]
    dots_portable(panels, groups, query, out);
}

/// The kernel without SIMD: lane `l` of a panel sums `x[l][j] * q[j]` over every
/// dimension.
fn dots_portable(panels: &[i8], groups: usize, query: &QueryBytes, out: &mut [i32]) {
    let panel_len = groups * LANES * GROUP;
    for (panel, out) in panels
        .chunks_exact(panel_len)
        .zip(out.chunks_exact_mut(LANES))
    {
        let mut acc = [0i32; LANES];
        for (g, lanes) in panel.chunks_exact(LANES * GROUP).enumerate() {
            let q = query.bytes[g].to_le_bytes();
            for (a, x) in acc.iter_mut().zip(lanes.chunks_exact(GROUP)) {
                *a += x
                    .iter()
                    .zip(q)
                    .map(|(&x, q)| i32::from(x) * i32::from(q as i8))
                    .sum::<i32>();
            }
        }
        out.copy_from_slice(&acc);
    }
}

/// The kernel with AVX2 intrinsics, behind a safe function that only calls it where
/// the CPU has AVX2.
#[cfg(target_arch = "x86_64")]
#[allow(unsafe_code)]
mod avx2 {
    use super::{GROUP, LANES, QueryBytes};
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi32, _mm256_loadu_si256, _mm256_madd_epi16, _mm256_maddubs_epi16,
        _mm256_set1_epi16, _mm256_set1_epi32, _mm256_setzero_si256, _mm256_sign_epi8,
        _mm256_storeu_si256,
    };

    /// Panel dot products with AVX2, or the portable kernel where AVX2 is missing.
    pub fn dots(panels: &[i8], groups: usize, query: &QueryBytes, out: &mut [i32]) {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the only requirement `dots_avx2` adds to a safe call is that the
            // CPU supports AVX2, checked just above.
            unsafe { dots_avx2(panels, groups, query, out) }
        } else {
            super::dots_portable(panels, groups, query, out);
        }
    }

    /// Per group, `maddubs(|q|, sign(x, q))` multiplies `|q| * (x * sign q) = x * q`
    /// byte by byte (unsigned times signed, as the instruction wants) and adds
    /// neighbouring pairs into i16: at most `2 * 127 * 127 = 32,258`, so it never
    /// saturates (quantised values lie in `[-127, 127]`, never -128). `madd` with ones
    /// then adds the two pairs of each lane into i32.
    #[target_feature(enable = "avx2")]
    fn dots_avx2(panels: &[i8], groups: usize, query: &QueryBytes, out: &mut [i32]) {
        let panel_len = groups * LANES * GROUP;
        let ones = _mm256_set1_epi16(1);
        let (q, qa) = (&query.bytes[..groups], &query.abs_bytes[..groups]);
        for (panel, out) in panels
            .chunks_exact(panel_len)
            .zip(out.chunks_exact_mut(LANES))
        {
            let mut acc = _mm256_setzero_si256();
            for ((lanes, &q4), &qa4) in panel.chunks_exact(LANES * GROUP).zip(q).zip(qa) {
                // SAFETY: `lanes` is a slice of exactly 32 bytes (chunks_exact), the
                // width of the unaligned load.
                let x = unsafe { _mm256_loadu_si256(lanes.as_ptr().cast::<__m256i>()) };
                let signed = _mm256_sign_epi8(x, _mm256_set1_epi32(q4));
                let pairs = _mm256_maddubs_epi16(_mm256_set1_epi32(qa4), signed);
                acc = _mm256_add_epi32(acc, _mm256_madd_epi16(pairs, ones));
            }
            let out: &mut [i32; LANES] = out.try_into().unwrap_or_else(|_| unreachable!());
            // SAFETY: `out` is exactly eight i32 (32 bytes), the width of the store.
            unsafe { _mm256_storeu_si256(out.as_mut_ptr().cast::<__m256i>(), acc) }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xorshift(s: &mut u64) -> f32 {
        *s ^= *s << 13;
        *s ^= *s >> 7;
        *s ^= *s << 17;
        ((*s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    }

    #[test]
    fn simd_and_portable_kernels_give_the_same_sums() {
        let (dim, rows) = (37, 29); // a partial group and a partial panel
        let mut s = 7u64;
        let data: Vec<f32> = (0..rows * dim).map(|_| xorshift(&mut s)).collect();
        let q: Vec<f32> = (0..dim).map(|_| xorshift(&mut s)).collect();
        let set = Quantised::new(&data, dim);
        let mut qq = vec![0i8; set.groups * GROUP];
        quantise(&q, &mut qq[..dim]).expect("finite");
        let query = QueryBytes::new(&qq);
        let n = rows.div_ceil(LANES) * LANES;
        let (mut a, mut b) = (vec![0; n], vec![0; n]);
        dots(&set.panels, set.groups, &query, &mut a);
        dots_portable(&set.panels, set.groups, &query, &mut b);
        assert_eq!(a, b);
        // And each sum is the plain integer dot product of the quantised vectors.
        let mut qr = vec![0i8; dim];
        for r in 0..rows {
            quantise(&data[r * dim..(r + 1) * dim], &mut qr).expect("finite");
            let want: i32 = qr
                .iter()
                .zip(&qq)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            assert_eq!(a[r], want, "row {r}");
        }
    }

    /// The bound holds on every row: `|f32 score - approximate score| <= B`.
    #[test]
    fn the_error_bound_holds_on_every_row() {
        let (dim, rows) = (384, 3_000);
        let mut s = 11u64;
        let data: Vec<f32> = (0..rows * dim).map(|_| xorshift(&mut s)).collect();
        let q: Vec<f32> = (0..dim).map(|_| xorshift(&mut s)).collect();
        let set = Quantised::new(&data, dim);
        let mut qq = vec![0i8; set.groups * GROUP];
        let qi = quantise(&q, &mut qq[..dim]).expect("finite");
        let bound = set.maxima.bound(&qi, dim);
        let mut qr = vec![0i8; dim];
        let mut worst = 0.0f64;
        for r in 0..rows {
            let row = &data[r * dim..(r + 1) * dim];
            let ri = quantise(row, &mut qr).expect("finite");
            let sum: i32 = qr
                .iter()
                .zip(&qq)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            let approx = f64::from(ri.scale * sum as f32) * f64::from(qi.scale);
            let err = (f64::from(exact_score(row, &q)) - approx).abs();
            worst = worst.max(err);
        }
        assert!(worst <= bound, "worst {worst} > bound {bound}");
        // A bound far wider than the errors would rescore most rows: it stays within
        // a small multiple of the worst error seen.
        assert!(bound < 40.0 * worst, "bound {bound} vs worst {worst}");
    }

    /// `ranks_of` against a full sort of every row by (f32 score, key) descending,
    /// on a set big enough for the parallel scan, with duplicate rows (ties broken by
    /// key) and wanted rows from the top, the middle and the bottom.
    #[test]
    fn ranks_of_equal_the_full_sort() {
        let (dim, rows) = (8, PARALLEL_ROWS + 4_321);
        let mut s = 5u64;
        let distinct: Vec<f32> = (0..997 * dim).map(|_| xorshift(&mut s)).collect();
        let data: Vec<f32> = (0..rows)
            .flat_map(|r| {
                distinct[(r % 997) * dim..(r % 997 + 1) * dim]
                    .iter()
                    .copied()
            })
            .collect();
        let keys: Vec<String> = (0..rows)
            .map(|r| format!("k{:07}", (r * 7919) % rows))
            .collect();
        let set = Quantised::new(&data, dim);
        for trial in 0..3 {
            let q: Vec<f32> = if trial == 0 {
                data[..dim].to_vec() // a row's own vector: ties at the top
            } else {
                (0..dim).map(|_| xorshift(&mut s)).collect()
            };
            let mut all: Vec<(f32, usize)> = (0..rows)
                .map(|r| (exact_score(&data[r * dim..(r + 1) * dim], &q), r))
                .collect();
            all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| keys[b.1].cmp(&keys[a.1])));
            let wanted: Vec<usize> = [0, 1, 2, 50, 997, rows / 2, rows - 2, rows - 1]
                .iter()
                .map(|&i| all[i].1)
                .chain([3, 998, 12_345])
                .collect();
            let got = set.ranks_of(&data, &q, &wanted, |r| keys[r].as_str());
            for (&w, (rank, score)) in wanted.iter().zip(got) {
                let at = all.iter().position(|&(_, r)| r == w).expect("row");
                assert_eq!(
                    (rank, score.to_bits()),
                    (at + 1, all[at].0.to_bits()),
                    "row {w}"
                );
            }
        }
    }

    /// A set with a non-finite value takes the plain f32 path: the same ranks.
    #[test]
    fn ranks_of_without_the_int8_copy_equal_the_full_sort() {
        let (dim, rows) = (4, 300);
        let mut s = 9u64;
        let mut data: Vec<f32> = (0..rows * dim)
            .map(|i| if i % 40 < 4 { 0.25 } else { xorshift(&mut s) })
            .collect();
        data[7 * dim] = f32::NAN;
        let keys: Vec<String> = (0..rows)
            .map(|r| format!("k{:04}", (r * 37) % rows))
            .collect();
        let set = Quantised::new(&data, dim);
        let q: Vec<f32> = (0..dim).map(|_| xorshift(&mut s)).collect();
        let mut all: Vec<(f32, usize)> = (0..rows)
            .map(|r| (exact_score(&data[r * dim..(r + 1) * dim], &q), r))
            .collect();
        all.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| keys[b.1].cmp(&keys[a.1])));
        let wanted: Vec<usize> = vec![7, 0, 10, 20, 299, all[0].1, all[150].1];
        let got = set.ranks_of(&data, &q, &wanted, |r| keys[r].as_str());
        for (&w, (rank, score)) in wanted.iter().zip(got) {
            let at = all.iter().position(|&(_, r)| r == w).expect("row");
            assert_eq!(
                (rank, score.to_bits()),
                (at + 1, all[at].0.to_bits()),
                "row {w}"
            );
        }
    }
}
