//! Building and running the server: listeners, the tower stack, health,
//! reflection, metrics, reloads, and the drain on shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use fex::proto::fex_v1::FILE_DESCRIPTOR_SET;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::transport::ServerTlsConfig;
use tonic::transport::server::TcpIncoming;
use tonic_health::pb::health_server::HealthServer;
use tonic_health::server::{HealthReporter, HealthService};

use crate::args::Args;
use crate::inference_stub::grpc_inference_service_server::GrpcInferenceServiceServer;
use crate::layers::{AdmissionLayer, DeadlineLayer, FramingLayer, MetricsLayer, RequestBytes};
use crate::metrics::Metrics;
use crate::pool::Pool;
use crate::registry::{LoadError, Registry, ReloadReport};
use crate::reload::Reloader;
use crate::request_log::{LogOptions, RequestLog};
use crate::service::ExtractorService;
use crate::stub::feature_extractor_server::FeatureExtractorServer;
use crate::v2::InferenceService;

/// A running server. Drop does not stop it: call `shutdown` and `wait`.
pub struct Server {
    pub addr: SocketAddr,
    pub metrics_addr: Option<SocketAddr>,
    pub health_addr: Option<SocketAddr>,
    pub registry: Arc<Registry>,
    pub metrics: Arc<Metrics>,
    /// The extraction pool (shared with the service).
    pub pool: Arc<Pool>,
    /// The request log (--request-log), if on.
    pub request_log: Option<Arc<RequestLog>>,
    reloader: Reloader,
    drain: watch::Sender<bool>,
    task: JoinHandle<anyhow::Result<()>>,
}

/// Loads the models `args` names: a directory or one file, or the embedded
/// default. Any file that fails is an error.
pub fn load_registry(args: &Args) -> Result<Registry, Vec<LoadError>> {
    match &args.models {
        Some(path) => Registry::from_path(path),
        None => Ok(Registry::embedded_default()),
    }
}

/// Binds every listener and starts serving; returns once the server is ready.
/// The TLS files are checked first: a bad one is a `TlsError` (which the
/// binary reports as a bad configuration) and nothing is bound.
pub async fn start(args: &Args, registry: Arc<Registry>) -> anyhow::Result<Server> {
    args.check_limits().map_err(anyhow::Error::msg)?;
    let tls = crate::tls::load(args)?;
    let metrics = Metrics::new();
    // Off the runtime's threads: Kafka's brokers are asked for the topic
    // (a bounded wait) before anything binds.
    let request_log = match LogOptions::from_args(args) {
        Some(options) => {
            let metrics = Arc::clone(&metrics);
            Some(tokio::task::spawn_blocking(move || RequestLog::start(options, metrics)).await??)
        }
        None => None,
    };
    let threads = args.threads();
    let pool = Arc::new(
        Pool::new(threads.extract, args.max_queue, Arc::clone(&metrics)).context("starting the extraction pool")?,
    );
    let listener = tokio::net::TcpListener::bind(args.listen_addr)
        .await
        .with_context(|| format!("binding the gRPC listener on {}", args.listen_addr))?;
    let addr = listener.local_addr()?;
    let (drain, drained) = watch::channel(false);
    let metrics_addr = start_metrics(args, &metrics, drained.clone()).await?;
    let health = HealthReporter::new();
    let reloader = Reloader::new(Arc::clone(&registry), Arc::clone(&metrics), health.clone(), drained.clone()).await;
    let health_service = || HealthServer::new(HealthService::from_health_reporter(health.clone()));
    let (health_addr, health_done) = start_health(args, health_service()).await?;
    let service = ExtractorService {
        registry: Arc::clone(&registry),
        metrics: Arc::clone(&metrics),
        pool: Arc::clone(&pool),
        max_response_bytes: args.max_response_bytes,
        request_log: request_log.clone(),
        upstreams: Default::default(),
    };
    let main = tokio::spawn(run(args.clone(), listener, reloader.clone(), service, tls, drained));
    let task = tokio::spawn(async move {
        let result = main.await;
        // Probes keep answering (NOT_SERVING) until the main listener is done.
        let _ = health_done.send(());
        result.context("server task")?
    });
    let (metrics_at, health_at, models) = (shown(metrics_addr), shown(health_addr), registry.names().join(", "));
    let (extract_threads, max_queue) = (pool.threads(), args.max_queue);
    tracing::info!(%addr, metrics = %metrics_at, health = %health_at, %models, extract_threads, max_queue, "fex-server listening");
    Ok(Server { addr, metrics_addr, health_addr, registry, metrics, pool, request_log, reloader, drain, task })
}

/// An optional listener address as logged: the address, or "off".
fn shown(addr: Option<SocketAddr>) -> String {
    addr.map_or_else(|| "off".to_string(), |a| a.to_string())
}

type Health = HealthServer<HealthService>;

/// The plaintext health-only listener, if asked for; stops when `done` fires.
async fn start_health(
    args: &Args,
    service: Health,
) -> anyhow::Result<(Option<SocketAddr>, tokio::sync::oneshot::Sender<()>)> {
    let (done, stopped) = tokio::sync::oneshot::channel::<()>();
    let Some(addr) = args.health_addr.0 else { return Ok((None, done)) };
    let listener =
        tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding the health listener on {addr}"))?;
    let local = listener.local_addr()?;
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tokio::spawn(async move {
        let stop = async move {
            let _ = stopped.await;
        };
        let served =
            tonic::transport::Server::builder().add_service(service).serve_with_incoming_shutdown(incoming, stop).await;
        if let Err(e) = served {
            tracing::error!(error = %e, "health listener failed");
        }
    });
    Ok((Some(local), done))
}

async fn start_metrics(
    args: &Args,
    metrics: &Arc<Metrics>,
    mut drained: watch::Receiver<bool>,
) -> anyhow::Result<Option<SocketAddr>> {
    let Some(addr) = args.metrics_addr.0 else { return Ok(None) };
    let listener =
        crate::metrics::bind(addr).await.with_context(|| format!("binding the metrics listener on {addr}"))?;
    let local = listener.local_addr()?;
    let metrics = Arc::clone(metrics);
    tokio::spawn(async move {
        let stop = async move {
            let _ = drained.wait_for(|d| *d).await;
        };
        if let Err(e) = crate::metrics::serve(listener, metrics, stop).await {
            tracing::error!(error = %e, "metrics endpoint failed");
        }
    });
    Ok(Some(local))
}

async fn run(
    args: Args,
    listener: tokio::net::TcpListener,
    reloader: Reloader,
    extractor: ExtractorService,
    tls: Option<ServerTlsConfig>,
    mut drained: watch::Receiver<bool>,
) -> anyhow::Result<()> {
    let health_service = HealthServer::new(HealthService::from_health_reporter(reloader.health.clone()));
    let metrics = Arc::clone(&reloader.metrics);
    let v2 = GrpcInferenceServiceServer::new(InferenceService { extractor: extractor.clone() })
        .max_decoding_message_size(args.max_request_bytes)
        .max_encoding_message_size(args.max_response_bytes);
    let extractor = FeatureExtractorServer::new(extractor)
        .max_decoding_message_size(args.max_request_bytes)
        .max_encoding_message_size(args.max_response_bytes);
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET);
    let reflection_v1 = reflection.build_v1()?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
        .build_v1alpha()?;
    // The stack, outermost first; each layer governs only fex.v1 calls, so
    // health checks and reflection are never timed out, shed or counted.
    // - metrics: outermost, so every outcome is counted once by method, model
    //   and final status, including answers from the layers below it.
    // - deadline: the client's grpc-timeout or the server default, whichever
    //   is shorter; its clock includes admission. Answers DEADLINE_EXCEEDED.
    // - admission: the global limit of calls in flight; a call that finds no
    //   permit is answered RESOURCE_EXHAUSTED at once, before its body is
    //   read. The extraction pool behind the service admits again: its
    //   threads plus --max-queue, the rest shed.
    // - framing: the gRPC message prefix is read from the body; a message
    //   over --max-request-bytes is refused before it is buffered,
    //   RESOURCE_EXHAUSTED naming found and limit (tonic's decoder limit, set
    //   above to the same value, is the backstop), and a body that is not
    //   exactly one well-framed message is INVALID_ARGUMENT. Then the
    //   message's length is taken from --max-in-flight-bytes until the call
    //   is answered (RESOURCE_EXHAUSTED when it does not fit): the memory
    //   bound for requests. Innermost, so only admitted calls read bodies.
    let stack = tower::ServiceBuilder::new()
        .layer(MetricsLayer::new(Arc::clone(&metrics)))
        .layer(DeadlineLayer::new(args.request_timeout, Arc::clone(&metrics)))
        .layer(AdmissionLayer::new(args.max_concurrency, Arc::clone(&metrics)))
        .layer(
            FramingLayer::new(args.max_request_bytes)
                .with_budget(RequestBytes::new(args.max_in_flight_bytes, Arc::clone(&metrics))),
        )
        .into_inner();
    // HTTP/2 flow control sized for 100 KB to 2 MB messages: a stream window
    // above the largest request lets a client send it without waiting for a
    // WINDOW_UPDATE round trip (benches/README.md has the measurements).
    let mut builder = tonic::transport::Server::builder()
        .initial_stream_window_size(args.http2_stream_window)
        .initial_connection_window_size(args.http2_connection_window)
        .max_frame_size(args.http2_max_frame_size);
    if let Some(tls) = tls {
        builder = builder.tls_config(tls)?;
    }
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    let mut stop_rx = drained.clone();
    let shutdown = async move {
        let _ = stop_rx.wait_for(|d| *d).await;
        reloader.drain().await;
    };
    let serve = builder
        .layer(stack)
        .add_service(health_service)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(extractor)
        .add_service(v2)
        .serve_with_incoming_shutdown(incoming, shutdown);
    let drain_timeout = args.drain_timeout;
    let deadline = async move {
        let _ = drained.wait_for(|d| *d).await;
        tokio::time::sleep(drain_timeout).await;
    };
    tokio::select! {
        result = serve => result.context("serving gRPC")?,
        () = deadline => tracing::warn!(?drain_timeout, "drain deadline passed with calls in flight; exiting"),
    }
    Ok(())
}

impl Server {
    /// Starts the drain: health turns NOT_SERVING, the listener closes, and
    /// in-flight calls get up to the drain timeout to finish.
    pub fn shutdown(&self) {
        let _ = self.drain.send(true);
    }

    /// Waits until the server has stopped.
    pub async fn wait(self) -> anyhow::Result<()> {
        self.task.await.context("server task")?
    }

    /// Resolves only if the server stops without being asked to (a failed
    /// listener), with its error; then `wait` must not be called.
    pub async fn stopped(&mut self) -> anyhow::Result<()> {
        (&mut self.task).await.context("server task")??;
        anyhow::bail!("the gRPC server stopped on its own")
    }

    /// Re-reads the models, logging and counting the outcome; health
    /// follows whether any model is loaded (until the drain starts).
    pub async fn reload(&self) -> ReloadReport {
        self.reloader.reload().await
    }

    /// Reloads every `interval` (if non-zero) until the drain starts.
    pub fn spawn_reloader(&self, interval: Duration) {
        if interval.is_zero() {
            return;
        }
        let reloader = self.reloader.clone();
        let mut drained = self.drain.subscribe();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.tick().await;
            loop {
                tokio::select! {
                    _ = ticks.tick() => { reloader.reload().await; }
                    // The watch guard must not live across the reload's awaits.
                    () = async { let _ = drained.wait_for(|d| *d).await; } => return,
                }
            }
        });
    }
}
