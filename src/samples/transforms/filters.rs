//! The row filters: `filter_by_fids` (Monolith `IsInstanceOfInterest`,
//! training_instance/cc/instance_utils.h), `filter_by_value`
//! (`LineIdValueFilter`, kernels/internal/value_filter_by_line_id.cc) and
//! `filter_by_label` (kernels/filter_by_label_kernel.cc). Each is a
//! predicate over one row read in place.

use std::collections::BTreeSet;

use super::row::Split;
use crate::config::offline::{FilterByFids, FilterByLabel, FilterByValue, Operand, ValueOp};
use crate::extract::Rows;
use crate::fid::{v1_slot, v2_slot};
use crate::view::{FeatureKind, FieldType, LineIdView, Value, ValueClass};
use crate::wire::DecodeError;

/// LineId.req_time and LineId.actions.
const REQ_TIME: u32 = 3;
const ACTIONS: u32 = 6;

/// The actions of a LineId, as a set.
/// The LineId's actions, in wire order (callers ask only whether one is there).
pub(super) fn actions(line_id: Option<&LineIdView<'_>>) -> Result<Vec<i64>, DecodeError> {
    let mut out = Vec::new();
    if let Some(l) = line_id {
        l.values(ACTIONS, FieldType::Int32, |v| {
            if let Value::Int(a) = v {
                out.push(a);
            }
        })?;
    }
    Ok(out)
}

pub(super) fn keep_by_fids<'r>(
    t: &FilterByFids,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<bool, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let req_time = match line_id.as_ref().map(|l| l.last(REQ_TIME, FieldType::Int64)).transpose()?.flatten() {
        Some(Value::Int(t)) => t,
        _ => 0,
    };
    if req_time < t.req_time_min {
        return Ok(false);
    }
    // Every fid of the row's fid_v1_list and fid_v2_list features, and
    // their slots (v1 or v2 by the list's variant).
    let (mut fids, mut slots) = (BTreeSet::new(), BTreeSet::new());
    let mut failed = Ok(());
    split.features(rows, row, |_, f| {
        let slot = match f.kind() {
            Some(FeatureKind::FidV1List) => v1_slot,
            Some(FeatureKind::FidV2List) => v2_slot,
            _ => return,
        };
        match f.fids() {
            Ok(list) => list.into_iter().for_each(|fid| {
                fids.insert(fid);
                slots.insert(slot(fid) as u32);
            }),
            Err(e) => failed = Err(e),
        }
    })?;
    failed?;
    if t.filter_fids.iter().any(|f| fids.contains(f)) {
        return Ok(false);
    }
    if !t.has_fids.is_empty() && !t.has_fids.iter().any(|f| fids.contains(f)) {
        return Ok(false);
    }
    if !t.select_fids.iter().all(|f| fids.contains(f)) {
        return Ok(false);
    }
    if !t.select_slots.iter().all(|s| slots.contains(s)) {
        return Ok(false);
    }
    if !t.has_actions.is_empty() {
        let actions = actions(line_id.as_ref())?;
        if !t.has_actions.iter().any(|a| actions.contains(&i64::from(*a))) {
            return Ok(false);
        }
    }
    Ok(true)
}

pub(super) fn keep_by_label<'r>(
    t: &FilterByLabel,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<bool, DecodeError> {
    split.with_labels(rows, row, |labels| {
        // The kernel logs "Label size should be >= label_threshold size" and
        // drops a row with fewer labels.
        labels.len() >= t.label_threshold.len()
            && t.label_threshold.iter().zip(labels).any(|(&th, &l)| l > th || (l == th && !t.filter_equal))
    })
}

pub(super) fn keep_by_value<'r>(
    t: &FilterByValue,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<bool, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let field = t.field;
    if field.repeated {
        let mut values = BTreeSet::new();
        if let Some(l) = &line_id {
            l.values(field.number, field.ty, |v| {
                if let Value::Int(x) = v {
                    values.insert(x);
                }
            })?;
        }
        if values.is_empty() {
            return Ok(t.keep_empty);
        }
        let Operand::Int(ops) = &t.operand else { return Ok(false) };
        return Ok(set_op(t.op, &values, ops));
    }
    // A singular field reads as its proto2 default when absent.
    let value = line_id.as_ref().map(|l| l.last(field.number, field.ty)).transpose()?.flatten();
    Ok(match (&t.operand, field.ty.class()) {
        (Operand::Int(ops), ValueClass::Integer) => {
            let v = match value {
                Some(Value::Int(v)) => v,
                _ => field.default as i64,
            };
            if matches!(field.ty, FieldType::Uint64 | FieldType::Fixed64) {
                // The kernel compares uint64 fields with the operands as uint64.
                let ops: Vec<u64> = ops.iter().map(|&o| o as u64).collect();
                scalar_op(t.op, &(v as u64), &ops)
            } else {
                scalar_op(t.op, &v, ops)
            }
        }
        (Operand::Float(ops), ValueClass::Float) => {
            let v = match value {
                Some(Value::Float(v)) => v,
                _ => field.default,
            };
            match t.op {
                // Membership looks the value up among f32 operands.
                ValueOp::In | ValueOp::NotIn => scalar_op(t.op, &(v as f32), ops),
                _ => scalar_op(t.op, &v, &ops.iter().map(|&o| f64::from(o)).collect::<Vec<_>>()),
            }
        }
        (Operand::Bytes(ops), ValueClass::Bytes) => {
            let v: &[u8] = match value {
                Some(Value::Bytes(b)) => b,
                _ => &[],
            };
            match t.op {
                ValueOp::StartsWith => ops.iter().any(|o| v.starts_with(o)),
                ValueOp::EndsWith => ops.iter().any(|o| v.ends_with(o)),
                _ => scalar_op(t.op, &v, &ops.iter().map(Vec::as_slice).collect::<Vec<_>>()),
            }
        }
        _ => false,
    })
}

/// relational_utils.h `compare` and `contains`: `between` is `[lo, hi)`.
pub(super) fn scalar_op<T: PartialOrd>(op: ValueOp, v: &T, ops: &[T]) -> bool {
    let first = &ops[0];
    match op {
        ValueOp::Gt => v > first,
        ValueOp::Ge => v >= first,
        ValueOp::Eq => v == first,
        ValueOp::Lt => v < first,
        ValueOp::Le => v <= first,
        ValueOp::Neq => v != first,
        ValueOp::Between => v >= first && ops.get(1).is_some_and(|hi| v < hi),
        ValueOp::In => ops.contains(v),
        ValueOp::NotIn => !ops.contains(v),
        _ => false,
    }
}

/// `LineIdValueFilter::cmp`: the intersection of the field's values with the
/// operands. (The kernel intersects the vectors as given, which is set
/// intersection when both are sorted; this is set intersection always.)
pub(super) fn set_op(op: ValueOp, values: &BTreeSet<i64>, ops: &[i64]) -> bool {
    let distinct: BTreeSet<i64> = ops.iter().copied().collect();
    let common = distinct.iter().filter(|o| values.contains(o)).count();
    match op {
        ValueOp::Any => common > 0,
        // Repeated operands can never all match, as in the kernel.
        ValueOp::All => common == ops.len(),
        ValueOp::Diff => common == 0,
        _ => false,
    }
}
