//! Dense features → `[rows, dim]`: a prefix of the values, then padding.
//! float_list → f32 is a straight copy of the wire bytes; other pairs convert.
//! Monolith quirks (compat: monolith): an empty float/double list with dim 1
//! gives FLT_MIN, scalar and `*_lists` variants give zeros, padding is 0.

use super::gather::{ListEnd, walk_runs};
use super::{Ctx, ExtractError};
use crate::columns::{Column, Values, extend_le};
use crate::config::LineIdField;
use crate::proto::fex_v1::DataType;
use crate::view::{FeatureKind, FeatureView, le_f32, le_f64, packed_run};
use crate::wire::DecodeError;

/// source index, dtype, dim, default, and the `__meta__` LineId fallback.
pub(super) type DenseSpec = (usize, DataType, usize, f64, Option<LineIdField>);

pub(super) fn write(cx: &Ctx<'_, '_>, c: &mut Column, rows: usize, spec: DenseSpec) -> Result<(), ExtractError> {
    let (source, _, dim, default, meta) = spec;
    let pad = if cx.is_monolith() { 0.0 } else { default };
    let values = &mut c.dense_mut().values;
    values.reserve(rows * dim);
    for (row, cell) in cx.row_cells(source, rows).enumerate() {
        // The common case, one packed run of floats, is copied in one go.
        let run = cell.and_then(|cell| packed_run(cx.bytes(cell), FeatureKind::FloatList));
        let written = match (run.and_then(|run| copy_run(values, run, dim)), cell) {
            (Some(n), _) => n,
            (None, Some(cell)) => row_into(cx, values, (source, row, cell), dim)?,
            (None, None) => match meta {
                Some(field) => super::line_id::meta_row(cx, values, row, field, dim)?,
                None => 0,
            },
        };
        if written < dim {
            values.fill(pad, dim - written);
        }
    }
    Ok(())
}

/// Any Feature, decoded in full: appends up to `dim` values of the Feature in
/// `cell` (row `row` of `source`), with every check; returns how many.
pub(super) fn row_into(
    cx: &Ctx<'_, '_>,
    values: &mut Values,
    (source, row, cell): (usize, usize, super::Cell),
    dim: usize,
) -> Result<usize, ExtractError> {
    let (f, cell) = cx.parse(source, row, cell)?;
    any_row(cx, values, &f, dim).map_err(|e| match e {
        RowError::Decode(e) => cx.locate(e, source, row, cell),
        RowError::Mismatch(expected) => cx.mismatch(source, row, cell, f.kind(), expected),
        RowError::Invalid(message) => cx.invalid(source, row, cell, message),
    })
}

/// A `list` feature: every value of each row's Feature (as a dense row
/// reads them, with no `dim` to stop at), one ragged row each; a missing
/// Feature is an empty row. Bounded by the Feature's own bytes (a value
/// takes at least one), so it is charged after it is written.
pub(super) fn write_list(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let r = c.ragged_mut();
    r.splits.reserve(rows + 1);
    r.splits.push(0)?;
    for (row, cell) in cx.row_cells(source, rows).enumerate() {
        if let Some(cell) = cell {
            row_into(cx, &mut r.values, (source, row, cell), usize::MAX)?;
        }
        r.splits.push(r.values.len())?;
    }
    Ok(())
}

/// Walks a list straight into the column: a row per Feature. `None` on
/// anything the checked path must judge (an error, more Features than rows).
pub(super) fn write_direct(
    cx: &Ctx<'_, '_>,
    spec: DenseSpec,
    name: &[u8],
    body: &[u8],
    c: &mut Column,
) -> Option<ListEnd> {
    let (_, _, dim, default, _) = spec;
    let pad = if cx.is_monolith() { 0.0 } else { default };
    let rows = cx.rows_in_batch().max(1);
    let values = &mut c.dense_mut().values;
    values.reserve(rows * dim);
    let mut count = 0;
    walk_runs(name, body, Some(0x1a), |feature, _, run| {
        if count == rows {
            return None;
        }
        count += 1;
        let run = run.or_else(|| packed_run(feature, FeatureKind::FloatList));
        let n = match run.and_then(|run| copy_run(values, run, dim)) {
            Some(n) => n,
            None => any_row(cx, values, &FeatureView::parse(feature, 0).ok()?, dim).ok()?,
        };
        if n < dim {
            values.fill(pad, dim - n);
        }
        Some(())
    })
}

/// Copies up to `dim` floats of a non-empty packed float_list run into f32
/// values; `None` sends the row to the general path.
#[inline]
fn copy_run(values: &mut Values, run: &[u8], dim: usize) -> Option<usize> {
    let Values::F32(v) = values else { return None };
    if run.is_empty() || !run.len().is_multiple_of(4) {
        return None;
    }
    let take = (run.len() / 4).min(dim);
    extend_le(v, &run[..take * 4]);
    Some(take)
}

/// Any Feature: its values decoded in full, then Monolith's FLT_MIN for a
/// present but empty float list of dim 1.
fn any_row(cx: &Ctx<'_, '_>, values: &mut Values, f: &FeatureView<'_>, dim: usize) -> Result<usize, RowError> {
    match row_values(cx, values, f, dim)? {
        0 if dim == 1 && cx.is_monolith() && is_float_list(f.kind()) => {
            values.push_f64(f64::from(f32::MIN_POSITIVE));
            Ok(1)
        }
        n => Ok(n),
    }
}

fn is_float_list(kind: Option<FeatureKind>) -> bool {
    matches!(kind, Some(FeatureKind::FloatList | FeatureKind::DoubleList))
}

enum RowError {
    Decode(DecodeError),
    Mismatch(&'static str),
    Invalid(&'static str),
}

impl From<DecodeError> for RowError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

/// Writes up to `dim` values of one Feature; returns how many.
fn row_values(cx: &Ctx<'_, '_>, buf: &mut Values, f: &FeatureView<'_>, dim: usize) -> Result<usize, RowError> {
    use FeatureKind::*;
    let mut n = 0;
    let expected = expected(buf.dtype());
    match (f.kind(), &mut *buf) {
        (None, _) => {}
        (Some(FloatList), Values::F32(v)) => f.float_runs(|run| {
            let take = (run.len() / 4).min(dim - n);
            extend_le(v, &run[..take * 4]);
            n += take;
        })?,
        (Some(DoubleList), Values::F64(v)) => f.double_runs(|run| {
            let take = (run.len() / 8).min(dim - n);
            extend_le(v, &run[..take * 8]);
            n += take;
        })?,
        (Some(FloatList), Values::F64(_)) => f.float_runs(|run| {
            for c in run.chunks_exact(4).take(dim - n) {
                buf.push_f64(f64::from(le_f32(c)));
                n += 1;
            }
        })?,
        (Some(DoubleList), Values::F32(_)) => f.double_runs(|run| {
            for c in run.chunks_exact(8).take(dim - n) {
                buf.push_f64(le_f64(c));
                n += 1;
            }
        })?,
        (Some(Int64List), Values::I64(_)) => {
            f.int64_values(|v| {
                if n < dim {
                    buf.push_i64(v);
                    n += 1;
                }
            })?;
            if n == 0 && dim == 1 && cx.is_monolith() {
                return Err(RowError::Invalid("empty int64_list for a dim-1 feature (Monolith aborts)"));
            }
        }
        // Monolith ignores scalar and list-of-list variants: the row stays 0.
        (Some(k), _) if cx.is_monolith() && super::monolith::fill_ignores(k) => {}
        (Some(FloatValue), Values::F32(_) | Values::F64(_)) => {
            buf.push_f64(f64::from(f.float_value()));
            n = 1;
        }
        (Some(DoubleValue), Values::F32(_) | Values::F64(_)) => {
            buf.push_f64(f.double_value());
            n = 1;
        }
        (Some(Int64Value), Values::I64(_)) => {
            buf.push_i64(f.int64_value());
            n = 1;
        }
        _ => return Err(RowError::Mismatch(expected)),
    }
    Ok(n)
}

fn expected(dtype: DataType) -> &'static str {
    match dtype {
        DataType::I64 => "int64_list or int64_value for an i64 output",
        _ => "float_list, double_list, float_value or double_value for a float output",
    }
}
