//! The transforms that rewrite a row's labels (bytedance/monolith,
//! monolith/native_training/data/kernels/): `scatter_label`
//! (scatter_label_kernel.cc), `label_upper_bound`
//! (label_upper_bound_kernel.cc), `label_normalization`
//! (label_normalization_kernel.cc), `use_field_as_label`
//! (use_field_as_label_kernel.cc, which bytedance/monolith's published tree
//! lacks: cited from the copy in 0x1997/monolith at 292b556) and
//! `multi_label_gen` (multi_label_gen_kernel.cc). Each reads the row's
//! labels and LineId and gives its new labels.

use super::label::INVALID_LABEL;
use super::row::Split;
use super::rowwise::RowEdit;
use super::sampling::int_values;
use crate::config::LineIdField;
use crate::config::offline::{
    LabelNormalization, LabelUpperBound, MultiLabelGen, NormMethod, ScatterLabel, UseFieldAsLabel,
};
use crate::extract::Rows;
use crate::view::{FieldType, LineIdView, Value};
use crate::wire::DecodeError;

const ACTIONS: u32 = 6;
const CHNID: u32 = 19;

/// scatter_label (lines 88-104): the first label (INVALID_LABEL without
/// one) moves to the index of the row's LineId.chnid; every other label is
/// INVALID_LABEL, all of them when the chnid is not configured.
pub(super) fn scatter_label<'r>(
    t: &ScatterLabel,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let value = split.labels(rows, row)?.first().copied().unwrap_or(INVALID_LABEL);
    let line_id = split.line_id(rows, row)?;
    let chnid = int_field(line_id.as_ref(), CHNID, FieldType::Int64)?;
    let mut labels = vec![INVALID_LABEL; t.task_num];
    // The kernel's map keeps the last index given for a chnid (line 58).
    if let Some(&(_, index)) = t.chnid_to_index.iter().rev().find(|(c, _)| *c == chnid) {
        labels[index] = value;
    }
    Ok(RowEdit::labels(labels))
}

/// label_upper_bound (lines 68-81): label i above bound i becomes the
/// bound; a row with fewer labels than bounds is left as it is.
pub(super) fn label_upper_bound<'r>(
    t: &LabelUpperBound,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let mut labels = split.labels(rows, row)?;
    if labels.len() < t.label_upper_bounds.len() {
        return Ok(RowEdit::keep());
    }
    for (l, &bound) in labels.iter_mut().zip(&t.label_upper_bounds) {
        if *l > bound {
            *l = bound;
        }
    }
    Ok(RowEdit::labels(labels))
}

/// label_normalization (lines 73-102): every label through every step, in
/// order. `log` and `pow` compute in double, as the kernel's `log` and
/// `std::pow` do, and store a float.
pub(super) fn label_normalization<'r>(
    t: &LabelNormalization,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let mut labels = split.labels(rows, row)?;
    for l in &mut labels {
        for &(method, value) in &t.steps {
            *l = normalize(*l, method, value);
        }
    }
    Ok(RowEdit::labels(labels))
}

fn normalize(label: f32, method: NormMethod, value: f32) -> f32 {
    match method {
        NormMethod::Log => f64::from(at_least_0(label + value)).ln() as f32,
        NormMethod::Scale => label / value,
        // int32_t(label / value): truncation (Rust saturates where C++ is undefined).
        NormMethod::Scale2Int => (label / value) as i32 as f32,
        // std::pow of two floats is powf.
        NormMethod::Pow => (label + 1.0).powf(value),
        NormMethod::Repow if label > 0.0 => label.powf(value),
        NormMethod::Repow => 0.0,
        NormMethod::ScaleLog => f64::from(at_least_0(label / value + 1.0)).ln() as f32,
    }
}

/// `std::max(x, 0.0f)`: `(x < 0) ? 0 : x`, so NaN stays NaN (Rust's
/// `f32::max` would give 0).
fn at_least_0(x: f32) -> f32 {
    if x < 0.0 { 0.0 } else { x }
}

/// use_field_as_label (lines 78-88): every label becomes the larger of
/// itself and the field's value; with overwrite_invalid_value a value at
/// or above label_threshold counts as 0. `std::max(label, value)` keeps
/// the label unless it is below the value.
pub(super) fn use_field_as_label<'r>(
    t: &UseFieldAsLabel,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let mut value = field_as_float(line_id.as_ref(), t.field)?;
    if t.overwrite_invalid_value && value >= t.label_threshold {
        value = 0.0;
    }
    let mut labels = split.labels(rows, row)?;
    for l in &mut labels {
        if *l < value {
            *l = value;
        }
    }
    Ok(RowEdit::labels(labels))
}

/// multi_label_gen (lines 101-131): the label value is the first label
/// (use_origin_label), or pos_label / neg_label by the row's most prior
/// action, else INVALID_LABEL; the row gets task_num labels, all
/// INVALID_LABEL but the one the head field's value names.
pub(super) fn multi_label_gen<'r>(
    t: &MultiLabelGen,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let value = if t.use_origin_label {
        split.labels(rows, row)?.first().copied().unwrap_or(INVALID_LABEL)
    } else {
        let actions = int_values(line_id.as_ref(), ACTIONS)?;
        match most_prior(&actions, &t.action_priority) {
            Some(a) if t.pos_actions.iter().any(|p| i64::from(*p) == a) => t.pos_label,
            Some(a) if t.neg_actions.iter().any(|n| i64::from(*n) == a) => t.neg_label,
            _ => INVALID_LABEL,
        }
    };
    let head = head_flag(line_id.as_ref(), t.head_field)?;
    let mut labels = vec![INVALID_LABEL; t.task_num];
    // The kernel's map keeps the first index given for a head (line 69).
    if let Some((_, index)) = t.head_to_index.iter().find(|(h, _)| *h == head) {
        labels[*index] = value;
    }
    Ok(RowEdit::labels(labels))
}

/// `FindMostPriorAction` (lines 158-179): the only action, or the one listed
/// first in the priority list, or the first action when none is listed.
fn most_prior(actions: &[i64], priority: &[i32]) -> Option<i64> {
    let first = *actions.first()?;
    let rank = |a: &i64| priority.iter().position(|p| i64::from(*p) == *a);
    let best = actions.iter().filter_map(|a| rank(a).map(|r| (r, *a))).min_by_key(|(r, _)| *r);
    Some(best.map_or(first, |(_, a)| a))
}

/// `GetHeadFlag` (lines 181-205): chnid in decimal, a string field as it is.
fn head_flag(line_id: Option<&LineIdView<'_>>, field: LineIdField) -> Result<Vec<u8>, DecodeError> {
    if field.number == CHNID && field.ty == FieldType::Int64 {
        return Ok(int_field(line_id, CHNID, FieldType::Int64)?.to_string().into_bytes());
    }
    let value = line_id.map(|l| l.last(field.number, field.ty)).transpose()?.flatten();
    Ok(match value {
        Some(Value::Bytes(b)) => b.to_vec(),
        _ => Vec::new(),
    })
}

/// A singular integer field, 0 when absent (its proto2 default).
fn int_field(line_id: Option<&LineIdView<'_>>, number: u32, ty: FieldType) -> Result<i64, DecodeError> {
    Ok(match line_id.map(|l| l.last(number, ty)).transpose()?.flatten() {
        Some(Value::Int(v)) => v,
        _ => 0,
    })
}

/// A singular number field as the float `GetNewLabel` makes of it (lines
/// 92-131); its default when absent.
fn field_as_float(line_id: Option<&LineIdView<'_>>, field: LineIdField) -> Result<f32, DecodeError> {
    let value = line_id.map(|l| l.last(field.number, field.ty)).transpose()?.flatten();
    Ok(match value {
        Some(Value::Int(v)) if matches!(field.ty, FieldType::Uint64 | FieldType::Fixed64) => v as u64 as f32,
        Some(Value::Int(v)) => v as f32,
        Some(Value::Float(v)) => v as f32,
        _ => field.default as f32,
    })
}
