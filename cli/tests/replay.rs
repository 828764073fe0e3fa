//! Request logs and replay: a real fex-server (127.0.0.1:0) with
//! --request-log in a temp dir answers a burst of requests from fex-client;
//! `fex replay` (the binary) over the log gives the responses the server
//! sent, byte for byte. A log written by another version of the model is
//! refused unless --allow-other-version. With the writer held and a queue of
//! one, calls still answer and the records that did not fit are counted as
//! dropped.

mod common;
use common::{connect, repo};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use fex::proto::fex_v1::ExtractRequest;
use fex::proto::fex_v1::extract_request::Payload;
use fex::proto::fex_v1::{ExampleList, LoggedRequest};
use fex::records::{ReadOptions, RecordReader};
use fex_client::synth::{GenOptions, Generator};
use prost::Message;

fn read_records(path: &Path) -> Vec<Vec<u8>> {
    let mut reader = RecordReader::open(path, ReadOptions::default(), None).unwrap();
    let (mut out, mut buf) = (Vec::new(), Vec::new());
    while reader.next_into(&mut buf).unwrap().is_some() {
        out.push(buf.clone());
    }
    out
}

fn log_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    files
}

/// Requests for the default model: generated batches, some with an output subset.
fn requests(plan: &fex::Plan, n: usize, seed: u64) -> Vec<ExtractRequest> {
    let options = GenOptions { batch_size: 5, list_len: (0, 4), seed, ..GenOptions::default() };
    let mut generator = Generator::new(plan.clone(), options).unwrap();
    let subset: Vec<String> = plan.visible().take(2).map(|o| o.name.clone()).collect();
    (0..n)
        .map(|i| {
            let batch = generator.next_batch();
            let payload = Payload::ExampleBatch(Bytes::from(batch.encode_to_vec()));
            let outputs = if i % 4 == 1 { subset.clone() } else { vec![] };
            ExtractRequest { model: "default".into(), payload: Some(payload), outputs }
        })
        .collect()
}

fn models_dir(dir: &Path) -> PathBuf {
    let models = dir.join("models");
    std::fs::create_dir_all(&models).unwrap();
    std::fs::copy(repo().join("models/default.yaml"), models.join("default.yaml")).unwrap();
    models
}

fn metric(server: &fex_server::serve::Server, name: &str) -> u64 {
    let text = server.metrics.render();
    let line = text.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in\n{text}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// A real fex-server (127.0.0.1:0) on the default model, logging requests
/// to `<dir>/log`; `configure` adjusts its flags.
struct Logging {
    runtime: tokio::runtime::Runtime,
    models: PathBuf,
    log: PathBuf,
    server: fex_server::serve::Server,
}

fn start_logging(dir: &Path, configure: impl FnOnce(&mut fex_server::args::Args)) -> Logging {
    let models = models_dir(dir);
    let log = dir.join("log");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut args = fex_server::args::Args::for_tests();
    args.models = Some(models.clone());
    args.request_log = Some(log.clone());
    configure(&mut args);
    let registry = fex_server::registry::Registry::from_path(&models).unwrap();
    let server = runtime.block_on(fex_server::serve::start(&args, Arc::new(registry))).unwrap();
    Logging { runtime, models, log, server }
}

/// Writes out the records still queued, then drains and stops the server.
fn stop(runtime: &tokio::runtime::Runtime, server: fex_server::serve::Server) {
    server.request_log.as_ref().expect("--request-log is on").sync();
    server.shutdown();
    runtime.block_on(server.wait()).unwrap();
}

fn replay(log: &Path, models: &Path, output: &Path, extra: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_fex"))
        .arg("replay")
        .arg(log)
        .arg("--models")
        .arg(models)
        .arg("--output")
        .arg(output)
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn a_request_log_replays_to_the_servers_responses_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    // Small files: the log rotates several times during the burst.
    let Logging { runtime, models, log, server } =
        start_logging(dir.path(), |args| args.request_log_max_file_bytes = 16 << 10);
    let plan = fex::Plan::from_file(&models.join("default.yaml")).unwrap();
    let client = runtime.block_on(connect(server.addr));

    // One after another (the log's order is the answers' order), then four
    // clients at once (compared as a set).
    let sequential = requests(&plan, 24, 1);
    let answers: Vec<Vec<u8>> = runtime.block_on(async {
        let mut client = client.clone();
        let mut out = Vec::new();
        for r in &sequential {
            let mut req = tonic::Request::new(r.clone());
            req.metadata_mut().insert("x-request-id", format!("seq-{}", out.len()).parse().unwrap());
            out.push(client.extract(req).await.unwrap().response.encode_to_vec());
        }
        out
    });
    let concurrent: Vec<Vec<u8>> = runtime.block_on(async {
        let tasks: Vec<_> = (0..4)
            .map(|t| {
                let mut client = client.clone();
                let reqs = requests(&plan, 8, 10 + t);
                tokio::spawn(async move {
                    let mut out = Vec::new();
                    for r in reqs {
                        out.push(client.extract(r).await.unwrap().response.encode_to_vec());
                    }
                    out
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.extend(t.await.unwrap());
        }
        out
    });
    server.request_log.as_ref().expect("--request-log is on").sync();
    assert_eq!(metric(&server, "fex_request_log_records_total"), 56);
    assert_eq!(metric(&server, "fex_request_log_dropped_total"), 0);
    stop(&runtime, server);

    let files = log_files(&log);
    assert!(files.len() > 2, "the log rotated: {files:?}");
    let first = LoggedRequest::decode(read_records(&files[0])[0].as_slice()).unwrap();
    assert_eq!(first.request_id, "seq-0");
    assert_eq!(
        (first.model.as_str(), &first.model_version, first.model_digest),
        ("default", &plan.identity().version, plan.identity().digest)
    );
    // The request's bytes are those the client sent.
    assert_eq!(first.request, sequential[0].encode_to_vec());

    let output = dir.path().join("replayed");
    let run = replay(&log, &models, &output, &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let replayed = read_records(&output);
    assert_eq!(replayed.len(), 56);
    for (i, (online, offline)) in answers.iter().zip(&replayed).enumerate() {
        assert!(online == offline, "request {i}: the server's response and fex replay's differ");
    }
    let (mut online, mut offline) = (concurrent, replayed[24..].to_vec());
    online.sort();
    offline.sort();
    assert!(online == offline, "the concurrent burst's responses and fex replay's differ");

    // Another version of the model: refused, unless asked for.
    let other = dir.path().join("other");
    std::fs::create_dir_all(&other).unwrap();
    let text = std::fs::read_to_string(models.join("default.yaml")).unwrap();
    let changed = format!("{}\n# changed\n", text);
    std::fs::write(other.join("default.yaml"), changed).unwrap();
    let changed_plan = fex::Plan::from_file(&other.join("default.yaml")).unwrap();
    assert_ne!(changed_plan.identity().digest, plan.identity().digest, "a changed config is another identity");
    let run = replay(&log, &other, &output, &[]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(64), "{stderr}");
    assert!(stderr.contains("--allow-other-version") && stderr.contains("record 0"), "{stderr}");
    let run = replay(&log, &other, &output, &["--allow-other-version"]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(read_records(&output).len(), 56);

    // A log file cut short is a bad record, named with its file.
    let last = files.last().unwrap();
    let bytes = std::fs::read(last).unwrap();
    std::fs::write(last, &bytes[..bytes.len() - 3]).unwrap();
    let run = replay(&log, &models, &output, &[]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(65), "{stderr}");
    assert!(stderr.contains(&last.display().to_string()), "{stderr}");
}

#[test]
fn a_full_log_queue_drops_and_counts_and_calls_still_answer() {
    let dir = tempfile::tempdir().unwrap();
    let Logging { runtime, models, log, server } = start_logging(dir.path(), |args| args.request_log_queue = 1);
    let plan = fex::Plan::from_file(&models.join("default.yaml")).unwrap();
    let request_log = Arc::clone(server.request_log.as_ref().unwrap());
    let mut client = runtime.block_on(connect(server.addr));

    // The writer takes at most one record and waits at the gate; the queue
    // holds one more; the other calls' records are dropped.
    let paused = request_log.pause();
    let reqs = requests(&plan, 10, 3);
    for r in &reqs {
        let answer = runtime.block_on(client.extract(r.clone())).expect("a call never waits for the log");
        assert_eq!(answer.response.batch_size, 5);
    }
    let dropped = metric(&server, "fex_request_log_dropped_total");
    assert!(dropped >= 8, "dropped {dropped} of 10 with a queue of one and the writer held");
    drop(paused);
    request_log.sync();
    let written = metric(&server, "fex_request_log_records_total");
    assert_eq!(written + dropped, 10);
    stop(&runtime, server);
    let on_disk: usize = log_files(&log).iter().map(|f| read_records(f).len()).sum();
    assert_eq!(on_disk as u64, written);
}

#[test]
fn replay_examples_requests_too() {
    // An Examples payload is logged and replayed like a batch.
    let dir = tempfile::tempdir().unwrap();
    let Logging { runtime, models, log, server } = start_logging(dir.path(), |_| {});
    let mut client = runtime.block_on(connect(server.addr));
    let example = fex::proto::monolith_pb::Example::default().encode_to_vec();
    let request = ExtractRequest {
        model: "default".into(),
        payload: Some(Payload::Examples(ExampleList {
            example: vec![Bytes::from(example.clone()), Bytes::from(example)],
        })),
        outputs: vec![],
    };
    let answer = runtime.block_on(client.extract(request)).unwrap().response.encode_to_vec();
    stop(&runtime, server);
    let output = dir.path().join("replayed");
    let run = replay(&log, &models, &output, &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert_eq!(read_records(&output), vec![answer]);
}

/// Sends a request message's bytes as they are (tonic's prost codec would
/// encode a message; this one writes the bytes given) and returns the
/// response's bytes.
#[derive(Clone, Copy, Default)]
struct RawCodec;

impl tonic::codec::Codec for RawCodec {
    type Encode = Bytes;
    type Decode = Vec<u8>;
    type Encoder = RawCodec;
    type Decoder = RawCodec;

    fn encoder(&mut self) -> RawCodec {
        RawCodec
    }

    fn decoder(&mut self) -> RawCodec {
        RawCodec
    }
}

impl tonic::codec::Encoder for RawCodec {
    type Item = Bytes;
    type Error = tonic::Status;

    fn encode(&mut self, item: Bytes, buf: &mut tonic::codec::EncodeBuf<'_>) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(buf, &item);
        Ok(())
    }
}

impl tonic::codec::Decoder for RawCodec {
    type Item = Vec<u8>;
    type Error = tonic::Status;

    fn decode(&mut self, buf: &mut tonic::codec::DecodeBuf<'_>) -> Result<Option<Vec<u8>>, tonic::Status> {
        let mut out = vec![0; bytes::Buf::remaining(buf)];
        bytes::Buf::copy_to_slice(buf, &mut out);
        Ok(Some(out))
    }
}

#[test]
fn the_log_keeps_the_request_as_sent_unknown_fields_included() {
    let dir = tempfile::tempdir().unwrap();
    let Logging { runtime, models, log, server } = start_logging(dir.path(), |_| {});
    let plan = fex::Plan::from_file(&models.join("default.yaml")).unwrap();
    runtime.block_on(connect(server.addr));

    // A request from a newer client: fields 15 (varint) and 20 (bytes) this
    // server does not know, one between the known fields, one after, and
    // the payload before the model name (prost would write them in field
    // order, without the unknown ones).
    let known = requests(&plan, 1, 5).remove(0);
    let Some(Payload::ExampleBatch(batch)) = &known.payload else { unreachable!() };
    let mut sent = Vec::new();
    prost::encoding::bytes::encode(2, batch, &mut sent);
    prost::encoding::uint64::encode(15, &42, &mut sent);
    prost::encoding::string::encode(1, &known.model, &mut sent);
    prost::encoding::bytes::encode(20, &Bytes::from_static(b"from a newer client"), &mut sent);
    assert_ne!(sent, known.encode_to_vec());
    assert_eq!(ExtractRequest::decode(sent.as_slice()).unwrap(), known, "the same request to this server");

    let answer = runtime.block_on(async {
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{}", server.addr)).unwrap();
        let mut grpc = tonic::client::Grpc::new(endpoint.connect().await.unwrap());
        grpc.ready().await.unwrap();
        let path = tonic::codegen::http::uri::PathAndQuery::from_static("/fex.v1.FeatureExtractor/Extract");
        grpc.unary(tonic::Request::new(Bytes::from(sent.clone())), path, RawCodec).await.unwrap().into_inner()
    });
    stop(&runtime, server);

    let files = log_files(&log);
    let records: Vec<Vec<u8>> = files.iter().flat_map(|f| read_records(f)).collect();
    assert_eq!(records.len(), 1);
    let logged = LoggedRequest::decode(records[0].as_slice()).unwrap();
    assert!(logged.request == sent, "the log holds the request's bytes as the client sent them");
    let output = dir.path().join("replayed");
    let run = replay(&log, &models, &output, &[]);
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    assert!(read_records(&output) == vec![answer], "fex replay gives the server's response");
}
