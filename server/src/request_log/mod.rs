//! The request log: sampled Extract requests kept for `fex replay` and the
//! near-line join, off the request path, in files (`--request-log`,
//! `files.rs`), a Kafka topic (`--request-log-kafka`, `kafka.rs`), or both.
//! A call that is sampled hands the request message's bytes as they arrived
//! (shared `Bytes`; unknown fields kept) to a bounded queue with `try_send`;
//! one writer thread encodes each `fex.v1.LoggedRequest` once and gives the
//! same bytes to each destination. When the queue is full the record is
//! dropped and counted (`fex_request_log_dropped_total`, once per
//! destination); a call never waits for the log.

mod files;
mod kafka;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fex::Plan;
use fex::proto::fex_v1::LoggedRequest;
use prost::Message;

pub use self::files::{FileOptions, Files, is_log_file};
pub use self::kafka::{FLUSH_TIMEOUT, Kafka, KafkaOptions, PROBE_TIMEOUT};
use crate::args::Args;
use crate::metrics::Metrics;
use crate::registry::Model;

/// A request log that cannot start.
#[derive(Debug, thiserror::Error)]
pub enum RequestLogError {
    /// A bad --request-log directory or limits that contradict each other.
    #[error("--request-log {dir}: {message}")]
    Files { dir: PathBuf, message: String },
    /// Kafka settings the brokers refuse (a topic they do not have).
    #[error("--request-log-kafka {brokers}: {message}")]
    Kafka { brokers: String, message: String },
    /// No broker answered the metadata probe in time.
    #[error(
        "--request-log-kafka {brokers}: no broker answered within {waited:?} ({why}); \
         check the addresses and that Kafka runs there"
    )]
    Unreachable { brokers: String, waited: Duration, why: String },
}

impl RequestLogError {
    /// The process's exit code: 69 (EX_UNAVAILABLE) when the brokers did not
    /// answer, 64 (EX_USAGE, a bad configuration) otherwise.
    pub fn exit_code(&self) -> u8 {
        match self {
            RequestLogError::Unreachable { .. } => 69,
            RequestLogError::Files { .. } | RequestLogError::Kafka { .. } => 64,
        }
    }
}

/// Where and how much to log.
#[derive(Debug, Clone)]
pub struct LogOptions {
    pub files: Option<FileOptions>,
    pub kafka: Option<KafkaOptions>,
    /// Fraction of requests logged, 0 to 1.
    pub sample: f64,
    /// Records waiting for the writer before more are dropped.
    pub queue: usize,
}

impl LogOptions {
    /// The flags' settings, if --request-log or --request-log-kafka is given.
    pub fn from_args(args: &Args) -> Option<Self> {
        let files = args.request_log.clone().map(|dir| FileOptions {
            dir,
            max_file_bytes: args.request_log_max_file_bytes,
            max_age: args.request_log_max_age,
            max_total_bytes: args.request_log_max_total_bytes,
        });
        let kafka = args.request_log_kafka.clone().map(|brokers| KafkaOptions {
            brokers,
            topic: args.request_log_kafka_topic.clone(),
            queue: args.request_log_queue,
            max_message_bytes: args.max_request_bytes.saturating_add(64 << 10),
        });
        if files.is_none() && kafka.is_none() {
            return None;
        }
        Some(Self { files, kafka, sample: args.request_log_sample, queue: args.request_log_queue })
    }
}

/// One answered call, waiting to be written.
pub struct Pending {
    /// The fex.v1.ExtractRequest message, byte for byte as received.
    pub request: Bytes,
    /// The model that answered: its name, version and digest are logged,
    /// and its `label_join:` section reads the Kafka message's key.
    pub model: Arc<Model>,
    pub request_id: String,
}

enum Msg {
    Record(Box<Pending>, i64),
    /// Everything sent before it is written, its file closed and its
    /// messages flushed (bounded); then the sender is told.
    Sync(mpsc::Sender<()>),
}

/// The log's handle, shared by the service.
pub struct RequestLog {
    tx: SyncSender<Msg>,
    /// Sampled when a counter's mix falls below this (`u64::MAX` = all).
    threshold: u64,
    all: bool,
    calls: AtomicU64,
    ids: AtomicU64,
    id_prefix: String,
    gate: Arc<Mutex<()>>,
    /// Destinations: a record dropped before the writer is lost to each.
    sinks: u64,
    metrics: Arc<Metrics>,
}

impl RequestLog {
    /// Opens each destination (the directory: created if missing, must be
    /// writable; Kafka: the brokers must answer for the topic, within
    /// `PROBE_TIMEOUT`), then starts the writer thread. Blocks while Kafka
    /// is asked.
    pub fn start(options: LogOptions, metrics: Arc<Metrics>) -> Result<Arc<Self>, RequestLogError> {
        let files = match &options.files {
            Some(o) => Some(open_files(o)?),
            None => None,
        };
        let kafka = match &options.kafka {
            Some(o) => Some(Kafka::connect(o, Arc::clone(&metrics))?),
            None => None,
        };
        let (tx, rx) = mpsc::sync_channel(options.queue.max(1));
        let gate = Arc::new(Mutex::new(()));
        let sinks = options.files.is_some() as u64 + options.kafka.is_some() as u64;
        let writer = Writer { files, kafka, rx, gate: Arc::clone(&gate), metrics: Arc::clone(&metrics) };
        std::thread::Builder::new().name("fex-request-log".into()).spawn(move || writer.run()).map_err(|e| {
            let message = format!("cannot start the writer thread: {e}");
            match (options.files, options.kafka) {
                (Some(f), _) => RequestLogError::Files { dir: f.dir, message },
                (None, Some(k)) => RequestLogError::Kafka { brokers: k.brokers, message },
                (None, None) => RequestLogError::Files { dir: PathBuf::new(), message },
            }
        })?;
        let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
        Ok(Arc::new(Self {
            tx,
            threshold: (options.sample * u64::MAX as f64) as u64,
            all: options.sample >= 1.0,
            calls: AtomicU64::new(0),
            ids: AtomicU64::new(0),
            id_prefix: format!("{:x}-{:x}", std::process::id(), started),
            gate,
            sinks,
            metrics,
        }))
    }

    /// Whether this call is logged: every call at rate 1, none at 0, and in
    /// between a spread-out fraction of the calls (a mix of a counter).
    pub fn sampled(&self) -> bool {
        if self.all {
            return true;
        }
        let n = self.calls.fetch_add(1, Ordering::Relaxed);
        splitmix64(n) < self.threshold
    }

    /// An id for a call that brought none.
    pub fn next_id(&self) -> String {
        format!("{}-{}", self.id_prefix, self.ids.fetch_add(1, Ordering::Relaxed))
    }

    /// Queues a record without waiting: a full queue drops it (counted once
    /// per destination).
    pub fn offer(&self, pending: Pending) {
        let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
        match self.tx.try_send(Msg::Record(Box::new(pending), micros)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.metrics.request_log_dropped.inc_by(self.sinks);
            }
        }
    }

    /// Waits until every record queued before it is written and its file
    /// closed, under its final name, and its Kafka messages acknowledged
    /// (up to `FLUSH_TIMEOUT`; the rest are dropped) (at shutdown, and for
    /// tests); a later record opens a new file. Blocks: never call it on a
    /// call's path.
    pub fn sync(&self) {
        let (tx, rx) = mpsc::channel();
        if self.tx.send(Msg::Sync(tx)).is_ok() {
            let _ = rx.recv();
        }
    }

    /// Holds the writer before its next record while the guard lives (tests
    /// use it to fill the queue).
    pub fn pause(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The directory checked and the limits with it.
fn open_files(options: &FileOptions) -> Result<Files, RequestLogError> {
    let error = |message: String| RequestLogError::Files { dir: options.dir.clone(), message };
    if options.max_total_bytes < options.max_file_bytes {
        return Err(error(format!(
            "--request-log-max-total-bytes {} is less than --request-log-max-file-bytes {}",
            options.max_total_bytes, options.max_file_bytes
        )));
    }
    Files::open(options).map_err(|e| error(format!("not a writable directory: {e}")))
}

/// A stateless mix of a counter (splitmix64's finaliser), spread evenly over u64.
fn splitmix64(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The Kafka message's key: the user id the plan's `label_join:` section
/// reads from the record, if it has one and it reads (and is not empty).
fn user_key(plan: &Plan, record: &[u8]) -> Option<String> {
    plan.label_join()?;
    fex::nearline::request_keys(plan, record).ok().map(|k| k.user_id).filter(|id| !id.is_empty())
}

struct Writer {
    files: Option<Files>,
    kafka: Option<Kafka>,
    rx: Receiver<Msg>,
    gate: Arc<Mutex<()>>,
    metrics: Arc<Metrics>,
}

impl Writer {
    fn run(mut self) {
        let mut buf = Vec::new();
        loop {
            // Flush whenever the queue is empty, so the files are readable
            // between bursts.
            let msg = match self.rx.try_recv() {
                Ok(m) => m,
                Err(TryRecvError::Empty) => {
                    self.flush();
                    // An idle log still closes its file at its age.
                    let received = match self.files.as_ref().and_then(|f| f.until_old(Instant::now())) {
                        Some(wait) => self.rx.recv_timeout(wait),
                        None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
                    };
                    match received {
                        Ok(m) => m,
                        Err(RecvTimeoutError::Timeout) => {
                            self.close_if_old();
                            continue;
                        }
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
                Err(TryRecvError::Disconnected) => break,
            };
            match msg {
                Msg::Record(p, micros) => {
                    drop(self.gate.lock().unwrap_or_else(|e| e.into_inner()));
                    encode(&p, micros, &mut buf);
                    self.write(&buf);
                    if let Some(kafka) = &self.kafka {
                        kafka.send(&buf, user_key(&p.model.plan, &buf).as_deref());
                    }
                }
                Msg::Sync(done) => {
                    self.close();
                    if let Some(kafka) = &self.kafka {
                        kafka.flush();
                    }
                    let _ = done.send(());
                }
            }
        }
        self.close();
        if let Some(kafka) = &self.kafka {
            kafka.flush();
        }
    }

    fn write(&mut self, record: &[u8]) {
        let Some(files) = &mut self.files else { return };
        match files.write(record, Instant::now()) {
            Ok(()) => drop(self.metrics.request_log_records.inc()),
            Err(e) => {
                self.metrics.request_log_dropped.inc();
                tracing::warn!(error = %e, dir = %files.dir.display(), "request log write failed");
            }
        };
    }

    fn flush(&mut self) {
        let Some(files) = &mut self.files else { return };
        if let Err(e) = files.flush() {
            tracing::warn!(error = %e, dir = %files.dir.display(), "request log flush failed");
        }
    }

    fn close(&mut self) {
        let Some(files) = &mut self.files else { return };
        if let Err(e) = files.close() {
            tracing::warn!(error = %e, dir = %files.dir.display(), "request log close failed");
        }
    }

    fn close_if_old(&mut self) {
        if self.files.as_ref().and_then(|f| f.until_old(Instant::now())).is_some_and(|left| left.is_zero()) {
            self.close();
        }
    }
}

/// The record both destinations get, encoded once into `buf`.
fn encode(p: &Pending, micros: i64, buf: &mut Vec<u8>) {
    let record = LoggedRequest {
        request: p.request.to_vec(),
        model: p.model.plan.name.clone(),
        model_version: p.model.version.clone(),
        model_digest: p.model.plan.identity().digest,
        unix_micros: micros,
        request_id: p.request_id.clone(),
    };
    buf.clear();
    record.encode(buf).expect("a Vec grows");
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn options(dir: &Path, max_file: u64, max_total: u64, max_age: Duration) -> LogOptions {
        LogOptions {
            files: Some(FileOptions {
                dir: dir.to_path_buf(),
                max_file_bytes: max_file,
                max_age,
                max_total_bytes: max_total,
            }),
            kafka: None,
            sample: 1.0,
            queue: 4,
        }
    }

    /// The files in `dir` and their sizes, by name (the tests of `files` too).
    pub(super) fn on_disk(dir: &Path) -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().to_string_lossy().to_string(), e.metadata().unwrap().len()))
            .collect();
        files.sort();
        files
    }

    #[test]
    fn an_idle_log_closes_its_file_at_its_age() {
        let dir = tempfile::tempdir().unwrap();
        let log = RequestLog::start(options(dir.path(), 1 << 20, 1 << 30, Duration::from_millis(50)), Metrics::new())
            .unwrap();
        let pending = Pending {
            request: Bytes::from_static(b"\x0a\x01m"),
            model: Arc::new(Model::embedded_default()),
            request_id: "r".into(),
        };
        log.offer(pending);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !on_disk(dir.path()).iter().any(|(name, _)| is_log_file(name)) {
            assert!(Instant::now() < deadline, "no closed file: {:?}", on_disk(dir.path()));
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(on_disk(dir.path()).iter().all(|(name, _)| is_log_file(name)));
    }

    #[test]
    fn an_unwritable_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain-file");
        std::fs::write(&file, b"x").unwrap();
        let err = RequestLog::start(options(&file.join("sub"), 100, 200, Duration::ZERO), Metrics::new());
        let message = err.err().expect("a file is no directory").to_string();
        assert!(message.starts_with("--request-log ") && message.contains("not a writable directory"), "{message}");
        let err = RequestLog::start(options(dir.path(), 300, 200, Duration::ZERO), Metrics::new());
        assert!(err.err().unwrap().to_string().contains("less than --request-log-max-file-bytes"));
    }

    #[test]
    fn sampling_follows_the_rate() {
        let dir = tempfile::tempdir().unwrap();
        let mut o = options(dir.path(), 100, 200, Duration::ZERO);
        let count = |log: &RequestLog| (0..10_000).filter(|_| log.sampled()).count();
        o.sample = 0.0;
        assert_eq!(count(&RequestLog::start(o.clone(), Metrics::new()).unwrap()), 0);
        o.sample = 1.0;
        assert_eq!(count(&RequestLog::start(o.clone(), Metrics::new()).unwrap()), 10_000);
        o.sample = 0.25;
        let n = count(&RequestLog::start(o, Metrics::new()).unwrap());
        assert!((2_200..2_800).contains(&n), "{n} of 10000 at 0.25");
    }
}
