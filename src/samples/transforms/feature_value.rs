//! `filter_by_feature_value` (bytedance/monolith, monolith/native_training/
//! data/kernels/internal/value_filter_by_feature.cc,
//! `FeatureValueFilter::IsInstanceOfInterest`, lines 178-416): a row is
//! kept by the value of one of its named features, compared as
//! filter_by_value compares LineId fields (relational_utils.h).

use std::collections::BTreeSet;

use super::filters::{scalar_op, set_op};
use super::row::Split;
use crate::config::offline::{FeatureValueType, FilterByFeatureValue, Operand, ValueOp};
use crate::extract::Rows;
use crate::view::{FeatureKind, FeatureView, le_f32};
use crate::wire::DecodeError;

/// Whether the row is kept. Without the feature (lines 208-213), or when
/// it holds no value the op can read (another list type, a list of more
/// than one value, an empty list, a scalar `*_value`), the row is kept by
/// keep_empty (lines 410-414). (With keep_empty and no feature the kernel
/// reads feature -1; fex keeps the row, as keep_empty says.)
pub(super) fn keep<'r>(
    t: &FilterByFeatureValue,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<bool, DecodeError> {
    let mut found = None;
    // The kernel takes the last feature of the name (lines 183-188).
    split.features(rows, row, |name, f| {
        if name == t.feature.as_bytes() {
            found = Some(*f);
        }
    })?;
    let Some(feature) = found else { return Ok(t.keep_empty) };
    Ok(decide(t, &feature)?.unwrap_or(t.keep_empty))
}

/// The op on the feature's value (lines 259-409), `None` without one.
fn decide(t: &FilterByFeatureValue, f: &FeatureView<'_>) -> Result<Option<bool>, DecodeError> {
    Ok(match (f.kind(), t.ty, &t.operand) {
        (Some(FeatureKind::FloatList), FeatureValueType::Float, Operand::Float(ops)) => {
            let mut values = Vec::new();
            f.float_runs(|run| values.extend(run.chunks_exact(4).map(le_f32)))?;
            single(&values).map(|v| scalar_op(t.op, &v, ops))
        }
        (Some(FeatureKind::DoubleList), FeatureValueType::Double, Operand::Float(ops)) => {
            let mut values = Vec::new();
            f.double_runs(|run| values.extend(run.chunks_exact(8).map(|c| f64::from_bits(crate::view::le_u64(c)))))?;
            single(&values).map(|v| double_op(t.op, v, ops))
        }
        (Some(FeatureKind::Int64List), FeatureValueType::Int64, Operand::Int(ops)) => {
            let mut values = Vec::new();
            f.int64_values(|v| values.push(v))?;
            if t.op.is_set() {
                // Set ops read the whole list (lines 312-315, 410-411).
                let values: BTreeSet<i64> = values.into_iter().collect();
                (!values.is_empty()).then(|| set_op(t.op, &values, ops))
            } else {
                single(&values).map(|v| scalar_op(t.op, &v, ops))
            }
        }
        (Some(FeatureKind::BytesList), FeatureValueType::Bytes, Operand::Bytes(ops)) => {
            let mut values = Vec::new();
            f.bytes_values(|v| values.push(v))?;
            single(&values).map(|v| bytes_op(t.op, v, ops))
        }
        _ => None,
    })
}

/// The value of a list of exactly one (lines 268, 290, 317, 340).
fn single<T: Copy>(values: &[T]) -> Option<T> {
    match values {
        [v] => Some(*v),
        _ => None,
    }
}

/// A double compared with the float operands widened; membership looks the
/// value up as a float (`contains` on a float set, lines 291-294).
fn double_op(op: ValueOp, v: f64, ops: &[f32]) -> bool {
    match op {
        ValueOp::In | ValueOp::NotIn => scalar_op(op, &(v as f32), ops),
        _ => scalar_op(op, &v, &ops.iter().map(|&o| f64::from(o)).collect::<Vec<_>>()),
    }
}

/// startswith / endswith take any operand (lines 343-360); the others
/// compare bytes.
fn bytes_op(op: ValueOp, v: &[u8], ops: &[Vec<u8>]) -> bool {
    match op {
        ValueOp::StartsWith => ops.iter().any(|o| v.starts_with(o)),
        ValueOp::EndsWith => ops.iter().any(|o| v.ends_with(o)),
        _ => scalar_op(op, &v, &ops.iter().map(Vec::as_slice).collect::<Vec<_>>()),
    }
}
