//! Typed columns: what extraction produces and operators read. Every buffer is
//! a `Vec<T>` of its element type, aligned and little-endian in memory on the
//! machines we run on, so the edges hand them on without copying values:
//! `fex.v1.Tensor` (`tensor`), Arrow arrays (`arrow`, with the `arrow`
//! feature), numpy in the Python binding.

// Columns hold numbers in native byte order and hand them on as
// little-endian buffers without conversion.
#[cfg(target_endian = "big")]
compile_error!("fex's typed columns are little-endian in memory; big-endian targets are not supported");

#[cfg(feature = "arrow")]
mod arrow;
mod le;
mod tensor;
mod values;

pub(crate) use le::{PAD, extend_le, extend_le_padded};
pub(crate) use values::repeat_all;
pub use values::{SplitInt, Splits, SplitsOverflow, Values, elem_size};

use crate::proto::fex_v1::{DataType, Layout};

/// One output's data for a set of rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    Ragged(Ragged),
    Dense(Dense),
    Strings(Strings),
    KeyedJagged(KeyedJagged),
}

/// Rows of variable length: row r is `values[splits[r] * w..splits[r + 1] * w]`
/// where `w` is `width` (1 when `None`: one value per position).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Ragged {
    pub splits: Splits,
    pub values: Values,
    /// Optional f32 weight per value (empty when the column has none).
    pub weights: Vec<f32>,
    /// The values carry weights, even when there are none in this batch:
    /// the column's type must not depend on whether a row has a value.
    pub weighted: bool,
    /// Values per position of a sequence (`[rows, -1, width]`), or `None`.
    pub width: Option<usize>,
}

/// `[rows, dims...]`, row-major.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Dense {
    pub rows: usize,
    pub dims: Vec<usize>,
    pub values: Values,
}

/// One byte string per row: row r is `bytes[offsets[r]..offsets[r + 1]]`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Strings {
    pub offsets: Vec<i64>,
    pub bytes: Vec<u8>,
    /// Dimensions after the rows, all 1: empty (shape `[rows]`), or `[1]`
    /// for Monolith's `[rows, 1]` (`compat: monolith`).
    pub dims: Vec<usize>,
}

impl Strings {
    /// Ends a row (or, first, starts the column): records the bytes so far.
    #[inline]
    pub fn end_row(&mut self) {
        self.offsets.push(self.bytes.len() as i64);
    }
}

/// TorchRec's KeyedJaggedTensor: key-major `lengths[k * rows + r]`, their
/// prefix sums in `offsets` (keys * rows + 1), values and optional weights.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeyedJagged {
    pub keys: Vec<String>,
    pub rows: usize,
    pub lengths: Vec<i32>,
    pub offsets: Vec<i64>,
    pub values: Values,
    pub weights: Vec<f32>,
    /// The values carry weights, even when there are none (as `Ragged`'s).
    pub weighted: bool,
}

impl KeyedJagged {
    /// Starts a column of `keys` over `rows` rows (keys are rewritten only
    /// when they differ from the last call's).
    pub fn begin(&mut self, keys: &[String], rows: usize) {
        if self.keys != keys {
            self.keys.clear();
            self.keys.extend(keys.iter().cloned());
        }
        self.rows = rows;
        self.offsets.push(0);
    }
}

/// A column with the name of the output it answers and whether it is a
/// SHARED feature returned once (rows = 1) instead of broadcast.
#[derive(Debug, Clone, PartialEq)]
pub struct NamedColumn {
    pub name: String,
    pub shared: bool,
    pub column: Column,
}

impl Default for Column {
    fn default() -> Self {
        Self::Dense(Dense::default())
    }
}

impl Column {
    /// An empty column of the given layout and types, ready to be written.
    pub fn new(layout: Layout, dtype: DataType, splits: DataType) -> Self {
        let mut c = Self::default();
        c.reset(layout, dtype, splits);
        c
    }

    /// Empties the column for a new call, keeping its buffers when the layout
    /// and types are unchanged (they are, call after call, for one output).
    pub fn reset(&mut self, layout: Layout, dtype: DataType, splits: DataType) {
        match (self, layout) {
            (Self::Ragged(r), Layout::Ragged) => {
                r.splits.reset(splits);
                r.values.reset(dtype);
                r.weights.clear();
                r.weighted = false;
                r.width = None;
            }
            (Self::Dense(d), Layout::Dense) => {
                d.rows = 0;
                d.dims.clear();
                d.values.reset(dtype);
            }
            (Self::Strings(s), Layout::Strings) => {
                s.offsets.clear();
                s.bytes.clear();
                s.dims.clear();
            }
            (Self::KeyedJagged(k), Layout::KeyedJagged) => {
                // Keys are kept: operators rewrite them only when they differ.
                k.rows = 0;
                k.lengths.clear();
                k.offsets.clear();
                k.values.reset(dtype);
                k.weights.clear();
                k.weighted = false;
            }
            (this, _) => *this = Self::fresh(layout, dtype, splits),
        }
    }

    fn fresh(layout: Layout, dtype: DataType, splits: DataType) -> Self {
        match layout {
            Layout::Ragged => {
                Self::Ragged(Ragged { splits: Splits::new(splits), values: Values::new(dtype), ..Ragged::default() })
            }
            Layout::Strings => Self::Strings(Strings::default()),
            Layout::KeyedJagged => {
                Self::KeyedJagged(KeyedJagged { values: Values::new(dtype), ..KeyedJagged::default() })
            }
            Layout::Dense | Layout::Unspecified => {
                Self::Dense(Dense { values: Values::new(dtype), ..Dense::default() })
            }
        }
    }

    pub fn layout(&self) -> Layout {
        match self {
            Self::Ragged(_) => Layout::Ragged,
            Self::Dense(_) => Layout::Dense,
            Self::Strings(_) => Layout::Strings,
            Self::KeyedJagged(_) => Layout::KeyedJagged,
        }
    }

    /// Element type of the values (bytes for strings).
    pub fn dtype(&self) -> DataType {
        match self {
            Self::Ragged(r) => r.values.dtype(),
            Self::Dense(d) => d.values.dtype(),
            Self::Strings(_) => DataType::Bytes,
            Self::KeyedJagged(k) => k.values.dtype(),
        }
    }

    /// Rows of the column (the second dimension of a keyed-jagged one).
    pub fn rows(&self) -> usize {
        match self {
            Self::Ragged(r) => r.splits.len().saturating_sub(1),
            Self::Dense(d) => d.rows,
            Self::Strings(s) => s.offsets.len().saturating_sub(1),
            Self::KeyedJagged(k) => k.rows,
        }
    }

    /// The shape as the wire states it: -1 for a ragged dimension.
    pub fn shape(&self) -> Vec<i64> {
        match self {
            Self::Ragged(r) => {
                let mut s = vec![self.rows() as i64, -1];
                s.extend(r.width.map(|w| w as i64));
                s
            }
            Self::Dense(d) => std::iter::once(d.rows).chain(d.dims.iter().copied()).map(|x| x as i64).collect(),
            Self::Strings(s) => std::iter::once(self.rows()).chain(s.dims.iter().copied()).map(|x| x as i64).collect(),
            Self::KeyedJagged(k) => vec![k.keys.len() as i64, k.rows as i64],
        }
    }

    /// Makes this column rows `rows` of `src` (a column of any layout, as
    /// the writers make them: offsets that never decrease), in that order:
    /// runs of consecutive rows are copied whole, values and offsets alike.
    /// Keeps this column's buffers. False, and this column unspecified, when
    /// a row is not in `src` or its buffers do not agree with its offsets.
    pub(crate) fn take_rows(&mut self, src: &Column, rows: &[u32]) -> bool {
        let splits = match src {
            Self::Ragged(r) => r.splits.dtype(),
            _ => DataType::I64,
        };
        self.reset(src.layout(), src.dtype(), splits);
        let n = src.rows();
        if rows.iter().any(|&r| r as usize >= n) {
            return false;
        }
        match (self, src) {
            (Self::Ragged(d), Self::Ragged(s)) => {
                d.weighted = s.weighted;
                d.width = s.width;
                let w = s.width.unwrap_or(1);
                let weights = !s.weights.is_empty();
                if (weights && s.weights.len() != s.values.len()) || s.splits.get(n) * w > s.values.len() {
                    return false;
                }
                let mut at = 0;
                if d.splits.push(0).is_err() {
                    return false;
                }
                for (a, b) in runs(rows) {
                    let (from, to) = (s.splits.get(a), s.splits.get(b));
                    for r in a..b {
                        if d.splits.push(at + s.splits.get(r + 1) - from).is_err() {
                            return false;
                        }
                    }
                    d.values.extend_from(&s.values, from * w..to * w);
                    if weights {
                        d.weights.extend_from_slice(&s.weights[from * w..to * w]);
                    }
                    at += to - from;
                }
                true
            }
            (Self::Dense(d), Self::Dense(s)) => {
                d.dims.clone_from(&s.dims);
                let w: usize = s.dims.iter().product();
                if n * w > s.values.len() {
                    return false;
                }
                for (a, b) in runs(rows) {
                    d.values.extend_from(&s.values, a * w..b * w);
                }
                d.rows = rows.len();
                true
            }
            (Self::Strings(d), Self::Strings(s)) => {
                d.dims.clone_from(&s.dims);
                let end = offset(&s.offsets, n);
                if end > s.bytes.len() {
                    return false;
                }
                d.offsets.push(0);
                for (a, b) in runs(rows) {
                    let from = offset(&s.offsets, a);
                    let base = d.bytes.len() as i64 - from as i64;
                    d.offsets.extend(s.offsets[a + 1..=b].iter().map(|&o| base + o));
                    d.bytes.extend_from_slice(&s.bytes[from..offset(&s.offsets, b)]);
                }
                true
            }
            (Self::KeyedJagged(d), Self::KeyedJagged(s)) => {
                if d.keys != s.keys {
                    d.keys.clone_from(&s.keys);
                }
                d.weighted = s.weighted;
                d.rows = rows.len();
                let cells = s.keys.len() * n;
                let weights = !s.weights.is_empty();
                if s.lengths.len() != cells
                    || s.offsets.len() != cells + 1
                    || (s.offsets[cells].max(0) as usize) > s.values.len()
                    || (weights && s.weights.len() != s.values.len())
                {
                    return false;
                }
                d.offsets.push(0);
                let mut at = 0i64;
                for k in 0..s.keys.len() {
                    for (a, b) in runs(rows) {
                        let (a, b) = (k * n + a, k * n + b);
                        let (from, to) = (s.offsets[a].max(0) as usize, s.offsets[b].max(0) as usize);
                        d.values.extend_from(&s.values, from..to);
                        if weights {
                            d.weights.extend_from_slice(&s.weights[from..to]);
                        }
                        for &len in &s.lengths[a..b] {
                            d.lengths.push(len);
                            at += i64::from(len);
                            d.offsets.push(at);
                        }
                    }
                }
                true
            }
            _ => false,
        }
    }

    /// Keeps the first `k` rows (of a ragged, strings or dense column).
    pub fn keep_rows(&mut self, k: usize) {
        let k = k.min(self.rows());
        match self {
            Self::Ragged(r) => {
                let width = r.width.unwrap_or(1);
                r.values.truncate(r.splits.get(k) * width);
                r.splits.truncate(k + 1);
            }
            Self::Dense(d) => {
                let width: usize = d.dims.iter().product();
                d.values.truncate(k * width);
                d.rows = k;
            }
            Self::Strings(s) => {
                s.bytes.truncate(offset(&s.offsets, k));
                s.offsets.truncate(k + 1);
            }
            Self::KeyedJagged(_) => {}
        }
    }

    /// Bytes held by values, offsets and weights: what the output limit counts.
    pub fn byte_len(&self) -> usize {
        match self {
            Self::Ragged(r) => r.values.as_bytes().len() + r.splits.as_bytes().len() + r.weights.len() * 4,
            Self::Dense(d) => d.values.as_bytes().len(),
            Self::Strings(s) => s.bytes.len() + s.offsets.len() * 8,
            Self::KeyedJagged(k) => {
                k.values.as_bytes().len() + k.lengths.len() * 4 + k.offsets.len() * 8 + k.weights.len() * 4
            }
        }
    }

    /// Bytes reserved by the column's largest buffer: what a column reused
    /// across calls keeps holding.
    pub fn largest_capacity(&self) -> usize {
        match self {
            Self::Ragged(r) => r.values.capacity_bytes().max(r.splits.capacity_bytes()),
            Self::Dense(d) => d.values.capacity_bytes(),
            Self::Strings(s) => s.bytes.capacity().max(s.offsets.capacity() * 8),
            Self::KeyedJagged(k) => k.values.capacity_bytes().max(k.offsets.capacity() * 8),
        }
    }

    /// Elements per row of a dense column (the product of its dims).
    pub fn row_width(&self) -> usize {
        match self {
            Self::Dense(d) => d.dims.iter().product(),
            _ => 1,
        }
    }

    /// Row `r` of a ragged column as a range of positions.
    #[inline]
    pub fn row_range(&self, r: usize) -> std::ops::Range<usize> {
        match self {
            Self::Ragged(x) => x.splits.get(r)..x.splits.get(r + 1),
            Self::Strings(s) => offset(&s.offsets, r)..offset(&s.offsets, r + 1),
            _ => 0..0,
        }
    }

    /// The ids of row `r` of a ragged id column (u64 or i64 values).
    #[inline]
    pub fn row_ids(&self, r: usize) -> &[u64] {
        match self {
            Self::Ragged(x) => x.values.ids(self.row_range(r)),
            _ => &[],
        }
    }

    /// Row `r` of a strings column.
    #[inline]
    pub fn string(&self, r: usize) -> &[u8] {
        match self {
            Self::Strings(s) => s.bytes.get(self.row_range(r)).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// This column as ragged, made so (empty) if it held another layout.
    pub fn ragged_mut(&mut self) -> &mut Ragged {
        if !matches!(self, Self::Ragged(_)) {
            *self = Self::Ragged(Ragged::default());
        }
        match self {
            Self::Ragged(r) => r,
            _ => unreachable!("made ragged just above"),
        }
    }

    /// This column as dense, made so (empty) if it held another layout.
    pub fn dense_mut(&mut self) -> &mut Dense {
        if !matches!(self, Self::Dense(_)) {
            *self = Self::Dense(Dense::default());
        }
        match self {
            Self::Dense(d) => d,
            _ => unreachable!("made dense just above"),
        }
    }

    /// This column as strings, made so (empty) if it held another layout.
    pub fn strings_mut(&mut self) -> &mut Strings {
        if !matches!(self, Self::Strings(_)) {
            *self = Self::Strings(Strings::default());
        }
        match self {
            Self::Strings(s) => s,
            _ => unreachable!("made strings just above"),
        }
    }

    /// This column as keyed-jagged, made so (empty) if it held another layout.
    pub fn keyed_jagged_mut(&mut self) -> &mut KeyedJagged {
        if !matches!(self, Self::KeyedJagged(_)) {
            *self = Self::KeyedJagged(KeyedJagged::default());
        }
        match self {
            Self::KeyedJagged(k) => k,
            _ => unreachable!("made keyed-jagged just above"),
        }
    }

    /// The values of any numeric column.
    pub fn values(&self) -> Option<&Values> {
        match self {
            Self::Ragged(r) => Some(&r.values),
            Self::Dense(d) => Some(&d.values),
            Self::KeyedJagged(k) => Some(&k.values),
            Self::Strings(_) => None,
        }
    }
}

fn offset(offsets: &[i64], i: usize) -> usize {
    offsets.get(i).map_or(0, |&x| x.max(0) as usize)
}

/// `rows` as runs of consecutive rows: `(first, end)` ranges, in order.
fn runs(rows: &[u32]) -> impl Iterator<Item = (usize, usize)> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        let first = *rows.get(i)? as usize;
        let mut end = first + 1;
        i += 1;
        while rows.get(i).is_some_and(|&r| r as usize == end) {
            end += 1;
            i += 1;
        }
        Some((first, end))
    })
}
