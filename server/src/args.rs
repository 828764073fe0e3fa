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

    /// Requests handled at once across all connections; more are refused at
    /// once with RESOURCE_EXHAUSTED (no queue).
    #[arg(long, env = "FEX_MAX_CONCURRENCY", default_value_t = 64)]
    pub max_concurrency: usize,

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

    /// Log format.
    #[arg(long, env = "FEX_LOG_FORMAT", value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// Log filter (tracing EnvFilter syntax), e.g. "info" or "fex_server=debug".
    #[arg(long, env = "FEX_LOG", default_value = "info")]
    pub log: String,
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

impl Args {
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
    fn metrics_off() {
        assert_eq!(parse_optional_addr("off"), Ok(OptionalAddr(None)));
        assert!(parse_optional_addr("nope").is_err());
    }
}
