//! The package's exceptions, carrying the library's structured fields:
//! `ExtractError` (row, source, field path, byte offset, kind) and
//! `ConfigError` (every problem of a config, each with its path).

use fex::ErrorKind;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyList;

pyo3::create_exception!(fex, ExtractError, PyValueError, "Bad sample bytes: the library's ExtractError.");
pyo3::create_exception!(fex, ConfigError, PyValueError, "A model config with errors, every one listed.");

/// `fex.ExtractError` with `row`, `source`, `path`, `offset` and `kind` set
/// (None where the library does not know them).
pub fn extract_error(py: Python<'_>, e: &fex::ExtractError) -> PyErr {
    let err = ExtractError::new_err(e.to_string());
    let set = || -> PyResult<()> {
        let value = err.value(py);
        value.setattr("row", e.row())?;
        value.setattr("source", e.source_name())?;
        value.setattr("path", e.path())?;
        value.setattr("offset", e.offset())?;
        value.setattr("kind", kind_name(e.kind()))?;
        Ok(())
    };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// `fex.ConfigError` whose `errors` lists `(path, message)` for every problem.
pub fn config_error(py: Python<'_>, e: &fex::ConfigErrors) -> PyErr {
    let err = ConfigError::new_err(e.to_string());
    let pairs: Vec<(String, String)> = e.0.iter().map(|x| (x.path.clone(), x.message.clone())).collect();
    let set = || -> PyResult<()> { err.value(py).setattr("errors", PyList::new(py, pairs)?) };
    match set() {
        Ok(()) => err,
        Err(failed) => failed,
    }
}

/// A stable name for each kind, for code that tells errors apart.
fn kind_name(kind: &ErrorKind) -> &'static str {
    match kind {
        ErrorKind::Decode(_) => "decode",
        ErrorKind::BatchSize { .. } => "batch_size",
        ErrorKind::TooManyRows { .. } => "too_many_rows",
        ErrorKind::ListLength { .. } => "list_length",
        ErrorKind::SharedListLength { .. } => "shared_list_length",
        ErrorKind::TypeMismatch { .. } => "type_mismatch",
        ErrorKind::Invalid { .. } => "invalid",
        ErrorKind::TooLarge { .. } => "too_large",
        ErrorKind::InputTooLarge { .. } => "input_too_large",
        ErrorKind::SplitsOverflow { .. } => "splits_overflow",
        ErrorKind::Operator { .. } => "operator",
        _ => "other",
    }
}
