//! Generates the server's own `fex.v1.FeatureExtractor` service stub: the
//! same trait and router the library generates, but decoding requests with
//! `crate::codec::RequestCodec`, so a malformed request message is the
//! caller's INVALID_ARGUMENT instead of tonic's INTERNAL. Message types are the
//! library's (`extern_path`): nothing but the service module is generated.
//! Except one: an Extract request arrives as `crate::codec::ExtractCall`,
//! the decoded message with the bytes it came in (the request log keeps them).

use std::{env, path::PathBuf};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let protos = PathBuf::from(env::var("CARGO_MANIFEST_DIR")?).join("../proto");
    println!("cargo:rerun-if-changed={}", protos.join("fex/v1").display());
    println!("cargo:rerun-if-changed={}", protos.join("inference").display());
    let fds = protox::compile(["fex/v1/service.proto"], [&protos])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".fex.v1", "::fex::proto::fex_v1")
        .extern_path(".fex.v1.ExtractRequest", "crate::codec::ExtractCall")
        .codec_path("crate::codec::RequestCodec")
        .compile_fds(fds)?;
    // inference.GRPCInferenceService (the Open Inference Protocol), served
    // the same way: the library's messages, requests decoded strictly.
    let fds = protox::compile(["inference/open_inference_grpc.proto"], [&protos])?;
    tonic_prost_build::configure()
        .build_client(false)
        .build_server(true)
        .extern_path(".inference", "::fex::proto::inference")
        .codec_path("crate::codec::RequestCodec")
        .compile_fds(fds)?;
    Ok(())
}
