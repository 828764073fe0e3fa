//! LineId ("extra") features → `[rows, dim]` (integers i64, floats f32) or one
//! string per row. The LineId of a row is `__LINE_ID__`'s bytes_list[0] or, for
//! an Example without that feature, its field 100.

use super::{Ctx, ExtractError};
use crate::columns::{Column, Values};
use crate::config::LineIdField;
use crate::error::ErrorKind;
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
    if cx.is_monolith() {
        refuse_chnid(cx, rows, field)?;
        if !field.repeated && dim > 1 {
            // Monolith writes a singular field at `flat(offset)` whatever the
            // shape (K 184-190, 322-355): row r's value lands at flat index
            // r of the [rows, dim] tensor, so the rows' values come first and
            // zeros follow.
            write(cx, c, rows, field, 1)?;
            c.dense_mut().values.fill(0.0, rows * (dim - 1));
            return Ok(());
        }
    }
    let values = &mut c.dense_mut().values;
    if let Some(m) = ready(cx)
        && let Some(i) = m.field(field)
    {
        // Every row's values were read in the memo's one walk per LineId.
        let absent = if cx.is_monolith() && cx.is_batch() { 0.0 } else { field.default };
        for row in 0..rows {
            let n = match m.located.get(row) {
                Some((buf, ..)) if *buf != u32::MAX => {
                    let found = m.row(row, i);
                    found.iter().take(dim).for_each(|v| push_num(values, *v));
                    match (found.len(), field.repeated) {
                        (0, false) => {
                            values.push_f64(field.default);
                            1
                        }
                        (n, _) => n.min(dim),
                    }
                }
                // No LineId: a singular field reads its default, a repeated
                // one has no values.
                _ if field.repeated => 0,
                _ => {
                    values.push_f64(absent);
                    1
                }
            };
            if n < dim {
                values.fill(0.0, dim - n);
            }
        }
        return Ok(());
    }
    for row in 0..rows {
        let n = meta_row(cx, values, row, field, dim)?;
        values.fill(0.0, dim - n);
    }
    Ok(())
}

/// LineId.chnid's field number.
const CHNID: u32 = 19;

/// LineId.chnid is an int64, so Monolith allocates an int64 tensor for it,
/// then writes it through `flat<float>()` (K 209-210), a CHECK that aborts
/// for every row with a LineId (every Example has one, its default).
fn refuse_chnid(cx: &Ctx<'_, '_>, rows: usize, field: LineIdField) -> Result<(), ExtractError> {
    if field.number != CHNID || field.ty != crate::view::FieldType::Int64 {
        return Ok(());
    }
    for row in 0..rows {
        if !cx.is_batch() || line_id(cx, row)?.is_some() {
            let path = if cx.is_batch() { format!("__LINE_ID__ row {row}") } else { format!("example[{row}].line_id") };
            let message = "LineId.chnid aborts Monolith's kernel (an int64 written as float); use compat: native";
            return Err(ExtractError::from(ErrorKind::Invalid { path, name: "chnid".into(), message }).at_row(row));
        }
    }
    Ok(())
}

fn push_num(values: &mut Values, v: Num) {
    match v {
        Num::Int(x) => values.push_i64(x),
        Num::Float(x) => values.push_f64(x),
    }
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
    let i = m.field(field).filter(|_| !field.repeated)?;
    Some(m.row(row, i).first().map(|v| match v {
        Num::Int(x) => Value::Int(*x),
        Num::Float(x) => Value::Float(*x),
    }))
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
            // Monolith reads bytes_list().value(0) of every Feature it reaches
            // (K 551: CHECK_GT; Examples, data_reader.cc:174), and fails on none.
            None if cx.is_monolith() => {
                Err(cx.invalid(source, row, cell, "no __LINE_ID__ bytes_list value (Monolith aborts)"))
            }
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
/// single value (`None` for anything else, which takes the general path):
/// a LineId, as `__LINE_ID__` holds it.
pub(crate) fn first_bytes(feature: &[u8]) -> Option<&[u8]> {
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

/// A LineId decode error at `row`, with the path of its batch row or Example.
pub(super) fn locate(cx: &Ctx<'_, '_>, e: crate::wire::DecodeError, row: usize) -> ExtractError {
    let e = if cx.is_batch() {
        e.within("line_id", None).within("row", Some(row))
    } else {
        e.within("line_id", None).within("example", Some(row))
    };
    ExtractError::from(e).at_row(row)
}

/// What one call learnt of its rows' LineIds: where each is, and the values
/// of every number field the plan's LineId outputs read (the last one of a
/// singular field, the first `width` of a repeated one), so each LineId is
/// found and walked once however many outputs read it. Filled on first use;
/// anything that fails leaves it unused, and the writers take the per-output
/// path, which reports the error where it always has.
#[derive(Debug, Default)]
pub(crate) struct Memo {
    state: State,
    /// Per row: buffer, start and end of its LineId (buffer `u32::MAX`: none).
    located: Vec<(u32, u32, u32)>,
    fields: Vec<(u32, crate::view::FieldType)>,
    slots: Vec<Slot>,
    /// Values per row: the sum of the slots' widths.
    block: usize,
    values: Vec<Num>,
    /// How many values each row holds per field (`fields.len()` per row).
    counts: Vec<u32>,
}

/// Where a field's values sit in a row's block.
#[derive(Debug, Clone, Copy)]
struct Slot {
    at: usize,
    width: usize,
    repeated: bool,
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
    Int(i64),
    Float(f64),
}

impl Memo {
    /// Forgets the last call.
    pub(crate) fn clear(&mut self) {
        self.state = State::Empty;
    }

    /// Whether the last call could build it (for tests).
    #[cfg(test)]
    pub(crate) fn was_built(&self) -> bool {
        self.state == State::Ready
    }

    fn field(&self, field: LineIdField) -> Option<usize> {
        self.fields.iter().position(|&(n, ty)| n == field.number && ty == field.ty)
    }

    /// Field `i`'s values in `row`.
    fn row(&self, row: usize, i: usize) -> &[Num] {
        let slot = self.slots[i];
        let start = row * self.block + slot.at;
        let n = self.counts[row * self.fields.len() + i] as usize;
        &self.values[start..start + n]
    }
}

/// The number fields the plan's LineId outputs read, each number once with
/// the widest `dim` asked of it (a number read two ways is left to the
/// per-output path).
fn memo_fields(cx: &Ctx<'_, '_>, m: &mut Memo) {
    m.fields.clear();
    m.slots.clear();
    let mut clash = Vec::new();
    for o in &cx.plan.outputs {
        let crate::config::Op::LineId { field, dim } = o.op else { continue };
        if field.ty.class() == ValueClass::Bytes {
            continue;
        }
        let width = if field.repeated { dim } else { 1 };
        match m.fields.iter().position(|(n, _)| *n == field.number) {
            Some(i) if m.fields[i].1 != field.ty || m.slots[i].repeated != field.repeated => clash.push(field.number),
            Some(i) => m.slots[i].width = m.slots[i].width.max(width),
            None => {
                m.fields.push((field.number, field.ty));
                m.slots.push(Slot { at: 0, width, repeated: field.repeated });
            }
        }
    }
    for n in clash {
        if let Some(i) = m.fields.iter().position(|(f, _)| *f == n) {
            m.fields.remove(i);
            m.slots.remove(i);
        }
    }
    m.block = 0;
    for slot in &mut m.slots {
        slot.at = m.block;
        m.block += slot.width;
    }
}

/// Fills the memo: every row's LineId located and its fields read.
fn fill(cx: &Ctx<'_, '_>, m: &mut Memo) {
    m.state = State::Unusable;
    m.located.clear();
    memo_fields(cx, m);
    let (rows, nf) = (cx.ix.rows, m.fields.len());
    // The memo holds every LineId output's values before those outputs are
    // charged: past the call's output limit it is not built, and each
    // output reads its rows itself (and is charged first).
    let size = rows.saturating_mul(m.block).saturating_mul(std::mem::size_of::<Num>());
    if size > cx.ix.limits.max_output_bytes {
        return;
    }
    m.values.clear();
    m.values.resize(rows * m.block, Num::Int(0));
    m.counts.clear();
    m.counts.resize(rows * nf, 0);
    for row in 0..rows {
        let Ok(found) = find(cx, row) else { return };
        let at = found.map_or((u32::MAX, 0, 0), |(v, buf)| locate_bytes(cx, v.bytes(), buf));
        m.located.push(at);
        let Some((view, _)) = found else { continue };
        let mut row_values =
            RowValues { values: &mut m.values[row * m.block..], counts: &mut m.counts[row * nf..], slots: &m.slots };
        if view.scan_numbers(&m.fields, |i, v| row_values.keep(i, v)).is_none() {
            // Not the usual layout: forget what the quick walk kept, then
            // the full decoder, which may also find the LineId malformed.
            row_values.counts.fill(0);
            if view.scan(&m.fields, |i, v| row_values.keep(i, v)).is_err() {
                return;
            }
        }
    }
    m.state = State::Ready;
}

/// One row's block of the memo, being filled.
struct RowValues<'m> {
    values: &'m mut [Num],
    counts: &'m mut [u32],
    slots: &'m [Slot],
}

impl RowValues<'_> {
    /// Keeps a value of field `i`: the last of a singular field, the first
    /// `width` of a repeated one.
    fn keep(&mut self, i: usize, v: Value<'_>) {
        let slot = self.slots[i];
        let at = if slot.repeated { self.counts[i] as usize } else { 0 };
        if at < slot.width {
            self.values[slot.at + at] = match v {
                Value::Float(f) => Num::Float(f),
                Value::Int(x) => Num::Int(x),
                Value::Bytes(_) => Num::Int(0),
            };
            self.counts[i] = (at + 1) as u32;
        }
    }
}

/// Where a LineId's bytes sit in buffer `buf`.
fn locate_bytes(cx: &Ctx<'_, '_>, bytes: &[u8], buf: u32) -> (u32, u32, u32) {
    let start = bytes.as_ptr() as usize - cx.bufs[buf as usize].as_ptr() as usize;
    (buf, start as u32, (start + bytes.len()) as u32)
}
