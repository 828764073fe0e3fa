//! The extraction pool in a real server on 127.0.0.1:0: deadlines that pass
//! in the queue, health beside busy extraction threads, a full queue, and the
//! drain. The pool's only thread is held by a job of the test's own, submitted
//! through the pool's public API (`Server::pool`), so "busy" is a state the
//! test controls rather than a race against a slow request.

mod common;

use std::sync::mpsc;

use common::*;
use fex_server::args::Args;
use fex_server::pool::Refused;
use fex_server::serve::Server;
use prost::Message;
use tonic::Code;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

/// A server with one extraction thread and room for `max_queue` waiting jobs.
async fn one_thread(max_queue: usize) -> Server {
    let mut args = Args::for_tests();
    args.extract_threads = Some(1);
    args.max_queue = max_queue;
    args.request_timeout = HOLD_TIMEOUT;
    start(args).await
}

/// Holds the pool's only thread until the sender is used or dropped; returns
/// once the job is running.
struct Busy {
    release: mpsc::Sender<()>,
    job: std::pin::Pin<Box<dyn Future<Output = Result<(), Refused>> + Send>>,
}

impl Busy {
    async fn hold(server: &Server) -> Busy {
        let (release, hold) = mpsc::channel::<()>();
        let job = server
            .pool
            .run(None, move |_| {
                let _ = hold.recv();
            })
            .expect("the pool takes the job");
        let metrics = &server.metrics;
        wait_until(|| metrics.pool_busy.get() == 1, || "the holding job never started".into()).await;
        Busy { release, job: Box::pin(job) }
    }

    async fn release(self) {
        self.release.send(()).unwrap();
        self.job.await.unwrap();
    }
}

async fn wait_queued(server: &Server, n: i64) {
    let depth = || server.metrics.queue_depth.get();
    wait_until(|| depth() == n, || format!("queue depth {}, expected {n}", depth())).await;
}

fn spawn_extract(server: &Server) -> tokio::task::JoinHandle<Result<i32, tonic::Status>> {
    let addr = server.addr;
    tokio::spawn(async move {
        let response = client(addr).await.extract(extract_request("default", sample_batch(16))).await?;
        Ok(response.into_inner().batch_size)
    })
}

#[tokio::test]
async fn a_call_whose_deadline_passes_in_the_queue_is_deadline_exceeded_and_never_runs() {
    let server = one_thread(4).await;
    let busy = Busy::hold(&server).await;
    // Raw HTTP/2, so the status is the server's (tonic's client would time
    // the call out itself, as CANCELLED).
    let body = grpc_frame(&extract_request("default", sample_batch(16)).encode_to_vec());
    let (code, message) = raw_extract(server.addr, &[("grpc-timeout", "50m")], body).await;
    assert_eq!(code, "4", "DEADLINE_EXCEEDED: {message}");
    assert!(message.contains("50ms"), "{message}");
    busy.release().await;
    // The thread takes the expired job after the holding one and drops it.
    let page = || server.metrics.render();
    let expired = r#"fex_pool_jobs_total{outcome="expired"} 1"#;
    wait_until(|| has_line(&page(), expired), || format!("missing {expired}: {}", page())).await;
    let page = page();
    assert!(has_line(&page, r#"fex_pool_jobs_total{outcome="ran"} 1"#), "only the holding job ran: {page}");
    assert!(!page.contains("fex_rows_total{"), "nothing was extracted: {page}");
    assert!(
        has_line(&page, r#"fex_requests_total{method="Extract",model="default",code="DeadlineExceeded"} 1"#),
        "{page}"
    );
    // The queue wait was observed, and the thread is free again.
    assert!(has_line(&page, "fex_queue_wait_seconds_count 2"), "{page}");
    let mut c = client(server.addr).await;
    assert_eq!(c.extract(extract_request("default", sample_batch(3))).await.unwrap().into_inner().batch_size, 3);
}

#[tokio::test]
async fn busy_extraction_threads_do_not_delay_health_checks() {
    let server = one_thread(4).await;
    let busy = Busy::hold(&server).await;
    let queued = spawn_extract(&server);
    wait_queued(&server, 1).await;
    // Every extraction thread is busy and a call waits; health still answers
    // (bounded, so a regression fails instead of hanging).
    let mut health = HealthClient::new(channel(server.addr).await);
    let check = health.check(HealthCheckRequest { service: "fex.v1.FeatureExtractor".into() });
    let answer = tokio::time::timeout(HOLD_TIMEOUT, check).await.expect("health answers while extraction is busy");
    assert_eq!(answer.unwrap().into_inner().status, ServingStatus::Serving as i32);
    assert_eq!(server.metrics.queue_depth.get(), 1, "the extract call was still waiting");
    let page = server.metrics.render();
    assert!(has_line(&page, "fex_pool_busy_threads 1"), "{page}");
    assert!(has_line(&page, "fex_pool_threads 1"), "{page}");
    busy.release().await;
    assert_eq!(queued.await.unwrap().unwrap(), 16);
}

#[tokio::test]
async fn a_full_queue_sheds_with_resource_exhausted_while_admitted_calls_finish() {
    let server = one_thread(1).await;
    let busy = Busy::hold(&server).await;
    let queued = spawn_extract(&server);
    wait_queued(&server, 1).await;
    let status = client(server.addr).await.extract(extract_request("default", sample_batch(4))).await.unwrap_err();
    assert_eq!(status.code(), Code::ResourceExhausted);
    assert!(status.message().contains("1 calls are queued (--max-queue)"), "{}", status.message());
    busy.release().await;
    assert_eq!(queued.await.unwrap().unwrap(), 16, "the queued call finishes");
    let page = server.metrics.render();
    assert!(has_line(&page, "fex_shed_total 1"), "{page}");
    assert!(
        has_line(&page, r#"fex_requests_total{method="Extract",model="default",code="ResourceExhausted"} 1"#),
        "{page}"
    );
    assert!(has_line(&page, r#"fex_requests_total{method="Extract",model="default",code="Ok"} 1"#), "{page}");
}

#[tokio::test]
async fn shutdown_drains_queued_calls() {
    let server = one_thread(4).await;
    let busy = Busy::hold(&server).await;
    let calls: Vec<_> = (0..3).map(|_| spawn_extract(&server)).collect();
    wait_queued(&server, 3).await;
    server.shutdown();
    busy.release().await;
    for call in calls {
        assert_eq!(call.await.unwrap().unwrap(), 16, "every admitted call is answered");
    }
    server.wait().await.unwrap();
}
