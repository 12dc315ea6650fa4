//! Corpus variants: C_F indexes the full chunks, C_S every chunk's
//! LLM summary, C_R the summary of each chunk longer than 512 tokens (for the
//! embedding model's tokenizer) and the full text of the others. A variant only
//! changes what retrieval indexes: the chunk ids stay, and generation always gets the
//! full chunk.
//!
//! A summarised chunk is indexed as its header path, a blank line and its summary
//! (the header path is metadata the full chunk is indexed with too, so both variants
//! keep it).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::core::chunk::Chunk;

/// Chunks longer than this many tokens are summarised in C_R: 512 is the context of
/// common embedding models (multilingual-E5, MiniLM), beyond which they truncate.
pub const REDUCE_ABOVE_TOKENS: usize = 512;

/// Which corpus retrieval indexes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Variant {
    /// C_F: the full chunks.
    #[default]
    #[serde(rename = "F")]
    Full,
    /// C_S: every chunk replaced by its summary.
    #[serde(rename = "S")]
    Summary,
    /// C_R: chunks over [`REDUCE_ABOVE_TOKENS`] tokens replaced by their summary.
    #[serde(rename = "R")]
    Reduced,
}

impl Variant {
    pub const ALL: [Variant; 3] = [Variant::Full, Variant::Summary, Variant::Reduced];

    /// The paper's name (`C_F`, `C_S`, `C_R`).
    pub fn paper_name(self) -> &'static str {
        match self {
            Variant::Full => "C_F",
            Variant::Summary => "C_S",
            Variant::Reduced => "C_R",
        }
    }

    /// Suffix of this variant's index and vector datasets (`""` for C_F, whose
    /// indexes keep their original names).
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Full => "",
            Variant::Summary => "-S",
            Variant::Reduced => "-R",
        }
    }

    /// Whether `chunk` is indexed under its summary in this variant. C_R needs the
    /// chunk's token count (`None`: not counted yet).
    pub fn replaces(self, chunk: &Chunk, above: usize) -> Option<bool> {
        match self {
            Variant::Full => Some(false),
            Variant::Summary => Some(true),
            Variant::Reduced => chunk.token_count.map(|n| n > above),
        }
    }
}

impl fmt::Display for Variant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Variant::Full => "F",
            Variant::Summary => "S",
            Variant::Reduced => "R",
        })
    }
}

impl FromStr for Variant {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "f" | "full" | "c_f" => Ok(Variant::Full),
            "s" | "summary" | "c_s" => Ok(Variant::Summary),
            "r" | "reduced" | "c_r" => Ok(Variant::Reduced),
            _ => Err(format!("unknown corpus variant `{s}` (expected F, S or R)")),
        }
    }
}

/// Why a variant cannot be built from the stored chunks and summaries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VariantError {
    #[error(
        "{count} chunk(s) of corpus {variant} have no summary of their current text (first: `{first}`): run `raglab summarise`"
    )]
    MissingSummaries {
        variant: &'static str,
        count: usize,
        first: String,
    },
    #[error(
        "{count} chunk(s) have no token count (first: `{first}`): run `raglab index` with an embedding model to count them"
    )]
    MissingTokenCounts { count: usize, first: String },
}

/// The chunks as `variant` indexes them: same ids and order, the text of each
/// replaced chunk swapped for its summary (`summaries`: chunk id -> summary of the
/// chunk's current text). Returns the chunks and how many were replaced.
pub fn retrieval_chunks(
    variant: Variant,
    chunks: &[Chunk],
    summaries: &HashMap<String, String>,
    above: usize,
) -> Result<(Vec<Chunk>, usize), VariantError> {
    let uncounted: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| variant.replaces(c, above).is_none())
        .collect();
    if let Some(first) = uncounted.first() {
        return Err(VariantError::MissingTokenCounts {
            count: uncounted.len(),
            first: first.id.clone(),
        });
    }
    let replaced: Vec<&Chunk> = chunks
        .iter()
        .filter(|c| variant.replaces(c, above) == Some(true))
        .collect();
    let missing: Vec<&&Chunk> = replaced
        .iter()
        .filter(|c| !summaries.contains_key(&c.id))
        .collect();
    if let Some(first) = missing.first() {
        return Err(VariantError::MissingSummaries {
            variant: variant.paper_name(),
            count: missing.len(),
            first: first.id.clone(),
        });
    }
    let out = chunks
        .iter()
        .map(
            |c| match (variant.replaces(c, above), summaries.get(&c.id)) {
                (Some(true), Some(s)) => Chunk {
                    text: s.clone(),
                    word_count: crate::core::text::word_count(s),
                    ..c.clone()
                },
                _ => c.clone(),
            },
        )
        .collect();
    Ok((out, replaced.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(id: &str, text: &str, tokens: Option<usize>) -> Chunk {
        Chunk {
            id: id.into(),
            doc_id: "d".into(),
            title: "T".into(),
            topic: None,
            header_path: vec!["T".into(), id.into()],
            text: text.into(),
            byte_start: 0,
            byte_end: text.len(),
            word_count: text.split_whitespace().count(),
            ordinal: 0,
            token_count: tokens,
            token_model: tokens.map(|_| "m".into()),
        }
    }

    #[test]
    fn variants_replace_what_the_paper_says() {
        let chunks = vec![
            chunk("a", "short text", Some(512)),
            chunk("b", "long text", Some(513)),
        ];
        let sums: HashMap<String, String> = [("a", "sum a"), ("b", "sum b two")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let (f, n) = retrieval_chunks(Variant::Full, &chunks, &sums, 512).expect("F");
        assert_eq!(
            (f[0].text.as_str(), f[1].text.as_str(), n),
            ("short text", "long text", 0)
        );
        let (s, n) = retrieval_chunks(Variant::Summary, &chunks, &sums, 512).expect("S");
        assert_eq!(
            (s[0].text.as_str(), s[1].text.as_str(), n),
            ("sum a", "sum b two", 2)
        );
        assert_eq!(s[1].word_count, 3);
        assert_eq!(s[1].indexed_text(), "T > b\n\nsum b two");
        // 512 is not over 512: only b is replaced.
        let (r, n) = retrieval_chunks(Variant::Reduced, &chunks, &sums, 512).expect("R");
        assert_eq!(
            (r[0].text.as_str(), r[1].text.as_str(), n),
            ("short text", "sum b two", 1)
        );
    }

    #[test]
    fn missing_summaries_and_counts_are_named() {
        let chunks = vec![chunk("a", "x", Some(10)), chunk("b", "y", Some(900))];
        let none = HashMap::new();
        // C_R only needs the long chunk's summary.
        let only_b: HashMap<String, String> = [("b".to_string(), "s".to_string())].into();
        assert!(retrieval_chunks(Variant::Reduced, &chunks, &only_b, 512).is_ok());
        assert_eq!(
            retrieval_chunks(Variant::Summary, &chunks, &only_b, 512),
            Err(VariantError::MissingSummaries {
                variant: "C_S",
                count: 1,
                first: "a".into()
            })
        );
        assert!(retrieval_chunks(Variant::Full, &chunks, &none, 512).is_ok());
        let uncounted = vec![chunk("a", "x", None)];
        assert_eq!(
            retrieval_chunks(Variant::Reduced, &uncounted, &none, 512),
            Err(VariantError::MissingTokenCounts {
                count: 1,
                first: "a".into()
            })
        );
    }

    #[test]
    fn names_parse_both_ways() {
        for v in Variant::ALL {
            assert_eq!(v.to_string().parse::<Variant>(), Ok(v));
            assert_eq!(v.paper_name().parse::<Variant>(), Ok(v));
        }
        assert!("X".parse::<Variant>().is_err());
        assert_eq!(
            serde_json::to_string(&Variant::Reduced).expect("json"),
            "\"R\""
        );
    }
}
