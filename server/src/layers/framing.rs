//! The gRPC framing of a unary request, checked before tonic decodes it:
//! the 5-byte message prefix (compressed flag, big-endian length) is read from
//! the start of the body, and the call is answered at once when the prefix
//! alone shows a mistake: no message at all, a body cut inside the prefix, a
//! flag other than 0 or 1, the compressed flag without a `grpc-encoding`, or a
//! message longer than the limit (RESOURCE_EXHAUSTED naming the size found and
//! the limit, the status gRPC's own implementations give for an oversized
//! message, before any of it is buffered). Otherwise the body goes on with its
//! peeked frames, and ends in an INVALID_ARGUMENT error if the message turns
//! out truncated or a second message follows (tonic would answer INTERNAL, or
//! silently drop the extra message). A compressed message with a named
//! encoding goes on to tonic, which answers UNIMPLEMENTED for an encoding it
//! does not accept.
//!
//! It sits inside admission, so only admitted calls read body bytes. With a
//! budget (`--max-in-flight-bytes`), the message's announced length is taken
//! from it before the message is read and given back once the call is
//! answered: a message that does not fit is refused at once with
//! RESOURCE_EXHAUSTED, so the requests held at once stay within the budget
//! whatever their sizes. The budget is held by the call and by its
//! extraction job (a `HeldRequest` extension), since a job can wait in the
//! queue with its payload after its call timed out. Before the check a call
//! holds only the frames that carried its 5-byte prefix, and is checked as
//! soon as the last of them arrives. tonic's decoder limit is set to `limit`
//! as a backstop.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::metrics::Metrics;
use crate::status::ServeError;

/// Length of the gRPC message prefix: 1 flag byte and a u32 length.
const PREFIX: usize = 5;

#[derive(Clone)]
pub struct FramingLayer {
    limit: usize,
    budget: Option<RequestBytes>,
}

impl FramingLayer {
    /// `limit`: the largest request message accepted, in bytes.
    pub fn new(limit: usize) -> Self {
        Self { limit, budget: None }
    }

    /// Request messages held at once are bounded by `budget` (shared by
    /// every connection).
    pub fn with_budget(self, budget: RequestBytes) -> Self {
        Self { budget: Some(budget), ..self }
    }
}

impl<S> Layer<S> for FramingLayer {
    type Service = Framing<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Framing { inner, limit: self.limit, budget: self.budget.clone() }
    }
}

#[derive(Clone)]
pub struct Framing<S> {
    inner: S,
    limit: usize,
    budget: Option<RequestBytes>,
}

/// The bytes of request messages the server holds at once
/// (`--max-in-flight-bytes`), counted in `fex_in_flight_request_bytes`.
#[derive(Clone)]
pub struct RequestBytes {
    permits: Arc<tokio::sync::Semaphore>,
    limit: usize,
    metrics: Arc<Metrics>,
}

impl RequestBytes {
    /// `limit` is clamped to what a semaphore can count.
    pub fn new(limit: usize, metrics: Arc<Metrics>) -> Self {
        let limit = limit.min(tokio::sync::Semaphore::MAX_PERMITS);
        Self { permits: Arc::new(tokio::sync::Semaphore::new(limit)), limit, metrics }
    }

    /// Takes `len` bytes from the budget, or refuses the message at once.
    fn hold(&self, len: usize) -> Result<HeldRequest, ServeError> {
        let refused = || ServeError::RequestBytesInFlight { found: len, limit: self.limit };
        // A gRPC message length is a u32.
        let n = u32::try_from(len).map_err(|_| refused())?;
        let permit = Arc::clone(&self.permits).try_acquire_many_owned(n).map_err(|_| refused())?;
        self.metrics.in_flight_request_bytes.inc_by(len as i64);
        let bytes = HeldBytes { _permit: permit, len, metrics: Arc::clone(&self.metrics) };
        Ok(HeldRequest { _bytes: Arc::new(bytes) })
    }
}

/// A request's bytes taken from the budget (a request extension): the
/// framing layer holds one clone until the call is answered or dropped, and
/// the call's extraction job another until it has run or is dropped unrun,
/// since a job can outlive a call that timed out or was cancelled in the
/// queue, and it holds the request's payload until then.
#[derive(Clone)]
pub struct HeldRequest {
    _bytes: Arc<HeldBytes>,
}

/// The bytes behind a `HeldRequest`, returned to the budget when the last
/// clone goes.
struct HeldBytes {
    _permit: tokio::sync::OwnedSemaphorePermit,
    len: usize,
    metrics: Arc<Metrics>,
}

impl Drop for HeldBytes {
    fn drop(&mut self) {
        self.metrics.in_flight_request_bytes.dec_by(self.len as i64);
    }
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> Service<http::Request<Body>> for Framing<S>
where
    S: Service<http::Request<Body>, Response = http::Response<Body>> + Clone + Send + 'static,
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
        // The service that poll_ready readied goes into the future.
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        let (limit, budget) = (self.limit, self.budget.clone());
        Box::pin(async move {
            let (mut parts, body) = request.into_parts();
            let encoded = parts.headers.get("grpc-encoding").is_some_and(|e| e != "identity");
            let peeked = Peeked::read(body).await;
            if let Err(error) = peeked.check(encoded, limit) {
                tracing::debug!(error = %error, "request refused from its gRPC framing");
                return Ok(super::status_response(error));
            }
            let held = match (&budget, peeked.message_len()) {
                (Some(budget), Some(len)) => match budget.hold(len) {
                    Ok(held) => Some(held),
                    Err(error) => {
                        budget.metrics.shed.inc();
                        return Ok(super::status_response(error));
                    }
                },
                _ => None,
            };
            if let Some(held) = &held {
                parts.extensions.insert(held.clone());
            }
            let response = inner.call(http::Request::from_parts(parts, Body::new(peeked))).await;
            drop(held);
            response
        })
    }
}

/// A request body whose first frames were read to find the message prefix;
/// it yields them again, then the rest of the body, counting the bytes
/// against the one message the prefix announced.
struct Peeked {
    frames: VecDeque<Result<Frame<Bytes>, tonic::Status>>,
    prefix: [u8; PREFIX],
    prefix_len: usize,
    /// Whether the body ended (cleanly) while the prefix was read.
    ended: bool,
    rest: Option<Body>,
    /// Data bytes yielded so far.
    seen: usize,
    /// Set once an error has been yielded: the body is over.
    failed: bool,
}

impl Peeked {
    /// Reads frames until the prefix is complete, the body ends, or a
    /// trailers frame or an error arrives. Usually that is one frame.
    async fn read(mut body: Body) -> Self {
        let mut peeked = Peeked {
            frames: VecDeque::new(),
            prefix: [0; PREFIX],
            prefix_len: 0,
            ended: false,
            rest: None,
            seen: 0,
            failed: false,
        };
        while peeked.prefix_len < PREFIX {
            let Some(frame) = body.frame().await else {
                peeked.ended = true;
                return peeked;
            };
            let stop = match &frame {
                Ok(frame) => match frame.data_ref() {
                    Some(data) => {
                        let take = (PREFIX - peeked.prefix_len).min(data.len());
                        peeked.prefix[peeked.prefix_len..peeked.prefix_len + take].copy_from_slice(&data[..take]);
                        peeked.prefix_len += take;
                        false
                    }
                    None => true,
                },
                Err(_) => true,
            };
            peeked.frames.push_back(frame);
            if stop {
                return peeked;
            }
        }
        peeked.rest = Some(body);
        peeked
    }

    /// What the prefix alone shows. `encoded`: the call names a
    /// `grpc-encoding` other than identity.
    fn check(&self, encoded: bool, limit: usize) -> Result<(), ServeError> {
        match (self.ended, self.prefix_len) {
            (true, 0) => return Err(ServeError::NoMessage),
            (true, found @ 1..PREFIX) => return Err(ServeError::TruncatedPrefix { found }),
            _ => {}
        }
        let Some(found) = self.message_len() else { return Ok(()) };
        match self.prefix[0] {
            0 => {}
            1 if !encoded => return Err(ServeError::CompressedWithoutEncoding),
            1 => {}
            flag => return Err(ServeError::BadCompressionFlag { found: flag }),
        }
        if found > limit {
            return Err(ServeError::RequestTooLarge { found, limit });
        }
        Ok(())
    }

    /// The first message's length, when its prefix arrived.
    fn message_len(&self) -> Option<usize> {
        let p = &self.prefix;
        (self.prefix_len == PREFIX).then(|| u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize)
    }

    /// The body's length if it holds exactly the announced message.
    fn expected(&self) -> Option<usize> {
        self.message_len().map(|len| PREFIX + len)
    }

    fn fail(&mut self, error: ServeError) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        tracing::debug!(error = %error, "request refused from its gRPC framing");
        self.failed = true;
        Poll::Ready(Some(Err(error.into())))
    }
}

impl http_body::Body for Peeked {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if self.failed {
            return Poll::Ready(None);
        }
        let frame = match self.frames.pop_front() {
            Some(frame) => Some(frame),
            None => match &mut self.rest {
                Some(rest) => ready!(Pin::new(rest).poll_frame(cx)),
                None => None,
            },
        };
        let expected = self.expected();
        match frame {
            Some(Ok(frame)) => {
                self.seen += frame.data_ref().map_or(0, Bytes::len);
                if expected.is_some_and(|e| self.seen > e) {
                    return self.fail(ServeError::ExtraMessage);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(status)) => Poll::Ready(Some(Err(status))),
            None => match expected {
                Some(e) if self.seen < e => {
                    let (found, expected) = (self.seen - PREFIX, e - PREFIX);
                    self.fail(ServeError::TruncatedMessage { found, expected })
                }
                _ => Poll::Ready(None),
            },
        }
    }

    fn is_end_stream(&self) -> bool {
        // A truncated message still has its error to yield.
        let complete = self.expected().is_none_or(|e| self.seen == e);
        self.failed || (self.frames.is_empty() && self.rest.as_ref().is_none_or(|r| r.is_end_stream()) && complete)
    }

    fn size_hint(&self) -> SizeHint {
        let peeked: u64 = self.frames.iter().filter_map(|f| f.as_ref().ok()?.data_ref()).map(|d| d.len() as u64).sum();
        let rest = self.rest.as_ref().map_or(SizeHint::with_exact(0), |r| r.size_hint());
        let mut hint = SizeHint::new();
        hint.set_lower(rest.lower() + peeked);
        if let Some(upper) = rest.upper() {
            hint.set_upper(upper + peeked);
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::ServiceExt;
    use tower_test::mock;

    /// A body delivered in the given chunks.
    fn body(chunks: &[&[u8]]) -> Body {
        let frames: Vec<Result<Frame<Bytes>, tonic::Status>> =
            chunks.iter().map(|c| Ok(Frame::data(Bytes::copy_from_slice(c)))).collect();
        Body::new(http_body_util::StreamBody::new(futures_util::stream::iter(frames)))
    }

    fn extract(body: Body) -> http::Request<Body> {
        http::Request::builder().uri("/fex.v1.FeatureExtractor/Extract").body(body).unwrap()
    }

    fn message(len: u32) -> Vec<u8> {
        let mut m = vec![0];
        m.extend(len.to_be_bytes());
        m.extend(std::iter::repeat_n(7u8, len as usize));
        m
    }

    #[tokio::test]
    async fn refuses_a_message_over_the_limit_naming_both_sizes() {
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = FramingLayer::new(100).layer(service);
        handle.allow(1);
        // The prefix alone decides: the rest of the message never arrives,
        // and the layer must answer without waiting for it.
        let prefix =
            futures_util::stream::iter([Ok::<_, tonic::Status>(Frame::data(Bytes::from_static(&[0, 0, 0, 1, 0])))]);
        let never = futures_util::stream::pending();
        let body = Body::new(http_body_util::StreamBody::new(futures_util::StreamExt::chain(prefix, never)));
        let call = svc.ready().await.unwrap().call(extract(body));
        let response = tokio::time::timeout(std::time::Duration::from_secs(10), call)
            .await
            .expect("refused from the prefix alone")
            .unwrap();
        let status = tonic::Status::from_header_map(response.headers()).unwrap();
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(status.message(), "request message is 256 bytes, over the limit of 100 bytes (--max-request-bytes)");
    }

    #[tokio::test]
    async fn passes_messages_within_the_limit_byte_for_byte() {
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = FramingLayer::new(100).layer(service);
        handle.allow(1);
        let whole = message(100);
        // The prefix split across frames, as a slow client might send it.
        // The layer reads the body before calling the service: run the call.
        let call =
            tokio::spawn(svc.ready().await.unwrap().call(extract(body(&[&whole[..2], &whole[2..40], &whole[40..]]))));
        let (request, send) = handle.next_request().await.unwrap();
        let received = request.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(received.as_ref(), whole.as_slice());
        send.send_response(http::Response::new(Body::empty()));
        call.await.unwrap().unwrap();
    }

    /// The status of a call the layer answers itself.
    async fn refused(
        svc: &mut Framing<mock::Mock<http::Request<Body>, http::Response<Body>>>,
        request: http::Request<Body>,
    ) -> tonic::Status {
        let response = svc.ready().await.unwrap().call(request).await.unwrap();
        tonic::Status::from_header_map(response.headers()).expect("answered by the layer")
    }

    #[tokio::test]
    async fn answers_from_the_prefix_alone() {
        let (service, _handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = FramingLayer::new(100).layer(service);
        let check = |status: tonic::Status, code, message: &str| {
            assert_eq!((status.code(), status.message()), (code, message));
        };
        let invalid = tonic::Code::InvalidArgument;
        check(
            refused(&mut svc, extract(body(&[]))).await,
            invalid,
            "the call carries no request message; a unary call takes exactly one",
        );
        check(
            refused(&mut svc, extract(body(&[&[0, 0]]))).await,
            invalid,
            "request body ended after 2 bytes, inside the 5-byte gRPC message prefix",
        );
        check(
            refused(&mut svc, extract(body(&[&[1, 0, 0, 0, 1, 7]]))).await,
            invalid,
            "request message has the compressed flag set but the call sends no grpc-encoding header",
        );
        check(
            refused(&mut svc, extract(body(&[&[2, 0, 0, 0, 1, 7]]))).await,
            invalid,
            "request message has compression flag 2, allowed 0 (uncompressed) or 1 (compressed)",
        );
    }

    /// What tonic would read from the body the service receives.
    async fn passed_on(chunks: &[&[u8]]) -> Result<Bytes, tonic::Status> {
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let mut svc = FramingLayer::new(100).layer(service);
        handle.allow(1);
        let mut request = extract(body(chunks));
        request.headers_mut().insert("grpc-encoding", "gzip".parse().unwrap());
        let call = tokio::spawn(svc.ready().await.unwrap().call(request));
        let (request, send) = handle.next_request().await.unwrap();
        let read = request.into_body().collect().await.map(|b| b.to_bytes());
        send.send_response(http::Response::new(Body::empty()));
        call.await.unwrap().unwrap();
        read
    }

    /// The budget's bytes come back only once both the call and the request
    /// (which a queued extraction job keeps) are gone, and a message that
    /// does not fit in what is left is refused at once.
    #[tokio::test]
    async fn budgeted_bytes_come_back_when_the_call_and_its_request_are_gone() {
        let (service, mut handle) = mock::pair::<http::Request<Body>, http::Response<Body>>();
        let metrics = Metrics::new();
        let budget = RequestBytes::new(100, Arc::clone(&metrics));
        let mut svc = FramingLayer::new(100).with_budget(budget).layer(service);
        handle.allow(2);
        let call = tokio::spawn(svc.ready().await.unwrap().call(extract(body(&[&message(60)]))));
        let (request, _send) = handle.next_request().await.unwrap();
        assert_eq!(metrics.in_flight_request_bytes.get(), 60);
        let status = refused(&mut svc, extract(body(&[&message(50)]))).await;
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        assert_eq!(metrics.shed.get(), 1);
        call.abort();
        let _ = call.await;
        assert_eq!(metrics.in_flight_request_bytes.get(), 60, "the request still holds its bytes");
        drop(request);
        assert_eq!(metrics.in_flight_request_bytes.get(), 0);
        // Now the 50 bytes fit.
        let call = tokio::spawn(svc.ready().await.unwrap().call(extract(body(&[&message(50)]))));
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(metrics.in_flight_request_bytes.get(), 50);
        send.send_response(http::Response::new(Body::empty()));
        call.await.unwrap().unwrap();
        drop(request);
        assert_eq!(metrics.in_flight_request_bytes.get(), 0);
    }

    #[tokio::test]
    async fn a_truncated_message_or_a_second_one_ends_the_body_in_an_error() {
        let one = message(3);
        let err = passed_on(&[&one[..6]]).await.unwrap_err();
        assert_eq!(err.code(), tonic::Code::InvalidArgument);
        assert_eq!(err.message(), "request message is truncated: its prefix says 3 bytes, the body ended after 1");
        for chunks in [vec![[one.clone(), one.clone()].concat()], vec![one.clone(), vec![0]]] {
            let chunks: Vec<&[u8]> = chunks.iter().map(Vec::as_slice).collect();
            let err = passed_on(&chunks).await.unwrap_err();
            assert_eq!(err.code(), tonic::Code::InvalidArgument);
            assert_eq!(err.message(), "the call carries more than one request message; a unary call takes exactly one");
        }
        // A compressed message with an encoding goes on: tonic judges the encoding.
        let mut compressed = message(3);
        compressed[0] = 1;
        assert_eq!(passed_on(&[&compressed]).await.unwrap().as_ref(), compressed.as_slice());
    }
}
