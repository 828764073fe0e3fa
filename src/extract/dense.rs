//! Dense features → `[rows, dim]`: a prefix of the values, then padding.
//! float_list → f32 is a straight copy of the wire bytes; other pairs convert.
//! Monolith quirks (compat: monolith): an empty float/double list with dim 1
//! gives FLT_MIN, scalar and `*_lists` variants give zeros, padding is 0.

use super::write::{fill, push_f64, push_i64};
use super::{Ctx, ExtractError};
use crate::config::{LineIdField, Output, Source};
use crate::proto::fex_v1::{DataType, Tensor};
use crate::view::{FeatureKind, FeatureView, le_f32, le_f64};
use crate::wire::DecodeError;

/// dtype, dim, default, and the `__meta__` LineId fallback.
pub(super) type DenseSpec = (DataType, usize, f64, Option<LineIdField>);

pub(super) fn write(
    cx: &Ctx<'_, '_>,
    out: &Output,
    t: &mut Tensor,
    rows: usize,
    spec: DenseSpec,
) -> Result<(), ExtractError> {
    let Source::Feature(source) = out.source else { unreachable!("dense outputs read features") };
    let (dtype, dim, default, meta) = spec;
    let pad = if cx.is_monolith() { 0.0 } else { default };
    t.values.reserve(rows * dim * super::write::elem_size(dtype));
    for row in 0..rows {
        let written = match cx.feature(source, row)? {
            Some((f, cell)) => {
                let n = row_values(cx, &mut t.values, &f, dtype, dim).map_err(|e| match e {
                    RowError::Decode(e) => cx.locate(e, source, row, cell),
                    RowError::Mismatch(expected) => cx.mismatch(source, row, cell, f.kind(), expected),
                    RowError::Invalid(message) => cx.invalid(source, row, cell, message),
                })?;
                if n == 0 && dim == 1 && cx.is_monolith() && is_float_list(f.kind()) {
                    // Monolith writes FLT_MIN for a present but empty list.
                    push_f64(&mut t.values, dtype, f64::from(f32::MIN_POSITIVE));
                    1
                } else {
                    n
                }
            }
            None => match meta {
                Some(field) => super::line_id::meta_row(cx, &mut t.values, row, field, dtype, dim)?,
                None => 0,
            },
        };
        fill(&mut t.values, dtype, pad, dim - written);
    }
    Ok(())
}

fn is_float_list(kind: Option<FeatureKind>) -> bool {
    matches!(kind, Some(FeatureKind::FloatList | FeatureKind::DoubleList))
}

enum RowError {
    Decode(DecodeError),
    Mismatch(&'static str),
    Invalid(&'static str),
}

impl From<DecodeError> for RowError {
    fn from(e: DecodeError) -> Self {
        Self::Decode(e)
    }
}

/// Writes up to `dim` values of one Feature; returns how many.
fn row_values(
    cx: &Ctx<'_, '_>,
    buf: &mut Vec<u8>,
    f: &FeatureView<'_>,
    dtype: DataType,
    dim: usize,
) -> Result<usize, RowError> {
    use FeatureKind::*;
    let mut n = 0;
    let expected = expected(dtype);
    match (f.kind(), dtype) {
        (None, _) => {}
        (Some(FloatList), DataType::F32) => f.float_runs(|run| {
            let take = (run.len() / 4).min(dim - n);
            buf.extend_from_slice(&run[..take * 4]);
            n += take;
        })?,
        (Some(DoubleList), DataType::F64) => f.double_runs(|run| {
            let take = (run.len() / 8).min(dim - n);
            buf.extend_from_slice(&run[..take * 8]);
            n += take;
        })?,
        (Some(FloatList), DataType::F64) => f.float_runs(|run| {
            for c in run.chunks_exact(4).take(dim - n) {
                push_f64(buf, dtype, f64::from(le_f32(c)));
                n += 1;
            }
        })?,
        (Some(DoubleList), DataType::F32) => f.double_runs(|run| {
            for c in run.chunks_exact(8).take(dim - n) {
                push_f64(buf, dtype, le_f64(c));
                n += 1;
            }
        })?,
        (Some(Int64List), DataType::I64) => {
            f.int64_values(|v| {
                if n < dim {
                    push_i64(buf, dtype, v);
                    n += 1;
                }
            })?;
            if n == 0 && dim == 1 && cx.is_monolith() {
                return Err(RowError::Invalid("empty int64_list for a dim-1 feature (Monolith aborts)"));
            }
        }
        // Monolith ignores scalar and list-of-list variants: the row stays 0.
        (Some(Int64Value | FloatValue | DoubleValue), _)
        | (Some(FidV2Lists | FloatLists | DoubleLists | Int64Lists | BytesLists | FidV1Lists), _)
            if cx.is_monolith() => {}
        (Some(FloatValue), DataType::F32 | DataType::F64) => {
            push_f64(buf, dtype, f64::from(f.float_value()));
            n = 1;
        }
        (Some(DoubleValue), DataType::F32 | DataType::F64) => {
            push_f64(buf, dtype, f.double_value());
            n = 1;
        }
        (Some(Int64Value), DataType::I64) => {
            push_i64(buf, dtype, f.int64_value());
            n = 1;
        }
        _ => return Err(RowError::Mismatch(expected)),
    }
    Ok(n)
}

fn expected(dtype: DataType) -> &'static str {
    match dtype {
        DataType::I64 => "int64_list or int64_value for an i64 output",
        _ => "float_list, double_list, float_value or double_value for a float output",
    }
}
