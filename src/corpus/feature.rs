//! One readable Feature: a map with at most one key, named after the oneof
//! variant of `monolith.io.proto.Feature` (`fid_v2_list: [1, 2]`,
//! `bytes_lists: [["a"], []]`), or `line_id: {uid: 7}` for a serialized LineId
//! in `bytes_list[0]`. `{}` is a Feature with no type set.

use std::fmt;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};

use super::CorpusError;
use super::line_id::LineIdFields;
use crate::proto::monolith_pb::{self as pb, feature::Type};

/// Each field is one oneof variant; a case sets at most one of them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Feature {
    pub fid_v1_list: Option<Vec<u64>>,
    pub fid_v2_list: Option<Vec<u64>>,
    pub float_list: Option<Vec<f32>>,
    pub double_list: Option<Vec<f64>>,
    pub int64_list: Option<Vec<i64>>,
    pub bytes_list: Option<Vec<String>>,
    pub fid_v2_lists: Option<Vec<Vec<u64>>>,
    pub float_lists: Option<Vec<Vec<f32>>>,
    pub double_lists: Option<Vec<Vec<f64>>>,
    pub int64_lists: Option<Vec<Vec<i64>>>,
    pub bytes_lists: Option<Vec<Vec<String>>>,
    pub int64_value: Option<i64>,
    pub float_value: Option<f32>,
    pub double_value: Option<f64>,
    pub bytes_value: Option<String>,
    pub fid_v1_lists: Option<Vec<Vec<u64>>>,
    pub line_id: Option<LineIdFields>,
}

impl Feature {
    /// `fid_v2_list` of `ids`, the most common Feature.
    pub fn fids(ids: &[u64]) -> Self {
        Self { fid_v2_list: Some(ids.to_vec()), ..Self::default() }
    }

    /// The prost Feature; `list` names the owner in the error.
    pub fn to_proto(&self, list: &str) -> Result<pb::Feature, CorpusError> {
        let mut types = self.types();
        let last = types.pop();
        if let (Some((other, _)), Some((name, _))) = (types.pop(), &last) {
            let message = format!("a feature holds one type; found {other} and {name}");
            return Err(CorpusError::Sample { list: list.into(), message });
        }
        Ok(pb::Feature { r#type: last.map(|(_, t)| t) })
    }

    /// Every variant set, with its name, in field order.
    fn types(&self) -> Vec<(&'static str, Type)> {
        let mut out = Vec::new();
        let mut add = |name, t: Option<Type>| out.extend(t.map(|t| (name, t)));
        add("fid_v1_list", self.fid_v1_list.as_deref().map(|v| Type::FidV1List(fid_list(v))));
        add("fid_v2_list", self.fid_v2_list.as_deref().map(|v| Type::FidV2List(fid_list(v))));
        add("float_list", self.float_list.clone().map(|value| Type::FloatList(pb::FloatList { value })));
        add("double_list", self.double_list.clone().map(|value| Type::DoubleList(pb::DoubleList { value })));
        add("int64_list", self.int64_list.clone().map(|value| Type::Int64List(pb::Int64List { value })));
        add("bytes_list", self.bytes_list.as_deref().map(|v| Type::BytesList(bytes_list(v))));
        add("fid_v2_lists", self.fid_v2_lists.as_deref().map(|v| Type::FidV2Lists(fid_lists(v))));
        add("float_lists", self.float_lists.as_deref().map(|v| Type::FloatLists(float_lists(v))));
        add("double_lists", self.double_lists.as_deref().map(|v| Type::DoubleLists(double_lists(v))));
        add("int64_lists", self.int64_lists.as_deref().map(|v| Type::Int64Lists(int64_lists(v))));
        add("bytes_lists", self.bytes_lists.as_deref().map(|v| Type::BytesLists(bytes_lists(v))));
        add("int64_value", self.int64_value.map(Type::Int64Value));
        add("float_value", self.float_value.map(Type::FloatValue));
        add("double_value", self.double_value.map(Type::DoubleValue));
        add("bytes_value", self.bytes_value.as_ref().map(|s| Type::BytesValue(s.as_bytes().to_vec())));
        add("fid_v1_lists", self.fid_v1_lists.as_deref().map(|v| Type::FidV1Lists(fid_lists(v))));
        add("line_id", self.line_id.as_ref().map(|l| Type::BytesList(pb::BytesList { value: vec![l.encode()] })));
        out
    }
}

fn fid_list(v: &[u64]) -> pb::FidList {
    pb::FidList { value: v.to_vec() }
}
fn bytes_list(v: &[String]) -> pb::BytesList {
    pb::BytesList { value: v.iter().map(|s| s.as_bytes().to_vec()).collect() }
}
fn fid_lists(v: &[Vec<u64>]) -> pb::FidLists {
    pb::FidLists { list: v.iter().map(|l| fid_list(l)).collect() }
}
fn float_lists(v: &[Vec<f32>]) -> pb::FloatLists {
    pb::FloatLists { list: v.iter().map(|l| pb::FloatList { value: l.clone() }).collect() }
}
fn double_lists(v: &[Vec<f64>]) -> pb::DoubleLists {
    pb::DoubleLists { list: v.iter().map(|l| pb::DoubleList { value: l.clone() }).collect() }
}
fn int64_lists(v: &[Vec<i64>]) -> pb::Int64Lists {
    pb::Int64Lists { list: v.iter().map(|l| pb::Int64List { value: l.clone() }).collect() }
}
fn bytes_lists(v: &[Vec<String>]) -> pb::BytesLists {
    pb::BytesLists { list: v.iter().map(|l| bytes_list(l)).collect() }
}

/// Reads a YAML map of name → Feature keeping the written order (an Example
/// may name features in any order, and the order is part of the case), or a
/// list of `{name, feature}` entries, which may repeat a name.
pub(super) fn ordered<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<(String, Feature)>, D::Error> {
    struct Ordered;
    impl<'de> Visitor<'de> for Ordered {
        type Value = Vec<(String, Feature)>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a map of feature name to feature, or a list of {name, feature}")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = map.next_entry()? {
                out.push(entry);
            }
            Ok(out)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(Named { name, feature }) = seq.next_element()? {
                out.push((name, feature));
            }
            Ok(out)
        }
    }
    d.deserialize_any(Ordered)
}

/// One entry of an Example's features written as a list.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
    feature: Feature,
}
