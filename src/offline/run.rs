//! The offline pipeline: records are read in chunks (a chunk never spans two
//! files; its size depends only on the input), chunks are extracted on
//! `threads` workers, and the sink receives them strictly in input order, so
//! the output is the same whatever the thread count. At most a window of
//! chunks is in flight: memory does not grow with the input's size.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use prost::Message;

use super::hook::{Carry, RecordCtx, RowsHook};
use super::report::{BadError, BadRecord, RunError, Summary};
use super::sink::{BatchEncoder, Format, Prepared, Sink, SinkHelper};
use crate::config::Plan;
use crate::extract::{Extracted, Extractor, Input, Policy, SharedRows};
use crate::proto::fex_v1::ExtractResponse;
use crate::records::{ReadOptions, RecordMeta, RecordReader};

/// What each record's payload is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Payload {
    /// A `monolith.io.proto.ExampleBatch` (what fex-server is sent).
    #[default]
    ExampleBatch,
    /// A `monolith.io.proto.Example`: one row.
    Example,
    /// A legacy `parser.proto.Instance`: one row.
    Instance,
}

/// What to do with a bad record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnError {
    /// Stop at the first bad record (in input order).
    #[default]
    Fail,
    /// Report it, count it, go on. A record whose framing is broken (a
    /// corrupt or truncated length) ends its file: nothing after it can be
    /// found.
    Skip,
}

/// How to run.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub payload: Payload,
    pub read: ReadOptions,
    /// Extraction workers (at least 1), with or without a hook: a hook's
    /// `in_order` still sees records one at a time in input order.
    pub threads: usize,
    pub on_error: OnError,
    /// A chunk ends after this many payload bytes or `chunk_records` records.
    /// Small enough that a chunk and the rows it makes stay in the cache of
    /// the core that works on them: 4 MiB chunks of the default model
    /// (10 MB of table each) made `fex extract` 1.4x slower than 256 KiB
    /// (benches/README.md, "Offline").
    pub chunk_bytes: usize,
    pub chunk_records: usize,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            payload: Payload::ExampleBatch,
            read: ReadOptions::default(),
            threads: 1,
            on_error: OnError::Fail,
            chunk_bytes: 256 << 10,
            chunk_records: 4096,
        }
    }
}

/// Told of progress and of each bad record, in input order, from whichever
/// thread writes the output.
pub trait Observer: Sync {
    fn progress(&self, _summary: &Summary) {}
    fn bad_record(&self, _bad: &BadRecord) {}
    /// Asked before each chunk is read, from the worker threads: true stops
    /// the run. Nothing more is read or written, the sink is not finished,
    /// and `run` returns `RunError::Stopped` (how Python's Ctrl-C ends
    /// `fex.run`).
    fn stop(&self) -> bool {
        false
    }
}

/// Observes nothing.
pub struct Quiet;
impl Observer for Quiet {}

/// Records of one file, read together.
struct Chunk {
    seq: u64,
    source: Arc<str>,
    data: Vec<u8>,
    /// Each record's header facts and its range in `data`.
    records: Vec<(RecordMeta, usize)>,
    /// The framing error that ended the file, after these records.
    read_error: Option<BadRecord>,
}

/// What a bad record needs of its chunk.
pub(super) struct ChunkRef<'c> {
    pub(super) source: &'c Arc<str>,
    pub(super) records: &'c [(RecordMeta, usize)],
}

impl Chunk {
    fn at(&self) -> ChunkRef<'_> {
        ChunkRef { source: &self.source, records: &self.records }
    }

    fn payloads(&self) -> Vec<&[u8]> {
        self.records.iter().map(|&(m, start)| &self.data[start..start + m.len]).collect()
    }
}

/// A chunk's output.
#[derive(Default)]
struct Processed {
    items: Vec<Prepared>,
    /// In input order.
    bad: Vec<BadRecord>,
    records: u64,
    rows_written: u64,
    payload_bytes: u64,
}

/// One input of a run: a file (or `-`, standard input), or a whole record
/// stream held in memory (a job's records, built without touching disk).
#[derive(Debug, Clone)]
pub enum RunInput {
    Path(PathBuf),
    /// `name` is what errors call the stream.
    Memory {
        name: String,
        bytes: bytes::Bytes,
    },
}

impl RunInput {
    fn open(
        &self,
        options: ReadOptions,
        counter: &Arc<AtomicU64>,
    ) -> Result<RecordReader, crate::records::RecordError> {
        match self {
            Self::Path(path) => RecordReader::open(path, options, Some(Arc::clone(counter))),
            Self::Memory { name, bytes } => {
                counter.fetch_add(bytes.len() as u64, Ordering::Relaxed);
                RecordReader::new(name, std::io::Cursor::new(bytes.clone()), options)
            }
        }
    }
}

struct ReadState {
    inputs: Vec<RunInput>,
    next_file: usize,
    current: Option<RecordReader>,
    seq: u64,
    files_opened: u64,
}

struct OrderState<'s> {
    next: u64,
    pending: BTreeMap<u64, Processed>,
    writing: bool,
    sink: Option<&'s mut dyn Sink>,
    summary: Summary,
    error: Option<RunError>,
}

struct Shared<'s> {
    plan: &'s Plan,
    options: Options,
    /// The outputs to extract (`Plan::select`), None for all of them.
    outputs: Option<&'s [usize]>,
    format: Format,
    reader: Mutex<ReadState>,
    order: Mutex<OrderState<'s>>,
    turn: Condvar,
    abort: AtomicBool,
    issued: AtomicU64,
    input_bytes: Arc<AtomicU64>,
    observer: &'s dyn Observer,
    hook: Option<&'s dyn RowsHook>,
    /// The next chunk the hook's `in_order` takes (every chunk passes).
    hook_next: Mutex<u64>,
    hook_turn: Condvar,
    /// The sink's work for any thread (Parquet's row group encoding).
    helper: Option<Arc<dyn SinkHelper>>,
    /// Chunk buffers already read and processed, for the next chunks: a
    /// fresh buffer is memory the kernel must fault in and zero again.
    spare: Mutex<Vec<Vec<u8>>>,
}

/// Reads `inputs` (files or `-`, in order), extracts `plan`'s outputs for
/// every record, transforms them through `hook` if given, and writes them to
/// `sink` in input order. Returns what happened; under `OnError::Fail` the
/// first bad record is the error.
pub fn run(
    plan: &Plan,
    inputs: &[PathBuf],
    options: Options,
    sink: &mut dyn Sink,
    hook: Option<&dyn RowsHook>,
    observer: &dyn Observer,
) -> Result<Summary, RunError> {
    let inputs: Vec<RunInput> = inputs.iter().cloned().map(RunInput::Path).collect();
    run_inputs(plan, &inputs, options, sink, hook, observer)
}

/// [`run`] over inputs that may be held in memory.
pub fn run_inputs(
    plan: &Plan,
    inputs: &[RunInput],
    options: Options,
    sink: &mut dyn Sink,
    hook: Option<&dyn RowsHook>,
    observer: &dyn Observer,
) -> Result<Summary, RunError> {
    run_selected(plan, None, inputs, options, sink, hook, observer)
}

/// [`run_inputs`] extracting only the outputs `outputs` (indices from
/// `Plan::select`, in the table's order): features only other outputs need
/// are not decoded. The transforms read the samples, not the outputs, so
/// they run as they would for the whole model.
pub fn run_selected(
    plan: &Plan,
    outputs: Option<&[usize]>,
    inputs: &[RunInput],
    options: Options,
    sink: &mut dyn Sink,
    hook: Option<&dyn RowsHook>,
    observer: &dyn Observer,
) -> Result<Summary, RunError> {
    let threads = options.threads.max(1);
    let format = sink.format();
    let helper = sink.helper();
    let mut encoders: Vec<Option<Box<dyn BatchEncoder>>> = (0..threads).map(|_| sink.encoder()).collect();
    let shared = Shared {
        plan,
        options,
        outputs,
        format,
        reader: Mutex::new(ReadState { inputs: inputs.to_vec(), next_file: 0, current: None, seq: 0, files_opened: 0 }),
        order: Mutex::new(OrderState {
            next: 0,
            pending: BTreeMap::new(),
            writing: false,
            sink: Some(sink),
            summary: Summary::default(),
            error: None,
        }),
        turn: Condvar::new(),
        abort: AtomicBool::new(false),
        issued: AtomicU64::new(0),
        input_bytes: Arc::new(AtomicU64::new(0)),
        observer,
        hook,
        hook_next: Mutex::new(0),
        hook_turn: Condvar::new(),
        helper,
        spare: Mutex::new(Vec::new()),
    };
    let window = threads as u64 * 2 + 1;
    if threads == 1 {
        worker(&shared, window, encoders.pop().flatten());
    } else {
        std::thread::scope(|s| {
            for encoder in encoders {
                let shared = &shared;
                s.spawn(move || worker(shared, window, encoder));
            }
        });
    }
    if let Some(hook) = hook {
        flush(&shared, hook);
    }
    let files = lock(&shared.reader).files_opened;
    let mut order = shared.order.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(e) = order.error.take() {
        return Err(e);
    }
    order.summary.files = files;
    order.summary.input_bytes = shared.input_bytes.load(Ordering::Relaxed);
    order.sink.take().expect("the sink is given back once").finish()?;
    Ok(order.summary)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn worker(shared: &Shared<'_>, window: u64, mut encoder: Option<Box<dyn BatchEncoder>>) {
    let _guard = AbortOnPanic(shared);
    let mut ex = Extractor::new();
    loop {
        // The sink's queued work (encoding) goes before new input: it holds
        // rows already read, and it is what the ordered writer waits for.
        if help(shared) {
            continue;
        }
        // Wait while too far ahead of the writer: bounded memory.
        {
            let mut order = lock(&shared.order);
            while !shared.abort.load(Ordering::Relaxed)
                && shared.issued.load(Ordering::Relaxed).saturating_sub(order.next) >= window
            {
                order = shared.turn.wait(order).unwrap_or_else(std::sync::PoisonError::into_inner);
            }
        }
        if shared.abort.load(Ordering::Relaxed) {
            shared.hook_turn.notify_all();
            return;
        }
        if shared.observer.stop() {
            let mut order = lock(&shared.order);
            order.error.get_or_insert(RunError::Stopped);
            shared.abort.store(true, Ordering::Relaxed);
            shared.turn.notify_all();
            shared.hook_turn.notify_all();
            return;
        }
        let Some(chunk) = read_chunk(shared) else {
            while help(shared) {}
            return;
        };
        let processed = process(shared, &mut ex, &chunk, encoder.as_deref_mut());
        let seq = chunk.seq;
        let mut data = chunk.data;
        data.clear();
        lock(&shared.spare).push(data);
        deliver(shared, seq, processed);
    }
}

/// A worker that panics stops the run: the others would otherwise wait
/// forever for its chunk (in the window, or at the turnstile), and the
/// panic would never reach the caller.
struct AbortOnPanic<'s, 'a>(&'s Shared<'a>);

impl Drop for AbortOnPanic<'_, '_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.abort.store(true, Ordering::Relaxed);
            // Under the locks the waiters wait with, so none misses it.
            drop(lock(&self.0.order));
            self.0.turn.notify_all();
            drop(lock(&self.0.hook_next));
            self.0.hook_turn.notify_all();
        }
    }
}

/// Does one piece of the sink's pending work, if any; false when there was
/// none or the run has failed. A failure is the run's error.
fn help(shared: &Shared<'_>) -> bool {
    let Some(helper) = &shared.helper else { return false };
    if shared.abort.load(Ordering::Relaxed) {
        return false;
    }
    match helper.help() {
        Ok(done) => done,
        Err(e) => {
            let mut order = lock(&shared.order);
            if order.error.is_none() {
                order.error = Some(e.into());
            }
            shared.abort.store(true, Ordering::Relaxed);
            shared.turn.notify_all();
            false
        }
    }
}

/// Writes what the hook held back until the end of input (`RowsHook::finish`)
/// after everything else, unless the run already failed.
fn flush(shared: &Shared<'_>, hook: &dyn RowsHook) {
    if shared.abort.load(Ordering::Relaxed) {
        return;
    }
    let end = |error: BadError| {
        let source: Arc<str> = Arc::from("(end of input: rows the transforms held back)");
        RunError::Bad(Box::new(BadRecord { source, index: 0, offset: 0, error }))
    };
    let extract = |e: crate::ExtractError| end(BadError::Extract(Arc::new(e)));
    let mut order = lock(&shared.order);
    let result = (|| -> Result<u64, RunError> {
        let held = hook.finish().map_err(extract)?;
        let sink = order.sink.as_mut().expect("no writer is left");
        let policy = Policy { shared: SharedRows::Broadcast, outputs: shared.outputs, ..Policy::default() };
        let mut ex = Extractor::new();
        let mut rows_written = 0;
        for rows in &held {
            let mut out = Extracted::default();
            ex.write(shared.plan, rows, policy, &mut out).map_err(extract)?;
            rows_written += out.batch_size as u64;
            let item = prepare(shared.plan, shared.format, out, None).map_err(|e| end(BadError::Arrow(e)))?;
            sink.write(item)?;
        }
        Ok(rows_written)
    })();
    match result {
        Ok(n) => {
            order.summary.rows_written += n;
            order.summary.transforms = hook.counts();
        }
        Err(e) => order.error = Some(e),
    }
}

/// Reads the next chunk: records of one file until the size bounds, the end
/// of the file, or a framing error.
fn read_chunk(shared: &Shared<'_>) -> Option<Chunk> {
    let mut st = lock(&shared.reader);
    let opts = &shared.options;
    loop {
        if st.current.is_none() {
            let input = st.inputs.get(st.next_file)?.clone();
            st.next_file += 1;
            st.files_opened += 1;
            match input.open(opts.read, &shared.input_bytes) {
                Ok(r) => st.current = Some(r),
                Err(e) => {
                    let chunk = error_chunk(&mut st, shared, e);
                    return Some(chunk);
                }
            }
        }
        let reader = st.current.as_mut().expect("opened above");
        let source: Arc<str> = Arc::from(reader.name());
        let mut data = lock(&shared.spare).pop().unwrap_or_default();
        let mut records = Vec::new();
        let mut read_error = None;
        while data.len() < opts.chunk_bytes && records.len() < opts.chunk_records {
            let start = data.len();
            match reader.append_next(&mut data) {
                Ok(Some(meta)) => records.push((meta, start)),
                Ok(None) => break,
                Err(e) => {
                    data.truncate(start);
                    read_error = Some(BadRecord::read(e));
                    break;
                }
            }
        }
        let ended = read_error.is_some() || records.len() < opts.chunk_records && data.len() < opts.chunk_bytes;
        if ended {
            st.current = None;
        }
        if records.is_empty() && read_error.is_none() {
            continue;
        }
        let seq = st.seq;
        st.seq += 1;
        shared.issued.store(st.seq, Ordering::Relaxed);
        return Some(Chunk { seq, source, data, records, read_error });
    }
}

fn error_chunk(st: &mut ReadState, shared: &Shared<'_>, e: crate::records::RecordError) -> Chunk {
    let seq = st.seq;
    st.seq += 1;
    shared.issued.store(st.seq, Ordering::Relaxed);
    let source: Arc<str> = Arc::from(e.source_name());
    Chunk { seq, source, data: Vec::new(), records: Vec::new(), read_error: Some(BadRecord::read(e)) }
}

/// Extracts a chunk into the sink's items; bad records are set aside.
fn process(
    shared: &Shared<'_>,
    ex: &mut Extractor,
    chunk: &Chunk,
    mut encoder: Option<&mut (dyn BatchEncoder + '_)>,
) -> Processed {
    let mut p = Processed { records: chunk.records.len() as u64, ..Processed::default() };
    p.payload_bytes = chunk.records.iter().map(|(m, _)| m.len as u64).sum();
    let payloads = chunk.payloads();
    // Each record's output goes to the sink as it is (concatenating a
    // chunk's batches copied the whole table once more), prepared by the
    // sink's encoder while it is still in this core's cache.
    let mut push = |out: Extracted, i: usize, p: &mut Processed| {
        p.rows_written += out.batch_size as u64;
        match prepare(shared.plan, shared.format, out, encoder.as_deref_mut()) {
            Ok(item) => p.items.push(item),
            Err(e) => p.bad.push(BadRecord::at(&chunk.at(), i, BadError::Arrow(e))),
        }
    };
    if let Some(hook) = shared.hook {
        hooked(shared, hook, ex, chunk, &payloads, &mut |out, i, p| push(out, i, p), &mut p);
    } else if shared.format == Format::Responses || shared.options.payload == Payload::ExampleBatch {
        for (i, payload) in payloads.iter().enumerate() {
            match unit(shared, ex, chunk, i, &[*payload]) {
                Ok(out) => push(out, i, &mut p),
                Err(bad) => p.bad.push(bad),
            }
        }
    } else {
        // Examples and Instances: the chunk's records in one call; when it
        // fails, one record at a time, to name the bad ones.
        match unit(shared, ex, chunk, 0, &payloads) {
            Ok(out) => push(out, 0, &mut p),
            Err(_) => {
                for (i, payload) in payloads.iter().enumerate() {
                    match unit(shared, ex, chunk, i, &[*payload]) {
                        Ok(out) => push(out, i, &mut p),
                        Err(bad) => p.bad.push(bad),
                    }
                }
            }
        }
    }
    if let Some(e) = &chunk.read_error {
        p.bad.push(e.clone());
    }
    p
}

/// Extracts the records `payloads` (starting at the chunk's record `first`).
fn unit(
    shared: &Shared<'_>,
    ex: &mut Extractor,
    chunk: &Chunk,
    first: usize,
    payloads: &[&[u8]],
) -> Result<Extracted, BadRecord> {
    let mut out = Extracted::default();
    let bad = |e| BadRecord::at(&chunk.at(), first + blame(&e, payloads.len()), BadError::Extract(Arc::new(e)));
    ex.extract(shared.plan, input(shared, payloads), policy(shared), &mut out).map_err(bad)?;
    Ok(out)
}

fn input<'p>(shared: &Shared<'_>, payloads: &'p [&'p [u8]]) -> Input<'p> {
    match shared.options.payload {
        Payload::ExampleBatch => Input::Batch(payloads[0]),
        Payload::Example => Input::Examples(payloads),
        Payload::Instance => Input::Instances(payloads),
    }
}

/// The table wants a row per sample; responses are what the server sends.
fn policy<'a>(shared: &Shared<'a>) -> Policy<'a> {
    let shared_rows = if shared.format == Format::Table { SharedRows::Broadcast } else { SharedRows::AsDeclared };
    Policy { shared: shared_rows, outputs: shared.outputs, ..Policy::default() }
}

/// A chunk through the hook: each record (an ExampleBatch) or the chunk's
/// Examples at once is indexed and given to `each` here; then, when every
/// earlier chunk has passed, to `in_order`; what that returns is written
/// here again, so only `in_order` is serial.
fn hooked(
    shared: &Shared<'_>,
    hook: &dyn RowsHook,
    ex: &mut Extractor,
    chunk: &Chunk,
    payloads: &[&[u8]],
    push: &mut dyn FnMut(Extracted, usize, &mut Processed),
    p: &mut Processed,
) {
    let mut indexed = Vec::new();
    if payloads.is_empty() {
        // A chunk of no records (a file that did not open, a framing error
        // at its start) still passes the turnstile below, with nothing.
    } else if shared.options.payload == Payload::ExampleBatch {
        for i in 0..payloads.len() {
            match index_each(shared, hook, ex, chunk, i, &payloads[i..=i]) {
                Ok((rows, carry)) => indexed.push((i, 1, rows, carry)),
                Err(bad) => p.bad.push(bad),
            }
        }
    } else {
        // Examples: as many records at once as the plan takes rows; a
        // group that fails goes one record at a time, to name the bad ones.
        let group = shared.plan.limits.max_batch_size.max(1);
        for start in (0..payloads.len()).step_by(group) {
            let end = (start + group).min(payloads.len());
            if let Ok((rows, carry)) = index_each(shared, hook, ex, chunk, start, &payloads[start..end]) {
                indexed.push((start, end - start, rows, carry));
                continue;
            }
            for i in start..end {
                match index_each(shared, hook, ex, chunk, i, &payloads[i..=i]) {
                    Ok((rows, carry)) => indexed.push((i, 1, rows, carry)),
                    Err(bad) => p.bad.push(bad),
                }
            }
        }
    }
    let Some(ready) = in_turn(shared, chunk.seq, || {
        let mut ready = Vec::new();
        for (first, n, rows, carry) in indexed {
            let ctx = record_ctx(chunk, first, &payloads[first..first + n]);
            match hook.in_order(&ctx, rows, carry) {
                Ok(units) => ready.extend(units.into_iter().map(|u| (first, u))),
                Err(e) => {
                    let at = first + blame(&e, n);
                    p.bad.push(BadRecord::at(&chunk.at(), at, BadError::Extract(Arc::new(e))));
                }
            }
        }
        lock(&shared.order).summary.transforms = hook.counts();
        ready
    }) else {
        return;
    };
    for (first, rows) in ready {
        write_released(shared, ex, chunk, payloads, (first, rows), push, p);
    }
    // Bad records in input order, wherever they were found (`each`,
    // `in_order`, writing).
    p.bad.sort_by_key(|b| b.index);
}

/// Writes a table the hook released (from the chunk's record `first` on):
/// in pieces of at most the plan's `max_batch_size` rows (negatives can
/// make more rows than the input had). A row that fails to write takes
/// its record out, reported, and the other records' rows are written
/// again, so one bad Example does not cost its chunk.
fn write_released(
    shared: &Shared<'_>,
    ex: &mut Extractor,
    chunk: &Chunk,
    payloads: &[&[u8]],
    (first, mut rows): (usize, crate::extract::Rows<'_>),
    push: &mut dyn FnMut(Extracted, usize, &mut Processed),
    p: &mut Processed,
) {
    let max = shared.plan.limits.max_batch_size.max(1);
    let policy = policy(shared);
    while !rows.is_empty() {
        let rest = (rows.len() > max).then(|| rows.split_off(max));
        loop {
            let mut out = Extracted::default();
            let Err(e) = ex.write(shared.plan, &rows, policy, &mut out) else {
                push(out, first, p);
                break;
            };
            let record = e.row().and_then(|r| record_of(&rows, r, payloads));
            p.bad.push(BadRecord::at(&chunk.at(), record.unwrap_or(first), BadError::Extract(Arc::new(e))));
            // Without a record to take out, the whole table goes.
            let Some(record) = record else { break };
            let keep: Vec<bool> = (0..rows.len()).map(|r| record_of(&rows, r, payloads) != Some(record)).collect();
            rows.retain(|r| keep[r]);
            if rows.is_empty() {
                break;
            }
        }
        match rest {
            Some(r) => rows = r,
            None => break,
        }
    }
}

/// The record (of `payloads`) row `row` of Examples came from.
fn record_of(rows: &crate::extract::Rows<'_>, row: usize, payloads: &[&[u8]]) -> Option<usize> {
    match rows.sample(row) {
        crate::extract::Sample::Example(b) => {
            payloads.iter().position(|p| p.as_ptr() == b.as_ptr() && p.len() == b.len())
        }
        crate::extract::Sample::BatchRow { .. } => None,
    }
}

/// Indexes `payloads` (from the chunk's record `first`) and runs the hook's
/// `each` on the rows.
fn index_each<'c>(
    shared: &Shared<'_>,
    hook: &dyn RowsHook,
    ex: &mut Extractor,
    chunk: &'c Chunk,
    first: usize,
    payloads: &'c [&'c [u8]],
) -> Result<(crate::extract::Rows<'c>, Carry), BadRecord> {
    let bad = |e| BadRecord::at(&chunk.at(), first + blame(&e, payloads.len()), BadError::Extract(Arc::new(e)));
    let mut rows = ex.index(shared.plan, input(shared, payloads), None).map_err(bad)?;
    let carry = hook.each(&record_ctx(chunk, first, payloads), &mut rows).map_err(bad)?;
    Ok((rows, carry))
}

fn record_ctx<'c>(chunk: &'c Chunk, first: usize, payloads: &'c [&'c [u8]]) -> RecordCtx<'c> {
    let (meta, _) = chunk.records.get(first).copied().unwrap_or_default();
    RecordCtx { source: &chunk.source, index: meta.index, offset: meta.offset, records: payloads.len(), payloads }
}

/// Runs `f` once every chunk before `seq` has run its own, then lets the
/// next chunk's run. `None` when the run failed while waiting.
fn in_turn<T>(shared: &Shared<'_>, seq: u64, f: impl FnOnce() -> T) -> Option<T> {
    let mut next = lock(&shared.hook_next);
    while *next != seq {
        if shared.abort.load(Ordering::Relaxed) {
            return None;
        }
        // A failure elsewhere sets `abort` without knowing of this wait:
        // look again now and then.
        let tick = std::time::Duration::from_millis(20);
        next = shared.hook_turn.wait_timeout(next, tick).unwrap_or_else(std::sync::PoisonError::into_inner).0;
    }
    let out = f();
    *next += 1;
    shared.hook_turn.notify_all();
    Some(out)
}

/// The record (of `n`) an error of an Examples call belongs to.
fn blame(e: &crate::ExtractError, n: usize) -> usize {
    e.row().filter(|&r| r < n && n > 1).unwrap_or(0)
}

/// An extraction's output as the sink's item: its framed response, or its
/// rows as a record batch, encoded by the worker's `encoder` when the sink
/// gave one. An error is Arrow's, as text.
fn prepare(
    plan: &Plan,
    format: Format,
    out: Extracted,
    encoder: Option<&mut (dyn BatchEncoder + '_)>,
) -> Result<Prepared, String> {
    match format {
        Format::Responses => Ok(Prepared::Frames(frame_response(plan, out))),
        Format::Table => {
            let batch = super::table::to_batch(out, plan).map_err(|e| e.to_string())?;
            match encoder {
                Some(encoder) => encoder.encode(batch).map_err(|e| e.to_string()),
                None => Ok(Prepared::Batch(batch)),
            }
        }
    }
}

/// One record's response, framed, in a buffer of its exact size (one per
/// record: growing a chunk's buffer copied its bytes again).
fn frame_response(plan: &Plan, out: Extracted) -> Vec<u8> {
    let response = ExtractResponse {
        model: plan.name.clone(),
        model_version: plan.identity().version.clone(),
        batch_size: out.batch_size as i32,
        tensors: out.into_tensors(),
    };
    let len = response.encoded_len();
    let mut frame = Vec::with_capacity(8 + len);
    frame.extend_from_slice(&(len as u64).to_le_bytes());
    response.encode(&mut frame).expect("the buffer holds the encoded length");
    frame
}

/// Hands a chunk's output to the writer. Whoever finds the next chunk ready
/// and nobody writing becomes the writer until no ready chunk is left.
fn deliver(shared: &Shared<'_>, seq: u64, processed: Processed) {
    let mut order = lock(&shared.order);
    order.pending.insert(seq, processed);
    if order.writing {
        return;
    }
    order.writing = true;
    loop {
        // After a failure nothing more is written.
        if shared.abort.load(Ordering::Relaxed) {
            order.pending.clear();
            break;
        }
        let next = order.next;
        let Some(p) = order.pending.remove(&next) else { break };
        let sink = order.sink.take().expect("the writer holds the sink");
        drop(order);
        let outcome = write_chunk(shared, &mut *sink, p);
        order = lock(&shared.order);
        order.sink = Some(sink);
        order.next += 1;
        match outcome {
            Ok(stats) => {
                order.summary.add(&stats);
                shared.observer.progress(&order.summary.with_bytes(&shared.input_bytes));
            }
            Err(e) => {
                if order.error.is_none() {
                    order.error = Some(e);
                }
                shared.abort.store(true, Ordering::Relaxed);
            }
        }
        shared.turn.notify_all();
    }
    order.writing = false;
    shared.turn.notify_all();
}

/// Writes one chunk's items, reporting its bad records first; under
/// `OnError::Fail` a bad record is the run's error and nothing of its chunk
/// is written.
fn write_chunk(shared: &Shared<'_>, sink: &mut dyn Sink, p: Processed) -> Result<Processed, RunError> {
    if shared.options.on_error == OnError::Fail
        && let Some(bad) = p.bad.first()
    {
        return Err(RunError::Bad(Box::new(bad.clone())));
    }
    for bad in &p.bad {
        shared.observer.bad_record(bad);
    }
    let Processed { items, bad, records, rows_written, payload_bytes } = p;
    for item in items {
        sink.write(item)?;
    }
    Ok(Processed { items: Vec::new(), bad, records, rows_written, payload_bytes })
}

impl Summary {
    fn add(&mut self, p: &Processed) {
        self.records += p.records;
        self.bad_records += p.bad.len() as u64;
        self.rows_written += p.rows_written;
        self.payload_bytes += p.payload_bytes;
    }

    fn with_bytes(&self, input: &AtomicU64) -> Summary {
        Summary { input_bytes: input.load(Ordering::Relaxed), ..self.clone() }
    }
}
