//! `*_lists` features → ragged positions: up to `max_len` inner lists per row,
//! each cut or zero-padded to `width` values, so values are `[positions, width]`.

use super::write::{elem_size, push_f64, push_i64, push_split};
use super::{Ctx, ExtractError};
use crate::config::{Op, Output, Source};
use crate::fid::v1_to_v2;
use crate::proto::fex_v1::{DataType, Tensor};
use crate::view::{FeatureKind, le_f32, le_f64, le_u64};
use crate::wire::{DecodeError, for_each_fixed32, for_each_fixed64, for_each_varint};

pub(super) fn write(cx: &Ctx<'_, '_>, out: &Output, t: &mut Tensor, rows: usize) -> Result<(), ExtractError> {
    let Source::Feature(source) = out.source else { unreachable!("sequence outputs read features") };
    let Op::Sequence { dtype, max_len, width, splits } = out.op else { unreachable!() };
    push_split(t, splits, 0)?;
    let limit = cx.plan.limits.max_output_bytes;
    let position_bytes = width * elem_size(dtype);
    let mut positions = 0;
    for row in 0..rows {
        if let Some((f, cell)) = cx.feature(source, row)? {
            let Some(kind) = f.kind() else {
                push_split(t, splits, positions)?;
                continue;
            };
            if !accepts(dtype, kind) {
                return Err(cx.mismatch(source, row, cell, Some(kind), expected(dtype)));
            }
            // A 2-byte empty inner list becomes `width` values, so the output
            // limit is checked per position, before writing: checked only
            // after the tensor, a small request could allocate gigabytes.
            let mut taken = 0;
            let mut over = None;
            f.inner_lists(|list, at| {
                if taken < max_len && over.is_none() {
                    let found = t.values.len() + position_bytes;
                    if found > limit {
                        over = Some(found);
                        return Ok(());
                    }
                    position(&mut t.values, kind, dtype, width, list, at)?;
                    taken += 1;
                }
                Ok(())
            })
            .map_err(|e| cx.locate(e, source, row, cell))?;
            if let Some(found) = over {
                return Err(ExtractError::TooLarge { found, limit });
            }
            positions += taken;
        }
        push_split(t, splits, positions)?;
    }
    Ok(())
}

fn accepts(dtype: DataType, kind: FeatureKind) -> bool {
    use FeatureKind::*;
    match dtype {
        DataType::I64 | DataType::U64 => matches!(kind, FidV1Lists | FidV2Lists | Int64Lists),
        _ => matches!(kind, FloatLists | DoubleLists),
    }
}

fn expected(dtype: DataType) -> &'static str {
    match dtype {
        DataType::I64 | DataType::U64 => "fid_v1_lists, fid_v2_lists or int64_lists",
        _ => "float_lists or double_lists",
    }
}

/// Writes one position: the first `width` values of an inner list, zero-padded.
fn position(
    buf: &mut Vec<u8>,
    kind: FeatureKind,
    dtype: DataType,
    width: usize,
    list: &[u8],
    at: usize,
) -> Result<(), DecodeError> {
    let mut n = 0;
    match kind {
        FeatureKind::FidV2Lists | FeatureKind::FidV1Lists => for_each_fixed64(list, at, |run| {
            for c in run.chunks_exact(8).take(width - n) {
                let fid = le_u64(c);
                let fid = if kind == FeatureKind::FidV1Lists { v1_to_v2(fid) } else { fid };
                buf.extend_from_slice(&fid.to_le_bytes());
                n += 1;
            }
        })?,
        FeatureKind::Int64Lists => for_each_varint(list, at, |v| {
            if n < width {
                push_i64(buf, dtype, v as i64);
                n += 1;
            }
        })?,
        FeatureKind::FloatLists => for_each_fixed32(list, at, |run| {
            for c in run.chunks_exact(4).take(width - n) {
                push_f64(buf, dtype, f64::from(le_f32(c)));
                n += 1;
            }
        })?,
        _ => for_each_fixed64(list, at, |run| {
            for c in run.chunks_exact(8).take(width - n) {
                push_f64(buf, dtype, le_f64(c));
                n += 1;
            }
        })?,
    }
    super::write::fill(buf, dtype, 0.0, width - n);
    Ok(())
}
