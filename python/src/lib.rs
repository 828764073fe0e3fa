//! `fex._fex`, the native half of the Python package: the library's `Plan`
//! and entry point, with columns handed to numpy, torch and Arrow without
//! copying a value. The Python half (`python/fex/`) adds the conversions
//! that import optional packages (torch, torchrec, TensorFlow, pyarrow)
//! and the Spark helpers.

mod buffer;
mod column;
mod corpus;
mod errors;
mod extracted;
mod nearline;
mod offline;
mod plan;
mod records;
mod result;

use pyo3::prelude::*;

/// Every Rust allocation of the extension (the columns numpy and Arrow
/// views share included, which Rust frees) goes through mimalloc: the
/// system allocator returned each call's large buffers to the OS, and a
/// fresh process paid their page faults on every call.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _fex(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_class::<plan::Plan>()?;
    m.add_class::<plan::Identity>()?;
    m.add_class::<plan::TensorSpec>()?;
    m.add_class::<extracted::Extracted>()?;
    m.add_class::<column::Column>()?;
    m.add_class::<buffer::Buffer>()?;
    m.add("ExtractError", py.get_type::<errors::ExtractError>())?;
    m.add("ConfigError", py.get_type::<errors::ConfigError>())?;
    m.add("RecordError", py.get_type::<records::RecordError>())?;
    m.add_class::<records::Records>()?;
    m.add_function(wrap_pyfunction!(records::read_records, m)?)?;
    m.add("BadRecordError", py.get_type::<result::BadRecordError>())?;
    m.add_class::<result::RunResult>()?;
    m.add_class::<result::BadRecord>()?;
    m.add_function(wrap_pyfunction!(offline::run, m)?)?;
    m.add_function(wrap_pyfunction!(corpus::_corpus_case, m)?)?;
    m.add_class::<nearline::RequestKeys>()?;
    m.add("JoinError", py.get_type::<nearline::JoinError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
