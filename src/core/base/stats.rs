//! Corpus statistics shown by `raglab corpus stats` and the corpus pane.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::core::chunk::Chunk;

/// Upper bounds (exclusive) of the chunk-length buckets, in words; the last is open.
pub const LENGTH_BUCKETS: [usize; 6] = [50, 100, 200, 400, 800, usize::MAX];

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CorpusStats {
    pub documents: usize,
    pub chunks: usize,
    pub words: usize,
    pub topics: BTreeMap<String, usize>,
    pub min_words: usize,
    pub median_words: usize,
    pub max_words: usize,
    /// `(label, count)` per length bucket.
    pub length_histogram: Vec<(String, usize)>,
}

/// Percentile with linear interpolation between order statistics (numpy's default).
pub fn percentile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    let pos = q / 100.0 * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    Some(sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64))
}

/// The `q` quantile (0..=1) of unsorted values, numpy's linear interpolation; `None`
/// for no values. The one quantile raglab reports (medians, p50/p95 latencies).
pub fn quantile(values: &[f64], q: f64) -> Option<f64> {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    percentile(&v, q * 100.0)
}

/// [`quantile`] of timings, 0 when there are none: what a bench prints for a
/// stage that timed nothing (so every bench reports one kind of p50/p95).
pub fn timing_quantile(values: &[f64], q: f64) -> f64 {
    quantile(values, q).unwrap_or(0.0)
}

/// Label of bucket `i` of [`LENGTH_BUCKETS`].
pub fn bucket_label(i: usize) -> String {
    let lo = if i == 0 { 0 } else { LENGTH_BUCKETS[i - 1] };
    match LENGTH_BUCKETS[i] {
        usize::MAX => format!("{lo}+"),
        hi => format!("{lo}-{}", hi - 1),
    }
}

/// The lower bound of a length bucket's label (`"100-199"` -> 100, `"800+"` -> 800),
/// to order buckets by length rather than as text.
pub fn bucket_lower_bound(label: &str) -> usize {
    label
        .split(['-', '+'])
        .next()
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or(0)
}

/// Index of the length bucket of a word count.
pub fn bucket_of(words: usize) -> usize {
    LENGTH_BUCKETS
        .iter()
        .position(|&hi| words < hi)
        .unwrap_or(LENGTH_BUCKETS.len() - 1)
}

/// Histogram of chunk lengths over the given chunks.
pub fn length_histogram<'a>(chunks: impl IntoIterator<Item = &'a Chunk>) -> Vec<(String, usize)> {
    let mut counts = [0usize; LENGTH_BUCKETS.len()];
    for c in chunks {
        counts[bucket_of(c.word_count)] += 1;
    }
    counts
        .iter()
        .enumerate()
        .map(|(i, &n)| (bucket_label(i), n))
        .collect()
}

pub fn corpus_stats(chunks: &[Chunk]) -> CorpusStats {
    let mut docs = std::collections::BTreeSet::new();
    let mut topics: BTreeMap<String, usize> = BTreeMap::new();
    let mut lengths: Vec<usize> = Vec::with_capacity(chunks.len());
    for c in chunks {
        if docs.insert(c.doc_id.as_str()) {
            *topics
                .entry(c.topic.clone().unwrap_or_else(|| "(none)".into()))
                .or_default() += 1;
        }
        lengths.push(c.word_count);
    }
    lengths.sort_unstable();
    CorpusStats {
        documents: docs.len(),
        chunks: chunks.len(),
        words: lengths.iter().sum(),
        topics,
        min_words: lengths.first().copied().unwrap_or(0),
        median_words: lengths.get(lengths.len() / 2).copied().unwrap_or(0),
        max_words: lengths.last().copied().unwrap_or(0),
        length_histogram: length_histogram(chunks),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_half_open() {
        assert_eq!(bucket_of(0), 0);
        assert_eq!(bucket_of(49), 0);
        assert_eq!(bucket_of(50), 1);
        assert_eq!(bucket_of(10_000), 5);
        assert_eq!(bucket_label(0), "0-49");
        assert_eq!(bucket_label(5), "800+");
    }
}
