//! Stage one of config parsing: the YAML as written, with unknown keys
//! rejected. Each feature is deserialized on its own so that one bad entry does
//! not hide the errors of the others.

use serde::Deserialize;

/// A model config file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawModel {
    pub name: String,
    #[serde(default)]
    pub version: Option<String>,
    #[serde(default)]
    pub compat: Option<String>,
    #[serde(default)]
    pub limits: Option<RawLimits>,
    pub features: Vec<serde_norway::Value>,
}

/// Per-request bounds the extractor enforces.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLimits {
    pub max_batch_size: Option<u64>,
    pub max_output_bytes: Option<u64>,
}

/// One feature entry; which keys apply depends on `kind` or `op` (checked in
/// stage two). A `kind` reads the sample; an `op` derives from other features.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeature {
    pub name: String,
    #[serde(default)]
    pub kind: String,
    pub op: Option<String>,
    pub input: Option<String>,
    pub inputs: Option<Vec<String>>,
    /// `false` keeps a feature internal: computed for others, never returned.
    pub output: Option<bool>,
    pub buckets: Option<u64>,
    pub slot: Option<u64>,
    pub slots: Option<Vec<u64>>,
    pub c: Option<f64>,
    pub floor: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub mean: Option<f64>,
    pub std: Option<f64>,
    pub method: Option<String>,
    pub boundaries: Option<Vec<f64>>,
    pub factor: Option<f64>,
    pub exponent: Option<f64>,
    pub file: Option<String>,
    pub num_embeddings: Option<Vec<u64>>,
    pub min_table_size: Option<u64>,
    pub multi_hot_size: Option<u64>,
    pub tasks: Option<Vec<RawTask>>,
    pub per_position: Option<bool>,
    pub max_per_row: Option<u64>,
    pub source: Option<String>,
    pub dtype: Option<String>,
    pub shape: Option<Vec<i64>>,
    pub default: Option<f64>,
    pub splits: Option<String>,
    pub shared: Option<String>,
    pub max_len: Option<i64>,
    pub width: Option<i64>,
    pub field: Option<FieldRef>,
    #[serde(rename = "type")]
    pub field_type: Option<String>,
}

impl RawFeature {
    /// The keys present besides `name` and `kind`, for "not allowed" checks.
    pub fn present_keys(&self) -> Vec<&'static str> {
        let mut keys = Vec::new();
        let mut add = |present: bool, key| {
            if present {
                keys.push(key)
            }
        };
        add(self.source.is_some(), "source");
        add(self.dtype.is_some(), "dtype");
        add(self.shape.is_some(), "shape");
        add(self.default.is_some(), "default");
        add(self.splits.is_some(), "splits");
        add(self.shared.is_some(), "shared");
        add(self.max_len.is_some(), "max_len");
        add(self.width.is_some(), "width");
        add(self.field.is_some(), "field");
        add(self.field_type.is_some(), "type");
        add(self.input.is_some(), "input");
        add(self.inputs.is_some(), "inputs");
        add(self.buckets.is_some(), "buckets");
        add(self.slot.is_some(), "slot");
        add(self.slots.is_some(), "slots");
        add(self.c.is_some(), "c");
        add(self.floor.is_some(), "floor");
        add(self.min.is_some(), "min");
        add(self.max.is_some(), "max");
        add(self.mean.is_some(), "mean");
        add(self.std.is_some(), "std");
        add(self.method.is_some(), "method");
        add(self.boundaries.is_some(), "boundaries");
        add(self.factor.is_some(), "factor");
        add(self.exponent.is_some(), "exponent");
        add(self.file.is_some(), "file");
        add(self.num_embeddings.is_some(), "num_embeddings");
        add(self.min_table_size.is_some(), "min_table_size");
        add(self.multi_hot_size.is_some(), "multi_hot_size");
        add(self.tasks.is_some(), "tasks");
        add(self.per_position.is_some(), "per_position");
        add(self.max_per_row.is_some(), "max_per_row");
        keys
    }
}

/// One task of an `action_label` feature: Monolith AddLabel's pos/neg actions.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTask {
    pub pos: Vec<i64>,
    #[serde(default)]
    pub neg: Vec<i64>,
    /// Keep this share of negatives (deterministically by LineId); 1 keeps all.
    pub sample_rate: Option<f64>,
}

/// A LineId field named by its name or its number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FieldRef {
    Number(i64),
    Name(String),
}
