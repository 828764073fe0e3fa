//! fex-client: `bench` (load test), `gen` (write framed requests), `extract`
//! (one call, tensors printed), `health` and `models`.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use bytes::Bytes;
use clap::{Args, Parser, Subcommand, ValueEnum};
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use fex_client::bench::{self, BenchConfig, Mode, Stop};
use fex_client::calls::Protocol;
use fex_client::errors::explain_first_call;
use fex_client::relay::Relay;
use fex_client::synth::{GenOptions, Generator};
use fex_client::{ConnectOptions, FexClient, frames, v2, views};

#[derive(Parser)]
#[command(name = "fex-client", version, about = "Client and load generator for fex-server")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Load-test a server: closed loop (--concurrency) or open loop (--rate).
    Bench(BenchArgs),
    /// Write synthetic requests for a model config to a framed file.
    Gen(GenArgs),
    /// Send one request from a file and print the tensors.
    Extract(ExtractArgs),
    /// Ask the server's grpc.health.v1 service.
    Health(HealthArgs),
    /// List the server's models (or describe one).
    Models(ModelsArgs),
}

#[derive(Args, Clone)]
struct Conn {
    /// Server address: host:port, or an http:// / https:// URI.
    #[arg(long, env = "FEX_ADDR", default_value = "127.0.0.1:50051")]
    addr: String,
    /// PEM CA that signed the server certificate (turns TLS on).
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// Server name to verify (default: the host of --addr).
    #[arg(long)]
    tls_domain: Option<String>,
    /// Client certificate (PEM) for mutual TLS.
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Client key (PEM) for mutual TLS.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

impl Conn {
    fn options(&self) -> ConnectOptions {
        ConnectOptions {
            address: self.addr.clone(),
            tls_ca: self.tls_ca.clone(),
            tls_domain: self.tls_domain.clone(),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            connect_timeout: Some(Duration::from_secs(5)),
        }
    }
}

#[derive(Args, Clone)]
struct Speak {
    /// v1: fex.v1 Extract. v2: Open Inference Protocol ModelInfer to fex-server.
    /// relay: fex.v1 Extract, then the tensors re-encoded as the upstream: section
    /// of --model-config maps them and sent as one ModelInfer to the model server
    /// (one request's latency spans both calls).
    #[arg(long, value_enum, default_value_t = ProtocolName::V1)]
    protocol: ProtocolName,
    /// relay: the model server, host:port (plaintext) or https://host:port (verified
    /// as the config's upstream.tls says); default: the config's upstream.address.
    #[arg(long)]
    upstream_addr: Option<String>,
}

#[derive(Clone, Copy, PartialEq, ValueEnum)]
enum ProtocolName {
    V1,
    V2,
    Relay,
}

impl Speak {
    /// The protocol; a relay reads the `upstream:` section of `model_config`.
    fn protocol(&self, model_config: Option<&std::path::Path>) -> anyhow::Result<Protocol> {
        anyhow::ensure!(
            self.upstream_addr.is_none() || self.protocol == ProtocolName::Relay,
            "--upstream-addr is for --protocol relay"
        );
        Ok(match self.protocol {
            ProtocolName::V1 => Protocol::V1,
            ProtocolName::V2 => Protocol::V2,
            ProtocolName::Relay => {
                let Some(path) = model_config else {
                    anyhow::bail!("--protocol relay needs --model-config, a model config with an upstream: section")
                };
                Protocol::Relay(std::sync::Arc::new(Relay::from_config(path, self.upstream_addr.as_deref())?))
            }
        })
    }
}

#[derive(Args, Clone)]
struct Synth {
    /// Model config the synthetic requests are made for (default: the embedded default model);
    /// with --protocol relay, its upstream: section says where and how the tensors go.
    #[arg(long)]
    model_config: Option<PathBuf>,
    /// Candidates per request.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
    /// Fids per sparse feature, as MIN..MAX.
    #[arg(long, default_value = "1..8", value_parser = parse_range)]
    list_len: (usize, usize),
    /// Zipf exponent of fid popularity.
    #[arg(long, default_value_t = 1.1)]
    zipf: f64,
    /// Distinct fids per slot.
    #[arg(long, default_value_t = 1_000_000)]
    vocab: u64,
    /// Extra lists the model does not read, per request.
    #[arg(long, default_value_t = 0)]
    noise_lists: usize,
    /// Random seed (runs are repeatable).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Give every row of a request the request's LineId req_id and req_time,
    /// as a ranking request's rows have (by default each row draws its own).
    #[arg(long)]
    per_request_identity: bool,
}

impl Synth {
    fn generator(&self) -> anyhow::Result<Generator> {
        let plan = match &self.model_config {
            // File references (vocabularies) resolve against the config's
            // directory, as fex-server and `fex extract` resolve them.
            Some(path) => fex::Plan::from_file(path).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?,
            None => fex::Plan::default_model(),
        };
        let options = GenOptions {
            batch_size: self.batch_size,
            list_len: self.list_len,
            zipf_exponent: self.zipf,
            vocab: self.vocab,
            noise_lists: self.noise_lists,
            seed: self.seed,
            per_request_identity: self.per_request_identity,
        };
        Generator::new(plan, options)
    }
}

#[derive(Args)]
struct BenchArgs {
    #[command(flatten)]
    conn: Conn,
    /// Model to call.
    #[arg(long, default_value = "default")]
    model: String,
    #[command(flatten)]
    speak: Speak,
    /// Closed loop: requests kept in flight.
    #[arg(long, conflicts_with = "rate")]
    concurrency: Option<usize>,
    /// Open loop: requests per second, sent on schedule whatever the server does.
    #[arg(long)]
    rate: Option<f64>,
    /// Measure for this long (after warm-up).
    #[arg(long, value_parser = parse_duration, conflicts_with = "requests")]
    duration: Option<Duration>,
    /// Measure this many requests (after warm-up).
    #[arg(long)]
    requests: Option<u64>,
    /// Sent but not reported.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    warmup: Duration,
    /// HTTP/2 connections to spread requests over.
    #[arg(long, default_value_t = 1)]
    connections: usize,
    /// Per-request deadline.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    timeout: Duration,
    /// Open loop: most requests in flight before scheduled ones are dropped.
    #[arg(long, default_value_t = 10_000)]
    max_in_flight: usize,
    /// Stop (exit 1) when every call has found the server unreachable for this long.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    gone_after: Duration,
    /// Longest pause between calls while the server is unreachable (the pause
    /// doubles from 10ms with each failure in a row).
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    backoff_max: Duration,
    /// Replay these framed files (from `fex-client gen`) round-robin instead of synthesizing.
    #[arg(long = "file")]
    files: Vec<PathBuf>,
    /// Distinct synthetic requests to cycle through.
    #[arg(long, default_value_t = 16)]
    distinct: usize,
    #[command(flatten)]
    synth: Synth,
    /// Report format.
    #[arg(long, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// No progress bar.
    #[arg(long)]
    no_progress: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Args)]
struct GenArgs {
    #[command(flatten)]
    synth: Synth,
    /// Requests to write.
    #[arg(long, default_value_t = 100)]
    count: usize,
    /// Output file (framed: u64 little-endian length, then the ExampleBatch).
    #[arg(long)]
    out: PathBuf,
}

#[derive(Args)]
struct ExtractArgs {
    #[command(flatten)]
    conn: Conn,
    #[arg(long, default_value = "default")]
    model: String,
    #[command(flatten)]
    speak: Speak,
    /// relay: the model config whose upstream: section maps fex's tensors to the model server's inputs.
    #[arg(long)]
    model_config: Option<PathBuf>,
    /// A framed file (from `gen`) or, with --raw, one serialized ExampleBatch.
    #[arg(long)]
    file: PathBuf,
    /// The file is a single serialized ExampleBatch, not framed.
    #[arg(long)]
    raw: bool,
    /// Which record of a framed file to send.
    #[arg(long, default_value_t = 0)]
    record: usize,
    /// Only these outputs (comma-separated); with relay, the model server's outputs.
    #[arg(long, value_delimiter = ',')]
    outputs: Vec<String>,
    /// Values shown per tensor.
    #[arg(long, default_value_t = 8)]
    first: usize,
}

#[derive(Args)]
struct HealthArgs {
    #[command(flatten)]
    conn: Conn,
    /// Service to ask about ("" = the whole server).
    #[arg(long, default_value = "")]
    service: String,
}

#[derive(Args)]
struct ModelsArgs {
    #[command(flatten)]
    conn: Conn,
    /// Print this model's output signature.
    #[arg(long)]
    describe: Option<String>,
}

fn parse_range(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s.split_once("..").ok_or_else(|| format!("{s:?}: expected MIN..MAX"))?;
    let parse = |x: &str| x.trim().parse::<usize>().map_err(|e| format!("{s:?}: {e}"));
    Ok((parse(a)?, parse(b)?))
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let (n, unit) = s.split_at(s.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(s.len()));
    let n: f64 = n.parse().map_err(|_| format!("{s:?}: expected a duration like 500ms, 10s or 2m"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?}")),
    };
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("{s:?}: expected 0 to 24h"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// `println!` for what the command prints: a reader that has gone away
/// (`fex-client extract ... | head`) ends the command quietly, as Unix tools
/// do, instead of panicking on the broken pipe.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        if let Err(e) = writeln!(std::io::stdout().lock(), $($arg)*) {
            if e.kind() == std::io::ErrorKind::BrokenPipe {
                std::process::exit(0);
            }
            return Err(anyhow::Error::from(e).context("writing to standard output"));
        }
    }};
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    match Cli::parse().command {
        Command::Bench(a) => bench_command(a).await,
        Command::Gen(a) => gen_command(a),
        Command::Extract(a) => extract_command(a).await,
        Command::Health(a) => health_command(a).await,
        Command::Models(a) => models_command(a).await,
    }
}

async fn bench_command(a: BenchArgs) -> anyhow::Result<()> {
    let mode = match (a.concurrency, a.rate) {
        (_, Some(rate)) if rate > 0.0 => Mode::Open { rate },
        (_, Some(rate)) => anyhow::bail!("--rate must be positive, found {rate}"),
        (c, None) => Mode::Closed { concurrency: c.unwrap_or(1).max(1) },
    };
    let stop = match (a.duration, a.requests) {
        (_, Some(n)) => Stop::Requests(n),
        (d, None) => Stop::Duration(d.unwrap_or(Duration::from_secs(10))),
    };
    let protocol = a.speak.protocol(a.synth.model_config.as_deref())?;
    let payloads = payloads(&a)?;
    let max_run_time = match stop {
        Stop::Duration(d) => a.warmup + d + a.timeout + Duration::from_secs(5),
        Stop::Requests(_) => Duration::from_secs(3600),
    };
    let config = BenchConfig {
        connect: a.conn.options(),
        model: a.model,
        protocol,
        mode,
        stop,
        warmup: a.warmup,
        connections: a.connections,
        timeout: a.timeout,
        payloads,
        max_in_flight: a.max_in_flight,
        max_run_time,
        gone_after: a.gone_after,
        backoff_max: a.backoff_max,
        progress: !a.no_progress,
    };
    let report = bench::run(config).await?;
    match a.output {
        Output::Text => print!("{}", report.to_text()),
        Output::Json => out!("{}", serde_json::to_string_pretty(&report)?),
    }
    if let Some(why) = report.server_gone {
        anyhow::bail!("the run stopped early: {why}");
    }
    Ok(())
}

fn payloads(a: &BenchArgs) -> anyhow::Result<Vec<Bytes>> {
    if a.files.is_empty() {
        let mut generator = a.synth.generator()?;
        return Ok((0..a.distinct.max(1)).map(|_| Bytes::from(generator.next_bytes())).collect());
    }
    let mut all = Vec::new();
    for f in &a.files {
        all.extend(frames::read_file(f)?);
    }
    anyhow::ensure!(!all.is_empty(), "the --file inputs hold no records");
    Ok(all)
}

fn gen_command(a: GenArgs) -> anyhow::Result<()> {
    let mut generator = a.synth.generator()?;
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(&a.out).with_context(|| format!("creating {}", a.out.display()))?,
    );
    let mut bytes = 0;
    for _ in 0..a.count {
        let record = generator.next_bytes();
        bytes += record.len();
        frames::write_record(&mut out, &record)?;
    }
    std::io::Write::flush(&mut out)?;
    eprintln!("wrote {} requests ({bytes} bytes of ExampleBatch) to {}", a.count, a.out.display());
    Ok(())
}

async fn extract_command(a: ExtractArgs) -> anyhow::Result<()> {
    let payload = if a.raw {
        Bytes::from(std::fs::read(&a.file).with_context(|| format!("reading {}", a.file.display()))?)
    } else {
        let records = frames::read_file(&a.file)?;
        let count = records.len();
        records.into_iter().nth(a.record).ok_or_else(|| {
            anyhow::anyhow!("{} holds {count} records; --record {} does not exist", a.file.display(), a.record)
        })?
    };
    let options = a.conn.options();
    let mut client = FexClient::connect(&options).await?;
    let protocol = a.speak.protocol(a.model_config.as_deref())?;
    let mut request = match &protocol {
        Protocol::V1 => fex_client::client::request(&a.model, Payload::ExampleBatch(payload)),
        Protocol::V2 => {
            let request = v2::infer_request(&a.model, &fex::oip::Samples::Batch(payload), &a.outputs);
            return infer(options, request, a.first).await;
        }
        Protocol::Relay(relay) => relay.extract_request(&a.model, Payload::ExampleBatch(payload)),
    };
    if let Protocol::Relay(relay) = &protocol {
        let extraction = match client.extract(request).await {
            Ok(extraction) => extraction,
            Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
        };
        let request = relay.reencode(extraction.response, &a.outputs)?;
        let upstream = relay.connect.clone();
        let at = format!("the model server at {}", upstream.address);
        return infer(upstream, request, a.first).await.context(at);
    }
    request.outputs = a.outputs;
    let extraction = match client.extract(request).await {
        Ok(extraction) => extraction,
        Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
    };
    let r = &extraction.response;
    out!("model {} version {} · batch_size {} · {} tensors", r.model, r.model_version, r.batch_size, r.tensors.len());
    for t in &r.tensors {
        out!("{}", views::describe(t, a.first));
    }
    Ok(())
}

/// One ModelInfer to the server at `options`; its outputs printed.
async fn infer(
    options: ConnectOptions,
    request: fex::proto::inference::ModelInferRequest,
    first: usize,
) -> anyhow::Result<()> {
    let channel = fex_client::client::connect(&options).await?;
    let mut client = GrpcInferenceServiceClient::new(channel).max_decoding_message_size(usize::MAX);
    let response = match client.model_infer(request).await {
        Ok(response) => response.into_inner(),
        Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
    };
    out!("{}", v2::describe_response(&response, first));
    Ok(())
}

async fn health_command(a: HealthArgs) -> anyhow::Result<()> {
    let options = a.conn.options();
    let mut client = FexClient::connect(&options).await?;
    let status = match client.health(&a.service).await {
        Ok(status) => status,
        Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
    };
    out!("{status}");
    anyhow::ensure!(status == "SERVING", "not serving");
    Ok(())
}

async fn models_command(a: ModelsArgs) -> anyhow::Result<()> {
    let options = a.conn.options();
    let mut client = FexClient::connect(&options).await?;
    if let Some(model) = a.describe {
        let d = match client.describe(&model).await {
            Ok(d) => d,
            Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
        };
        out!("model {} version {} compat {}", d.model, d.version, d.compat);
        for o in d.outputs {
            let layout = fex::Layout::try_from(o.layout).map_or("?", |l| l.as_str_name());
            let dtype = fex::DataType::try_from(o.dtype).map_or("?", |d| d.as_str_name());
            out!(
                "  {:<24} {:<14} {:<16} {:?}{}",
                o.name,
                layout,
                dtype,
                o.shape,
                if o.shared_once { " shared once" } else { "" }
            );
        }
        return Ok(());
    }
    let models = match client.list_models().await {
        Ok(models) => models,
        Err(status) => anyhow::bail!("{}", explain_first_call(&status, &options).await),
    };
    for m in models {
        out!("{}\tversion {}\t{} outputs", m.name, m.version, m.outputs);
    }
    Ok(())
}
