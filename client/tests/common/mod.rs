//! Shared by the client's integration tests: a real fex-server on
//! 127.0.0.1:0 (waited for until SERVING), synthetic payloads, and a bounded
//! wait for a condition.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use fex_client::synth::{GenOptions, Generator};
use fex_client::{ConnectOptions, FexClient};
use fex_server::args::Args;

pub async fn server() -> fex_server::serve::Server {
    server_with(Args::for_tests()).await
}

pub async fn server_with(args: Args) -> fex_server::serve::Server {
    let registry = fex_server::serve::load_registry(&args).unwrap();
    let server = fex_server::serve::start(&args, Arc::new(registry)).await.unwrap();
    let mut client = FexClient::connect(&ConnectOptions::plain(server.addr.to_string())).await.unwrap();
    for _ in 0..500 {
        if client.health("fex.v1.FeatureExtractor").await.is_ok_and(|s| s == "SERVING") {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("server never became SERVING");
}

pub fn payloads(batch_size: usize, n: usize) -> Vec<Bytes> {
    let options = GenOptions { batch_size, ..GenOptions::default() };
    let mut generator = Generator::new(fex::Plan::default_model(), options).unwrap();
    (0..n).map(|_| Bytes::from(generator.next_bytes())).collect()
}

/// Polls `ready` every 5 ms; after 30 s the test fails with `describe()`.
pub async fn wait_until(mut ready: impl FnMut() -> bool, describe: impl Fn() -> String) {
    let give_up = std::time::Instant::now() + Duration::from_secs(30);
    while !ready() {
        assert!(std::time::Instant::now() < give_up, "waited 30 s: {}", describe());
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Runs the fex-client binary with `args` off the async runtime.
pub async fn cli(args: Vec<String>) -> std::process::Output {
    let bin = env!("CARGO_BIN_EXE_fex-client");
    tokio::task::spawn_blocking(move || std::process::Command::new(bin).args(args).output().unwrap()).await.unwrap()
}
