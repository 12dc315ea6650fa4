//! Which chunks a prompt holds and in what order: the context policy of a run.
//!
//! - *retrieved* (default): the first k of the ranking.
//! - *oracle*: the question's target chunks only, whatever retrieval found (the upper
//!   bound of a pipeline: the generator given exactly the right guidance).
//! - *distractors@p*: k chunks, the targets placed from position p (1-based) among
//!   the best-ranked non-targets, so the place of the right chunk in the prompt is
//!   controlled (a p past the end puts the targets last).
//!
//! The order then applies: *ranked* keeps the policy's order; *reversed* puts the first
//! chunk last, next to the question (lost in the middle: models read the ends of a
//! long context best). The token budget always drops the policy's last chunks first,
//! whatever the order, so reversing never loses the best chunk to the budget.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// The chunks a prompt holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum ContextPolicy {
    #[default]
    Retrieved,
    Oracle,
    /// The targets from this 1-based position among retrieved non-targets.
    Distractors(usize),
}

/// The order of the chunks in the prompt.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChunkOrder {
    #[default]
    Ranked,
    Reversed,
}

impl fmt::Display for ContextPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Retrieved => f.write_str("retrieved"),
            Self::Oracle => f.write_str("oracle"),
            Self::Distractors(p) => write!(f, "distractors@{p}"),
        }
    }
}

impl FromStr for ContextPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let bad = || {
            format!(
                "unknown context policy `{s}` (expected retrieved, oracle or distractors@P, \
                 P the 1-based position of the targets)"
            )
        };
        match s.trim() {
            "retrieved" => Ok(Self::Retrieved),
            "oracle" => Ok(Self::Oracle),
            other => {
                let p = other.strip_prefix("distractors@").ok_or_else(bad)?;
                match p.parse::<usize>() {
                    Ok(p) if p >= 1 => Ok(Self::Distractors(p)),
                    _ => Err(bad()),
                }
            }
        }
    }
}

impl TryFrom<String> for ContextPolicy {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        s.parse()
    }
}

impl From<ContextPolicy> for String {
    fn from(p: ContextPolicy) -> Self {
        p.to_string()
    }
}

impl fmt::Display for ChunkOrder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Ranked => "ranked",
            Self::Reversed => "reversed",
        })
    }
}

impl FromStr for ChunkOrder {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "ranked" => Ok(Self::Ranked),
            "reversed" => Ok(Self::Reversed),
            _ => Err(format!(
                "unknown chunk order `{s}` (expected ranked or reversed)"
            )),
        }
    }
}

/// A chunk chosen for the prompt: its id and its rank in the ranking (None: a target
/// the ranking did not reach, put there by an oracle policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placed {
    pub id: String,
    pub rank: Option<usize>,
}

impl ContextPolicy {
    /// The chunks of the prompt in the policy's order (before the budget and the chunk
    /// order): from `ranked` (best first), the question's `targets` and k.
    pub fn choose<S: AsRef<str>>(self, ranked: &[S], targets: &[String], k: usize) -> Vec<Placed> {
        let place = |id: &str| Placed {
            id: id.to_string(),
            rank: ranked.iter().position(|r| r.as_ref() == id).map(|i| i + 1),
        };
        let mut unique_targets: Vec<&str> = Vec::new();
        for t in targets {
            if !unique_targets.contains(&t.as_str()) {
                unique_targets.push(t);
            }
        }
        match self {
            Self::Retrieved => ranked.iter().take(k).map(|r| place(r.as_ref())).collect(),
            Self::Oracle => unique_targets.into_iter().map(place).collect(),
            Self::Distractors(p) => {
                let n_distractors = k.saturating_sub(unique_targets.len());
                let mut out: Vec<Placed> = ranked
                    .iter()
                    .map(AsRef::as_ref)
                    .filter(|id| !unique_targets.contains(id))
                    .take(n_distractors)
                    .map(place)
                    .collect();
                let at = (p - 1).min(out.len());
                let inserted: Vec<Placed> = unique_targets.into_iter().map(place).collect();
                out.splice(at..at, inserted);
                out
            }
        }
    }
}

impl ChunkOrder {
    /// `kept` (the chunks the budget kept, in the policy's order) in this order.
    pub fn apply<T>(self, mut kept: Vec<T>) -> Vec<T> {
        if self == Self::Reversed {
            kept.reverse();
        }
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| (*s).to_string()).collect()
    }

    fn chosen(p: &[Placed]) -> Vec<(&str, Option<usize>)> {
        p.iter().map(|c| (c.id.as_str(), c.rank)).collect()
    }

    #[test]
    fn retrieved_is_the_top_k() {
        let ranked = ids(&["a", "b", "t", "c"]);
        let p = ContextPolicy::Retrieved.choose(&ranked, &ids(&["t"]), 2);
        assert_eq!(chosen(&p), vec![("a", Some(1)), ("b", Some(2))]);
    }

    #[test]
    fn oracle_holds_exactly_the_targets() {
        let ranked = ids(&["a", "t2", "b"]);
        // One target ranked 2nd, one never retrieved; a repeated target once.
        let p = ContextPolicy::Oracle.choose(&ranked, &ids(&["t1", "t2", "t1"]), 15);
        assert_eq!(chosen(&p), vec![("t1", None), ("t2", Some(2))]);
        assert!(ContextPolicy::Oracle.choose(&ranked, &[], 15).is_empty());
    }

    #[test]
    fn distractors_put_the_target_at_the_asked_position() {
        let ranked = ids(&["a", "t", "b", "c", "d", "e"]);
        let targets = ids(&["t"]);
        for p in 1..=4 {
            let got = ContextPolicy::Distractors(p).choose(&ranked, &targets, 4);
            assert_eq!(got.len(), 4, "k chunks in all");
            assert_eq!(got[p - 1].id, "t", "target at position {p}");
            let others: Vec<_> = got
                .iter()
                .filter(|c| c.id != "t")
                .map(|c| c.id.as_str())
                .collect();
            assert_eq!(
                others,
                vec!["a", "b", "c"],
                "the best non-targets, in rank order"
            );
        }
        // A position past the end puts the target last; a target the ranking missed has
        // no rank.
        let got = ContextPolicy::Distractors(9).choose(&ranked, &ids(&["z"]), 3);
        assert_eq!(
            chosen(&got),
            vec![("a", Some(1)), ("t", Some(2)), ("z", None)]
        );
    }

    #[test]
    fn reversed_order_puts_the_first_chunk_last() {
        assert_eq!(ChunkOrder::Reversed.apply(vec![1, 2, 3]), vec![3, 2, 1]);
        assert_eq!(ChunkOrder::Ranked.apply(vec![1, 2, 3]), vec![1, 2, 3]);
    }

    #[test]
    fn names_round_trip_and_bad_ones_say_what_is_expected() {
        for p in [
            ContextPolicy::Retrieved,
            ContextPolicy::Oracle,
            ContextPolicy::Distractors(3),
        ] {
            assert_eq!(p.to_string().parse::<ContextPolicy>(), Ok(p));
        }
        assert!("distractors@0".parse::<ContextPolicy>().is_err());
        assert!(
            "gold"
                .parse::<ContextPolicy>()
                .expect_err("unknown")
                .contains("expected retrieved, oracle or distractors@P")
        );
        assert_eq!("reversed".parse::<ChunkOrder>(), Ok(ChunkOrder::Reversed));
    }
}
