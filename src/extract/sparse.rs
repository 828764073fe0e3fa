//! Sparse fid features → ragged ids. fid_v2_list runs are copied whole into the
//! typed values (the wire is already little-endian u64); fid_v1_list is
//! converted to v2.

use super::{Cell, Ctx, ExtractError};
use crate::columns::{Column, SplitInt, Splits, Values, extend_le};
use crate::config::{Output, Source};
use crate::fid::v1_to_v2;
use crate::view::{FeatureKind, le_u64, packed_run};

pub(super) fn write(cx: &Ctx<'_, '_>, out: &Output, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let Source::Feature(source) = out.source else { unreachable!("sparse outputs read features") };
    let r = c.ragged_mut();
    r.splits.push(0)?;
    let mut cells = cx.row_cells(source, rows).enumerate();
    loop {
        // Rows in the canonical layout go through a loop specialised on the
        // column's types; the first row that is not comes back here.
        let miss = match (&mut r.values, &mut r.splits) {
            (Values::U64(v), Splits::I64(s)) => canonical_rows(cx, &mut cells, v, s)?,
            (Values::U64(v), Splits::I32(s)) => canonical_rows(cx, &mut cells, v, s)?,
            (Values::I64(v), Splits::I64(s)) => canonical_rows(cx, &mut cells, v, s)?,
            (Values::I64(v), Splits::I32(s)) => canonical_rows(cx, &mut cells, v, s)?,
            _ => cells.next(),
        };
        let Some((row, cell)) = miss else { return Ok(()) };
        if let Some(cell) = cell {
            general_row(cx, source, row, cell, &mut r.values)?;
        }
        r.splits.push(r.values.len())?;
    }
}

/// Copies rows whose Feature is one packed run of v2 fids (or missing) until
/// a row is not; returns that row, or `None` when every row is done.
#[inline]
fn canonical_rows<T: bytemuck::Pod, S: SplitInt>(
    cx: &Ctx<'_, '_>,
    cells: &mut impl Iterator<Item = (usize, Option<Cell>)>,
    values: &mut Vec<T>,
    splits: &mut Vec<S>,
) -> Result<Option<(usize, Option<Cell>)>, ExtractError> {
    for (row, cell) in cells.by_ref() {
        if let Some(cell) = cell {
            match packed_run(cx.bytes(cell), FeatureKind::FidV2List) {
                Some(run) if run.len() % 8 == 0 => extend_le(values, run),
                _ => return Ok(Some((row, Some(cell)))),
            }
        }
        splits.push(S::from_len(values.len())?);
    }
    Ok(None)
}

/// Any other row: the Feature decoded in full, with every check and error.
fn general_row(cx: &Ctx<'_, '_>, source: usize, row: usize, cell: Cell, values: &mut Values) -> Result<(), ExtractError> {
    let (f, cell) = cx.parse(source, row, cell)?;
    let read = match f.kind() {
        Some(FeatureKind::FidV2List) => f.fid_runs(|run| run.chunks_exact(8).for_each(|c| values.push_u64(le_u64(c)))),
        Some(FeatureKind::FidV1List) => f.fid_runs(|run| {
            run.chunks_exact(8).for_each(|c| values.push_u64(v1_to_v2(le_u64(c))));
        }),
        None => Ok(()),
        // Monolith leaves a row empty when the feature holds no fids.
        Some(_) if cx.is_monolith() => Ok(()),
        other => return Err(cx.mismatch(source, row, cell, other, "fid_v1_list or fid_v2_list")),
    };
    read.map_err(|e| cx.locate(e, source, row, cell))
}
