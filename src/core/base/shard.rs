//! Splitting batch work into shards by id (`--shard i/n`), so that several processes
//! share one batch without coordinating.
//!
//! An item belongs to shard `i` of `n` when the 64-bit FNV-1a hash of its id, taken
//! modulo `n`, is `i - 1`. FNV-1a is fixed by its specification (offset basis and
//! prime below), so every process on every machine and every Rust version puts an id
//! in the same shard; Rust's own `DefaultHasher` is seeded per process and could not
//! be used. Shards are numbered from 1 (`1/4` .. `4/4`), as test partitioners number
//! them; every id is in exactly one of the `n` shards.

use std::fmt;
use std::str::FromStr;

/// One shard `index` of `count` (1 <= index <= count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Shard {
    index: u32,
    count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a shard: expected i/n with 1 <= i <= n, e.g. 2/4")]
pub struct ShardError(String);

/// 64-bit FNV-1a of `bytes` (offset basis 0xcbf29ce484222325, prime 0x100000001b3).
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

impl Shard {
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || index == 0 || index > count {
            return Err(ShardError(format!("{index}/{count}")));
        }
        Ok(Self { index, count })
    }

    /// The whole batch (`1/1`).
    pub fn whole() -> Self {
        Self { index: 1, count: 1 }
    }

    pub fn index(self) -> u32 {
        self.index
    }

    pub fn count(self) -> u32 {
        self.count
    }

    /// The shard (1-based) that `id` belongs to among `count` shards.
    pub fn of(id: &str, count: u32) -> u32 {
        let count = count.max(1);
        (fnv1a64(id.as_bytes()) % u64::from(count)) as u32 + 1
    }

    /// Whether `id` is this shard's.
    pub fn contains(self, id: &str) -> bool {
        Self::of(id, self.count) == self.index
    }

    /// The items of this shard, in their order.
    pub fn select<T>(self, items: Vec<T>, id: impl Fn(&T) -> &str) -> Vec<T> {
        items.into_iter().filter(|t| self.contains(id(t))).collect()
    }
}

/// `Some(shard)` filters; `None` (no `--shard`) keeps everything.
pub fn keep(shard: Option<Shard>, id: &str) -> bool {
    shard.is_none_or(|s| s.contains(id))
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ShardError(s.to_string());
        let (i, n) = s.trim().split_once('/').ok_or_else(bad)?;
        let i: u32 = i.trim().parse().map_err(|_| bad())?;
        let n: u32 = n.trim().parse().map_err(|_| bad())?;
        Self::new(i, n).map_err(|_| bad())
    }
}

// Tests: tests/shards.rs (reference vectors, hand-computed shards, a property test
// that shards are disjoint and cover every id), next to the commands that use them.
