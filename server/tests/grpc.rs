//! fex-server over real loopback gRPC: every test starts a server on
//! 127.0.0.1:0 and waits for its health check before calling it.

mod common;

use std::time::Duration;

use common::*;
use fex::proto::fex_v1::{DescribeModelRequest, ListModelsRequest};
use fex_server::args::Args;
use prost::Message;
use tonic::Code;

#[tokio::test]
async fn extract_equals_the_library_on_the_same_bytes() {
    let server = start_default().await;
    let batch = sample_batch(8);
    let response =
        client(server.addr).await.extract(extract_request("default", batch.clone())).await.unwrap().into_inner();
    let direct = fex::extract_batch(&fex::Plan::default_model(), &batch).unwrap();
    assert_eq!(response.model, "default");
    assert_eq!(response.model_version, "1");
    assert_eq!(response.batch_size, 8);
    assert_eq!(response.tensors, direct.into_tensors());
    let item_id = response.tensors.iter().find(|t| t.name == "item_id").unwrap();
    assert_eq!(item_id.splits(), (0..=8).collect::<Vec<i64>>());
    server.shutdown();
    server.wait().await.unwrap();
}

#[tokio::test]
async fn output_subset() {
    let server = start_default().await;
    let mut request = extract_request("default", sample_batch(2));
    request.outputs = vec!["item_ctr_7d".into(), "user_id".into()];
    let response = client(server.addr).await.extract(request.clone()).await.unwrap().into_inner();
    let names: Vec<_> = response.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["item_ctr_7d", "user_id"]);
    request.outputs = vec!["nope".into()];
    let status = client(server.addr).await.extract(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(status.message().contains(r#"has no output "nope""#), "{}", status.message());
}

#[tokio::test]
async fn unknown_model_is_not_found() {
    let server = start_default().await;
    let status = client(server.addr).await.extract(extract_request("ranker-v9", sample_batch(1))).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    assert_eq!(status.message(), r#"model "ranker-v9" is not loaded; loaded models: default"#);
    // Counted, but not under the name the client sent: labels stay bounded.
    let metrics = server.metrics.render();
    assert!(has_line(&metrics, r#"fex_requests_total{method="Extract",model="-",code="NotFound"} 1"#), "{metrics}");
    assert!(!metrics.contains("ranker-v9"), "{metrics}");
}

#[tokio::test]
async fn malformed_bytes_are_invalid_argument_and_the_server_keeps_serving() {
    let server = start_default().await;
    let mut c = client(server.addr).await;
    let mut batch = sample_batch(4);
    batch.truncate(batch.len() - 7);
    let status = c.extract(extract_request("default", batch)).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().contains("named_feature_list[") && status.message().contains("@ byte"),
        "{}",
        status.message()
    );
    let garbage = vec![0xff; 64];
    assert_eq!(c.extract(extract_request("default", garbage)).await.unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(c.extract(extract_request("default", sample_batch(2))).await.unwrap().into_inner().batch_size, 2);
    let metrics = server.metrics.render();
    assert!(
        has_line(&metrics, r#"fex_requests_total{method="Extract",model="default",code="InvalidArgument"} 2"#),
        "{metrics}"
    );
    assert!(has_line(&metrics, r#"fex_requests_total{method="Extract",model="default",code="Ok"} 1"#), "{metrics}");
}

#[tokio::test]
async fn oversize_request_names_found_and_limit() {
    let mut args = Args::for_tests();
    args.max_request_bytes = 1000;
    let server = start(args).await;
    let request = extract_request("default", sample_batch(64));
    let found = request.encoded_len();
    let status = client(server.addr).await.extract(request).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(
        status.message(),
        format!("request message is {found} bytes, over the limit of 1000 bytes (--max-request-bytes)")
    );
    assert!(client(server.addr).await.extract(extract_request("default", sample_batch(1))).await.is_ok());
    let metrics = server.metrics.render();
    assert!(
        has_line(&metrics, r#"fex_requests_total{method="Extract",model="-",code="ResourceExhausted"} 1"#),
        "{metrics}"
    );
    assert!(has_line(&metrics, "fex_shed_total 0"), "an oversize call is not a shed call: {metrics}");
}

#[tokio::test]
async fn deadline_from_grpc_timeout_gives_deadline_exceeded() {
    let server = start_default().await;
    let held = HeldCall::open(server.addr, &extract_request("default", sample_batch(4)), Some("50m")).await;
    let (status, message) = held.answer_without_body().await;
    assert_eq!(status, "4", "DEADLINE_EXCEEDED: {message}");
    assert!(message.contains("50ms"), "{message}");
    let metrics = server.metrics.render();
    assert!(has_line(&metrics, "fex_deadline_exceeded_total 1"), "{metrics}");
    assert!(
        has_line(&metrics, r#"fex_requests_total{method="Extract",model="-",code="DeadlineExceeded"} 1"#),
        "{metrics}"
    );
}

#[tokio::test]
async fn server_default_deadline_applies_without_grpc_timeout() {
    let mut args = Args::for_tests();
    args.request_timeout = Duration::from_millis(30);
    let server = start(args).await;
    let held = HeldCall::open(server.addr, &extract_request("default", sample_batch(4)), None).await;
    assert_eq!(held.answer_without_body().await.0, "4");
}

#[tokio::test]
async fn overload_is_shed_at_once_with_resource_exhausted() {
    let mut args = Args::for_tests();
    args.max_concurrency = 1;
    args.request_timeout = HOLD_TIMEOUT;
    let server = start(args).await;
    let request = extract_request("default", sample_batch(4));
    let held = HeldCall::open(server.addr, &request, None).await;
    // The held call owns the only permit once the server counts it in flight.
    wait_in_flight(1, || server.metrics.in_flight.get()).await;
    let mut c = client(server.addr).await;
    let status = c.extract(request.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(status.message().contains("limit of 1 concurrent requests"), "{}", status.message());
    // Health checks are not subject to the limit.
    wait_serving(server.addr).await;
    let (code, message) = held.finish().await;
    assert_eq!(code, "0", "{message}");
    assert!(c.extract(request).await.is_ok(), "the permit came back");
    // The shed call never reached the service, yet it is counted.
    let metrics = server.metrics.render();
    assert!(
        has_line(&metrics, r#"fex_requests_total{method="Extract",model="-",code="ResourceExhausted"} 1"#),
        "{metrics}"
    );
    assert!(has_line(&metrics, r#"fex_requests_total{method="Extract",model="default",code="Ok"} 2"#), "{metrics}");
    assert!(has_line(&metrics, "fex_in_flight_requests 0"), "{metrics}");
}

/// Request bytes are bounded whatever their count: with room for one
/// request's bytes, a second call is refused at once, counted as shed, and
/// the bytes come back when the first is answered.
#[tokio::test]
async fn requests_beyond_the_byte_budget_are_shed_at_once() {
    let request = extract_request("default", sample_batch(64));
    let len = request.encoded_len();
    let budget = len + len / 2;
    let mut args = Args::for_tests();
    args.max_in_flight_bytes = budget;
    args.max_request_bytes = len;
    args.request_timeout = HOLD_TIMEOUT;
    let server = start(args).await;
    let held = HeldCall::open(server.addr, &request, None).await;
    // The held call took its message's length once its prefix arrived.
    wait_in_flight(len as i64, || server.metrics.in_flight_request_bytes.get()).await;
    let mut c = client(server.addr).await;
    let status = c.extract(request.clone()).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert_eq!(
        status.message(),
        format!(
            "request of {len} bytes does not fit in the request bytes the server holds at once ({budget} at most, \
             --max-in-flight-bytes); retry with backoff"
        )
    );
    let (code, message) = held.finish().await;
    assert_eq!(code, "0", "{message}");
    wait_in_flight(0, || server.metrics.in_flight_request_bytes.get()).await;
    assert!(c.extract(request).await.is_ok(), "the bytes came back");
    let metrics = server.metrics.render();
    assert!(has_line(&metrics, "fex_shed_total 1"), "{metrics}");
    assert!(
        has_line(&metrics, r#"fex_requests_total{method="Extract",model="-",code="ResourceExhausted"} 1"#),
        "{metrics}"
    );
    assert!(has_line(&metrics, "fex_in_flight_request_bytes 0"), "{metrics}");
}

#[tokio::test]
async fn a_client_that_resets_its_upload_is_counted_as_cancelled() {
    let server = start_default().await;
    let held = HeldCall::open(server.addr, &extract_request("default", sample_batch(4)), None).await;
    wait_in_flight(1, || server.metrics.in_flight.get()).await;
    drop(held);
    wait_in_flight(0, || server.metrics.in_flight.get()).await;
    let want = r#"fex_requests_total{method="Extract",model="-",code="Cancelled"} 1"#;
    let page = || server.metrics.render();
    wait_until(|| has_line(&page(), want), || format!("missing {want}: {}", page())).await;
    assert!(!server.metrics.render().contains(r#"code="Internal""#), "{}", server.metrics.render());
}

#[tokio::test]
async fn list_and_describe_models() {
    let server = start_default().await;
    let mut c = client(server.addr).await;
    let models = c.list_models(ListModelsRequest {}).await.unwrap().into_inner().models;
    assert_eq!(models.len(), 1);
    assert_eq!((models[0].name.as_str(), models[0].version.as_str(), models[0].outputs), ("default", "1", 22));
    let described = c.describe_model(DescribeModelRequest { model: "default".into() }).await.unwrap().into_inner();
    assert_eq!(described.compat, "native");
    let emb = described.outputs.iter().find(|o| o.name == "item_embedding").unwrap();
    assert_eq!(emb.shape, [-1, 16]);
    let missing = c.describe_model(DescribeModelRequest { model: "x".into() }).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
}

const MODEL_V1: &str = "name: ranker\nversion: \"1\"\nfeatures:\n  - {name: item_id, kind: sparse}\n";
const MODEL_V2: &str =
    "name: ranker\nversion: \"2\"\nfeatures:\n  - {name: item_id, kind: sparse}\n  - {name: user_id, kind: sparse}\n";
const MODEL_BAD: &str = "name: ranker\nversion: \"3\"\nfeatures:\n  - {name: item_id, kind: sprase}\n";

#[tokio::test]
async fn reload_good_then_bad_keeps_the_last_good_plan() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ranker.yaml");
    std::fs::write(&file, MODEL_V1).unwrap();
    let mut args = Args::for_tests();
    args.models = Some(dir.path().to_path_buf());
    let server = start(args).await;
    let mut c = client(server.addr).await;
    let version = |r: fex::proto::fex_v1::ExtractResponse| (r.model_version, r.tensors.len());
    assert_eq!(
        version(c.extract(extract_request("ranker", sample_batch(2))).await.unwrap().into_inner()),
        ("1".into(), 1)
    );

    std::fs::write(&file, MODEL_V2).unwrap();
    let report = server.reload().await;
    assert_eq!(report.loaded, ["ranker"]);
    assert_eq!(
        version(c.extract(extract_request("ranker", sample_batch(2))).await.unwrap().into_inner()),
        ("2".into(), 2)
    );

    std::fs::write(&file, MODEL_BAD).unwrap();
    let report = server.reload().await;
    assert_eq!(report.rejected.len(), 1);
    assert!(report.rejected[0].message.contains(r#"unknown feature kind "sprase""#), "{:?}", report.rejected);
    assert_eq!(
        version(c.extract(extract_request("ranker", sample_batch(2))).await.unwrap().into_inner()),
        ("2".into(), 2)
    );
    let metrics = server.metrics.render();
    assert!(has_line(&metrics, r#"fex_reloads_total{result="rejected"} 1"#), "{metrics}");

    std::fs::remove_file(&file).unwrap();
    assert_eq!(server.reload().await.removed, ["ranker"]);
    assert_eq!(c.extract(extract_request("ranker", sample_batch(1))).await.unwrap_err().code(), Code::NotFound);
}

#[tokio::test]
async fn a_reload_leaves_plans_already_handed_out_intact() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ranker.yaml");
    std::fs::write(&file, MODEL_V1).unwrap();
    let mut args = Args::for_tests();
    args.models = Some(dir.path().to_path_buf());
    let server = start(args).await;
    // The model is looked up when the body has arrived; a reload before that
    // is seen, one after is not. Check the registry hands out independent Arcs.
    let before = server.registry.get("ranker").unwrap();
    std::fs::write(&file, MODEL_V2).unwrap();
    server.reload().await;
    let after = server.registry.get("ranker").unwrap();
    assert_eq!((before.version.as_str(), after.version.as_str()), ("1", "2"));
    assert_eq!(before.plan.outputs.len(), 1, "the old plan is intact for whoever holds it");
}

#[tokio::test]
async fn periodic_reload_picks_up_changes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ranker.yaml");
    std::fs::write(&file, MODEL_V1).unwrap();
    let mut args = Args::for_tests();
    args.models = Some(dir.path().to_path_buf());
    let server = start(args).await;
    server.spawn_reloader(Duration::from_millis(20));
    std::fs::write(&file, MODEL_V2).unwrap();
    let mut c = client(server.addr).await;
    for _ in 0..500 {
        let models = c.list_models(ListModelsRequest {}).await.unwrap().into_inner().models;
        if models[0].version == "2" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the reloader never loaded version 2");
}

#[tokio::test]
async fn health_and_reflection() {
    use tonic_reflection::pb::v1::ServerReflectionRequest;
    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;

    let server = start_default().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel(server.addr).await);
    let overall = health.check(tonic_health::pb::HealthCheckRequest { service: String::new() }).await.unwrap();
    assert_eq!(overall.into_inner().status, 1, "SERVING");

    let mut reflection = ServerReflectionClient::new(channel(server.addr).await);
    let ask = |m: MessageRequest| ServerReflectionRequest { host: String::new(), message_request: Some(m) };
    let requests = tokio_stream::iter(vec![
        ask(MessageRequest::ListServices(String::new())),
        ask(MessageRequest::FileContainingSymbol("fex.v1.ExtractRequest".into())),
    ]);
    let mut responses = reflection.server_reflection_info(requests).await.unwrap().into_inner();
    let Some(MessageResponse::ListServicesResponse(list)) =
        responses.message().await.unwrap().unwrap().message_response
    else {
        panic!()
    };
    let names: Vec<_> = list.service.iter().map(|s| s.name.as_str()).collect();
    assert!(names.contains(&"fex.v1.FeatureExtractor") && names.contains(&"grpc.health.v1.Health"), "{names:?}");
    let Some(MessageResponse::FileDescriptorResponse(files)) =
        responses.message().await.unwrap().unwrap().message_response
    else {
        panic!()
    };
    assert!(!files.file_descriptor_proto.is_empty());
}

#[tokio::test]
async fn shutdown_drains_an_in_flight_call() {
    let mut args = Args::for_tests();
    args.max_concurrency = 1;
    args.request_timeout = HOLD_TIMEOUT;
    let server = start(args).await;
    let request = extract_request("default", sample_batch(4));
    let held = HeldCall::open(server.addr, &request, None).await;
    wait_in_flight(1, || server.metrics.in_flight.get()).await;
    server.shutdown();
    let (code, message) = held.finish().await;
    assert_eq!(code, "0", "{message}");
    server.wait().await.unwrap();
}

#[tokio::test]
async fn a_changed_vocabulary_file_reloads_its_model() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("vocab")).unwrap();
    std::fs::write(dir.path().join("vocab/items.txt"), "7\n").unwrap();
    let config = "name: v\nversion: \"1\"\nfeatures:\n  - {name: raw, kind: sparse, source: item_id, output: false}\n  - {name: ids, op: vocab, input: raw, file: vocab/items.txt}\n";
    std::fs::write(dir.path().join("v.yaml"), config).unwrap();
    let mut args = Args::for_tests();
    args.models = Some(dir.path().to_path_buf());
    let server = start(args).await;
    let mut c = client(server.addr).await;
    let batch = fex::proto::monolith_pb::ExampleBatch {
        batch_size: 1,
        named_feature_list: vec![fex::proto::monolith_pb::NamedFeatureList {
            name: "item_id".into(),
            feature: vec![fex::proto::monolith_pb::Feature {
                r#type: Some(fex::proto::monolith_pb::feature::Type::FidV2List(fex::proto::monolith_pb::FidList {
                    value: vec![8],
                })),
            }],
            r#type: 0,
            id: 0,
        }],
        ..Default::default()
    };
    let bytes = prost::Message::encode_to_vec(&batch);
    let first = c.extract(extract_request("v", bytes.clone())).await.unwrap().into_inner();
    assert_eq!(first.tensors[0].i64s(), [1], "8 is out of vocabulary");
    std::fs::write(dir.path().join("vocab/items.txt"), "7\n8\n").unwrap();
    assert_eq!(server.reload().await.loaded, ["v"]);
    let second = c.extract(extract_request("v", bytes)).await.unwrap().into_inner();
    assert_eq!(second.tensors[0].i64s(), [3], "8 is now the second entry");
    assert_ne!(first.model_version, second.model_version);
    assert!(second.model_version.starts_with("1+files."), "{}", second.model_version);
    // A vocabulary that disappears is a rejected reload; the last plan serves.
    std::fs::remove_file(dir.path().join("vocab/items.txt")).unwrap();
    let report = server.reload().await;
    assert!(report.rejected[0].message.contains("cannot read"), "{report:?}");
    assert_eq!(server.registry.get("v").unwrap().version, second.model_version);
}
