//! fex-server binary: flags → tracing → models → serve → drain on SIGTERM or
//! SIGINT → exit. Exit code 64 means a bad configuration (a model config, a
//! TLS file, the --request-log directory or a --request-log-kafka topic the
//! brokers do not have); 69, that no --request-log-kafka broker answered.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use fex_server::args::{Args, LogFormat};
use fex_server::registry::{LoadError, Registry};
use fex_server::request_log::RequestLogError;
use fex_server::serve;
use fex_server::tls::TlsError;
use tokio::signal::unix::{SignalKind, signal};

const EXIT_CONFIG: u8 = 64;

/// Response buffers are allocated on an extraction thread and freed on an I/O
/// thread once sent; mimalloc frees across threads without glibc's arena
/// locks and consolidation (benches/README.md, "Tuning").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Touches the heap the first calls would otherwise fault in
/// (`--prefault-heap-bytes`), unless freed memory is purged.
fn prefault_heap(bytes: usize, purge_delay: std::ffi::c_long) {
    if bytes == 0 {
        return;
    }
    if purge_delay >= 0 {
        tracing::warn!(purge_delay, "not prefaulting the heap: MIMALLOC_PURGE_DELAY is set, so freed memory is purged");
        return;
    }
    let (touched, took) = fex_server::allocator::prefault(bytes);
    let took_ms = took.as_millis() as u64;
    if touched < bytes {
        tracing::warn!(
            bytes,
            touched,
            took_ms,
            "the allocator refused part of --prefault-heap-bytes; serving with less"
        );
    } else {
        tracing::info!(bytes, took_ms, "heap prefaulted (--prefault-heap-bytes)");
    }
}

fn main() -> ExitCode {
    let purge_delay = fex_server::allocator::keep_freed_memory();
    let args = Args::parse();
    if let Err(conflict) = args.check_limits() {
        use clap::CommandFactory;
        Args::command().error(clap::error::ErrorKind::ArgumentConflict, conflict).exit();
    }
    init_tracing(&args);
    tracing::debug!(purge_delay, "mimalloc purge delay (-1: freed memory is kept)");
    let kserve = args.kserve.given();
    if !kserve.is_empty() {
        tracing::info!(flags = %kserve.join(" "), "ignoring the flags KServe passes a transformer");
    }
    if args.check_config {
        return check_config(&args);
    }
    let registry = match serve::load_registry(&args) {
        Ok(r) => r,
        Err(errors) => return config_errors(&errors),
    };
    prefault_heap(args.prefault_heap_bytes, purge_delay);
    // The runtime serves I/O only; extraction runs on the pool's own threads.
    let io_threads = args.threads().io;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(io_threads)
        .enable_all()
        .build()
        .expect("tokio runtime");
    match runtime.block_on(run(args, Arc::new(registry))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if e.is::<TlsError>() => {
            eprintln!("{e}");
            ExitCode::from(EXIT_CONFIG)
        }
        Err(e) if e.is::<RequestLogError>() => {
            eprintln!("{e}");
            ExitCode::from(e.downcast_ref::<RequestLogError>().map_or(EXIT_CONFIG, RequestLogError::exit_code))
        }
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "fex-server failed");
            ExitCode::FAILURE
        }
    }
}

/// `--check-config`: every valid model on stdout (`NAME: ok (...)`, which
/// scripts split at the first colon), every error on stderr; exits 0 when
/// all are valid, 64 otherwise. A model whose upstream mapping does not fit
/// the upstream's model is not valid: its problems go to stderr, and no ok
/// line to stdout.
/// The library judges the files (`fex::catalog`), as `fex check` does.
fn check_config(args: &Args) -> ExitCode {
    let Some(path) = &args.models else {
        println!("{}", fex::catalog::ok_line(&fex::Plan::default_model(), None));
        return ExitCode::SUCCESS;
    };
    let (loaded, errors) = fex::catalog::load(path);
    let mut mismatched = false;
    for model in &loaded {
        let upstream = model.plan.upstream.as_ref().map(|up| check_upstream(&model.plan.name, up));
        if let Some(Err(problems)) = &upstream {
            problems.iter().for_each(|p| eprintln!("{p}"));
            mismatched = true;
            continue;
        }
        println!("{}", fex::catalog::ok_line(&model.plan, Some(&model.path)));
        if let Some(Ok(said)) = upstream {
            println!("{said}");
        }
    }
    match (errors.is_empty(), mismatched) {
        (true, false) => ExitCode::SUCCESS,
        (true, true) => ExitCode::from(EXIT_CONFIG),
        (false, _) => config_errors(&errors),
    }
}

/// Asks a model's upstream for its metadata (within 3 s) and checks the
/// mapping against it: what to say of it on stdout, or the problems. An
/// upstream that cannot be asked is reported, not failed (a deploy may
/// check configs before the model server is up).
fn check_upstream(name: &str, up: &fex::config::Upstream) -> Result<String, Vec<String>> {
    use fex_server::upstream::{Checked, check};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime");
    let at = format!("{name}: upstream {} model {:?}", up.address, up.model);
    // A TLS file that cannot be read is the config's fault, not the network's.
    if let Err(e) = fex_server::upstream::endpoint(up) {
        return Err(vec![format!("{name}: {e}")]);
    }
    match runtime.block_on(check(up, std::time::Duration::from_secs(3))) {
        Checked::Matches => Ok(format!("{at}: the mapping matches the model's metadata")),
        Checked::Unreachable(why) => Ok(format!("{at}: not reachable, the mapping is not checked against it ({why})")),
        Checked::Mismatch(problems) => Err(problems.iter().map(|p| format!("{at}: {p}")).collect()),
    }
}

fn config_errors(errors: &[LoadError]) -> ExitCode {
    for e in errors {
        eprintln!("{e}");
    }
    ExitCode::from(EXIT_CONFIG)
}

async fn run(args: Args, registry: Arc<Registry>) -> anyhow::Result<()> {
    // Handlers first: a signal that arrives once the port is open must find
    // them (SIGHUP's default action ends the process).
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut server = serve::start(&args, registry).await?;
    server.spawn_reloader(args.reload_interval);
    loop {
        tokio::select! {
            _ = hup.recv() => { server.reload().await; }
            _ = term.recv() => break,
            _ = int.recv() => break,
            stopped = server.stopped() => return stopped,
        }
    }
    tracing::info!(drain_timeout = ?args.drain_timeout, "shutting down: draining in-flight calls");
    server.shutdown();
    let request_log = server.request_log.clone();
    server.wait().await?;
    // Every record queued by an answered call reaches its file, and its
    // Kafka message is acknowledged or, after a bounded wait, dropped.
    if let Some(log) = request_log {
        tokio::task::spawn_blocking(move || log.sync()).await?;
    }
    tracing::info!("fex-server stopped");
    Ok(())
}

/// Logs go to stderr; text logs are coloured only when stderr is a terminal,
/// so a file or a log collector gets plain text.
fn init_tracing(args: &Args) {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log).unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}
