//! The transforms that look at one row at a time and nothing else: each is
//! a function of the row, read as its Example (`row::Split`), that gives a
//! [`RowEdit`] (keep, drop or repeat it; new labels, LineId or features).
//! `RowTransform::apply` computes every row's edit, then makes them, so a
//! row's edit never depends on another row's: the rows of an input can be
//! split among threads. Random draws are a hash of the row (`sampling`),
//! not a stream, for the same reason.

use bytes::Bytes;

use super::row::Split;
use super::{actions, feature_value, relabel, sampling, switch_slot};
use crate::config::Plan;
use crate::config::offline::SampleTransform;
use crate::extract::Rows;
use crate::wire::DecodeError;

/// An Example of named features a row now owns, and the (source, start,
/// end) of each Feature in it the plan reads (`Rows::set_features`).
pub(super) type OwnedFeatures = (Bytes, Vec<(usize, u32, u32)>);

/// What a transform does to one row.
#[derive(Debug, Default)]
pub(super) struct RowEdit {
    /// How many times the row is written: 0 drops it, 1 keeps it, more
    /// repeats it (instance_reweight).
    pub copies: usize,
    pub labels: Option<Vec<f32>>,
    /// A serialized LineId that replaces the row's.
    pub line_id: Option<Vec<u8>>,
    /// An Example of named features that replace the row's, and the byte
    /// range of each source's Feature in it (`Rows::set_features`).
    pub features: Option<OwnedFeatures>,
}

impl RowEdit {
    pub fn keep() -> Self {
        Self::keep_if(true)
    }

    pub fn keep_if(keep: bool) -> Self {
        Self { copies: usize::from(keep), ..Self::default() }
    }

    pub fn labels(labels: Vec<f32>) -> Self {
        Self { labels: Some(labels), ..Self::keep() }
    }
}

/// A per-row transform, with what it needs from the plan.
pub(super) struct RowTransform {
    t: SampleTransform,
    /// Its place in `offline.transforms`, mixed into its draws so two
    /// sampling transforms draw independently.
    stage: u64,
    /// switch_slot_batch: each feature's source and its suffixed copy's.
    slot_sources: Vec<(Option<usize>, Option<usize>)>,
}

impl RowTransform {
    /// True for the transforms this module runs.
    pub fn handles(t: &SampleTransform) -> bool {
        use SampleTransform::*;
        matches!(
            t,
            SpecialStrategy(_)
                | NegativeSample(_)
                | FilterByFeatureValue(_)
                | ScatterLabel(_)
                | LabelUpperBound(_)
                | LabelNormalization(_)
                | UseFieldAsLabel(_)
                | AddAction(_)
                | MultiLabelGen(_)
                | InstanceReweight(_)
                | SwitchSlotBatch(_)
        )
    }

    pub fn new(plan: &Plan, t: &SampleTransform, stage: usize) -> Self {
        let slot_sources = match t {
            SampleTransform::SwitchSlotBatch(s) => switch_slot::sources(plan, s),
            _ => Vec::new(),
        };
        Self { t: t.clone(), stage: stage as u64, slot_sources }
    }

    /// Edits every row of `rows`; returns the rows (dropped, added).
    pub fn apply(&self, rows: &mut Rows<'_>) -> Result<(u64, u64), (usize, DecodeError)> {
        let mut edits = Vec::with_capacity(rows.len());
        {
            let mut split = Split::default();
            for r in 0..rows.len() {
                edits.push(self.edit(&mut split, rows, r).map_err(|e| (r, e))?);
            }
        }
        Ok(commit(rows, edits))
    }

    fn edit<'r>(&self, split: &mut Split<'r>, rows: &'r Rows<'_>, row: usize) -> Result<RowEdit, DecodeError> {
        use SampleTransform::*;
        match &self.t {
            SpecialStrategy(t) => sampling::special_strategy(t, self.stage, split, rows, row),
            NegativeSample(t) => sampling::negative_sample(t, self.stage, split, rows, row),
            FilterByFeatureValue(t) => feature_value::keep(t, split, rows, row).map(RowEdit::keep_if),
            ScatterLabel(t) => relabel::scatter_label(t, split, rows, row),
            LabelUpperBound(t) => relabel::label_upper_bound(t, split, rows, row),
            LabelNormalization(t) => relabel::label_normalization(t, split, rows, row),
            UseFieldAsLabel(t) => relabel::use_field_as_label(t, split, rows, row),
            MultiLabelGen(t) => relabel::multi_label_gen(t, split, rows, row),
            AddAction(t) => actions::add_action(t, split, rows, row),
            InstanceReweight(t) => actions::instance_reweight(t, split, rows, row),
            SwitchSlotBatch(t) => switch_slot::switch(t, &self.slot_sources, split, rows, row),
            _ => Ok(RowEdit::keep()),
        }
    }
}

/// Makes the edits; returns the rows (dropped, added).
fn commit(rows: &mut Rows<'_>, edits: Vec<RowEdit>) -> (u64, u64) {
    let mut copies = Vec::with_capacity(edits.len());
    for (r, e) in edits.into_iter().enumerate() {
        if let Some(labels) = &e.labels {
            rows.set_labels(r, labels);
        }
        if let Some(line_id) = e.line_id {
            rows.set_line_id(r, Bytes::from(line_id));
        }
        if let Some((example, cells)) = e.features {
            rows.set_features(r, example, &cells);
        }
        copies.push(e.copies);
    }
    let dropped = copies.iter().filter(|&&c| c == 0).count() as u64;
    let added: u64 = copies.iter().map(|&c| c.saturating_sub(1) as u64).sum();
    if added == 0 {
        if dropped > 0 {
            rows.retain(|r| copies[r] == 1);
        }
        return (dropped, 0);
    }
    let mut out = rows.empty_like();
    for (r, &n) in copies.iter().enumerate() {
        for _ in 0..n {
            out.push_row(rows, r).expect("rows of one Rows join");
        }
    }
    *rows = out;
    (dropped, added)
}
