//! Compiles proto/ with protox (pure Rust, no system protoc). Message types are
//! always generated; gRPC service stubs only when the `grpc` feature is on, so
//! the library's default build stays free of tonic.

use std::{env, path::PathBuf};

const PROTOS: &[&str] = &[
    "proto/monolith/line_id.proto",
    "proto/monolith/feature.proto",
    "proto/monolith/instance.proto",
    "proto/monolith/example.proto",
    "proto/fex/v1/tensor.proto",
    "proto/fex/v1/service.proto",
    "proto/inference/open_inference_grpc.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    for proto in PROTOS {
        println!("cargo:rerun-if-changed={proto}");
    }
    let fds = protox::compile(PROTOS, ["proto"])?;
    let out_dir = PathBuf::from(env::var("OUT_DIR")?);
    // Reflection needs the encoded descriptor set; protox does not write it.
    std::fs::write(out_dir.join("fex_descriptor.bin"), prost::Message::encode_to_vec(&fds))?;
    let grpc = env::var_os("CARGO_FEATURE_GRPC").is_some();
    tonic_prost_build::configure()
        .build_server(grpc)
        .build_client(grpc)
        // Request payloads decode as `Bytes`, sharing tonic's buffer instead of
        // copying the sample; Tensor buffers are `Bytes` so the library's
        // typed columns move into a response without being copied.
        .bytes(".fex.v1.ExtractRequest")
        .bytes(".fex.v1.Tensor")
        .bytes(".fex.v1.ExampleList")
        // v2 tensor contents: a raw input is sliced from the request's buffer,
        // a raw output is a column's buffer moved in.
        .bytes(".inference")
        .compile_fds(fds)?;
    Ok(())
}
