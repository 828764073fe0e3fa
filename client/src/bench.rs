//! The load generator. Closed loop: `concurrency` workers, each sending its next
//! request when the last one answers. Open loop: requests are scheduled at
//! `rate` per second whatever the server does, and latency is measured from the
//! scheduled send time, so a slow server shows as latency, not as a lower rate.
//! Calls that fail because the server is unreachable or closed the connection
//! are reported as UNAVAILABLE "the server went away", back off (see
//! `backoff`), and stop the run once the server is gone. The protocol
//! (`calls`) is fex.v1, v2, or the caller's relay to a model server; a
//! relay's failures on either hop are counted the same way.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Context as _;

use bytes::Bytes;
use tokio::time::Instant;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

use crate::backoff::Backoff;
use crate::calls::{Caller, Failure, Prepared, Protocol};
use crate::client::ConnectOptions;
use crate::errors::{self, Cause};
use crate::report::{Recorder, Report};

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mode {
    /// `n` requests in flight at all times.
    Closed { concurrency: usize },
    /// Requests scheduled at this rate (per second), independent of responses.
    Open { rate: f64 },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Stop {
    /// Measure for this long after the warm-up.
    Duration(Duration),
    /// Measure this many requests after the warm-up.
    Requests(u64),
}

#[derive(Debug, Clone)]
pub struct BenchConfig {
    pub connect: ConnectOptions,
    pub model: String,
    /// fex.v1, v2 to fex, or the caller's relay to a model server.
    pub protocol: Protocol,
    pub mode: Mode,
    pub stop: Stop,
    /// Requests started in this first period are sent but not reported.
    pub warmup: Duration,
    /// HTTP/2 connections; requests are spread over them round-robin.
    pub connections: usize,
    /// Per-request deadline (sent as grpc-timeout too).
    pub timeout: Duration,
    /// Serialized ExampleBatches, sent round-robin.
    pub payloads: Vec<Bytes>,
    /// Open loop only: most requests in flight; beyond it a scheduled request
    /// is counted as dropped (the client, not the server, is the bottleneck).
    pub max_in_flight: usize,
    /// Hard limit on the whole run (warm-up included), whatever else happens.
    pub max_run_time: Duration,
    /// The run stops when calls have found the server unreachable (or
    /// closing connections) for this long, with no answer in between.
    pub gone_after: Duration,
    /// Longest wait between sends while the server is unreachable.
    pub backoff_max: Duration,
    pub progress: bool,
}

/// Shared between the scheduler, the workers and the progress bar.
struct Shared {
    config: BenchConfig,
    clients: Vec<Caller>,
    /// Prebuilt requests, one per payload.
    requests: Vec<Prepared>,
    request_sizes: Vec<u64>,
    start: Instant,
    measure_from: Instant,
    hard_stop: Instant,
    next: AtomicUsize,
    measured: AtomicU64,
    done: AtomicBool,
    in_flight: AtomicUsize,
    recorder: Mutex<Recorder>,
    backoff: Backoff,
}

pub async fn run(config: BenchConfig) -> anyhow::Result<Report> {
    anyhow::ensure!(!config.payloads.is_empty(), "no payloads to send");
    anyhow::ensure!(config.connections >= 1, "--connections must be at least 1");
    let mut clients = Vec::with_capacity(config.connections);
    for _ in 0..config.connections {
        clients.push(connect(&config, clients.is_empty()).await?);
    }
    let requests: Vec<_> =
        config.payloads.iter().map(|p| Prepared::new(&config.protocol, &config.model, p.clone())).collect();
    let request_sizes = requests.iter().map(Prepared::encoded_len).collect();
    let start = Instant::now();
    let shared = Arc::new(Shared {
        measure_from: start + config.warmup,
        hard_stop: start + config.max_run_time,
        clients,
        requests,
        request_sizes,
        start,
        next: AtomicUsize::new(0),
        measured: AtomicU64::new(0),
        done: AtomicBool::new(false),
        in_flight: AtomicUsize::new(0),
        recorder: Mutex::new(Recorder::new()),
        backoff: Backoff::new(config.backoff_max, config.gone_after),
        config,
    });
    let progress = crate::report::progress(&shared.config);
    let ticker = tokio::spawn(tick_progress(Arc::clone(&shared), progress.clone()));
    match shared.config.mode {
        Mode::Closed { concurrency } => closed_loop(&shared, concurrency).await,
        Mode::Open { rate } => open_loop(&shared, rate).await,
    }
    shared.done.store(true, Ordering::SeqCst);
    ticker.abort();
    progress.finish_and_clear();
    let recorder = shared.recorder.lock().expect("recorder lock").clone();
    let elapsed = Instant::now().saturating_duration_since(shared.measure_from);
    let mut report = recorder.report(&shared.config, elapsed);
    report.server_gone = shared.backoff.gone().map(|why| format!("{why}; address {}", shared.config.connect.address));
    Ok(report)
}

/// One connection to fex-server (and, for a relay, one to the model
/// server); the first of each is checked before the run.
async fn connect(config: &BenchConfig, first: bool) -> anyhow::Result<Caller> {
    let channel = crate::client::connect(&config.connect).await?;
    if first {
        preflight(&channel, &config.connect, config.timeout).await?;
    }
    let upstream = match &config.protocol {
        Protocol::Relay(relay) => {
            let channel = crate::client::connect(&relay.connect).await.context("the model server (--upstream-addr)")?;
            if first {
                preflight(&channel, &relay.connect, config.timeout).await?;
            }
            Some(channel)
        }
        Protocol::V1 | Protocol::V2 => None,
    };
    Ok(Caller::new(channel, upstream))
}

/// One health check before the run, so a server that cannot be talked to
/// (TLS required, certificate refused...) is a clear error, not a run of
/// identical failures. Any answer, even an error status (a model server
/// without grpc.health.v1), will do.
async fn preflight(channel: &Channel, options: &ConnectOptions, timeout: Duration) -> anyhow::Result<()> {
    let mut health = HealthClient::new(channel.clone());
    let check = health.check(HealthCheckRequest { service: String::new() });
    match tokio::time::timeout(timeout, check).await {
        Ok(Err(status)) if Cause::of(&status).is_some() => {
            anyhow::bail!("{}", errors::explain_first_call(&status, options).await)
        }
        _ => Ok(()),
    }
}

impl Shared {
    /// Whether the measured part of the run is over.
    fn finished(&self, now: Instant) -> bool {
        if now >= self.hard_stop || self.backoff.gone().is_some() {
            return true;
        }
        match self.config.stop {
            Stop::Duration(d) => now >= self.measure_from + d,
            Stop::Requests(n) => self.measured.load(Ordering::SeqCst) >= n,
        }
    }

    /// Claims a measured slot for a request scheduled at `at` (false: warm-up).
    fn claim(&self, at: Instant) -> Option<bool> {
        if at < self.measure_from {
            return Some(false);
        }
        match self.config.stop {
            Stop::Requests(n) => {
                let claimed = self.measured.fetch_add(1, Ordering::SeqCst);
                (claimed < n).then_some(true)
            }
            Stop::Duration(_) => {
                self.measured.fetch_add(1, Ordering::SeqCst);
                Some(true)
            }
        }
    }

    /// Waits out the backoff pause while the server is unreachable.
    async fn backoff(&self) {
        if let Some(t) = self.backoff.not_before() {
            tokio::time::sleep_until(t.min(self.hard_stop)).await;
        }
    }

    /// Sends one request and records it (if measured) against `scheduled`.
    async fn send(&self, worker: usize, scheduled: Instant, measured: bool) {
        if self.backoff.gone().is_some() {
            return;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.requests.len();
        let mut caller = self.clients[worker % self.clients.len()].clone();
        let (protocol, timeout) = (&self.config.protocol, self.config.timeout);
        let outcome = tokio::time::timeout(timeout, caller.call(&self.requests[i], protocol, timeout)).await;
        let latency = scheduled.elapsed();
        let mut sent = self.request_sizes[i];
        let result = match outcome {
            Ok(Ok(sizes)) => {
                self.backoff.answered();
                sent += sizes.sent;
                Ok(sizes.received)
            }
            Ok(Err(failure)) => Err(self.failed(failure)),
            Err(_) => Err(tonic::Status::deadline_exceeded(format!("client timeout of {timeout:?}"))),
        };
        if !measured {
            return;
        }
        let second = scheduled.saturating_duration_since(self.measure_from).as_secs();
        self.recorder.lock().expect("recorder lock").record(second, latency, sent, result);
    }

    /// The status a failed call is counted as. The model server's statuses
    /// keep their code and say which hop they come from; a response the
    /// caller cannot re-encode is FAILED_PRECONDITION (the config's mapping
    /// does not fit what fex-server answered).
    fn failed(&self, failure: Failure) -> tonic::Status {
        match failure {
            Failure::Fex(status) => self.classify(status, &self.config.connect, None),
            Failure::Upstream(status) => {
                let options = match &self.config.protocol {
                    Protocol::Relay(relay) => &relay.connect,
                    Protocol::V1 | Protocol::V2 => &self.config.connect,
                };
                self.classify(status, options, Some("the model server"))
            }
            Failure::Relay(e) => {
                self.backoff.answered();
                tonic::Status::failed_precondition(format!("relay: {e}"))
            }
        }
    }

    /// A failed call's status, with transport failures said in words: the
    /// server going away (a refused or closed connection; tonic says
    /// CANCELLED "operation was canceled" or INTERNAL "h2 protocol error")
    /// becomes UNAVAILABLE and backs off; a status from the server proves it
    /// is there. A status of the model server (`hop`) says so.
    fn classify(&self, status: tonic::Status, options: &ConnectOptions, hop: Option<&str>) -> tonic::Status {
        let status = match Cause::of(&status) {
            Some(cause) if cause.server_gone() => {
                let what = match &cause {
                    Cause::Refused => "connection refused".to_string(),
                    Cause::Closed(e) => format!("it closed the connection (draining or stopped; {e})"),
                    Cause::Connect(e) => format!("cannot connect: {e}"),
                    other => other.explain(options),
                };
                let what =
                    format!("{}{what}", hop.map(|h| format!("{h} at {}: ", options.address)).unwrap_or_default());
                self.backoff.failed(Instant::now(), &what);
                return tonic::Status::unavailable(format!("the server went away: {what}"));
            }
            Some(cause) => tonic::Status::new(status.code(), cause.explain(options)),
            None => {
                self.backoff.answered();
                status
            }
        };
        match hop {
            Some(hop) => tonic::Status::new(status.code(), format!("{hop}: {}", status.message())),
            None => status,
        }
    }
}

async fn closed_loop(shared: &Arc<Shared>, concurrency: usize) {
    let workers: Vec<_> = (0..concurrency.max(1))
        .map(|w| {
            let shared = Arc::clone(shared);
            tokio::spawn(async move {
                loop {
                    // A closed loop's latency starts when the call is sent,
                    // after any backoff pause.
                    shared.backoff().await;
                    let now = Instant::now();
                    if shared.finished(now) {
                        break;
                    }
                    let Some(measured) = shared.claim(now) else { break };
                    shared.send(w, now, measured).await;
                }
            })
        })
        .collect();
    for w in workers {
        let _ = w.await;
    }
}

async fn open_loop(shared: &Arc<Shared>, rate: f64) {
    let interval = Duration::from_secs_f64(1.0 / rate.max(1e-3));
    let send_until = match shared.config.stop {
        Stop::Duration(d) => (shared.measure_from + d).min(shared.hard_stop),
        Stop::Requests(_) => shared.hard_stop,
    };
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0u64.. {
        // Send times are fixed in advance; a late loop catches up in a burst
        // and each request's latency still counts from its own slot.
        let scheduled = shared.start + interval.mul_f64(i as f64);
        if scheduled >= send_until || shared.backoff.gone().is_some() {
            break;
        }
        tokio::time::sleep_until(scheduled).await;
        let Some(measured) = shared.claim(scheduled) else { break };
        if shared.in_flight.load(Ordering::SeqCst) >= shared.config.max_in_flight {
            if measured {
                shared.recorder.lock().expect("recorder lock").dropped += 1;
            }
            continue;
        }
        shared.in_flight.fetch_add(1, Ordering::SeqCst);
        let shared = Arc::clone(shared);
        tasks.spawn(async move {
            // Latency still counts from the scheduled time.
            shared.backoff().await;
            shared.send(i as usize, scheduled, measured).await;
            shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        });
        while tasks.try_join_next().is_some() {}
    }
    // Let every sent request finish (each is bounded by the timeout).
    while tasks.join_next().await.is_some() {}
}

async fn tick_progress(shared: Arc<Shared>, bar: indicatif::ProgressBar) {
    let mut ticks = tokio::time::interval(Duration::from_millis(200));
    loop {
        ticks.tick().await;
        if shared.done.load(Ordering::SeqCst) {
            return;
        }
        let now = Instant::now();
        let position = match shared.config.stop {
            Stop::Duration(_) => now.saturating_duration_since(shared.start).as_millis() as u64,
            Stop::Requests(_) => shared.measured.load(Ordering::SeqCst),
        };
        bar.set_position(position);
        let recorder = shared.recorder.lock().expect("recorder lock");
        bar.set_message(recorder.progress_line(now.saturating_duration_since(shared.measure_from)));
    }
}
