//! Provenance shared by every stored record: when it was written (an RFC 3339 UTC
//! time) and which model produced it (the model file's name and SHA-256, or the
//! endpoint that answered and the model it said it served), and who wrote it (the
//! user's signing key).

use std::path::Path;

use anyhow::{Context, Result};

use crate::store::keys::Keypair;
use sha2::{Digest, Sha256};

/// Which model produced an answer.
#[derive(Debug, Clone, Default)]
pub struct Provenance {
    /// The GGUF file name, or the model an endpoint served.
    pub model_file: String,
    /// SHA-256 of the GGUF file (empty for an endpoint: the file is not here).
    pub model_sha256: String,
    pub endpoint: Option<String>,
    pub served_model: Option<String>,
}

impl Provenance {
    /// An answer from the endpoint at `url`, which said it ran `served_model`.
    pub fn endpoint(url: &str, served_model: String) -> Self {
        Self {
            model_file: served_model.clone(),
            model_sha256: String::new(),
            endpoint: Some(url.to_string()),
            served_model: Some(served_model),
        }
    }
}

/// Nanoseconds since the Unix epoch: the order of rows written by one clock, and a
/// part of ids that must differ between two writes of the same thing.
pub fn now_nanos() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// RFC 3339 UTC timestamp without a time crate.
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let (h, m, s) = ((secs % 86_400) / 3600, (secs % 3600) / 60, secs % 60);
    // Civil from days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(mo <= 2);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

/// SHA-256 of a model file (hex), for provenance.
pub fn file_sha256(path: &Path) -> Result<String> {
    hash_file(path)
}

/// [`file_sha256`], remembered in `data_dir/model_hashes.json` by the file's
/// canonical path, size and modification time: hashing a GGUF reads it whole (a
/// quarter of a second for 90 MB, seconds for a large model), which a command whose
/// work is all cached would otherwise pay on every run. The rule is make's and git's:
/// a file rewritten in place with the same size and the same modification time to the
/// nanosecond is taken as unchanged. A missing or unreadable memo is recomputed, and a
/// memo that cannot be written costs only the next run's hashing.
pub fn model_sha256(data_dir: &Path, path: &Path) -> Result<String> {
    let meta =
        std::fs::metadata(path).with_context(|| format!("cannot open {}", path.display()))?;
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    let stamp = format!("{}:{}", meta.len(), mtime_ns);
    let key = canonical.to_string_lossy().into_owned();
    let memo_path = data_dir.join("model_hashes.json");
    let mut memo: std::collections::BTreeMap<String, (String, String)> = std::fs::read(&memo_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default();
    if let Some((seen, sha)) = memo.get(&key)
        && *seen == stamp
        && sha.len() == 64
    {
        return Ok(sha.clone());
    }
    let sha = hash_file(path)?;
    memo.insert(key, (stamp, sha.clone()));
    if std::fs::create_dir_all(data_dir).is_ok()
        && let Ok(bytes) = serde_json::to_vec_pretty(&memo)
    {
        let _ = super::write_whole(&memo_path, &bytes);
    }
    Ok(sha)
}

fn hash_file(path: &Path) -> Result<String> {
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}

/// This user's signing key (made in the config folder on first use, so each
/// `RAGLAB_CONFIG_DIR` is one identity): it signs the labels, items and study rows
/// this user writes, and every answer they store.
pub fn my_key(ctx: &super::Context) -> Result<Keypair> {
    Keypair::load_or_create(&ctx.paths.config_dir).context("the signing key")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The memo answers for an unchanged file and is not trusted once the file
    /// changes (new size or new modification time).
    #[test]
    fn a_remembered_hash_is_the_file_hash_and_follows_the_file() {
        let dir = tempfile::tempdir().expect("tmp");
        let data = dir.path().join("data");
        let model = dir.path().join("m.gguf");
        std::fs::write(&model, b"first weights").expect("write");
        let first = model_sha256(&data, &model).expect("hash");
        assert_eq!(first, file_sha256(&model).expect("hash"));
        assert!(data.join("model_hashes.json").exists());
        // A memo entry with a forged hash for the same stamp is what a second run
        // reads: it proves the memo is used rather than the file re-read.
        let memo_path = data.join("model_hashes.json");
        let forged = std::fs::read_to_string(&memo_path)
            .expect("memo")
            .replace(&first, &"f".repeat(64));
        std::fs::write(&memo_path, forged).expect("forge");
        assert_eq!(model_sha256(&data, &model).expect("hash"), "f".repeat(64));
        // Rewritten (another size), it is hashed again.
        std::fs::write(&model, b"second weights, longer").expect("write");
        let second = model_sha256(&data, &model).expect("hash");
        assert_eq!(second, file_sha256(&model).expect("hash"));
        assert_ne!(second, first);
    }
}
