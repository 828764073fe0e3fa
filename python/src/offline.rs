//! `run`: the library's offline pipeline (`fex::offline::run`, what `fex
//! extract` runs) from Python. PBDataset files in; a Parquet file, an Arrow
//! IPC stream or framed `fex.v1.ExtractResponse`s out, or, without `out`,
//! the table (or the responses) kept in memory. The model's `offline:`
//! transforms run as in `fex extract`. The whole run releases the GIL.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use fex::offline::identity::{IdentitySink, RowIdentity};
use fex::offline::{
    self, BadRecord as LibBadRecord, CollectSink, IpcSink, Observer, OnError, Options, ParquetCodec, ParquetOptions,
    ParquetSink, Payload, ResponsesSink, RunError, RunInput, SharedBuf, Sink,
};
use fex::records::{Framing, ReadOptions, sources};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::plan::Plan;
use crate::records::compression_of;
use crate::result::{RunResult, bad_record_error, empty_schema};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Format {
    Parquet,
    Arrow,
    Responses,
}

fn format_of(name: &str) -> PyResult<Format> {
    match name {
        "parquet" => Ok(Format::Parquet),
        "arrow" | "ipc" => Ok(Format::Arrow),
        "responses" => Ok(Format::Responses),
        other => Err(PyValueError::new_err(format!("format={other:?}: expected parquet, arrow (ipc) or responses"))),
    }
}

fn payload_of(name: &str) -> PyResult<Payload> {
    match name {
        "batch" | "example_batch" | "example-batch" => Ok(Payload::ExampleBatch),
        "examples" | "example" => Ok(Payload::Example),
        "instances" | "instance" => Ok(Payload::Instance),
        other => Err(PyValueError::new_err(format!("payload={other:?}: expected batch, examples or instances"))),
    }
}

fn codec_of(name: &str) -> PyResult<ParquetCodec> {
    match name {
        "none" => Ok(ParquetCodec::None),
        "snappy" => Ok(ParquetCodec::Snappy),
        "zstd" => Ok(ParquetCodec::Zstd),
        other => Err(PyValueError::new_err(format!("parquet_compression={other:?}: expected none, snappy or zstd"))),
    }
}

/// Collects every bad record (under on_error="skip"; the writer thread
/// tells them in input order), and stops the run once Python was
/// interrupted.
#[derive(Default)]
struct Collect {
    bad: Mutex<Vec<LibBadRecord>>,
    interrupted: AtomicBool,
}

impl Observer for Collect {
    fn bad_record(&self, bad: &LibBadRecord) {
        if let Ok(mut all) = self.bad.lock() {
            all.push(bad.clone());
        }
    }

    fn stop(&self) -> bool {
        self.interrupted.load(Ordering::Relaxed)
    }
}

/// How often a running `fex.run` looks for Ctrl-C (Python's signal handlers
/// run only on the main thread, in `check_signals`).
const SIGNAL_POLL: Duration = Duration::from_millis(50);

/// Runs `work` on a thread of its own while this thread, without the GIL,
/// waits for it and polls Python's signal handlers; an exception they raise
/// (KeyboardInterrupt) sets `interrupted`, which stops the run at its next
/// chunk, and is returned once the run has ended.
fn run_interruptibly<T: Send>(
    py: Python<'_>,
    interrupted: &AtomicBool,
    work: impl FnOnce() -> T + Send,
) -> (T, Option<PyErr>) {
    py.detach(|| {
        std::thread::scope(|s| {
            let (done, finished) = mpsc::channel();
            let worker = s.spawn(move || {
                let result = work();
                let _ = done.send(());
                result
            });
            let mut signal = None;
            while let Err(mpsc::RecvTimeoutError::Timeout) = finished.recv_timeout(SIGNAL_POLL) {
                if signal.is_none()
                    && let Err(e) = Python::attach(|py| py.check_signals())
                {
                    interrupted.store(true, Ordering::Relaxed);
                    signal = Some(e);
                }
            }
            match worker.join() {
                Ok(result) => (result, signal),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        })
    })
}

/// The inputs: one path or pattern, or a list of them (globs and
/// directories expand as in `fex extract`), or `bytes`, a whole record
/// stream held in memory (named `<memory>` in errors).
fn inputs_of(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<RunInput>> {
    if let Ok(bytes) = inputs.cast::<PyBytes>() {
        // One copy: the run reads it without the GIL.
        let bytes = bytes.as_bytes().to_vec().into();
        return Ok(vec![RunInput::Memory { name: "<memory>".into(), bytes }]);
    }
    Ok(input_paths(inputs)?.into_iter().map(RunInput::Path).collect())
}

fn input_paths(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<PathBuf>> {
    let patterns: Vec<String> = match inputs.extract::<PathBuf>() {
        Ok(one) => vec![one.to_string_lossy().into_owned()],
        Err(_) => {
            let many: Vec<PathBuf> = inputs.extract()?;
            many.iter().map(|p| p.to_string_lossy().into_owned()).collect()
        }
    };
    sources::expand(&patterns).map_err(PyFileNotFoundError::new_err)
}

/// Runs the offline pipeline: the plan's outputs for every record of
/// `inputs`, written to `out` (or kept in memory), as `fex extract` does.
#[pyfunction]
#[pyo3(signature = (
    plan, inputs, out=None, *, format="parquet", payload="batch", threads=None, on_error="fail",
    transforms=true, compression="auto", lagrangex_header=false, kafka_dump_prefix=false,
    has_sort_id=false, kafka_dump=false, max_record_bytes=fex::records::DEFAULT_MAX_RECORD_BYTES,
    row_group_size=65536, parquet_compression="snappy", parquet_dictionary=false, chunk_records=4096,
    item_pool_restore=None, item_pool_save=None, identity=false,
))]
#[allow(clippy::too_many_arguments)]
pub fn run(
    py: Python<'_>,
    plan: &Plan,
    inputs: &Bound<'_, PyAny>,
    out: Option<PathBuf>,
    format: &str,
    payload: &str,
    threads: Option<usize>,
    on_error: &str,
    transforms: bool,
    compression: &str,
    lagrangex_header: bool,
    kafka_dump_prefix: bool,
    has_sort_id: bool,
    kafka_dump: bool,
    max_record_bytes: u64,
    row_group_size: usize,
    parquet_compression: &str,
    parquet_dictionary: bool,
    chunk_records: usize,
    item_pool_restore: Option<PathBuf>,
    item_pool_save: Option<PathBuf>,
    identity: bool,
) -> PyResult<RunResult> {
    let format = format_of(format)?;
    let on_error = match on_error {
        "fail" => OnError::Fail,
        "skip" => OnError::Skip,
        other => return Err(PyValueError::new_err(format!("on_error={other:?}: expected fail or skip"))),
    };
    let framing = Framing { lagrangex_header, kafka_dump_prefix, has_sort_id, kafka_dump };
    let read = ReadOptions { framing, compression: compression_of(compression)?, max_record_bytes };
    let threads = threads.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let options = Options {
        payload: payload_of(payload)?,
        read,
        threads: threads.max(1),
        on_error,
        chunk_records: chunk_records.max(1),
        ..Options::default()
    };
    let parquet = ParquetOptions {
        row_group_size: row_group_size.max(1),
        codec: codec_of(parquet_compression)?,
        dictionary: parquet_dictionary,
    };
    let inputs = inputs_of(inputs)?;
    // identity=True: the model compiled with the outputs that read each
    // row's identity, its rows kept with `request_id`, `row` and
    // `request_time` first (what a fex training table keys rows by).
    let keyed = if identity {
        if out.is_some() || format == Format::Responses {
            return Err(PyValueError::new_err(
                "identity=True keeps the table in memory: give no out, and format parquet or arrow",
            ));
        }
        let (with, source) = plan.identity_plan(py)?;
        let per_record = options.payload == Payload::ExampleBatch;
        Some((with, RowIdentity { source, batch_per_record: per_record }))
    } else {
        None
    };
    let lib = keyed.as_ref().map_or(plan.inner(), |(with, _)| with.inner());
    let mut output = match &keyed {
        Some((with, rows)) => Output::Keyed(
            IdentitySink::new(CollectSink::default(), plan.inner(), with.inner(), rows.clone())
                .map_err(|e| PyValueError::new_err(e.to_string()))?,
        ),
        None => Output::new(out, format, parquet, lib)?,
    };
    let hook = fex::samples::Transforms::new(lib);
    let use_hook = transforms && !hook.is_empty();
    if !transforms && (item_pool_restore.is_some() || item_pool_save.is_some()) {
        return Err(PyValueError::new_err("item_pool_restore / item_pool_save need the transforms (transforms=True)"));
    }
    item_pool::restore(&hook, item_pool_restore.as_deref(), item_pool_save.is_some())?;
    let observer = Collect::default();
    let sink = output.sink();
    let (result, signal) = run_interruptibly(py, &observer.interrupted, || {
        let hook: Option<&dyn offline::RowsHook> = if use_hook { Some(&hook) } else { None };
        offline::run_inputs(lib, &inputs, options, sink, hook, &observer)
    });
    if let Some(e) = signal {
        return Err(e);
    }
    let summary = match result {
        Ok(summary) => summary,
        Err(RunError::Bad(bad)) => return Err(bad_record_error(py, &bad)),
        Err(e) => return Err(PyOSError::new_err(e.to_string())),
    };
    let bad = observer.bad.into_inner().unwrap_or_default();
    item_pool::save(&hook, item_pool_save.as_deref())?;
    output.into_result(RunResult { summary, bad, batches: None, responses: None }, lib)
}

/// negative_gen's item pool carried from one run to the next, as `fex
/// extract --item-pool-restore / --item-pool-save` carries it.
mod item_pool {
    use std::path::Path;

    use fex::samples::Transforms;
    use pyo3::PyResult;
    use pyo3::exceptions::{PyOSError, PyValueError};

    /// Before the run: a save needs a negative_gen; a restore reads the
    /// file into the pool (ValueError when the file is no pool of this
    /// model's, OSError when it cannot be read).
    pub fn restore(transforms: &Transforms, restore: Option<&Path>, save: bool) -> PyResult<()> {
        if save && transforms.save_item_pool().is_none() {
            return Err(PyValueError::new_err(
                "item_pool_save: the model has no negative_gen transform, so no item pool",
            ));
        }
        let Some(file) = restore else { return Ok(()) };
        let bytes = std::fs::read(file)
            .map_err(|e| PyOSError::new_err(format!("cannot read item pool {}: {e}", file.display())))?;
        transforms.restore_item_pool(&bytes).map_err(|e| PyValueError::new_err(format!("{}: {e}", file.display())))
    }

    /// After the run: the pool written beside `file` and renamed over it.
    pub fn save(transforms: &Transforms, file: Option<&Path>) -> PyResult<()> {
        let (Some(file), Some(bytes)) = (file, transforms.save_item_pool()) else { return Ok(()) };
        let mut tmp = file.as_os_str().to_owned();
        tmp.push(".tmp");
        std::fs::write(&tmp, &bytes)
            .and_then(|()| std::fs::rename(&tmp, file))
            .map_err(|e| PyOSError::new_err(format!("cannot save item pool {}: {e}", file.display())))
    }
}

/// Where a run writes.
enum Output {
    /// A file in any format.
    File(Box<dyn Sink>),
    /// The table kept in memory.
    Table(CollectSink),
    /// The table kept in memory, identity columns first.
    Keyed(IdentitySink<CollectSink>),
    /// Framed responses kept in memory.
    Responses(ResponsesSink, SharedBuf),
}

impl Output {
    fn new(out: Option<PathBuf>, format: Format, parquet: ParquetOptions, plan: &fex::Plan) -> PyResult<Self> {
        let sink_error = |e: offline::SinkError| PyOSError::new_err(e.to_string());
        let Some(path) = out else {
            return Ok(match format {
                Format::Responses => {
                    let buf = SharedBuf::default();
                    Output::Responses(ResponsesSink::new(Box::new(buf.clone())), buf)
                }
                Format::Parquet | Format::Arrow => Output::Table(CollectSink::default()),
            });
        };
        let file = std::fs::File::create(&path)
            .map_err(|e| PyOSError::new_err(format!("cannot create {}: {e}", path.display())))?;
        let writer = offline::buffered(file);
        let sink: Box<dyn Sink> = match format {
            Format::Parquet => Box::new(ParquetSink::new(writer, plan, parquet).map_err(sink_error)?),
            Format::Arrow => Box::new(IpcSink::new(writer, plan).map_err(sink_error)?),
            Format::Responses => Box::new(ResponsesSink::new(writer)),
        };
        Ok(Output::File(sink))
    }

    fn sink(&mut self) -> &mut dyn Sink {
        match self {
            Output::File(sink) => sink.as_mut(),
            Output::Table(sink) => sink,
            Output::Keyed(sink) => sink,
            Output::Responses(sink, _) => sink,
        }
    }

    /// The result with what was kept in memory (an empty table has the
    /// model's columns).
    fn into_result(self, mut result: RunResult, plan: &fex::Plan) -> PyResult<RunResult> {
        match self {
            Output::File(_) => {}
            Output::Table(collected) => {
                let schema = match collected.batches.first() {
                    Some(b) => b.schema(),
                    None => empty_schema(plan)?,
                };
                result.batches = Some((schema, collected.batches));
            }
            Output::Keyed(sink) => {
                let schema = sink.schema();
                result.batches = Some((schema, sink.into_inner().batches));
            }
            Output::Responses(sink, buf) => {
                drop(sink);
                result.responses = Some(buf.take());
            }
        }
        Ok(result)
    }
}
