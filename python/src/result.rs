//! What `run` hands back: `RunResult` (the library's `Summary`, every
//! skipped record, the table or responses kept in memory) and bad records
//! as Python sees them: `fex.BadRecordError` when a run stops, `BadRecord`
//! items when it skips, both with the file, index, offset and the
//! library's own error as `cause`.

use std::sync::Arc;

use arrow_array::{RecordBatch, RecordBatchIterator};
use arrow_schema::SchemaRef;
use fex::offline::{self, BadError, BadRecord as LibBadRecord, Summary};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyCapsule, PyDict, PyList};

use crate::errors::extract_error;
use crate::records::record_error;

pyo3::create_exception!(
    fex,
    BadRecordError,
    pyo3::exceptions::PyException,
    "A record an offline run could not read or extract: where it is, and why."
);

/// What `run` hands back: the summary, every skipped record, and the
/// output when it was kept in memory.
#[pyclass(frozen, module = "fex._fex")]
pub struct RunResult {
    pub summary: Summary,
    pub bad: Vec<LibBadRecord>,
    pub batches: Option<(SchemaRef, Vec<RecordBatch>)>,
    pub responses: Option<Vec<u8>>,
}

/// The table's schema for a plan when nothing was written: the columns of
/// an extraction of no rows (as the Parquet sink writes an empty table).
pub fn empty_schema(plan: &fex::Plan) -> PyResult<SchemaRef> {
    let batch = offline::table::empty_batch(plan).map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
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
