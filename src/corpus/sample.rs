//! The readable sample of a corpus case: an ExampleBatch or a list of Examples
//! written in YAML, encoded with prost into the bytes a caller would send.
//! Tests, benches and tools build samples here instead of each hand-building
//! prost messages.

use prost::Message;
use serde::Deserialize;

use super::CorpusError;
use super::feature::Feature;
use super::line_id::LineIdFields;
use crate::proto::monolith_pb as pb;

/// What a case feeds the library: one ExampleBatch, or Examples (one per row).
/// Written `batch: {...}` or `examples: [...]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(try_from = "RawInput")]
pub enum Input {
    Batch(Batch),
    Examples(Vec<Example>),
}

/// serde_norway reads enums from YAML tags only (`!batch`); a map with one of
/// two keys reads as people write it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    batch: Option<Batch>,
    examples: Option<Vec<Example>>,
}

impl TryFrom<RawInput> for Input {
    type Error = &'static str;
    fn try_from(raw: RawInput) -> Result<Self, Self::Error> {
        match (raw.batch, raw.examples) {
            (Some(b), None) => Ok(Self::Batch(b)),
            (None, Some(e)) => Ok(Self::Examples(e)),
            _ => Err("input holds exactly one of `batch` and `examples`"),
        }
    }
}

/// The serialized input, ready for `extract_batch` or `extract_examples`.
#[derive(Debug, Clone, PartialEq)]
pub enum Encoded {
    Batch(Vec<u8>),
    Examples(Vec<Vec<u8>>),
}

/// `ExampleBatch`: `batch_size` rows; lists in the order they are written, so
/// a case can repeat a list name.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Batch {
    pub batch_size: i32,
    #[serde(default)]
    pub lists: Vec<List>,
    pub data_source_key: Option<u32>,
}

/// `NamedFeatureList`: a SHARED list holds one Feature for every row, an
/// INDIVIDUAL one (the default) one Feature per row.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct List {
    pub name: String,
    #[serde(default, rename = "type")]
    pub kind: ListType,
    #[serde(default)]
    pub features: Vec<Feature>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum ListType {
    #[default]
    Individual,
    Shared,
}

/// `Example`: named features in the order written, and fields 100 to 103.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Example {
    #[serde(default, deserialize_with = "super::feature::ordered")]
    pub features: Vec<(String, Feature)>,
    #[serde(default)]
    pub label: Vec<f32>,
    #[serde(default)]
    pub instance_weight: f32,
    pub line_id: Option<LineIdFields>,
    pub data_source_key: Option<u32>,
}

impl Input {
    /// Reads a sample written as YAML (`batch: ...` or `examples: [...]`).
    pub fn from_yaml(text: &str) -> Result<Self, CorpusError> {
        serde_norway::from_str(text).map_err(|e| CorpusError::Yaml(e.to_string()))
    }

    /// Encodes the sample with prost.
    pub fn encode(&self) -> Result<Encoded, CorpusError> {
        Ok(match self {
            Self::Batch(b) => Encoded::Batch(b.encode()?),
            Self::Examples(es) => Encoded::Examples(es.iter().map(Example::encode).collect::<Result<_, _>>()?),
        })
    }
}

impl Batch {
    /// Reads an ExampleBatch written as YAML (`batch_size: 2`, `lists: [...]`).
    pub fn from_yaml(text: &str) -> Result<Self, CorpusError> {
        serde_norway::from_str(text).map_err(|e| CorpusError::Yaml(e.to_string()))
    }

    pub fn encode(&self) -> Result<Vec<u8>, CorpusError> {
        Ok(self.to_proto()?.encode_to_vec())
    }

    pub fn to_proto(&self) -> Result<pb::ExampleBatch, CorpusError> {
        Ok(pb::ExampleBatch {
            named_feature_list: self.lists.iter().map(List::to_proto).collect::<Result<_, _>>()?,
            batch_size: self.batch_size,
            data_source_key: self.data_source_key.unwrap_or_default(),
            ..Default::default()
        })
    }
}

impl List {
    pub fn to_proto(&self) -> Result<pb::NamedFeatureList, CorpusError> {
        let feature = self.features.iter().map(|f| f.to_proto(&self.name)).collect::<Result<_, _>>()?;
        let r#type = match self.kind {
            ListType::Individual => pb::FeatureListType::Individual,
            ListType::Shared => pb::FeatureListType::Shared,
        };
        Ok(pb::NamedFeatureList { name: self.name.clone(), feature, r#type: r#type as i32, id: 0 })
    }
}

impl Example {
    pub fn encode(&self) -> Result<Vec<u8>, CorpusError> {
        Ok(self.to_proto()?.encode_to_vec())
    }

    pub fn to_proto(&self) -> Result<pb::Example, CorpusError> {
        let named = |(name, f): &(String, Feature)| -> Result<pb::NamedFeature, CorpusError> {
            Ok(pb::NamedFeature { name: name.clone(), feature: Some(f.to_proto(name)?), id: 0, sorted_id: 0 })
        };
        Ok(pb::Example {
            named_feature: self.features.iter().map(named).collect::<Result<_, _>>()?,
            line_id: self.line_id.as_ref().map(LineIdFields::to_proto),
            label: self.label.clone(),
            instance_weight: self.instance_weight,
            data_source_key: self.data_source_key.unwrap_or_default(),
            ..Default::default()
        })
    }
}
