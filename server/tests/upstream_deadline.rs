//! A forwarded call cut at its deadline never disturbs the calls beside it
//! on the same upstream connection (issue 33, part 4), against a raw
//! HTTP/2 server on 127.0.0.1:0 that ends a call as Triton 2.51 does.
//!
//! Triton answers a call whose deadline passed with its closing HEADERS
//! (`:status 200`, grpc-status 4, END_STREAM) and RST_STREAM(NO_ERROR)
//! (gRPC core, `chttp2_transport.cc`, `close_from_api`), and then sends the
//! same pair again: four pairs for one stream, captured from fex's h2 log
//! against Triton 2.51 (docs/upstream-reports/h2-frames-after-reset.md).
//! The h2 crate takes the second closing HEADERS on a closed stream as a
//! connection error, unless fex reset the stream and the reset went out
//! first. So the server here keeps its own deadline, the `grpc-timeout` fex
//! sent, and ends the call with those four pairs 50 ms before it runs out:
//! the upstream's timer firing first, as it does when fex's timer fires
//! late or its reset waits to be written (3 of 80 cut calls against
//! Triton). If fex resets the stream first, the server sends the four pairs
//! all the same, as a server that has not yet read the reset would.

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use common::*;
use fex::proto::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use fex::proto::inference::model_infer_request::InferInputTensor;
use fex::proto::inference::model_infer_response::InferOutputTensor;
use fex::proto::inference::{ModelInferRequest, ModelInferResponse};
use futures_util::StreamExt;
use h2::frame::{self, Frame, Pseudo, Reason, StreamId};
use prost::Message;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tonic::Code;

/// How much sooner than the `grpc-timeout` fex sent the server ends a slow
/// call.
const LEAD: Duration = Duration::from_millis(50);
/// The closing pairs Triton sent for one stream.
const PAIRS: usize = 4;

/// What the server saw, for the test to wait on and check.
#[derive(Debug, PartialEq)]
enum Seen {
    /// A call to model "slow" arrived: the next call shares its connection.
    SlowCall,
    /// The client ended the connection: every call on it failed.
    GoAway(Reason),
}

/// A v2 model server on 127.0.0.1:0 with two models: "fast" answers at once
/// (a `score` of one FP32), "slow" never answers and is ended at its
/// deadline as Triton ends it. A fast call that arrives while a slow one is
/// open on its connection is answered only once the slow one has ended, so
/// it is in flight when the closing frames arrive.
async fn triton_like() -> (String, mpsc::UnboundedReceiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", listener.local_addr().unwrap());
    let (seen, events) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(serve(socket, seen.clone()));
        }
    });
    (address, events)
}

#[derive(Default)]
struct Connection {
    /// Request headers' grpc-timeout and the body so far, by stream.
    open: HashMap<StreamId, (Duration, BytesMut)>,
    /// The slow call's stream and when the server ends it.
    slow: Option<(StreamId, Instant)>,
    /// Fast calls waiting for the slow one to end.
    held: Vec<StreamId>,
}

type Codec = h2::Codec<TcpStream, Bytes>;

async fn serve(mut socket: TcpStream, seen: mpsc::UnboundedSender<Seen>) {
    use tokio::io::AsyncReadExt;
    let mut preface = [0u8; 24];
    socket.read_exact(&mut preface).await.unwrap();
    assert_eq!(&preface, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
    let mut codec = Codec::new(socket);
    write(&mut codec, vec![frame::Settings::default().into()]).await.unwrap();
    let mut conn = Connection::default();
    loop {
        let deadline = conn.slow.map(|(_, at)| tokio::time::Instant::from_std(at));
        let frame = tokio::select! {
            frame = codec.next() => frame,
            () = tokio::time::sleep_until(deadline.unwrap_or_else(tokio::time::Instant::now)), if deadline.is_some() => {
                end_slow(&mut codec, &mut conn).await;
                continue;
            }
        };
        let Some(Ok(frame)) = frame else { return };
        match frame {
            Frame::Settings(s) if !s.is_ack() => write(&mut codec, vec![frame::Settings::ack().into()]).await.unwrap(),
            Frame::Ping(p) if !p.is_ack() => {
                write(&mut codec, vec![frame::Ping::pong(*p.payload()).into()]).await.unwrap()
            }
            Frame::Headers(h) => {
                let timeout = h.fields().get("grpc-timeout").and_then(|v| v.to_str().ok());
                let timeout = timeout.and_then(fex_server::layers::parse_grpc_timeout).unwrap_or(Duration::MAX);
                conn.open.insert(h.stream_id(), (timeout, BytesMut::new()));
            }
            Frame::Data(d) => {
                let id = d.stream_id();
                let (timeout, body) = conn.open.get_mut(&id).expect("data on an open stream");
                body.extend_from_slice(d.payload());
                if d.is_end_stream() {
                    let (timeout, body) = (*timeout, conn.open.remove(&id).unwrap().1);
                    let request = ModelInferRequest::decode(&body[5..]).unwrap();
                    if request.model_name == "slow" {
                        conn.slow = Some((id, Instant::now() + timeout.saturating_sub(LEAD)));
                        let _ = seen.send(Seen::SlowCall);
                    } else if conn.slow.is_some() {
                        conn.held.push(id);
                    } else {
                        write(&mut codec, answer(id).into()).await.unwrap();
                    }
                }
            }
            // fex cut the slow call first: it ends all the same.
            Frame::Reset(r) if conn.slow.is_some_and(|(id, _)| id == r.stream_id()) => {
                end_slow(&mut codec, &mut conn).await
            }
            Frame::GoAway(g) => {
                let _ = seen.send(Seen::GoAway(g.reason()));
            }
            _ => {}
        }
    }
}

/// Ends the slow call with Triton's closing frames, then answers the fast
/// calls that waited for it, in one write.
async fn end_slow(codec: &mut Codec, conn: &mut Connection) {
    let (id, _) = conn.slow.take().unwrap();
    let mut frames = Vec::new();
    for _ in 0..PAIRS {
        let mut fields = http::HeaderMap::new();
        fields.insert("content-type", "application/grpc".parse().unwrap());
        fields.insert("grpc-status", "4".parse().unwrap());
        fields.insert("grpc-message", "Deadline Exceeded".parse().unwrap());
        let mut closing = frame::Headers::new(id, Pseudo::response(http::StatusCode::OK), fields);
        closing.set_end_stream();
        frames.push(closing.into());
        frames.push(frame::Reset::new(id, Reason::NO_ERROR).into());
    }
    for held in std::mem::take(&mut conn.held) {
        frames.extend(answer(held));
    }
    // A connection fex closed has nobody to write to.
    let _ = write(codec, frames).await;
}

/// The frames answering a fast call: headers, a ModelInferResponse with one
/// FP32 score, grpc-status 0.
fn answer(id: StreamId) -> [Frame; 3] {
    let score =
        InferOutputTensor { name: "score".into(), datatype: "FP32".into(), shape: vec![1], ..Default::default() };
    let response = ModelInferResponse {
        model_name: "fast".into(),
        outputs: vec![score],
        raw_output_contents: vec![Bytes::from_static(&[0, 0, 128, 63])],
        ..Default::default()
    };
    let mut fields = http::HeaderMap::new();
    fields.insert("content-type", "application/grpc".parse().unwrap());
    let headers = frame::Headers::new(id, Pseudo::response(http::StatusCode::OK), fields);
    let body = frame::Data::new(id, Bytes::from(grpc_frame(&response.encode_to_vec())));
    let mut status = http::HeaderMap::new();
    status.insert("grpc-status", "0".parse().unwrap());
    let mut trailers = frame::Headers::trailers(id, status);
    trailers.set_end_stream();
    [headers.into(), body.into(), trailers.into()]
}

/// Writes `frames` and flushes them.
async fn write(codec: &mut Codec, frames: Vec<Frame>) -> std::io::Result<()> {
    for f in frames {
        std::future::poll_fn(|cx| codec.poll_ready(cx)).await?;
        codec.buffer(f).expect("a frame the codec can write");
    }
    std::future::poll_fn(|cx| codec.flush(cx)).await
}

/// Models "slow" and "fast", forwarding to the models of those names on
/// `address` over one shared connection; calls to "slow" have 300 ms.
fn models(address: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, timeout_ms) in [("slow", 300), ("fast", 60_000)] {
        let model = format!(
            "name: {name}\nversion: \"1\"\nfeatures:\n  - {{name: item_id, kind: sparse}}\nupstream:\n  address: \
             {address}\n  model: {name}\n  timeout_ms: {timeout_ms}\n  max_connections: 1\n  inputs:\n    - {{name: ids, \
             from: item_id__values}}\n    - {{name: splits, from: item_id__offsets, datatype: INT32}}\n  outputs: [score]\n"
        );
        std::fs::write(dir.path().join(format!("{name}.yaml")), model).unwrap();
    }
    dir
}

/// A ModelInfer call of two samples to `model`. The upstream's
/// `timeout_ms` is the deadline: a grpc-timeout would make tonic's client
/// cut the call itself at the same moment as fex, hiding fex's answer.
fn infer(model: &str) -> ModelInferRequest {
    let input = InferInputTensor {
        name: fex::oip::EXAMPLE_BATCH.into(),
        datatype: "BYTES".into(),
        shape: vec![1],
        ..Default::default()
    };
    let batch = sample_batch(2);
    let mut raw = (batch.len() as u32).to_le_bytes().to_vec();
    raw.extend(batch);
    ModelInferRequest {
        model_name: model.into(),
        inputs: vec![input],
        raw_input_contents: vec![raw.into()],
        ..Default::default()
    }
}

#[tokio::test]
async fn a_call_the_upstream_cuts_at_its_deadline_never_fails_the_calls_beside_it() {
    let (address, mut seen) = triton_like().await;
    let dir = models(&address);
    let mut args = fex_server::args::Args::for_tests();
    args.models = Some(dir.path().to_path_buf());
    args.request_timeout = Duration::from_secs(60);
    let server = start(args).await;
    let mut c = GrpcInferenceServiceClient::new(channel(server.addr).await);
    // One fast call first: the connection to the upstream is up.
    c.model_infer(infer("fast")).await.unwrap();

    let mut cut = c.clone();
    let cut = tokio::spawn(async move { cut.model_infer(infer("slow")).await });
    assert_eq!(seen.recv().await, Some(Seen::SlowCall));
    let beside = c.model_infer(infer("fast")).await;
    let cut = cut.await.unwrap();

    let beside = beside.expect("the call beside the cut one answers");
    assert_eq!(beside.get_ref().outputs[0].name, "score");
    // The connection is the one it was: fex never sent GOAWAY.
    c.model_infer(infer("fast")).await.unwrap();
    assert!(seen.try_recv().is_err(), "the upstream saw {:?}", seen.try_recv());
    let cut = cut.expect_err("the slow call is cut");
    assert_eq!(cut.code(), Code::DeadlineExceeded, "{cut:?}");
    let upstream = format!("{address} model \"slow\"");
    assert_eq!(cut.message(), format!("deadline of 300ms exceeded waiting for upstream {upstream}"));
    server.shutdown();
    server.wait().await.unwrap();
}
