//! Sample transforms, Monolith's (`feature_utils.py`, `datasets.py`), run on
//! the index of the entry point: `Extractor::index` → [`Transforms::apply`]
//! (drops rows, appends negatives from the item pool, overrides labels and
//! LineIds) → `Extractor::write`. Never on re-encoded samples: predicates
//! read rows in place (`row::Split`), and what a transform changes is a
//! small owned buffer the writers read like any other.
//!
//! Row transforms run per input, in config order. Those that read one row
//! at a time and keep nothing (filters, labels) run wherever the input is,
//! up to the first stateful one; from there (negative generation's pool and
//! seeded draws) inputs must come in input order. `shuffle` and `batch`
//! order rows across inputs: [`Transforms::release`].

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

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::config::Plan;
use crate::config::offline::{NegativeGen, SampleTransform};
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

/// What [`Transforms::apply_free_uncounted`] did, per transform: (place,
/// rows dropped, rows added).
#[derive(Debug, Default)]
pub struct Counted(Vec<(usize, u64, u64)>);

/// What [`Transforms::prepare`] read of some rows, for
/// [`Transforms::apply_prepared`].
#[derive(Debug)]
pub struct Prepared(Vec<negative::Seen>);

/// A transform that reads one row at a time and keeps no state: it may run
/// on any thread, on records in any order.
enum Free {
    Filter(SampleTransform),
    AddLabel(crate::config::offline::AddLabel),
    Row(rowwise::RowTransform),
}

/// A transform whose output depends on the rows before it (an item pool,
/// seeded draws): it sees records strictly in input order.
enum Stage {
    Free(Box<Free>),
    NegativeGen(Box<negative::NegativeGenState>),
}

/// The transforms from the first stateful one on, and shuffle and batch.
struct Ordered {
    stages: Vec<(usize, Stage)>,
    reorder: Option<Reorder>,
}

#[derive(Default)]
struct Counter {
    dropped: AtomicU64,
    generated: AtomicU64,
}

/// A model's offline transforms, with their state across inputs. The
/// stateless transforms before the first stateful one ([`Transforms::apply_free`])
/// run on any thread; the rest ([`Transforms::apply_ordered`], then
/// [`Transforms::release`]) must see inputs in order, and lock their state.
pub struct Transforms {
    /// The first ordered stage's config and place when it is negative_gen:
    /// what it reads of each row is read beside the free transforms
    /// ([`Transforms::prepare`]).
    /// The first ordered transform, when negative_gen, with its item features' sources.
    first_negative: Option<(usize, NegativeGen, Vec<Option<usize>>)>,
    /// compat: monolith: the plan, to index ExampleBatch rows again as the
    /// Examples Monolith's transforms see (`Transforms::as_examples`).
    examples_plan: Option<Plan>,
    free: Vec<(usize, Free)>,
    ordered: Mutex<Ordered>,
    names: Vec<&'static str>,
    counts: Vec<Counter>,
}

impl Transforms {
    /// The transforms of `plan`'s `offline:` section.
    pub fn new(plan: &Plan) -> Self {
        let mut free = Vec::new();
        let mut stages = Vec::new();
        let (mut shuffle, mut batch) = (None, None);
        for (i, t) in plan.offline.transforms.iter().enumerate() {
            let stage = match t {
                SampleTransform::AddLabel(a) => Stage::Free(Box::new(Free::AddLabel(a.clone()))),
                SampleTransform::NegativeGen(n) => {
                    Stage::NegativeGen(Box::new(negative::NegativeGenState::new(plan, n.clone())))
                }
                SampleTransform::Shuffle { buffer_size, seed } => {
                    shuffle = Some((*buffer_size, *seed));
                    continue;
                }
                SampleTransform::Batch { batch_size, drop_remainder } => {
                    batch = Some((*batch_size, *drop_remainder));
                    continue;
                }
                t if rowwise::RowTransform::handles(t) => {
                    Stage::Free(Box::new(Free::Row(rowwise::RowTransform::new(plan, t, i))))
                }
                other => Stage::Free(Box::new(Free::Filter(other.clone()))),
            };
            match stage {
                Stage::Free(f) if stages.is_empty() => free.push((i, *f)),
                stage => stages.push((i, stage)),
            }
        }
        let reorder = (shuffle.is_some() || batch.is_some()).then(|| Reorder::new(shuffle, batch));
        let names = plan.offline.transforms.iter().map(SampleTransform::name).collect::<Vec<_>>();
        let counts = names.iter().map(|_| Counter::default()).collect();
        let examples_plan = (plan.compat == crate::Compat::Monolith && !names.is_empty()).then(|| plan.clone());
        let first_negative = match stages.first() {
            Some((i, Stage::NegativeGen(_))) => match &plan.offline.transforms[*i] {
                SampleTransform::NegativeGen(n) => Some((*i, n.clone(), negative::item_sources(plan, n))),
                _ => None,
            },
            _ => None,
        };
        let ordered = Mutex::new(Ordered { stages, reorder });
        Self { first_negative, examples_plan, free, ordered, names, counts }
    }

    /// True when the model declares no transforms.
    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// In `compat: monolith`, rows of an ExampleBatch become the Examples
    /// Monolith's transforms take (it splits a batch into Examples before
    /// them: datasets.py, feature_utils.py), so the rows are written as its
    /// `parse_examples` reads Examples: labels padded with INVALID_LABEL,
    /// weight 1 without `instance_weight`, a SHARED `__LINE_ID__` on every
    /// row. Each row's Example is built from its Features (copied, not
    /// re-encoded) and indexed again. Other plans and inputs: nothing.
    /// Call it before the transforms (the hook's `each` does).
    pub fn as_examples(&self, rows: &mut Rows<'_>) -> Result<(), crate::ExtractError> {
        let Some(plan) = &self.examples_plan else { return Ok(()) };
        if rows.is_empty() || !matches!(rows.sample(0), crate::extract::Sample::BatchRow { .. }) {
            return Ok(());
        }
        let mut owners = Vec::with_capacity(rows.len());
        {
            let mut split = row::Split::default();
            for r in 0..rows.len() {
                let example =
                    row::example_of(&mut split, rows, r).map_err(|e| crate::ExtractError::from(e).at_row(r))?;
                owners.push(bytes::Bytes::from(example));
            }
        }
        let slices: Vec<&[u8]> = owners.iter().map(|b| &b[..]).collect();
        let examples = crate::Extractor::new().index(plan, crate::Input::Examples(&slices), None)?;
        *rows = examples.into_owned(&owners);
        Ok(())
    }

    /// Runs every row transform on one input's rows, in config order: both
    /// halves below, for callers that hold inputs in order anyway.
    pub fn apply(&self, rows: &mut Rows<'_>) -> Result<(), TransformError> {
        self.apply_free(rows)?;
        self.apply_ordered(rows)
    }

    /// The stateless transforms before the first stateful one, on any
    /// thread, inputs in any order.
    pub fn apply_free(&self, rows: &mut Rows<'_>) -> Result<(), TransformError> {
        let counted = self.apply_free_uncounted(rows)?;
        self.count(counted);
        Ok(())
    }

    /// `apply_free`, leaving the counting to the caller
    /// ([`Transforms::count`]): a caller that may run the same rows again
    /// (one record at a time, after a chunk failed) counts only the run
    /// that stands.
    pub fn apply_free_uncounted(&self, rows: &mut Rows<'_>) -> Result<Counted, TransformError> {
        let mut counted = Vec::with_capacity(self.free.len());
        for (index, t) in &self.free {
            let (dropped, added) = self.run_one(*index, t, rows)?;
            counted.push((*index, dropped, added));
        }
        Ok(Counted(counted))
    }

    /// Adds what `apply_free_uncounted` did to the counts.
    pub fn count(&self, counted: Counted) {
        for (index, dropped, added) in counted.0 {
            self.counts[index].dropped.fetch_add(dropped, Ordering::Relaxed);
            self.counts[index].generated.fetch_add(added, Ordering::Relaxed);
        }
    }

    /// What the first ordered transform reads of each row when that depends
    /// on the row alone (negative_gen's labels, LineId, item and channel
    /// ids): read here, on any thread, after `apply_free`, and handed to
    /// [`Transforms::apply_prepared`] with the same rows, its in-order
    /// part is shorter.
    pub fn prepare(&self, rows: &Rows<'_>) -> Result<Option<Prepared>, TransformError> {
        let Some((index, t, item_sources)) = &self.first_negative else { return Ok(None) };
        let facts = negative::read_facts(t, item_sources, rows).map_err(|e| self.error(*index, e))?;
        Ok(Some(Prepared(facts)))
    }

    /// The transforms from the first stateful one on: inputs in order.
    pub fn apply_ordered(&self, rows: &mut Rows<'_>) -> Result<(), TransformError> {
        self.apply_prepared(rows, None)
    }

    /// `apply_ordered` with what `prepare` read of these very rows.
    pub fn apply_prepared(&self, rows: &mut Rows<'_>, prepared: Option<Prepared>) -> Result<(), TransformError> {
        let mut prepared = prepared.map(|p| p.0);
        let mut ordered = self.lock();
        for (index, stage) in &mut ordered.stages {
            match stage {
                Stage::Free(t) => self.run_free(*index, t, rows)?,
                Stage::NegativeGen(state) => {
                    let before = state.generated;
                    let dropped = state.apply(rows, prepared.take()).map_err(|e| self.error(*index, e))?;
                    let count = &self.counts[*index];
                    count.dropped.fetch_add(dropped, Ordering::Relaxed);
                    count.generated.fetch_add(state.generated - before, Ordering::Relaxed);
                }
            }
        }
        Ok(())
    }

    fn run_free(&self, index: usize, t: &Free, rows: &mut Rows<'_>) -> Result<(), TransformError> {
        let (dropped, added) = self.run_one(index, t, rows)?;
        self.count(Counted(vec![(index, dropped, added)]));
        Ok(())
    }

    /// One stateless transform: rows (dropped, added).
    fn run_one(&self, index: usize, t: &Free, rows: &mut Rows<'_>) -> Result<(u64, u64), TransformError> {
        let result = match t {
            Free::Filter(t) => filter(t, rows).map(|dropped| (dropped, 0)),
            Free::AddLabel(t) => add_label(t, rows).map(|()| (0, 0)),
            Free::Row(t) => t.apply(rows),
        };
        result.map_err(|e| self.error(index, e))
    }

    fn error(&self, index: usize, (row, error): (usize, DecodeError)) -> TransformError {
        TransformError { index, name: self.names[index], row, error }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ordered> {
        self.ordered.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// True when shuffle or batch is declared: rows go through
    /// [`Transforms::release`] before they are written.
    pub fn reorders(&self) -> bool {
        self.lock().reorder.is_some()
    }

    /// Shuffle and batch: takes an input's rows (after the row transforms,
    /// made owned with `Rows::into_owned`), in input order, and returns what
    /// is ready to write, each batch apart: with `batch`, whole batches
    /// only; without, the rows the shuffle buffer let go. Without either,
    /// the rows as they came.
    pub fn release(&self, rows: Rows<'static>) -> Vec<Rows<'static>> {
        match self.lock().reorder.as_mut() {
            Some(r) => r.push(rows),
            None => vec![rows],
        }
    }

    /// The end of input: what shuffle and batch still hold, in order.
    pub fn finish(&self) -> Vec<Rows<'static>> {
        self.lock().reorder.as_mut().map(Reorder::finish).unwrap_or_default()
    }

    /// The item ids in negative generation's pool for `channel`, oldest
    /// first (empty without negative_gen).
    pub fn item_pool(&self, channel: u64) -> Vec<u64> {
        self.lock()
            .stages
            .iter()
            .find_map(|(_, s)| match s {
                Stage::NegativeGen(n) => Some(n.pool_ids(channel)),
                Stage::Free(_) => None,
            })
            .unwrap_or_default()
    }

    /// negative_gen's item pool and draw state as a file's bytes (see
    /// `pool_file` for the format); `None` without negative_gen.
    pub fn save_item_pool(&self) -> Option<Vec<u8>> {
        let ordered = self.lock();
        let mut pools = ordered.stages.iter().filter_map(|(_, s)| match s {
            Stage::NegativeGen(n) => Some(pool_file::encode(&n.snapshot())),
            Stage::Free(_) => None,
        });
        pools.next()
    }

    /// Restores negative_gen's item pool and draw state from a file
    /// `save_item_pool` wrote, so this run continues the one that saved it.
    pub fn restore_item_pool(&self, bytes: &[u8]) -> Result<(), ItemPoolError> {
        let snapshot = pool_file::decode(bytes)?;
        let mut ordered = self.lock();
        let state = ordered.stages.iter_mut().find_map(|(_, s)| match s {
            Stage::NegativeGen(n) => Some(n),
            Stage::Free(_) => None,
        });
        state.ok_or(ItemPoolError::NoNegativeGen)?.restore(snapshot)
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
        let batch_dropped = self.lock().reorder.as_ref().map_or(0, |r| r.dropped);
        let count = |(name, c): (&&'static str, &Counter)| {
            let dropped = if *name == "batch" { batch_dropped } else { c.dropped.load(Ordering::Relaxed) };
            TransformCount { name, dropped, generated: c.generated.load(Ordering::Relaxed) }
        };
        self.names.iter().zip(&self.counts).map(count).collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool file a run cannot have written (the same item twice in a
    /// channel, channel 0, a channel twice, more than max_item_num items),
    /// with a valid checksum, is refused on restore: a draw from it would
    /// find a queued item missing from its map.
    #[test]
    fn a_pool_file_no_run_could_write_is_refused() {
        let text = "name: t\ncompat: native\nfeatures:\n  - {name: f_goods_id, kind: sparse}\noffline:\n  transforms:\n    - {transform: negative_gen, neg_num: 1, item_features: [f_goods_id], start_num: 0, max_item_num: 2}\n";
        let plan = Plan::from_yaml(text).unwrap();
        let item = |gid| pool_file::Pooled { gid, sample_cnt: 0, example: bytes::Bytes::new() };
        let config = {
            let t = Transforms::new(&plan);
            pool_file::decode(&t.save_item_pool().unwrap()).unwrap().config
        };
        let file = |channels: Vec<(u64, Vec<pool_file::Pooled>)>| {
            pool_file::encode(&pool_file::Snapshot { config: config.clone(), rng: 1, channels })
        };
        for (channels, what) in [
            (vec![(3, vec![item(7), item(7)])], "item 7 twice in channel 3"),
            (vec![(0, vec![item(7)])], "channel 0 (never pooled)"),
            (vec![(3, vec![item(7)]), (3, vec![item(8)])], "channel 3 twice"),
            (vec![(3, vec![item(1), item(2), item(3)])], "3 items in channel 3, max_item_num is 2"),
        ] {
            let err = Transforms::new(&plan).restore_item_pool(&file(channels)).unwrap_err();
            assert_eq!(err, ItemPoolError::Impossible { what: what.into() });
        }
        Transforms::new(&plan).restore_item_pool(&file(vec![(3, vec![item(1), item(2)])])).unwrap();
    }
}
