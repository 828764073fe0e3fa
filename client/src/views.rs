//! Typed views of the tensors in an ExtractResponse: what a Rust caller uses
//! instead of raw little-endian buffers. Values are copied out once into
//! properly aligned vectors.

use fex::proto::fex_v1::{DataType, Layout, Tensor};

/// Values of one tensor, by element type.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    F32(Vec<f32>),
    F64(Vec<f64>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U64(Vec<u64>),
    Bytes(Vec<u8>),
}

impl Values {
    fn of(t: &Tensor) -> Self {
        match DataType::try_from(t.dtype).unwrap_or(DataType::Unspecified) {
            DataType::F32 => Self::F32(t.f32s()),
            DataType::F64 => Self::F64(t.f64s()),
            DataType::I32 => Self::I32(t.i32s()),
            DataType::I64 => Self::I64(t.i64s()),
            DataType::U64 => Self::U64(t.u64s()),
            DataType::Bytes | DataType::Unspecified => Self::Bytes(t.values.to_vec()),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::U64(v) => v.len(),
            Self::Bytes(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The first `n` values, formatted for people.
    pub fn preview(&self, n: usize) -> String {
        fn list<T: std::fmt::Debug>(v: &[T], n: usize) -> String {
            let shown: Vec<String> = v.iter().take(n).map(|x| format!("{x:?}")).collect();
            let more = if v.len() > n { format!(", … ({} more)", v.len() - n) } else { String::new() };
            format!("[{}{more}]", shown.join(", "))
        }
        match self {
            Self::F32(v) => list(v, n),
            Self::F64(v) => list(v, n),
            Self::I32(v) => list(v, n),
            Self::I64(v) => list(v, n),
            Self::U64(v) => list(v, n),
            Self::Bytes(v) => format!("{:?}", String::from_utf8_lossy(&v[..v.len().min(n * 8)])),
        }
    }
}

/// A tensor, typed by its layout.
#[derive(Debug, Clone, PartialEq)]
pub enum TensorView {
    /// `[rows, d...]`, row-major.
    Dense { shape: Vec<i64>, values: Values },
    /// Row r holds `values[row_splits[r]..row_splits[r+1]]` (of `width` each).
    Ragged { row_splits: Vec<i64>, values: Values, width: usize, weights: Option<Vec<f32>> },
    /// One byte string per row.
    Strings(Vec<Vec<u8>>),
    /// TorchRec KeyedJaggedTensor: key-major lengths.
    KeyedJagged { keys: Vec<String>, lengths: Vec<i32>, values: Values, weights: Option<Vec<f32>> },
}

impl TensorView {
    pub fn of(t: &Tensor) -> Self {
        let weights = (!t.weights.is_empty())
            .then(|| t.weights.chunks_exact(4).map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect());
        match Layout::try_from(t.layout).unwrap_or(Layout::Unspecified) {
            Layout::Ragged => {
                let width = t.shape.get(2).map_or(1, |&w| w.max(1) as usize);
                Self::Ragged { row_splits: t.splits(), values: Values::of(t), width, weights }
            }
            Layout::Strings => Self::Strings(t.strings().into_iter().map(<[u8]>::to_vec).collect()),
            Layout::KeyedJagged => Self::KeyedJagged {
                keys: t.keys.clone(),
                lengths: t.lengths.chunks_exact(4).map(|c| i32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect(),
                values: Values::of(t),
                weights,
            },
            Layout::Dense | Layout::Unspecified => Self::Dense { shape: t.shape.clone(), values: Values::of(t) },
        }
    }
}

/// One line per tensor: name, layout, dtype, shape, first values.
pub fn describe(t: &Tensor, first: usize) -> String {
    let layout =
        Layout::try_from(t.layout).map_or("?".into(), |l| l.as_str_name().trim_start_matches("LAYOUT_").to_lowercase());
    let dtype = DataType::try_from(t.dtype)
        .map_or("?".into(), |d| d.as_str_name().trim_start_matches("DATA_TYPE_").to_lowercase());
    let shared = if t.shared { " shared" } else { "" };
    let body = match TensorView::of(t) {
        TensorView::Dense { values, .. } => values.preview(first),
        TensorView::Ragged { row_splits, values, .. } => {
            format!("row_splits={} values={}", Values::I64(row_splits).preview(first), values.preview(first))
        }
        TensorView::Strings(rows) => {
            let shown: Vec<String> =
                rows.iter().take(first).map(|r| format!("{:?}", String::from_utf8_lossy(r))).collect();
            format!("[{}]", shown.join(", "))
        }
        TensorView::KeyedJagged { keys, lengths, values, .. } => {
            format!("keys={keys:?} lengths={} values={}", Values::I32(lengths).preview(first), values.preview(first))
        }
    };
    format!("{:<24} {:<7} {:<5} {:?}{shared}  {body}", t.name, layout, dtype, t.shape)
}
