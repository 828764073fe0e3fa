//! `run`: the library's offline pipeline (`fex::offline::run`, what `fex
//! extract` runs) from Python. PBDataset files in; a Parquet file, an Arrow
//! IPC stream or framed `fex.v1.ExtractResponse`s out, or, without `out`,
//! the table (or the responses) kept in memory. The model's `offline:`
//! transforms run as in `fex extract`. The whole run releases the GIL.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use fex::offline::{
    self, BadError, BadRecord as LibBadRecord, CollectSink, IpcSink, Observer, OnError, Options, ParquetCodec,
    ParquetOptions, ParquetSink, Payload, ResponsesSink, RunError, Sink, Summary,
};
use fex::records::{Framing, ReadOptions, sources};
use fex::{Extractor, Input, Policy, SharedRows};
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList};

use crate::errors::extract_error;
use crate::plan::Plan;
use crate::records::{compression_of, record_error};

pyo3::create_exception!(
    fex,
    BadRecordError,
    pyo3::exceptions::PyException,
    "A record an offline run could not read or extract: where it is, and why."
);

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

/// Bytes written to memory by a sink, shared with the caller.
#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().map_err(|_| std::io::Error::other("poisoned"))?.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Collects every bad record (under on_error="skip"; the writer thread
/// tells them in input order).
#[derive(Default)]
struct Collect {
    bad: Mutex<Vec<LibBadRecord>>,
}

impl Observer for Collect {
    fn bad_record(&self, bad: &LibBadRecord) {
        if let Ok(mut all) = self.bad.lock() {
            all.push(bad.clone());
        }
    }
}

/// What `run` hands back: the summary, every skipped record, and the
/// output when it was kept in memory.
#[pyclass(frozen, module = "fex._fex")]
pub struct RunResult {
    summary: Summary,
    bad: Vec<LibBadRecord>,
    batches: Option<(SchemaRef, Vec<RecordBatch>)>,
    responses: Option<Vec<u8>>,
}

/// The table's schema for a plan when nothing was written: the columns of
/// an extraction of no rows (as the Parquet sink writes an empty table).
fn empty_schema(plan: &fex::Plan) -> PyResult<SchemaRef> {
    let mut out = fex::Extracted::default();
    let policy = Policy { shared: SharedRows::Broadcast, ..Policy::default() };
    Extractor::new()
        .extract(plan, Input::Examples(&[]), policy, &mut out)
        .map_err(|e| PyRuntimeError::new_err(format!("the model's empty table: {e}")))?;
    let batch = offline::table::to_batch(out, plan).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
    Ok(batch.schema())
}

/// Raises a bad record as `fex.BadRecordError`: `file`, `index` and
/// `offset` (the record's byte offset in its file), `kind` ("read",
/// "extract", "arrow") and `cause`, the library's own error as
/// `fex.RecordError` or `fex.ExtractError` (also `__cause__`).
pub fn bad_record_error(py: Python<'_>, bad: &LibBadRecord) -> PyErr {
    let err = BadRecordError::new_err(bad.to_string());
    let set = || -> PyResult<()> {
        let value = err.value(py);
        fill_bad(py, value.as_any(), bad)?;
        if let Ok(cause) = value.getattr("cause")
            && !cause.is_none()
        {
            value.setattr("__cause__", cause)?;
        }
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

fn fill_bad(py: Python<'_>, target: &Bound<'_, PyAny>, bad: &LibBadRecord) -> PyResult<()> {
    target.setattr("file", &*bad.source)?;
    target.setattr("index", bad.index)?;
    target.setattr("offset", bad.offset)?;
    let (kind, cause) = match &bad.error {
        BadError::Read(e) => ("read", Some(record_error(py, e))),
        BadError::Extract(e) => ("extract", Some(extract_error(py, e))),
        BadError::Arrow(_) => ("arrow", None),
    };
    target.setattr("kind", kind)?;
    let cause: Option<Py<PyAny>> = cause.map(|c| c.into_value(py).into_any());
    target.setattr("cause", cause)?;
    target.setattr("message", bad.to_string())
}

/// One skipped record: `file`, `index`, `offset`, `kind`, `message`, `cause`.
#[pyclass(frozen, module = "fex._fex", dict)]
pub struct BadRecord {}

#[pymethods]
impl BadRecord {
    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let message: String = slf.getattr("message")?.extract()?;
        Ok(format!("BadRecord({message:?})"))
    }
}

#[pymethods]
impl RunResult {
    /// Input streams opened.
    #[getter]
    fn files(&self) -> u64 {
        self.summary.files
    }

    /// Records read (bad ones included).
    #[getter]
    fn records(&self) -> u64 {
        self.summary.records
    }

    #[getter]
    fn bad_records(&self) -> u64 {
        self.summary.bad_records
    }

    /// Rows written (samples, after transforms).
    #[getter]
    fn rows_written(&self) -> u64 {
        self.summary.rows_written
    }

    /// Bytes read from the files (compressed bytes when compressed).
    #[getter]
    fn input_bytes(&self) -> u64 {
        self.summary.input_bytes
    }

    /// Payload bytes of the records read.
    #[getter]
    fn payload_bytes(&self) -> u64 {
        self.summary.payload_bytes
    }

    /// The transforms' counters, in config order: `{"filter_by_fids:
    /// dropped": 12, ...}` (what `fex extract` prints).
    #[getter]
    fn transforms<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, count) in &self.summary.transforms {
            d.set_item(name, count)?;
        }
        Ok(d)
    }

    /// The records skipped under on_error="skip", in input order.
    #[getter]
    fn bad<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let items = self
            .bad
            .iter()
            .map(|b| {
                let item = Bound::new(py, BadRecord {})?;
                fill_bad(py, item.as_any(), b)?;
                Ok(item)
            })
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// The framed responses, one `bytes` per input record, when the run
    /// wrote format="responses" to memory; else None.
    #[getter]
    fn responses<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyList>>> {
        let Some(data) = &self.responses else { return Ok(None) };
        let mut frames = Vec::new();
        let mut at = 0;
        while at + 8 <= data.len() {
            let n = u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes")) as usize;
            let end = (at + 8).saturating_add(n).min(data.len());
            frames.push(PyBytes::new(py, &data[at + 8..end]));
            at = end;
        }
        PyList::new(py, frames).map(Some)
    }

    /// True when the table was kept in memory (`to_arrow()` has it).
    #[getter]
    fn has_table(&self) -> bool {
        self.batches.is_some()
    }

    /// The Arrow PyCapsule stream interface over the table kept in memory
    /// (the record batches the workers made; no copy).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let Some((schema, batches)) = &self.batches else {
            return Err(PyValueError::new_err("the run wrote a file (out=...): no table is held in memory"));
        };
        let reader = RecordBatchIterator::new(batches.clone().into_iter().map(Ok), Arc::clone(schema));
        let stream = arrow_array::ffi_stream::FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, stream, c"arrow_array_stream")
    }

    /// The table kept in memory as a `pyarrow.Table`.
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("pyarrow")?.getattr("table")?.call1((slf,))
    }

    fn __repr__(&self) -> String {
        let s = &self.summary;
        format!(
            "RunResult(files={}, records={}, bad_records={}, rows_written={})",
            s.files, s.records, s.bad_records, s.rows_written
        )
    }
}

/// The inputs: one path or pattern, or a list of them (globs and
/// directories expand as in `fex extract`).
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
    row_group_size=65536, parquet_compression="snappy", chunk_records=4096,
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
    chunk_records: usize,
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
    let parquet = ParquetOptions { row_group_size: row_group_size.max(1), codec: codec_of(parquet_compression)? };
    let inputs = input_paths(inputs)?;
    let lib = plan.inner();
    let mut output = Output::new(out, format, parquet, lib)?;
    let mut hook = fex::samples::Transforms::new(lib);
    let use_hook = transforms && !hook.is_empty();
    let observer = Collect::default();
    let result = py.detach(|| {
        let hook: Option<&mut dyn offline::RowsHook> = if use_hook { Some(&mut hook) } else { None };
        offline::run(lib, &inputs, options, output.sink(), hook, &observer)
    });
    let summary = match result {
        Ok(summary) => summary,
        Err(RunError::Bad(bad)) => return Err(bad_record_error(py, &bad)),
        Err(e) => return Err(PyOSError::new_err(e.to_string())),
    };
    let bad = observer.bad.into_inner().unwrap_or_default();
    output.into_result(RunResult { summary, bad, batches: None, responses: None }, lib)
}

/// Where a run writes.
enum Output {
    /// A file in any format.
    File(Box<dyn Sink>),
    /// The table kept in memory.
    Table(CollectSink),
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
        let writer: Box<dyn Write + Send> = Box::new(std::io::BufWriter::with_capacity(1 << 20, file));
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
            Output::Responses(sink, buf) => {
                drop(sink);
                let mut held = buf.0.lock().map_err(|_| PyRuntimeError::new_err("poisoned output buffer"))?;
                result.responses = Some(std::mem::take(&mut *held));
            }
        }
        Ok(result)
    }
}
