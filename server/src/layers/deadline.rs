//! Per-call deadline: the client's `grpc-timeout` when it is shorter than the
//! server default. A call past its deadline is answered DEADLINE_EXCEEDED (a
//! real gRPC status, not a reset stream that clients would see as INTERNAL).
//! The deadline also travels to the service as a [`CallDeadline`] request
//! extension, so the extraction pool drops a job that is still queued when
//! it passes.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tower::{Layer, Service};

use crate::metrics::Metrics;
use crate::status::ServeError;

/// When a call's deadline falls, and the budget it was given (for messages).
#[derive(Clone, Copy, Debug)]
pub struct CallDeadline {
    pub at: Instant,
    pub budget: Duration,
}

#[derive(Clone)]
pub struct DeadlineLayer {
    default: Duration,
    metrics: Arc<Metrics>,
}

impl DeadlineLayer {
    pub fn new(default: Duration, metrics: Arc<Metrics>) -> Self {
        Self { default, metrics }
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline { inner, layer: self.clone() }
    }
}

#[derive(Clone)]
pub struct Deadline<S> {
    inner: S,
    layer: DeadlineLayer,
}

/// How much earlier than the client's deadline the call is answered: more
/// than the timer's millisecond grain, so tonic's timer on the same deadline
/// (started first, rounded to the same grain) never fires first.
const AHEAD_OF_TONIC: Duration = Duration::from_millis(3);

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<http::Request<B>> for Deadline<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        if !super::governed(request.uri()) {
            return Box::pin(self.inner.call(request));
        }
        let client = request.headers().get("grpc-timeout").and_then(|v| v.to_str().ok()).and_then(parse_grpc_timeout);
        let deadline = client.map_or(self.layer.default, |c| c.min(self.layer.default));
        // tonic's own server wraps every layer in a timer on the same
        // header (transport/server/mod.rs, `GrpcTimeout`), started a moment
        // before this one and answering CANCELLED "Timeout expired". When the
        // client's deadline binds, this timer is set a little earlier so that
        // the answer is always this layer's DEADLINE_EXCEEDED.
        let wait = match client {
            Some(c) if c <= self.layer.default => deadline.saturating_sub(AHEAD_OF_TONIC.min(deadline / 2)),
            _ => deadline,
        };
        request.extensions_mut().insert(CallDeadline { at: Instant::now() + wait, budget: deadline });
        let metrics = Arc::clone(&self.layer.metrics);
        let call = self.inner.call(request);
        Box::pin(async move {
            match tokio::time::timeout(wait, call).await {
                Ok(response) => response,
                Err(_) => {
                    metrics.deadline_exceeded.inc();
                    Ok(super::status_response(ServeError::DeadlineExceeded { deadline }))
                }
            }
        })
    }
}

/// Parses a `grpc-timeout` header value: up to 8 digits and a unit
/// (H, M, S, m, u, n), as the gRPC HTTP/2 protocol defines it.
pub fn parse_grpc_timeout(v: &str) -> Option<Duration> {
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (digits, unit) = v.split_at(v.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n * 3600),
        "M" => Duration::from_secs(n * 60),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;
    use tower_test::mock;

    #[test]
    fn grpc_timeout_values() {
        let check = |v, want: Option<Duration>| assert_eq!(parse_grpc_timeout(v), want, "{v}");
        check("100m", Some(Duration::from_millis(100)));
        check("2S", Some(Duration::from_secs(2)));
        check("1H", Some(Duration::from_secs(3600)));
        check("5u", Some(Duration::from_micros(5)));
        check("7n", Some(Duration::from_nanos(7)));
        check("123456789S", None);
        check("10x", None);
        check("S", None);
    }

    type Mock = mock::Mock<http::Request<()>, http::Response<tonic::body::Body>>;
    type Handle = mock::Handle<http::Request<()>, http::Response<tonic::body::Body>>;

    /// The layer with server default `default` over a service that holds
    /// the one request it takes.
    fn layered(default: Duration) -> (Deadline<Mock>, Handle) {
        let (service, mut handle) = mock::pair();
        handle.allow(1);
        (DeadlineLayer::new(default, Metrics::new()).layer(service), handle)
    }

    /// An Extract call, with the client's `grpc-timeout` when given.
    fn extract(timeout: Option<&str>) -> http::Request<()> {
        let mut request = http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract");
        if let Some(t) = timeout {
            request = request.header("grpc-timeout", t);
        }
        request.body(()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn client_deadline_wins_when_shorter() {
        let (mut svc, mut handle) = layered(Duration::from_secs(10));
        let request = extract(Some("50m"));
        let call = svc.ready().await.unwrap().call(request);
        // Hold the request without answering: the deadline must fire.
        let _pending = handle.next_request().await.unwrap();
        let response = call.await.unwrap();
        assert_eq!(response.headers().get("grpc-status").unwrap(), "4", "DEADLINE_EXCEEDED");
        let message = response.headers().get("grpc-message").unwrap().to_str().unwrap();
        assert!(message.contains("50ms"), "{message}");
    }

    /// tonic's server times the same `grpc-timeout` from a moment earlier
    /// (its `GrpcTimeout` wraps every layer) and answers CANCELLED; on a
    /// loaded machine its timer fired first about once in 40 runs of
    /// tests/pool.rs. The layer's answer must come strictly before the
    /// client's deadline, by more than the timer's millisecond grain.
    #[tokio::test(start_paused = true)]
    async fn a_client_deadline_is_answered_before_tonic_would() {
        let (mut svc, mut handle) = layered(Duration::from_secs(10));
        let request = extract(Some("50m"));
        let started = tokio::time::Instant::now();
        let wall = Instant::now();
        let tonic = tokio::time::sleep(Duration::from_millis(50));
        let call = svc.ready().await.unwrap().call(request);
        let pending = handle.next_request().await.unwrap();
        let at = pending.0.extensions().get::<CallDeadline>().unwrap().at;
        tokio::pin!(tonic);
        tokio::select! {
            biased;
            _ = &mut tonic => panic!("tonic's timer on the same deadline fired first"),
            response = call => {
                assert_eq!(response.unwrap().headers().get("grpc-status").unwrap(), "4");
            }
        }
        let waited = started.elapsed();
        assert!(waited + Duration::from_millis(2) <= Duration::from_millis(50), "answered after {waited:?}");
        // The pool drops a queued job when the layer answers, not later.
        assert!(at < wall + Duration::from_millis(48), "the job's deadline is {:?} away", at - wall);
    }

    #[tokio::test(start_paused = true)]
    async fn the_server_default_is_kept_to_the_full_budget() {
        let (mut svc, mut handle) = layered(Duration::from_millis(40));
        let request = extract(None);
        let started = tokio::time::Instant::now();
        let call = svc.ready().await.unwrap().call(request);
        let _pending = handle.next_request().await.unwrap();
        let response = call.await.unwrap();
        assert_eq!(response.headers().get("grpc-status").unwrap(), "4");
        assert!(started.elapsed() >= Duration::from_millis(40), "answered after {:?}", started.elapsed());
    }
}
