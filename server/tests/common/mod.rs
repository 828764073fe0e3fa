//! Shared helpers for the server's integration tests: start a real server on
//! 127.0.0.1:0, connect, wait for health, build samples, and hold a call open
//! with a raw HTTP/2 stream (to test deadlines, shedding and drains).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use fex::proto::fex_v1::ExtractRequest;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::feature_extractor_client::FeatureExtractorClient;
use fex::proto::monolith_pb::{self as pb, feature::Type};
use fex_server::args::Args;
use fex_server::registry::Registry;
use fex_server::serve::{self, Server};
use prost::Message;
use tonic::transport::Channel;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

pub async fn start(args: Args) -> Server {
    let registry = serve::load_registry(&args).expect("models load");
    let server = serve::start(&args, Arc::new(registry)).await.expect("server starts");
    wait_serving(server.addr).await;
    server
}

pub async fn start_default() -> Server {
    start(Args::for_tests()).await
}

pub async fn channel(addr: SocketAddr) -> Channel {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}")).unwrap().connect().await.expect("connects")
}

pub async fn client(addr: SocketAddr) -> FeatureExtractorClient<Channel> {
    FeatureExtractorClient::new(channel(addr).await)
}

/// Polls grpc.health.v1 until the extractor reports SERVING (bounded).
pub async fn wait_serving(addr: SocketAddr) {
    let mut health = HealthClient::new(channel(addr).await);
    for _ in 0..500 {
        let request = HealthCheckRequest { service: "fex.v1.FeatureExtractor".into() };
        if let Ok(r) = health.check(request).await
            && r.into_inner().status == ServingStatus::Serving as i32
        {
            return;
        }
        tokio::task::yield_now().await;
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    panic!("server at {addr} never reported SERVING");
}

fn fids(v: &[u64]) -> pb::Feature {
    pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: v.to_vec() })) }
}

fn floats(v: &[f32]) -> pb::Feature {
    pb::Feature { r#type: Some(Type::FloatList(pb::FloatList { value: v.to_vec() })) }
}

/// A ranking request for the default model: shared user, per-item features.
pub fn sample_batch(rows: usize) -> Vec<u8> {
    let list = |name: &str, kind: i32, feature: Vec<pb::Feature>| pb::NamedFeatureList {
        name: name.into(),
        feature,
        r#type: kind,
        id: 0,
    };
    let per_row = |f: &dyn Fn(usize) -> pb::Feature| (0..rows).map(f).collect::<Vec<_>>();
    pb::ExampleBatch {
        batch_size: rows as i32,
        named_feature_list: vec![
            list("user_id", 1, vec![fids(&[1 << 48 | 42])]),
            list("ctx_hour", 1, vec![fids(&[2 << 48 | 13])]),
            list("item_id", 0, per_row(&|r| fids(&[3 << 48 | r as u64]))),
            list("item_tags", 0, per_row(&|r| fids(&[4 << 48 | r as u64, 4 << 48 | 7]))),
            list("item_ctr_7d", 0, per_row(&|r| floats(&[r as f32 / 100.0]))),
            list("not_in_the_model", 0, per_row(&|_| fids(&[9]))),
        ],
        ..Default::default()
    }
    .encode_to_vec()
}

pub fn extract_request(model: &str, batch: Vec<u8>) -> ExtractRequest {
    ExtractRequest { model: model.into(), payload: Some(Payload::ExampleBatch(Bytes::from(batch))), outputs: vec![] }
}

/// An Extract call whose body is held back: the server has admitted it and
/// waits for the rest of the message. `finish` sends it and returns the
/// grpc-status.
pub struct HeldCall {
    send: h2::SendStream<Bytes>,
    response: h2::client::ResponseFuture,
    rest: Bytes,
}

impl HeldCall {
    pub async fn open(addr: SocketAddr, request: &ExtractRequest, grpc_timeout: Option<&str>) -> Self {
        let timeout: Vec<(&str, &str)> = grpc_timeout.map(|t| ("grpc-timeout", t)).into_iter().collect();
        let (response, mut send) = start_extract(addr, &timeout, false).await;
        let frame = grpc_frame(&request.encode_to_vec());
        // Send the frame header and half the message; hold the rest.
        let cut = 5 + (frame.len() - 5) / 2;
        send.send_data(Bytes::copy_from_slice(&frame[..cut]), false).unwrap();
        Self { send, response, rest: Bytes::copy_from_slice(&frame[cut..]) }
    }

    /// Sends the rest of the message and returns grpc-status and grpc-message.
    pub async fn finish(mut self) -> (String, String) {
        let _ = self.send.send_data(self.rest.clone(), true);
        Self::status(self.response).await
    }

    /// Waits for the server to answer without sending the rest.
    pub async fn answer_without_body(self) -> (String, String) {
        let _keep = self.send;
        Self::status(self.response).await
    }

    async fn status(response: h2::client::ResponseFuture) -> (String, String) {
        read_status(response).await
    }
}

/// A gRPC message frame: flag 0, big-endian length, the message.
pub fn grpc_frame(message: &[u8]) -> Vec<u8> {
    let mut frame = vec![0u8];
    frame.extend((message.len() as u32).to_be_bytes());
    frame.extend(message);
    frame
}

/// One Extract call over raw HTTP/2, so the body can be anything a broken
/// client might send: `headers` join the usual ones, `body` is sent in one
/// piece and the stream closed. Returns grpc-status and grpc-message.
pub async fn raw_extract(addr: SocketAddr, headers: &[(&str, &str)], body: Vec<u8>) -> (String, String) {
    let empty = body.is_empty();
    let (response, mut send) = start_extract(addr, headers, empty).await;
    if !empty {
        send.send_data(Bytes::from(body), true).unwrap();
    }
    read_status(response).await
}

/// Opens a connection of its own and sends the headers of an Extract call
/// (`headers` join the usual ones); `end` closes the stream at once.
async fn start_extract(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    end: bool,
) -> (h2::client::ResponseFuture, h2::SendStream<Bytes>) {
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(async move {
        let _ = connection.await;
    });
    let mut client = client.ready().await.unwrap();
    let mut builder = http::Request::builder()
        .method("POST")
        .uri(format!("http://{addr}/fex.v1.FeatureExtractor/Extract"))
        .header("content-type", "application/grpc")
        .header("te", "trailers");
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    client.send_request(builder.body(()).unwrap(), end).unwrap()
}

/// grpc-status and grpc-message (percent-decoded) of a response, from its
/// headers (trailers-only) or its trailers.
async fn read_status(response: h2::client::ResponseFuture) -> (String, String) {
    let response = response.await.expect("response headers");
    let status = |h: &http::HeaderMap| {
        let status = tonic::Status::from_header_map(h)?;
        Some(((status.code() as i32).to_string(), status.message().to_string()))
    };
    if let Some(status) = status(response.headers()) {
        return status;
    }
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.unwrap();
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let trailers = body.trailers().await.unwrap().expect("trailers");
    status(&trailers).expect("grpc-status")
}

/// Polls `ready` every 2 ms until it holds. Bounded: after 30 s the test
/// fails with `describe()` (the state it was stuck in) instead of hanging.
pub async fn wait_until(mut ready: impl FnMut() -> bool, describe: impl Fn() -> String) {
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !ready() {
        assert!(std::time::Instant::now() < give_up, "waited 30 s: {}", describe());
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
}

/// Waits until `in_flight()` (the server's `fex_in_flight_requests`) reads
/// `n`: a held call has been admitted once it counts.
pub async fn wait_in_flight(n: i64, in_flight: impl Fn() -> i64) {
    wait_until(|| in_flight() == n, || format!("in-flight calls at {}, expected {n}", in_flight())).await;
}

/// Whether a Prometheus page has exactly this line (so `} 1` cannot match
/// `} 10`).
pub fn has_line(page: &str, want: &str) -> bool {
    page.lines().any(|l| l == want)
}

/// Tests that hold a call open give it this deadline, far beyond any
/// scheduling delay of a loaded CI machine, so the held call cannot time out
/// before the test releases it.
pub const HOLD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

pub fn registry_of(dir: &std::path::Path) -> Registry {
    Registry::from_path(dir).unwrap()
}
