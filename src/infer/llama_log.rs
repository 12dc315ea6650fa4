//! llama.cpp's own words when a model fails to load. llama.cpp says why a load failed
//! only in its log ("failed to read key-value pairs", "unknown model architecture"),
//! while the Rust binding's error is "null result from llama cpp". The log is routed to
//! `tracing` (see [`super::backend`]); [`LlamaErrors`] keeps the warnings and errors it
//! logs on each thread, and [`super::backend::load_model`] puts those logged during a
//! failed load into its error.

use std::cell::RefCell;

use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The `tracing` target llama-cpp-2 gives every line of llama.cpp's log.
pub const TARGET: &str = "llama-cpp-2";

/// Lines kept per thread: the newest; a failed load logs three or four.
const KEPT: usize = 8;

thread_local! {
    static LINES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// A `tracing` layer keeping, per thread, the last warnings and errors llama.cpp
/// logged there. llama.cpp logs on the thread that called it, so a caller reads what
/// its own call logged, not another thread's. Two limits, both harmless to an error
/// message: the binding holds a line that lacks its newline in one buffer for every
/// thread and sends it from whichever thread logs next (two loads at once could trade
/// such a line), and a failed load quotes every warning of its thread since `clear`,
/// related or not.
pub struct LlamaErrors;

/// [`LlamaErrors`] behind its own filter, to add beside other layers: a layer's own
/// `enabled` would decide for every layer (it would hide llama.cpp's info lines from a
/// log file that asks for them), a per-layer filter decides for this one only.
pub fn layer<S>() -> impl Layer<S>
where
    S: Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    // The hint keeps the subscriber's most verbose level what the other layers ask
    // for: without it, every `log::debug!` of lance, datafusion and tantivy would be
    // turned into an event only for every filter to drop it.
    LlamaErrors.with_filter(
        tracing_subscriber::filter::filter_fn(|meta| {
            meta.target() == TARGET && *meta.level() <= Level::WARN
        })
        .with_max_level_hint(tracing_subscriber::filter::LevelFilter::WARN),
    )
}

impl<S: Subscriber> Layer<S> for LlamaErrors {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        if meta.target() != TARGET || *meta.level() > Level::WARN {
            return;
        }
        let mut message = Message(String::new());
        event.record(&mut message);
        let line = message.0.trim().to_string();
        if line.is_empty() {
            return;
        }
        LINES.with(|lines| {
            let mut lines = lines.borrow_mut();
            if lines.len() == KEPT {
                lines.remove(0);
            }
            lines.push(line);
        });
    }
}

struct Message(String);

impl Visit for Message {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0 = value.to_string();
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

/// Forget what this thread's llama.cpp calls logged so far.
pub fn clear() {
    LINES.with(|lines| lines.borrow_mut().clear());
}

/// The warnings and errors llama.cpp logged on this thread since [`clear`], oldest
/// first, and forget them.
pub fn take() -> Vec<String> {
    LINES.with(|lines| std::mem::take(&mut *lines.borrow_mut()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn keeps_this_threads_warnings_and_errors_from_llama_cpp_only() {
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer()));
        let _here = tracing::dispatcher::set_default(&dispatch);
        clear();
        tracing::error!(target: "llama-cpp-2", "failed to read key-value pairs");
        tracing::info!(target: "llama-cpp-2", "loaded meta data");
        tracing::error!(target: "lance", "not from llama.cpp");
        tracing::warn!(target: "llama-cpp-2", "special_eos_id is not in special_eog_ids");
        // Another thread, under the same subscriber: kept there, not here.
        let there = std::thread::scope(|s| {
            s.spawn(|| {
                let _there = tracing::dispatcher::set_default(&dispatch);
                tracing::error!(target: "llama-cpp-2", "another thread's");
                take()
            })
            .join()
            .expect("thread")
        });
        assert_eq!(there, ["another thread's"]);
        assert_eq!(
            take(),
            [
                "failed to read key-value pairs",
                "special_eos_id is not in special_eog_ids"
            ]
        );
        assert!(take().is_empty(), "taken once");
        for i in 0..20 {
            tracing::error!(target: "llama-cpp-2", "line {i}");
        }
        let kept = take();
        assert_eq!(kept.len(), KEPT);
        assert_eq!(kept.last().map(String::as_str), Some("line 19"));
    }
}
