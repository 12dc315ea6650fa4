//! A misbehaving OpenAI-compatible server: a real HTTP server on 127.0.0.1 (std's
//! `TcpListener`, one thread per connection) that answers each request in one of the
//! ways a broken or hostile server does. Every mode is bounded: a connection ends when
//! the client hangs up, or after `LIMIT` at the latest, and the server stops when it is
//! dropped.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The longest any one connection is served, whatever the mode.
const LIMIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A 200 event stream of text pieces, as fast as the socket takes them, never
    /// finishing.
    Endless,
    /// A 200 event stream that sends one comment byte every 200 ms: never idle long
    /// enough for an idle timeout, never done.
    Trickle,
    /// A 200 event stream whose first line is 1 GB long.
    HugeLine,
    /// A 200 reply of `text/html` instead of an event stream.
    WrongType,
    /// An HTTP 500, every time.
    Error500,
    /// Reads the request and never sends a status line.
    SlowHeaders,
    /// A 200 event stream of 64 MiB of blank lines, as fast as the socket takes them.
    BlankLines,
}

pub const ALL: [Mode; 7] = [
    Mode::Endless,
    Mode::Trickle,
    Mode::HugeLine,
    Mode::WrongType,
    Mode::Error500,
    Mode::SlowHeaders,
    Mode::BlankLines,
];

pub struct Hostile {
    pub port: u16,
    stop: Arc<AtomicBool>,
    /// Requests received so far.
    pub requests: Arc<AtomicUsize>,
}

impl Hostile {
    /// Serve `modes` in turn: the i-th request other than `GET /props` gets
    /// `modes[i % modes.len()]`. `GET /props` (raglab's probe of what kind of server
    /// this is) is answered 404 at once, as a server that is not a llama-server
    /// answers it.
    pub fn start(modes: &[Mode]) -> Self {
        Self::serving(modes, None)
    }

    /// As [`Hostile::start`], with `GET /props` served in `props` mode too.
    pub fn with_props(modes: &[Mode], props: Mode) -> Self {
        Self::serving(modes, Some(props))
    }

    fn serving(modes: &[Mode], props: Option<Mode>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        listener.set_nonblocking(true).expect("nonblocking");
        let port = listener.local_addr().expect("addr").port();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let modes: Arc<[Mode]> = modes.into();
        let others = Arc::new(AtomicUsize::new(0));
        let (stop2, requests2) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((conn, _)) => {
                        requests2.fetch_add(1, Ordering::Relaxed);
                        let (stop, modes, others) = (stop2.clone(), modes.clone(), others.clone());
                        std::thread::spawn(move || {
                            serve(conn, &stop, |props_probe| match (props_probe, props) {
                                (true, None) => None,
                                (true, Some(m)) => Some(m),
                                (false, _) => Some(
                                    modes[others.fetch_add(1, Ordering::Relaxed) % modes.len()],
                                ),
                            })
                        });
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        Self {
            port,
            stop,
            requests,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Read one request (headers and a `Content-Length` body), then misbehave in the mode
/// `mode_of(whether it is GET /props)` gives (None: a plain 404).
fn serve(conn: TcpStream, stop: &AtomicBool, mode_of: impl Fn(bool) -> Option<Mode>) {
    conn.set_nonblocking(false).expect("blocking");
    let _ = conn.set_read_timeout(Some(Duration::from_secs(10)));
    let mut reader = BufReader::new(conn.try_clone().expect("clone"));
    let mut length = 0usize;
    let mut request_line = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        if request_line.is_empty() {
            request_line.clone_from(&line);
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let started = Instant::now();
    let alive = || !stop.load(Ordering::Relaxed) && started.elapsed() < LIMIT;
    let mut out = conn;
    let Some(mode) = mode_of(request_line.starts_with("GET /props ")) else {
        let _ = out
            .write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        return;
    };
    let stream_head =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n";
    match mode {
        Mode::Endless => {
            let _ = out.write_all(stream_head.as_bytes());
            let event = "data: {\"choices\":[{\"delta\":{\"content\":\"la \"}}]}\n\n".repeat(64);
            while alive() && out.write_all(event.as_bytes()).is_ok() {}
        }
        Mode::Trickle => {
            let _ = out.write_all(stream_head.as_bytes());
            while alive() && out.write_all(b":").and_then(|()| out.flush()).is_ok() {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        Mode::HugeLine => {
            let _ = out.write_all(stream_head.as_bytes());
            let _ = out.write_all(b"data: {\"choices\":[{\"delta\":{\"content\":\"");
            let block = vec![b'a'; 1 << 20];
            for _ in 0..1024 {
                if !alive() || out.write_all(&block).is_err() {
                    break;
                }
            }
        }
        Mode::BlankLines => {
            let _ = out.write_all(stream_head.as_bytes());
            let block = vec![b'\n'; 1 << 20];
            for _ in 0..64 {
                if !alive() || out.write_all(&block).is_err() {
                    break;
                }
            }
        }
        Mode::WrongType => {
            let page = "<html><body><h1>Welcome to nginx!</h1></body></html>\n";
            let _ = write!(
                out,
                "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            );
        }
        Mode::Error500 => {
            let msg = "{\"error\":{\"message\":\"internal error\"}}";
            let _ = write!(
                out,
                "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{msg}",
                msg.len()
            );
        }
        Mode::SlowHeaders => {
            // Hold the connection open, saying nothing, until the client gives up.
            let mut probe = [0u8; 1];
            let _ = out.set_read_timeout(Some(Duration::from_millis(200)));
            while alive() {
                match out.read(&mut probe) {
                    Ok(0) => break,
                    _ => continue,
                }
            }
        }
    }
}
