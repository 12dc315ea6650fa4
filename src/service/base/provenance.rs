//! Provenance shared by every stored record: when it was written (an RFC 3339 UTC
//! time) and which model produced it (the model file's name and SHA-256, or the
//! endpoint that answered and the model it said it served).

use std::path::Path;

use anyhow::{Context, Result};
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
    let mut f =
        std::fs::File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    let mut h = Sha256::new();
    std::io::copy(&mut f, &mut h).with_context(|| format!("cannot read {}", path.display()))?;
    Ok(h.finalize().iter().map(|b| format!("{b:02x}")).collect())
}
