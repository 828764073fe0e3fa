//! `Extracted`: the result of one extraction, a read-only mapping of output
//! name to `Column`. Columns become Python objects (and Arrow buffers) only
//! when looked up, so a call that reads a few of many outputs pays for
//! those few.

use std::sync::Mutex;

use fex::NamedColumn;
use pyo3::exceptions::{PyKeyError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyList;

use crate::column::Column;

/// One output: the library's column until it is first looked up.
struct Slot {
    name: String,
    pending: Mutex<Option<NamedColumn>>,
    column: PyOnceLock<Py<Column>>,
}

/// Output name → `Column`, in the plan's (or the selection's) order.
#[pyclass(frozen, mapping, module = "fex._fex")]
pub struct Extracted {
    batch_size: usize,
    lists_seen: usize,
    lists_decoded: usize,
    slots: Vec<Slot>,
}

impl Extracted {
    pub fn new(out: fex::Extracted) -> Self {
        let slots = out
            .columns
            .into_iter()
            .map(|c| Slot { name: c.name.clone(), pending: Mutex::new(Some(c)), column: PyOnceLock::new() })
            .collect();
        Self {
            batch_size: out.batch_size,
            lists_seen: out.stats.lists_seen,
            lists_decoded: out.stats.lists_decoded,
            slots,
        }
    }

    fn position(&self, name: &str) -> Option<usize> {
        self.slots.iter().position(|s| s.name == name)
    }

    fn column<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, Column>> {
        let slot = &self.slots[i];
        let column = slot.column.get_or_try_init(py, || {
            let named = slot.pending.lock().map_err(|_| PyRuntimeError::new_err("poisoned column"))?.take();
            let named = named.ok_or_else(|| PyRuntimeError::new_err("column was taken"))?;
            Py::new(py, Column::new(named)?)
        })?;
        Ok(column.bind(py).clone())
    }
}

#[pymethods]
impl Extracted {
    /// Rows in the input (ExampleBatch.batch_size, or the number of samples).
    #[getter]
    fn batch_size(&self) -> usize {
        self.batch_size
    }

    /// Feature lists (or named features) seen in the input.
    #[getter]
    fn lists_seen(&self) -> usize {
        self.lists_seen
    }

    /// Of those, the ones the plan read; the rest were skipped unread.
    #[getter]
    fn lists_decoded(&self) -> usize {
        self.lists_decoded
    }

    fn __len__(&self) -> usize {
        self.slots.len()
    }

    fn __getitem__<'py>(&self, py: Python<'py>, name: &str) -> PyResult<Bound<'py, Column>> {
        match self.position(name) {
            Some(i) => self.column(py, i),
            None => Err(PyKeyError::new_err(name.to_string())),
        }
    }

    fn __contains__(&self, name: &str) -> bool {
        self.position(name).is_some()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.keys(py)?.try_iter().map(Bound::into_any)
    }

    /// Output names, in order.
    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        PyList::new(py, self.slots.iter().map(|s| s.name.as_str()))
    }

    /// Columns, in order.
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let columns = (0..self.slots.len()).map(|i| self.column(py, i)).collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, columns)
    }

    /// `(name, column)` pairs, in order.
    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let pairs = (0..self.slots.len())
            .map(|i| Ok((self.slots[i].name.as_str(), self.column(py, i)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, pairs)
    }

    #[pyo3(signature = (name, default=None))]
    fn get<'py>(&self, py: Python<'py>, name: &str, default: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        match self.position(name) {
            Some(i) => Ok(self.column(py, i)?.into_any()),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    /// Every output as one `pyarrow.RecordBatch` (see `fex._convert`).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        slf.py().import("fex._convert")?.getattr("extracted_to_arrow")?.call1((slf,))
    }

    fn __repr__(&self) -> String {
        let names: Vec<&str> = self.slots.iter().map(|s| s.name.as_str()).collect();
        format!("Extracted(batch_size={}, outputs={names:?})", self.batch_size)
    }
}
