//! Global concurrency limit with load shedding: a call that finds every permit
//! taken is refused at once with RESOURCE_EXHAUSTED. There is no queue, so an
//! overloaded server answers fast. Request memory is bounded in bytes, by the
//! framing layer's `--max-in-flight-bytes`, not by this count.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::sync::Semaphore;
use tower::{Layer, Service};

use crate::metrics::Metrics;
use crate::status::ServeError;

#[derive(Clone)]
pub struct AdmissionLayer {
    permits: Arc<Semaphore>,
    limit: usize,
    metrics: Arc<Metrics>,
}

impl AdmissionLayer {
    /// One layer value is shared by every connection: the limit is global.
    /// `limit` is clamped to what a semaphore can count.
    pub fn new(limit: usize, metrics: Arc<Metrics>) -> Self {
        let limit = limit.min(Semaphore::MAX_PERMITS);
        Self { permits: Arc::new(Semaphore::new(limit)), limit, metrics }
    }
}

impl<S> Layer<S> for AdmissionLayer {
    type Service = Admission<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Admission { inner, layer: self.clone() }
    }
}

#[derive(Clone)]
pub struct Admission<S> {
    inner: S,
    layer: AdmissionLayer,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<http::Request<B>> for Admission<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if !super::governed(request.uri()) {
            return Box::pin(self.inner.call(request));
        }
        let Ok(permit) = Arc::clone(&self.layer.permits).try_acquire_owned() else {
            self.layer.metrics.shed.inc();
            let response = super::status_response(ServeError::Overloaded { limit: self.layer.limit });
            return Box::pin(async move { Ok(response) });
        };
        let admitted = Admitted::new(permit, &self.layer.metrics);
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = call.await;
            drop(admitted);
            response
        })
    }
}

/// A call holding a permit. It counts in `fex_in_flight_requests` from
/// admission until it is answered or cancelled (dropping the guard returns the
/// permit and the count together).
struct Admitted {
    _permit: tokio::sync::OwnedSemaphorePermit,
    metrics: Arc<Metrics>,
}

impl Admitted {
    fn new(permit: tokio::sync::OwnedSemaphorePermit, metrics: &Arc<Metrics>) -> Self {
        metrics.in_flight.inc();
        Self { _permit: permit, metrics: Arc::clone(metrics) }
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        self.metrics.in_flight.dec();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;
    use tower_test::mock;

    fn request() -> http::Request<()> {
        http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract").body(()).unwrap()
    }

    fn grpc_status(r: &http::Response<tonic::body::Body>) -> Option<String> {
        r.headers().get("grpc-status").map(|v| v.to_str().unwrap().to_string())
    }

    #[tokio::test]
    async fn sheds_beyond_the_limit_and_recovers() {
        let (service, mut handle) = mock::pair::<http::Request<()>, http::Response<tonic::body::Body>>();
        let metrics = Metrics::new();
        let mut svc = AdmissionLayer::new(1, Arc::clone(&metrics)).layer(service);
        handle.allow(10);
        let first = svc.ready().await.unwrap().call(request());
        assert_eq!(metrics.in_flight.get(), 1, "admitted calls count in flight");
        // The second call finds the only permit taken: refused without queueing.
        let second = svc.ready().await.unwrap().call(request()).await.unwrap();
        assert_eq!(grpc_status(&second).as_deref(), Some("8"), "RESOURCE_EXHAUSTED");
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(http::Response::new(tonic::body::Body::empty()));
        first.await.unwrap();
        assert_eq!(metrics.in_flight.get(), 0);
        // A call dropped before it is answered returns its permit too.
        drop(svc.ready().await.unwrap().call(request()));
        assert_eq!(metrics.in_flight.get(), 0);
        let _dropped = handle.next_request().await.unwrap();
        // The permit came back.
        let third = svc.ready().await.unwrap().call(request());
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(http::Response::new(tonic::body::Body::empty()));
        assert_eq!(grpc_status(&third.await.unwrap()), None);
    }

    #[tokio::test]
    async fn health_checks_are_never_shed() {
        let (service, mut handle) = mock::pair::<http::Request<()>, http::Response<tonic::body::Body>>();
        let mut svc = AdmissionLayer::new(0, Metrics::new()).layer(service);
        handle.allow(1);
        let health = http::Request::builder().uri("/grpc.health.v1.Health/Check").body(()).unwrap();
        let call = svc.ready().await.unwrap().call(health);
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(http::Response::new(tonic::body::Body::empty()));
        assert_eq!(grpc_status(&call.await.unwrap()), None);
    }
}
