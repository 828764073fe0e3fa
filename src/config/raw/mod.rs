//! Stage one of config parsing: the YAML as written. The model and each
//! feature entry are read as mappings, then each feature is dispatched on its
//! `kind` or `op` into that kind's own struct (`entries`), which rejects keys
//! of other kinds. Nothing here stops at the first problem: every unknown key
//! and every value of the wrong type is reported, and a feature whose kind is
//! wrong is still declared, so features that read it are not "unknown".

mod dispatch;
pub(super) mod entries;
mod keys;
pub(super) mod offline;

use serde::Deserialize;
use serde_norway::{Mapping, Value};

pub(super) use dispatch::{RawKind, RawOp};
pub(super) use entries::{FieldRef, RawTask};
pub(super) use keys::{Scope, read};

use super::ConfigError;

/// The sample-reading kinds, for messages.
pub(super) const KINDS: &str = "sparse, dense, string, sequence, list, line_id, label, instance_weight, action_label";
/// The operators, for messages.
pub(super) const OPS: &str = "v1_to_v2, slot, reslot, hash, filter_slots, cross, vocab, ln, clip, normalize, bucketize, cast, scale, pow, group, kjt, concat, multi_hot, expr, lookup, match, overlap, bm25, kv_dot, bool_mask, tokenize, regex_replace, slice, split, normalize_text";

/// The model's own keys; `limits` and `features` are read further below.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct TopLevel {
    name: Option<String>,
    version: Option<String>,
    compat: Option<String>,
    limits: Option<Mapping>,
    features: Option<Vec<Value>>,
    offline: Option<Mapping>,
    upstream: Option<Mapping>,
    label_join: Option<Mapping>,
}

/// Per-request bounds the extractor enforces.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(super) struct RawLimits {
    pub max_batch_size: Option<u64>,
    pub max_output_bytes: Option<u64>,
}

/// A model config as written (the parts that were readable).
#[derive(Debug, Default)]
pub(super) struct RawModel {
    pub name: String,
    pub version: String,
    pub compat: Option<String>,
    pub limits: RawLimits,
    /// Every named feature, in file order, names unique.
    pub features: Vec<RawEntry>,
    /// The `offline:` section's transforms, in order.
    pub offline: Vec<offline::RawTransform>,
    /// The `upstream:` section, if any.
    pub upstream: Option<super::upstream::RawUpstream>,
    /// The `label_join:` section, if any.
    pub label_join: Option<super::label_join::RawLabelJoin>,
}

/// One feature entry, read into the struct of its kind or op.
#[derive(Debug)]
pub(super) struct RawEntry {
    pub name: String,
    /// `features.<name>`, the prefix of every error about it.
    pub path: String,
    /// Its `kind` or `op` as written ("" when neither is a string).
    pub tag: String,
    pub visible: bool,
    /// The features it reads (ops only), and the key that named them.
    pub inputs: (Vec<String>, &'static str),
    pub body: Body,
}

#[derive(Debug)]
pub(super) enum Body {
    Kind(RawKind),
    Op(RawOp),
    /// Declared, but with no usable kind or op (already reported).
    Broken,
}

/// Reads a config; `Err` only when the text is not a YAML mapping at all.
/// Otherwise every problem found is pushed to `errors` and the readable rest
/// is returned for stage two.
pub(super) fn parse(text: &str, errors: &mut Vec<ConfigError>) -> Option<RawModel> {
    let top: Value = match serde_norway::from_str(text) {
        Ok(v) => v,
        Err(e) => return fail(errors, "model", e.to_string()),
    };
    let Value::Mapping(top) = top else {
        return fail(errors, "model", "found no mapping; a config is a mapping with name and features".into());
    };
    let top: TopLevel = read(&top, Scope { path: "", owner: None }, errors);
    let name = top.name.unwrap_or_else(|| {
        errors.push(error("name", "missing; name the model"));
        String::new()
    });
    let limits = top.limits.map(|l| read(&l, Scope { path: "limits", owner: None }, errors)).unwrap_or_default();
    let features = match top.features {
        Some(values) => features(&values, errors),
        None => {
            errors.push(error("features", "missing; a model needs at least one feature"));
            Vec::new()
        }
    };
    let offline = top.offline.map(|o| offline::parse(&o, errors)).unwrap_or_default();
    let upstream = top.upstream.map(|u| super::upstream::parse(&u, errors));
    let label_join = top.label_join.map(|l| super::label_join::parse(&l, errors));
    let version = top.version.unwrap_or_default();
    Some(RawModel { name, version, compat: top.compat, limits, features, offline, upstream, label_join })
}

fn fail<T>(errors: &mut Vec<ConfigError>, path: &str, message: String) -> Option<T> {
    errors.push(error(path, message));
    None
}

fn error(path: impl Into<String>, message: impl Into<String>) -> ConfigError {
    ConfigError { path: path.into(), message: message.into() }
}

/// Every feature entry with a name, duplicates reported and dropped.
fn features(values: &[Value], errors: &mut Vec<ConfigError>) -> Vec<RawEntry> {
    if values.is_empty() {
        errors.push(error("features", "a model needs at least one feature"));
    }
    let mut out: Vec<RawEntry> = Vec::new();
    let mut first_at: Vec<usize> = Vec::new();
    for (i, value) in values.iter().enumerate() {
        let Some(entry) = entry(i, value, errors) else { continue };
        if let Some(j) = out.iter().position(|e| e.name == entry.name) {
            let message = format!("duplicate name {:?}, also defined at features[{}]", entry.name, first_at[j]);
            errors.push(error(entry.path, message));
            continue;
        }
        first_at.push(i);
        out.push(entry);
    }
    out
}

/// Reads feature `i`: its name, then its kind's or op's struct.
fn entry(i: usize, value: &Value, errors: &mut Vec<ConfigError>) -> Option<RawEntry> {
    let Value::Mapping(map) = value else {
        return fail(
            errors,
            &format!("features[{i}]"),
            "found no mapping; a feature is {name, kind or op, ...}".into(),
        );
    };
    let name = match map.get("name") {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        Some(Value::String(_)) => return fail(errors, &format!("features[{i}].name"), "must not be empty".into()),
        Some(_) => return fail(errors, &format!("features[{i}].name"), "found no string; names are strings".into()),
        None => return fail(errors, &format!("features[{i}].name"), "missing; every feature needs a name".into()),
    };
    let path = format!("features.{name}");
    let tag = |key| map.get(key).map(|v| v.as_str().map(str::to_string).ok_or(()));
    let mut parsed = dispatch::Parsed { map, path: &path, errors, visible: true, inputs: (Vec::new(), "input") };
    let body = match (tag("kind"), tag("op")) {
        (Some(Ok(kind)), None) => parsed.kind(&kind).map_or(Body::Broken, Body::Kind),
        (None, Some(Ok(op))) => parsed.op(&op).map_or(Body::Broken, Body::Op),
        (Some(_), Some(_)) => {
            parsed.broken("kind", "a feature has either a kind (read from the sample) or an op, not both")
        }
        (Some(Err(())), _) => parsed.broken("kind", &format!("found no string; expected one of {KINDS}")),
        (_, Some(Err(()))) => parsed.broken("op", &format!("found no string; expected one of {OPS}")),
        (None, None) => parsed.broken("kind", &format!("missing; give a kind ({KINDS}) or an op ({OPS})")),
    };
    let (visible, inputs) = (parsed.visible, parsed.inputs);
    let tag = [tag("kind"), tag("op")].into_iter().flatten().flatten().next().unwrap_or_default();
    Some(RawEntry { name, path, tag, visible, inputs, body })
}
