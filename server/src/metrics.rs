//! Prometheus metrics and the HTTP endpoint that serves them (/metrics).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// A call's labels: method and code come from fixed sets, and the model is a
/// served model's name or "-", so the label set is bounded.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct CallLabels {
    pub method: &'static str,
    pub model: String,
    pub code: &'static str,
}

/// Labels of the latency histogram.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct MethodModel {
    pub method: &'static str,
    pub model: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ModelLabel {
    pub model: String,
}

/// How a pool job ended: ran, expired (its deadline passed in the queue, so
/// it never ran) or cancelled (its caller went away before it started).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabel {
    pub outcome: &'static str,
}

/// An upstream call's model (fex's name) and final status.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct UpstreamLabels {
    pub model: String,
    pub code: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ResultLabel {
    pub result: String,
}

/// Every metric the server exports.
pub struct Metrics {
    registry: Registry,
    pub requests: Family<CallLabels, Counter>,
    pub latency: Family<MethodModel, Histogram>,
    pub request_bytes: Family<ModelLabel, Counter>,
    pub response_bytes: Family<ModelLabel, Counter>,
    pub rows: Family<ModelLabel, Counter>,
    pub lists_decoded: Family<ModelLabel, Counter>,
    pub lists_skipped: Family<ModelLabel, Counter>,
    pub reloads: Family<ResultLabel, Counter>,
    pub models: Gauge,
    pub in_flight: Gauge,
    /// Bytes of request messages held by admitted calls (--max-in-flight-bytes).
    pub in_flight_request_bytes: Gauge,
    pub shed: Counter,
    pub deadline_exceeded: Counter,
    /// Time from a job's submission to a pool thread taking it.
    pub queue_wait: Histogram,
    pub queue_depth: Gauge,
    pub pool_threads: Gauge,
    pub pool_busy: Gauge,
    pub pool_busy_seconds: Counter<f64, AtomicU64>,
    pub pool_jobs: Family<OutcomeLabel, Counter>,
    /// Sampled requests written to --request-log files.
    pub request_log_records: Counter,
    /// Sampled requests dropped: the writer fell behind or could not write.
    pub request_log_dropped: Counter,
    /// ModelInfer calls to upstream model servers, by model and status.
    pub upstream_calls: Family<UpstreamLabels, Counter>,
    pub upstream_latency: Family<ModelLabel, Histogram>,
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        let mut registry = Registry::with_prefix("fex");
        let latency = Family::<MethodModel, Histogram>::new_with_constructor(|| {
            // 50 µs .. ~3.3 s in powers of two.
            Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
        });
        let m = Metrics {
            requests: Family::default(),
            latency,
            request_bytes: Family::default(),
            response_bytes: Family::default(),
            rows: Family::default(),
            lists_decoded: Family::default(),
            lists_skipped: Family::default(),
            reloads: Family::default(),
            models: Gauge::default(),
            in_flight: Gauge::default(),
            in_flight_request_bytes: Gauge::default(),
            shed: Counter::default(),
            deadline_exceeded: Counter::default(),
            // 10 µs .. ~5 s in powers of two.
            queue_wait: Histogram::new(exponential_buckets(0.000_01, 2.0, 20)),
            queue_depth: Gauge::default(),
            pool_threads: Gauge::default(),
            pool_busy: Gauge::default(),
            pool_busy_seconds: Counter::default(),
            pool_jobs: Family::default(),
            request_log_records: Counter::default(),
            request_log_dropped: Counter::default(),
            upstream_calls: Family::default(),
            upstream_latency: Family::<ModelLabel, Histogram>::new_with_constructor(|| {
                Histogram::new(exponential_buckets(0.000_05, 2.0, 17))
            }),
            registry: Registry::default(),
        };
        registry.register(
            "requests",
            "fex.v1 calls by method, model (\"-\" before the model is known) and final gRPC status",
            m.requests.clone(),
        );
        registry.register(
            "request_duration_seconds",
            "fex.v1 call latency inside the server by method and model, from headers received to response ready",
            m.latency.clone(),
        );
        registry.register("request_bytes", "Sample bytes received", m.request_bytes.clone());
        registry.register(
            "upstream_calls",
            "ModelInfer calls to a model's upstream model server, by model and final status (Cancelled: the caller went away)",
            m.upstream_calls.clone(),
        );
        registry.register(
            "upstream_duration_seconds",
            "Upstream ModelInfer latency by model, from the call sent to the answer (or its failure)",
            m.upstream_latency.clone(),
        );
        registry.register("response_bytes", "Tensor bytes returned", m.response_bytes.clone());
        registry.register("rows", "Rows (candidates) extracted", m.rows.clone());
        registry.register(
            "feature_lists_decoded",
            "Feature lists the model needed and decoded",
            m.lists_decoded.clone(),
        );
        registry.register(
            "feature_lists_skipped",
            "Feature lists skipped by their length prefix",
            m.lists_skipped.clone(),
        );
        registry.register("reloads", "Model config reloads by result (ok, rejected)", m.reloads.clone());
        registry.register("models_loaded", "Models currently served", m.models.clone());
        registry.register(
            "in_flight_requests",
            "fex.v1 calls admitted and not yet answered (at most --max-concurrency)",
            m.in_flight.clone(),
        );
        registry.register(
            "in_flight_request_bytes",
            "Bytes of request messages held by admitted calls (at most --max-in-flight-bytes)",
            m.in_flight_request_bytes.clone(),
        );
        registry.register(
            "shed",
            "Calls refused with RESOURCE_EXHAUSTED at the concurrency or request-bytes limit or with the extraction queue full",
            m.shed.clone(),
        );
        registry.register("deadline_exceeded", "Calls that ran past their deadline", m.deadline_exceeded.clone());
        registry.register(
            "queue_wait_seconds",
            "Time extraction jobs waited for a pool thread (the autoscaling signal)",
            m.queue_wait.clone(),
        );
        registry.register("queue_depth", "Extraction jobs waiting for a pool thread", m.queue_depth.clone());
        registry.register("pool_threads", "Extraction pool threads (--extract-threads)", m.pool_threads.clone());
        registry.register("pool_busy_threads", "Extraction pool threads running a job now", m.pool_busy.clone());
        registry.register(
            "pool_busy_seconds",
            "Thread-seconds the extraction pool spent on jobs; rate() / fex_pool_threads is its utilisation",
            m.pool_busy_seconds.clone(),
        );
        registry.register(
            "pool_jobs",
            "Extraction jobs taken by a pool thread, by outcome (ran; expired: deadline passed in the queue, \
             never ran; cancelled: the caller went away first)",
            m.pool_jobs.clone(),
        );
        registry.register(
            "request_log_records",
            "Sampled Extract requests written to the --request-log files",
            m.request_log_records.clone(),
        );
        registry.register(
            "request_log_dropped",
            "Sampled Extract requests not logged: the log writer's queue was full (it fell behind) or a write failed",
            m.request_log_dropped.clone(),
        );
        Arc::new(Metrics { registry, ..m })
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String cannot fail");
        out
    }

    pub fn model(model: &str) -> ModelLabel {
        ModelLabel { model: model.to_string() }
    }
}

/// Serves GET /metrics on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    use axum::routing::get;
    let app = axum::Router::new().route(
        "/metrics",
        get(move || {
            let metrics = Arc::clone(&metrics);
            async move {
                ([(http::header::CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")], metrics.render())
            }
        }),
    );
    axum::serve(listener, app).with_graceful_shutdown(shutdown).await
}

/// Binds the metrics listener (before the server reports ready).
pub async fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(addr).await
}
