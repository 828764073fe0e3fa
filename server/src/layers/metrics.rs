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

use crate::metrics::{CallLabels, MethodModel, Metrics};

/// Label for calls whose model was not (or not yet) found.
pub const NO_MODEL: &str = "-";

/// What the layer learns about a call while it runs.
#[derive(Default)]
struct CallState {
    /// Set by the service once the registry knows the name.
    model: OnceLock<String>,
    /// The first error the request body gave (a client that reset the
    /// stream mid-upload shows as Cancelled here).
    upload_error: OnceLock<tonic::Code>,
}

/// Where the service records the model a call resolved to.
#[derive(Clone, Default)]
pub struct CallModel(Arc<CallState>);

impl CallModel {
    /// Records the model; call only with a name the registry knows.
    pub fn set(&self, model: &str) {
        let _ = self.0.model.set(model.to_string());
    }

    fn label(&self) -> String {
        self.0.model.get().map_or(NO_MODEL, String::as_str).to_string()
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

impl<S> Service<http::Request<Body>> for RecordMetrics<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Send + 'static,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Body>) -> Self::Future {
        if !super::governed(request.uri()) {
            return Box::pin(self.inner.call(request));
        }
        let call = CallModel::default();
        let mut record = Record {
            metrics: Arc::clone(&self.metrics),
            method: method_of(request.uri().path()),
            call: call.clone(),
            started: Instant::now(),
            done: false,
        };
        let (mut parts, body) = request.into_parts();
        parts.extensions.insert(call.clone());
        // The request body's first error is remembered (see `finish`).
        let body = Body::new(Tap {
            body,
            look: move |frame: &Result<Frame<bytes::Bytes>, tonic::Status>| {
                if let Err(status) = frame {
                    let _ = call.0.upload_error.set(status.code());
                }
            },
        });
        let call = self.inner.call(http::Request::from_parts(parts, body));
        Box::pin(async move {
            let response = call.await?;
            record.latency();
            // A trailers-only answer (every error) carries its status here.
            if let Some(code) = response.headers().get("grpc-status") {
                record.finish(tonic::Code::from_bytes(code.as_bytes()));
                return Ok(response);
            }
            // The response's status comes in its trailers; a body dropped
            // before them drops `record`, which counts the call Cancelled.
            let look = move |frame: &Result<Frame<bytes::Bytes>, tonic::Status>| {
                if let Some(code) = frame.as_ref().ok().and_then(Frame::trailers_ref).and_then(|t| t.get("grpc-status"))
                {
                    record.finish(tonic::Code::from_bytes(code.as_bytes()));
                }
            };
            Ok(response.map(|body| Body::new(Tap { body, look })))
        })
    }
}

/// The method name, from a fixed list so the label set stays bounded.
fn method_of(path: &str) -> &'static str {
    match path.rsplit('/').next() {
        Some("Extract") => "Extract",
        Some("ListModels") => "ListModels",
        Some("DescribeModel") => "DescribeModel",
        Some("ModelInfer") => "ModelInfer",
        Some("ModelMetadata") => "ModelMetadata",
        Some("ModelReady") => "ModelReady",
        Some("ServerMetadata") => "ServerMetadata",
        _ => "other",
    }
}

/// The label of a status code: its name, as tonic spells it.
pub fn code_name(code: tonic::Code) -> &'static str {
    use tonic::Code::*;
    match code {
        Ok => "Ok",
        Cancelled => "Cancelled",
        Unknown => "Unknown",
        InvalidArgument => "InvalidArgument",
        DeadlineExceeded => "DeadlineExceeded",
        NotFound => "NotFound",
        AlreadyExists => "AlreadyExists",
        PermissionDenied => "PermissionDenied",
        ResourceExhausted => "ResourceExhausted",
        FailedPrecondition => "FailedPrecondition",
        Aborted => "Aborted",
        OutOfRange => "OutOfRange",
        Unimplemented => "Unimplemented",
        Internal => "Internal",
        Unavailable => "Unavailable",
        DataLoss => "DataLoss",
        Unauthenticated => "Unauthenticated",
    }
}

/// One call's pending record; recorded exactly once.
struct Record {
    metrics: Arc<Metrics>,
    method: &'static str,
    call: CallModel,
    started: Instant,
    done: bool,
}

impl Record {
    fn latency(&self) {
        let labels = MethodModel { method: self.method, model: self.call.label() };
        self.metrics.latency.get_or_create(&labels).observe(self.started.elapsed().as_secs_f64());
    }

    fn finish(&mut self, code: tonic::Code) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        // A client that reset its upload got no answer: whatever the service
        // made of the cut-off body ("missing request message"), the call was
        // cancelled by the client.
        let code = self.call.0.upload_error.get().copied().unwrap_or(code);
        let labels = CallLabels { method: self.method, model: self.call.label(), code: code_name(code) };
        self.metrics.requests.get_or_create(&labels).inc();
    }
}

impl Drop for Record {
    /// A call dropped before its status was known: the client went away, or
    /// the body ended without trailers.
    fn drop(&mut self) {
        if !self.done {
            self.finish(tonic::Code::Cancelled);
        }
    }
}

/// A body passed through unchanged, showing each frame to `look` on the way.
struct Tap<F> {
    body: Body,
    look: F,
}

impl<F> http_body::Body for Tap<F>
where
    F: FnMut(&Result<Frame<bytes::Bytes>, tonic::Status>) + Unpin,
{
    type Data = bytes::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let frame = Pin::new(&mut this.body).poll_frame(cx);
        if let Poll::Ready(Some(frame)) = &frame {
            (this.look)(frame);
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

    fn extract() -> http::Request<Body> {
        http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract").body(Body::empty()).unwrap()
    }

    /// The page has exactly this line (a value of 1 must not match 10).
    fn has_line(page: &str, want: &str) -> bool {
        page.lines().any(|l| l == want)
    }

    #[tokio::test]
    async fn counts_trailers_only_errors_and_trailer_statuses() {
        let metrics = Metrics::new();
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
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
            r#"fex_request_duration_seconds_count{method="Extract",model="default"} 1"#,
            r#"fex_request_duration_seconds_count{method="Extract",model="-"} 2"#,
        ] {
            assert!(has_line(&page, line), "missing {line}: {page}");
        }
    }

    #[tokio::test]
    async fn a_client_reset_mid_upload_counts_as_cancelled() {
        let metrics = Metrics::new();
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = MetricsLayer::new(Arc::clone(&metrics)).layer(service);
        handle.allow(1);
        let upload = http_body_util::StreamBody::new(futures_util::stream::iter([
            Ok::<_, tonic::Status>(Frame::data(bytes::Bytes::from_static(b"\0\0\0\0\x09half"))),
            Err(tonic::Status::cancelled("stream reset by the client")),
        ]));
        let request = http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract").body(Body::new(upload)).unwrap();
        let call = tokio::spawn(svc.ready().await.unwrap().call(request));
        // The service reads the cut-off body and answers as tonic does.
        let (request, send) = handle.next_request().await.unwrap();
        assert!(request.into_body().collect().await.is_err());
        send.send_response(tonic::Status::internal("Missing request message.").into_http());
        call.await.unwrap().unwrap();
        let page = metrics.render();
        let want = r#"fex_requests_total{method="Extract",model="-",code="Cancelled"} 1"#;
        assert!(has_line(&page, want), "missing {want}: {page}");
        assert!(!page.contains(r#"code="Internal""#), "{page}");
    }

    #[tokio::test]
    async fn health_checks_are_not_counted() {
        let metrics = Metrics::new();
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = MetricsLayer::new(Arc::clone(&metrics)).layer(service);
        handle.allow(1);
        let health = http::Request::builder().uri("/grpc.health.v1.Health/Check").body(Body::empty()).unwrap();
        let call = svc.ready().await.unwrap().call(health);
        let (request, send) = handle.next_request().await.unwrap();
        assert!(request.extensions().get::<CallModel>().is_none());
        send.send_response(tonic::Status::ok("").into_http());
        call.await.unwrap();
        assert!(!metrics.render().contains("fex_requests_total{"));
    }

    #[test]
    fn labels_are_bounded() {
        assert_eq!(method_of("/fex.v1.FeatureExtractor/Extract"), "Extract");
        assert_eq!(method_of("/fex.v1.FeatureExtractor/DescribeModel"), "DescribeModel");
        assert_eq!(method_of("/fex.v1.FeatureExtractor/Anything"), "other");
        for code in 0..=16 {
            let code = tonic::Code::from_i32(code);
            assert_eq!(code_name(code), format!("{code:?}"));
        }
    }
}
