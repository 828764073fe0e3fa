//! The fex-server binary as an operator runs it: flags, JSON logs, signals
//! (SIGHUP reload, SIGTERM drain), exit codes, and /metrics over HTTP.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};

use common::*;
use fex::proto::fex_v1::ListModelsRequest;
use prost::Message;

const BIN: &str = env!("CARGO_BIN_EXE_fex-server");

/// A running fex-server process; killed on drop if still alive.
struct Process {
    child: Child,
    addr: SocketAddr,
    metrics: SocketAddr,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn(extra: &[&str]) -> Process {
    spawn_with_env(extra, &[])
}

/// `spawn` with environment variables; the allocator's own are cleared
/// first, so a test sees fex-server's defaults whatever CI's environment.
fn spawn_with_env(extra: &[&str], env: &[(&str, &str)]) -> Process {
    let mut child = Command::new(BIN)
        .env_remove("MIMALLOC_PURGE_DELAY")
        .envs(env.iter().copied())
        .args([
            "--listen-addr",
            "127.0.0.1:0",
            "--metrics-addr",
            "127.0.0.1:0",
            "--log-format",
            "json",
            "--reload-interval",
            "0s",
        ])
        .args(extra)
        .stderr(Stdio::piped())
        .spawn()
        .expect("fex-server starts");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    // The "listening" log line carries both bound addresses.
    let (addr, metrics) = loop {
        let line = lines.next().expect("log line before exit").unwrap();
        let log: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        if log["fields"]["message"] == "fex-server listening" {
            let addr = log["fields"]["addr"].as_str().unwrap().parse().unwrap();
            // Plain addresses, not `Some(...)`; "off" for a disabled listener.
            let metrics = log["fields"]["metrics"].as_str().unwrap().parse().unwrap();
            assert_eq!(log["fields"]["health"], "off", "{line}");
            break (addr, metrics);
        }
    };
    // Keep draining stderr so the server never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Process { child, addr, metrics }
}

fn signal(p: &Process, name: &str) {
    let status = Command::new("kill").args([&format!("-{name}"), &p.child.id().to_string()]).status().unwrap();
    assert!(status.success());
}

/// `fex_in_flight_requests` as /metrics reports it.
fn in_flight(metrics: SocketAddr) -> i64 {
    let page = http_get(metrics, "/metrics");
    let line = page.lines().find(|l| l.starts_with("fex_in_flight_requests ")).expect("in-flight gauge");
    line["fex_in_flight_requests ".len()..].trim().parse().unwrap()
}

fn http_get(addr: SocketAddr, path: &str) -> String {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: fex\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    response
}

/// Every admitted call is answered after SIGTERM: three calls hold their
/// uploads open, the server is told to stop, then the uploads finish and all
/// three go through the one extraction thread during the drain.
#[tokio::test]
async fn sigterm_drains_every_admitted_call_then_exits_0() {
    let hold = format!("{}s", HOLD_TIMEOUT.as_secs());
    let flags = ["--max-concurrency", "3", "--extract-threads", "1", "--max-queue", "4"];
    let mut p = spawn(&[&flags[..], &["--request-timeout", &hold, "--drain-timeout", "60s"]].concat());
    wait_serving(p.addr).await;
    let request = extract_request("default", sample_batch(4));
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(HeldCall::open(p.addr, &request, None).await);
    }
    wait_in_flight(3, || in_flight(p.metrics)).await;
    signal(&p, "TERM");
    let answers = futures_util::future::join_all(held.into_iter().map(HeldCall::finish)).await;
    for (code, message) in answers {
        assert_eq!(code, "0", "every admitted call completes: {message}");
    }
    // Wait without blocking the runtime: the server's graceful HTTP/2 close
    // pings its clients, and their connection tasks run on this runtime.
    let mut status = None;
    let exited = || {
        status = p.child.try_wait().unwrap();
        status.is_some()
    };
    wait_until(exited, || "fex-server did not exit after SIGTERM".into()).await;
    assert_eq!(status.and_then(|s| s.code()), Some(0));
}

#[tokio::test]
async fn sighup_reloads_and_metrics_are_served_over_http() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("m.yaml");
    std::fs::write(&file, "name: m\nversion: \"1\"\nfeatures:\n  - {name: item_id, kind: sparse}\n").unwrap();
    let p = spawn(&["--models", dir.path().to_str().unwrap()]);
    wait_serving(p.addr).await;
    std::fs::write(&file, "name: m\nversion: \"2\"\nfeatures:\n  - {name: item_id, kind: sparse}\n").unwrap();
    signal(&p, "HUP");
    let mut c = client(p.addr).await;
    let mut version = String::new();
    for _ in 0..500 {
        version = c.list_models(ListModelsRequest {}).await.unwrap().into_inner().models[0].version.clone();
        if version == "2" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(version, "2");
    c.extract(extract_request("m", sample_batch(3))).await.unwrap();
    let metrics = http_get(p.metrics, "/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200"), "{metrics}");
    assert!(has_line(&metrics, r#"fex_reloads_total{result="ok"} 1"#), "{metrics}");
    assert!(has_line(&metrics, r#"fex_rows_total{model="m"} 3"#), "{metrics}");
    assert!(metrics.contains("fex_request_duration_seconds_bucket"), "{metrics}");
}

#[test]
fn check_config_lists_every_error_and_exits_64() {
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/config");
    let out = Command::new(BIN).args(["--models", fixtures, "--check-config"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("bad_many.yaml: 4 errors in model config"), "{stderr}");
    assert!(stderr.contains(r#"features.item_tags.kind: unknown feature kind "sprase""#), "{stderr}");

    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    let out = Command::new(BIN).args(["--models", models, "--check-config"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(stdout.contains(&format!("default: ok (version 1, 22 outputs, {models}/default.yaml)\n")), "{stdout}");
}

/// Issue 11, items 6 and 7: `--models` may name one file; when a file fails,
/// the ones that passed are listed too; the output count is the outputs a
/// caller gets (models/ranking_ops.yaml has 33 features, 22 of them outputs).
#[test]
fn check_config_takes_one_file_and_lists_what_passed() {
    let models = concat!(env!("CARGO_MANIFEST_DIR"), "/../models");
    let file = format!("{models}/ranking_ops.yaml");
    let out = Command::new(BIN).args(["--models", &file, "--check-config"]).output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let (head, tail) = ("ranking_ops: ok (version 1+files.", format!(", 22 outputs, {file})\n"));
    assert!(stdout.starts_with(head) && stdout.ends_with(&tail) && stdout.lines().count() == 1, "{stdout}");

    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("a.yaml"), "name: a\nfeatures:\n  - {name: item_id, kind: sparse}\n").unwrap();
    std::fs::write(dir.path().join("b.yaml"), "name: b\nfeatures:\n  - {name: item_id, kind: sprase}\n").unwrap();
    let out = Command::new(BIN).args(["--check-config", "--models"]).arg(dir.path()).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    let (stdout, stderr) = (String::from_utf8(out.stdout).unwrap(), String::from_utf8(out.stderr).unwrap());
    assert!(stdout.starts_with("a: ok (") && stdout.contains("a.yaml)"), "{stdout}");
    assert!(stderr.contains("b.yaml: ") && stderr.contains(r#"unknown feature kind "sprase""#), "{stderr}");
    assert!(!stderr.contains("a.yaml"), "{stderr}");

    let out = Command::new(BIN).args(["--check-config", "--models", "/nonexistent/models.yaml"]).output().unwrap();
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("/nonexistent/models.yaml: cannot read: No such file or directory"), "{stderr}");
}

/// Issue 13, item 6: a --request-log directory that cannot be written is a
/// bad configuration, refused before anything binds.
#[test]
fn an_unwritable_request_log_directory_exits_64() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, b"x").unwrap();
    let out = Command::new(BIN)
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--request-log"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(64));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains(&format!("--request-log {}: not a writable directory", file.display())), "{stderr}");
    let out = Command::new(BIN)
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--request-log-sample", "2", "--request-log"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "a bad flag value is clap's usage error");
}

/// Issue 11, item 12: text logs redirected to a file or a pipe carry no ANSI
/// colour codes.
#[test]
fn text_logs_are_plain_when_not_on_a_terminal() {
    let mut child = Command::new(BIN)
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "off", "--log-format", "text"])
        .stderr(Stdio::piped())
        .spawn()
        .expect("fex-server starts");
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let line = lines.map(|l| l.unwrap()).find(|l| l.contains("fex-server listening"));
    let _ = child.kill();
    let _ = child.wait();
    let line = line.expect("a listening line");
    assert!(!line.contains('\x1b'), "{line:?}");
    assert!(line.contains("metrics=off health=off models=default"), "{line:?}");
}

#[test]
fn help_documents_flags_and_environment() {
    let out = Command::new(BIN).arg("--help").output().unwrap();
    let help = String::from_utf8(out.stdout).unwrap();
    for flag in [
        "--listen-addr",
        "FEX_LISTEN_ADDR",
        "--metrics-addr",
        "--models",
        "--max-request-bytes",
        "--max-concurrency",
        "--max-in-flight-bytes",
        "FEX_MAX_IN_FLIGHT_BYTES",
        "--prefault-heap-bytes",
        "FEX_PREFAULT_HEAP_BYTES",
        "--extract-threads",
        "FEX_EXTRACT_THREADS",
        "--io-threads",
        "--max-queue",
        "FEX_MAX_QUEUE",
        "--http2-stream-window",
        "--http2-connection-window",
        "--http2-max-frame-size",
        "--request-timeout",
        "--drain-timeout",
        "--tls-cert",
        "--tls-client-ca",
        "--log-format",
        "--check-config",
        "--request-log",
        "FEX_REQUEST_LOG_SAMPLE",
        "FEX_REQUEST_LOG_MAX_FILE_BYTES",
        "FEX_REQUEST_LOG_MAX_AGE",
        "FEX_REQUEST_LOG_MAX_TOTAL_BYTES",
    ] {
        assert!(help.contains(flag), "--help lacks {flag}");
    }
}

/// A request budget below the largest request would refuse such a request
/// forever: the server refuses the flags instead, naming both.
#[test]
fn an_in_flight_budget_below_the_request_limit_is_refused_at_start() {
    let out = Command::new(BIN)
        .args(["--listen-addr", "127.0.0.1:0", "--metrics-addr", "off"])
        .args(["--max-request-bytes", "2000", "--max-in-flight-bytes", "1000"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--max-in-flight-bytes 1000 is below --max-request-bytes 2000"), "{stderr}");
}

/// Anonymous memory resident in a process, in bytes (/proc/PID/status).
fn rss_anon(p: &Process) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", p.child.id())).unwrap();
    let line = status.lines().find(|l| l.starts_with("RssAnon:")).expect("RssAnon line");
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// Anonymous memory a server grows by while it answers 8 rounds of 64
/// concurrent calls of 4,096 rows (about 250 KB each, and their responses).
async fn growth_under_calls(p: &Process) -> u64 {
    wait_serving(p.addr).await;
    let request = extract_request("default", sample_batch(4096));
    assert!(request.encoded_len() > 200_000, "{} bytes", request.encoded_len());
    let before = rss_anon(p);
    let c = client(p.addr).await;
    for _ in 0..8 {
        let calls = (0..64).map(|_| {
            let mut c = c.clone();
            let request = request.clone();
            async move { c.extract(request).await.map(|_| ()) }
        });
        for answer in futures_util::future::join_all(calls).await {
            answer.unwrap();
        }
    }
    rss_anon(p).saturating_sub(before)
}

/// The heap touched at start is resident before the first call, and the
/// calls' buffers are carved from it rather than faulted in anew (issue 27:
/// a cold server's faults under its first calls built a backlog that shed).
/// A server without it is the control: the same calls grow its heap.
#[tokio::test]
async fn the_prefaulted_heap_is_resident_at_start_and_serves_the_calls() {
    const MIB: u64 = 1 << 20;
    // The calls are about memory, not time: 64 at once on one extraction
    // thread may queue past the default 1 s deadline on a loaded host.
    let limits = ["--max-request-bytes", "4194304", "--extract-threads", "1", "--request-timeout", "60s"];
    let cold = spawn(&[&limits[..], &["--prefault-heap-bytes", "0"]].concat());
    let grown_cold = growth_under_calls(&cold).await;
    drop(cold);
    let warm = spawn(&[&limits[..], &["--prefault-heap-bytes", &(128 * MIB).to_string()]].concat());
    assert!(rss_anon(&warm) >= 128 * MIB, "{} bytes resident at start", rss_anon(&warm));
    let grown_warm = growth_under_calls(&warm).await;
    eprintln!("anonymous memory grown under the calls: {grown_cold} bytes cold, {grown_warm} prefaulted");
    assert!(grown_cold >= 16 * MIB, "the control grew by only {grown_cold} bytes: the calls are too small to tell");
    assert!(
        grown_warm <= grown_cold / 4,
        "the prefaulted server grew by {grown_warm} bytes under the calls, the control by {grown_cold}"
    );
}

/// With purging turned back on the heap would be purged again, so it is not
/// touched at all (the server says so in a warning).
#[tokio::test]
async fn the_heap_is_not_prefaulted_when_purging_is_back_on() {
    let p = spawn_with_env(&["--prefault-heap-bytes", "134217728"], &[("MIMALLOC_PURGE_DELAY", "1000")]);
    wait_serving(p.addr).await;
    assert!(rss_anon(&p) < 64 << 20, "{} bytes resident at start", rss_anon(&p));
}
