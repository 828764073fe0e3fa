//! `negative_gen` (kernels/negative_gen_dataset_kernel.cc, its item pool
//! kernels/internal/cache_mgr.cc): every row's item features go into a
//! per-channel FIFO pool that outlives one input; each positive is followed
//! by `neg_num` negatives, each the positive's own features with a pooled
//! item's features in place of its item features.
//!
//! Ownership: a pooled item is an owned `Bytes` holding a small Example of
//! the item's named features (their Feature bytes copied, not re-encoded),
//! with the byte range of each feature the plan reads; a negative row points
//! into it (`Rows::push_with`), so rows outlive nothing they index.

use std::collections::VecDeque;

use rustc_hash::FxHashMap as HashMap;

use bytes::Bytes;

use super::Rng;
use super::filters::actions;
use super::label::{owned, rewrite};
use super::pool_file::{self, ItemPoolError};
use super::row::Split;
use crate::config::offline::NegativeGen;
use crate::extract::Rows;
use crate::wire::DecodeError;
use crate::wire::{len_field_len, push_len_header};

/// Monolith's default channel when none is found.
const DEFAULT_CHANNEL: u64 = 3;
const ITEM_ID: u32 = 4;
const ACTIONS: u32 = 6;

/// A pooled item's Example, and the (source, start, end) of each feature
/// the plan reads in it.
type ItemBytes = (Bytes, Vec<(usize, u32, u32)>);

/// One cached item.
#[derive(Debug)]
struct Item {
    example: Bytes,
    /// (source, start, end) of each feature the plan reads.
    cells: Vec<(usize, u32, u32)>,
    sample_cnt: u64,
}

/// One channel's items, oldest first (`CacheWithGid`).
#[derive(Debug, Default)]
struct Channel {
    queue: VecDeque<u64>,
    items: HashMap<u64, Item>,
}

/// Negative generation's state across inputs.
#[derive(Debug)]
pub(super) struct NegativeGenState {
    t: NegativeGen,
    /// Each item feature's source in the plan, if the plan reads it.
    item_sources: Vec<Option<usize>>,
    /// The sources of the item features the plan reads: a negative has
    /// none of the positive's.
    item_cells: Vec<usize>,
    channels: HashMap<u64, Channel>,
    /// Channels in the order first seen, for easy negatives.
    order: Vec<u64>,
    rng: Rng,
    pub generated: u64,
}

/// What negative generation reads of one input row: facts of the row
/// alone, so they can be read on any thread ([`read_facts`]) before the
/// rows reach the pool in input order.
#[derive(Debug)]
pub(super) struct Seen {
    positive: bool,
    gid: u64,
    cid: u64,
    cacheable: bool,
    /// A positive's LineId and labels, which its negatives start from
    /// (empty for other rows).
    line_id: Vec<u8>,
    labels: Vec<f32>,
    /// A cacheable row's item features, as the pool would keep them (made
    /// here, off the in-order path; taken when the item joins the pool).
    item: Option<ItemBytes>,
}

/// Each item feature's source in the plan, if the plan reads it.
pub(super) fn item_sources(plan: &crate::config::Plan, t: &NegativeGen) -> Vec<Option<usize>> {
    t.item_features.iter().map(|n| plan.source_of(n.as_bytes())).collect()
}

/// The facts of every row of `rows`, in order. `item_sources`: see
/// [`item_sources`].
pub(super) fn read_facts(
    t: &NegativeGen,
    item_sources: &[Option<usize>],
    rows: &Rows<'_>,
) -> Result<Vec<Seen>, (usize, DecodeError)> {
    let mut split = Split::default();
    (0..rows.len()).map(|row| read(t, item_sources, &mut split, rows, row).map_err(|e| (row, e))).collect()
}

/// A negative, decided while the rows are read and appended after.
struct Negative {
    /// The positive whose features it takes.
    base: usize,
    example: Bytes,
    cells: Vec<(usize, u32, u32)>,
    labels: Vec<f32>,
    line_id: Vec<u8>,
    weight: f32,
}

/// Where an output row comes from.
enum Placed {
    /// An input row, with its new weight.
    Row(usize, f32),
    /// The k-th negative.
    Negative(usize),
}

impl NegativeGenState {
    pub fn new(plan: &crate::config::Plan, t: NegativeGen) -> Self {
        let rng = Rng::new(t.seed);
        let item_sources = item_sources(plan, &t);
        let item_cells = item_sources.iter().flatten().copied().collect();
        Self { t, item_sources, item_cells, channels: HashMap::default(), order: Vec::new(), rng, generated: 0 }
    }

    /// The pooled item ids of `channel`, oldest first.
    pub fn pool_ids(&self, channel: u64) -> Vec<u64> {
        self.channels.get(&channel).map_or_else(Vec::new, |c| c.queue.iter().copied().collect())
    }

    /// Rewrites `rows` in Monolith's output order: for each row, its
    /// negatives (when positive), then the row itself (unless thrown).
    /// Returns the rows dropped by `throw_origin` / `throw_origin_neg`.
    ///
    /// Rows are read, pooled and drawn from in order first (a row's item is
    /// copied only when it joins the pool); the negatives are appended and
    /// every row put in its place after.
    /// `facts`, when given, are `read_facts` of these very rows.
    pub fn apply(&mut self, rows: &mut Rows<'_>, facts: Option<Vec<Seen>>) -> Result<u64, (usize, DecodeError)> {
        let n = rows.len();
        let mut facts = match facts {
            Some(f) if f.len() == n => f,
            _ => read_facts(&self.t, &self.item_sources, rows)?,
        };
        let mut negatives = Vec::new();
        let mut placed = Vec::with_capacity(n);
        let mut dropped = 0;
        {
            let mut split = Split::default();
            for (row, s) in facts.iter_mut().enumerate() {
                if s.cacheable {
                    self.save(s, &mut split, rows, row).map_err(|e| (row, e))?;
                }
                if s.positive {
                    // The kernel stops at the first negative it cannot build
                    // (GetNext: a failed BuildNegativeTensor emits the positive).
                    for _ in 0..self.t.neg_num {
                        match self.negative(row, s).map_err(|e| (row, e))? {
                            Some(neg) => {
                                placed.push(Placed::Negative(negatives.len()));
                                negatives.push(neg);
                            }
                            None => break,
                        }
                    }
                }
                if !self.t.throw_origin && (!self.t.throw_origin_neg || s.positive) {
                    let weight = match (s.positive, self.t.real_neg_instance_weight) {
                        (true, _) => 1.0,
                        (false, w) if w > 0.00001 => w,
                        _ => 1.0,
                    };
                    placed.push(Placed::Row(row, weight));
                } else {
                    dropped += 1;
                }
            }
        }
        rows.reserve(negatives.len());
        for neg in negatives {
            let at = rows.len();
            rows.push_with(neg.base, neg.example, &neg.cells, &self.item_cells);
            rows.set_labels(at, &neg.labels);
            rows.set_line_id(at, owned(neg.line_id));
            rows.set_weight(at, neg.weight);
        }
        let order: Vec<usize> = placed
            .iter()
            .map(|p| match *p {
                Placed::Row(row, weight) => {
                    rows.set_weight(row, weight);
                    row
                }
                Placed::Negative(k) => n + k,
            })
            .collect();
        rows.select(&order).expect("every placed row is below rows.len()");
        Ok(dropped)
    }
}

fn read<'r>(
    t: &NegativeGen,
    item_sources: &[Option<usize>],
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<Seen, DecodeError> {
    let line_id = split.line_id(rows, row)?;
    // The actions and the item id in one walk of a LineId as encoders
    // write it; any other is read field by field, as before, with its
    // errors in the same order.
    let (acts, item_id) = match line_id.as_ref().map(actions_and_item_id) {
        Some(Some((acts, id))) => (acts, Some(id)),
        _ => (actions(line_id.as_ref())?, None),
    };
    let by_actions = (!t.positive_actions.is_empty())
        .then(|| most_prior(&acts, &t.action_priority).is_some_and(|a| t.positive_actions.contains(&a)));
    // A positive keeps its labels (its negatives start from them).
    let (positive, labels) = split.with_labels(rows, row, |labels| {
        let positive =
            by_actions.unwrap_or_else(|| labels.get(t.label_index).is_some_and(|&l| l == t.positive_label as f32));
        (positive, if positive { labels.to_vec() } else { Vec::new() })
    })?;
    let cacheable =
        !t.cache_only_pos || positive || t.cache_negative_actions.iter().any(|a| acts.contains(&i64::from(*a)));
    let item_id = match item_id {
        Some(id) => id,
        None => line_id.as_ref().map(|l| l.last(ITEM_ID, crate::view::FieldType::Fixed64)).transpose()?.flatten(),
    };
    let mut gid = match item_id {
        Some(crate::view::Value::Int(g)) => g as u64,
        _ => 0,
    };
    let mut cid = DEFAULT_CHANNEL;
    if t.per_channel
        && let Some(c) = split.first_fid(rows, row, &t.channel_feature)?
    {
        cid = c;
    }
    if !t.index_feature.is_empty()
        && let Some(g) = split.first_fid(rows, row, &t.index_feature)?
    {
        gid = g;
    }
    // A row that may join the pool has its item read here, on any thread,
    // so a bad feature fails its record before the pool changes (a batch's
    // lists are parsed once).
    let item = if cacheable { Some(item_of(t, item_sources, split, rows, row)?) } else { None };
    let (line_id, labels) = match positive {
        true => (line_id.map_or_else(Vec::new, |l| l.bytes().to_vec()), labels),
        false => (Vec::new(), Vec::new()),
    };
    Ok(Seen { positive, gid, cid, cacheable, line_id, labels, item })
}

/// A LineId's actions and last item id, from `scan_numbers`: `None` when
/// it does not take the LineId (the caller reads each field then).
fn actions_and_item_id<'l>(l: &crate::view::LineIdView<'l>) -> Option<(Vec<i64>, Option<crate::view::Value<'l>>)> {
    use crate::view::{FieldType, Value};
    let (mut acts, mut id) = (Vec::new(), None);
    l.scan_numbers(&[(ACTIONS, FieldType::Int32), (ITEM_ID, FieldType::Fixed64)], |i, v| match (i, v) {
        (0, Value::Int(a)) => acts.push(a),
        (1, v) => id = Some(v),
        _ => {}
    })?;
    Some((acts, id))
}

/// The row's item features as a small owned Example: each item feature
/// once, in the order `item_features` names them, with no Feature when
/// the row has none.
fn item_of<'r>(
    t: &NegativeGen,
    item_sources: &[Option<usize>],
    split: &mut Split<'r>,
    rows: &'r Rows<'_>,
    row: usize,
) -> Result<ItemBytes, DecodeError> {
    let mut parts = split.take_parts();
    for (i, name) in t.item_features.iter().enumerate() {
        if t.item_features[..i].contains(name) {
            continue;
        }
        let before = parts.len();
        match item_sources.get(i).copied().flatten().and_then(|source| rows.source_feature(row, source)) {
            // The index holds the row's Feature as the split would find it.
            Some(known) => parts.extend(known.map(|(bytes, _)| (i, Some(bytes)))),
            None => split.named(rows, row, name.as_bytes(), |f| parts.push((i, Some(f.bytes()))))?,
        }
        // An item feature the item lacks is named with no Feature: a row
        // read through `Split` then has none, as the kernel's negative
        // has none (it holds only the cached item's features,
        // negative_gen_dataset_kernel.cc lines 427-433 and 512-519).
        if parts.len() == before {
            parts.push((i, None));
        }
    }
    let size = parts.iter().map(|&(i, f)| named_len(t.item_features[i].len(), f)).sum();
    let mut example = Vec::with_capacity(size);
    let mut cells = Vec::with_capacity(parts.len());
    for &(i, feature) in &parts {
        let end = push_named(&mut example, t.item_features[i].as_bytes(), feature);
        if let (Some(f), Some(source)) = (feature, item_sources.get(i).copied().flatten()) {
            cells.push((source, end - f.len() as u32, end));
        }
    }
    split.keep_parts(parts);
    Ok((Bytes::from(example), cells))
}

impl NegativeGenState {
    /// `CacheWithGid::Push`: a new item joins the back; an item already
    /// there is left as it is; past `max_item_num` the oldest leaves.
    fn save<'r>(
        &mut self,
        s: &mut Seen,
        split: &mut Split<'r>,
        rows: &'r Rows<'_>,
        row: usize,
    ) -> Result<(), DecodeError> {
        let t = &self.t;
        if s.cid == 0 {
            return Ok(());
        }
        if !s.positive && (0.0..1.0).contains(&t.origin_neg_in_pool_proba) {
            // The kernel keeps a real negative with this probability, in
            // steps of 1/100.
            let proba = (self.rng.next() % 100) as f32 / 100.0;
            if proba > t.origin_neg_in_pool_proba {
                return Ok(());
            }
        }
        // The item is copied only when it joins the pool (`read` found its
        // features readable), before the pool changes.
        let known = self.channels.get(&s.cid).is_some_and(|c| c.items.contains_key(&s.gid));
        let item = match (known, s.item.take()) {
            (true, _) => None,
            (false, Some(item)) => Some(item),
            (false, None) => Some(item_of(&self.t, &self.item_sources, split, rows, row)?),
        };
        let max = self.t.max_item_num;
        let channel = match self.channels.entry(s.cid) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                self.order.push(s.cid);
                e.insert(Channel::default())
            }
        };
        if let Some((example, cells)) = item {
            channel.queue.push_back(s.gid);
            channel.items.insert(s.gid, Item { example, cells, sample_cnt: 0 });
        }
        if channel.queue.len() > max
            && let Some(old) = channel.queue.pop_front()
        {
            channel.items.remove(&old);
        }
        Ok(())
    }

    /// An easy negative's channel (`CacheManager::SampleChannelID`,
    /// cache_mgr.cc lines 264-281): with two channels or more, one drawn with
    /// probability proportional to its pool's size; else none (the
    /// positive's own channel stays).
    fn easy_channel(&mut self) -> Option<u64> {
        if self.order.len() < 2 {
            return None;
        }
        let sizes: Vec<u64> = self.order.iter().map(|c| self.channels[c].queue.len() as u64).collect();
        let total: u64 = sizes.iter().sum();
        if total == 0 {
            return None;
        }
        let mut draw = self.rng.next() % total;
        for (channel, size) in self.order.iter().zip(sizes) {
            if draw < size {
                return Some(*channel);
            }
            draw -= size;
        }
        None
    }

    /// One negative for positive `row`; `None` when the pool holds no more
    /// than `start_num` items.
    fn negative(&mut self, row: usize, s: &Seen) -> Result<Option<Negative>, DecodeError> {
        let mut cid = s.cid;
        if self.t.per_channel && self.t.easy_hard_ratio > 0.0 && self.rng.unit() < self.t.easy_hard_ratio {
            cid = self.easy_channel().unwrap_or(cid);
        }
        let t = &self.t;
        if cid == 0 {
            return Ok(None);
        }
        let Some(channel) = self.channels.get_mut(&cid) else { return Ok(None) };
        let len = channel.queue.len();
        if len <= t.start_num {
            return Ok(None);
        }
        let index = (self.rng.next() % len as u64) as usize;
        let gid = channel.queue[index];
        // Every queued item is in the map (`save`, `restore` keep them so).
        let Some(item) = channel.items.get_mut(&gid) else { return Ok(None) };
        item.sample_cnt += 1;
        let freq = 1.0 / item.sample_cnt as f64;
        let time = (index as f64 + 1.0) / len as f64;
        let (example, cells) = (item.example.clone(), item.cells.clone());
        let weight = if t.sampled_neg_instance_weight > 0.00001 {
            t.sampled_neg_instance_weight
        } else if t.unbias_sampled_neg {
            (1.0 + t.neg_num as f64 * time.powf(f64::from(t.neg_sample_declay_factor)) * freq) as f32
        } else {
            1.0
        };
        let mut labels = s.labels.clone();
        if let Some(l) = labels.get_mut(t.label_index) {
            *l = t.negative_label as f32;
        }
        let drop: &[u32] = if t.negative_action.is_some() { &[ITEM_ID, ACTIONS] } else { &[ITEM_ID] };
        let mut line_id = rewrite(&s.line_id, drop)?;
        line_id.push((ITEM_ID << 3 | 1) as u8);
        line_id.extend_from_slice(&gid.to_le_bytes());
        if let Some(a) = t.negative_action {
            line_id.push((ACTIONS << 3) as u8);
            prost::encoding::encode_varint(a as i64 as u64, &mut line_id);
        }
        self.generated += 1;
        Ok(Some(Negative { base: row, example, cells, labels, line_id, weight }))
    }
}

/// Item pool save and restore (`pool_file`).
impl NegativeGenState {
    /// The pool, oldest item first per channel, and the draw state.
    pub fn snapshot(&self) -> pool_file::Snapshot {
        let channel = |cid: &u64| {
            let c = self.channels.get(cid)?;
            let items = c.queue.iter().filter_map(|gid| {
                let item = c.items.get(gid)?;
                Some(pool_file::Pooled { gid: *gid, sample_cnt: item.sample_cnt, example: item.example.clone() })
            });
            Some((*cid, items.collect()))
        };
        let channels = self.order.iter().filter_map(channel).collect();
        pool_file::Snapshot { config: self.pool_config(), rng: self.rng.0, channels }
    }

    /// Replaces the pool and the draw state with a snapshot's, taken from a
    /// negative_gen with the same pool config.
    pub fn restore(&mut self, s: pool_file::Snapshot) -> Result<(), ItemPoolError> {
        let model = self.pool_config();
        if s.config != model {
            return Err(ItemPoolError::Mismatch { saved: s.config, model });
        }
        let (mut channels, mut order) = (HashMap::default(), Vec::new());
        let impossible = |what: String| Err(ItemPoolError::Impossible { what });
        for (cid, items) in s.channels {
            // What `save` and `CacheWithGid::Push` (cache_mgr.cc lines
            // 95-114) can make: channels other than 0, once each, each with
            // distinct items, at most max_item_num of them.
            if cid == 0 || channels.contains_key(&cid) {
                return impossible(format!("channel {cid} {}", if cid == 0 { "(never pooled)" } else { "twice" }));
            }
            if items.len() > self.t.max_item_num {
                return impossible(format!(
                    "{} items in channel {cid}, max_item_num is {}",
                    items.len(),
                    self.t.max_item_num
                ));
            }
            let mut channel = Channel::default();
            for p in items {
                if channel.items.contains_key(&p.gid) {
                    return impossible(format!("item {} twice in channel {cid}", p.gid));
                }
                let cells = self.cells_of(&p.example).map_err(|error| ItemPoolError::Item { gid: p.gid, error })?;
                channel.queue.push_back(p.gid);
                channel.items.insert(p.gid, Item { example: p.example, cells, sample_cnt: p.sample_cnt });
            }
            order.push(cid);
            channels.insert(cid, channel);
        }
        (self.channels, self.order, self.rng) = (channels, order, Rng::new(s.rng));
        Ok(())
    }

    /// The keys a pool depends on: a pool restored under others would hold
    /// items a run could not have pooled.
    fn pool_config(&self) -> String {
        let t = &self.t;
        format!(
            "item_features {:?}, per_channel {}, channel_feature {:?}, index_feature {:?}, max_item_num {}",
            t.item_features, t.per_channel, t.channel_feature, t.index_feature, t.max_item_num
        )
    }

    /// Where each item feature the plan reads is in a pooled item's Example.
    fn cells_of(&self, example: &[u8]) -> Result<Vec<(usize, u32, u32)>, DecodeError> {
        let mut cells = Vec::new();
        for entry in crate::view::ExampleView::parse(example, 0)?.features() {
            let entry = entry?;
            let Some(i) = self.t.item_features.iter().position(|n| n.as_bytes() == entry.name) else { continue };
            if let (Some(source), Some((body, at))) = (self.item_sources[i], entry.feature) {
                cells.push((source, at as u32, (at + body.len()) as u32));
            }
        }
        Ok(cells)
    }
}

/// `FindMostPriorAction` over a LineId's actions (int32 on the wire): the
/// first action, or with a priority list and several actions, the one
/// listed first.
fn most_prior(actions: &[i64], priority: &[i32]) -> Option<i32> {
    let first = *actions.first()? as i32;
    if priority.is_empty() || actions.len() == 1 {
        return Some(first);
    }
    let best = priority.iter().find(|&&p| actions.iter().any(|&a| a as i32 == p));
    Some(best.copied().unwrap_or(first))
}

/// Appends an Example's NamedFeature (field 1): the name, and the Feature's
/// bytes as they are when there is one. Returns where the Feature ends.
fn push_named(example: &mut Vec<u8>, name: &[u8], feature: Option<&[u8]>) -> u32 {
    let len = len_field_len(1, name.len()) + feature.map_or(0, |f| len_field_len(2, f.len()));
    push_len_header(example, 1, len);
    push_len_header(example, 1, name.len());
    example.extend_from_slice(name);
    if let Some(f) = feature {
        push_len_header(example, 2, f.len());
        example.extend_from_slice(f);
    }
    example.len() as u32
}

/// Bytes `push_named` appends.
fn named_len(name: usize, feature: Option<&[u8]>) -> usize {
    len_field_len(1, len_field_len(1, name) + feature.map_or(0, |f| len_field_len(2, f.len())))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{ITEM_ID, actions, actions_and_item_id};
    use crate::view::{FieldType, LineIdView};

    /// LineId-like bytes: fields 4 (fixed64 item id) and 6 (int32 actions,
    /// packed or not, negative or not) among others, sometimes damaged.
    fn line_id() -> impl Strategy<Value = Vec<u8>> {
        let field = prop_oneof![
            any::<u64>().prop_map(|g| {
                let mut b = vec![0x21];
                b.extend(g.to_le_bytes());
                b
            }),
            any::<i32>().prop_map(|a| {
                let mut b = vec![0x30];
                prost::encoding::encode_varint(i64::from(a) as u64, &mut b);
                b
            }),
            prop::collection::vec(0..200i32, 0..4).prop_map(|acts| {
                let mut body = Vec::new();
                acts.iter().for_each(|&a| prost::encoding::encode_varint(a as u64, &mut body));
                let mut b = vec![0x32];
                prost::encoding::encode_varint(body.len() as u64, &mut b);
                b.extend(body);
                b
            }),
            any::<u64>().prop_map(|v| {
                let mut b = vec![0x08];
                prost::encoding::encode_varint(v, &mut b);
                b
            }),
            prop::collection::vec(any::<u8>(), 0..5).prop_map(|s| {
                let mut b = vec![0x1a, s.len() as u8];
                b.extend(s);
                b
            }),
        ];
        (prop::collection::vec(field, 0..6), any::<usize>(), any::<u8>(), any::<bool>()).prop_map(
            |(fields, at, byte, damage)| {
                let mut b: Vec<u8> = fields.concat();
                if damage && !b.is_empty() {
                    let i = at % b.len();
                    b[i] = byte;
                }
                b
            },
        )
    }

    proptest! {
        /// The one-walk read gives what reading each field does, whenever it answers.
        #[test]
        fn actions_and_item_id_in_one_walk_are_the_fields_read_alone(bytes in line_id()) {
            let l = LineIdView::new(&bytes, 0);
            if let Some((acts, id)) = actions_and_item_id(&l) {
                prop_assert_eq!(Ok(acts), actions(Some(&l)).map_err(|e| e.to_string()));
                prop_assert_eq!(Ok(id), l.last(ITEM_ID, FieldType::Fixed64).map_err(|e| e.to_string()));
            }
        }
    }
}
