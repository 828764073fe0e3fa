//! Labels → f32 `[rows, dim]` and instance weights → f32 `[rows]`.
//! ExampleBatch: the `__LABEL__` and `instance_weight` lists. Example: fields
//! 101 and 102, extended by the same-named features as Monolith does.

use super::{Ctx, ExtractError};
use crate::columns::{Column, Values};
use crate::config::Task;
use crate::view::{ExampleView, FeatureKind, FieldType, Value};

/// Monolith's INVALID_LABEL: a missing label of an Example.
const INVALID_LABEL: f32 = f32::MIN;

pub(super) fn write_label(
    cx: &Ctx<'_, '_>,
    c: &mut Column,
    rows: usize,
    dim: usize,
    default: f64,
) -> Result<(), ExtractError> {
    if cx.is_monolith() {
        return super::monolith_label::write_label(cx, c, rows, dim);
    }
    let pad = default;
    let values = &mut c.dense_mut().values;
    for row in 0..rows {
        let mut row_labels = RowLabels { buf: values, dim, n: 0 };
        collect_labels(cx, row, &mut row_labels)?;
        let n = row_labels.n;
        values.fill(pad, dim - n);
    }
    Ok(())
}

/// Writes the first `dim` labels of a row, counting all it was offered.
struct RowLabels<'b> {
    buf: &'b mut Values,
    dim: usize,
    n: usize,
}

impl RowLabels<'_> {
    fn push(&mut self, v: f32) {
        if self.n < self.dim {
            self.buf.push_f64(f64::from(v));
            self.n += 1;
        }
    }

    fn extend(&mut self, run: &[u8]) {
        run.chunks_exact(4).for_each(|c| self.push(crate::view::le_f32(c)));
    }
}

/// The label values of one row, in order: Example field 101, then `__LABEL__`.
fn collect_labels(cx: &Ctx<'_, '_>, row: usize, out: &mut RowLabels<'_>) -> Result<(), ExtractError> {
    if !cx.is_batch() {
        let view = ExampleView::parse(cx.bufs[cx.example_row(row).labels as usize], 0)?;
        view.labels(|v| out.push(v)).map_err(|e| ExtractError::from(e.within("example", Some(row))).at_row(row))?;
    }
    let source = cx.plan.label_source.expect("plans with labels reserve __LABEL__");
    if let Some(run) = float_run(cx, source, row) {
        out.extend(run);
        return Ok(());
    }
    let Some((f, cell)) = cx.feature(source, row)? else { return Ok(()) };
    match f.kind() {
        Some(FeatureKind::FloatList) => {
            f.float_runs(|run| out.extend(run)).map_err(|e| cx.locate(e, source, row, cell))?;
            Ok(())
        }
        None => Ok(()),
        other => Err(cx.mismatch(source, row, cell, other, "float_list")),
    }
}

pub(super) fn write_weight(cx: &Ctx<'_, '_>, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    if cx.is_monolith() {
        return super::monolith_label::write_weight(cx, c, rows);
    }
    let source = cx.plan.weight_source.expect("plans with weights reserve instance_weight");
    let values = &mut c.dense_mut().values;
    for row in 0..rows {
        let w = weight(cx, source, row)?;
        values.push_f64(f64::from(w));
    }
    Ok(())
}

/// The floats of `row`'s Feature when it is one non-empty packed float_list,
/// the layout every encoder writes; `None` sends the row to the general path.
fn float_run<'a>(cx: &Ctx<'_, 'a>, source: usize, row: usize) -> Option<&'a [u8]> {
    let bytes = cx.bytes(cx.cell(source, row)?);
    crate::view::packed_run(bytes, FeatureKind::FloatList).filter(|r| !r.is_empty() && r.len() % 4 == 0)
}

/// The weight of one row: the first positive value found, else 1.
fn weight(cx: &Ctx<'_, '_>, source: usize, row: usize) -> Result<f32, ExtractError> {
    if !cx.is_batch() && cx.example_row(row).weight > 0.0 {
        return Ok(cx.example_row(row).weight);
    }
    if let Some(run) = float_run(cx, source, row) {
        let w = crate::view::le_f32(run);
        return Ok(if w > 0.0 { w } else { 1.0 });
    }
    let Some((f, cell)) = cx.feature(source, row)? else { return Ok(1.0) };
    let mut first = None;
    match f.kind() {
        Some(FeatureKind::FloatList) => f
            .float_runs(|run| {
                if first.is_none() && run.len() >= 4 {
                    first = Some(crate::view::le_f32(run));
                }
            })
            .map_err(|e| cx.locate(e, source, row, cell))?,
        None => {}
        other => return Err(cx.mismatch(source, row, cell, other, "float_list")),
    }
    match first {
        Some(w) if w > 0.0 => Ok(w),
        _ => Ok(1.0),
    }
}

/// Monolith AddLabel: one f32 per task from the row's LineId actions.
pub(super) fn write_action_labels(
    cx: &Ctx<'_, '_>,
    c: &mut Column,
    rows: usize,
    tasks: &[Task],
) -> Result<(), ExtractError> {
    let values = &mut c.dense_mut().values;
    for row in 0..rows {
        let line_id = super::line_id::line_id(cx, row)?;
        let locate = |e: crate::wire::DecodeError| super::line_id::locate(cx, e, row);
        // Actions are matched straight from the wire: no list is built.
        let any_of = |set: &[i64]| -> Result<bool, ExtractError> {
            let mut hit = false;
            if let Some(l) = &line_id {
                l.values(6, FieldType::Int32, |v| hit |= matches!(v, Value::Int(a) if set.contains(&a)))
                    .map_err(locate)?;
            }
            Ok(hit)
        };
        let key = line_id.map_or(&[][..], |l| l.bytes());
        for (i, task) in tasks.iter().enumerate() {
            let (pos, neg) = (any_of(&task.pos)?, task.neg.is_empty() || any_of(&task.neg)?);
            values.push_f64(f64::from(task_label(task, pos, neg, key, i)));
        }
    }
    Ok(())
}

/// The label of one task: 1 for a positive action; 0 for a (kept) negative;
/// INVALID_LABEL otherwise. Negatives are kept when a hash of the LineId and
/// the task falls below the sample rate, so online and offline agree.
/// `pos`: an action is positive; `neg`: the row counts as negative (an action
/// is listed negative, or the task lists none).
pub fn task_label(task: &Task, pos: bool, neg: bool, line_id: &[u8], index: usize) -> f32 {
    if pos {
        return 1.0;
    }
    if !neg {
        return INVALID_LABEL;
    }
    if task.sample_rate >= 1.0 {
        return 0.0;
    }
    let mut h = xxhash_rust::xxh64::Xxh64::new(index as u64);
    h.update(line_id);
    let draw = (h.digest() >> 11) as f64 / (1u64 << 53) as f64;
    if draw < task.sample_rate { 0.0 } else { INVALID_LABEL }
}
