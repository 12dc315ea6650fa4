//! Exact dense top-100 over N x 384 synthetic unit vectors: the scalar scan raglab
//! used before (one f32 dot product per row, all N rows sorted) beside the int8
//! pre-scan with f32 rescoring, with a `memcpy` of the int8 copy's bytes as the
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

/// `n` unit vectors around 256 random centres (noise about as large as the centre:
/// near neighbours are close, as real embeddings of related passages are).
fn clustered(n: usize, dim: usize, s: &mut u64) -> Vec<f32> {
    let centres: Vec<Vec<f32>> = (0..256).map(|_| unit(dim, s)).collect();
    let mut out = Vec::with_capacity(n * dim);
    for i in 0..n {
        let c = &centres[(i * 2_654_435_761) % centres.len()];
        let noise = unit(dim, s);
        let v: Vec<f32> = c.iter().zip(&noise).map(|(a, b)| a + 0.9 * b).collect();
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        out.extend(v.into_iter().map(|x| x / norm));
    }
    out
}

fn main() {
    let dim = 384;
    let k = 100;
    let queries = 30;
    println!(
        "{:>8} {:>10} {:>10} {:>8} {:>9} {:>10} {:>11} {:>11} {:>9}",
        "rows",
        "scalar ms",
        "int8 ms",
        "speedup",
        "rescored",
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
        let data = clustered(n, dim, &mut s);
        let ids = (0..n).map(|i| format!("doc-{i:07}#chunk")).collect();
        let set = VectorSet::new(dim, ids, vec![String::new(); n], data);
        set.prepare_search();
        // Queries drawn like the rows: each has a cluster of close neighbours.
        let qs: Vec<Vec<f32>> = clustered(queries, dim, &mut s)
            .chunks(dim)
            .map(<[f32]>::to_vec)
            .collect();
        let (mut old, mut new, mut rescored) = (Vec::new(), Vec::new(), Vec::new());
        for q in &qs {
            let t = Instant::now();
            let a = set.search_scalar(q, k);
            old.push(ms(t));
            let t = Instant::now();
            let (b, stats) = set.search_with_stats(q, k);
            new.push(ms(t));
            rescored.push(stats.rescored as f64);
            assert_eq!(a, b, "the int8 scan must return the scalar scan's top {k}");
        }
        let bytes = set.scanned_bytes();
        let copies = raglab::store::huge_pages::copy_times_ms(bytes, queries);
        let (old, new, copy) = (median(old), median(new), median(copies));
        let gbps = |t: f64| bytes as f64 / (t * 1e-3) / 1e9;
        println!(
            "{n:>8} {old:>10.3} {new:>10.3} {:>7.1}x {:>9.0} {:>10.2} {copy:>11.3} {:>11.2} {:>8.0}%",
            old / new,
            median(rescored),
            gbps(new),
            gbps(copy),
            100.0 * copy / new
        );
    }
    println!(
        "(identical top-{k} ids and scores on every query; scan GB/s = the int8 copy's bytes / \
         the whole search's time, rescoring included; memcpy copies the same number of bytes; \
         synthetic clustered unit vectors)"
    );
}
