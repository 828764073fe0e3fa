//! Command-line flags and environment variables (clap). Every flag has an
//! `FEX_*` environment variable, so the same settings work from a shell and from
//! a Kubernetes manifest.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, ValueEnum};

/// fex-server: the gRPC feature-extraction service.
///
/// Serves `fex.v1.FeatureExtractor` for every model config in --models (or the
/// embedded default model), with gRPC health checking and reflection on the
/// same port and Prometheus metrics on --metrics-addr.
#[derive(Debug, Clone, Parser)]
#[command(name = "fex-server", version)]
pub struct Args {
    /// Address of the gRPC listener.
    #[arg(long, env = "FEX_LISTEN_ADDR", default_value = "0.0.0.0:50051")]
    pub listen_addr: SocketAddr,

    /// Address of the Prometheus /metrics endpoint; "off" disables it.
    #[arg(long, env = "FEX_METRICS_ADDR", default_value = "0.0.0.0:9090", value_parser = parse_optional_addr)]
    pub metrics_addr: OptionalAddr,

    /// A plaintext listener serving only grpc.health.v1, for probes that
    /// cannot speak TLS (the kubelet's native gRPC probes); "off" disables it.
    #[arg(long, env = "FEX_HEALTH_ADDR", default_value = "off", value_parser = parse_optional_addr)]
    pub health_addr: OptionalAddr,

    /// Directory of model configs (*.yaml, *.yml). Without it the embedded
    /// default model is served.
    #[arg(long, env = "FEX_MODELS")]
    pub models: Option<PathBuf>,

    /// Validate every model config in --models (or the default model), print
    /// every error, and exit: 0 when all are valid, 64 otherwise.
    #[arg(long)]
    pub check_config: bool,

    /// How often the models directory is checked for changes ("0s" = only on SIGHUP).
    #[arg(long, env = "FEX_RELOAD_INTERVAL", default_value = "5s", value_parser = parse_duration)]
    pub reload_interval: Duration,

    /// Largest request message accepted, in bytes; a larger one is refused
    /// with RESOURCE_EXHAUSTED before it is read.
    #[arg(long, env = "FEX_MAX_REQUEST_BYTES", default_value_t = 4 << 20)]
    pub max_request_bytes: usize,

    /// Largest response sent, in bytes.
    #[arg(long, env = "FEX_MAX_RESPONSE_BYTES", default_value_t = 64 << 20)]
    pub max_response_bytes: usize,

    /// Calls admitted at once across all connections (reading their request,
    /// waiting for or running extraction, or sending their response); more
    /// are refused at once with RESOURCE_EXHAUSTED.
    #[arg(long, env = "FEX_MAX_CONCURRENCY", default_value_t = 1024, value_parser = parse_positive)]
    pub max_concurrency: usize,

    /// Bytes of request messages held at once by admitted calls; a request
    /// that does not fit is refused at once with RESOURCE_EXHAUSTED, before
    /// it is read. The memory bound for requests, whatever their sizes; at
    /// least --max-request-bytes.
    #[arg(long, env = "FEX_MAX_IN_FLIGHT_BYTES", default_value_t = 256 << 20, value_parser = parse_positive)]
    pub max_in_flight_bytes: usize,

    /// Extraction threads, each with its own scratch [default: the cores
    /// left after --io-threads, at least 1].
    #[arg(long, env = "FEX_EXTRACT_THREADS", value_parser = parse_positive)]
    pub extract_threads: Option<usize>,

    /// Threads of the async runtime that serve HTTP/2, health, reflection and
    /// metrics (never extraction) [default: a quarter of the cores, at least 1].
    #[arg(long, env = "FEX_IO_THREADS", value_parser = parse_positive)]
    pub io_threads: Option<usize>,

    /// Extraction jobs that may wait for a busy pool thread; a call beyond the
    /// threads plus this queue is refused at once with RESOURCE_EXHAUSTED, and
    /// a job whose deadline passes while it waits never runs.
    #[arg(long, env = "FEX_MAX_QUEUE", default_value_t = 512)]
    pub max_queue: usize,

    /// Heap touched at start, before the listener opens, and kept for the
    /// calls to come, in bytes; 0 touches none. A cold server otherwise
    /// faults its working set in under its first calls, which wait on it
    /// (skipped when MIMALLOC_PURGE_DELAY turns purging back on: the memory
    /// would not stay).
    #[arg(long, env = "FEX_PREFAULT_HEAP_BYTES", default_value_t = 128 << 20)]
    pub prefault_heap_bytes: usize,

    /// HTTP/2 receive window of each stream, in bytes: a request larger than
    /// this waits a round trip for a WINDOW_UPDATE before the rest is sent.
    #[arg(long, env = "FEX_HTTP2_STREAM_WINDOW", default_value_t = 4 << 20, value_parser = parse_window)]
    pub http2_stream_window: u32,

    /// HTTP/2 receive window of each connection (all its streams), in bytes.
    #[arg(long, env = "FEX_HTTP2_CONNECTION_WINDOW", default_value_t = 16 << 20, value_parser = parse_window)]
    pub http2_connection_window: u32,

    /// Largest HTTP/2 frame payload the server accepts, in bytes (16384 to
    /// 16777215); a client sends request bodies in frames up to this size.
    #[arg(long, env = "FEX_HTTP2_MAX_FRAME_SIZE", default_value_t = 1 << 20, value_parser = parse_frame_size)]
    pub http2_max_frame_size: u32,

    /// Deadline of a request that carries no grpc-timeout (a shorter client
    /// deadline wins).
    #[arg(long, env = "FEX_REQUEST_TIMEOUT", default_value = "1s", value_parser = parse_duration)]
    pub request_timeout: Duration,

    /// How long in-flight requests may run after SIGTERM before the process exits.
    #[arg(long, env = "FEX_DRAIN_TIMEOUT", default_value = "20s", value_parser = parse_duration)]
    pub drain_timeout: Duration,

    /// PEM certificate chain; with --tls-key, serves TLS.
    #[arg(long, env = "FEX_TLS_CERT", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,

    /// PEM private key of --tls-cert.
    #[arg(long, env = "FEX_TLS_KEY", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,

    /// PEM CA bundle; when set, clients must present a certificate it signed (mTLS).
    #[arg(long, env = "FEX_TLS_CLIENT_CA", requires = "tls_cert")]
    pub tls_client_ca: Option<PathBuf>,

    /// Directory for the request log: sampled Extract requests (as received,
    /// with model, identity, time and request id) in rotating framed files
    /// that `fex replay` reads. Written by a thread of its own, never on a
    /// call's path: when it falls behind, records are dropped and counted.
    #[arg(long, env = "FEX_REQUEST_LOG")]
    pub request_log: Option<PathBuf>,

    /// Fraction of Extract requests logged, 0 to 1.
    #[arg(long, env = "FEX_REQUEST_LOG_SAMPLE", default_value_t = 1.0, value_parser = parse_rate)]
    pub request_log_sample: f64,

    /// A request log file is closed and a new one started past this size.
    #[arg(long, env = "FEX_REQUEST_LOG_MAX_FILE_BYTES", default_value_t = 64 << 20, value_parser = parse_positive_u64)]
    pub request_log_max_file_bytes: u64,

    /// A request log file is closed and a new one started once it is this
    /// old ("0s": no age bound).
    #[arg(long, env = "FEX_REQUEST_LOG_MAX_AGE", default_value = "10m", value_parser = parse_duration)]
    pub request_log_max_age: Duration,

    /// Disk the request log may use; the oldest files are deleted to stay
    /// under it. At least --request-log-max-file-bytes.
    #[arg(long, env = "FEX_REQUEST_LOG_MAX_TOTAL_BYTES", default_value_t = 1 << 30, value_parser = parse_positive_u64)]
    pub request_log_max_total_bytes: u64,

    /// Kafka brokers (comma-separated host:port) to send the request log to,
    /// as messages of --request-log-kafka-topic keyed by the request's user
    /// id (read with the model's `label_join:` keys), beside or instead of
    /// the files of --request-log. The brokers must answer for the topic at start
    /// (within 10s; exit 69 when none answers, 64 when the topic is missing).
    #[arg(long, env = "FEX_REQUEST_LOG_KAFKA", value_name = "BROKERS", value_parser = parse_brokers)]
    pub request_log_kafka: Option<String>,

    /// The Kafka topic of --request-log-kafka (it must exist; its partition
    /// count is the operator's choice).
    #[arg(long, env = "FEX_REQUEST_LOG_KAFKA_TOPIC", value_name = "TOPIC", default_value = "fex-requests", value_parser = parse_topic)]
    pub request_log_kafka_topic: String,

    /// Sampled requests waiting for the log writer; more are dropped (and as
    /// many again may wait in the Kafka producer's queue).
    #[arg(long, env = "FEX_REQUEST_LOG_QUEUE", default_value_t = 1024, value_parser = parse_positive)]
    pub request_log_queue: usize,

    /// Log format.
    #[arg(long, env = "FEX_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter (tracing EnvFilter syntax), e.g. "info" or "fex_server=debug".
    #[arg(long, env = "FEX_LOG", default_value = "info")]
    pub log: String,

    /// The flags KServe appends to a custom transformer's container
    /// (`--model_name`, `--predictor_host`, `--http_port`, `--workers`):
    /// taken and logged, never acted on. fex's models name their own
    /// upstream (helm/examples/kserve).
    #[command(flatten)]
    pub kserve: KserveFlags,
}

/// What KServe passes a transformer; fex-server accepts and ignores it.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct KserveFlags {
    #[arg(long = "model_name", hide = true)]
    pub model_name: Option<String>,
    #[arg(long = "predictor_host", hide = true)]
    pub predictor_host: Option<String>,
    #[arg(long = "http_port", hide = true)]
    pub http_port: Option<String>,
    #[arg(long = "workers", hide = true)]
    pub workers: Option<String>,
}

impl KserveFlags {
    /// The flags given, as `name=value` pairs for a log line.
    pub fn given(&self) -> Vec<String> {
        let flags = [
            ("model_name", &self.model_name),
            ("predictor_host", &self.predictor_host),
            ("http_port", &self.http_port),
            ("workers", &self.workers),
        ];
        flags.iter().filter_map(|(n, v)| v.as_ref().map(|v| format!("{n}={v}"))).collect()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// A socket address, or none ("off").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionalAddr(pub Option<SocketAddr>);

fn parse_optional_addr(s: &str) -> Result<OptionalAddr, String> {
    if s == "off" {
        return Ok(OptionalAddr(None));
    }
    s.parse().map(|a| OptionalAddr(Some(a))).map_err(|e| format!("{e}: expected host:port or off"))
}

/// A count of at least 1.
fn parse_positive(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err("expected at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

/// A byte count of at least 1.
fn parse_positive_u64(s: &str) -> Result<u64, String> {
    match s.parse::<u64>() {
        Ok(0) => Err("expected at least 1".into()),
        Ok(n) => Ok(n),
        Err(e) => Err(format!("{s:?}: {e}")),
    }
}

/// Bootstrap brokers: comma-separated host:port, none empty.
fn parse_brokers(s: &str) -> Result<String, String> {
    for broker in s.split(',') {
        let (host, port) = broker.rsplit_once(':').ok_or_else(|| format!("{broker:?}: expected host:port"))?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(format!("{broker:?}: expected host:port"));
        }
    }
    Ok(s.to_string())
}

/// A Kafka topic name: 1 to 249 of [a-zA-Z0-9._-], not "." or "..".
fn parse_topic(s: &str) -> Result<String, String> {
    let legal = s.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b));
    if s.is_empty() || s.len() > 249 || !legal || s == "." || s == ".." {
        return Err(format!("{s:?}: a Kafka topic is 1 to 249 of a-z, A-Z, 0-9, '.', '_' and '-'"));
    }
    Ok(s.to_string())
}

/// A sampling rate: 0 to 1.
fn parse_rate(s: &str) -> Result<f64, String> {
    let r: f64 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !(0.0..=1.0).contains(&r) {
        return Err(format!("{s:?}: expected a rate from 0 to 1"));
    }
    Ok(r)
}

/// An HTTP/2 window: 65535 (the protocol's initial window) to 2^31 - 1.
fn parse_window(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !(65_535..=i32::MAX as u32).contains(&n) {
        return Err(format!("{n} is outside 65535 to 2147483647 bytes"));
    }
    Ok(n)
}

/// An HTTP/2 SETTINGS_MAX_FRAME_SIZE: 16384 to 16777215 (RFC 9113, 6.5.2).
fn parse_frame_size(s: &str) -> Result<u32, String> {
    let n: u32 = s.parse().map_err(|e| format!("{s:?}: {e}"))?;
    if !(16_384..=16_777_215).contains(&n) {
        return Err(format!("{n} is outside 16384 to 16777215 bytes"));
    }
    Ok(n)
}

/// Parses "250ms", "5s", "2m" or a plain number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let (number, unit) = match s.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => s.split_at(i),
        None => (s, "s"),
    };
    let n: f64 = number.trim().parse().map_err(|_| format!("{s:?}: expected a duration like 250ms, 5s or 2m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}, expected ms, s or m")),
    };
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{s:?}: expected 0 to 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// How many threads do what.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Threads {
    pub io: usize,
    pub extract: usize,
}

impl Threads {
    /// The flags' values, or the defaults for `cores` cores: a quarter of
    /// them for I/O, the rest for extraction, at least 1 each.
    pub fn resolve(io: Option<usize>, extract: Option<usize>, cores: usize) -> Threads {
        let io = io.unwrap_or(cores / 4).max(1);
        let extract = extract.unwrap_or(cores.saturating_sub(io)).max(1);
        Threads { io, extract }
    }
}

impl Args {
    /// The thread counts on this machine.
    pub fn threads(&self) -> Threads {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Threads::resolve(self.io_threads, self.extract_threads, cores)
    }

    /// Limits that contradict each other: a request budget below the largest
    /// request would refuse such a request forever.
    pub fn check_limits(&self) -> Result<(), String> {
        if self.max_in_flight_bytes < self.max_request_bytes {
            return Err(format!(
                "--max-in-flight-bytes {} is below --max-request-bytes {}: a request at the limit could never be admitted",
                self.max_in_flight_bytes, self.max_request_bytes
            ));
        }
        Ok(())
    }

    /// Defaults for tests: loopback, ephemeral ports, no metrics listener.
    pub fn for_tests() -> Self {
        let mut args = Args::parse_from(["fex-server", "--listen-addr", "127.0.0.1:0", "--metrics-addr", "off"]);
        args.reload_interval = Duration::ZERO;
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kserves_transformer_flags_are_taken_and_ignored() {
        let args = Args::parse_from([
            "fex-server",
            "--model_name",
            "ranker",
            "--predictor_host",
            "ranker-predictor.recsys",
            "--http_port",
            "8080",
            "--workers",
            "2",
        ]);
        assert_eq!(
            args.kserve.given(),
            ["model_name=ranker", "predictor_host=ranker-predictor.recsys", "http_port=8080", "workers=2"]
        );
    }

    #[test]
    fn durations() {
        let check = |s, want: Result<Duration, ()>| assert_eq!(parse_duration(s).map_err(drop), want, "{s}");
        check("250ms", Ok(Duration::from_millis(250)));
        check("5s", Ok(Duration::from_secs(5)));
        check("2m", Ok(Duration::from_secs(120)));
        check("3", Ok(Duration::from_secs(3)));
        check("5h", Err(()));
        check("-1s", Err(()));
        check("x", Err(()));
    }

    #[test]
    fn thread_defaults_leave_the_io_threads_their_cores() {
        let t = |io, extract, cores| Threads::resolve(io, extract, cores);
        assert_eq!(t(None, None, 1), Threads { io: 1, extract: 1 });
        assert_eq!(t(None, None, 2), Threads { io: 1, extract: 1 });
        assert_eq!(t(None, None, 8), Threads { io: 2, extract: 6 });
        assert_eq!(t(Some(3), None, 8), Threads { io: 3, extract: 5 });
        assert_eq!(t(Some(4), None, 2), Threads { io: 4, extract: 1 });
        assert_eq!(t(None, Some(7), 2), Threads { io: 1, extract: 7 });
    }

    #[test]
    fn bounded_numbers() {
        assert!(parse_positive("0").is_err());
        assert_eq!(parse_positive("3"), Ok(3));
        assert!(parse_window("65534").is_err());
        assert!(parse_window("2147483648").is_err());
        assert!(parse_frame_size("16383").is_err());
        assert!(parse_frame_size("16777216").is_err());
        assert_eq!(parse_frame_size("65536"), Ok(65536));
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("0.25"), Ok(0.25));
        assert_eq!(parse_rate("1"), Ok(1.0));
        assert!(parse_rate("1.5").is_err());
        assert!(parse_rate("-0.1").is_err());
        assert!(parse_rate("NaN").is_err());
        assert!(parse_positive_u64("0").is_err());
    }

    #[test]
    fn kafka_brokers_and_topics() {
        assert_eq!(parse_brokers("127.0.0.1:9092,kafka-1.kafka:9093"), Ok("127.0.0.1:9092,kafka-1.kafka:9093".into()));
        for bad in ["", "kafka", ":9092", "kafka:port", "a:1,", "a:70000"] {
            assert!(parse_brokers(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_topic("fex.requests_v1-2"), Ok("fex.requests_v1-2".into()));
        for bad in ["", ".", "..", "a b", "a/b", &"t".repeat(250)] {
            assert!(parse_topic(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metrics_off() {
        assert_eq!(parse_optional_addr("off"), Ok(OptionalAddr(None)));
        assert!(parse_optional_addr("nope").is_err());
    }
}
