//! LineId ("extra") features → `[rows, dim]` (integers i64, floats f32) or one
//! string per row. The LineId of a row is `__LINE_ID__`'s bytes_list[0] or, for
//! an Example without that feature, its field 100.

use super::{Ctx, ExtractError};
use crate::columns::{Column, Values};
use crate::config::LineIdField;
use crate::view::{FeatureKind, LineIdView, Value, ValueClass};

pub(super) fn write(
    cx: &Ctx<'_, '_>,
    c: &mut Column,
    rows: usize,
    field: LineIdField,
    dim: usize,
) -> Result<(), ExtractError> {
    if field.ty.class() == ValueClass::Bytes {
        return write_strings(cx, c, rows, field);
    }
    let values = &mut c.dense_mut().values;
    for row in 0..rows {
        let n = meta_row(cx, values, row, field, dim)?;
        values.fill(0.0, dim - n);
    }
    Ok(())
}

fn write_strings(cx: &Ctx<'_, '_>, c: &mut Column, rows: usize, field: LineIdField) -> Result<(), ExtractError> {
    let s = c.strings_mut();
    s.end_row();
    for row in 0..rows {
        if let Some(line_id) = line_id(cx, row)? {
            let last = line_id.last(field.number, field.ty).map_err(|e| locate(cx, e, row))?;
            if let Some(Value::Bytes(b)) = last {
                s.bytes.extend_from_slice(b);
            }
        }
        s.end_row();
    }
    Ok(())
}

/// Writes up to `dim` values of a LineId field for `row`; returns how many.
/// Used by line_id outputs and by `__meta__` dense features without their list.
pub(super) fn meta_row(
    cx: &Ctx<'_, '_>,
    buf: &mut Values,
    row: usize,
    field: LineIdField,
    dim: usize,
) -> Result<usize, ExtractError> {
    let Some(line_id) = line_id(cx, row)? else {
        // Monolith zeroes extras of a batch without __LINE_ID__; otherwise an
        // absent LineId reads as the default instance (sample_rate 1.0).
        // A repeated field has no values at all: the caller pads the row (with
        // 0, or a `__meta__` dense feature's default).
        if field.repeated {
            return Ok(0);
        }
        let no_list = cx.is_monolith() && cx.is_batch();
        let default = if no_list { 0.0 } else { field.default };
        buf.push_f64(default);
        return Ok(1);
    };
    let mut n = 0;
    let mut last = None;
    line_id
        .values(field.number, field.ty, |v| {
            if !field.repeated {
                last = Some(v);
            } else if n < dim {
                push_value(buf, v);
                n += 1;
            }
        })
        .map_err(|e| locate(cx, e, row))?;
    if !field.repeated {
        push_value(buf, last.unwrap_or(Value::Float(field.default)));
        n = 1;
    }
    Ok(n)
}

fn push_value(buf: &mut Values, v: Value<'_>) {
    match v {
        Value::Int(i) => buf.push_i64(i),
        Value::Float(f) => buf.push_f64(f),
        Value::Bytes(_) => buf.push_f64(0.0),
    }
}

/// The LineId of `row`, if it has one.
pub(super) fn line_id<'a>(cx: &Ctx<'_, 'a>, row: usize) -> Result<Option<LineIdView<'a>>, ExtractError> {
    let source = cx.plan.line_id_source.expect("plans that read LineIds reserve __LINE_ID__");
    if let Some((f, cell)) = cx.feature(source, row)? {
        return match f.kind() {
            Some(FeatureKind::BytesList) => match f.first_bytes().map_err(|e| cx.locate(e, source, row, cell))? {
                Some(b) => Ok(Some(LineIdView::new(b, value_offset(cx, cell, b)))),
                None if cx.is_monolith() => {
                    Err(cx.invalid(source, row, cell, "empty __LINE_ID__ bytes_list (Monolith aborts)"))
                }
                None => Ok(None),
            },
            None => Ok(None),
            other => Err(cx.mismatch(source, row, cell, other, "bytes_list holding a serialized LineId")),
        };
    }
    if cx.is_batch() {
        return Ok(None);
    }
    let cell = cx.example_row(row).line_id;
    Ok((!cell.is_none()).then(|| LineIdView::new(cx.bytes(cell), cell.start as usize)))
}

/// Absolute offset of a sub-slice of a cell's bytes.
fn value_offset(cx: &Ctx<'_, '_>, cell: super::Cell, value: &[u8]) -> usize {
    let outer = cx.bytes(cell);
    cell.start as usize + (value.as_ptr() as usize - outer.as_ptr() as usize)
}

fn locate(cx: &Ctx<'_, '_>, e: crate::wire::DecodeError, row: usize) -> ExtractError {
    let e = if cx.is_batch() {
        e.within("line_id", None).within("row", Some(row))
    } else {
        e.within("line_id", None).within("example", Some(row))
    };
    ExtractError::from(e).at_row(row)
}
