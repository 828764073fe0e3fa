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

/// One feature entry; which keys apply depends on `kind` (checked in stage two).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeature {
    pub name: String,
    pub kind: String,
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
        keys
    }
}

/// A LineId field named by its name or its number.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum FieldRef {
    Number(i64),
    Name(String),
}
