//! Writing little-endian values into tensor buffers, row splits, broadcasting
//! a computed row, and the output-size budget.

use super::ExtractError;
use crate::config::Output;
use crate::proto::fex_v1::{DataType, Tensor};

/// Bytes per element of a dtype (strings count bytes).
pub(crate) fn elem_size(d: DataType) -> usize {
    match d {
        DataType::F32 | DataType::I32 => 4,
        DataType::F64 | DataType::I64 | DataType::U64 => 8,
        DataType::Bytes | DataType::Unspecified => 1,
    }
}

/// Clears `t` for `out`, keeping every buffer's capacity.
pub(crate) fn begin(t: &mut Tensor, out: &Output) {
    let (layout, dtype, splits) = out.layout();
    if t.name != out.name {
        t.name.clear();
        t.name.push_str(&out.name);
    }
    t.layout = layout as i32;
    t.dtype = dtype as i32;
    t.splits_dtype = splits as i32;
    t.shape.clear();
    t.values.clear();
    t.row_splits.clear();
    t.weights.clear();
    t.shared = false;
    // Keyed-jagged operators keep their keys between calls when unchanged.
    if t.layout != crate::proto::fex_v1::Layout::KeyedJagged as i32 {
        t.keys.clear();
    }
    t.lengths.clear();
}

/// Appends one row split (an element or byte count) in the declared dtype.
#[inline]
pub(crate) fn push_split(t: &mut Tensor, dtype: DataType, n: usize) -> Result<(), ExtractError> {
    if dtype == DataType::I32 {
        let v = i32::try_from(n).map_err(|_| ExtractError::SplitsOverflow { found: n })?;
        t.row_splits.extend_from_slice(&v.to_le_bytes());
    } else {
        t.row_splits.extend_from_slice(&(n as i64).to_le_bytes());
    }
    Ok(())
}

/// Appends a number converted to `dtype` (used where values need conversion).
#[inline]
pub(crate) fn push_f64(buf: &mut Vec<u8>, dtype: DataType, v: f64) {
    match dtype {
        DataType::F32 => buf.extend_from_slice(&(v as f32).to_le_bytes()),
        DataType::F64 => buf.extend_from_slice(&v.to_le_bytes()),
        DataType::I32 => buf.extend_from_slice(&(v as i32).to_le_bytes()),
        _ => buf.extend_from_slice(&(v as i64).to_le_bytes()),
    }
}

/// Appends an integer converted to `dtype`.
#[inline]
pub(crate) fn push_i64(buf: &mut Vec<u8>, dtype: DataType, v: i64) {
    match dtype {
        DataType::F32 => buf.extend_from_slice(&(v as f32).to_le_bytes()),
        DataType::F64 => buf.extend_from_slice(&(v as f64).to_le_bytes()),
        DataType::I32 => buf.extend_from_slice(&(v as i32).to_le_bytes()),
        _ => buf.extend_from_slice(&v.to_le_bytes()),
    }
}

/// Appends `n` copies of `v` converted to `dtype`.
pub(crate) fn fill(buf: &mut Vec<u8>, dtype: DataType, v: f64, n: usize) {
    for _ in 0..n {
        push_f64(buf, dtype, v);
    }
}

/// Fails when `bytes` more output would pass the plan's limit.
pub(crate) fn charge(budget: &mut usize, bytes: usize, limit: usize) -> Result<(), ExtractError> {
    let total = budget.saturating_add(bytes);
    if total > limit {
        return Err(ExtractError::TooLarge { found: total, limit });
    }
    *budget = total;
    Ok(())
}

/// Repeats the single computed row of `t` until it has `rows` rows: how a
/// SHARED feature reaches every candidate.
pub(crate) fn broadcast(t: &mut Tensor, rows: usize, budget: &mut usize, limit: usize) -> Result<(), ExtractError> {
    let one = t.values.len();
    let extra = rows.saturating_sub(1);
    let splits = if t.row_splits.is_empty() { 0 } else { t.row_splits.len() / 2 * extra };
    charge(budget, one.saturating_mul(extra).saturating_add(splits), limit)?;
    t.values.reserve(one * extra);
    for _ in 0..extra {
        t.values.extend_from_within(..one);
    }
    if !t.row_splits.is_empty() {
        let dtype = DataType::try_from(t.splits_dtype).unwrap_or(DataType::I64);
        let per_row = t.row_splits.len() / 2;
        let n = t.split(1);
        t.row_splits.truncate(per_row);
        for r in 1..=rows {
            push_split(t, dtype, n * r)?;
        }
    }
    Ok(())
}
