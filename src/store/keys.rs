//! The user's study signing key (ed25519) in a file of the config folder, and the
//! signature operations over it. The key is made on first use from the operating
//! system's randomness and written once, readable by its owner only (0600); a key
//! file that others may read is refused, as ssh refuses such a private key. What is
//! signed, and which signatures count, is decided in `core::signing`.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use ed25519_dalek::{Signature, Signer as _, SigningKey, VerifyingKey};

use super::{Result, StoreError};
use crate::core::signing::{from_hex, to_hex};

/// The file name of the key in the config folder.
pub const KEY_FILE: &str = "study-signing.key";

/// A loaded signing key.
pub struct Keypair {
    key: SigningKey,
    path: PathBuf,
}

impl std::fmt::Debug for Keypair {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the secret.
        write!(f, "Keypair({}, {})", self.public_hex(), self.path.display())
    }
}

impl Keypair {
    /// The key in `dir`/[`KEY_FILE`], made (and written 0600) when there is none.
    pub fn load_or_create(dir: &Path) -> Result<Self> {
        let path = dir.join(KEY_FILE);
        match std::fs::read_to_string(&path) {
            Ok(text) => Self::parse(&path, &text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Self::create(dir, path),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    fn parse(path: &Path, text: &str) -> Result<Self> {
        check_private(path)?;
        let seed: [u8; 32] = from_hex(text.trim())
            .and_then(|b| b.try_into().ok())
            .ok_or_else(|| {
                StoreError::Invalid(format!(
                    "{}: not a signing key (64 hex digits); move it away and a new key is made",
                    path.display()
                ))
            })?;
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
            path: path.to_path_buf(),
        })
    }

    /// Make a key and publish it whole: the seed is written and synced to a private
    /// temporary file, then hard-linked to [`KEY_FILE`]. Why a link: two processes
    /// starting at once (two reviewers' first commits on one machine) must end with
    /// one key, and neither may read the other's file half-written; `link` fails when
    /// the name exists and never shows a partial file, so the loser reads the
    /// winner's complete key.
    fn create(dir: &Path, path: PathBuf) -> Result<Self> {
        let (mut seed, mut nonce) = ([0u8; 32], [0u8; 8]);
        getrandom::fill(&mut seed)
            .and_then(|()| getrandom::fill(&mut nonce))
            .map_err(|e| {
                StoreError::Invalid(format!("no randomness from the operating system: {e}"))
            })?;
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io(dir, e))?;
        let tmp = dir.join(format!(".{KEY_FILE}.{}", to_hex(&nonce)));
        let published = write_private(&tmp, format!("{}\n", to_hex(&seed)).as_bytes())
            .and_then(|()| std::fs::hard_link(&tmp, &path));
        // The temporary name goes whatever happened (a failed removal leaves only a
        // private file no one reads).
        let _ = std::fs::remove_file(&tmp);
        match published {
            Ok(()) => {}
            // Another process published first: use theirs.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                return Self::load_or_create(dir);
            }
            Err(e) => return Err(StoreError::io(&path, e)),
        }
        tracing::info!("made a study signing key in {}", path.display());
        Ok(Self {
            key: SigningKey::from_bytes(&seed),
            path,
        })
    }

    /// The public key, 64 hex digits.
    pub fn public_hex(&self) -> String {
        to_hex(self.key.verifying_key().as_bytes())
    }

    /// Where the key is kept.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The signature of `message`, 128 hex digits.
    pub fn sign_hex(&self, message: &[u8]) -> String {
        to_hex(&self.key.sign(message).to_bytes())
    }
}

/// Write `bytes` to a new file at `path` that only its owner may read (0600), synced.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    let mut file = opts.open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Refuse a key file that anyone but its owner may read or write.
fn check_private(path: &Path) -> Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(path)
            .map_err(|e| StoreError::io(path, e))?
            .permissions()
            .mode();
        if mode & 0o077 != 0 {
            return Err(StoreError::Invalid(format!(
                "{}: the signing key may be read by others (mode {:o}); run `chmod 600 {}`",
                path.display(),
                mode & 0o777,
                path.display()
            )));
        }
    }
    Ok(())
}

/// Whether `signature_hex` is `public_hex`'s ed25519 signature of `message`
/// (strict verification: no malleable or small-order forms).
pub fn verify(public_hex: &str, message: &[u8], signature_hex: &str) -> bool {
    let Some(key) = from_hex(public_hex)
        .and_then(|b| <[u8; 32]>::try_from(b).ok())
        .and_then(|b| VerifyingKey::from_bytes(&b).ok())
    else {
        return false;
    };
    let Some(sig) = from_hex(signature_hex).and_then(|b| <[u8; 64]>::try_from(b).ok()) else {
        return false;
    };
    key.verify_strict(message, &Signature::from_bytes(&sig))
        .is_ok()
}

/// Signatures already found valid, so a row read again is not checked again.
///
/// Why: every read of a study verifies every row (~0.1-0.2 ms each, most of it the
/// ed25519 check and the key's decompression), and the TUI reads the whole study
/// again after each commit, its own or another process's: a log of thousands of
/// rows would spend seconds of CPU per reload on rows that verified a moment ago.
///
/// Rules: only a check that *passed* is remembered, so a refusal is always decided
/// afresh. What is remembered is the SHA-256 of the whole triple (public key,
/// signature, signed bytes, each length-prefixed), so a row that differs in any byte
/// (an edited field, another key, another signature) misses and is checked in full;
/// to pass from the cache a forger would need a second preimage of SHA-256. The
/// cache is per process and bounded: past [`VerifiedCache::LIMIT`] entries it is
/// emptied and refills as rows are checked again.
pub struct VerifiedCache {
    seen: std::sync::Mutex<std::collections::HashSet<[u8; 32]>>,
    fresh: std::sync::atomic::AtomicU64,
}

impl Default for VerifiedCache {
    fn default() -> Self {
        Self::new()
    }
}

impl VerifiedCache {
    /// At most this many remembered signatures (32 bytes each, ~50 MB with the
    /// set's own overhead at most).
    pub const LIMIT: usize = 1_000_000;

    pub fn new() -> Self {
        Self {
            seen: std::sync::Mutex::new(std::collections::HashSet::new()),
            fresh: std::sync::atomic::AtomicU64::new(0),
        }
    }

    fn digest(public_hex: &str, message: &[u8], signature_hex: &str) -> [u8; 32] {
        use sha2::Digest as _;
        let mut h = sha2::Sha256::new();
        for part in [public_hex.as_bytes(), signature_hex.as_bytes(), message] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part);
        }
        h.finalize().into()
    }

    /// The remembered digests (a panic elsewhere while holding the lock leaves
    /// only whole digests behind, so a poisoned lock is still sound to use).
    fn seen(&self) -> std::sync::MutexGuard<'_, std::collections::HashSet<[u8; 32]>> {
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// [`verify`], answered from the cache when this exact triple passed before.
    pub fn verify(&self, public_hex: &str, message: &[u8], signature_hex: &str) -> bool {
        let d = Self::digest(public_hex, message, signature_hex);
        if self.seen().contains(&d) {
            return true;
        }
        self.fresh
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let ok = verify(public_hex, message, signature_hex);
        if ok {
            let mut seen = self.seen();
            if seen.len() >= Self::LIMIT {
                seen.clear();
            }
            seen.insert(d);
        }
        ok
    }

    /// How many checks were not answered from the cache (done in full).
    pub fn fresh_checks(&self) -> u64 {
        self.fresh.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// This process's cache of verified signatures (see [`VerifiedCache`]).
pub static VERIFIED: std::sync::LazyLock<VerifiedCache> =
    std::sync::LazyLock::new(VerifiedCache::new);

/// [`verify`] through this process's [`VERIFIED`] cache: what every read of a
/// study's rows uses.
pub fn verify_cached(public_hex: &str, message: &[u8], signature_hex: &str) -> bool {
    VERIFIED.verify(public_hex, message, signature_hex)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_answers_only_what_a_full_check_would() {
        let dir = tempfile::tempdir().expect("tmp");
        let k = Keypair::load_or_create(dir.path()).expect("key");
        let other = Keypair::load_or_create(&dir.path().join("other")).expect("key");
        let cache = VerifiedCache::new();
        let (pk, msg) = (k.public_hex(), b"a label".to_vec());
        let sig = k.sign_hex(&msg);
        assert!(cache.verify(&pk, &msg, &sig));
        assert!(cache.verify(&pk, &msg, &sig));
        assert_eq!(
            cache.fresh_checks(),
            1,
            "the second check came from the cache"
        );
        // Any changed byte misses the cache and is refused by the full check, every time.
        let cases = [
            (pk.clone(), b"a lAbel".to_vec(), sig.clone()),
            (other.public_hex(), msg.clone(), sig.clone()),
            (pk.clone(), msg.clone(), other.sign_hex(&msg)),
            (pk.clone(), msg.clone(), sig[..126].to_string()),
        ];
        for (n, (p, m, s)) in cases.iter().enumerate() {
            for round in 0..2 {
                assert!(!cache.verify(p, m, s), "case {n} round {round}");
            }
        }
        assert_eq!(cache.fresh_checks(), 1 + 2 * cases.len() as u64);
        // A valid row of another key is checked once, then cached.
        let s2 = other.sign_hex(&msg);
        assert!(cache.verify(&other.public_hex(), &msg, &s2));
        assert!(cache.verify(&other.public_hex(), &msg, &s2));
        assert_eq!(cache.fresh_checks(), 2 + 2 * cases.len() as u64);
    }

    /// Eight threads making the key at once all get the one key, whole (before
    /// the key was published by a link, a second process could read the first's
    /// empty file and fail with "not a signing key").
    #[test]
    fn racing_first_uses_agree_on_one_whole_key() {
        for round in 0..20 {
            let dir = tempfile::tempdir().expect("tmp");
            let cfg = dir.path().join("config");
            let barrier = std::sync::Barrier::new(8);
            let keys: Vec<String> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..8)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            Keypair::load_or_create(&cfg).map(|k| k.public_hex())
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().expect("thread").expect("key"))
                    .collect()
            });
            assert!(
                keys.iter().all(|k| k == &keys[0]),
                "round {round}: {keys:?}"
            );
            let names: Vec<_> = std::fs::read_dir(&cfg)
                .expect("dir")
                .map(|e| e.expect("entry").file_name())
                .collect();
            assert_eq!(
                names,
                [KEY_FILE],
                "round {round}: no temporary file is left"
            );
        }
    }

    #[test]
    fn a_key_is_made_once_private_and_its_signatures_verify() {
        let dir = tempfile::tempdir().expect("tmp");
        let cfg = dir.path().join("config");
        let k = Keypair::load_or_create(&cfg).expect("made");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = std::fs::metadata(k.path())
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let again = Keypair::load_or_create(&cfg).expect("read");
        assert_eq!(k.public_hex(), again.public_hex());
        assert_eq!(k.public_hex().len(), 64);
        let sig = k.sign_hex(b"label");
        assert!(verify(&k.public_hex(), b"label", &sig));
        assert!(!verify(&k.public_hex(), b"labex", &sig));
        let other = Keypair::load_or_create(&dir.path().join("other")).expect("other");
        assert!(!verify(&other.public_hex(), b"label", &sig));
        assert!(!verify("zz", b"label", &sig));
        // RFC 8032 test 1: the empty message under the published key.
        let rfc = Keypair::parse(
            k.path(),
            "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
        )
        .expect("rfc key");
        assert_eq!(
            rfc.public_hex(),
            "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a"
        );
        assert_eq!(
            rfc.sign_hex(b""),
            "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(k.path(), std::fs::Permissions::from_mode(0o644))
                .expect("chmod");
            let err = Keypair::load_or_create(&cfg).expect_err("too open");
            assert!(err.to_string().contains("chmod 600"), "{err}");
        }
    }
}
