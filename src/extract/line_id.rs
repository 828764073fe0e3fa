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
    if !field.repeated
        && let Some(m) = ready(cx)
        && let Some(i) = m.fields.iter().position(|&(n, ty)| n == field.number && ty == field.ty)
    {
        // Every row's value was read in the memo's one walk per LineId.
        let absent = if cx.is_monolith() && cx.is_batch() { 0.0 } else { field.default };
        let nf = m.fields.len();
        for row in 0..rows {
            match (m.located.get(row), m.values.get(row * nf + i)) {
                (Some((buf, ..)), Some(v)) if *buf != u32::MAX => match v {
                    Num::Int(x) => values.push_i64(*x),
                    Num::Float(x) => values.push_f64(*x),
                    Num::Absent => values.push_f64(field.default),
                },
                _ => values.push_f64(absent),
            }
            values.fill(0.0, dim - 1);
        }
        return Ok(());
    }
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
    if !field.repeated
        && let Some(last) = scalar(cx, row, field)
    {
        push_value(buf, last.unwrap_or(Value::Float(field.default)));
        return Ok(1);
    }
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
    if let Some(m) = ready(cx)
        && let Some(&(buf, start, end)) = m.located.get(row)
    {
        let (start, end) = (start as usize, end as usize);
        return Ok((buf != u32::MAX).then(|| LineIdView::new(&cx.bufs[buf as usize][start..end], start)));
    }
    find(cx, row).map(|found| found.map(|(view, _)| view))
}

/// The last value of a singular number field of `row`'s LineId, from the
/// memo: `None` when the memo cannot say (the caller walks the LineId).
fn scalar<'a>(cx: &Ctx<'_, 'a>, row: usize, field: LineIdField) -> Option<Option<Value<'a>>> {
    let m = ready(cx)?;
    let i = m.fields.iter().position(|&(n, ty)| n == field.number && ty == field.ty)?;
    Some(match m.values.get(row * m.fields.len() + i)? {
        Num::Absent => None,
        Num::Int(v) => Some(Value::Int(*v)),
        Num::Float(v) => Some(Value::Float(*v)),
    })
}

/// The memo, filled on first use, if it could be.
fn ready<'x>(cx: &Ctx<'x, '_>) -> Option<std::cell::Ref<'x, Memo>> {
    if cx.memo.borrow().state == State::Empty {
        fill(cx, &mut cx.memo.borrow_mut());
    }
    let m = cx.memo.borrow();
    (m.state == State::Ready).then_some(m)
}

/// Finds the LineId of `row` and the buffer holding it.
fn find<'a>(cx: &Ctx<'_, 'a>, row: usize) -> Result<Option<(LineIdView<'a>, u32)>, ExtractError> {
    let source = cx.plan.line_id_source.expect("plans that read LineIds reserve __LINE_ID__");
    if let Some(cell) = cx.cell(source, row)
        && let Some(b) = first_bytes(cx.bytes(cell))
    {
        return Ok(Some((LineIdView::new(b, value_offset(cx, cell, b)), cell.buf)));
    }
    if let Some((f, cell)) = cx.feature(source, row)? {
        return match f.kind() {
            Some(FeatureKind::BytesList) => match f.first_bytes().map_err(|e| cx.locate(e, source, row, cell))? {
                Some(b) => Ok(Some((LineIdView::new(b, value_offset(cx, cell, b)), cell.buf))),
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
    Ok((!cell.is_none()).then(|| (LineIdView::new(cx.bytes(cell), cell.start as usize), cell.buf)))
}

/// The one value of a bytes_list written the way every encoder writes a
/// single value (`None` for anything else, which takes the general path).
pub(super) fn first_bytes(feature: &[u8]) -> Option<&[u8]> {
    if feature.len() <= 2 {
        return None;
    }
    crate::view::packed_run(feature, FeatureKind::BytesList)
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
    ExtractError::Decode(e)
}

/// What one call learnt of its rows' LineIds: where each is, and the last
/// value of every singular number field the plan reads, so each LineId is
/// found and walked once however many outputs read it. Filled on first use;
/// anything that fails leaves it unused, and the writers take the per-output
/// path, which reports the error where it always has.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    state: State,
    /// Per row: buffer, start and end of its LineId (buffer `u32::MAX`: none).
    located: Vec<(u32, u32, u32)>,
    fields: Vec<(u32, crate::view::FieldType)>,
    /// `fields.len()` values per row.
    values: Vec<Num>,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum State {
    #[default]
    Empty,
    Ready,
    Unusable,
}

#[derive(Debug, Clone, Copy)]
enum Num {
    Absent,
    Int(i64),
    Float(f64),
}

impl Memo {
    /// Forgets the last call.
    pub(crate) fn clear(&mut self) {
        self.state = State::Empty;
    }
}

/// The singular number fields the plan's LineId outputs read, each number
/// once (a number read as two types is left to the per-output path).
fn scalar_fields(cx: &Ctx<'_, '_>, out: &mut Vec<(u32, crate::view::FieldType)>) {
    out.clear();
    let mut clash = Vec::new();
    for o in &cx.plan.outputs {
        let crate::config::Op::LineId { field, .. } = o.op else { continue };
        if field.repeated || field.ty.class() == ValueClass::Bytes {
            continue;
        }
        match out.iter().find(|(n, _)| *n == field.number) {
            Some(&(_, ty)) if ty != field.ty => clash.push(field.number),
            Some(_) => {}
            None => out.push((field.number, field.ty)),
        }
    }
    out.retain(|(n, _)| !clash.contains(n));
}

/// Fills the memo: every row's LineId located and its scalar fields read.
fn fill(cx: &Ctx<'_, '_>, m: &mut Memo) {
    m.state = State::Unusable;
    m.located.clear();
    scalar_fields(cx, &mut m.fields);
    m.values.clear();
    let mut last = [None; 16];
    if m.fields.len() > last.len() {
        return;
    }
    for row in 0..cx.ix.rows {
        let Ok(found) = find(cx, row) else { return };
        let at = found.map_or((u32::MAX, 0, 0), |(v, buf)| locate_bytes(cx, v.bytes(), buf));
        m.located.push(at);
        let last = &mut last[..m.fields.len()];
        last.fill(None);
        if let Some((v, _)) = found
            && v.last_values(&m.fields, last).is_err()
        {
            return;
        }
        m.values.extend(last.iter().map(|v| match v {
            Some(Value::Int(i)) => Num::Int(*i),
            Some(Value::Float(f)) => Num::Float(*f),
            _ => Num::Absent,
        }));
    }
    m.state = State::Ready;
}

/// Where a LineId's bytes sit in buffer `buf`.
fn locate_bytes(cx: &Ctx<'_, '_>, bytes: &[u8], buf: u32) -> (u32, u32, u32) {
    let start = bytes.as_ptr() as usize - cx.bufs[buf as usize].as_ptr() as usize;
    (buf, start as u32, (start + bytes.len()) as u32)
}
