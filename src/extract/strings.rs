//! Bytes features → one string per row: bytes_list[0] or bytes_value.

use super::{Ctx, ExtractError};
use crate::columns::Column;
use crate::view::FeatureKind;

pub(super) fn write(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let s = c.strings_mut();
    s.end_row();
    for row in 0..rows {
        // The common case, a bytes_list of one value, read without a view.
        if let Some(cell) = cx.cell(source, row)
            && let Some(v) = super::line_id::first_bytes(cx.bytes(cell))
        {
            s.bytes.extend_from_slice(v);
            s.end_row();
            continue;
        }
        if let Some((f, cell)) = cx.feature(source, row)? {
            match f.kind() {
                Some(FeatureKind::BytesList) => match f.first_bytes().map_err(|e| cx.locate(e, source, row, cell))? {
                    Some(v) => s.bytes.extend_from_slice(v),
                    None if cx.is_monolith() => {
                        return Err(cx.invalid(source, row, cell, "empty bytes_list (Monolith aborts)"));
                    }
                    None => {}
                },
                // Monolith reads only bytes_list[0]: a bytes_value, a scalar
                // or a list of lists leaves its "" (parse_example_lib.cc:162-173).
                Some(k) if cx.is_monolith() && super::monolith::fill_ignores(k) => {}
                Some(FeatureKind::BytesValue) => s.bytes.extend_from_slice(f.bytes_value()),
                None => {}
                other => return Err(cx.mismatch(source, row, cell, other, "bytes_list or bytes_value")),
            }
        }
        s.end_row();
    }
    Ok(())
}
