//! The sampling filters of kernels/variant_filter_kernel.cc
//! (bytedance/monolith, monolith/native_training/data/): `special_strategy`
//! (`SpecialStrategyOp`, lines 249-382) and `negative_sample`
//! (`NegativeSampleOp`, lines 384-493).
//!
//! The kernels draw from an engine that lives across rows (one unseeded,
//! one seeded from the clock), so a run cannot be repeated and the draw of
//! a row depends on the rows before it. Here a row's draw is a hash of the
//! row under the transform's `seed`: its sample bytes (an Example's, or its
//! row in a batch), its LineId and labels. A run is reproducible, any
//! thread can draw any row, and the rate kept is the kernel's.

use xxhash_rust::xxh64::Xxh64;

use super::row::Split;
use super::rowwise::RowEdit;
use crate::config::offline::{NegativeSample, SpecialStrategy};
use crate::extract::{Rows, Sample};
use crate::view::{FieldType, LineIdView, Value};
use crate::wire::DecodeError;

/// LineId.actions and LineId.special_strategies.
const ACTIONS: u32 = 6;
const SPECIAL_STRATEGIES: u32 = 39;

/// special_strategy: a row without special strategies is kept by
/// keep_empty_strategy (lines 331-338); else the first of strategy_list the
/// row has decides (lines 340-369): with a configured rate the row is kept
/// when its draw is at most the rate (always at rate 1), and a kept row
/// takes the strategy's label as its first label; without one it is kept.
/// A row with strategies, none of them listed, is dropped: the kernel's
/// function ends there without a return value.
pub(super) fn special_strategy<'r>(
    t: &SpecialStrategy,
    stage: u64,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    let strategies = int_values(line_id.as_ref(), SPECIAL_STRATEGIES)?;
    if strategies.is_empty() {
        return Ok(RowEdit::keep_if(t.keep_empty_strategy));
    }
    let Some(&strategy) = t.strategy_list.iter().find(|s| strategies.contains(&i64::from(**s))) else {
        return Ok(RowEdit::keep_if(false));
    };
    // The kernel's map keeps the first rate given for a strategy.
    let Some(rate) = t.rates.iter().find(|r| r.strategy == strategy) else { return Ok(RowEdit::keep()) };
    let mut labels = split.labels(rows, row)?;
    let keep = rate.sample_rate == 1.0
        || unit(draw(t.seed, stage, split, rows, row, line_id.as_ref(), &labels)) <= rate.sample_rate;
    let mut edit = RowEdit::keep_if(keep);
    if let (true, Some(label)) = (keep, rate.label) {
        // The kernel writes label(0); a row without labels gets one.
        match labels.first_mut() {
            Some(first) => *first = label,
            None => labels.push(label),
        }
        edit.labels = Some(labels);
    }
    Ok(edit)
}

/// negative_sample: a row whose label at label_index is below threshold is
/// dropped when its draw, in steps of 1/1000 (`gen() % 1000 / 1000.0`, line
/// 428), is below the drop rate (lines 422-432): per action, the rate of
/// the row's most prior action when it is listed (`GetNegDropRate`, lines
/// 483-492), else drop_rate. A row without that label is kept (the kernel
/// reads past the labels).
pub(super) fn negative_sample<'r>(
    t: &NegativeSample,
    stage: u64,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let labels = split.labels(rows, row)?;
    let Some(&label) = labels.get(t.label_index) else { return Ok(RowEdit::keep()) };
    if label >= t.threshold || label.is_nan() {
        return Ok(RowEdit::keep());
    }
    let line_id = split.line_id(rows, row)?;
    let mut rate = t.drop_rate;
    if !t.per_action_drop_rate.is_empty() {
        let actions = int_values(line_id.as_ref(), ACTIONS)?;
        let prior = most_prior(&actions, &t.priorities);
        if prior > 0
            && let Some(&(_, r)) = t.per_action_drop_rate.iter().find(|(a, _)| i64::from(*a) == prior)
        {
            rate = r;
        }
    }
    let random = (draw(t.seed, stage, split, rows, row, line_id.as_ref(), &labels) % 1000) as f32 / 1000.0;
    Ok(RowEdit::keep_if(random >= rate))
}

/// `FindMostPriorAction` (lines 468-481): the action listed first in
/// `priorities`, or -1 when none is listed.
fn most_prior(actions: &[i64], priorities: &[i32]) -> i64 {
    let rank = |a: i64| priorities.iter().position(|p| i64::from(*p) == a);
    let mut best: Option<(usize, i64)> = None;
    for &a in actions {
        if let Some(r) = rank(a)
            && best.is_none_or(|(b, _)| r < b)
        {
            best = Some((r, a));
        }
    }
    best.map_or(-1, |(_, a)| a)
}

/// The values of a repeated integer LineId field.
pub(super) fn int_values(line_id: Option<&LineIdView<'_>>, number: u32) -> Result<Vec<i64>, DecodeError> {
    let mut out = Vec::new();
    if let Some(l) = line_id {
        l.values(number, FieldType::Int32, |v| {
            if let Value::Int(x) = v {
                out.push(x);
            }
        })?;
    }
    Ok(out)
}

/// The row's draw: a hash of what makes it this row, under `seed`: the
/// transform's place (two sampling transforms draw independently), the
/// row's place among copies of itself (copies draw apart; not its place in
/// the chunk, which options change), its
/// sample (an Example's bytes; a batch's digest and the row in it), LineId,
/// labels and replaced features. The same input and options give the same
/// draws on any thread.
fn draw<'r>(
    seed: u64,
    stage: u64,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
    line_id: Option<&LineIdView<'_>>,
    labels: &[f32],
) -> u64 {
    let mut h = Xxh64::new(seed);
    h.update(&stage.to_le_bytes());
    h.update(&split.occurrence(rows, row).to_le_bytes());
    match rows.sample(row) {
        Sample::Example(bytes) => h.update(bytes),
        Sample::BatchRow { batch, row } => {
            h.update(&split.digest(batch).to_le_bytes());
            h.update(&(row as u64).to_le_bytes());
        }
    }
    if let Some(l) = line_id {
        h.update(l.bytes());
    }
    for l in labels {
        h.update(&l.to_le_bytes());
    }
    if let Some(features) = rows.features_override(row) {
        h.update(features);
    }
    h.digest()
}

/// A draw as a float uniform in [0, 1), as the kernel's
/// `uniform_real_distribution<float>` gives.
fn unit(draw: u64) -> f32 {
    (draw >> 40) as f32 / (1u64 << 24) as f32
}
