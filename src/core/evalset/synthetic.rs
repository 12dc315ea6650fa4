//! Synthetic corpora for throughput benchmarks at sizes no real corpus here reaches
//! (up to millions of chunks): never for quality figures.
//!
//! **Text.** Words are drawn from a Zipf distribution (exponent 1) over a vocabulary of
//! pronounceable pseudo-words, as word frequencies in real text follow Zipf's law: a
//! few words occur in most passages and most words in few, so BM25 posting lists
//! have real lengths (a small uniform vocabulary would put every word in every
//! passage and make sparse search look far slower than on real text).
//!
//! **Vectors.** Unit vectors around `sqrt(n)` random centres, one centre per
//! document, with noise about as large as the centre: passages of one document are
//! near each other and far from most others, as real embeddings of related passages
//! are. A query's vector is its target passage's vector plus noise, so it has a
//! cluster of close neighbours.
//!
//! Everything is a pure function of the seed: the same corpus on every machine.

use std::collections::BTreeMap;

use crate::core::corpus::{DocFormat, SourceDoc};
use crate::core::rng::Rng;

/// Sections (chunks) per synthetic document.
pub const SECTIONS_PER_DOC: usize = 10;

/// Vocabulary size of the synthetic text.
const VOCABULARY: usize = 30_000;

const SYLLABLES: [&str; 24] = [
    "ba", "ko", "ri", "te", "mu", "sa", "lo", "ne", "vi", "da", "pe", "ro", "gu", "fi", "ma", "zo",
    "ti", "ka", "le", "no", "shu", "ra", "mi", "to",
];

/// The words, most frequent first.
fn vocabulary() -> Vec<String> {
    (0..VOCABULARY)
        .map(|mut i| {
            let mut w = String::new();
            loop {
                w.push_str(SYLLABLES[i % SYLLABLES.len()]);
                i /= SYLLABLES.len();
                if i == 0 {
                    break;
                }
                i -= 1;
            }
            w
        })
        .collect()
}

/// Draws word ranks from Zipf(1) over the vocabulary by inverting its CDF.
struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    fn new(n: usize) -> Self {
        let mut acc = 0.0;
        let mut cdf: Vec<f64> = (1..=n)
            .map(|r| {
                acc += 1.0 / r as f64;
                acc
            })
            .collect();
        for c in &mut cdf {
            *c /= acc;
        }
        Self { cdf }
    }

    fn draw(&self, rng: &mut Rng) -> usize {
        let u = uniform(rng);
        self.cdf.partition_point(|&c| c < u).min(self.cdf.len() - 1)
    }
}

/// Uniform in `[0, 1)` with 53 random bits.
fn uniform(rng: &mut Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Standard normal (Box-Muller).
fn normal(rng: &mut Rng) -> f64 {
    let u1 = uniform(rng).max(f64::MIN_POSITIVE);
    let u2 = uniform(rng);
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
}

/// `v` scaled to unit length.
fn normalised(mut v: Vec<f64>) -> Vec<f64> {
    let n = v.iter().map(|x| x * x).sum::<f64>().sqrt();
    let n = n.max(f64::MIN_POSITIVE);
    v.iter_mut().for_each(|x| *x /= n);
    v
}

/// A random unit vector of `dim` floats.
fn random_unit(dim: usize, rng: &mut Rng) -> Vec<f64> {
    normalised((0..dim).map(|_| normal(rng)).collect())
}

/// `a + weight * b`, normalised, as f32.
fn blend(a: &[f64], b: &[f64], weight: f64) -> Vec<f32> {
    normalised(a.iter().zip(b).map(|(x, y)| x + weight * y).collect())
        .into_iter()
        .map(|x| x as f32)
        .collect()
}

/// Writes synthetic documents of [`SECTIONS_PER_DOC`] markdown sections each.
pub struct TextGenerator {
    words: Vec<String>,
    zipf: Zipf,
    rng: Rng,
}

impl TextGenerator {
    pub fn new(seed: u64) -> Self {
        Self {
            words: vocabulary(),
            zipf: Zipf::new(VOCABULARY),
            rng: Rng::new(seed),
        }
    }

    /// Document `d` with `sections` sections of 60-180 words (id `synthetic/doc-D`).
    pub fn document(&mut self, d: usize, sections: usize) -> SourceDoc {
        let title = format!("Synthetic guidance {d}");
        let mut text = format!("# {title}\n\n");
        for s in 0..sections {
            text.push_str(&format!("## Section {s}\n\n"));
            let n = 60 + self.rng.below(121);
            for i in 0..n {
                if i > 0 {
                    text.push(' ');
                }
                text.push_str(&self.words[self.zipf.draw(&mut self.rng)]);
            }
            text.push_str(".\n\n");
        }
        SourceDoc {
            id: format!("synthetic/doc-{d:07}"),
            title,
            topic: Some(format!("topic-{}", d % 12)),
            format: DocFormat::Markdown,
            text,
            origin: format!("synthetic:{d}"),
            metadata: BTreeMap::new(),
        }
    }

    /// A query of `words` words taken at random from `passage` (its target).
    pub fn query_from(&mut self, passage: &str, words: usize) -> String {
        let ws: Vec<&str> = passage
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 1)
            .collect();
        if ws.is_empty() {
            return String::new();
        }
        (0..words)
            .map(|_| ws[self.rng.below(ws.len())])
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Unit vectors for synthetic passages: one centre per document (`doc_of[i]` is row
/// i's document), `sqrt(documents)` centres in all.
pub struct VectorGenerator {
    dim: usize,
    centres: Vec<Vec<f64>>,
    rng: Rng,
}

impl VectorGenerator {
    pub fn new(dim: usize, documents: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed);
        let count = ((documents as f64).sqrt().ceil() as usize).max(8);
        let centres = (0..count).map(|_| random_unit(dim, &mut rng)).collect();
        Self { dim, centres, rng }
    }

    /// The vector of a passage of document `doc`.
    pub fn passage(&mut self, doc: usize) -> Vec<f32> {
        let noise = random_unit(self.dim, &mut self.rng);
        let centre = &self.centres[doc.wrapping_mul(2_654_435_761) % self.centres.len()];
        blend(centre, &noise, 0.9)
    }

    /// A query's vector near `target` (its passage's vector).
    pub fn query_near(&mut self, target: &[f32]) -> Vec<f32> {
        let t: Vec<f64> = target.iter().map(|&x| f64::from(x)).collect();
        let noise = random_unit(self.dim, &mut self.rng);
        blend(&t, &noise, 0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_distinct_and_zipf_puts_the_first_rank_most_often() {
        let v = vocabulary();
        let set: std::collections::HashSet<&String> = v.iter().collect();
        assert_eq!(set.len(), VOCABULARY);
        let z = Zipf::new(VOCABULARY);
        let mut rng = Rng::new(3);
        let mut counts = vec![0usize; VOCABULARY];
        for _ in 0..200_000 {
            counts[z.draw(&mut rng)] += 1;
        }
        // Zipf(1): rank 1 is drawn twice as often as rank 2 (1/1 vs 1/2 of the mass).
        let ratio = counts[0] as f64 / counts[1] as f64;
        assert!((1.85..2.15).contains(&ratio), "ratio {ratio}");
        // P(rank 1) = 1 / H_30000 = 0.0933.
        let p = counts[0] as f64 / 200_000.0;
        assert!((0.088..0.099).contains(&p), "p {p}");
    }

    #[test]
    fn documents_and_vectors_are_the_same_for_a_seed() {
        let a = TextGenerator::new(9).document(4, 3);
        let b = TextGenerator::new(9).document(4, 3);
        assert_eq!(a, b);
        assert_eq!(a.text.matches("\n## ").count(), 3);
        let mut g = VectorGenerator::new(16, 100, 5);
        let v = g.passage(7);
        let n: f32 = v.iter().map(|x| x * x).sum();
        assert!((n - 1.0).abs() < 1e-5);
        let q = g.query_near(&v);
        let cos: f32 = q.iter().zip(&v).map(|(a, b)| a * b).sum();
        // |t + 0.5 n| with t, n unit and nearly orthogonal: cos ~ 1 / sqrt(1.25) = 0.89.
        assert!(cos > 0.7, "cos {cos}");
    }
}
