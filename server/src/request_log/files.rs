//! `--request-log DIR`: the log's files. Records are appended
//! PBDataset-framed (`[u64 LE length][payload]`, what `fex::records` reads)
//! to the current file.
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
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where the files go and how large they grow.
#[derive(Debug, Clone)]
pub struct FileOptions {
    pub dir: PathBuf,
    pub max_file_bytes: u64,
    /// `Duration::ZERO`: no age bound.
    pub max_age: Duration,
    pub max_total_bytes: u64,
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
    pub(super) dir: PathBuf,
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
    pub fn open(options: &FileOptions) -> io::Result<Self> {
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
    use crate::request_log::tests::on_disk;

    fn options(dir: &Path, max_file: u64, max_total: u64, max_age: Duration) -> FileOptions {
        FileOptions { dir: dir.to_path_buf(), max_file_bytes: max_file, max_age, max_total_bytes: max_total }
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
}
