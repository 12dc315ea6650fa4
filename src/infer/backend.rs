//! The process-wide llama.cpp backend: initialised once (a second `init` is an error),
//! with llama.cpp's own logging routed to `tracing` (it would otherwise print hundreds
//! of lines per model load onto the TUI's screen). The log file's default filter keeps
//! its warnings and errors (target `llama-cpp-2`): a failed load or a CUDA error then
//! leaves llama.cpp's own description there.

use std::path::Path;
use std::sync::OnceLock;

use llama_cpp_2::llama_backend::LlamaBackend;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::model::params::LlamaModelParams;

use super::{InferError, Result};

static BACKEND: OnceLock<std::result::Result<LlamaBackend, String>> = OnceLock::new();

pub fn backend() -> Result<&'static LlamaBackend> {
    BACKEND
        .get_or_init(|| {
            llama_cpp_2::send_logs_to_tracing(llama_cpp_2::LogOptions::default());
            LlamaBackend::init().map_err(|e| e.to_string())
        })
        .as_ref()
        .map_err(|e| InferError::Backend(e.clone()))
}

/// Waits, when the last handle of a model's worker thread is dropped, for that thread
/// to free its model and context. The handle's request sender must be dropped first
/// (declare this field after it): the worker then leaves its loop, frees everything,
/// and ends. Why wait: the CUDA runtime tears itself down when the process exits, and
/// a context freed after that aborts the process (seen on an H200: `raglab index`
/// printed its result, then `ggml-cuda.cu:109: CUDA error` in the context's destructor
/// on the worker thread while `main` returned). The wait is bounded (a worker still
/// generating a long answer is not waited for past [`WORKER_EXIT_WAIT`]).
pub(crate) struct WorkerExit {
    ended: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
}

/// How long dropping the last handle waits for its worker to end.
pub const WORKER_EXIT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl WorkerExit {
    /// A pair: the handle's side, and the token the worker thread holds until it ends
    /// (dropped last in the thread, after the model and context).
    pub(crate) fn new() -> (std::sync::Arc<Self>, std::sync::mpsc::Sender<()>) {
        let (token, ended) = std::sync::mpsc::channel();
        (
            std::sync::Arc::new(Self {
                ended: std::sync::Mutex::new(ended),
            }),
            token,
        )
    }
}

impl Drop for WorkerExit {
    fn drop(&mut self) {
        if let Ok(ended) = self.ended.get_mut() {
            // Disconnected once the thread has dropped its token, i.e. has ended.
            let _ = ended.recv_timeout(WORKER_EXIT_WAIT);
        }
    }
}

/// Load a GGUF model, with clear errors for a missing or unreadable file.
pub fn load_model(path: &Path, n_gpu_layers: u32) -> Result<LlamaModel> {
    if !path.is_file() {
        return Err(InferError::MissingModel(path.display().to_string()));
    }
    let mut magic = [0u8; 4];
    let ok =
        std::fs::File::open(path).and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    if ok.is_err() || &magic != b"GGUF" {
        return Err(InferError::Load {
            path: path.display().to_string(),
            reason: "not a GGUF file (bad magic bytes)".into(),
        });
    }
    let params = LlamaModelParams::default().with_n_gpu_layers(n_gpu_layers);
    let backend = backend()?;
    super::llama_log::clear();
    LlamaModel::load_from_file(backend, path, &params).map_err(|e| {
        // llama.cpp's own reason, where the log layer kept it (the binding only says
        // that the load returned nothing).
        let said = super::llama_log::take();
        let reason = if said.is_empty() {
            e.to_string()
        } else {
            format!("{e}; llama.cpp said: {}", said.join("; "))
        };
        InferError::Load {
            path: path.display().to_string(),
            reason,
        }
    })
}

/// Threads llama.cpp uses for batch work: `RAGLAB_THREADS` when it is a positive
/// number, else every core. ggml's workers spin at each barrier, so on a machine whose
/// cores are busy with other work two threads can be far slower than one (each barrier
/// waits for a thread that has no core); the variable lets such a machine (a shared CI
/// runner, a test suite running tests side by side) ask for fewer.
pub fn default_threads() -> i32 {
    threads_setting().unwrap_or_else(cores)
}

/// Threads for llama.cpp inside the TUI: `RAGLAB_THREADS` when set, else every core
/// but one, which stays free for the UI.
pub fn tui_threads() -> i32 {
    threads_setting().unwrap_or_else(|| (cores() - 1).max(1))
}

fn threads_setting() -> Option<i32> {
    parse_threads(std::env::var("RAGLAB_THREADS").ok().as_deref())
}

fn parse_threads(var: Option<&str>) -> Option<i32> {
    var.and_then(|v| v.trim().parse::<i32>().ok())
        .filter(|n| *n > 0)
}

fn cores() -> i32 {
    std::thread::available_parallelism().map_or(1, |n| i32::try_from(n.get()).unwrap_or(1))
}

/// Short model name for provenance: the file name without `.gguf`.
pub fn model_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().trim_end_matches(".gguf").to_string())
        .unwrap_or_else(|| path.display().to_string())
}

#[cfg(test)]
mod tests {
    use super::{WorkerExit, parse_threads};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    /// Dropping the last handle returns only once the worker has ended (here, a worker
    /// that takes 200 ms to free its model), and dropping a clone waits for nothing.
    #[test]
    fn the_last_handle_waits_for_its_worker_to_end() {
        let (exit, token) = WorkerExit::new();
        let freed = Arc::new(AtomicBool::new(false));
        let seen = Arc::clone(&freed);
        let worker = std::thread::spawn(move || {
            let _ends_with_the_thread = token;
            std::thread::sleep(std::time::Duration::from_millis(200));
            seen.store(true, Ordering::SeqCst);
        });
        let other = Arc::clone(&exit);
        drop(other);
        assert!(!freed.load(Ordering::SeqCst), "a clone's drop waited");
        drop(exit);
        assert!(freed.load(Ordering::SeqCst), "the last drop did not wait");
        worker.join().expect("worker");
    }

    #[test]
    fn threads_come_from_the_variable_only_when_it_is_a_positive_number() {
        assert_eq!(parse_threads(None), None);
        assert_eq!(parse_threads(Some("1")), Some(1));
        assert_eq!(parse_threads(Some(" 3 ")), Some(3));
        for bad in ["0", "-2", "two", ""] {
            assert_eq!(parse_threads(Some(bad)), None, "{bad:?}");
        }
    }
}
