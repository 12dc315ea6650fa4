//! A `/v1/rerank` server for the rerank tests: a real HTTP server on 127.0.0.1 (std's
//! `TcpListener`, one thread per connection) that scores with a real model: the
//! cosine of MiniLM embeddings (llama.cpp, in process) of the query and each
//! document, rounded to two decimals so that ties occur. It logs every request and
//! the scores it gave. Hostile modes break the protocol the ways a broken server does.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use raglab::infer::embed::{EmbedConfig, Embedder};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Scores every document, results sorted by score (as Jina does).
    Honest,
    /// One result names a document that was not sent.
    WrongIndex,
    /// One score is `NaN` (not JSON).
    NotANumber,
    /// One document left unscored.
    TooFew,
    /// Answers after 5 s.
    Slow,
}

/// One request served: the query, the documents and the scores given (in document
/// order).
#[derive(Debug, Clone)]
pub struct Served {
    pub query: String,
    pub documents: Vec<String>,
    pub scores: Vec<f64>,
}

pub struct RerankServer {
    pub port: u16,
    stop: Arc<AtomicBool>,
    pub log: Arc<Mutex<Vec<Served>>>,
    mode: Arc<Mutex<Mode>>,
}

impl RerankServer {
    pub fn start(mode: Mode) -> Self {
        let mut cfg = EmbedConfig::new(super::model(raglab::config::DEFAULT_EMBED_MODEL));
        cfg.threads = 1;
        let embedder = Embedder::spawn(&cfg).expect("load MiniLM");
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let mode = Arc::new(Mutex::new(mode));
        let (stop2, log2, mode2) = (stop.clone(), log.clone(), mode.clone());
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        let (e, l, m) =
                            (embedder.clone(), log2.clone(), *mode2.lock().expect("lock"));
                        std::thread::spawn(move || serve(conn, &e, &l, m));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            port,
            stop,
            log,
            mode,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock().expect("lock") = mode;
    }

    pub fn served(&self) -> Vec<Served> {
        self.log.lock().expect("lock").clone()
    }
}

impl Drop for RerankServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| f64::from(*x) * f64::from(*y))
        .sum()
}

fn read_request(conn: &mut TcpStream) -> Option<Value> {
    conn.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let mut reader = BufReader::new(conn.try_clone().ok()?);
    let mut len = 0usize;
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l
            .to_ascii_lowercase()
            .strip_prefix("content-length:")
            .map(|v| v.trim().to_string())
        {
            len = v.parse().ok()?;
        }
    }
    let mut body = vec![0u8; len];
    reader.read_exact(&mut body).ok()?;
    serde_json::from_slice(&body).ok()
}

fn serve(mut conn: TcpStream, embedder: &Embedder, log: &Mutex<Vec<Served>>, mode: Mode) {
    let Some(req) = read_request(&mut conn) else {
        return;
    };
    let query = req["query"].as_str().unwrap_or_default().to_string();
    let documents: Vec<String> = req["documents"]
        .as_array()
        .map(|d| {
            d.iter()
                .map(|x| x.as_str().unwrap_or_default().to_string())
                .collect()
        })
        .unwrap_or_default();
    let mut texts = vec![query.clone()];
    texts.extend(documents.iter().cloned());
    let vectors = embedder.embed(texts).expect("embed");
    let scores: Vec<f64> = vectors[1..]
        .iter()
        .map(|v| (cosine(&vectors[0], v) * 100.0).round() / 100.0)
        .collect();
    log.lock().expect("lock").push(Served {
        query,
        documents: documents.clone(),
        scores: scores.clone(),
    });
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]));
    let mut results: Vec<String> = order
        .iter()
        .map(|&i| json!({"index": i, "relevance_score": scores[i]}).to_string())
        .collect();
    match mode {
        Mode::Honest => {}
        Mode::WrongIndex => {
            results[0] = json!({"index": documents.len() + 3, "relevance_score": 0.5}).to_string();
        }
        Mode::NotANumber => {
            results[0] = format!("{{\"index\":{},\"relevance_score\":NaN}}", order[0]);
        }
        Mode::TooFew => {
            results.pop();
        }
        Mode::Slow => std::thread::sleep(Duration::from_secs(12)),
    }
    let body = format!(
        "{{\"model\":\"minilm-cosine\",\"results\":[{}]}}",
        results.join(",")
    );
    let _ = write!(
        conn,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
