//! Real llama.cpp `llama-server` processes for the endpoint tests (no mocks): the
//! binary `scripts/setup.sh` builds, linked as `tests/bin/llama-server` (or
//! `RAGLAB_LLAMA_SERVER`), started on a free port of 127.0.0.1 with a GGUF from
//! `tests/models/`, killed when dropped.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

fn server_binary() -> PathBuf {
    let p = std::env::var_os("RAGLAB_LLAMA_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::repo().join("tests/bin/llama-server"));
    assert!(
        p.is_file(),
        "llama-server not found at {}: run scripts/setup.sh --test (it builds llama.cpp's server and links it there)",
        p.display()
    );
    p
}

/// One plain HTTP/1.0 request on 127.0.0.1 (`body`: a JSON POST, else a GET):
/// (status, body); None when nothing answers.
pub fn request(port: u16, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    match body {
        Some(_) => send(port, "POST", path, body),
        None => send(port, "GET", path, None),
    }
}

/// One plain HTTP/1.0 request with `method` (a JSON `body`, if any): (status, body);
/// None when nothing answers.
pub fn send(port: u16, method: &str, path: &str, body: Option<&str>) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(120))).ok()?;
    let b = body.unwrap_or("");
    write!(
        s,
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
        b.len()
    )
    .ok()?;
    let mut out = String::new();
    s.read_to_string(&mut out).ok()?;
    let status = out.split_whitespace().nth(1)?.parse().ok()?;
    let body = out
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    Some((status, body))
}

/// A GET (see [`request`]).
pub fn get(port: u16, path: &str) -> Option<(u16, String)> {
    request(port, path, None)
}

/// A llama-server process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
}

impl Server {
    /// The SmolLM2 chat server: two slots of 2,048 tokens, one thread (two servers
    /// share 2 cores).
    pub fn start(dir: &std::path::Path, name: &str) -> Self {
        Self::start_with(
            dir,
            name,
            "SmolLM2-135M-Instruct.Q4_1.gguf",
            &["-c", "4096", "-np", "2", "-t", "1"],
        )
    }

    /// The MiniLM embedding server (`--embeddings`): one slot of MiniLM's 512-token
    /// window, batches as large (an encoder input must fit one micro-batch).
    pub fn start_embeddings(dir: &std::path::Path, name: &str) -> Self {
        Self::start_with(
            dir,
            name,
            "all-MiniLM-L6-v2.F16.gguf",
            &[
                "--embeddings",
                "-c",
                "512",
                "-b",
                "512",
                "-ub",
                "512",
                "-np",
                "1",
                "-t",
                "1",
            ],
        )
    }

    /// `model` (a file of `tests/models/`) served with `args`.
    pub fn start_with(dir: &std::path::Path, name: &str, model: &str, args: &[&str]) -> Self {
        let model = super::model(model);
        for _ in 0..5 {
            // A port the system just handed out; another process could take it before
            // the server binds it, so a server that exits early is started again.
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("free port")
                .port();
            let log = std::fs::File::create(dir.join(format!("{name}.log"))).expect("log");
            let mut child = Command::new(server_binary())
                .args(["-m", model.to_str().expect("utf8")])
                .args(["--host", "127.0.0.1", "--port", &port.to_string()])
                .args(args)
                .stdout(log.try_clone().expect("log"))
                .stderr(log)
                .spawn()
                .expect("start llama-server");
            let deadline = Instant::now() + Duration::from_secs(60);
            while Instant::now() < deadline {
                if child.try_wait().ok().flatten().is_some() {
                    break;
                }
                if get(port, "/health").is_some_and(|(s, _)| s == 200) {
                    return Self { child, port };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        panic!(
            "llama-server {name} did not start; see {}",
            dir.join(format!("{name}.log")).display()
        );
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    /// Whether a slot is generating right now (llama-server's `/slots`).
    pub fn busy(&self) -> bool {
        get(self.port, "/slots").is_some_and(|(_, body)| body.contains("\"is_processing\":true"))
    }

    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill();
    }
}
