//! `Buffer`: one buffer of a column, owned on the Rust side, that numpy
//! views through `__array_interface__` without copying. The memory is the
//! `Vec` the library wrote (moved into an Arrow buffer, which keeps the same
//! allocation); a numpy array made from a `Buffer` has it as its `base`, so
//! the memory lives as long as any view of it. The interface is read-only:
//! the same memory may be exported to Arrow, whose buffers are immutable.

use std::sync::OnceLock;

use arrow_buffer::Buffer as ArrowBuffer;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple};

/// numpy's type string of an element type (little-endian).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Elem {
    U8,
    I32,
    I64,
    U64,
    F32,
    F64,
}

impl Elem {
    fn typestr(self) -> &'static str {
        match self {
            Elem::U8 => "|u1",
            Elem::I32 => "<i4",
            Elem::I64 => "<i8",
            Elem::U64 => "<u8",
            Elem::F32 => "<f4",
            Elem::F64 => "<f8",
        }
    }

    pub fn size(self) -> usize {
        match self {
            Elem::U8 => 1,
            Elem::I32 | Elem::F32 => 4,
            Elem::I64 | Elem::U64 | Elem::F64 => 8,
        }
    }
}

/// Typed memory with a shape, as numpy sees it.
#[pyclass(frozen, module = "fex._fex")]
pub struct Buffer {
    data: ArrowBuffer,
    elem: Elem,
    shape: Vec<usize>,
    /// The interface dict, built once.
    interface: OnceLock<Py<PyDict>>,
}

impl Buffer {
    /// `data` holds `shape`'s product elements of `elem` (checked).
    pub fn new(data: ArrowBuffer, elem: Elem, shape: Vec<usize>) -> PyResult<Self> {
        let want = shape.iter().product::<usize>() * elem.size();
        if data.len() < want {
            let msg = format!("buffer of {} bytes cannot hold shape {shape:?} of {}", data.len(), elem.typestr());
            return Err(pyo3::exceptions::PyRuntimeError::new_err(msg));
        }
        Ok(Self { data, elem, shape, interface: OnceLock::new() })
    }

    /// A numpy array viewing this buffer (its `base` is the buffer).
    pub fn into_numpy(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let this = Bound::new(py, self)?;
        Ok(numpy_asarray(py)?.call1((this,))?.unbind())
    }
}

#[pymethods]
impl Buffer {
    /// numpy's array interface (version 3): the address, shape and type of
    /// the memory, read-only.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if let Some(d) = self.interface.get() {
            return Ok(d.bind(py).clone());
        }
        let d = PyDict::new(py);
        d.set_item("version", 3)?;
        d.set_item("shape", PyTuple::new(py, &self.shape)?)?;
        d.set_item("typestr", self.elem.typestr())?;
        d.set_item("data", (self.address(), true))?;
        let _ = self.interface.set(d.clone().unbind());
        Ok(d)
    }

    /// Address of the first byte: equal to the library's `Vec`'s pointer.
    #[getter]
    fn address(&self) -> usize {
        self.data.as_ptr() as usize
    }

    /// Bytes of memory viewed.
    #[getter]
    fn nbytes(&self) -> usize {
        self.shape.iter().product::<usize>() * self.elem.size()
    }

    fn __repr__(&self) -> String {
        format!("Buffer({}, shape={:?}, address={:#x})", self.elem.typestr(), self.shape, self.address())
    }
}

/// `numpy.asarray`, imported once.
fn numpy_asarray(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    static ASARRAY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    ASARRAY.import(py, "numpy", "asarray")
}
