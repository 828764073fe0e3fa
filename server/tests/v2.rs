//! The Open Inference Protocol (KServe v2) on fex-server's port (issue 22,
//! item 1), called with a v2 client as Triton's and KServe's clients call
//! it: metadata that states every tensor, ModelInfer with raw and typed
//! inputs giving exactly fex.v1's tensors, outputs selected by name, fex.v1's
//! error codes and messages, and a model that forwards to an upstream that
//! is down or never answers.

mod common;

use bytes::Bytes;
use common::*;
use fex::oip;
use fex::proto::inference::grpc_inference_service_client::GrpcInferenceServiceClient;
use fex::proto::inference::model_infer_request::{InferInputTensor, InferRequestedOutputTensor};
use fex::proto::inference::*;
use fex_server::args::Args;
use tonic::Code;
use tonic::transport::Channel;

async fn v2(addr: std::net::SocketAddr) -> GrpcInferenceServiceClient<Channel> {
    GrpcInferenceServiceClient::new(channel(addr).await)
}

fn raw_bytes(elements: &[&[u8]]) -> Bytes {
    let mut out = Vec::new();
    for e in elements {
        out.extend_from_slice(&(e.len() as u32).to_le_bytes());
        out.extend_from_slice(e);
    }
    out.into()
}

fn infer_request(model: &str, batch: &[u8]) -> ModelInferRequest {
    ModelInferRequest {
        model_name: model.into(),
        id: "req-7".into(),
        inputs: vec![InferInputTensor {
            name: oip::EXAMPLE_BATCH.into(),
            datatype: "BYTES".into(),
            shape: vec![1],
            ..Default::default()
        }],
        raw_input_contents: vec![raw_bytes(&[batch])],
        ..Default::default()
    }
}

/// fex.v1's answer to the same samples, as the v2 tensors fex maps it to.
async fn v1_as_v2(
    addr: std::net::SocketAddr,
    batch: &[u8],
) -> (Vec<model_infer_response::InferOutputTensor>, Vec<Bytes>) {
    let v1 = client(addr).await.extract(extract_request("default", batch.to_vec())).await.unwrap().into_inner();
    let (mut outputs, mut raw) = (Vec::new(), Vec::new());
    for t in v1.tensors {
        oip::push_outputs(t, &oip::Selection::default(), &mut outputs, &mut raw);
    }
    (outputs, raw)
}

#[tokio::test]
async fn model_infer_returns_fex_v1s_tensors_under_their_v2_names() {
    let server = start_default().await;
    let mut c = v2(server.addr).await;
    let batch = sample_batch(8);
    let answer = c.model_infer(infer_request("default", &batch)).await.unwrap().into_inner();
    assert_eq!(
        (answer.model_name.as_str(), answer.model_version.as_str(), answer.id.as_str()),
        ("default", "1", "req-7")
    );
    let (outputs, raw) = v1_as_v2(server.addr, &batch).await;
    assert_eq!(answer.outputs, outputs);
    assert_eq!(answer.raw_output_contents, raw);
    assert!(answer.outputs.iter().any(|o| o.name == "item_id__offsets" && o.shape == [9]));

    // The same samples as typed contents.
    let mut typed = infer_request("default", &batch);
    typed.raw_input_contents.clear();
    typed.inputs[0].contents =
        Some(InferTensorContents { bytes_contents: vec![batch.clone().into()], ..Default::default() });
    let again = c.model_infer(typed).await.unwrap().into_inner();
    assert_eq!(again.raw_output_contents, raw);

    // Outputs by fex name (all its tensors) or by v2 tensor name.
    let mut some = infer_request("default", &batch);
    some.outputs = ["item_embedding", "item_id__offsets"]
        .map(|n| InferRequestedOutputTensor { name: n.into(), ..Default::default() })
        .to_vec();
    let picked = c.model_infer(some).await.unwrap().into_inner();
    let names: Vec<&str> = picked.outputs.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, ["item_embedding", "item_id__offsets"], "in the order fex.v1 returns them");
    server.shutdown();
    server.wait().await.unwrap();
}

#[tokio::test]
async fn metadata_states_every_tensor_fex_returns() {
    let server = start_default().await;
    let mut c = v2(server.addr).await;
    assert!(c.server_live(ServerLiveRequest {}).await.unwrap().into_inner().live);
    assert!(c.server_ready(ServerReadyRequest {}).await.unwrap().into_inner().ready);
    let meta = c.server_metadata(ServerMetadataRequest {}).await.unwrap().into_inner();
    assert_eq!(meta.name, "fex");
    let ready = |name: &str, version: &str| ModelReadyRequest { name: name.into(), version: version.into() };
    assert!(c.model_ready(ready("default", "")).await.unwrap().into_inner().ready);
    assert!(c.model_ready(ready("default", "1")).await.unwrap().into_inner().ready);
    assert!(!c.model_ready(ready("default", "2")).await.unwrap().into_inner().ready);
    assert!(!c.model_ready(ready("nope", "")).await.unwrap().into_inner().ready);

    let meta = c.model_metadata(ModelMetadataRequest { name: "default".into(), version: String::new() }).await.unwrap();
    let meta = meta.into_inner();
    assert_eq!((meta.platform.as_str(), meta.versions.as_slice()), ("fex", &["1".to_string()][..]));
    let inputs: Vec<(&str, &str, &[i64])> =
        meta.inputs.iter().map(|i| (i.name.as_str(), i.datatype.as_str(), i.shape.as_slice())).collect();
    assert_eq!(inputs, [("example_batch", "BYTES", &[1][..]), ("examples", "BYTES", &[-1][..])]);
    let (outputs, _) = v1_as_v2(server.addr, &sample_batch(3)).await;
    assert_eq!(meta.outputs.len(), outputs.len());
    for (stated, sent) in meta.outputs.iter().zip(&outputs) {
        assert_eq!((&stated.name, &stated.datatype), (&sent.name, &sent.datatype));
        assert!(stated.shape.iter().zip(&sent.shape).all(|(&s, &o)| s == -1 || s == o), "{}", stated.name);
    }
    server.shutdown();
    server.wait().await.unwrap();
}

#[tokio::test]
async fn errors_carry_fex_v1s_codes_and_messages() {
    let server = start_default().await;
    let mut c = v2(server.addr).await;
    let status = |r: Result<tonic::Response<ModelInferResponse>, tonic::Status>| {
        let s = r.unwrap_err();
        (s.code(), s.message().to_string())
    };
    // Unknown model: the message fex.v1 gives.
    let v1 = client(server.addr).await.extract(extract_request("nope", sample_batch(1))).await.unwrap_err();
    let (code, message) = status(c.model_infer(infer_request("nope", &sample_batch(1))).await);
    assert_eq!((code, message.as_str()), (Code::NotFound, v1.message()));
    // Bad samples: the library's error, as fex.v1 words it.
    let garbage = [0xff, 0xff, 0xff];
    let v1 = client(server.addr).await.extract(extract_request("default", garbage.to_vec())).await.unwrap_err();
    let (code, message) = status(c.model_infer(infer_request("default", &garbage)).await);
    assert_eq!((code, message.as_str()), (Code::InvalidArgument, v1.message()));
    // A malformed v2 input, a wrong version, an unknown output.
    let mut two = infer_request("default", &sample_batch(1));
    two.inputs[0].shape = vec![2];
    let (code, message) = status(c.model_infer(two).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.contains("input \"example_batch\" has shape [2]"), "{message}");
    let mut versioned = infer_request("default", &sample_batch(1));
    versioned.model_version = "9".into();
    let (code, message) = status(c.model_infer(versioned).await);
    assert_eq!((code, message.as_str()), (Code::NotFound, "model \"default\" has version \"1\", not \"9\""));
    let mut unknown = infer_request("default", &sample_batch(1));
    unknown.outputs = vec![InferRequestedOutputTensor { name: "item_id__splits".into(), ..Default::default() }];
    let (code, message) = status(c.model_infer(unknown).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.starts_with("model has no output \"item_id__splits\""), "{message}");
    // Asked twice, and a name too long to echo whole: as fex.v1 answers them.
    let mut twice = infer_request("default", &sample_batch(1));
    twice.outputs = ["item_id__values", "item_id__values"]
        .map(|n| InferRequestedOutputTensor { name: n.into(), ..Default::default() })
        .to_vec();
    let (code, message) = status(c.model_infer(twice).await);
    assert_eq!((code, message.as_str()), (Code::InvalidArgument, "output \"item_id__values\" is asked for twice"));
    let mut long = infer_request("default", &sample_batch(1));
    long.outputs = vec![InferRequestedOutputTensor { name: "x".repeat(100_000), ..Default::default() }];
    let (code, message) = status(c.model_infer(long).await);
    assert_eq!(code, Code::InvalidArgument);
    assert!(message.starts_with(&format!("model has no output \"{}…\" (100000 bytes)", "x".repeat(64))), "{message}");
    server.shutdown();
    server.wait().await.unwrap();
}

/// A model whose upstream is `address`.
fn forwarding_models(address: &str, timeout_ms: u64) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let model = format!(
        "name: fwd\nversion: \"1\"\nfeatures:\n  - {{name: item_id, kind: sparse}}\nupstream:\n  address: {address}\n  \
         model: ranker\n  timeout_ms: {timeout_ms}\n  inputs:\n    - {{name: ids, from: item_id__values}}\n    \
         - {{name: splits, from: item_id__offsets, datatype: INT32}}\n  outputs: [score]\n"
    );
    std::fs::write(dir.path().join("fwd.yaml"), model).unwrap();
    dir
}

/// An upstream that accepts connections and never speaks HTTP/2: its
/// address, and the task holding the connections open (abort it to close).
async fn silent_upstream() -> (String, tokio::task::JoinHandle<()>) {
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = format!("http://{}", silent.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            open.push(socket);
        }
    });
    (address, held)
}

async fn start_models(dir: &std::path::Path) -> fex_server::serve::Server {
    let mut args = Args::for_tests();
    args.models = Some(dir.to_path_buf());
    start(args).await
}

#[tokio::test]
async fn an_upstream_that_is_down_or_silent_gets_a_status_naming_it() {
    // Down: a port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let models = forwarding_models(&down, 2000);
    let server = start_models(models.path()).await;
    let mut c = v2(server.addr).await;
    let err = c.model_infer(infer_request("fwd", &sample_batch(2))).await.unwrap_err();
    assert_eq!(err.code(), Code::Unavailable, "{err:?}");
    assert!(err.message().starts_with(&format!("upstream {down} model \"ranker\": ")), "{}", err.message());
    let v1 = client(server.addr).await.extract(extract_request("fwd", sample_batch(2))).await.unwrap_err();
    assert_eq!(v1.code(), Code::Unavailable);
    let ready = ModelReadyRequest { name: "fwd".into(), version: String::new() };
    assert!(!c.model_ready(ready).await.unwrap().into_inner().ready, "not ready while its upstream is down");
    server.shutdown();
    server.wait().await.unwrap();

    let (address, held) = silent_upstream().await;
    let models = forwarding_models(&address, 300);
    let server = start_models(models.path()).await;
    let mut c = v2(server.addr).await;
    let err = c.model_infer(infer_request("fwd", &sample_batch(2))).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err:?}");
    let waiting = format!("deadline of 300ms exceeded waiting for upstream {address} model \"ranker\"");
    assert_eq!(err.message(), waiting);
    let metrics = server.metrics.render();
    assert!(metrics.contains("fex_upstream_calls_total{model=\"fwd\",code=\"DeadlineExceeded\"}"), "{metrics}");
    server.shutdown();
    server.wait().await.unwrap();

    // The call's own deadline, shorter than the upstream's timeout, wins.
    let models = forwarding_models(&address, 60_000);
    let mut args = Args::for_tests();
    args.models = Some(models.path().to_path_buf());
    args.request_timeout = std::time::Duration::from_millis(200);
    let server = start(args).await;
    let err = v2(server.addr).await.model_infer(infer_request("fwd", &sample_batch(2))).await.unwrap_err();
    assert_eq!(err.code(), Code::DeadlineExceeded, "{err:?}");
    // Answered by the deadline layer or by the upstream call's cut, which
    // fall at the same instant: the same words either way.
    assert!(err.message().starts_with("deadline of 200ms exceeded"), "{}", err.message());
    held.abort();
    server.shutdown();
    server.wait().await.unwrap();
}

/// Runs `fex-server --check-config` off the runtime, which keeps serving.
async fn check_config(bin: &'static str, file: &std::path::Path) -> std::process::Output {
    let file = file.to_path_buf();
    let run = move || std::process::Command::new(bin).arg("--models").arg(&file).arg("--check-config").output();
    tokio::task::spawn_blocking(run).await.unwrap().unwrap()
}

/// `--check-config` asks a model's upstream for its metadata: a mapping
/// that does not fit it exits 64 naming each problem, and the model is not
/// printed valid; an upstream that cannot be asked is reported and the
/// check passes.
#[tokio::test]
async fn check_config_checks_the_mapping_against_the_upstreams_metadata() {
    let bin = env!("CARGO_BIN_EXE_fex-server");
    // A real v2 server as the upstream: fex-server itself, whose model
    // "default" takes example_batch or examples and has no output "score".
    let upstream = start_default().await;
    let dir = tempfile::tempdir().unwrap();
    let model = format!(
        "name: fwd\nfeatures:\n  - {{name: title, kind: string}}\nupstream:\n  address: http://{}\n  model: default\n  \
         inputs:\n    - {{name: examples, from: title}}\n  outputs: [score, item_id__values]\n",
        upstream.addr
    );
    let file = dir.path().join("fwd.yaml");
    std::fs::write(&file, model).unwrap();
    let out = check_config(bin, &file).await;
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(64), "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "a model whose mapping does not fit is not printed valid");
    let at = format!("fwd: upstream http://{} model \"default\"", upstream.addr);
    assert_eq!(
        stderr.trim(),
        format!("{at}: the model's input \"example_batch\" is not mapped\n{at}: the model has no output \"score\"")
    );
    upstream.shutdown();
    upstream.wait().await.unwrap();

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = closed.local_addr().unwrap();
    drop(closed);
    let model = format!(
        "name: fwd\nfeatures:\n  - {{name: title, kind: string}}\nupstream:\n  address: http://{down}\n  model: m\n  \
         inputs:\n    - {{name: t, from: title}}\n"
    );
    std::fs::write(&file, model).unwrap();
    let out = check_config(bin, &file).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() == 2 && lines[0].starts_with("fwd: ok"), "{stdout}");
    let unchecked = format!("fwd: upstream http://{down} model \"m\": not reachable, the mapping is not checked");
    assert!(lines[1].starts_with(&unchecked), "{stdout}");
}

/// A caller that goes away while its call waits on the upstream: the
/// upstream call is counted once, as Cancelled, when its future is dropped.
#[tokio::test]
async fn an_upstream_call_the_caller_abandons_is_counted_cancelled() {
    let (address, held) = silent_upstream().await;
    let models = forwarding_models(&address, 60_000);
    let mut args = Args::for_tests();
    args.models = Some(models.path().to_path_buf());
    args.request_timeout = std::time::Duration::from_secs(60);
    let server = start(args).await;
    let addr = server.addr;
    let call = tokio::spawn(async move { v2(addr).await.model_infer(infer_request("fwd", &sample_batch(2))).await });
    // The extraction ran: the call went on to wait for the upstream.
    let page = || server.metrics.render();
    let ran = r#"fex_pool_jobs_total{outcome="ran"} 1"#;
    wait_until(|| has_line(&page(), ran), || format!("missing {ran}: {}", page())).await;
    call.abort();
    let cancelled = r#"fex_upstream_calls_total{model="fwd",code="Cancelled"} 1"#;
    wait_until(|| has_line(&page(), cancelled), || format!("missing {cancelled}: {}", page())).await;
    assert!(has_line(&page(), "fex_upstream_duration_seconds_count{model=\"fwd\"} 1"), "{}", page());
    held.abort();
    server.shutdown();
    server.wait().await.unwrap();
}
