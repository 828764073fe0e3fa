//! Bytes features → one string per row: bytes_list[0] or bytes_value.

use super::gather::{ListEnd, walk_runs};
use super::{Cell, Ctx, ExtractError};
use crate::columns::Column;
use crate::view::{FeatureKind, FeatureView};

pub(super) fn write(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let s = c.strings_mut();
    s.end_row();
    for row in 0..rows {
        if let Some(cell) = cx.cell(source, row)
            && let Some(v) = cell_value(cx, source, row, cell)?
        {
            s.bytes.extend_from_slice(v);
        }
        s.end_row();
    }
    Ok(())
}

/// Every value of each row's bytes_list, `sep` between them (a bytes_value
/// is its one value).
pub(super) fn write_joined(
    cx: &Ctx<'_, '_>,
    source: usize,
    sep: &[u8],
    c: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let s = c.strings_mut();
    s.end_row();
    for row in 0..rows {
        if let Some(cell) = cx.cell(source, row) {
            let (f, cell) = cx.parse(source, row, cell)?;
            match f.kind() {
                Some(FeatureKind::BytesList) => {
                    let mut first = true;
                    f.bytes_values(|v| {
                        if !first {
                            s.bytes.extend_from_slice(sep);
                        }
                        first = false;
                        s.bytes.extend_from_slice(v);
                    })
                    .map_err(|e| cx.locate(e, source, row, cell))?;
                }
                Some(FeatureKind::BytesValue) => s.bytes.extend_from_slice(f.bytes_value()),
                None => {}
                other => return Err(cx.mismatch(source, row, cell, other, "bytes_list or bytes_value")),
            }
        }
        s.end_row();
    }
    Ok(())
}

/// The string the Feature in `cell` gives, or `None` when it gives none.
pub(super) fn cell_value<'a>(
    cx: &Ctx<'_, 'a>,
    source: usize,
    row: usize,
    cell: Cell,
) -> Result<Option<&'a [u8]>, ExtractError> {
    // The common case, a bytes_list of one value, read without a view.
    if let Some(v) = super::line_id::first_bytes(cx.bytes(cell)) {
        return Ok(Some(v));
    }
    let (f, cell) = cx.parse(source, row, cell)?;
    value_of(&f, cx.is_monolith()).map_err(|refused| match refused {
        Refused::Decode(e) => cx.locate(e, source, row, cell),
        Refused::Empty => cx.invalid(source, row, cell, "empty bytes_list (Monolith aborts)"),
        Refused::Kind(other) => cx.mismatch(source, row, cell, other, "bytes_list or bytes_value"),
    })
}

/// Why a Feature gives no string column's value.
enum Refused {
    Decode(crate::wire::DecodeError),
    /// An empty bytes_list, which Monolith aborts on.
    Empty,
    Kind(Option<FeatureKind>),
}

/// The string a parsed Feature gives, or `None` when it gives none.
fn value_of<'a>(f: &FeatureView<'a>, monolith: bool) -> Result<Option<&'a [u8]>, Refused> {
    Ok(match f.kind() {
        Some(FeatureKind::BytesList) => match f.first_bytes().map_err(Refused::Decode)? {
            Some(v) => Some(v),
            None if monolith => return Err(Refused::Empty),
            None => None,
        },
        // Monolith reads only bytes_list[0]: a bytes_value, a scalar or a
        // list of lists leaves its "" (parse_example_lib.cc:162-173).
        Some(k) if monolith && super::monolith::fill_ignores(k) => None,
        Some(FeatureKind::BytesValue) => Some(f.bytes_value()),
        None => None,
        other => return Err(Refused::Kind(other)),
    })
}

/// Walks a list straight into the column: a row per Feature, a bytes_list's
/// first value read without a view, others as `cell_value` reads them.
/// `None` on anything the checked path must judge (an error, more Features
/// than rows); the caller judges the count of Features.
pub(super) fn write_direct(cx: &Ctx<'_, '_>, name: &[u8], body: &[u8], c: &mut Column) -> Option<ListEnd> {
    let rows = cx.rows_in_batch().max(1);
    let s = c.strings_mut();
    s.offsets.reserve(rows + 1);
    s.end_row();
    let mut count = 0;
    walk_runs(name, body, None, |feature, _, _| {
        if count == rows {
            return None;
        }
        count += 1;
        // Anything `cell_value` would call an error goes back to it.
        let value = match super::line_id::first_bytes(feature) {
            Some(v) => Some(v),
            None => value_of(&FeatureView::parse(feature, 0).ok()?, cx.is_monolith()).ok()?,
        };
        if let Some(v) = value {
            s.bytes.extend_from_slice(v);
        }
        s.end_row();
        Some(())
    })
}
