//! Malformed request envelopes (issue 11, items 2, 4 and 12): the gRPC frame
//! and the ExtractRequest around the sample bytes. Every client mistake is
//! INVALID_ARGUMENT (UNIMPLEMENTED for an encoding the server does not take)
//! with a message that says what was wrong, and never counts as INTERNAL.

mod common;

use common::*;
use fex::proto::fex_v1::DescribeModelRequest;
use prost::Message;
use tonic::Code;

/// A varint, as protobuf writes it.
fn varint(mut v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
    out
}

#[tokio::test]
async fn malformed_envelopes_are_invalid_argument_never_internal() {
    let server = start_default().await;
    let good = extract_request("default", sample_batch(2)).encode_to_vec();
    let mut truncated = good.clone();
    truncated.truncate(good.len() - 3);
    // example_batch (field 2) announcing 2 GB.
    let huge_batch = [vec![0x12], varint(2 << 30), vec![1, 2, 3]].concat();
    // 150 nested groups of an unknown field 5, over prost's limit of 100.
    let deep = [vec![0x2b; 150], vec![0x2c; 150]].concat();
    let compressed = {
        let mut f = grpc_frame(&good);
        f[0] = 1;
        f
    };
    let invalid = "3";
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated request", grpc_frame(&truncated), "malformed fex.v1 request message: "),
        ("garbage request", grpc_frame(&[0xff; 16]), "malformed fex.v1 request message: "),
        ("2 GB example_batch", grpc_frame(&huge_batch), "malformed fex.v1 request message: "),
        ("deep groups", grpc_frame(&deep), "malformed fex.v1 request message: recursion limit reached"),
        (
            "model not UTF-8",
            grpc_frame(&[0x0a, 2, 0xff, 0xfe]),
            "malformed fex.v1 request message: ExtractRequest.model: invalid string value: data is not UTF-8 encoded",
        ),
        (
            "outputs not UTF-8",
            grpc_frame(&[0x22, 2, 0xff, 0xfe]),
            "malformed fex.v1 request message: ExtractRequest.outputs: invalid string value: data is not UTF-8 encoded",
        ),
        ("empty body", vec![], "the call carries no request message; a unary call takes exactly one"),
        (
            "truncated frame",
            grpc_frame(&good)[..good.len() / 2].to_vec(),
            "request message is truncated: its prefix says",
        ),
        (
            "compressed flag, no encoding",
            compressed.clone(),
            "request message has the compressed flag set but the call sends no grpc-encoding header",
        ),
        (
            "two messages",
            [grpc_frame(&good), grpc_frame(&good)].concat(),
            "the call carries more than one request message; a unary call takes exactly one",
        ),
    ];
    for (case, body, want) in &cases {
        let (code, message) = raw_extract(server.addr, &[], body.clone()).await;
        assert_eq!(code, invalid, "{case}: {message}");
        assert!(message.starts_with(want), "{case}: {message:?} does not start with {want:?}");
    }
    // An encoding the server does not accept: UNIMPLEMENTED, as gRPC's
    // status table says.
    let (code, message) = raw_extract(server.addr, &[("grpc-encoding", "gzip")], compressed).await;
    assert_eq!(code, "12", "{message}");

    // The server still answers, and no client mistake counted as INTERNAL.
    let mut c = client(server.addr).await;
    assert_eq!(c.extract(extract_request("default", sample_batch(2))).await.unwrap().into_inner().batch_size, 2);
    let metrics = server.metrics.render();
    assert!(!metrics.contains(r#"code="Internal""#), "{metrics}");
    let want = format!(r#"fex_requests_total{{method="Extract",model="-",code="InvalidArgument"}} {}"#, cases.len());
    assert!(has_line(&metrics, &want), "missing {want}: {metrics}");
}

#[tokio::test]
async fn a_huge_model_or_output_name_is_clipped_in_the_message() {
    let server = start_default().await;
    let mut c = client(server.addr).await;
    let huge = "m".repeat(100_000);
    let clipped = format!(r#""{}…" (100000 bytes)"#, "m".repeat(64));
    let status = c.extract(extract_request(&huge, sample_batch(1))).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound, "{}", status.message().len());
    assert_eq!(status.message(), format!("model {clipped} is not loaded; loaded models: default"));
    let status = c.describe_model(DescribeModelRequest { model: huge.clone() }).await.unwrap_err();
    assert_eq!(status.code(), Code::NotFound);

    let mut request = extract_request("default", sample_batch(1));
    request.outputs = vec!["item_id".into(), huge];
    let status = c.extract(request).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument, "{}", status.message().len());
    assert!(
        status.message().starts_with(&format!(r#"model "default" has no output {clipped}; it has "#)),
        "{}",
        status.message()
    );
}
