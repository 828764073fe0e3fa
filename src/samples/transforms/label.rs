//! `add_label` (kernels/add_label_kernel.cc): one label per task appended
//! to the row's labels from its LineId actions, and LineId.sample_rate set;
//! and the LineId edits it and negative generation make.

use bytes::Bytes;

use super::filters::actions;
use super::row::Split;
use crate::config::offline::AddLabel;
use crate::extract::Rows;
use crate::wire::{DecodeError, Reader};

/// Monolith's INVALID_LABEL (label_utils.h: the lowest float).
pub const INVALID_LABEL: f32 = f32::MIN;
const POSITIVE_LABEL: f32 = 1.0;

/// The new labels of `row` and its LineId with the new sample rate.
pub(super) fn add_label<'r>(
    t: &AddLabel,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<(Vec<f32>, Vec<u8>), DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let actions = actions(line_id.as_ref())?;
    let line_id_bytes = line_id.map_or(&[][..], |l| l.bytes());
    let mut labels = split.labels(rows, row)?;
    // The kernel marks a non-positive first label invalid before appending.
    if labels.first().is_some_and(|&l| l <= 0.0) {
        labels[0] = INVALID_LABEL;
    }
    for (i, task) in t.tasks.iter().enumerate() {
        let has = |set: &[i32]| set.iter().any(|a| actions.contains(&i64::from(*a)));
        let (pos, neg) = (has(&task.pos_actions), has(&task.neg_actions));
        let label = if pos {
            POSITIVE_LABEL
        } else if !task.neg_actions.is_empty() && !neg {
            INVALID_LABEL
        } else if sampled(task.sample_rate, line_id_bytes, i) {
            t.negative_value
        } else {
            INVALID_LABEL
        };
        labels.push(label);
    }
    let mut new_line_id = rewrite(line_id_bytes, &[SAMPLE_RATE])?;
    new_line_id.push((SAMPLE_RATE << 3 | 5) as u8 | 0x80);
    new_line_id.push(((SAMPLE_RATE << 3 | 5) >> 7) as u8);
    new_line_id.extend_from_slice(&t.new_sample_rate.to_le_bytes());
    Ok((labels, new_line_id))
}

const SAMPLE_RATE: u32 = 27;

/// `SelectedByNegativeSampling`: a rate of 1 keeps every negative; below
/// it, a draw from the row's LineId and the task's index decides (the kernel
/// draws from a clock-seeded engine; a hash makes runs reproducible and is
/// the draw the online `action_label` kind makes, so both keep the same
/// negatives).
fn sampled(rate: f32, line_id: &[u8], task: usize) -> bool {
    if (rate - 1.0).abs() <= f32::EPSILON {
        return true;
    }
    let mut h = xxhash_rust::xxh64::Xxh64::new(task as u64);
    h.update(line_id);
    let draw = (h.digest() >> 11) as f64 / (1u64 << 53) as f64;
    draw < f64::from(rate)
}

/// A LineId's fields without those numbered in `drop`, bytes as they came:
/// fields appended after it then set or extend what it holds.
pub(super) fn rewrite(line_id: &[u8], drop: &[u32]) -> Result<Vec<u8>, DecodeError> {
    let mut out = Vec::with_capacity(line_id.len() + 16);
    let mut r = Reader::new(line_id, 0);
    while !r.is_empty() {
        let start = r.offset();
        let (field, wire) = r.key()?;
        r.skip(field, wire)?;
        if !drop.contains(&field) {
            out.extend_from_slice(&line_id[start..r.offset()]);
        }
    }
    Ok(out)
}

/// Owned bytes for `Rows::set_line_id`.
pub(super) fn owned(bytes: Vec<u8>) -> Bytes {
    Bytes::from(bytes)
}
