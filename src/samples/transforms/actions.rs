//! The transforms driven by LineId actions (bytedance/monolith,
//! monolith/native_training/data/kernels/): `add_action`
//! (add_action_kernel.cc) appends an action when a LineId field passes a
//! comparison; `instance_reweight` (instance_reweight_dataset_kernel.cc)
//! repeats a row by the weights of its actions and relabels it.

use super::filters::keep_by_value;
use super::row::Split;
use super::rowwise::RowEdit;
use super::sampling::int_values;
use crate::config::offline::{AddAction, InstanceReweight};
use crate::extract::Rows;
use crate::wire::DecodeError;

const ACTIONS: u32 = 6;
const PRE_ACTIONS: u32 = 23;

/// add_action (lines 94-169): the field's value (its default when absent)
/// is compared as filter_by_value compares it; when it passes, the action
/// is appended to LineId.actions.
pub(super) fn add_action<'r>(
    t: &AddAction,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    if !keep_by_value(&t.condition, split, rows, row)? {
        return Ok(RowEdit::keep());
    }
    let mut line_id = split.line_id(rows, row)?.map_or_else(Vec::new, |l| l.bytes().to_vec());
    // A field appended to a message adds to a repeated field.
    prost::encoding::encode_key(ACTIONS, prost::encoding::WireType::Varint, &mut line_id);
    prost::encoding::encode_varint(i64::from(t.action) as u64, &mut line_id);
    Ok(RowEdit { line_id: Some(line_id), ..RowEdit::keep() })
}

/// `find_most_prior_action`'s "no action" and "no listed action" (lines
/// 36-37, 155-169).
const NONEXIST_PRIORITY: i64 = 2000;
const UNKNOWN_PRIORITY: i64 = 1000;

/// instance_reweight (`CalReplicas`, lines 152-263): a row without labels
/// is dropped (lines 112-117); otherwise it is written as many times as
/// its actions say, and its first label may be replaced by the label of
/// its most prior action or negated.
pub(super) fn instance_reweight<'r>(
    t: &InstanceReweight,
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<RowEdit, DecodeError> {
    let mut labels = split.labels(rows, row)?;
    let Some(label) = labels.first_mut() else { return Ok(RowEdit::keep_if(false)) };
    let line_id = split.line_id(rows, row)?;
    let actions = int_values(line_id.as_ref(), ACTIONS)?;
    let pre_actions = int_values(line_id.as_ref(), PRE_ACTIONS)?;
    let copies = Reweight { t }.replicas(&pre_actions, &actions, label);
    Ok(RowEdit { copies, labels: Some(labels), ..RowEdit::default() })
}

struct Reweight<'t> {
    t: &'t InstanceReweight,
}

impl Reweight<'_> {
    /// Priorities count from 1, and an action listed twice takes its last
    /// place (`action_priority_[value] = idx++`, lines 79-82).
    fn priority(&self, action: i64) -> Option<i64> {
        self.t.action_priority.iter().rposition(|a| i64::from(*a) == action).map(|p| p as i64 + 1)
    }

    /// The kernel's maps keep the last entry for an action (lines 75-78).
    fn rule(&self, action: i64) -> Option<(u32, i32)> {
        self.t.reweight.iter().rev().find(|(a, _, _)| i64::from(*a) == action).map(|&(_, w, l)| (w, l))
    }

    /// `find_most_prior_action` (lines 155-169): (priority, action).
    fn most_prior(&self, actions: &[i64]) -> (i64, Option<i64>) {
        if actions.is_empty() {
            return (NONEXIST_PRIORITY, None);
        }
        let mut best = (UNKNOWN_PRIORITY, None);
        for &a in actions {
            if let Some(p) = self.priority(a)
                && p < best.0
            {
                best = (p, Some(a));
            }
        }
        best
    }

    /// `get_label` (lines 180-191): the relabel of the most prior action.
    fn label(&self, actions: &[i64]) -> Option<i32> {
        let (_, action) = self.most_prior(actions);
        self.rule(action?).map(|(_, l)| l)
    }

    /// `get_cnt` (lines 204-223): 1 for a row with actions, times the weight
    /// of each action that is the most prior one or not listed.
    fn count(&self, actions: &[i64]) -> i64 {
        let mut n = i64::from(!actions.is_empty());
        let chosen = self.most_prior(actions).1.unwrap_or(0);
        for &a in actions {
            if self.priority(a).is_some() && a != chosen {
                continue;
            }
            if let Some((w, _)) = self.rule(a) {
                n = n.saturating_mul(i64::from(w));
            }
        }
        n
    }

    /// Lines 228-262.
    fn replicas(&self, pre_actions: &[i64], actions: &[i64], label: &mut f32) -> usize {
        let (pre, cur) = (self.most_prior(pre_actions).0, self.most_prior(actions).0);
        let n = if pre > cur {
            // `get_cur_label` runs first and always succeeds: the current
            // relabel, if any, replaces the label, which is then read as an
            // integer.
            if let Some(l) = self.label(actions) {
                *label = l as f32;
            }
            let cur_label = *label as i64;
            match self.label(pre_actions) {
                Some(pre_label) if i64::from(pre_label) != cur_label => {
                    self.count(pre_actions).saturating_add(self.count(actions))
                }
                Some(_) => {
                    let (pre_cnt, cur_cnt) = (self.count(pre_actions), self.count(actions));
                    if pre_cnt > cur_cnt {
                        *label = -*label;
                        pre_cnt - cur_cnt
                    } else {
                        cur_cnt - pre_cnt
                    }
                }
                None => self.count(actions),
            }
        } else if pre == NONEXIST_PRIORITY && cur == NONEXIST_PRIORITY {
            1
        } else {
            0
        };
        usize::try_from(n).unwrap_or(0)
    }
}
