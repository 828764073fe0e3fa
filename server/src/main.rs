//! fex-server binary: flags → tracing → models → serve → drain on SIGTERM or
//! SIGINT → exit. Exit code 64 means a bad configuration.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use fex_server::args::{Args, LogFormat};
use fex_server::serve;
use tokio::signal::unix::{SignalKind, signal};

const EXIT_CONFIG: u8 = 64;

fn main() -> ExitCode {
    let args = Args::parse();
    init_tracing(&args);
    let registry = match serve::load_registry(&args) {
        Ok(r) => r,
        Err(errors) => {
            for e in &errors {
                eprintln!("{e}");
            }
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if args.check_config {
        for model in registry.all() {
            println!("{}: ok (version {}, {} outputs)", model.plan.name, model.version, model.plan.outputs.len());
        }
        return ExitCode::SUCCESS;
    }
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match runtime.block_on(run(args, Arc::new(registry))) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "fex-server failed");
            ExitCode::FAILURE
        }
    }
}

async fn run(args: Args, registry: Arc<fex_server::registry::Registry>) -> anyhow::Result<()> {
    let server = serve::start(&args, registry).await?;
    server.spawn_reloader(args.reload_interval);
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    loop {
        tokio::select! {
            _ = hup.recv() => { server.reload(); }
            _ = term.recv() => break,
            _ = int.recv() => break,
        }
    }
    tracing::info!(drain_timeout = ?args.drain_timeout, "shutting down: draining in-flight calls");
    server.shutdown();
    server.wait().await?;
    tracing::info!("fex-server stopped");
    Ok(())
}

fn init_tracing(args: &Args) {
    let filter = tracing_subscriber::EnvFilter::try_new(&args.log).unwrap_or_else(|_| "info".into());
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match args.log_format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}
