//! `*_lists` features → ragged positions: up to `max_len` inner lists per row,
//! each cut or zero-padded to `width` values, so values are `[positions, width]`.

use super::{Ctx, ExtractError};
use crate::columns::{Column, Values, elem_size};
use crate::error::ErrorKind;
use crate::fid::v1_to_v2;
use crate::proto::fex_v1::DataType;
use crate::view::{FeatureKind, le_f32, le_f64, le_u64};
use crate::wire::{DecodeError, for_each_fixed32, for_each_fixed64, for_each_varint};

/// A row's Feature bytes (buffer, start, end), the values it wrote and how
/// many positions.
type Written = ((u32, u32, u32), std::ops::Range<usize>, usize);

/// The source index, dtype, `max_len` and `width` of a sequence output.
pub(super) type SequenceSpec = (usize, DataType, usize, usize);

pub(super) fn write(cx: &Ctx<'_, '_>, spec: SequenceSpec, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let (source, dtype, max_len, width) = spec;
    let r = c.ragged_mut();
    r.width = Some(width);
    r.splits.push(0)?;
    let limit = cx.limits().max_output_bytes;
    let mut positions = 0;
    // The bytes the row before read, and what it wrote: rows that share a
    // Feature (a SHARED list in rows indexed one per sample) copy the
    // output instead of decoding it again.
    let mut last: Option<Written> = None;
    for row in 0..rows {
        if let (Some(cell), Some((bytes, range, taken))) = (cx.cell(source, row), &last)
            && (cell.buf, cell.start, cell.end) == *bytes
        {
            // The size decoding would report: at the first position over.
            let at = |k: usize| (r.values.len() + k * width) * elem_size(dtype);
            if let Some(found) = (1..=*taken).map(at).find(|&found| found > limit) {
                return Err(ErrorKind::TooLarge { found, limit }.into());
            }
            r.values.repeat_range(range.clone());
            positions += taken;
            r.splits.push(positions)?;
            continue;
        }
        last = None;
        if let Some((f, cell)) = cx.feature(source, row)? {
            let Some(kind) = f.kind() else {
                r.splits.push(positions)?;
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
            let values = &mut r.values;
            f.inner_lists(|list, at| {
                if taken < max_len && over.is_none() {
                    let found = (values.len() + width) * elem_size(dtype);
                    if found > limit {
                        over = Some(found);
                        return Ok(());
                    }
                    position(values, kind, width, list, at)?;
                    taken += 1;
                }
                Ok(())
            })
            .map_err(|e| cx.locate(e, source, row, cell))?;
            if let Some(found) = over {
                return Err(ErrorKind::TooLarge { found, limit }.into());
            }
            positions += taken;
            let written = r.values.len() - taken * width..r.values.len();
            last = Some(((cell.buf, cell.start, cell.end), written, taken));
        }
        r.splits.push(positions)?;
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
fn position(buf: &mut Values, kind: FeatureKind, width: usize, list: &[u8], at: usize) -> Result<(), DecodeError> {
    let mut n = 0;
    match kind {
        FeatureKind::FidV2Lists | FeatureKind::FidV1Lists => for_each_fixed64(list, at, |run| {
            for c in run.chunks_exact(8).take(width - n) {
                let fid = le_u64(c);
                let fid = if kind == FeatureKind::FidV1Lists { v1_to_v2(fid) } else { fid };
                buf.push_u64(fid);
                n += 1;
            }
        })?,
        FeatureKind::Int64Lists => for_each_varint(list, at, |v| {
            if n < width {
                buf.push_i64(v as i64);
                n += 1;
            }
        })?,
        FeatureKind::FloatLists => for_each_fixed32(list, at, |run| {
            for c in run.chunks_exact(4).take(width - n) {
                buf.push_f64(f64::from(le_f32(c)));
                n += 1;
            }
        })?,
        _ => for_each_fixed64(list, at, |run| {
            for c in run.chunks_exact(8).take(width - n) {
                buf.push_f64(le_f64(c));
                n += 1;
            }
        })?,
    }
    buf.fill(0.0, width - n);
    Ok(())
}
