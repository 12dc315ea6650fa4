//! Playing a stored answer at its recorded pace: each piece of
//! [`crate::core::replay::schedule`] is sent as a token at its time, on the channel
//! live tokens use, then the end; the stop flag is checked at least every 20 ms, so
//! `s` stops a replay at once even during a long recorded time to first token.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use super::effect::ReplayJob;
use crate::core::replay::{duration_ms, schedule};
use crate::service::answer::AnswerRecord;

/// Replay `a` in the background: `token` gets each piece as it falls due, `done`
/// whether the replay was stopped, once at the end.
pub fn play(
    a: AnswerRecord,
    job: ReplayJob,
    token: impl Fn(String) + Send + 'static,
    done: impl FnOnce(bool) + Send + 'static,
) {
    tokio::spawn(async move {
        let start = Instant::now();
        let until = |ms: f64| start + Duration::from_secs_f64(ms.max(0.0) / 1e3);
        let mut stopped = false;
        for p in schedule(&a.answer, a.output_tokens, a.ttft_ms, a.gen_tokens_per_s) {
            if !wait_until(until(p.at_ms), &job.stop).await {
                stopped = true;
                break;
            }
            token(p.text);
        }
        // The replay lasts what the generation lasted, even when the last slots
        // carried no text.
        let end = duration_ms(a.output_tokens, a.ttft_ms, a.gen_tokens_per_s);
        if !stopped {
            stopped = !wait_until(until(end), &job.stop).await;
        }
        done(stopped);
    });
}

/// Sleep until `deadline` in steps of at most 20 ms; false when `stop` was raised.
async fn wait_until(deadline: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= deadline {
            return true;
        }
        tokio::time::sleep((deadline - now).min(Duration::from_millis(20))).await;
    }
}
