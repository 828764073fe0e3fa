//! Which request and row a sample is: the sample table's identity columns.
//!
//! A row's request id and request time are read from its LineId, through
//! the library's own `line_id` outputs: the model is compiled once more with
//! two outputs added ([`REQUEST_ID_OUTPUT`], [`REQUEST_TIME_OUTPUT`]), so
//! the values are extracted with the row and follow it through filters,
//! negatives and shuffles. Which LineId fields: the model's `label_join:`
//! `request_id` and `request_time` when they name LineId fields (the unit
//! of the time with them), else Monolith's `req_id` and `req_time`
//! (seconds).

use std::path::Path;

use fex::Plan;
use fex::config::{KeySource, TimeUnit};
use serde_norway::{Mapping, Value};

use crate::TableError;

/// The added output that reads a row's request id.
pub const REQUEST_ID_OUTPUT: &str = "_fex_request_id";
/// The added output that reads a row's request time.
pub const REQUEST_TIME_OUTPUT: &str = "_fex_request_time";

/// Where the identity is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdentitySource {
    /// The LineId field of the request id (a string).
    pub request_id: String,
    /// The LineId field of the request time (an integer).
    pub request_time: String,
    pub unit: TimeUnit,
}

impl IdentitySource {
    /// The model's `label_join:` keys where they are LineId fields, else
    /// `req_id` and `req_time` in seconds.
    pub fn of(plan: &Plan) -> Self {
        let mut source = Self { request_id: "req_id".into(), request_time: "req_time".into(), unit: TimeUnit::Seconds };
        if let Some(join) = plan.label_join() {
            if let KeySource::LineId { name, .. } = &join.request_id {
                source.request_id = name.clone();
            }
            if let KeySource::LineId { name, .. } = &join.request_time.source {
                source.request_time = name.clone();
                source.unit = join.request_time.unit;
            }
        }
        source
    }

    /// The time in microseconds since the epoch, from a value in `unit`.
    pub fn micros(&self, value: i64) -> i64 {
        match self.unit {
            TimeUnit::Seconds => value.saturating_mul(1_000_000),
            TimeUnit::Millis => value.saturating_mul(1_000),
            TimeUnit::Micros => value,
        }
    }
}

/// The model of `text` (its files read against `dir`) with the identity
/// outputs added, and where they read. `plan` is the model compiled as it
/// is; an output of its own named like an identity output is refused.
pub fn with_identity(text: &str, dir: &Path, plan: &Plan) -> Result<(Plan, IdentitySource), TableError> {
    let source = IdentitySource::of(plan);
    for name in [REQUEST_ID_OUTPUT, REQUEST_TIME_OUTPUT] {
        if plan.outputs.iter().any(|o| o.name == name) {
            return Err(TableError::Model(format!(
                "the model has an output named {name:?}, a name the sample table keeps for itself"
            )));
        }
    }
    let mut doc: Value =
        serde_norway::from_str(text).map_err(|e| TableError::Model(format!("the model's YAML: {e}")))?;
    let features = doc
        .get_mut("features")
        .and_then(Value::as_sequence_mut)
        .ok_or_else(|| TableError::Model("the model has no features: list".into()))?;
    for (name, field) in [(REQUEST_ID_OUTPUT, &source.request_id), (REQUEST_TIME_OUTPUT, &source.request_time)] {
        let mut m = Mapping::new();
        m.insert("name".into(), name.into());
        m.insert("kind".into(), "line_id".into());
        m.insert("field".into(), field.as_str().into());
        features.push(Value::Mapping(m));
    }
    let text = serde_norway::to_string(&doc).map_err(|e| TableError::Model(format!("the model's YAML: {e}")))?;
    let with = Plan::from_yaml_in(&text, dir).map_err(|e| {
        TableError::Model(format!(
            "the model with its identity outputs ({}, {}): {e}",
            source.request_id, source.request_time
        ))
    })?;
    Ok((with, source))
}
