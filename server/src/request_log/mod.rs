//! `--request-log`: sampled Extract requests kept for `fex replay`, off the
//! request path. A call that is sampled hands the request message's bytes as
//! they arrived (shared `Bytes`; unknown fields kept) to a bounded queue with
//! `try_send`; one writer thread encodes each `fex.v1.LoggedRequest` and
//! appends it, PBDataset-framed (`[u64 LE length][payload]`, what
//! `fex::records` reads), to the current file. When the queue is full the
//! record is dropped and counted (`fex_request_log_dropped_total`); a call
//! never waits for the log.
//!
//! Files are `requests-<unix µs, 20 digits>-<sequence>.log` in the
//! directory, so their names sort in the order they were written. The file
//! being written is hidden, `.requests-….log`, and takes its name when it is
//! closed: a reader that takes each file once, when it appears (Flink's and
//! Hadoop's file sources, which skip names starting with a dot, and `fex
//! replay`), sees only finished files. A file is closed and a new one opened
//! when the next record would take it past `max_file_bytes` or once it is
//! `max_age` old (checked as records arrive and while the log is idle); it
//! is also closed by `RequestLog::sync` (at shutdown) and when the writer
//! stops. A hidden file an earlier run left (it stopped without closing it)
//! is closed when the log starts. Before a new file is opened the oldest
//! closed files (of this run and earlier ones) are deleted until they and a
//! full new file fit in `max_total_bytes`.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fex::proto::fex_v1::LoggedRequest;
use prost::Message;

use crate::args::Args;
use crate::metrics::Metrics;

/// A request log that cannot start: a bad --request-log directory or
/// limits that contradict each other (a bad configuration, exit 64).
#[derive(Debug, thiserror::Error)]
#[error("--request-log {dir}: {message}")]
pub struct RequestLogError {
    pub dir: PathBuf,
    pub message: String,
}

/// Where and how much to log.
#[derive(Debug, Clone)]
pub struct LogOptions {
    pub dir: PathBuf,
    /// Fraction of requests logged, 0 to 1.
    pub sample: f64,
    pub max_file_bytes: u64,
    /// `Duration::ZERO`: no age bound.
    pub max_age: Duration,
    pub max_total_bytes: u64,
    /// Records waiting for the writer before more are dropped.
    pub queue: usize,
}

impl LogOptions {
    /// The flags' settings, if --request-log is given.
    pub fn from_args(args: &Args) -> Option<Self> {
        Some(Self {
            dir: args.request_log.clone()?,
            sample: args.request_log_sample,
            max_file_bytes: args.request_log_max_file_bytes,
            max_age: args.request_log_max_age,
            max_total_bytes: args.request_log_max_total_bytes,
            queue: args.request_log_queue,
        })
    }
}

/// One answered call, waiting to be written.
pub struct Pending {
    /// The fex.v1.ExtractRequest message, byte for byte as received.
    pub request: Bytes,
    pub model: String,
    pub model_version: String,
    pub model_digest: u64,
    pub request_id: String,
}

enum Msg {
    Record(Box<Pending>, i64),
    /// Everything sent before it is written and its file closed; then the
    /// sender is told.
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
    metrics: Arc<Metrics>,
}

impl RequestLog {
    /// Checks the directory (created if missing, must be writable) and the
    /// limits, then starts the writer thread.
    pub fn start(options: LogOptions, metrics: Arc<Metrics>) -> Result<Arc<Self>, RequestLogError> {
        let error = |message: String| RequestLogError { dir: options.dir.clone(), message };
        if options.max_total_bytes < options.max_file_bytes {
            return Err(error(format!(
                "--request-log-max-total-bytes {} is less than --request-log-max-file-bytes {}",
                options.max_total_bytes, options.max_file_bytes
            )));
        }
        let files = Files::open(&options).map_err(|e| error(format!("not a writable directory: {e}")))?;
        let (tx, rx) = mpsc::sync_channel(options.queue.max(1));
        let gate = Arc::new(Mutex::new(()));
        let writer = Writer { files, rx, gate: Arc::clone(&gate), metrics: Arc::clone(&metrics) };
        std::thread::Builder::new()
            .name("fex-request-log".into())
            .spawn(move || writer.run())
            .map_err(|e| error(format!("cannot start the writer thread: {e}")))?;
        let started = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
        Ok(Arc::new(Self {
            tx,
            threshold: (options.sample * u64::MAX as f64) as u64,
            all: options.sample >= 1.0,
            calls: AtomicU64::new(0),
            ids: AtomicU64::new(0),
            id_prefix: format!("{:x}-{:x}", std::process::id(), started),
            gate,
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

    /// Queues a record without waiting: a full queue drops it (counted).
    pub fn offer(&self, pending: Pending) {
        let micros = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as i64);
        match self.tx.try_send(Msg::Record(Box::new(pending), micros)) {
            Ok(()) => {}
            Err(TrySendError::Full(_) | TrySendError::Disconnected(_)) => {
                self.metrics.request_log_dropped.inc();
            }
        }
    }

    /// Waits until every record queued before it is written and its file
    /// closed, under its final name (at shutdown, and for tests); a later
    /// record opens a new file. Blocks: never call it on a call's path.
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

/// A stateless mix of a counter (splitmix64's finaliser), spread evenly over u64.
fn splitmix64(n: u64) -> u64 {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

struct Writer {
    files: Files,
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
                    let received = match self.files.until_old(Instant::now()) {
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
                    let record = LoggedRequest {
                        request: p.request.to_vec(),
                        model: p.model,
                        model_version: p.model_version,
                        model_digest: p.model_digest,
                        unix_micros: micros,
                        request_id: p.request_id,
                    };
                    buf.clear();
                    record.encode(&mut buf).expect("a Vec grows");
                    match self.files.write(&buf, Instant::now()) {
                        Ok(()) => {
                            self.metrics.request_log_records.inc();
                        }
                        Err(e) => {
                            self.metrics.request_log_dropped.inc();
                            tracing::warn!(error = %e, dir = %self.files.dir.display(), "request log write failed");
                        }
                    };
                }
                Msg::Sync(done) => {
                    self.close();
                    let _ = done.send(());
                }
            }
        }
        self.close();
    }

    fn flush(&mut self) {
        if let Err(e) = self.files.flush() {
            tracing::warn!(error = %e, dir = %self.files.dir.display(), "request log flush failed");
        }
    }

    fn close(&mut self) {
        if let Err(e) = self.files.close() {
            tracing::warn!(error = %e, dir = %self.files.dir.display(), "request log close failed");
        }
    }

    fn close_if_old(&mut self) {
        if self.files.until_old(Instant::now()).is_some_and(|left| left.is_zero()) {
            self.close();
        }
    }
}

/// The file being written, under its hidden name until it is closed.
struct Current {
    hidden: PathBuf,
    path: PathBuf,
    file: BufWriter<File>,
    bytes: u64,
    opened: Instant,
}

/// The log's files: the one being written and the closed ones, oldest first.
pub struct Files {
    dir: PathBuf,
    max_file_bytes: u64,
    max_age: Duration,
    max_total_bytes: u64,
    current: Option<Current>,
    closed: VecDeque<(PathBuf, u64)>,
    sequence: u64,
}

/// Whether `name` is a closed request log file's name.
pub fn is_log_file(name: &str) -> bool {
    name.starts_with("requests-") && name.ends_with(".log")
}

/// The name a log file has while it is written: its final name, hidden.
fn hidden_name(name: &str) -> String {
    format!(".{name}")
}

impl Files {
    /// Creates the directory if needed, proves it writable, and takes the
    /// log files already there as the oldest closed ones.
    pub fn open(options: &LogOptions) -> io::Result<Self> {
        let dir = options.dir.clone();
        std::fs::create_dir_all(&dir)?;
        let probe = dir.join(format!(".fex-write-check-{}", std::process::id()));
        File::create(&probe)?;
        std::fs::remove_file(&probe)?;
        let mut existing: Vec<(PathBuf, u64)> = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else { continue };
            let len = entry.metadata()?.len();
            let path = match name.strip_prefix('.') {
                // Left open by a run that stopped without closing it: what it
                // holds is all it will ever hold.
                Some(closed) if is_log_file(closed) => {
                    std::fs::rename(entry.path(), dir.join(closed))?;
                    dir.join(closed)
                }
                _ if is_log_file(&name) => entry.path(),
                _ => continue,
            };
            existing.push((path, len));
        }
        existing.sort();
        Ok(Self {
            dir,
            max_file_bytes: options.max_file_bytes,
            max_age: options.max_age,
            max_total_bytes: options.max_total_bytes,
            current: None,
            closed: existing.into(),
            sequence: 0,
        })
    }

    /// Appends one framed record, rotating first if the current file is
    /// full or old.
    pub fn write(&mut self, payload: &[u8], now: Instant) -> io::Result<()> {
        let len = 8 + payload.len() as u64;
        let rotate = self.current.as_ref().is_some_and(|c| {
            (c.bytes > 0 && c.bytes + len > self.max_file_bytes)
                || (!self.max_age.is_zero() && now.duration_since(c.opened) >= self.max_age)
        });
        if rotate {
            self.close()?;
        }
        if self.current.is_none() {
            self.open_next(now)?;
        }
        let current = self.current.as_mut().expect("opened above");
        fex::records::write_record(&mut current.file, payload)?;
        current.bytes += len;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        match &mut self.current {
            Some(c) => c.file.flush(),
            None => Ok(()),
        }
    }

    /// Closes the current file, if any: flushed, then given its final name.
    pub fn close(&mut self) -> io::Result<()> {
        let Some(mut c) = self.current.take() else { return Ok(()) };
        let done = c.file.flush().and_then(|()| std::fs::rename(&c.hidden, &c.path));
        // Counted toward the cap under the name it has, whatever happened.
        let path = if done.is_ok() { c.path } else { c.hidden };
        self.closed.push_back((path, c.bytes));
        done
    }

    /// How long until the current file is `max_age` old (zero once it is);
    /// `None` without a file or an age bound.
    pub fn until_old(&self, now: Instant) -> Option<Duration> {
        let c = self.current.as_ref().filter(|_| !self.max_age.is_zero())?;
        Some(self.max_age.saturating_sub(now.duration_since(c.opened)))
    }

    /// Deletes the oldest closed files until they and a full new file fit
    /// under the cap, then opens the next file.
    fn open_next(&mut self, now: Instant) -> io::Result<()> {
        let mut total: u64 = self.closed.iter().map(|(_, n)| n).sum();
        while total + self.max_file_bytes > self.max_total_bytes {
            let Some((oldest, bytes)) = self.closed.pop_front() else { break };
            match std::fs::remove_file(&oldest) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => {
                    self.closed.push_front((oldest, bytes));
                    return Err(e);
                }
            }
            total -= bytes;
        }
        let micros = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_micros();
        let name = format!("requests-{micros:020}-{:06}.log", self.sequence);
        let (hidden, path) = (self.dir.join(hidden_name(&name)), self.dir.join(name));
        self.sequence += 1;
        let file = File::options().create_new(true).write(true).open(&hidden)?;
        let file = BufWriter::with_capacity(64 << 10, file);
        self.current = Some(Current { hidden, path, file, bytes: 0, opened: now });
        Ok(())
    }
}

/// A log dropped with a file open closes it, so it is not left hidden.
impl Drop for Files {
    fn drop(&mut self) {
        if let Err(e) = self.close() {
            tracing::warn!(error = %e, dir = %self.dir.display(), "request log close failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    fn options(dir: &Path, max_file: u64, max_total: u64, max_age: Duration) -> LogOptions {
        LogOptions {
            dir: dir.to_path_buf(),
            sample: 1.0,
            max_file_bytes: max_file,
            max_age,
            max_total_bytes: max_total,
            queue: 4,
        }
    }

    fn on_disk(dir: &Path) -> Vec<(String, u64)> {
        let mut files: Vec<(String, u64)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap())
            .map(|e| (e.file_name().to_string_lossy().to_string(), e.metadata().unwrap().len()))
            .collect();
        files.sort();
        files
    }

    fn records(path: &Path) -> Vec<Vec<u8>> {
        let mut reader = fex::records::RecordReader::open(path, Default::default(), None).unwrap();
        let (mut out, mut buf) = (Vec::new(), Vec::new());
        while reader.next_into(&mut buf).unwrap().is_some() {
            out.push(buf.clone());
        }
        out
    }

    #[test]
    fn files_rotate_at_their_size_and_stay_under_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        // Records of 8 + 42 = 50 bytes: two fit in a 100-byte file.
        let mut files = Files::open(&options(dir.path(), 100, 300, Duration::ZERO)).unwrap();
        let now = Instant::now();
        for i in 0..9u8 {
            files.write(&[i; 42], now).unwrap();
            files.flush().unwrap();
            let disk = on_disk(dir.path());
            assert!(disk.iter().map(|(_, n)| n).sum::<u64>() <= 300, "after record {i}: {disk:?}");
            let open = disk.iter().filter(|(name, _)| name.starts_with(".requests-")).count();
            assert_eq!(open, 1, "the file being written is hidden: {disk:?}");
            assert!(disk.iter().all(|(name, n)| is_log_file(name.trim_start_matches('.')) && *n <= 100), "{disk:?}");
        }
        files.close().unwrap();
        // 9 records in files of 2: 5 files made; the cap (300 = 2 closed +
        // a full new one) keeps the newest 3.
        let disk = on_disk(dir.path());
        assert_eq!(disk.len(), 3, "{disk:?}");
        let kept: Vec<Vec<u8>> = disk.iter().flat_map(|(name, _)| records(&dir.path().join(name))).collect();
        let want: Vec<Vec<u8>> = (4..9u8).map(|i| vec![i; 42]).collect();
        assert_eq!(kept, want, "the oldest records went first, the rest in order");
    }

    #[test]
    fn files_rotate_at_their_age() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Files::open(&options(dir.path(), 1 << 20, 1 << 30, Duration::from_secs(60))).unwrap();
        let t0 = Instant::now();
        files.write(b"a", t0).unwrap();
        files.write(b"b", t0 + Duration::from_secs(59)).unwrap();
        files.write(b"c", t0 + Duration::from_secs(60)).unwrap();
        assert_eq!(files.until_old(t0 + Duration::from_secs(100)), Some(Duration::from_secs(20)));
        assert_eq!(files.until_old(t0 + Duration::from_secs(130)), Some(Duration::ZERO));
        drop(files);
        let disk = on_disk(dir.path());
        assert_eq!(disk.len(), 2, "{disk:?}");
        assert_eq!(records(&dir.path().join(&disk[0].0)), vec![b"a".to_vec(), b"b".to_vec()]);
        assert_eq!(records(&dir.path().join(&disk[1].0)), vec![b"c".to_vec()]);
    }

    #[test]
    fn files_left_by_an_earlier_run_count_toward_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("requests-00000000000000000001-000000.log");
        std::fs::write(&old, vec![0u8; 150]).unwrap();
        std::fs::write(dir.path().join("notes.txt"), b"not ours").unwrap();
        let mut files = Files::open(&options(dir.path(), 100, 200, Duration::ZERO)).unwrap();
        files.write(&[1; 10], Instant::now()).unwrap();
        files.flush().unwrap();
        assert!(!old.exists(), "150 old bytes and a 100-byte file do not fit in 200");
        assert!(dir.path().join("notes.txt").exists(), "other files are left alone");
    }

    #[test]
    fn a_file_takes_its_name_only_when_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Files::open(&options(dir.path(), 1 << 20, 1 << 30, Duration::ZERO)).unwrap();
        files.write(b"a", Instant::now()).unwrap();
        files.flush().unwrap();
        let disk = on_disk(dir.path());
        assert!(disk.len() == 1 && disk[0].0.starts_with(".requests-") && disk[0].0.ends_with(".log"), "{disk:?}");
        files.close().unwrap();
        let closed = on_disk(dir.path());
        assert_eq!(closed, [(disk[0].0[1..].to_string(), 9)]);
        assert_eq!(records(&dir.path().join(&closed[0].0)), [b"a".to_vec()]);
        // The next record opens a new hidden file.
        files.write(b"b", Instant::now()).unwrap();
        assert_eq!(on_disk(dir.path()).iter().filter(|(n, _)| n.starts_with('.')).count(), 1);
    }

    #[test]
    fn a_hidden_file_an_earlier_run_left_is_closed_at_start() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(".requests-00000000000000000001-000000.log"), vec![0u8; 150]).unwrap();
        let mut files = Files::open(&options(dir.path(), 100, 200, Duration::ZERO)).unwrap();
        assert_eq!(on_disk(dir.path()), [("requests-00000000000000000001-000000.log".to_string(), 150)]);
        files.write(&[1; 10], Instant::now()).unwrap();
        assert_eq!(on_disk(dir.path()).len(), 1, "it counts toward the cap like any closed file");
    }

    #[test]
    fn an_idle_log_closes_its_file_at_its_age() {
        let dir = tempfile::tempdir().unwrap();
        let log = RequestLog::start(options(dir.path(), 1 << 20, 1 << 30, Duration::from_millis(50)), Metrics::new())
            .unwrap();
        let pending = Pending {
            request: Bytes::from_static(b"\x0a\x01m"),
            model: "m".into(),
            model_version: "v".into(),
            model_digest: 1,
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
