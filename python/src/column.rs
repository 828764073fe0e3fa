//! `Column`: one output of an extraction. The library's typed column is
//! moved into an Arrow array when the column is first looked at (its `Vec`s
//! become Arrow buffers, same allocations); numpy views (`values`,
//! `row_splits`, `weights`, `lengths`) and the Arrow C data interface export
//! (`__arrow_c_array__`) all share those buffers. Nothing is copied.

use arrow_array::{Array, ArrayRef};
use arrow_buffer::Buffer as ArrowBuffer;
use arrow_data::ArrayData;
use arrow_schema::DataType as ArrowType;
use fex::{Column as FexColumn, DataType, Layout, NamedColumn};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};

use crate::buffer::{Buffer, Elem};

/// One buffer of the column: memory, element type, numpy shape.
struct Part {
    data: ArrowBuffer,
    elem: Elem,
    shape: Vec<usize>,
}

impl Part {
    fn to_numpy(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Buffer::new(self.data.clone(), self.elem, self.shape.clone())?.into_numpy(py)
    }
}

/// An output column: numpy views of its buffers, Arrow export, metadata.
#[pyclass(frozen, module = "fex._fex")]
pub struct Column {
    name: String,
    shared: bool,
    layout: Layout,
    dtype: DataType,
    splits_dtype: Option<DataType>,
    shape: Vec<i64>,
    rows: usize,
    keys: Option<Vec<String>>,
    values: Part,
    splits: Option<Part>,
    weights: Option<Part>,
    lengths: Option<Part>,
    array: ArrayRef,
}

impl Column {
    /// Moves the library's column into Arrow buffers and records where each
    /// part lies in them.
    pub fn new(named: NamedColumn) -> PyResult<Self> {
        let NamedColumn { name, shared, mut column } = named;
        let (layout, dtype, shape, rows) = (column.layout(), column.dtype(), column.shape(), column.rows());
        let mut keys = None;
        let mut lengths = None;
        let (width, dims, splits_dtype) = match &mut column {
            FexColumn::Ragged(r) => (r.width, Vec::new(), Some(r.splits.dtype())),
            FexColumn::Dense(d) => (None, d.dims.clone(), None),
            FexColumn::Strings(_) => (None, Vec::new(), Some(DataType::I64)),
            FexColumn::KeyedJagged(k) => {
                keys = Some(std::mem::take(&mut k.keys));
                let n = k.lengths.len();
                let data = ArrowBuffer::from_vec(std::mem::take(&mut k.lengths));
                lengths = Some(Part { data, elem: Elem::I32, shape: vec![n] });
                (None, Vec::new(), Some(DataType::I64))
            }
        };
        let array = column.into_arrow().map_err(|e| PyRuntimeError::new_err(format!("output {name:?}: {e}")))?;
        let data = array.to_data();
        let elem = elem_of(dtype);
        let (values, splits, weights) = match layout {
            Layout::Ragged | Layout::KeyedJagged => {
                let splits_elem = if splits_dtype == Some(DataType::I32) { Elem::I32 } else { Elem::I64 };
                let splits = offsets(&data, splits_elem);
                let mut child = data.child_data()[0].clone();
                if width.is_some() {
                    child = child.child_data()[0].clone();
                }
                let (values, weights) = leaf(&child, elem, width);
                (values, Some(splits), weights)
            }
            Layout::Strings => {
                let bytes = data.buffers()[1].clone();
                let n = bytes.len();
                (Part { data: bytes, elem: Elem::U8, shape: vec![n] }, Some(offsets(&data, Elem::I64)), None)
            }
            Layout::Dense | Layout::Unspecified => {
                let flat = if dims.is_empty() { data.clone() } else { data.child_data()[0].clone() };
                let mut values = primitive(&flat, elem);
                values.shape = std::iter::once(rows).chain(dims.iter().copied()).collect();
                (values, None, None)
            }
        };
        Ok(Self {
            name,
            shared,
            layout,
            dtype,
            splits_dtype,
            shape,
            rows,
            keys,
            values,
            splits,
            weights,
            lengths,
            array,
        })
    }
}

/// A list's or binary array's offsets (`len + 1` of them).
fn offsets(data: &ArrayData, elem: Elem) -> Part {
    let n = data.len() + 1;
    let at = data.offset() * elem.size();
    Part { data: data.buffers()[0].slice_with_length(at, n * elem.size()), elem, shape: vec![n] }
}

/// A primitive array's values, flat.
fn primitive(data: &ArrayData, elem: Elem) -> Part {
    let n = data.len();
    let at = data.offset() * elem.size();
    Part { data: data.buffers()[0].slice_with_length(at, n * elem.size()), elem, shape: vec![n] }
}

/// The values under a list (and their weights, when the items are a struct
/// of value and weight), shaped `[positions, width]` for a sequence.
fn leaf(child: &ArrayData, elem: Elem, width: Option<usize>) -> (Part, Option<Part>) {
    let (mut values, mut weights) = match child.data_type() {
        ArrowType::Struct(_) => {
            (primitive(&child.child_data()[0], elem), Some(primitive(&child.child_data()[1], Elem::F32)))
        }
        _ => (primitive(child, elem), None),
    };
    if let Some(w) = width.filter(|&w| w > 0) {
        for part in std::iter::once(&mut values).chain(weights.as_mut()) {
            part.shape = vec![part.shape[0] / w, w];
        }
    }
    (values, weights)
}

fn elem_of(dtype: DataType) -> Elem {
    match dtype {
        DataType::U64 => Elem::U64,
        DataType::I64 => Elem::I64,
        DataType::I32 => Elem::I32,
        DataType::F32 => Elem::F32,
        DataType::F64 => Elem::F64,
        DataType::Bytes | DataType::Unspecified => Elem::U8,
    }
}

/// numpy's name of a dtype ("bytes" for strings).
pub fn dtype_name(dtype: DataType) -> &'static str {
    match dtype {
        DataType::U64 => "uint64",
        DataType::I64 => "int64",
        DataType::I32 => "int32",
        DataType::F32 => "float32",
        DataType::F64 => "float64",
        DataType::Bytes => "bytes",
        DataType::Unspecified => "unspecified",
    }
}

pub fn layout_name(layout: Layout) -> &'static str {
    match layout {
        Layout::Ragged => "ragged",
        Layout::Dense => "dense",
        Layout::Strings => "strings",
        Layout::KeyedJagged => "keyed_jagged",
        Layout::Unspecified => "unspecified",
    }
}

/// Calls `fex._convert.<name>(column, *args)`: conversions that import
/// optional packages live in Python.
fn convert<'py>(slf: &Bound<'py, Column>, name: &str, args: &[Bound<'py, PyAny>]) -> PyResult<Bound<'py, PyAny>> {
    let py = slf.py();
    let f = py.import("fex._convert")?.getattr(name)?;
    let mut all = vec![slf.clone().into_any()];
    all.extend(args.iter().cloned());
    f.call1(PyTuple::new(py, all)?)
}

#[pymethods]
impl Column {
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    /// "ragged", "dense", "strings" or "keyed_jagged".
    #[getter]
    fn layout(&self) -> &'static str {
        layout_name(self.layout)
    }

    /// numpy name of the values' type ("bytes" for strings).
    #[getter]
    fn dtype(&self) -> &'static str {
        dtype_name(self.dtype)
    }

    /// numpy name of the row splits' type, None for dense columns.
    #[getter]
    fn splits_dtype(&self) -> Option<&'static str> {
        self.splits_dtype.map(dtype_name)
    }

    /// The shape as the wire states it (-1 for a ragged dimension).
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, &self.shape)
    }

    /// Rows (the second dimension of a keyed-jagged column).
    #[getter]
    fn rows(&self) -> usize {
        self.rows
    }

    /// A SHARED feature returned once (rows == 1) instead of broadcast.
    #[getter]
    fn shared(&self) -> bool {
        self.shared
    }

    /// Keyed-jagged keys; None for other layouts.
    #[getter]
    fn keys(&self) -> Option<Vec<String>> {
        self.keys.clone()
    }

    /// The values, viewed: `[nnz]` (`[positions, width]` for a sequence)
    /// for ragged and keyed-jagged columns, `[rows, dims...]` for dense, the
    /// concatenated bytes (uint8) for strings.
    #[getter]
    fn values(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        self.values.to_numpy(py)
    }

    /// `rows + 1` offsets of ragged and strings columns (a keyed-jagged
    /// column's `keys * rows + 1` offsets); None for dense.
    #[getter]
    fn row_splits(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.splits.as_ref().map(|p| p.to_numpy(py)).transpose()
    }

    /// Keyed-jagged offsets (the same buffer as `row_splits`); None for
    /// other layouts.
    #[getter]
    fn offsets(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.layout {
            Layout::KeyedJagged => self.row_splits(py),
            _ => Ok(None),
        }
    }

    /// Keyed-jagged key-major lengths (int32, `keys * rows`); None otherwise.
    #[getter]
    fn lengths(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.lengths.as_ref().map(|p| p.to_numpy(py)).transpose()
    }

    /// float32 weight per value, when the column carries weights.
    #[getter]
    fn weights(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.weights.as_ref().map(|p| p.to_numpy(py)).transpose()
    }

    /// The Arrow PyCapsule interface: `(schema, array)` capsules of the
    /// Arrow C data interface, sharing this column's buffers.
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyTuple>> {
        // Only the column's own type is offered; a consumer that asked for
        // another casts after import (the protocol allows ignoring it).
        let _ = requested_schema;
        let (array, schema) = arrow_array::ffi::to_ffi(&self.array.to_data())
            .map_err(|e| PyRuntimeError::new_err(format!("output {:?}: {e}", self.name)))?;
        let schema = PyCapsule::new_with_value(py, schema, c"arrow_schema")?;
        let array = PyCapsule::new_with_value(py, array, c"arrow_array")?;
        PyTuple::new(py, [schema.into_any(), array.into_any()])
    }

    /// A numpy array (dense) or a tuple of numpy arrays (see `fex._convert`).
    fn to_numpy<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert(slf, "to_numpy", &[])
    }

    /// torch tensors sharing this column's memory (`torch.from_numpy`).
    fn to_torch<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert(slf, "to_torch", &[])
    }

    /// A torchrec `KeyedJaggedTensor` (keyed-jagged or ragged columns).
    fn to_kjt<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert(slf, "to_kjt", &[])
    }

    /// A `pyarrow.Array` through the Arrow C data interface (no copy).
    fn to_arrow<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert(slf, "to_arrow", &[])
    }

    /// A `tf.RaggedTensor` (ragged columns) or `tf.Tensor` (dense).
    fn to_tf_ragged<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        convert(slf, "to_tf_ragged", &[])
    }

    fn __repr__(&self) -> String {
        format!(
            "Column(name={:?}, layout={:?}, dtype={:?}, shape={:?}, shared={})",
            self.name,
            layout_name(self.layout),
            dtype_name(self.dtype),
            self.shape,
            if self.shared { "True" } else { "False" }
        )
    }
}
