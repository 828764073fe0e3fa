//! The extraction pool: a fixed set of threads, each owning one
//! `fex::Extractor` scratch, fed through one bounded queue. Extraction never
//! runs on the tokio runtime, so HTTP/2 frames, health checks, reflection and
//! metrics are served while every pool thread is busy, and the deadline
//! layer's timer fires on time.
//!
//! Admission: a job is taken while the jobs running and queued number fewer
//! than the threads plus `max_queue`; beyond that `submit` refuses it at once
//! (the service answers RESOURCE_EXHAUSTED). A job whose deadline has passed
//! when a thread takes it, or whose caller has gone, is dropped unrun. The
//! answer comes back on a tokio oneshot.

use std::collections::VecDeque;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use fex::Extractor;
use tokio::sync::oneshot;

use crate::metrics::Metrics;

/// What a job gets from the thread that takes it: the scratch to run with,
/// or `Expired` when its deadline passed in the queue (it must not run).
pub enum Turn<'a> {
    Run(&'a mut Extractor),
    Expired,
}

/// How a job ended, for `fex_pool_jobs_total{outcome}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Ran,
    Expired,
    Cancelled,
}

impl Outcome {
    pub fn label(self) -> &'static str {
        match self {
            Outcome::Ran => "ran",
            Outcome::Expired => "expired",
            Outcome::Cancelled => "cancelled",
        }
    }
}

type Task = Box<dyn FnOnce(Turn<'_>) -> Outcome + Send>;

struct Job {
    deadline: Option<Instant>,
    enqueued: Instant,
    task: Task,
}

/// Why a job was not taken, or came back without a result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Every thread busy and `max_queue` jobs waiting.
    Full { threads: usize, max_queue: usize },
    /// The deadline passed while the job waited; it never ran.
    Expired,
    /// The job panicked outside the caller's own unwind guard (a bug).
    Lost,
}

struct State {
    queue: VecDeque<Job>,
    running: usize,
    closed: bool,
}

struct Shared {
    state: Mutex<State>,
    ready: Condvar,
    threads: usize,
    max_queue: usize,
    metrics: Arc<Metrics>,
}

/// The pool. Dropping it lets the threads finish what is queued, then exit.
pub struct Pool {
    shared: Arc<Shared>,
}

impl Pool {
    /// Starts `threads` (at least 1) extraction threads.
    pub fn new(threads: usize, max_queue: usize, metrics: Arc<Metrics>) -> std::io::Result<Pool> {
        let threads = threads.max(1);
        let state = State { queue: VecDeque::new(), running: 0, closed: false };
        let shared = Arc::new(Shared { state: Mutex::new(state), ready: Condvar::new(), threads, max_queue, metrics });
        shared.metrics.pool_threads.set(threads as i64);
        for i in 0..threads {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new().name(format!("fex-extract-{i}")).spawn(move || work(&shared))?;
        }
        Ok(Pool { shared })
    }

    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// Runs `f` on a pool thread with that thread's scratch, unless the pool
    /// is full (refused at once) or `deadline` passes before a thread takes
    /// it (`Refused::Expired`, and `f` never runs). Dropping the returned
    /// future cancels a job that has not started.
    pub fn run<R, F>(
        &self,
        deadline: Option<Instant>,
        f: F,
    ) -> Result<impl Future<Output = Result<R, Refused>> + Send + use<R, F>, Refused>
    where
        R: Send + 'static,
        F: FnOnce(&mut Extractor) -> R + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let task: Task = Box::new(move |turn| match turn {
            // Usually the deadline layer has answered already and the
            // receiver is gone; the job is dropped unrun either way.
            Turn::Expired => {
                let _ = tx.send(Err(Refused::Expired));
                Outcome::Expired
            }
            Turn::Run(_) if tx.is_closed() => Outcome::Cancelled,
            Turn::Run(ex) => {
                let _ = tx.send(Ok(f(ex)));
                Outcome::Ran
            }
        });
        self.submit(Job { deadline, enqueued: Instant::now(), task })?;
        Ok(async move { rx.await.unwrap_or(Err(Refused::Lost)) })
    }

    fn submit(&self, job: Job) -> Result<(), Refused> {
        let s = &self.shared;
        let mut state = s.lock();
        if state.running + state.queue.len() >= s.threads + s.max_queue {
            return Err(Refused::Full { threads: s.threads, max_queue: s.max_queue });
        }
        state.queue.push_back(job);
        s.metrics.queue_depth.set(state.queue.len() as i64);
        drop(state);
        s.ready.notify_one();
        Ok(())
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        self.shared.lock().closed = true;
        self.shared.ready.notify_all();
    }
}

impl Shared {
    /// The state; a panic while it was held cannot leave it inconsistent
    /// (every update is a single assignment), so poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next job, or None once the pool is closed and drained.
    fn next(&self) -> Option<Job> {
        let mut state = self.lock();
        loop {
            if let Some(job) = state.queue.pop_front() {
                state.running += 1;
                self.metrics.queue_depth.set(state.queue.len() as i64);
                self.metrics.pool_busy.set(state.running as i64);
                return Some(job);
            }
            if state.closed {
                return None;
            }
            state = self.ready.wait(state).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn done(&self) {
        let mut state = self.lock();
        state.running -= 1;
        self.metrics.pool_busy.set(state.running as i64);
    }
}

/// One pool thread: its scratch, kept between jobs; a job that panics
/// (outside the caller's guard) costs the scratch, never the thread.
fn work(shared: &Shared) {
    let mut extractor = Extractor::new();
    while let Some(job) = shared.next() {
        let started = Instant::now();
        shared.metrics.queue_wait.observe(started.duration_since(job.enqueued).as_secs_f64());
        let expired = job.deadline.is_some_and(|d| started >= d);
        let turn = if expired { Turn::Expired } else { Turn::Run(&mut extractor) };
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| (job.task)(turn)));
        let outcome = outcome.unwrap_or_else(|_| {
            extractor = Extractor::new();
            Outcome::Ran
        });
        shared.metrics.pool_busy_seconds.inc_by(started.elapsed().as_secs_f64());
        shared.metrics.pool_jobs.get_or_create(&crate::metrics::OutcomeLabel { outcome: outcome.label() }).inc();
        shared.done();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Occupies one pool thread until the returned sender is dropped or used.
    fn occupy(pool: &Pool) -> (mpsc::Sender<()>, impl Future<Output = Result<(), Refused>>) {
        let (release, hold) = mpsc::channel::<()>();
        let (started_tx, started) = mpsc::channel::<()>();
        let job = pool
            .run(None, move |_| {
                let _ = started_tx.send(());
                let _ = hold.recv();
            })
            .unwrap();
        started.recv().unwrap();
        (release, job)
    }

    #[tokio::test]
    async fn refuses_beyond_threads_plus_queue_then_recovers() {
        let pool = Pool::new(1, 1, Metrics::new()).unwrap();
        let (release, busy) = occupy(&pool);
        let queued = pool.run(None, |_| 7).unwrap();
        assert_eq!(pool.run(None, |_| 8).err(), Some(Refused::Full { threads: 1, max_queue: 1 }));
        release.send(()).unwrap();
        busy.await.unwrap();
        assert_eq!(queued.await, Ok(7));
        assert_eq!(pool.run(None, |_| 9).unwrap().await, Ok(9));
    }

    #[tokio::test]
    async fn a_job_whose_deadline_passes_in_the_queue_never_runs() {
        let metrics = Metrics::new();
        let pool = Pool::new(1, 4, Arc::clone(&metrics)).unwrap();
        let (release, busy) = occupy(&pool);
        let ran = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = Arc::clone(&ran);
        let deadline = Instant::now() + Duration::from_millis(1);
        let job = pool.run(Some(deadline), move |_| flag.store(true, std::sync::atomic::Ordering::SeqCst)).unwrap();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        release.send(()).unwrap();
        busy.await.unwrap();
        assert_eq!(job.await, Err(Refused::Expired));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst));
        // The thread counts the outcome just after the answer goes out.
        let counted = || metrics.render().contains(r#"fex_pool_jobs_total{outcome="expired"} 1"#);
        let give_up = Instant::now() + Duration::from_secs(30);
        while !counted() && Instant::now() < give_up {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(counted(), "{}", metrics.render());
    }

    #[tokio::test]
    async fn a_dropped_caller_cancels_a_queued_job() {
        let metrics = Metrics::new();
        let pool = Pool::new(1, 4, Arc::clone(&metrics)).unwrap();
        let (release, busy) = occupy(&pool);
        drop(pool.run(None, |_| panic!("a cancelled job must not run")).unwrap());
        release.send(()).unwrap();
        busy.await.unwrap();
        // The pool is FIFO on one thread: once this job answers, the cancelled
        // one has been taken and dropped.
        assert_eq!(pool.run(None, |_| 1).unwrap().await, Ok(1));
        let page = metrics.render();
        assert!(page.contains(r#"fex_pool_jobs_total{outcome="cancelled"} 1"#), "{page}");
    }

    #[tokio::test]
    async fn a_panicking_job_loses_its_answer_not_the_thread() {
        let pool = Pool::new(1, 1, Metrics::new()).unwrap();
        assert_eq!(pool.run(None, |_| -> u8 { panic!("bug") }).unwrap().await, Err(Refused::Lost));
        assert_eq!(pool.run(None, |_| 3).unwrap().await, Ok(3));
    }
}
