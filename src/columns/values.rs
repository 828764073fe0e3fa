//! Typed value buffers: one `Vec<T>` per element type, so a column holds
//! aligned numbers that operators read directly and Arrow or numpy can wrap
//! without copying. Conversions between element types happen on push, in one
//! place, with the same rules everywhere (`as` casts: saturating for floats to
//! integers, NaN to 0).

use crate::proto::fex_v1::DataType;

/// The values of a column, in their declared element type.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    U64(Vec<u64>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    F32(Vec<f32>),
    F64(Vec<f64>),
}

impl Default for Values {
    fn default() -> Self {
        Self::I64(Vec::new())
    }
}

/// Calls `$body` with `$v` bound to the variant's vector, whatever the type.
macro_rules! each {
    ($values:expr, $v:ident => $body:expr) => {
        match $values {
            Values::U64($v) => $body,
            Values::I64($v) => $body,
            Values::I32($v) => $body,
            Values::F32($v) => $body,
            Values::F64($v) => $body,
        }
    };
}

impl Values {
    /// Empty values of `dtype` (bytes and unspecified have no numeric buffer:
    /// they get i64, which no writer of theirs touches).
    pub fn new(dtype: DataType) -> Self {
        match dtype {
            DataType::U64 => Self::U64(Vec::new()),
            DataType::I32 => Self::I32(Vec::new()),
            DataType::F32 => Self::F32(Vec::new()),
            DataType::F64 => Self::F64(Vec::new()),
            DataType::I64 | DataType::Bytes | DataType::Unspecified => Self::I64(Vec::new()),
        }
    }

    pub fn dtype(&self) -> DataType {
        match self {
            Self::U64(_) => DataType::U64,
            Self::I64(_) => DataType::I64,
            Self::I32(_) => DataType::I32,
            Self::F32(_) => DataType::F32,
            Self::F64(_) => DataType::F64,
        }
    }

    /// Makes these values empty values of `dtype`, keeping the buffer when
    /// the type is unchanged.
    pub fn reset(&mut self, dtype: DataType) {
        if self.dtype() == dtype || matches!(dtype, DataType::Bytes | DataType::Unspecified) {
            self.clear();
        } else {
            *self = Self::new(dtype);
        }
    }

    pub fn len(&self) -> usize {
        each!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn clear(&mut self) {
        each!(self, v => v.clear())
    }

    pub fn truncate(&mut self, n: usize) {
        each!(self, v => v.truncate(n))
    }

    pub fn reserve(&mut self, n: usize) {
        each!(self, v => v.reserve(n))
    }

    /// Bytes the buffer has reserved.
    pub fn capacity_bytes(&self) -> usize {
        each!(self, v => v.capacity() * std::mem::size_of_val(&v.first().copied().unwrap_or_default()))
    }

    /// Bytes one element takes.
    pub fn elem_size(&self) -> usize {
        elem_size(self.dtype())
    }

    /// Appends a number converted to the element type.
    #[inline]
    pub fn push_f64(&mut self, x: f64) {
        match self {
            Self::U64(v) => v.push(x as i64 as u64),
            Self::I64(v) => v.push(x as i64),
            Self::I32(v) => v.push(x as i32),
            Self::F32(v) => v.push(x as f32),
            Self::F64(v) => v.push(x),
        }
    }

    /// Appends an integer converted to the element type.
    #[inline]
    pub fn push_i64(&mut self, x: i64) {
        match self {
            Self::U64(v) => v.push(x as u64),
            Self::I64(v) => v.push(x),
            Self::I32(v) => v.push(x as i32),
            Self::F32(v) => v.push(x as f32),
            Self::F64(v) => v.push(x as f64),
        }
    }

    /// Appends an id (a u64 bit pattern) to an integer column.
    #[inline]
    pub fn push_u64(&mut self, x: u64) {
        match self {
            Self::U64(v) => v.push(x),
            Self::I64(v) => v.push(x as i64),
            other => other.push_i64(x as i64),
        }
    }

    /// Appends `n` copies of `x`.
    pub fn fill(&mut self, x: f64, n: usize) {
        match self {
            Self::U64(v) => v.resize(v.len() + n, x as i64 as u64),
            Self::I64(v) => v.resize(v.len() + n, x as i64),
            Self::I32(v) => v.resize(v.len() + n, x as i32),
            Self::F32(v) => v.resize(v.len() + n, x as f32),
            Self::F64(v) => v.resize(v.len() + n, x),
        }
    }

    /// Element `i` widened to f64 (0 when out of range).
    #[inline]
    pub fn f64_at(&self, i: usize) -> f64 {
        match self {
            Self::U64(v) => v.get(i).map_or(0.0, |&x| x as f64),
            Self::I64(v) => v.get(i).map_or(0.0, |&x| x as f64),
            Self::I32(v) => v.get(i).map_or(0.0, |&x| f64::from(x)),
            Self::F32(v) => v.get(i).map_or(0.0, |&x| f64::from(x)),
            Self::F64(v) => v.get(i).copied().unwrap_or(0.0),
        }
    }

    /// Elements `range` widened to f64, appended to `out` (0 for each one
    /// out of range, as `f64_at`).
    pub fn extend_f64(&self, out: &mut Vec<f64>, range: std::ops::Range<usize>) {
        fn add<T: Copy>(v: &[T], out: &mut Vec<f64>, range: std::ops::Range<usize>, f: impl Fn(T) -> f64) {
            match v.get(range.clone()) {
                Some(s) => out.extend(s.iter().map(|&x| f(x))),
                None => out.extend(range.map(|i| v.get(i).map_or(0.0, |&x| f(x)))),
            }
        }
        match self {
            Self::U64(v) => add(v, out, range, |x| x as f64),
            Self::I64(v) => add(v, out, range, |x| x as f64),
            Self::I32(v) => add(v, out, range, f64::from),
            Self::F32(v) => add(v, out, range, f64::from),
            Self::F64(v) => add(v, out, range, |x| x),
        }
    }

    /// The 8-byte ids of `range` (u64 or i64 columns), as their u64 bit
    /// patterns; empty for other types or a range outside the values.
    #[inline]
    pub fn ids(&self, range: std::ops::Range<usize>) -> &[u64] {
        match self {
            Self::U64(v) => v.get(range).unwrap_or(&[]),
            Self::I64(v) => v.get(range).map_or(&[], bytemuck::cast_slice),
            _ => &[],
        }
    }

    /// Appends ids to an 8-byte integer column.
    #[inline]
    pub fn extend_ids(&mut self, ids: &[u64]) {
        match self {
            Self::U64(v) => v.extend_from_slice(ids),
            Self::I64(v) => v.extend_from_slice(bytemuck::cast_slice(ids)),
            other => ids.iter().for_each(|&x| other.push_u64(x)),
        }
    }

    /// Appends elements `range` of `other` (same type) to these values.
    pub fn extend_from(&mut self, other: &Values, range: std::ops::Range<usize>) {
        match (self, other) {
            (Self::U64(a), Self::U64(b)) => a.extend_from_slice(&b[range]),
            (Self::I64(a), Self::I64(b)) => a.extend_from_slice(&b[range]),
            (Self::I32(a), Self::I32(b)) => a.extend_from_slice(&b[range]),
            (Self::F32(a), Self::F32(b)) => a.extend_from_slice(&b[range]),
            (Self::F64(a), Self::F64(b)) => a.extend_from_slice(&b[range]),
            (a, b) => range.for_each(|i| a.push_f64(b.f64_at(i))),
        }
    }

    /// Overwrites elements from `at` on with elements `range` of `other`
    /// (same type; `at + range.len()` within these values).
    pub fn overwrite_from(&mut self, at: usize, other: &Values, range: std::ops::Range<usize>) {
        let n = range.len();
        match (self, other) {
            (Self::U64(a), Self::U64(b)) => a[at..at + n].copy_from_slice(&b[range]),
            (Self::I64(a), Self::I64(b)) => a[at..at + n].copy_from_slice(&b[range]),
            (Self::I32(a), Self::I32(b)) => a[at..at + n].copy_from_slice(&b[range]),
            (Self::F32(a), Self::F32(b)) => a[at..at + n].copy_from_slice(&b[range]),
            (Self::F64(a), Self::F64(b)) => a[at..at + n].copy_from_slice(&b[range]),
            (a, b) => {
                let mut tail = Values::new(a.dtype());
                tail.extend_from(b, range);
                a.overwrite_from(at, &tail, 0..n);
            }
        }
    }

    /// Appends a copy of its own elements `range`.
    pub fn repeat_range(&mut self, range: std::ops::Range<usize>) {
        each!(self, v => v.extend_from_within(range))
    }

    /// Keeps the first `n` elements and appends `times` more copies of them.
    pub fn repeat_prefix(&mut self, n: usize, times: usize) {
        self.truncate(n);
        each!(self, v => repeat_all(v, times))
    }

    /// The values as little-endian bytes (a view on little-endian machines).
    pub fn as_bytes(&self) -> &[u8] {
        each!(self, v => bytemuck::cast_slice(v.as_slice()))
    }
}

/// Appends `times` more copies of all of `v`, doubling what is there (a few
/// large copies rather than one per row).
pub(crate) fn repeat_all<T: Copy>(v: &mut Vec<T>, times: usize) {
    let target = v.len().saturating_mul(times.saturating_add(1));
    v.reserve(target - v.len());
    while v.len() < target {
        // What is there is a whole number of copies, so any prefix that long
        // or the part still missing (also whole copies) extends it by copies.
        let k = v.len().min(target - v.len());
        v.extend_from_within(..k);
    }
}

/// A row-split integer (i32 or i64), made from a count.
pub trait SplitInt: Copy {
    fn from_len(n: usize) -> Result<Self, SplitsOverflow>;
}

impl SplitInt for i32 {
    #[inline]
    fn from_len(n: usize) -> Result<Self, SplitsOverflow> {
        i32::try_from(n).map_err(|_| SplitsOverflow { found: n })
    }
}

impl SplitInt for i64 {
    #[inline]
    fn from_len(n: usize) -> Result<Self, SplitsOverflow> {
        Ok(n as i64)
    }
}

/// Row offsets of a ragged column, in their declared type.
#[derive(Debug, Clone, PartialEq)]
pub enum Splits {
    I32(Vec<i32>),
    I64(Vec<i64>),
}

impl Default for Splits {
    fn default() -> Self {
        Self::I64(Vec::new())
    }
}

/// More values than i32 row splits can count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{found} row_splits overflow i32; declare splits: i64")]
pub struct SplitsOverflow {
    pub found: usize,
}

impl Splits {
    pub fn new(dtype: DataType) -> Self {
        if dtype == DataType::I32 { Self::I32(Vec::new()) } else { Self::I64(Vec::new()) }
    }

    pub fn dtype(&self) -> DataType {
        match self {
            Self::I32(_) => DataType::I32,
            Self::I64(_) => DataType::I64,
        }
    }

    pub fn reset(&mut self, dtype: DataType) {
        if self.dtype() == dtype { self.clear() } else { *self = Self::new(dtype) }
    }

    pub fn clear(&mut self) {
        match self {
            Self::I32(v) => v.clear(),
            Self::I64(v) => v.clear(),
        }
    }

    /// Offsets stored: rows + 1 once the column is complete.
    pub fn len(&self) -> usize {
        match self {
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends one offset.
    #[inline]
    /// Room for `n` more offsets.
    pub fn reserve(&mut self, n: usize) {
        match self {
            Self::I32(v) => v.reserve(n),
            Self::I64(v) => v.reserve(n),
        }
    }

    pub fn push(&mut self, n: usize) -> Result<(), SplitsOverflow> {
        match self {
            Self::I32(v) => v.push(i32::from_len(n)?),
            Self::I64(v) => v.push(i64::from_len(n)?),
        }
        Ok(())
    }

    /// Offset `i`, or 0 when out of range (or negative).
    #[inline]
    pub fn get(&self, i: usize) -> usize {
        match self {
            Self::I32(v) => v.get(i).map_or(0, |&x| x.max(0) as usize),
            Self::I64(v) => v.get(i).map_or(0, |&x| x.max(0) as usize),
        }
    }

    pub fn truncate(&mut self, n: usize) {
        match self {
            Self::I32(v) => v.truncate(n),
            Self::I64(v) => v.truncate(n),
        }
    }

    /// Bytes the buffer has reserved.
    pub fn capacity_bytes(&self) -> usize {
        match self {
            Self::I32(v) => v.capacity() * 4,
            Self::I64(v) => v.capacity() * 8,
        }
    }

    /// The offsets as little-endian bytes.
    pub fn as_bytes(&self) -> &[u8] {
        match self {
            Self::I32(v) => bytemuck::cast_slice(v.as_slice()),
            Self::I64(v) => bytemuck::cast_slice(v.as_slice()),
        }
    }

    /// The offsets widened to i64.
    pub fn to_i64(&self) -> Vec<i64> {
        match self {
            Self::I32(v) => v.iter().map(|&x| i64::from(x)).collect(),
            Self::I64(v) => v.clone(),
        }
    }
}

/// Bytes per element of a dtype (strings count bytes).
pub fn elem_size(d: DataType) -> usize {
    match d {
        DataType::F32 | DataType::I32 => 4,
        DataType::F64 | DataType::I64 | DataType::U64 => 8,
        DataType::Bytes | DataType::Unspecified => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conversions_follow_as_casts() {
        let mut v = Values::new(DataType::I32);
        v.push_f64(f64::NAN);
        v.push_f64(1e300);
        v.push_i64(-7);
        assert_eq!(v, Values::I32(vec![0, i32::MAX, -7]));
        let mut f = Values::new(DataType::F32);
        f.push_i64(3);
        f.fill(0.5, 2);
        assert_eq!(f.as_bytes().len(), 12);
        assert_eq!(f, Values::F32(vec![3.0, 0.5, 0.5]));
    }

    #[test]
    fn repeating_doubles_to_exactly_the_copies_asked_for() {
        for times in 0..9 {
            let mut v = vec![1u8, 2, 3];
            repeat_all(&mut v, times);
            assert_eq!(v, [1, 2, 3].repeat(times + 1), "{times} more copies");
        }
        let mut empty: Vec<u8> = Vec::new();
        repeat_all(&mut empty, 5);
        assert!(empty.is_empty());
    }

    #[test]
    fn i32_splits_refuse_what_they_cannot_count() {
        let mut s = Splits::new(DataType::I32);
        assert_eq!(s.push(1 << 31), Err(SplitsOverflow { found: 1 << 31 }));
        s.push(5).unwrap();
        assert_eq!((s.get(0), s.get(1), s.as_bytes()), (5, 0, &5i32.to_le_bytes()[..]));
    }
}
