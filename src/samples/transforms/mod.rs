//! Sample transforms, Monolith's (`feature_utils.py`, `datasets.py`), run on
//! the index of the entry point: `Extractor::index` → [`Transforms::apply`]
//! (drops rows, appends negatives from the item pool, overrides labels and
//! LineIds) → `Extractor::write`. Never on re-encoded samples: predicates
//! read rows in place (`row::Split`), and what a transform changes is a
//! small owned buffer the writers read like any other.
//!
//! Row transforms run per input, in config order, on one thread in input
//! order (negative generation's pool and the seeded draws depend on it).
//! `shuffle` and `batch` order rows across inputs: [`Transforms::reorder`].

mod actions;
mod feature_value;
mod filters;
mod label;
mod negative;
mod order;
mod pool_file;
mod relabel;
mod row;
mod rowwise;
mod sampling;
mod switch_slot;

use crate::config::Plan;
use crate::config::offline::SampleTransform;
use crate::extract::Rows;
use crate::wire::DecodeError;

pub use label::INVALID_LABEL;
pub use order::Reorder;
pub use pool_file::ItemPoolError;

/// A transform could not read a row.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("offline.transforms[{index}] ({name}): row {row}: {error}")]
pub struct TransformError {
    /// The transform's position in `offline.transforms`.
    pub index: usize,
    pub name: &'static str,
    /// The row of the rows `apply` was given (as they stood at that transform).
    pub row: usize,
    pub error: DecodeError,
}

impl From<TransformError> for crate::ExtractError {
    /// For callers that report every failure as an `ExtractError` (the
    /// offline pipeline's hook): an operator error naming the transform,
    /// at the row.
    fn from(e: TransformError) -> Self {
        let name = format!("offline.transforms[{}] ({})", e.index, e.name);
        let kind = crate::ErrorKind::Operator { name, message: e.error.to_string() };
        crate::ExtractError::from(kind).at_row(e.row)
    }
}

/// What each transform did, for a run's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TransformCount {
    pub name: &'static str,
    /// Rows it dropped.
    pub dropped: u64,
    /// Rows it added (negatives, instance_reweight's repeats).
    pub generated: u64,
}

enum Stage {
    Filter(SampleTransform),
    AddLabel(crate::config::offline::AddLabel),
    NegativeGen(Box<negative::NegativeGenState>),
    Row(rowwise::RowTransform),
}

/// A model's offline transforms, with their state across inputs.
pub struct Transforms {
    stages: Vec<(usize, Stage)>,
    reorder: Option<Reorder>,
    counts: Vec<TransformCount>,
}

impl Transforms {
    /// The transforms of `plan`'s `offline:` section.
    pub fn new(plan: &Plan) -> Self {
        let mut stages = Vec::new();
        let (mut shuffle, mut batch) = (None, None);
        for (i, t) in plan.offline.transforms.iter().enumerate() {
            match t {
                SampleTransform::AddLabel(a) => stages.push((i, Stage::AddLabel(a.clone()))),
                SampleTransform::NegativeGen(n) => {
                    stages.push((i, Stage::NegativeGen(Box::new(negative::NegativeGenState::new(plan, n.clone())))))
                }
                SampleTransform::Shuffle { buffer_size, seed } => shuffle = Some((*buffer_size, *seed)),
                SampleTransform::Batch { batch_size, drop_remainder } => batch = Some((*batch_size, *drop_remainder)),
                t if rowwise::RowTransform::handles(t) => {
                    stages.push((i, Stage::Row(rowwise::RowTransform::new(plan, t))))
                }
                other => stages.push((i, Stage::Filter(other.clone()))),
            }
        }
        let reorder = (shuffle.is_some() || batch.is_some()).then(|| Reorder::new(shuffle, batch));
        let counts =
            plan.offline.transforms.iter().map(|t| TransformCount { name: t.name(), dropped: 0, generated: 0 });
        Self { stages, reorder, counts: counts.collect() }
    }

    /// True when the model declares no transforms.
    pub fn is_empty(&self) -> bool {
        self.stages.is_empty() && self.reorder.is_none()
    }

    /// Runs the row transforms on one input's rows, in config order.
    pub fn apply(&mut self, rows: &mut Rows<'_>) -> Result<(), TransformError> {
        for (index, stage) in &mut self.stages {
            let count = &mut self.counts[*index];
            let at =
                |(row, error): (usize, DecodeError)| TransformError { index: *index, name: count.name, row, error };
            match stage {
                Stage::Filter(t) => count.dropped += filter(t, rows).map_err(at)?,
                Stage::AddLabel(t) => add_label(t, rows).map_err(at)?,
                Stage::NegativeGen(state) => {
                    let before = state.generated;
                    count.dropped += state.apply(rows).map_err(at)?;
                    count.generated += state.generated - before;
                }
                Stage::Row(t) => {
                    let (dropped, added) = t.apply(rows).map_err(at)?;
                    (count.dropped, count.generated) = (count.dropped + dropped, count.generated + added);
                }
            }
        }
        Ok(())
    }

    /// Shuffle and batch, when declared: give it each input's rows (after
    /// `apply`, made owned with `Rows::into_owned`), write what it returns,
    /// and what `Reorder::finish` returns at the end.
    pub fn reorder(&mut self) -> Option<&mut Reorder> {
        self.reorder.as_mut()
    }

    /// The item ids in negative generation's pool for `channel`, oldest
    /// first (empty without negative_gen).
    pub fn item_pool(&self, channel: u64) -> Vec<u64> {
        self.stages
            .iter()
            .find_map(|(_, s)| match s {
                Stage::NegativeGen(n) => Some(n.pool_ids(channel)),
                _ => None,
            })
            .unwrap_or_default()
    }

    /// negative_gen's item pool and draw state as a file's bytes (see
    /// `pool_file` for the format); `None` without negative_gen.
    pub fn save_item_pool(&self) -> Option<Vec<u8>> {
        self.negative_gen().map(|n| pool_file::encode(&n.snapshot()))
    }

    /// Restores negative_gen's item pool and draw state from a file
    /// `save_item_pool` wrote, so the run continues the one that saved it.
    pub fn restore_item_pool(&mut self, bytes: &[u8]) -> Result<(), ItemPoolError> {
        let snapshot = pool_file::decode(bytes)?;
        let stage = self.stages.iter_mut().find_map(|(_, s)| match s {
            Stage::NegativeGen(n) => Some(n),
            _ => None,
        });
        stage.ok_or(ItemPoolError::NoNegativeGen)?.restore(snapshot)
    }

    fn negative_gen(&self) -> Option<&negative::NegativeGenState> {
        self.stages.iter().find_map(|(_, s)| match s {
            Stage::NegativeGen(n) => Some(&**n),
            _ => None,
        })
    }

    /// The counts as `("<transform>: dropped", n)` and, for negative_gen and
    /// instance_reweight, `("<transform>: generated", n)`, in config order: a
    /// run's summary.
    pub fn summary(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        for c in self.counts() {
            out.push((format!("{}: dropped", c.name), c.dropped));
            if matches!(c.name, "negative_gen" | "instance_reweight") {
                out.push((format!("{}: generated", c.name), c.generated));
            }
        }
        out
    }

    /// Per transform, in config order: rows dropped and generated so far.
    pub fn counts(&self) -> Vec<TransformCount> {
        let mut counts = self.counts.clone();
        if let Some(r) = &self.reorder
            && let Some(c) = counts.iter_mut().find(|c| c.name == "batch")
        {
            c.dropped = r.dropped;
        }
        counts
    }
}

/// Drops the rows a filter rejects; returns how many.
fn filter(t: &SampleTransform, rows: &mut Rows<'_>) -> Result<u64, (usize, DecodeError)> {
    let mut keep = Vec::with_capacity(rows.len());
    {
        let mut split = row::Split::default();
        for r in 0..rows.len() {
            let kept = match t {
                SampleTransform::FilterByFids(f) => filters::keep_by_fids(f, &mut split, rows, r),
                SampleTransform::FilterByValue(f) => filters::keep_by_value(f, &mut split, rows, r),
                SampleTransform::FilterByLabel(f) => filters::keep_by_label(f, &mut split, rows, r),
                _ => Ok(true),
            };
            keep.push(kept.map_err(|e| (r, e))?);
        }
    }
    let dropped = keep.iter().filter(|k| !**k).count() as u64;
    rows.retain(|r| keep[r]);
    Ok(dropped)
}

fn add_label(t: &crate::config::offline::AddLabel, rows: &mut Rows<'_>) -> Result<(), (usize, DecodeError)> {
    let mut edits = Vec::with_capacity(rows.len());
    {
        let mut split = row::Split::default();
        for r in 0..rows.len() {
            edits.push(label::add_label(t, &mut split, rows, r).map_err(|e| (r, e))?);
        }
    }
    for (r, (labels, line_id)) in edits.into_iter().enumerate() {
        rows.set_labels(r, &labels);
        rows.set_line_id(r, label::owned(line_id));
    }
    Ok(())
}

/// SplitMix64: small, seeded, the same on every platform, so a run with a
/// seed is reproducible.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f32 {
        (self.next() >> 40) as f32 / (1u64 << 24) as f32
    }
}
