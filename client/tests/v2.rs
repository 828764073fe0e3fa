//! fex-client speaking the Open Inference Protocol to a real fex-server on
//! loopback: `bench --protocol v2` (OK and NOT_FOUND counted as for v1),
//! `extract --protocol v2` (the v2 outputs printed), and the relay's two hops
//! with fex-server itself standing in for the model server. fex takes only
//! `example_batch` or `examples`, so the relayed request is refused there:
//! the test shows both hops run and the second hop's status is counted with
//! its code. The relay against a real model server is left to the Triton
//! tests.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use common::{cli, payloads, server};
use fex_client::ConnectOptions;
use fex_client::bench::{self, BenchConfig, Mode, Stop};
use fex_client::calls::Protocol;
use fex_client::relay::Relay;
use fex_client::report::Report;

fn config(addr: std::net::SocketAddr, protocol: Protocol, model: &str, requests: u64) -> BenchConfig {
    BenchConfig {
        connect: ConnectOptions::plain(addr.to_string()),
        model: model.into(),
        protocol,
        mode: Mode::Closed { concurrency: 2 },
        stop: Stop::Requests(requests),
        warmup: Duration::ZERO,
        connections: 1,
        timeout: Duration::from_secs(20),
        payloads: payloads(8, 3),
        max_in_flight: 10_000,
        max_run_time: Duration::from_secs(60),
        gone_after: Duration::from_secs(5),
        backoff_max: Duration::from_secs(1),
        progress: false,
    }
}

fn only(r: &Report, code: &str) {
    assert_eq!(r.status.get(code).copied(), Some(r.requests), "{:?} {:?}", r.status, r.error_samples);
    assert_eq!(r.status.values().sum::<u64>(), r.requests);
    assert!(r.request_bytes > 0);
}

/// A framed file of `n` requests.
fn requests_file(dir: &Path, n: usize) -> PathBuf {
    let path = dir.join("requests.bin");
    let mut buf = Vec::new();
    for p in payloads(4, n) {
        fex_client::frames::write_record(&mut buf, &p).unwrap();
    }
    std::fs::write(&path, buf).unwrap();
    path
}

/// The default model with an upstream: section pointing at `address`,
/// whose model `default` is a fex model (which refuses these inputs).
fn relay_config(dir: &Path, address: &str) -> PathBuf {
    let path = dir.join("relay.yaml");
    let upstream = format!(
        "upstream:\n  address: http://{address}\n  model: default\n  inputs:\n    \
         - {{name: ids, from: item_id__values}}\n    - {{name: splits, from: item_id__offsets, datatype: INT32}}\n"
    );
    std::fs::write(&path, format!("{}{upstream}", fex::config::DEFAULT_MODEL_YAML)).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_v2_gets_every_request_ok() {
    let server = server().await;
    let r = bench::run(config(server.addr, Protocol::V2, "default", 20)).await.unwrap();
    assert_eq!((r.requests, r.protocol), (20, "v2"));
    only(&r, "OK");
    assert!(r.response_bytes > 20 * 8 * 4, "{}", r.response_bytes);
    assert!(r.to_text().starts_with("model default · v2 · closed loop"), "{}", r.to_text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bench_v2_counts_an_unknown_model_as_not_found() {
    let server = server().await;
    let r = bench::run(config(server.addr, Protocol::V2, "no-such-model", 6)).await.unwrap();
    only(&r, "NOT_FOUND");
    assert_eq!(r.response_bytes, 0);
    assert!(r.error_samples[0].starts_with("NotFound: "), "{:?}", r.error_samples);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_v2_prints_the_v2_outputs() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = requests_file(dir.path(), 2);
    let args = ["extract", "--protocol", "v2", "--record", "1", "--first", "3", "--addr"];
    let mut args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    args.extend([server.addr.to_string(), "--file".into(), file.display().to_string()]);
    let out = cli(args.clone()).await;
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.starts_with("model default version 1 · "), "{stdout}");
    let line = |name: &str| stdout.lines().find(|l| l.split_whitespace().next() == Some(name)).map(str::to_string);
    let offsets = line("item_id__offsets").unwrap_or_else(|| panic!("{stdout}"));
    assert!(offsets.contains("INT64") && offsets.contains("[5]") && offsets.contains("[0, "), "{offsets}");
    let embedding = line("item_embedding").unwrap();
    assert!(embedding.contains("FP32") && embedding.contains("[4, 16]"), "{embedding}");
    assert!(line("item_title").unwrap().contains("BYTES"), "{stdout}");
    // An output subset, by v2 tensor name.
    args.extend(["--outputs".into(), "item_id__offsets".into()]);
    let out = cli(args).await;
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(stdout.lines().nth(1).unwrap().starts_with("item_id__offsets"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_runs_both_hops_and_counts_the_model_servers_status() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let relay = Relay::from_config(&relay_config(dir.path(), &server.addr.to_string()), None).unwrap();
    let r = bench::run(config(server.addr, Protocol::Relay(Arc::new(relay)), "default", 8)).await.unwrap();
    only(&r, "INVALID_ARGUMENT");
    assert!(r.error_samples[0].starts_with("InvalidArgument: the model server: "), "{:?}", r.error_samples);
    assert!(r.error_samples[0].contains("exactly one input"), "{:?}", r.error_samples);
    // The first hop fails as itself: an unknown fex model.
    let relay = Relay::from_config(&relay_config(dir.path(), &server.addr.to_string()), None).unwrap();
    let r = bench::run(config(server.addr, Protocol::Relay(Arc::new(relay)), "nope", 4)).await.unwrap();
    only(&r, "NOT_FOUND");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relay_needs_an_upstream_section() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.yaml");
    std::fs::write(&plain, fex::config::DEFAULT_MODEL_YAML).unwrap();
    let args = ["bench", "--protocol", "relay", "--model-config", plain.to_str().unwrap(), "--addr", "127.0.0.1:9"];
    let out = cli(args.iter().map(|s| s.to_string()).collect()).await;
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("has no upstream: section; --protocol relay needs one"), "{stderr}");
    let out = cli(["bench", "--protocol", "relay"].iter().map(|s| s.to_string()).collect()).await;
    assert!(String::from_utf8_lossy(&out.stderr).contains("--protocol relay needs --model-config"));
}

/// A reader that goes away (`fex-client extract ... | head -1`) ends the
/// command quietly with status 0, not a panic on the broken pipe.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn extract_into_a_closed_pipe_exits_quietly() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    // One request of 256 rows printed whole: about 230 KB, more than a pipe
    // holds, so the writes after the reader leaves fail.
    let path = dir.path().join("requests.bin");
    let mut buf = Vec::new();
    fex_client::frames::write_record(&mut buf, &payloads(256, 1)[0]).unwrap();
    std::fs::write(&path, buf).unwrap();
    let addr = server.addr.to_string();
    let file = path.display().to_string();
    let out = tokio::task::spawn_blocking(move || {
        use std::process::{Command, Stdio};
        let mut child = Command::new(env!("CARGO_BIN_EXE_fex-client"))
            .args(["extract", "--first", "100000", "--addr", &addr, "--file", &file])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read one byte, then close the pipe before the rest is written.
        let mut stdout = child.stdout.take().unwrap();
        let mut one = [0u8; 1];
        std::io::Read::read_exact(&mut stdout, &mut one).unwrap();
        drop(stdout);
        child.wait_with_output().unwrap()
    })
    .await
    .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(out.status.success(), "{:?} {stderr}", out.status);
}
