//! `_corpus_case`: a golden-corpus case file (`tests/corpus/*.yaml`) read
//! by the library's `fex::corpus` and its sample encoded with prost, as the
//! library's, the CLI's and the server's tests read it, so the Python
//! package's tests run the same cases through the Python API and compare
//! with the same expectations. Private (`fex._fex`): for tests.

use fex::corpus::{Case, Encoded};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

/// The case in `text` as a dict: `model` (YAML text), `input` ("batch" or
/// "examples"), `samples` (the ExampleBatch's bytes, or a list of the
/// Examples' bytes) and `expect` (the expected rendering).
#[pyfunction]
pub fn _corpus_case<'py>(py: Python<'py>, text: &str) -> PyResult<Bound<'py, PyDict>> {
    let bad = |e: fex::corpus::CorpusError| PyValueError::new_err(format!("bad case file: {e}"));
    let case = Case::parse(text).map_err(bad)?;
    let d = PyDict::new(py);
    d.set_item("model", &case.model)?;
    d.set_item("expect", &case.expect)?;
    match case.input.encode().map_err(bad)? {
        Encoded::Batch(bytes) => {
            d.set_item("input", "batch")?;
            d.set_item("samples", PyBytes::new(py, &bytes))?;
        }
        Encoded::Examples(rows) => {
            d.set_item("input", "examples")?;
            d.set_item("samples", PyList::new(py, rows.iter().map(|r| PyBytes::new(py, r)))?)?;
        }
    }
    Ok(d)
}
