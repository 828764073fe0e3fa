//! What a bench run measured: an hdrhistogram of latencies (overall and per
//! second of the run), status-code counts, OK throughput and error rate,
//! error samples and bytes; rendered as text for people or JSON for machines.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::bench::{BenchConfig, Mode, Stop};

const MAX_ERROR_SAMPLES: usize = 10;

fn histogram() -> Histogram<u64> {
    // Microseconds, 1 µs to 10 minutes, 3 significant digits.
    Histogram::new_with_bounds(1, 600_000_000, 3).expect("valid histogram bounds")
}

#[derive(Clone)]
pub struct Recorder {
    latency: Histogram<u64>,
    by_second: BTreeMap<u64, Histogram<u64>>,
    status: BTreeMap<String, u64>,
    errors: Vec<String>,
    request_bytes: u64,
    response_bytes: u64,
    pub dropped: u64,
}

impl Recorder {
    pub fn new() -> Self {
        Self {
            latency: histogram(),
            by_second: BTreeMap::new(),
            status: BTreeMap::new(),
            errors: Vec::new(),
            request_bytes: 0,
            response_bytes: 0,
            dropped: 0,
        }
    }

    /// Records one measured call: scheduled in `second` of the run, taking `latency`.
    pub fn record(&mut self, second: u64, latency: Duration, request_bytes: u64, result: Result<u64, tonic::Status>) {
        let micros = (latency.as_micros() as u64).clamp(1, 600_000_000);
        self.latency.saturating_record(micros);
        self.by_second.entry(second).or_insert_with(histogram).saturating_record(micros);
        self.request_bytes += request_bytes;
        let code = match result {
            Ok(bytes) => {
                self.response_bytes += bytes;
                tonic::Code::Ok
            }
            Err(status) => {
                let sample = format!("{:?}: {}", status.code(), status.message());
                if self.errors.len() < MAX_ERROR_SAMPLES && !self.errors.contains(&sample) {
                    self.errors.push(sample);
                }
                status.code()
            }
        };
        *self.status.entry(code_name(code)).or_default() += 1;
    }

    pub fn progress_line(&self, elapsed: Duration) -> String {
        let n = self.latency.len();
        let ok = self.status.get("OK").copied().unwrap_or(0);
        let rate = ok as f64 / elapsed.as_secs_f64().max(1e-9);
        let errors = n - ok;
        format!(
            "{n} done, {rate:.0} OK/s, p99 {:.2} ms, {errors} errors",
            self.latency.value_at_quantile(0.99) as f64 / 1000.0
        )
    }

    /// The final report; `elapsed` runs from the end of the warm-up to the last answer.
    pub fn report(&self, config: &BenchConfig, elapsed: Duration) -> Report {
        let requests = self.latency.len();
        let duration = elapsed.as_secs_f64();
        let (concurrency, rate) = match config.mode {
            Mode::Closed { concurrency } => (Some(concurrency), None),
            Mode::Open { rate } => (None, Some(rate)),
        };
        let send_window = match (config.mode, config.stop) {
            (Mode::Open { rate }, _) => (requests + self.dropped) as f64 / rate,
            _ => duration,
        };
        let ok = self.status.get("OK").copied().unwrap_or(0);
        let errors = requests - ok;
        Report {
            model: config.model.clone(),
            protocol: config.protocol.name(),
            mode: if concurrency.is_some() { "closed" } else { "open" },
            concurrency,
            requested_rate: rate,
            connections: config.connections,
            stop: match config.stop {
                Stop::Duration(d) => format!("{:?}", d),
                Stop::Requests(n) => format!("{n} requests"),
            },
            warmup_s: config.warmup.as_secs_f64(),
            requests,
            dropped: self.dropped,
            duration_s: duration,
            send_rate: (requests + self.dropped) as f64 / send_window.max(1e-9),
            answer_rate: requests as f64 / duration.max(1e-9),
            throughput: ok as f64 / duration.max(1e-9),
            ok,
            errors,
            error_rate: if requests == 0 { 0.0 } else { errors as f64 / requests as f64 },
            latency_ms: Latency::of(&self.latency),
            latency_by_second_ms: self.by_second.iter().map(|(s, h)| (*s, Latency::of(h))).collect(),
            status: self.status.clone(),
            error_samples: self.errors.clone(),
            request_bytes: self.request_bytes,
            response_bytes: self.response_bytes,
            server_gone: None,
        }
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

/// gRPC code names as the spec spells them (OK, RESOURCE_EXHAUSTED...).
pub fn code_name(code: tonic::Code) -> String {
    let camel = format!("{code:?}");
    let mut out = String::new();
    for (i, c) in camel.chars().enumerate() {
        if c.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Latency {
    pub min: f64,
    pub p50: f64,
    pub p90: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
    pub mean: f64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Self {
        let ms = |us: u64| us as f64 / 1000.0;
        if h.is_empty() {
            return Self { min: 0.0, p50: 0.0, p90: 0.0, p99: 0.0, p999: 0.0, max: 0.0, mean: 0.0 };
        }
        Self {
            min: ms(h.min()),
            p50: ms(h.value_at_quantile(0.5)),
            p90: ms(h.value_at_quantile(0.9)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
            mean: h.mean() / 1000.0,
        }
    }
}

/// A finished run. `requests` = the sum of `status` = `ok` + `errors`; open
/// loop adds `dropped` (never sent).
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub model: String,
    /// `v1`, `v2` or `relay`.
    pub protocol: &'static str,
    pub mode: &'static str,
    pub concurrency: Option<usize>,
    pub requested_rate: Option<f64>,
    pub connections: usize,
    pub stop: String,
    pub warmup_s: f64,
    pub requests: u64,
    pub dropped: u64,
    pub duration_s: f64,
    /// Requests sent (or dropped) per second of the sending window.
    pub send_rate: f64,
    /// Answers of any status per second, from the end of warm-up to the last answer.
    pub answer_rate: f64,
    /// OK answers per second, over the same time.
    pub throughput: f64,
    /// Calls answered OK.
    pub ok: u64,
    /// Calls that failed, whatever the status (`requests - ok`).
    pub errors: u64,
    /// `errors / requests` (0 when nothing was sent).
    pub error_rate: f64,
    pub latency_ms: Latency,
    pub latency_by_second_ms: BTreeMap<u64, Latency>,
    pub status: BTreeMap<String, u64>,
    pub error_samples: Vec<String>,
    pub request_bytes: u64,
    pub response_bytes: u64,
    /// Set when the run stopped early because the server went away.
    pub server_gone: Option<String>,
}

impl Report {
    pub fn to_text(&self) -> String {
        let l = &self.latency_ms;
        let mode = match (self.concurrency, self.requested_rate) {
            (Some(c), _) => format!("closed loop, concurrency {c}"),
            (_, Some(r)) => format!("open loop, {r:.0} requests/s asked"),
            _ => String::new(),
        };
        let mut out = format!(
            "model {} · {} · {mode} · {} connection(s) · {}\n\n\
             requests   {} (dropped by the client: {})\n\
             duration   {:.3} s after {:.1} s warm-up\n\
             send rate  {:.1} /s\n\
             answers    {:.1} /s (any status)\n\
             throughput {:.1} /s OK\n\
             errors     {} ({:.2}%)\n\n\
             latency (ms)  min {:.3}  p50 {:.3}  p90 {:.3}  p99 {:.3}  p99.9 {:.3}  max {:.3}  mean {:.3}\n\n\
             status\n",
            self.model,
            self.protocol,
            self.connections,
            self.stop,
            self.requests,
            self.dropped,
            self.duration_s,
            self.warmup_s,
            self.send_rate,
            self.answer_rate,
            self.throughput,
            self.errors,
            self.error_rate * 100.0,
            l.min,
            l.p50,
            l.p90,
            l.p99,
            l.p999,
            l.max,
            l.mean
        );
        for (code, n) in &self.status {
            out.push_str(&format!("  {code:<20} {n}\n"));
        }
        if !self.error_samples.is_empty() {
            out.push_str("\nerror samples\n");
            for e in &self.error_samples {
                out.push_str(&format!("  {e}\n"));
            }
        }
        out.push_str(&format!("\nbytes  sent {}  received {}\n", self.request_bytes, self.response_bytes));
        if let Some(why) = &self.server_gone {
            out.push_str(&format!("\nstopped early: {why}\n"));
        }
        out
    }
}

/// A progress bar on stderr (hidden when stderr is not a terminal).
pub fn progress(config: &BenchConfig) -> indicatif::ProgressBar {
    if !config.progress {
        return indicatif::ProgressBar::hidden();
    }
    let (len, template) = match config.stop {
        Stop::Duration(d) => ((config.warmup + d).as_millis() as u64, "{elapsed_precise} [{bar:30}] {msg}"),
        Stop::Requests(n) => (n, "{elapsed_precise} [{bar:30}] {pos}/{len} {msg}"),
    };
    let bar = indicatif::ProgressBar::new(len);
    bar.set_style(indicatif::ProgressStyle::with_template(template).expect("valid template").progress_chars("=> "));
    bar
}
