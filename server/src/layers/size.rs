//! Max request size: reads the 5-byte gRPC message prefix (compressed flag,
//! big-endian length) from the start of the request body and refuses a message
//! longer than the limit before any of it is buffered, with RESOURCE_EXHAUSTED
//! naming the size found and the limit (the status gRPC's own implementations
//! give for an oversized message). The peeked frames are handed on unchanged.
//!
//! It sits inside admission, so only admitted calls read body bytes, and the
//! bytes held for requests stay within `max_request_bytes * max_concurrency`.
//! tonic's decoder limit is set to the same value as a backstop.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use tonic::body::Body;
use tower::{Layer, Service};

use crate::status::ServeError;

/// Length of the gRPC message prefix: 1 flag byte and a u32 length.
const PREFIX: usize = 5;

#[derive(Clone)]
pub struct SizeLimitLayer {
    limit: usize,
}

impl SizeLimitLayer {
    pub fn new(limit: usize) -> Self {
        Self { limit }
    }
}

impl<S> Layer<S> for SizeLimitLayer {
    type Service = SizeLimit<S>;

    fn layer(&self, inner: S) -> Self::Service {
        SizeLimit { inner, limit: self.limit }
    }
}

#[derive(Clone)]
pub struct SizeLimit<S> {
    inner: S,
    limit: usize,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S> Service<http::Request<Body>> for SizeLimit<S>
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
        let limit = self.limit;
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let peeked = Peeked::read(body).await;
            if let Some(found) = peeked.message_len()
                && found > limit
            {
                return Ok(super::status_response(ServeError::RequestTooLarge { found, limit }));
            }
            inner.call(http::Request::from_parts(parts, Body::new(peeked))).await
        })
    }
}

/// A request body whose first frames were read to find the message prefix;
/// it yields them again, then the rest of the body.
struct Peeked {
    frames: VecDeque<Result<Frame<Bytes>, tonic::Status>>,
    prefix: [u8; PREFIX],
    prefix_len: usize,
    rest: Option<Body>,
}

impl Peeked {
    /// Reads frames until the prefix is complete, the body ends, or a
    /// trailers frame or an error arrives. Usually that is one frame.
    async fn read(mut body: Body) -> Self {
        let mut peeked = Peeked { frames: VecDeque::new(), prefix: [0; PREFIX], prefix_len: 0, rest: None };
        while peeked.prefix_len < PREFIX {
            let Some(frame) = body.frame().await else {
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

    /// The first message's length, when its prefix arrived.
    fn message_len(&self) -> Option<usize> {
        let p = &self.prefix;
        (self.prefix_len == PREFIX).then(|| u32::from_be_bytes([p[1], p[2], p[3], p[4]]) as usize)
    }
}

impl http_body::Body for Peeked {
    type Data = Bytes;
    type Error = tonic::Status;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, tonic::Status>>> {
        if let Some(frame) = self.frames.pop_front() {
            return Poll::Ready(Some(frame));
        }
        match &mut self.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_empty() && self.rest.as_ref().is_none_or(|r| r.is_end_stream())
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
        let mut svc = SizeLimitLayer::new(100).layer(service);
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
        let mut svc = SizeLimitLayer::new(100).layer(service);
        handle.allow(2);
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

        // A body too short to hold a prefix goes on for tonic to reject.
        let call = tokio::spawn(svc.ready().await.unwrap().call(extract(body(&[&[0, 0]]))));
        let (request, send) = handle.next_request().await.unwrap();
        assert_eq!(request.into_body().collect().await.unwrap().to_bytes().as_ref(), &[0, 0]);
        send.send_response(http::Response::new(Body::empty()));
        call.await.unwrap().unwrap();
    }
}
