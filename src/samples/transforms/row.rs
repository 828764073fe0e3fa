//! One row read as the Example it stands for, as Monolith splits an
//! ExampleBatch into Examples before its row transforms: every named feature
//! (an INDIVIDUAL list's Feature at the row, a SHARED list's first), the
//! LineId and the labels; overrides (`Rows::set_labels`, `set_line_id`,
//! `push_with`) win over the sample's own. Read in place through `view`.

use rustc_hash::FxHashMap as HashMap;

use crate::extract::{Rows, Sample};
use crate::view::{
    ExampleBatchView, ExampleView, FeatureKind, FeatureView, LineIdView, ListEntry, ListType, packed_run,
};
use crate::wire::DecodeError;
use crate::wire::len_field;

/// A batch's lists by name, each list's Features located the first time a
/// row asks for them: the split every row of the batch reads.
struct Lists<'r> {
    entries: Vec<(&'r [u8], ListEntry<'r>)>,
    parsed: Vec<Option<(ListType, Vec<FeatureView<'r>>)>>,
    by_name: HashMap<&'r [u8], Vec<usize>>,
}

impl<'r> Lists<'r> {
    /// List `i`'s name and its Feature for `row` (a SHARED list's first).
    fn feature(&mut self, i: usize, row: usize) -> Result<Option<(&'r [u8], FeatureView<'r>)>, DecodeError> {
        feature_of(&self.entries, &mut self.parsed, i, row)
    }
}

/// `Lists::feature` over the parts of a `Lists`, so that a caller may hold
/// its `by_name` meanwhile.
fn feature_of<'r>(
    entries: &[(&'r [u8], ListEntry<'r>)],
    parsed: &mut [Option<(ListType, Vec<FeatureView<'r>>)>],
    i: usize,
    row: usize,
) -> Result<Option<(&'r [u8], FeatureView<'r>)>, DecodeError> {
    if parsed[i].is_none() {
        parsed[i] = Some(entries[i].1.features()?);
    }
    let (ty, features) = parsed[i].as_ref().expect("parsed above");
    let at = if *ty == ListType::Shared { 0 } else { row };
    Ok(features.get(at).map(|f| (entries[i].0, *f)))
}

/// The batches of some rows, split once per call.
#[derive(Default)]
pub(super) struct Split<'r> {
    batches: HashMap<usize, Lists<'r>>,
    /// Each batch's XXH64, for draws that tell batches apart.
    digests: HashMap<usize, u64>,
    /// Each row's place among the rows of the same sample (copies of a
    /// row: 0, 1, ...), made on first use.
    occurrences: Vec<u32>,
    /// Labels read for `with_labels`, kept between rows.
    labels: Vec<f32>,
    /// An item's Features as negative_gen gathers them, kept between rows.
    parts: Vec<(usize, Option<&'r [u8]>)>,
}

impl<'r> Split<'r> {
    /// Row `row`'s place among the rows that stand for the same sample (the
    /// same record, or row of a batch): 0 but for copies of a row, so a
    /// draw tells copies apart without depending on where the row is.
    pub fn occurrence(&mut self, rows: &Rows<'_>, row: usize) -> u64 {
        if self.occurrences.len() != rows.len() {
            let mut seen = HashMap::<(usize, usize, usize), u32>::default();
            self.occurrences = (0..rows.len())
                .map(|r| {
                    let key = match rows.sample(r) {
                        Sample::Example(b) => (b.as_ptr() as usize, b.len(), 0),
                        Sample::BatchRow { batch, row } => (batch.as_ptr() as usize, batch.len(), row),
                    };
                    let n = seen.entry(key).or_default();
                    *n += 1;
                    *n - 1
                })
                .collect();
        }
        u64::from(self.occurrences[row])
    }

    /// An empty list to gather a row's Features into (`keep_parts` gives
    /// it back, so rows reuse one buffer).
    pub(super) fn take_parts(&mut self) -> Vec<(usize, Option<&'r [u8]>)> {
        let mut parts = std::mem::take(&mut self.parts);
        parts.clear();
        parts
    }

    pub(super) fn keep_parts(&mut self, parts: Vec<(usize, Option<&'r [u8]>)>) {
        self.parts = parts;
    }

    /// XXH64 of a batch's bytes, computed once per batch.
    pub fn digest(&mut self, batch: &'r [u8]) -> u64 {
        *self.digests.entry(batch.as_ptr() as usize).or_insert_with(|| xxhash_rust::xxh64::xxh64(batch, 0))
    }

    fn lists(&mut self, batch: &'r [u8]) -> Result<&mut Lists<'r>, DecodeError> {
        let key = batch.as_ptr() as usize;
        if let std::collections::hash_map::Entry::Vacant(slot) = self.batches.entry(key) {
            let view = ExampleBatchView::parse(batch)?;
            let (mut entries, mut by_name) = (Vec::new(), HashMap::<&[u8], Vec<usize>>::default());
            for entry in view.lists() {
                let entry = entry?;
                let name = entry.name()?;
                by_name.entry(name).or_default().push(entries.len());
                entries.push((name, entry));
            }
            let parsed = vec![None; entries.len()];
            slot.insert(Lists { entries, parsed, by_name });
        }
        Ok(self.batches.get_mut(&key).expect("inserted above"))
    }

    /// Calls `f` with each feature of `row` named `name` (in the order the
    /// sample has them; a replacing Example's, when it names it).
    pub fn named(
        &mut self,
        rows: &'r Rows<'_>,
        row: usize,
        name: &[u8],
        mut f: impl FnMut(&FeatureView<'r>),
    ) -> Result<(), DecodeError> {
        if let Some(example) = rows.features_override(row) {
            let replaced = named(example)?;
            if replaced.iter().any(|(n, _)| *n == name) {
                replaced.iter().filter(|(n, v)| *n == name && v.kind().is_some()).for_each(|(_, v)| f(v));
                return Ok(());
            }
        }
        match rows.sample(row) {
            Sample::BatchRow { batch, row } => {
                let Lists { entries, parsed, by_name } = self.lists(batch)?;
                for &i in by_name.get(name).map_or(&[][..], Vec::as_slice) {
                    if let Some((_, feature)) = feature_of(entries, parsed, i, row)? {
                        f(&feature);
                    }
                }
            }
            Sample::Example(bytes) => {
                for (n, feature) in named(bytes)? {
                    if n == name {
                        f(&feature);
                    }
                }
            }
        }
        Ok(())
    }

    /// Calls `f` with each named feature of `row`.
    pub fn features(
        &mut self,
        rows: &'r Rows<'_>,
        row: usize,
        mut f: impl FnMut(&'r [u8], &FeatureView<'r>),
    ) -> Result<(), DecodeError> {
        let replaced = match rows.features_override(row) {
            Some(example) => named(example)?,
            None => Vec::new(),
        };
        let mut own = |name: &'r [u8], feature: &FeatureView<'r>| {
            if !replaced.iter().any(|(n, _)| *n == name) {
                f(name, feature);
            }
        };
        match rows.sample(row) {
            Sample::BatchRow { batch, row } => {
                let lists = self.lists(batch)?;
                for i in 0..lists.entries.len() {
                    if let Some((name, feature)) = lists.feature(i, row)? {
                        own(name, &feature);
                    }
                }
            }
            Sample::Example(bytes) => {
                for (name, feature) in named(bytes)? {
                    own(name, &feature);
                }
            }
        }
        // A replacing name with no Feature hides the sample's and adds none
        // (an item feature a pooled item lacks).
        for (name, feature) in &replaced {
            if feature.kind().is_some() {
                f(name, feature);
            }
        }
        Ok(())
    }

    /// The first fid of feature `name` of `row` (fid_v1_list or
    /// fid_v2_list), as negative generation reads channel and index features.
    pub fn first_fid(&mut self, rows: &'r Rows<'_>, row: usize, name: &str) -> Result<Option<u64>, DecodeError> {
        let mut first = None;
        let mut result = Ok(());
        self.named(rows, row, name.as_bytes(), |f| {
            if matches!(f.kind(), Some(FeatureKind::FidV1List | FeatureKind::FidV2List)) {
                match f.fids() {
                    Ok(fids) => first = fids.first().copied(),
                    Err(e) => result = Err(e),
                }
            }
        })?;
        result.map(|()| first)
    }

    /// The row's LineId, if it has one: a `__LINE_ID__` feature (a
    /// bytes_list holding it), else an Example's field 100, as the LineId
    /// writer finds it.
    pub fn line_id(&mut self, rows: &'r Rows<'_>, row: usize) -> Result<Option<LineIdView<'r>>, DecodeError> {
        self.line_id_from(rows, row, true)
    }

    /// `line_id`; `cells` as `labels_from`'s.
    fn line_id_from(
        &mut self,
        rows: &'r Rows<'_>,
        row: usize,
        cells: bool,
    ) -> Result<Option<LineIdView<'r>>, DecodeError> {
        if let Some(b) = rows.line_id_override(row) {
            return Ok(Some(LineIdView::new(b, 0)));
        }
        if let Some(known) = rows.line_id_feature(row).filter(|_| cells) {
            let Some((bytes, at)) = known else { return Ok(None) };
            if let Some(only) = crate::extract::first_bytes(bytes) {
                return Ok(Some(LineIdView::new(only, 0)));
            }
            let f = FeatureView::parse(bytes, at)?;
            return Ok(f.first_bytes()?.map(|b| LineIdView::new(b, 0)));
        }
        let mut found = None;
        self.named(rows, row, b"__LINE_ID__", |f| found = Some(*f))?;
        if let Some(f) = found
            && let Some(b) = f.first_bytes()?
        {
            return Ok(Some(LineIdView::new(b, 0)));
        }
        match rows.sample(row) {
            Sample::Example(bytes) => {
                let view = ExampleView::parse(bytes, 0)?;
                Ok(view.line_id().map(|(b, at)| LineIdView::new(b, at)))
            }
            Sample::BatchRow { .. } => Ok(None),
        }
    }

    /// The row's labels: Example field 101, then a `__LABEL__` float_list, as
    /// the label writer reads them.
    pub fn labels(&mut self, rows: &'r Rows<'_>, row: usize) -> Result<Vec<f32>, DecodeError> {
        self.labels_from(rows, row, true)
    }

    /// Calls `f` with the row's labels (`labels`), read into a buffer the
    /// split keeps: for a caller that reads them and lets them go.
    pub fn with_labels<T>(
        &mut self,
        rows: &'r Rows<'_>,
        row: usize,
        f: impl FnOnce(&[f32]) -> T,
    ) -> Result<T, DecodeError> {
        let mut labels = std::mem::take(&mut self.labels);
        labels.clear();
        let read = self.labels_into(rows, row, true, &mut labels);
        let result = read.map(|()| f(&labels));
        self.labels = labels;
        result
    }

    /// `labels`; `cells`: a Feature the index found may stand for the split
    /// (tests compare the two).
    fn labels_from(&mut self, rows: &'r Rows<'_>, row: usize, cells: bool) -> Result<Vec<f32>, DecodeError> {
        let mut out = Vec::new();
        self.labels_into(rows, row, cells, &mut out)?;
        Ok(out)
    }

    fn labels_into(
        &mut self,
        rows: &'r Rows<'_>,
        row: usize,
        cells: bool,
        out: &mut Vec<f32>,
    ) -> Result<(), DecodeError> {
        if let Some(l) = rows.labels_override(row) {
            out.extend_from_slice(l);
            return Ok(());
        }
        if let Some(known) = rows.label_feature(row).filter(|_| cells) {
            // The index found the row's `__LABEL__` Feature: no need to
            // split the batch for it.
            if let Some((bytes, at)) = known {
                // A float_list as every encoder writes it: its values are one run.
                if let Some(run) = packed_run(bytes, FeatureKind::FloatList).filter(|r| r.len() % 4 == 0) {
                    out.extend(run.chunks_exact(4).map(crate::view::le_f32));
                    return Ok(());
                }
                let f = FeatureView::parse(bytes, at)?;
                if f.kind() == Some(FeatureKind::FloatList) {
                    f.float_runs(|run| out.extend(run.chunks_exact(4).map(crate::view::le_f32)))?;
                }
            }
            return Ok(());
        }
        if let Sample::Example(bytes) = rows.sample(row) {
            ExampleView::parse(bytes, 0)?.labels(|v| out.push(v))?;
        }
        let mut list = None;
        self.named(rows, row, b"__LABEL__", |f| list = Some(*f))?;
        if let Some(f) = list
            && f.kind() == Some(FeatureKind::FloatList)
        {
            f.float_runs(|run| out.extend(run.chunks_exact(4).map(crate::view::le_f32)))?;
        }
        Ok(())
    }
}

/// The named features of a serialized Example, parsed.
fn named(bytes: &[u8]) -> Result<Vec<(&[u8], FeatureView<'_>)>, DecodeError> {
    let view = ExampleView::parse(bytes, 0)?;
    let mut out = Vec::new();
    for entry in view.features() {
        let entry = entry?;
        let (body, at) = entry.feature.unwrap_or((&[], 0));
        out.push((entry.name, FeatureView::parse(body, at)?));
    }
    Ok(out)
}

/// The Example that ExampleBatch row `row` stands for, as Monolith's
/// `ExampleBatchToExample` (training_instance/cc/data_reader.cc lines
/// 340-400) makes it before its transforms: every list's Feature at the row
/// (a SHARED list's first) as a named feature, except `__LINE_ID__` (its
/// bytes_list[0] becomes field 100, line_id), `__LABEL__` (its floats
/// become field 101, label) and `instance_weight` (its float_list[0], or 1
/// when empty, becomes field 102). Features are copied, not re-encoded.
pub(super) fn example_of<'r>(split: &mut Split<'r>, rows: &'r Rows<'_>, row: usize) -> Result<Vec<u8>, DecodeError> {
    let mut example = Vec::new();
    let mut weight = None;
    let mut bad = Ok(());
    split.features(rows, row, |name, f| match name {
        b"__LINE_ID__" | b"__LABEL__" => {}
        b"instance_weight" => match f.floats() {
            Ok(w) => weight = Some(w.first().copied().unwrap_or(1.0)),
            Err(e) => bad = Err(e),
        },
        _ => {
            let mut named = len_field(1, name);
            named.extend(len_field(2, f.bytes()));
            example.extend(len_field(1, &named));
        }
    })?;
    bad?;
    if let Some(line_id) = split.line_id(rows, row)? {
        example.extend(len_field(100, line_id.bytes()));
    }
    let labels = split.labels(rows, row)?;
    if !labels.is_empty() {
        let floats: Vec<u8> = labels.iter().flat_map(|v| v.to_le_bytes()).collect();
        example.extend(len_field(101, &floats));
    }
    if let Some(w) = weight {
        // Field 102, fixed32: key (102 << 3 | 5) as a two-byte varint.
        example.extend([0xb5, 0x06]);
        example.extend(w.to_le_bytes());
    }
    Ok(example)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use prost::Message;

    use super::Split;
    use crate::Plan;
    use crate::extract::{Extractor, Input};
    use crate::proto::monolith_pb::{self as pb, feature::Type};

    fn feature() -> impl Strategy<Value = pb::Feature> {
        prop_oneof![
            prop::collection::vec(-2.0f32..2.0, 0..4).prop_map(|value| Type::FloatList(pb::FloatList { value })),
            prop::collection::vec(any::<u64>(), 0..3).prop_map(|value| Type::FidV2List(pb::FidList { value })),
            prop::collection::vec(prop::collection::vec(any::<u8>(), 0..6), 0..3)
                .prop_map(|value| Type::BytesList(pb::BytesList { value })),
        ]
        .prop_map(|t| pb::Feature { r#type: Some(t) })
    }

    fn batch() -> impl Strategy<Value = Vec<u8>> {
        let name = prop::sample::select(vec!["__LABEL__", "__LABEL__", "__LINE_ID__", "__LINE_ID__", "a"]);
        let list = (name, prop::collection::vec(feature(), 0..5), any::<bool>());
        (prop::collection::vec(list, 0..4), 0..5i32, any::<usize>(), any::<u8>(), any::<bool>()).prop_map(
            |(lists, batch_size, at, byte, damage)| {
                let named_feature_list = lists
                    .into_iter()
                    .map(|(name, feature, shared)| pb::NamedFeatureList {
                        name: name.into(),
                        feature,
                        r#type: i32::from(shared),
                        id: 0,
                    })
                    .collect();
                let mut buf = pb::ExampleBatch { named_feature_list, batch_size, ..Default::default() }.encode_to_vec();
                if damage && !buf.is_empty() {
                    let i = at % buf.len();
                    buf[i] = byte;
                }
                buf
            },
        )
    }

    proptest! {
        /// A row's labels and LineId read from the index's `__LABEL__` and
        /// `__LINE_ID__` cells are what splitting its batch gives, value for
        /// value and error for error.
        #[test]
        fn labels_and_line_ids_from_the_index_are_the_split_ones(buf in batch(), monolith in any::<bool>()) {
            let compat = if monolith { "monolith" } else { "native" };
            let plan = Plan::from_yaml(&format!(
                "name: m\ncompat: {compat}\nfeatures:\n  - {{name: a, kind: sparse}}\n  - {{name: label, kind: label, shape: [1]}}\n  - {{name: uid, kind: line_id, field: uid}}\n"
            ))
            .unwrap();
            let mut ex = Extractor::new();
            let Ok(rows) = ex.index(&plan, Input::Batch(&buf), None) else { return Ok(()) };
            for row in 0..rows.len() {
                let read = |cells: bool| {
                    let labels = Split::default().labels_from(&rows, row, cells).map_err(|e| e.to_string())?;
                    Ok::<_, String>(labels.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                };
                prop_assert_eq!(read(true), read(false), "row {}", row);
                let line_id = |cells: bool| {
                    let l = Split::default().line_id_from(&rows, row, cells).map_err(|e| e.to_string())?;
                    Ok::<_, String>(l.map(|l| l.bytes().to_vec()))
                };
                prop_assert_eq!(line_id(true), line_id(false), "row {}", row);
            }
        }
    }

    proptest! {
        /// negative_gen's item features read from the index's cells are
        /// what splitting the batch finds under their names, Feature for
        /// Feature; a row whose split fails is never read from the cells.
        #[test]
        fn item_features_from_the_index_are_the_split_ones(buf in batch(), monolith in any::<bool>()) {
            let compat = if monolith { "monolith" } else { "native" };
            let plan = Plan::from_yaml(&format!(
                "name: m\ncompat: {compat}\nfeatures:\n  - {{name: a, kind: sparse}}\n  - {{name: label, kind: label, shape: [1]}}\n\
                 offline:\n  transforms:\n    - {{transform: negative_gen, neg_num: 1, item_features: [a, __LABEL__, z]}}\n"
            ))
            .unwrap();
            let mut ex = Extractor::new();
            let Ok(rows) = ex.index(&plan, Input::Batch(&buf), None) else { return Ok(()) };
            for name in ["a", "__LABEL__"] {
                let source = plan.source_of(name.as_bytes()).unwrap();
                for row in 0..rows.len() {
                    let mut split = Vec::new();
                    let read = Split::default().named(&rows, row, name.as_bytes(), |f| split.push(f.bytes().to_vec()));
                    if let Some(known) = rows.source_feature(row, source) {
                        prop_assert!(read.is_ok(), "row {} of {}: the split fails: {:?}", row, name, read);
                        prop_assert_eq!(known.map(|(b, _)| b.to_vec()).into_iter().collect::<Vec<_>>(), split, "row {} of {}", row, name);
                    }
                }
            }
        }
    }

    /// negative_gen's item features are read from the index; a list no
    /// transform reads by name is not vouched for.
    #[test]
    fn a_regular_batch_has_its_item_features_in_the_index() {
        let plan = Plan::from_yaml(
            "name: m\nfeatures:\n  - {name: a, kind: sparse}\n  - {name: b, kind: sparse}\n\
             offline:\n  transforms:\n    - {transform: negative_gen, neg_num: 1, item_features: [a]}\n",
        )
        .unwrap();
        let fids = |v: u64| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: vec![v] })) };
        let list = |name: &str, feature| pb::NamedFeatureList { name: name.into(), feature, r#type: 0, id: 0 };
        let lists = vec![list("a", vec![fids(1), fids(2)]), list("b", vec![fids(3), fids(4)])];
        let buf = pb::ExampleBatch { named_feature_list: lists, batch_size: 2, ..Default::default() }.encode_to_vec();
        let mut ex = Extractor::new();
        let rows = ex.index(&plan, Input::Batch(&buf), None).unwrap();
        let (a, b) = (plan.source_of(b"a").unwrap(), plan.source_of(b"b").unwrap());
        let known = rows.source_feature(1, a).expect("known").expect("present").0;
        let mut split = Vec::new();
        Split::default().named(&rows, 1, b"a", |f| split.push(f.bytes().to_vec())).unwrap();
        assert_eq!(split, vec![known.to_vec()]);
        assert!(rows.source_feature(1, b).is_none());
        let mut taken = rows.empty_like();
        taken.push_row(&rows, 1).unwrap();
        assert!(taken.source_feature(0, a).is_none(), "adopted rows are split");
    }

    /// A weight set on a row replaces its weight cell, which splitting does
    /// not see: an item feature read from that list is split, not read.
    #[test]
    fn a_reweighted_row_is_split_for_its_weight_list() {
        let plan = Plan::from_yaml(
            "name: m\nfeatures:\n  - {name: a, kind: sparse}\n  - {name: w, kind: instance_weight}\n\
             offline:\n  transforms:\n    - {transform: negative_gen, neg_num: 1, item_features: [a, instance_weight]}\n",
        )
        .unwrap();
        let fids = |v: u64| pb::Feature { r#type: Some(Type::FidV2List(pb::FidList { value: vec![v] })) };
        let floats = |v: f32| pb::Feature { r#type: Some(Type::FloatList(pb::FloatList { value: vec![v] })) };
        let list = |name: &str, feature| pb::NamedFeatureList { name: name.into(), feature, r#type: 0, id: 0 };
        let lists = vec![list("a", vec![fids(1), fids(2)]), list("instance_weight", vec![floats(0.5), floats(0.25)])];
        let buf = pb::ExampleBatch { named_feature_list: lists, batch_size: 2, ..Default::default() }.encode_to_vec();
        let mut ex = Extractor::new();
        let mut rows = ex.index(&plan, Input::Batch(&buf), None).unwrap();
        let (a, w) = (plan.source_of(b"a").unwrap(), plan.source_of(b"instance_weight").unwrap());
        assert!(matches!(rows.source_feature(1, w), Some(Some(_))));
        rows.set_weight(1, 3.0);
        assert!(rows.source_feature(1, w).is_none(), "the weight cell is no longer the split's");
        assert!(matches!(rows.source_feature(1, a), Some(Some(_))), "the row's other lists still are");
    }

    /// The comparison above means something only if the index is read.
    #[test]
    fn a_regular_batch_has_its_labels_and_line_ids_in_the_index() {
        let plan = Plan::from_yaml(
            "name: m\nfeatures:\n  - {name: label, kind: label, shape: [1]}\n  - {name: uid, kind: line_id, field: uid}\n",
        )
        .unwrap();
        let floats = |v: f32| pb::Feature { r#type: Some(Type::FloatList(pb::FloatList { value: vec![v] })) };
        let bytes = |v: &[u8]| pb::Feature { r#type: Some(Type::BytesList(pb::BytesList { value: vec![v.to_vec()] })) };
        let list = |name: &str, feature| pb::NamedFeatureList { name: name.into(), feature, r#type: 0, id: 0 };
        let lists = vec![
            list("__LABEL__", vec![floats(1.0), floats(0.0)]),
            list("__LINE_ID__", vec![bytes(b"x"), bytes(b"yz")]),
        ];
        let buf = pb::ExampleBatch { named_feature_list: lists, batch_size: 2, ..Default::default() }.encode_to_vec();
        let mut ex = Extractor::new();
        let rows = ex.index(&plan, Input::Batch(&buf), None).unwrap();
        assert!(matches!(rows.label_feature(1), Some(Some(_))));
        assert!(matches!(rows.line_id_feature(1), Some(Some(_))));
        assert_eq!(Split::default().labels(&rows, 1).unwrap(), vec![0.0]);
        assert_eq!(Split::default().line_id(&rows, 1).unwrap().unwrap().bytes(), b"yz");
        // Rows taken into other rows (a shuffle's) point into inputs whose
        // lists that index never checked: they are split, not read there.
        let mut taken = rows.empty_like();
        taken.push_row(&rows, 1).unwrap();
        assert!(taken.label_feature(0).is_none() && taken.line_id_feature(0).is_none());
        assert_eq!(Split::default().labels(&taken, 0).unwrap(), vec![0.0]);
        let mut own = rows.clone();
        own.push_row(&rows, 0).unwrap();
        assert!(own.label_feature(0).is_none(), "one adopted row is enough");
    }
}
