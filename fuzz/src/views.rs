//! Walks over every view: each list, each feature and each of its values read
//! as every kind (not only the kind it holds), each LineId field as every type.
//! Results may be errors; what is checked is that nothing panics and that runs
//! and values have the shape the API promises.

use fex::view::{
    ExampleBatchView, ExampleView, FeatureView, FieldType, InstanceView, KNOWN_FIELDS, LineIdView, Value, ValueClass,
    labels_of,
};
use fex::wire::{for_each_bytes, for_each_fixed32, for_each_fixed64, for_each_varint};

/// Every scalar type a LineId field can be read as.
const FIELD_TYPES: [FieldType; 16] = {
    use FieldType::*;
    [
        Int32, Int64, Uint32, Uint64, Sint32, Sint64, Fixed32, Fixed64, Sfixed32, Sfixed64, Bool, Enum, Float, Double,
        String, Bytes,
    ]
};

/// Field numbers of the numbered LineId fields the fuzz plans read.
const EXTRA_FIELDS: [u32; 6] = [300, 301, 302, 303, 304, 305];

pub fn walk_batch(data: &[u8]) {
    let Ok(batch) = ExampleBatchView::parse(data) else { return };
    let _ = (batch.batch_size(), batch.data_source_key());
    let mut lists = 0;
    for entry in batch.lists() {
        // parse checked every top-level key and length, so iteration cannot fail.
        let entry = entry.expect("the lists of a parsed batch are well delimited");
        assert_eq!(entry.index, lists);
        lists += 1;
        let _ = entry.name();
        let mut seen = 0;
        let decoded = entry.decode(|i, body, at| {
            assert_eq!(i, seen);
            seen += 1;
            if let Ok(f) = FeatureView::parse(body, at) {
                walk_feature(&f);
            }
            Ok(())
        });
        if let Ok((list_type, features)) = entry.features() {
            assert_eq!(decoded.ok(), Some(list_type));
            assert_eq!(features.len(), seen);
        }
    }
    assert_eq!(lists, batch.list_count());
}

pub fn walk_feature(f: &FeatureView<'_>) {
    let _ = f.kind().map(|k| (k.name(), k.is_lists()));
    let _ = f.fid_runs(|run| assert_eq!(run.len() % 8, 0));
    let _ = f.float_runs(|run| assert_eq!(run.len() % 4, 0));
    let _ = f.double_runs(|run| assert_eq!(run.len() % 8, 0));
    let _ = f.int64_values(|_| {});
    let _ = f.bytes_values(|b| walk_line_id(LineIdView::new(b, 0)));
    let _ = f.inner_lists(|list, at| {
        let _ = for_each_fixed64(list, at, |run| assert_eq!(run.len() % 8, 0));
        let _ = for_each_fixed32(list, at, |run| assert_eq!(run.len() % 4, 0));
        let _ = for_each_varint(list, at, |_| {});
        let _ = for_each_bytes(list, at, |_, _| Ok(()));
        Ok(())
    });
    let _ = (f.int64_value(), f.float_value(), f.double_value(), f.bytes_value());
    if let (Ok(fids), Ok(floats)) = (f.fids(), f.floats()) {
        let _ = (fids.len(), floats.len());
    }
}

/// Reads every known field with its type, and some numbers as every type.
pub fn walk_line_id(view: LineIdView<'_>) {
    let valid = view.validate().is_ok();
    let read = |number: u32, ty: FieldType| {
        let ok = view.values(number, ty, |v| check_value(v, ty)).is_ok();
        // values() skips what validate() skips and reads the rest: it cannot
        // succeed on a message that validate() rejects.
        assert!(!ok || valid, "field {number} as {ty:?} read a LineId that does not validate");
        let _ = view.last(number, ty);
    };
    KNOWN_FIELDS.iter().for_each(|f| read(f.number, f.ty));
    for ty in FIELD_TYPES {
        read(1, ty);
        EXTRA_FIELDS.iter().for_each(|&n| read(n, ty));
    }
}

fn check_value(v: Value<'_>, ty: FieldType) {
    let class = match v {
        Value::Int(_) => ValueClass::Integer,
        Value::Float(_) => ValueClass::Float,
        Value::Bytes(_) => ValueClass::Bytes,
    };
    assert_eq!(class, ty.class(), "a {ty:?} field gave {v:?}");
}

pub fn walk_example(buf: &[u8]) {
    let Ok(example) = ExampleView::parse(buf, 0) else { return };
    let _ = (example.instance_weight(), example.data_source_key());
    let mut entries = 0;
    for entry in example.features() {
        entries += 1;
        let Ok(entry) = entry else { continue };
        let _ = entry.name;
        if let Some(Ok(f)) = entry.feature.map(|(body, at)| FeatureView::parse(body, at)) {
            walk_feature(&f);
        }
    }
    // parse checked the top level, so each named_feature yields one item.
    assert_eq!(entries, example.feature_count());
    let mut labels = 0;
    if example.labels(|_| labels += 1).is_ok() {
        assert_eq!(labels_of(&example).map(|l| l.len()).ok(), Some(labels));
    }
    if let Some((body, at)) = example.line_id() {
        walk_line_id(LineIdView::new(body, at));
    }
}

pub fn walk_instance(buf: &[u8]) {
    let Ok(instance) = InstanceView::parse(buf) else { return };
    let _ = (instance.instance_weight(), instance.data_source_key());
    let _ = (instance.fids(), instance.next_fids(), instance.values(), instance.labels());
    if let Ok(features) = instance.features() {
        let _ = features.iter().map(|f| f.fids.len() + f.floats.len() + f.int64s.len() + f.bytes.len()).sum::<usize>();
    }
    if let Some(line_id) = instance.line_id() {
        walk_line_id(line_id);
    }
}
