//! Backing off from a server that cannot be reached, and deciding it is gone.
//! Every call that fails because the server is unreachable or closed the
//! connection (`errors::Cause::server_gone`) doubles a shared delay before the
//! next send (bounded exponential backoff, capped at `max`); any answer from
//! the server resets it. When nothing but such failures has happened for
//! `gone_after`, the server is gone and the run stops.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

/// First delay after a failure; each further failure doubles it up to `max`.
pub const INITIAL: Duration = Duration::from_millis(10);
/// Failures in a row before the server can be declared gone (with `gone_after`).
const MIN_FAILURES: u32 = 3;

pub struct Backoff {
    max: Duration,
    gone_after: Duration,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Failures since the last answer.
    failures: u32,
    /// No call may be sent before this.
    not_before: Option<Instant>,
    /// The first failure since the last answer.
    failing_since: Option<Instant>,
    /// Set once: why the run stops.
    gone: Option<String>,
}

impl Backoff {
    pub fn new(max: Duration, gone_after: Duration) -> Self {
        Self { max, gone_after, state: Mutex::new(State::default()) }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("backoff lock")
    }

    /// When the next call may be sent (`None`: now).
    pub fn not_before(&self) -> Option<Instant> {
        self.state().not_before
    }

    /// The server answered (with any status): it is there.
    pub fn answered(&self) {
        let mut s = self.state();
        s.failures = 0;
        s.not_before = None;
        s.failing_since = None;
    }

    /// A call failed because the server is unreachable or went away;
    /// `cause` says how. Returns the reason the run stops, once it is gone.
    pub fn failed(&self, now: Instant, cause: &str) -> Option<String> {
        let mut s = self.state();
        s.failures = s.failures.saturating_add(1);
        let since = *s.failing_since.get_or_insert(now);
        let delay = INITIAL.saturating_mul(1 << s.failures.min(16)).min(self.max);
        s.not_before = Some(s.not_before.map_or(now + delay, |t| t.max(now + delay)));
        let silent = now.saturating_duration_since(since);
        if s.gone.is_none() && s.failures >= MIN_FAILURES && silent >= self.gone_after {
            s.gone = Some(format!(
                "the server is gone: no answer for {:.1} s, {} calls in a row failed (last: {cause})",
                silent.as_secs_f64(),
                s.failures
            ));
        }
        s.gone.clone()
    }

    /// Why the run stops, once the server is gone.
    pub fn gone(&self) -> Option<String> {
        self.state().gone.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_cap_and_reset_on_an_answer() {
        let b = Backoff::new(Duration::from_millis(100), Duration::from_secs(3600));
        let t = Instant::now();
        let ms: Vec<u128> = (0..6)
            .map(|_| {
                b.failed(t, "x");
                b.not_before().unwrap().duration_since(t).as_millis()
            })
            .collect();
        assert_eq!(ms, [20, 40, 80, 100, 100, 100]);
        b.answered();
        assert_eq!(b.not_before(), None);
        b.failed(t, "x");
        assert_eq!(b.not_before().unwrap().duration_since(t).as_millis(), 20);
    }

    #[test]
    fn gone_after_enough_failures_and_time_without_an_answer() {
        let b = Backoff::new(Duration::from_secs(1), Duration::from_secs(5));
        let t = Instant::now();
        assert_eq!(b.failed(t, "refused"), None);
        assert_eq!(b.failed(t + Duration::from_secs(6), "refused"), None, "two failures are not enough");
        b.answered();
        assert_eq!(b.failed(t + Duration::from_secs(7), "refused"), None, "an answer restarts the clock");
        b.failed(t + Duration::from_secs(8), "refused");
        assert_eq!(b.failed(t + Duration::from_secs(11), "refused"), None, "4 s without an answer");
        let gone = b.failed(t + Duration::from_secs(12), "connection refused").unwrap();
        assert_eq!(gone, "the server is gone: no answer for 5.0 s, 4 calls in a row failed (last: connection refused)");
        assert_eq!(b.gone(), Some(gone));
    }
}
