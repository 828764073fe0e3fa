//! Legacy `parser.proto.Instance`s, read as the Examples they stand for, the
//! way Monolith's `parse_instances` names their features: the flat v1 fids of
//! field 1 grouped by slot into `slot_<N>` (converted to v2, as every sparse
//! output is), and each matrix feature of field 9 under its own name (its
//! fids, floats, int64s or bytes, the first kind it holds); labels (field 3),
//! instance weight (4), LineId (5, kept byte for byte) and data_source_key
//! (100). Field 8 (`next_fid`) has no Example counterpart and is not read.
//!
//! Monolith's PBDataset, asked for Examples from Instances, names them
//! otherwise (`InstanceToExample`, monolith/native_training/data/
//! training_instance/cc/data_reader.cc lines 225-252): field 2 becomes a
//! float_list `value`, and the fids of slot N a fid_v1_list `fc_slot_<N>`.
//! A model written against those Examples reads the same Instances here:
//! `value` and `fc_slot_<N>` are added when the plan reads them (only
//! then, so other models copy nothing more). The Example is built once per
//! Instance, a copy of the fids it carries; extraction then is that of
//! Examples.

use std::collections::BTreeMap;

use prost::Message;

use super::ExtractError;
use crate::config::Plan;
use crate::fid::{v1_slot, v1_to_v2};
use crate::proto::monolith_pb::{self as pb, feature::Type};
use crate::view::{InstanceView, MatrixFeature};
use crate::wire::{DecodeError, Within};

/// Each Instance as a serialized Example.
pub(super) fn to_examples(plan: &Plan, bufs: &[&[u8]]) -> Result<Vec<Vec<u8>>, ExtractError> {
    let example = |(row, buf): (usize, &&[u8])| to_example(plan, buf).within("instance", Some(row));
    Ok(bufs.iter().enumerate().map(example).collect::<Result<_, DecodeError>>()?)
}

fn to_example(plan: &Plan, buf: &[u8]) -> Result<Vec<u8>, DecodeError> {
    let view = InstanceView::parse(buf)?;
    let mut named_feature = Vec::new();
    if plan.source_of(b"value").is_some() {
        let value = view.values()?;
        if !value.is_empty() {
            named_feature.push(named("value".into(), Type::FloatList(pb::FloatList { value })));
        }
    }
    let mut slots: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for fid in view.fids()? {
        slots.entry(v1_slot(fid)).or_default().push(fid);
    }
    for (slot, fids) in &slots {
        let value = fids.iter().map(|&f| v1_to_v2(f)).collect();
        named_feature.push(named(format!("slot_{slot}"), Type::FidV2List(pb::FidList { value })));
    }
    for (slot, fids) in slots {
        let name = format!("fc_slot_{slot}");
        if plan.source_of(name.as_bytes()).is_some() {
            named_feature.push(named(name, Type::FidV1List(pb::FidList { value: fids })));
        }
    }
    for f in view.features()? {
        if let Some(t) = matrix_type(&f) {
            named_feature.push(named(String::from_utf8_lossy(f.name).into_owned(), t));
        }
    }
    let example = pb::Example {
        named_feature,
        label: view.labels()?,
        instance_weight: view.instance_weight(),
        data_source_key: view.data_source_key(),
        ..Default::default()
    };
    let mut out = example.encode_to_vec();
    if let Some(line_id) = view.line_id() {
        // Field 100, length-delimited: the LineId's own bytes, unknown
        // fields and all.
        prost::encoding::encode_key(100, prost::encoding::WireType::LengthDelimited, &mut out);
        prost::encoding::encode_varint(line_id.bytes().len() as u64, &mut out);
        out.extend_from_slice(line_id.bytes());
    }
    Ok(out)
}

fn named(name: String, t: Type) -> pb::NamedFeature {
    pb::NamedFeature { name, feature: Some(pb::Feature { r#type: Some(t) }), ..Default::default() }
}

/// The first kind of values a matrix feature holds.
fn matrix_type(f: &MatrixFeature<'_>) -> Option<Type> {
    if !f.fids.is_empty() {
        return Some(Type::FidV2List(pb::FidList { value: f.fids.clone() }));
    }
    if !f.floats.is_empty() {
        return Some(Type::FloatList(pb::FloatList { value: f.floats.clone() }));
    }
    if !f.int64s.is_empty() {
        return Some(Type::Int64List(pb::Int64List { value: f.int64s.clone() }));
    }
    let value: Vec<Vec<u8>> = f.bytes.iter().map(|b| b.to_vec()).collect();
    (!value.is_empty()).then_some(Type::BytesList(pb::BytesList { value }))
}
