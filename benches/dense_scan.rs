//! Exact dense top-100 over N x 384 synthetic unit vectors: the scalar scan raglab
//! used before (one dot product per row, all N rows sorted) beside the panel scan
//! (SIMD across rows into a k-sized heap), with a `memcpy` of the same bytes as the
//! machine's memory-bandwidth reference, all in one run. Both scans must return the
//! same ids and scores (checked on every query).
//!
//! `cargo bench --bench dense_scan [-- ROWS...]` (default 20000 100000; prints
//! medians of 30 queries, in ms).

use std::time::Instant;

use raglab::store::vectors::VectorSet;

/// xorshift64: a fixed sequence, no dependency.
fn next(s: &mut u64) -> f32 {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    ((*s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
}

fn unit(dim: usize, s: &mut u64) -> Vec<f32> {
    let v: Vec<f32> = (0..dim).map(|_| next(s)).collect();
    let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    v.into_iter().map(|x| x / n).collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

fn main() {
    let dim = 384;
    let k = 100;
    let queries = 30;
    println!(
        "{:>8} {:>12} {:>12} {:>8} {:>12} {:>12} {:>12} {:>9}",
        "rows",
        "scalar ms",
        "panel ms",
        "speedup",
        "scan GB/s",
        "memcpy ms",
        "memcpy GB/s",
        "scan/cpy"
    );
    let mut sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    if sizes.is_empty() {
        sizes = vec![20_000, 100_000];
    }
    for n in sizes {
        let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
        let data: Vec<f32> = (0..n).flat_map(|_| unit(dim, &mut s)).collect();
        let ids = (0..n).map(|i| format!("doc-{i:07}#chunk")).collect();
        let set = VectorSet::new(dim, ids, vec![String::new(); n], data);
        set.prepare_search();
        let qs: Vec<Vec<f32>> = (0..queries).map(|_| unit(dim, &mut s)).collect();
        let (mut old, mut new) = (Vec::new(), Vec::new());
        for q in &qs {
            let t = Instant::now();
            let a = set.search_scalar(q, k);
            old.push(ms(t));
            let t = Instant::now();
            let b = set.search(q, k);
            new.push(ms(t));
            assert_eq!(a, b, "the panel scan must return the scalar scan's top {k}");
        }
        let data = &set.data;
        let mut dst = vec![0.0f32; data.len()];
        let mut copies = Vec::new();
        for _ in 0..queries {
            let t = Instant::now();
            dst.copy_from_slice(std::hint::black_box(data));
            copies.push(ms(t));
            std::hint::black_box(&dst);
        }
        let bytes = (n * dim * 4) as f64;
        let (old, new, copy) = (median(old), median(new), median(copies));
        let gbps = |t: f64| bytes / (t * 1e-3) / 1e9;
        println!(
            "{n:>8} {old:>12.3} {new:>12.3} {:>7.1}x {:>12.2} {copy:>12.3} {:>12.2} {:>8.0}%",
            old / new,
            gbps(new),
            gbps(copy),
            100.0 * copy / new
        );
    }
    println!("(identical top-{k} ids and scores on every query; GB/s = vector bytes / time)");
}
