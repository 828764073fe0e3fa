//! Sparse fid features → ragged ids. fid_v2_list runs are copied whole into the
//! typed values (the wire is already little-endian u64); fid_v1_list is
//! converted to v2.

use super::{Ctx, ExtractError};
use crate::columns::{Column, Values, extend_le};
use crate::fid::v1_to_v2;
use crate::view::{FeatureKind, le_u64};

pub(super) fn write(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let r = c.ragged_mut();
    r.splits.push(0)?;
    for row in 0..rows {
        if let Some((f, cell)) = cx.feature(source, row)? {
            let values = &mut r.values;
            let read = match f.kind() {
                Some(FeatureKind::FidV2List) => f.fid_runs(|run| push_fids(values, run)),
                Some(FeatureKind::FidV1List) => f.fid_runs(|run| {
                    run.chunks_exact(8).for_each(|c| values.push_u64(v1_to_v2(le_u64(c))));
                }),
                None => Ok(()),
                // Monolith leaves a row empty when the feature holds no fids.
                Some(_) if cx.is_monolith() => Ok(()),
                other => return Err(cx.mismatch(source, row, cell, other, "fid_v1_list or fid_v2_list")),
            };
            read.map_err(|e| cx.locate(e, source, row, cell))?;
        }
        r.splits.push(r.values.len())?;
    }
    Ok(())
}

/// Appends a run of little-endian fids as they are.
#[inline]
fn push_fids(values: &mut Values, run: &[u8]) {
    match values {
        Values::U64(v) => extend_le(v, run, u64::from_le),
        Values::I64(v) => extend_le(v, run, i64::from_le),
        other => run.chunks_exact(8).for_each(|c| other.push_u64(le_u64(c))),
    }
}
