//! A real S3-compatible server for the object-store tests: moto's server (PyPI
//! `moto[server]`, installed by `scripts/setup.sh` into the tool environment linked as
//! `tests/bin/pyenv`), started on a free port of 127.0.0.1, killed when dropped. It runs
//! through `scripts/moto_s3_server.py`, which makes moto's conditional writes
//! (`If-None-Match: *`, what lance's commits rely on) atomic as they are on S3.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn python() -> PathBuf {
    let p = super::repo().join("tests/bin/pyenv/bin/python");
    assert!(
        p.exists(),
        "{} not found: run scripts/setup.sh --test (it installs moto[server] into the tool environment and links it)",
        p.display()
    );
    p
}

/// One request without a body: (status, body); None when nothing answers.
pub fn http(port: u16, method: &str, path: &str) -> Option<(u16, String)> {
    super::server::send(port, method, path, None)
}

/// A moto S3 server with one bucket, killed when dropped.
pub struct Moto {
    child: Child,
    pub port: u16,
    pub bucket: String,
}

impl Moto {
    /// Start the server (log in `dir`/moto.log) and create `bucket`.
    pub fn start(dir: &std::path::Path, bucket: &str) -> Self {
        for _ in 0..5 {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("free port")
                .port();
            let log = std::fs::File::create(dir.join("moto.log")).expect("log");
            let mut child = Command::new(python())
                .arg(super::repo().join("scripts/moto_s3_server.py"))
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("start moto_server");
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                if http(port, "PUT", &format!("/{bucket}")).is_some_and(|(s, _)| s == 200) {
                    return Self {
                        child,
                        port,
                        bucket: bucket.to_string(),
                    };
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "moto_server did not start: see {}",
            dir.join("moto.log").display()
        );
    }

    /// The environment a raglab process needs to reach this server (the usual AWS
    /// variables, with test credentials moto accepts).
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT", format!("http://127.0.0.1:{}", self.port)),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// `s3://BUCKET/prefix`.
    pub fn uri(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// Keys stored under `prefix` (from the server's own listing).
    pub fn keys(&self, prefix: &str) -> Vec<String> {
        let mut keys = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut path = format!("/{}?list-type=2&prefix={prefix}", self.bucket);
            if let Some(t) = &token {
                path.push_str(&format!("&continuation-token={}", encode(t)));
            }
            let (status, body) = http(self.port, "GET", &path).expect("list objects");
            assert_eq!(status, 200, "listing failed: {body}");
            keys.extend(between_all(&body, "<Key>", "</Key>"));
            token = between_all(&body, "<NextContinuationToken>", "</NextContinuationToken>")
                .into_iter()
                .next();
            if token.is_none() {
                return keys;
            }
        }
    }
}

fn between_all(text: &str, open: &str, close: &str) -> Vec<String> {
    text.split(open)
        .skip(1)
        .filter_map(|s| s.split_once(close).map(|(v, _)| v.to_string()))
        .collect()
}

/// Percent-encode a query value.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
