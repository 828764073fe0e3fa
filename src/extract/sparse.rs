//! Sparse fid features → ragged ids. fid_v2_list runs are copied whole into the
//! typed values (the wire is already little-endian u64); fid_v1_list is
//! converted to v2.

use super::gather::{ListEnd, walk_runs};
use super::{Cell, Ctx, ExtractError};
use crate::columns::{Column, PAD, SplitInt, Splits, Values, extend_le, extend_le_padded};
use crate::fid::v1_to_v2;
use crate::view::{FeatureKind, le_u64, packed_run};

pub(super) fn write(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let r = c.ragged_mut();
    let cells = cx.row_cells(source, rows);
    // Room for every row at once: a fid takes 8 bytes of its Feature, so
    // the rows hold at most their Features' bytes / 8 ids. (A SHARED
    // Feature repeated in every row is left to grow: the output budget
    // bounds it, not the input.)
    if cells.shared.is_none() {
        r.values.reserve(cells.cells.iter().map(|c| (c.end - c.start) as usize).sum::<usize>() / 8);
    }
    r.splits.reserve(rows + 1);
    r.splits.push(0)?;
    let mut cells = cells.enumerate();
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
pub(super) fn general_row(
    cx: &Ctx<'_, '_>,
    source: usize,
    row: usize,
    cell: Cell,
    values: &mut Values,
) -> Result<(), ExtractError> {
    let (f, cell) = cx.parse(source, row, cell)?;
    let read = match f.kind() {
        Some(FeatureKind::FidV2List) => f.fid_runs(|run| run.chunks_exact(8).for_each(|c| values.push_u64(le_u64(c)))),
        Some(FeatureKind::FidV1List) => f.fid_runs(|run| {
            run.chunks_exact(8).for_each(|c| values.push_u64(v1_to_v2(le_u64(c))));
        }),
        None => Ok(()),
        // Monolith leaves a row empty for a scalar or a list of lists, and
        // aborts on any other list (parse_example_lib.cc:130, 145, 156, 163).
        Some(k) if cx.is_monolith() && super::monolith::fill_ignores(k) => Ok(()),
        other => return Err(cx.mismatch(source, row, cell, other, "fid_v1_list or fid_v2_list")),
    };
    read.map_err(|e| cx.locate(e, source, row, cell))
}

/// Walks a list straight into the column: a row per Feature, canonical runs
/// copied whole, others decoded in full. `None` on anything the checked path
/// must judge; the caller judges the count of Features.
pub(super) fn write_direct(cx: &Ctx<'_, '_>, name: &[u8], body: &[u8], c: &mut Column) -> Option<ListEnd> {
    let rows = cx.rows_in_batch().max(1);
    let r = c.ragged_mut();
    r.splits.push(0).ok()?;
    match (&mut r.values, &mut r.splits) {
        (Values::U64(v), Splits::I64(s)) => walk_ids(cx, name, body, rows, v, s),
        (Values::U64(v), Splits::I32(s)) => walk_ids(cx, name, body, rows, v, s),
        (Values::I64(v), Splits::I64(s)) => walk_ids(cx, name, body, rows, v, s),
        (Values::I64(v), Splits::I32(s)) => walk_ids(cx, name, body, rows, v, s),
        _ => None,
    }
}

#[inline]
fn walk_ids<T: Id, S: SplitInt>(
    cx: &Ctx<'_, '_>,
    name: &[u8],
    body: &[u8],
    rows: usize,
    values: &mut Vec<T>,
    splits: &mut Vec<S>,
) -> Option<ListEnd> {
    values.reserve(body.len() / 8);
    splits.reserve(rows + 1);
    // No count check per Feature: what a sparse column holds is bounded by
    // the list's own bytes (at most 8 bytes of split per 2-byte Feature), and
    // the caller refuses a count other than the batch's after the walk.
    walk_runs(name, body, Some(0x12), |feature, start, run| {
        // A short run followed by the rest of its list: one fixed-size copy
        // (its values start 4 bytes into the Feature). Anything else goes
        // out of line, so that this stays small enough to inline.
        let copied = match run {
            Some(run) if run.len() % 8 == 0 => match body.get(start + 4..).and_then(|b| b.first_chunk::<PAD>()) {
                Some(src) => extend_le_padded(values, src, run.len()),
                None => false,
            },
            _ => false,
        };
        if !copied {
            other_ids(cx, feature, run, values)?;
        }
        splits.push(S::from_len(values.len()).ok()?);
        Some(())
    })
}

/// A Feature the padded copy did not take: a run too near the end of its
/// list, or any other layout.
#[inline(never)]
fn other_ids<T: Id>(cx: &Ctx<'_, '_>, feature: &[u8], run: Option<&[u8]>, values: &mut Vec<T>) -> Option<()> {
    match run.or_else(|| packed_run(feature, FeatureKind::FidV2List)) {
        Some(run) if run.len() % 8 == 0 => extend_le(values, run),
        _ => any_ids(cx, feature, values)?,
    }
    Some(())
}

/// A Feature that is not one packed run of v2 fids, decoded in full.
fn any_ids<T: Id>(cx: &Ctx<'_, '_>, feature: &[u8], values: &mut Vec<T>) -> Option<()> {
    let f = crate::view::FeatureView::parse(feature, 0).ok()?;
    match f.kind() {
        Some(FeatureKind::FidV2List) => f.fid_runs(|run| extend_le(values, run)).ok(),
        Some(FeatureKind::FidV1List) => {
            f.fid_runs(|run| values.extend(run.chunks_exact(8).map(|c| T::from_u64(v1_to_v2(le_u64(c)))))).ok()
        }
        None => Some(()),
        Some(k) if cx.is_monolith() && super::monolith::fill_ignores(k) => Some(()),
        Some(_) => None,
    }
}

/// The 8-byte id types a sparse column holds.
trait Id: bytemuck::Pod {
    fn from_u64(x: u64) -> Self;
}

impl Id for u64 {
    fn from_u64(x: u64) -> Self {
        x
    }
}

impl Id for i64 {
    fn from_u64(x: u64) -> Self {
        x as i64
    }
}
