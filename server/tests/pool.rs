//! The extraction pool in a real server on 127.0.0.1:0: deadlines that pass
//! in the queue, health beside busy extraction threads, a full queue, and the
//! drain. The pool's only thread is held by a job of the test's own, submitted
//! through the pool's public API (`Server::pool`), so "busy" is a state the
//! test controls rather than a race against a slow request.

mod common;

use std::sync::mpsc;

use common::*;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use fex_server::args::Args;
use fex_server::codec::ExtractCall;
use fex_server::layers::CallDeadline;
use fex_server::pool::Refused;
use fex_server::serve::Server;
use fex_server::service::ExtractorService;
use fex_server::stub::feature_extractor_server::FeatureExtractor;
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
    let len = (body.len() - 5) as i64;
    let (code, message) = raw_extract(server.addr, &[("grpc-timeout", "50m")], body).await;
    assert_eq!(code, "4", "DEADLINE_EXCEEDED: {message}");
    assert!(message.contains("50ms"), "{message}");
    // The call is answered, but its job still holds the payload in the
    // queue: its bytes stay in --max-in-flight-bytes until the job goes.
    let held = || server.metrics.in_flight_request_bytes.get();
    assert_eq!(held(), len, "the queued job's request bytes are still counted");
    busy.release().await;
    // The thread takes the expired job after the holding one and drops it.
    let page = || server.metrics.render();
    let expired = r#"fex_pool_jobs_total{outcome="expired"} 1"#;
    wait_until(|| has_line(&page(), expired), || format!("missing {expired}: {}", page())).await;
    wait_in_flight(0, held).await;
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

/// The deadline layer's timer has a millisecond's grain, so a result can come
/// back just after the deadline and before the timer fires; the service
/// itself must then answer DEADLINE_EXCEEDED. The test calls the service
/// below the layers and holds its future, polling it by hand: once to queue
/// the job behind a held thread, and again only after the job has run
/// (before the deadline) and the deadline has passed, which is exactly the
/// late result, with no race.
#[tokio::test]
async fn a_result_completed_after_the_deadline_is_deadline_exceeded_not_ok() {
    let server = one_thread(4).await;
    let busy = Busy::hold(&server).await;
    let service = ExtractorService {
        registry: Arc::clone(&server.registry),
        metrics: Arc::clone(&server.metrics),
        pool: Arc::clone(&server.pool),
        max_response_bytes: usize::MAX,
        request_log: None,
        upstreams: Default::default(),
    };
    let budget = Duration::from_secs(1);
    let at = Instant::now() + budget;
    let message = extract_request("default", sample_batch(16));
    let bytes = message.encode_to_vec().into();
    let mut request = tonic::Request::new(ExtractCall { request: message, bytes });
    request.extensions_mut().insert(CallDeadline { at, budget });
    let mut call = std::pin::pin!(service.extract(request));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(call.as_mut().poll(&mut cx).is_pending(), "the call waits for the pool");
    wait_queued(&server, 1).await;
    busy.release().await;
    // Not polling the call: the service cannot see the result yet.
    let ran = || has_line(&server.metrics.render(), r#"fex_pool_jobs_total{outcome="ran"} 2"#);
    while !ran() {
        assert!(Instant::now() < at, "the job should have run well inside its 1 s budget");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::thread::sleep(at.saturating_duration_since(Instant::now()) + Duration::from_millis(1));
    let Poll::Ready(answer) = call.as_mut().poll(&mut cx) else { panic!("the job's result was sent") };
    let status = match answer {
        Ok(late) => panic!("a result after the deadline was answered OK ({} rows)", late.get_ref().batch_size),
        Err(status) => status,
    };
    assert_eq!(status.code(), Code::DeadlineExceeded, "{status:?}");
    assert!(status.message().contains("1s"), "{}", status.message());
    let page = server.metrics.render();
    assert!(!page.contains("fex_rows_total{"), "the late result was not counted as answered: {page}");
    assert!(has_line(&page, "fex_deadline_exceeded_total 1"), "{page}");
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
