//! fex-client against a real fex-server on loopback: the load generator in
//! both modes (bounded in time and count), error counting, replay of generated
//! files through the CLI, and the typed client.

mod common;

use std::time::Duration;

use bytes::Bytes;
use common::{payloads, server, server_with};
use fex_client::bench::{self, BenchConfig, Mode, Stop};
use fex_client::calls::Protocol;
use fex_client::report::Report;
use fex_client::{ConnectOptions, FexClient, TensorView, Values};
use fex_server::args::Args;

fn config(addr: std::net::SocketAddr, mode: Mode, stop: Stop, payloads: Vec<Bytes>) -> BenchConfig {
    BenchConfig {
        connect: ConnectOptions::plain(addr.to_string()),
        model: "default".into(),
        protocol: Protocol::V1,
        mode,
        stop,
        warmup: Duration::from_millis(200),
        connections: 2,
        timeout: Duration::from_secs(20),
        payloads,
        max_in_flight: 10_000,
        max_run_time: Duration::from_secs(60),
        gone_after: Duration::from_secs(5),
        backoff_max: Duration::from_secs(1),
        progress: false,
    }
}

fn assert_counts_add_up(r: &Report) {
    assert_eq!(r.status.values().sum::<u64>(), r.requests, "{r:#?}");
    let l = &r.latency_ms;
    assert!(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max, "{l:?}");
    assert!(r.request_bytes > 0 && r.response_bytes > 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_for_a_bounded_time() {
    let server = server().await;
    let cfg = config(
        server.addr,
        Mode::Closed { concurrency: 4 },
        Stop::Duration(Duration::from_millis(800)),
        payloads(16, 4),
    );
    let r = bench::run(cfg).await.unwrap();
    assert_counts_add_up(&r);
    assert_eq!(r.status.get("OK").copied(), Some(r.requests));
    assert!(r.requests > 10, "{r:#?}");
    assert!((0.8..5.0).contains(&r.duration_s), "{}", r.duration_s);
    let json: serde_json::Value = serde_json::to_value(&r).unwrap();
    for key in [
        "requests",
        "duration_s",
        "throughput",
        "send_rate",
        "status",
        "error_samples",
        "request_bytes",
        "response_bytes",
    ] {
        assert!(json.get(key).is_some(), "JSON report lacks {key}");
    }
    for q in ["min", "p50", "p90", "p99", "p999", "max"] {
        assert!(json["latency_ms"].get(q).is_some(), "JSON report lacks latency_ms.{q}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closed_loop_for_a_bounded_count() {
    let server = server().await;
    let cfg = config(server.addr, Mode::Closed { concurrency: 3 }, Stop::Requests(25), payloads(8, 3));
    let r = bench::run(cfg).await.unwrap();
    assert_eq!(r.requests, 25);
    assert_counts_add_up(&r);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_keeps_the_asked_rate() {
    let server = server().await;
    let cfg = config(server.addr, Mode::Open { rate: 100.0 }, Stop::Duration(Duration::from_secs(1)), payloads(4, 4));
    let r = bench::run(cfg).await.unwrap();
    assert_counts_add_up(&r);
    assert_eq!(r.requested_rate, Some(100.0));
    assert!((95..=105).contains(&(r.requests + r.dropped)), "{} sent", r.requests + r.dropped);
    assert!((r.send_rate - 100.0).abs() < 5.0, "{}", r.send_rate);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_loop_past_capacity_reports_the_asked_rate_and_rising_latency() {
    // No shedding here (neither at admission, by count or by bytes, nor at
    // the extraction queue): every request waits its turn, so the backlog
    // shows.
    let mut args = Args::for_tests();
    args.max_concurrency = 100_000;
    args.max_in_flight_bytes = 1 << 40;
    args.max_queue = 100_000;
    args.request_timeout = Duration::from_secs(30);
    let server = server_with(args).await;
    let heavy = payloads(1024, 2);
    // Measure what the server sustains, then ask for three times that.
    let probe = bench::run(config(
        server.addr,
        Mode::Closed { concurrency: 2 },
        Stop::Duration(Duration::from_millis(800)),
        heavy.clone(),
    ))
    .await
    .unwrap();
    let rate = (probe.throughput * 3.0).max(30.0);
    let mut cfg = config(server.addr, Mode::Open { rate }, Stop::Duration(Duration::from_millis(2000)), heavy);
    cfg.warmup = Duration::ZERO;
    let r = bench::run(cfg).await.unwrap();
    assert_counts_add_up(&r);
    let sent = (r.requests + r.dropped) as f64;
    assert!((sent - rate * 2.0).abs() <= rate * 0.1 + 2.0, "asked {rate}/s for 2 s, sent {sent}");
    assert!((r.send_rate - rate).abs() <= rate * 0.1, "send rate {} vs asked {rate}", r.send_rate);
    assert!(r.throughput < r.send_rate, "the server cannot keep up: {} vs {}", r.throughput, r.send_rate);
    // The backlog shows as latency: far above what the same server answers in
    // when it keeps up (the closed-loop probe).
    assert!(r.latency_ms.p50 > 3.0 * probe.latency_ms.p50, "open {:?} vs probe {:?}", r.latency_ms, probe.latency_ms);
    assert_eq!(r.status.get("OK").copied(), Some(r.requests), "{:?}", r.status);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_counted_by_status() {
    let server = server().await;
    let mut cfg = config(server.addr, Mode::Closed { concurrency: 2 }, Stop::Requests(12), payloads(2, 2));
    cfg.model = "no-such-model".into();
    let r = bench::run(cfg).await.unwrap();
    assert_counts_add_up_errors(&r);
    assert_eq!(r.status.get("NOT_FOUND").copied(), Some(12), "{:?}", r.status);
    assert_eq!(r.error_samples, [r#"NotFound: model "no-such-model" is not loaded; loaded models: default"#]);
}

fn assert_counts_add_up_errors(r: &Report) {
    assert_eq!(r.status.values().sum::<u64>(), r.requests);
    assert_eq!(r.response_bytes, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_client_views() {
    let server = server().await;
    let mut client = FexClient::connect(&ConnectOptions::plain(server.addr.to_string())).await.unwrap();
    let batch = payloads(3, 1).remove(0);
    let extraction = client.extract_bytes("default", batch.clone()).await.unwrap();
    assert_eq!(extraction.batch_size(), 3);
    let direct = fex::extract_batch(&fex::Plan::default_model(), &batch).unwrap();
    let TensorView::Ragged { row_splits, values: Values::I64(ids), .. } = extraction.get("item_id").unwrap() else {
        panic!()
    };
    assert_eq!(row_splits, direct.tensor("item_id").unwrap().splits());
    assert_eq!(ids, direct.tensor("item_id").unwrap().i64s());
    let TensorView::Dense { shape, values: Values::F32(emb) } = extraction.get("item_embedding").unwrap() else {
        panic!()
    };
    assert_eq!((shape, emb.len()), (vec![3, 16], 48));
    let TensorView::Strings(titles) = extraction.get("item_title").unwrap() else { panic!() };
    assert_eq!(titles.len(), 3);
    assert_eq!(client.list_models().await.unwrap()[0].name, "default");
    assert_eq!(client.describe("default").await.unwrap().outputs.len(), 22);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_gen_then_replay_with_json_report() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("requests.bin");
    let bin = env!("CARGO_BIN_EXE_fex-client");
    let generated = std::process::Command::new(bin)
        .args(["gen", "--count", "5", "--batch-size", "8", "--out", file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(generated.status.success(), "{}", String::from_utf8_lossy(&generated.stderr));
    assert_eq!(fex_client::frames::read_file(&file).unwrap().len(), 5);
    let addr = server.addr.to_string();
    let out = tokio::task::spawn_blocking(move || {
        std::process::Command::new(bin)
            .args(["bench", "--addr", &addr, "--file", file.to_str().unwrap(), "--requests", "20", "--warmup", "0s"])
            .args(["--concurrency", "2", "--output", "json", "--no-progress"])
            .output()
            .unwrap()
    })
    .await
    .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["requests"], 20);
    assert_eq!(report["status"]["OK"], 20);
    assert_eq!(report["mode"], "closed");
}
