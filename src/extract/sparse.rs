//! Sparse fid features → ragged ids. fid_v2_list runs are copied whole (the
//! wire is already little-endian u64); fid_v1_list is converted to v2.

use super::write::push_split;
use super::{Ctx, ExtractError};
use crate::config::{Output, Source};
use crate::fid::v1_to_v2;
use crate::proto::fex_v1::{DataType, Tensor};
use crate::view::{FeatureKind, le_u64};

pub(super) fn write(
    cx: &Ctx<'_, '_>,
    out: &Output,
    t: &mut Tensor,
    rows: usize,
    splits: DataType,
) -> Result<(), ExtractError> {
    let Source::Feature(source) = out.source else { unreachable!("sparse outputs read features") };
    push_split(t, splits, 0)?;
    for row in 0..rows {
        if let Some((f, cell)) = cx.feature(source, row)? {
            let values = &mut t.values;
            let read = match f.kind() {
                Some(FeatureKind::FidV2List) => f.fid_runs(|run| values.extend_from_slice(run)),
                Some(FeatureKind::FidV1List) => f.fid_runs(|run| {
                    for c in run.chunks_exact(8) {
                        values.extend_from_slice(&v1_to_v2(le_u64(c)).to_le_bytes());
                    }
                }),
                None => Ok(()),
                // Monolith leaves a row empty when the feature holds no fids.
                Some(_) if cx.is_monolith() => Ok(()),
                other => return Err(cx.mismatch(source, row, cell, other, "fid_v1_list or fid_v2_list")),
            };
            read.map_err(|e| cx.locate(e, source, row, cell))?;
        }
        push_split(t, splits, t.values.len() / 8)?;
    }
    Ok(())
}
