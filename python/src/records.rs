//! `read_records`: Monolith PBDataset record files (the library's
//! `records::RecordReader`: header options, 0xfefefefe, zstd / gzip /
//! snappy) as a Python iterator of `bytes`. Each record is read with the GIL
//! released; a bad record raises `fex.RecordError` with the file, the
//! record's index and its byte offset.

use std::path::PathBuf;
use std::sync::Mutex;

use fex::records::{Compression, Framing, ReadOptions, RecordError as LibRecordError, RecordErrorKind, RecordReader};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;

pyo3::create_exception!(fex, RecordError, pyo3::exceptions::PyOSError, "A record file that cannot be read.");

/// An iterator over one file's records.
#[pyclass(frozen, module = "fex._fex")]
pub struct Records {
    reader: Mutex<RecordReader>,
    with_meta: bool,
}

#[pymethods]
impl Records {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next record's payload (with `with_meta`: a tuple of payload,
    /// index, byte offset, pb type and data source key).
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let mut buf = Vec::new();
        // The lock is taken without the GIL: another thread may be reading.
        let next = py.detach(|| self.reader.lock().map(|mut reader| reader.next_into(&mut buf)).map_err(|_| ()));
        match next.map_err(|_| PyRuntimeError::new_err("record reader poisoned"))? {
            Ok(None) => Ok(None),
            Ok(Some(meta)) => {
                let payload = PyBytes::new(py, &buf);
                if self.with_meta {
                    let t = (payload, meta.index, meta.offset, meta.pb_type, meta.data_source_key);
                    Ok(Some(t.into_pyobject(py)?.into_any().unbind()))
                } else {
                    Ok(Some(payload.into_any().unbind()))
                }
            }
            Err(e) => Err(record_error(py, &e)),
        }
    }
}

pub fn record_error(py: Python<'_>, e: &LibRecordError) -> PyErr {
    let err = RecordError::new_err(e.to_string());
    let set = || -> PyResult<()> {
        let value = err.value(py);
        value.setattr("file", e.source_name())?;
        value.setattr("index", e.index())?;
        value.setattr("offset", e.offset())?;
        let kind = match e.kind() {
            RecordErrorKind::Io(_) => "io",
            RecordErrorKind::Truncated { .. } => "truncated",
            RecordErrorKind::CorruptLength => "corrupt_length",
            RecordErrorKind::TooLarge { .. } => "too_large",
            RecordErrorKind::Compression(_) => "compression",
            _ => "other",
        };
        value.setattr("kind", kind)
    };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// The `compression=` argument: "auto" reads the magic bytes.
pub fn compression_of(name: &str) -> PyResult<Compression> {
    match name {
        "auto" => Ok(Compression::Auto),
        "none" => Ok(Compression::None),
        "zstd" => Ok(Compression::Zstd),
        "gzip" => Ok(Compression::Gzip),
        "zlib" => Ok(Compression::Zlib),
        "snappy" => Ok(Compression::Snappy),
        "snappy_framed" => Ok(Compression::SnappyFramed),
        other => {
            let msg = format!("compression={other:?}: expected auto, none, zstd, gzip, zlib, snappy or snappy_framed");
            Err(PyValueError::new_err(msg))
        }
    }
}

/// Reads the records of a PBDataset file (`-` for standard input), or of
/// a whole stream held in memory (`bytes`: a file Spark read; `name` is what
/// errors call it).
#[pyfunction]
#[pyo3(signature = (
    source, *, compression="auto", lagrangex_header=false, kafka_dump_prefix=false,
    has_sort_id=false, kafka_dump=false, max_record_bytes=fex::records::DEFAULT_MAX_RECORD_BYTES,
    with_meta=false, name=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn read_records(
    py: Python<'_>,
    source: &Bound<'_, PyAny>,
    compression: &str,
    lagrangex_header: bool,
    kafka_dump_prefix: bool,
    has_sort_id: bool,
    kafka_dump: bool,
    max_record_bytes: u64,
    with_meta: bool,
    name: Option<String>,
) -> PyResult<Records> {
    let compression = compression_of(compression)?;
    let framing = Framing { lagrangex_header, kafka_dump_prefix, has_sort_id, kafka_dump };
    let options = ReadOptions { framing, compression, max_record_bytes };
    let reader = match source.cast::<PyBytes>() {
        Ok(bytes) => {
            // One copy: the reader outlives this call and reads without the GIL.
            let data = std::io::Cursor::new(bytes.as_bytes().to_vec());
            RecordReader::new(name.as_deref().unwrap_or("<bytes>"), data, options)
        }
        Err(_) => {
            let path: PathBuf = source.extract()?;
            RecordReader::open(&path, options, None)
        }
    };
    let reader = reader.map_err(|e| record_error(py, &e))?;
    Ok(Records { reader: Mutex::new(reader), with_meta })
}
