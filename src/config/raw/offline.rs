//! The `offline:` section as written: its own keys, then each transform
//! dispatched on `transform:` into its own struct, which rejects the keys of
//! other transforms. Every problem is reported; nothing stops at the first.

use serde::Deserialize;
use serde_norway::{Mapping, Value};

use super::keys::{Scope, read};
use super::{error, fail};
use crate::config::ConfigError;

/// The transforms, for messages.
pub(in crate::config) const TRANSFORMS: &str = "filter_by_fids, filter_by_value, filter_by_feature_value, \
     filter_by_label, special_strategy, negative_sample, add_label, add_action, scatter_label, multi_label_gen, \
     label_upper_bound, label_normalization, use_field_as_label, instance_reweight, switch_slot_batch, negative_gen, \
     shuffle, batch";

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
transform!(SpecialStrategy { strategy_list: Vec<i64>, strategy_conf: String, keep_empty_strategy: bool, seed: u64 });
transform!(NegativeSample {
    drop_rate: f64,
    label_index: i64,
    threshold: f64,
    action_priority: String,
    per_action_drop_rate: String,
    seed: u64,
});
transform!(FilterByFeatureValue {
    field: String,
    r#type: String,
    op: String,
    operand: Value,
    operand_file: String,
    operand_format: String,
    keep_empty: bool,
});
transform!(ScatterLabel { config: String });
transform!(LabelUpperBound { label_upper_bounds: Vec<f64> });
transform!(LabelNormalization { norm_methods: Vec<String>, norm_values: Vec<f64> });
transform!(UseFieldAsLabel {
    field: super::FieldRef,
    r#type: String,
    overwrite_invalid_value: bool,
    label_threshold: f64
});
transform!(AddAction { field: super::FieldRef, r#type: String, op: String, operand: Value, action: i32 });
transform!(MultiLabelGen {
    head_to_index: Mapping, head_field: super::FieldRef, r#type: String, pos_actions: Vec<i32>, neg_actions: Vec<i32>,
    use_origin_label: bool, pos_label: f64, neg_label: f64, action_priority: String, task_num: i64,
});
transform!(InstanceReweight { action_priority: String, reweight: String });
transform!(SwitchSlotBatch { features: Mapping, suffix: String });
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
    SpecialStrategy(SpecialStrategy),
    NegativeSample(NegativeSample),
    FilterByFeatureValue(FilterByFeatureValue),
    ScatterLabel(ScatterLabel),
    LabelUpperBound(LabelUpperBound),
    LabelNormalization(LabelNormalization),
    UseFieldAsLabel(UseFieldAsLabel),
    AddAction(AddAction),
    MultiLabelGen(MultiLabelGen),
    InstanceReweight(InstanceReweight),
    SwitchSlotBatch(SwitchSlotBatch),
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
        "special_strategy" => RawBody::SpecialStrategy(read(map, scope, errors)),
        "negative_sample" => RawBody::NegativeSample(read(map, scope, errors)),
        "filter_by_feature_value" => RawBody::FilterByFeatureValue(read(map, scope, errors)),
        "scatter_label" => RawBody::ScatterLabel(read(map, scope, errors)),
        "label_upper_bound" => RawBody::LabelUpperBound(read(map, scope, errors)),
        "label_normalization" => RawBody::LabelNormalization(read(map, scope, errors)),
        "use_field_as_label" => RawBody::UseFieldAsLabel(read(map, scope, errors)),
        "add_action" => RawBody::AddAction(read(map, scope, errors)),
        "multi_label_gen" => RawBody::MultiLabelGen(read(map, scope, errors)),
        "instance_reweight" => RawBody::InstanceReweight(read(map, scope, errors)),
        "switch_slot_batch" => RawBody::SwitchSlotBatch(read(map, scope, errors)),
        "split_flow" | "merge_flow" => {
            errors.push(error(
                format!("{path}.transform"),
                format!(
                    "{name} splits a tf.data graph into flows and merges them; fex's offline transforms are one \
                     chain, so there is nothing to split or merge (see the book, Offline transforms)"
                ),
            ));
            return None;
        }
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
