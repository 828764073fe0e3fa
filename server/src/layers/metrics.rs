//! Request metrics as a layer: every `fex.v1` call is counted once, by method,
//! model and final gRPC status, and its latency observed, whichever part of
//! the stack answered it (the deadline, the admission limit, tonic's size
//! limit or the service itself).
//!
//! The model name lives in the request body, which only the service decodes.
//! The layer puts a [`CallModel`] slot in the request's extensions; the service
//! fills it once the name is found in the registry. Calls answered before that
//! (shed, oversize, unknown model) are labelled `model="-"`, so a client sending
//! arbitrary names cannot grow the label set.
//!
//! The status of a successful unary call travels in the trailers, after the
//! body, so the response body is wrapped and the call is recorded when the
//! trailers pass (or when the body is dropped unfinished: `Cancelled`).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};
use std::time::Instant;

use http_body::{Frame, SizeHint};
use tonic::body::Body;
use tower::{Layer, Service};

use crate::metrics::{CallLabels, Metrics};

/// Label for calls whose model was not (or not yet) found.
pub const NO_MODEL: &str = "-";

/// Where the service records the model a call resolved to.
#[derive(Clone, Default)]
pub struct CallModel(Arc<OnceLock<String>>);

impl CallModel {
    /// Records the model; call only with a name the registry knows.
    pub fn set(&self, model: &str) {
        let _ = self.0.set(model.to_string());
    }

    fn label(&self) -> String {
        self.0.get().map_or(NO_MODEL, String::as_str).to_string()
    }
}

#[derive(Clone)]
pub struct MetricsLayer {
    metrics: Arc<Metrics>,
}

impl MetricsLayer {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        Self { metrics }
    }
}

impl<S> Layer<S> for MetricsLayer {
    type Service = RecordMetrics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RecordMetrics { inner, metrics: Arc::clone(&self.metrics) }
    }
}

#[derive(Clone)]
pub struct RecordMetrics<S> {
    inner: S,
    metrics: Arc<Metrics>,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<http::Request<B>> for RecordMetrics<S>
where
    S: Service<http::Request<B>, Response = http::Response<Body>> + Send + 'static,
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
        let model = CallModel::default();
        request.extensions_mut().insert(model.clone());
        let mut record = Record {
            metrics: Arc::clone(&self.metrics),
            method: method_of(request.uri().path()),
            model,
            started: Instant::now(),
            done: false,
        };
        let call = self.inner.call(request);
        Box::pin(async move {
            let response = call.await?;
            record.latency();
            // A trailers-only answer (every error) carries its status here.
            if let Some(code) = response.headers().get("grpc-status") {
                record.finish(code.as_bytes());
                return Ok(response);
            }
            Ok(response.map(|body| Body::new(Recorded { body, record })))
        })
    }
}

/// The method name, from a fixed list so the label set stays bounded.
fn method_of(path: &str) -> &'static str {
    match path.rsplit('/').next() {
        Some("Extract") => "Extract",
        Some("ListModels") => "ListModels",
        Some("DescribeModel") => "DescribeModel",
        _ => "other",
    }
}

/// One call's pending record; recorded exactly once.
struct Record {
    metrics: Arc<Metrics>,
    method: &'static str,
    model: CallModel,
    started: Instant,
    done: bool,
}

impl Record {
    fn latency(&self) {
        let label = Metrics::model(&self.model.label());
        self.metrics.latency.get_or_create(&label).observe(self.started.elapsed().as_secs_f64());
    }

    fn finish(&mut self, grpc_status: &[u8]) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        let code = tonic::Code::from_bytes(grpc_status);
        let labels = CallLabels { method: self.method.into(), model: self.model.label(), code: format!("{code:?}") };
        self.metrics.requests.get_or_create(&labels).inc();
    }
}

impl Drop for Record {
    /// A call dropped before its status was known: the client went away, or
    /// the body ended without trailers.
    fn drop(&mut self) {
        if !self.done {
            self.finish(b"1");
        }
    }
}

/// The response body, passed through; the trailers' grpc-status is recorded.
struct Recorded {
    body: Body,
    record: Record,
}

impl http_body::Body for Recorded {
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = Pin::new(&mut self.body).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &frame
            && let Some(code) = frame.trailers_ref().and_then(|t| t.get("grpc-status"))
        {
            self.record.finish(code.as_bytes());
        }
        frame
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    use tower_test::mock;

    fn extract() -> http::Request<()> {
        http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract").body(()).unwrap()
    }

    #[tokio::test]
    async fn counts_trailers_only_errors_and_trailer_statuses() {
        let metrics = Metrics::new();
        let (service, mut handle) = mock::pair::<http::Request<()>, http::Response<Body>>();
        let mut svc = MetricsLayer::new(Arc::clone(&metrics)).layer(service);
        handle.allow(3);

        // An error answered before the model was known.
        let call = svc.ready().await.unwrap().call(extract());
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(tonic::Status::resource_exhausted("full").into_http());
        call.await.unwrap();

        // A success whose status arrives in the trailers, for a known model.
        let call = svc.ready().await.unwrap().call(extract());
        let (request, send) = handle.next_request().await.unwrap();
        request.extensions().get::<CallModel>().unwrap().set("default");
        let mut trailers = http::HeaderMap::new();
        trailers.insert("grpc-status", "0".parse().unwrap());
        let body = http_body_util::StreamBody::new(futures_util::stream::iter([
            Ok::<_, tonic::Status>(Frame::data(bytes::Bytes::from_static(b"tensors"))),
            Ok(Frame::trailers(trailers)),
        ]));
        send.send_response(http::Response::new(Body::new(body)));
        let response = call.await.unwrap();
        let page = metrics.render();
        assert!(!page.contains(r#"code="Ok""#), "recorded before the trailers: {page}");
        response.into_body().collect().await.unwrap();

        // A success whose body the client abandons.
        let call = svc.ready().await.unwrap().call(extract());
        let (_, send) = handle.next_request().await.unwrap();
        send.send_response(http::Response::new(Body::empty()));
        drop(call.await.unwrap());

        let page = metrics.render();
        for line in [
            r#"fex_requests_total{method="Extract",model="-",code="ResourceExhausted"} 1"#,
            r#"fex_requests_total{method="Extract",model="default",code="Ok"} 1"#,
            r#"fex_requests_total{method="Extract",model="-",code="Cancelled"} 1"#,
            r#"fex_request_duration_seconds_count{model="default"} 1"#,
            r#"fex_request_duration_seconds_count{model="-"} 2"#,
        ] {
            assert!(page.contains(line), "missing {line}: {page}");
        }
    }

    #[tokio::test]
    async fn health_checks_are_not_counted() {
        let metrics = Metrics::new();
        let (service, mut handle) = mock::pair::<http::Request<()>, http::Response<Body>>();
        let mut svc = MetricsLayer::new(Arc::clone(&metrics)).layer(service);
        handle.allow(1);
        let health = http::Request::builder().uri("/grpc.health.v1.Health/Check").body(()).unwrap();
        let call = svc.ready().await.unwrap().call(health);
        let (request, send) = handle.next_request().await.unwrap();
        assert!(request.extensions().get::<CallModel>().is_none());
        send.send_response(tonic::Status::ok("").into_http());
        call.await.unwrap();
        assert!(!metrics.render().contains("fex_requests_total{"));
    }

    #[test]
    fn method_labels_are_bounded() {
        assert_eq!(method_of("/fex.v1.FeatureExtractor/Extract"), "Extract");
        assert_eq!(method_of("/fex.v1.FeatureExtractor/DescribeModel"), "DescribeModel");
        assert_eq!(method_of("/fex.v1.FeatureExtractor/Anything"), "other");
    }
}
