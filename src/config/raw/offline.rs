//! The `offline:` section as written: its own keys, then each transform
//! dispatched on `transform:` into its own struct, which rejects the keys of
//! other transforms. Every problem is reported; nothing stops at the first.

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use super::keys::{Scope, read};
use super::{error, fail};
use crate::config::ConfigError;

/// The transforms, for messages.
pub(in crate::config) const TRANSFORMS: &str =
    "filter_by_fids, filter_by_value, filter_by_label, add_label, negative_gen, shuffle, batch";

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Section {
    transforms: Option<Vec<Value>>,
}

/// Declares a transform struct: `transform`, then its own keys, each
/// optional so a struct can be read one key at a time.
macro_rules! transform {
    ($ty:ident { $($field:ident: $fty:ty),* $(,)? }) => {
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields, default)]
        pub(in crate::config) struct $ty {
            pub transform: String,
            $(pub $field: Option<$fty>,)*
        }
    };
}

transform!(FilterByFids {
    filter_fids: Vec<u64>, has_fids: Vec<u64>, select_fids: Vec<u64>, has_actions: Vec<i32>,
    req_time_min: i64, select_slots: Vec<i64>,
});
transform!(FilterByValue {
    field: super::FieldRef,
    r#type: String,
    op: String,
    operand: Value,
    operand_file: String,
    operand_format: String,
    keep_empty: bool,
});
transform!(FilterByLabel { label_threshold: Vec<f64>, filter_equal: bool });
transform!(AddLabel { config: String, negative_value: f64, new_sample_rate: f64 });
transform!(NegativeGen {
    neg_num: i64, per_channel: bool, channel_feature: String, item_features: Vec<String>, start_num: i64,
    max_item_num: i64, positive_label: i32, negative_label: i32, negative_action: i32,
    positive_actions: Vec<i32>, label_index: i64, action_priority: String, index_feature: String,
    throw_origin: bool, throw_origin_neg: bool, cache_only_pos: bool, cache_negative_actions: Vec<i32>,
    real_neg_instance_weight: f64, sampled_neg_instance_weight: f64, unbias_sampled_neg: bool,
    origin_neg_in_pool_proba: f64, neg_sample_declay_factor: f64, easy_hard_ratio: f64, seed: u64,
});
transform!(Shuffle { buffer_size: i64, seed: u64 });
transform!(Batch { batch_size: i64, drop_remainder: bool });

/// One transform as written, with its path (`offline.transforms[2]`).
#[derive(Debug)]
pub(in crate::config) struct RawTransform {
    pub path: String,
    pub body: RawBody,
}

#[derive(Debug)]
pub(in crate::config) enum RawBody {
    FilterByFids(FilterByFids),
    FilterByValue(FilterByValue),
    FilterByLabel(FilterByLabel),
    AddLabel(AddLabel),
    NegativeGen(NegativeGen),
    Shuffle(Shuffle),
    Batch(Batch),
}

/// Reads the `offline:` mapping.
pub(super) fn parse(section: &Mapping, errors: &mut Vec<ConfigError>) -> Vec<RawTransform> {
    let section: Section = read(section, Scope { path: "offline", owner: None }, errors);
    let values = section.transforms.unwrap_or_default();
    values.iter().enumerate().filter_map(|(i, v)| transform(i, v, errors)).collect()
}

fn transform(i: usize, value: &Value, errors: &mut Vec<ConfigError>) -> Option<RawTransform> {
    let path = format!("offline.transforms[{i}]");
    let Value::Mapping(map) = value else {
        return fail(errors, &path, "found no mapping; a transform is {transform: <name>, ...}".into());
    };
    let name = match map.get("transform") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => {
            return fail(
                errors,
                &format!("{path}.transform"),
                format!("found no string; expected one of {TRANSFORMS}"),
            );
        }
        None => return fail(errors, &format!("{path}.transform"), format!("missing; name one of {TRANSFORMS}")),
    };
    let owner = format!("transform {name}");
    let scope = Scope { path: &path, owner: Some(&owner) };
    let body = match name.as_str() {
        "filter_by_fids" => RawBody::FilterByFids(read(map, scope, errors)),
        "filter_by_value" => RawBody::FilterByValue(read(map, scope, errors)),
        "filter_by_label" => RawBody::FilterByLabel(read(map, scope, errors)),
        "add_label" => RawBody::AddLabel(read(map, scope, errors)),
        "negative_gen" => RawBody::NegativeGen(read(map, scope, errors)),
        "shuffle" => RawBody::Shuffle(read(map, scope, errors)),
        "batch" => RawBody::Batch(read(map, scope, errors)),
        other => {
            errors.push(error(
                format!("{path}.transform"),
                format!("unknown transform {other:?}, expected one of {TRANSFORMS}"),
            ));
            return None;
        }
    };
    Some(RawTransform { path, body })
}
