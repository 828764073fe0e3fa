//! `fex-client bench` when calls fail (issue 11, item 8): OK throughput and
//! error rate reported apart, and a server that goes away mid-run (a clean
//! drain, then nothing listening) is backed off from, named in the report, and
//! stops the run with a non-zero exit. Real server on loopback, bounded runs.

mod common;

use common::{cli, payloads, server, wait_until};
use fex_server::metrics::Metrics;

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

/// Half the replayed records are valid ExampleBatches, half are garbage the
/// server answers INVALID_ARGUMENT: "throughput" used to count both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn report_separates_ok_throughput_and_error_rate() {
    let server = server().await;
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mixed.bin");
    let mut out = Vec::new();
    for valid in payloads(4, 2) {
        fex_client::frames::write_record(&mut out, &valid).unwrap();
        fex_client::frames::write_record(&mut out, &[0xff; 12]).unwrap();
    }
    std::fs::write(&file, out).unwrap();
    let base = args(&["bench", "--addr", &server.addr.to_string(), "--file", file.to_str().unwrap()]);
    let run = |output: &str| {
        let mut a = base.clone();
        a.extend(args(&[
            "--requests",
            "40",
            "--warmup",
            "0s",
            "--concurrency",
            "1",
            "--no-progress",
            "--output",
            output,
        ]));
        cli(a)
    };

    let json = run("json").await;
    assert!(json.status.success(), "{}", String::from_utf8_lossy(&json.stderr));
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!((r["requests"].as_u64(), r["ok"].as_u64(), r["errors"].as_u64()), (Some(40), Some(20), Some(20)));
    assert_eq!(r["status"]["INVALID_ARGUMENT"], 20);
    assert_eq!(r["error_rate"], 0.5);
    let (ok_rate, all_rate) = (r["throughput"].as_f64().unwrap(), r["answer_rate"].as_f64().unwrap());
    assert!(
        (ok_rate * 2.0 - all_rate).abs() <= all_rate * 1e-9,
        "throughput {ok_rate} counts OK answers only, of {all_rate}"
    );

    let text = run("text").await;
    assert!(text.status.success(), "{}", String::from_utf8_lossy(&text.stderr));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("\nerrors     20 (50.00%)\n"), "{text}");
    assert!(text.contains(" /s OK\n") && text.contains(" /s (any status)\n"), "{text}");
}

/// The server drains and exits under a closed-loop run. Calls issued during
/// the drain used to be reported CANCELLED "operation was canceled" or
/// INTERNAL "h2 protocol error", and then the client retried the dead address
/// without pause (about 45,000 UNAVAILABLE a second) until --duration ran out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_goes_away_is_backed_off_from_and_reported_gone() {
    let server = server().await;
    let a = args(&[
        "bench",
        "--addr",
        &server.addr.to_string(),
        "--concurrency",
        "4",
        "--duration",
        "60s",
        "--warmup",
        "0s",
        "--batch-size",
        "4",
        "--gone-after",
        "1s",
        "--no-progress",
        "--output",
        "json",
    ]);
    let run = tokio::spawn(cli(a));
    // Wait until the run is under way: the server has extracted rows.
    let rows = || server.metrics.rows.get_or_create(&Metrics::model("default")).get();
    wait_until(|| rows() >= 40, || format!("{} rows served", rows())).await;
    server.shutdown();
    server.wait().await.unwrap();

    // The run ends by itself long before --duration; bounded all the same.
    let out = tokio::time::timeout(std::time::Duration::from_secs(50), run).await.expect("bench stopped").unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(stderr.contains("the run stopped early: the server is gone: no answer for"), "{stderr}");
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["server_gone"].as_str().unwrap().contains("connection refused"), "{r:#}");
    let status = r["status"].as_object().unwrap();
    assert!(status["OK"].as_u64().unwrap() > 0, "{status:?}");
    // Every failure is the server going away, said as such: no CANCELLED or
    // INTERNAL from a drain, and few calls: each failure doubles the pause.
    let unavailable = status["UNAVAILABLE"].as_u64().unwrap();
    assert_eq!(status.len(), 2, "only OK and UNAVAILABLE: {status:?}");
    assert!(unavailable < 500, "{unavailable} calls to a dead server in about a second");
    let samples: Vec<&str> = r["error_samples"].as_array().unwrap().iter().map(|s| s.as_str().unwrap()).collect();
    assert!(samples.iter().all(|s| s.starts_with("Unavailable: the server went away: ")), "{samples:?}");
    assert!(samples.contains(&"Unavailable: the server went away: connection refused"), "{samples:?}");
}
