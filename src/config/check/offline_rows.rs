//! The rules of the per-row transforms that rewrite labels, actions and
//! features or sample rows (special_strategy, negative_sample,
//! filter_by_feature_value, scatter_label, label_upper_bound,
//! label_normalization, use_field_as_label, add_action, multi_label_gen,
//! instance_reweight, switch_slot_batch): each parameter as Monolith's
//! wrapper checks it (bytedance/monolith, monolith/native_training/data/
//! feature_utils.py, "F", and datasets.py) or its kernel aborts on it, with
//! the line, every problem with its path.

use serde_norway::{Mapping, Value};

use super::offline::{ints, ty_name};
use super::{Checker, Files};
use crate::config::offline::{self as spec, FeatureValueType, NormMethod, SampleTransform, ValueOp};
use crate::config::plan::LineIdField;
use crate::config::raw::FieldRef;
use crate::config::raw::offline::{self as raw, RawBody};
use crate::view::{FieldType, ValueClass};

/// LineId.chnid, which multi_label_gen prints as a number.
const CHNID: u32 = 19;

/// The largest slot a v2 fid holds: `get_max_slot_number()` (reader_util.h
/// line 58) is 1 << 15.
const MAX_SLOT: i64 = (1 << 15) - 1;

impl Checker {
    /// The transforms this file checks; `None` for a broken one.
    pub(super) fn row_transform(&mut self, p: &str, body: &RawBody, files: Files<'_>) -> Option<SampleTransform> {
        let before = self.count();
        let checked = match body {
            RawBody::SpecialStrategy(r) => self.special_strategy(p, r).map(SampleTransform::SpecialStrategy),
            RawBody::NegativeSample(r) => self.negative_sample(p, r).map(SampleTransform::NegativeSample),
            RawBody::FilterByFeatureValue(r) => {
                self.filter_by_feature_value(p, r, files).map(SampleTransform::FilterByFeatureValue)
            }
            RawBody::ScatterLabel(r) => self.scatter_label(p, r).map(SampleTransform::ScatterLabel),
            RawBody::LabelUpperBound(r) => self.label_upper_bound(p, r).map(SampleTransform::LabelUpperBound),
            RawBody::LabelNormalization(r) => self.label_normalization(p, r).map(SampleTransform::LabelNormalization),
            RawBody::UseFieldAsLabel(r) => self.use_field_as_label(p, r).map(SampleTransform::UseFieldAsLabel),
            RawBody::AddAction(r) => self.add_action(p, r).map(SampleTransform::AddAction),
            RawBody::MultiLabelGen(r) => self.multi_label_gen(p, r).map(SampleTransform::MultiLabelGen),
            RawBody::InstanceReweight(r) => self.instance_reweight(p, r).map(SampleTransform::InstanceReweight),
            RawBody::SwitchSlotBatch(r) => self.switch_slot_batch(p, r).map(SampleTransform::SwitchSlotBatch),
            _ => None,
        };
        checked.filter(|_| self.count() == before)
    }

    /// F 488-506: `strategy:sample_rate[:label]` items split by ','; every
    /// rate in [0, 1]; labels for all items or none. The kernel refuses an
    /// empty strategy_list (variant_filter_kernel.cc 281-282).
    fn special_strategy(&mut self, path: &str, r: &raw::SpecialStrategy) -> Option<spec::SpecialStrategy> {
        let strategy_list = self.i32s(path, "strategy_list", r.strategy_list.as_deref().unwrap_or_default());
        if strategy_list.is_empty() {
            self.error(format!("{path}.strategy_list"), "missing or empty; the special strategies to look for");
        }
        let rates = match strategy_rates(r.strategy_conf.as_deref().unwrap_or("")) {
            Ok(rates) => rates,
            Err(m) => {
                self.error(format!("{path}.strategy_conf"), m);
                Vec::new()
            }
        };
        Some(spec::SpecialStrategy {
            strategy_list,
            rates,
            keep_empty_strategy: r.keep_empty_strategy.unwrap_or(true),
            seed: r.seed.unwrap_or(0),
        })
    }

    /// F 518-563: `drop_rate`, the rate of negatives dropped; per action
    /// (`action_priority` with `per_action_drop_rate`, F 548-552). Only the
    /// two together turn the per-action rates on: with one of them absent
    /// or empty, F 548 (`if action_priority and per_action_drop_rate:`)
    /// passes no priorities and no rates, the kernel's
    /// `enable_drop_by_action_` stays false (variant_filter_kernel.cc
    /// 408-410), and every negative is dropped at drop_rate. fex does the
    /// same, after checking that the one given is well formed.
    fn negative_sample(&mut self, path: &str, r: &raw::NegativeSample) -> Option<spec::NegativeSample> {
        let drop_rate = self.rate(path, "drop_rate", r.drop_rate)?;
        let priorities = r.action_priority.as_deref().filter(|p| !p.is_empty()).map_or_else(Vec::new, |p| {
            ints(p).unwrap_or_else(|m| {
                self.error(format!("{path}.action_priority"), m);
                Vec::new()
            })
        });
        let rates = r.per_action_drop_rate.as_deref().filter(|d| !d.is_empty()).map_or_else(Vec::new, |d| {
            action_rates(d).unwrap_or_else(|m| {
                self.error(format!("{path}.per_action_drop_rate"), m);
                Vec::new()
            })
        });
        let (priorities, per_action_drop_rate) = match (priorities.is_empty(), rates.is_empty()) {
            (false, false) => (priorities, rates),
            _ => (Vec::new(), Vec::new()),
        };
        Some(spec::NegativeSample {
            drop_rate,
            label_index: self.non_negative(path, "label_index", r.label_index, 0),
            threshold: r.threshold.unwrap_or(0.0) as f32,
            priorities,
            per_action_drop_rate,
            seed: r.seed.unwrap_or(0),
        })
    }

    /// F 104-148: `type` is int64, float, double or bytes; all/any/diff
    /// only on int64; operand files only for in and not-in.
    fn filter_by_feature_value(
        &mut self,
        path: &str,
        r: &raw::FilterByFeatureValue,
        files: Files<'_>,
    ) -> Option<spec::FilterByFeatureValue> {
        let feature = r.field.clone().unwrap_or_default();
        if feature.is_empty() {
            self.error(format!("{path}.field"), "missing; name the feature whose value is compared");
        }
        let ty = match r.r#type.as_deref() {
            Some("int64") => FeatureValueType::Int64,
            Some("float") => FeatureValueType::Float,
            Some("double") => FeatureValueType::Double,
            Some("bytes") => FeatureValueType::Bytes,
            other => {
                let found = other.map_or("missing".to_string(), |t| format!("found {t:?}"));
                self.error(
                    format!("{path}.type"),
                    format!("{found}; the feature's value type: int64, float, double or bytes"),
                );
                return None;
            }
        };
        let op = self.op(path, r.op.as_deref(), ValueOp::NAMES, ValueOp::parse)?;
        if op.is_set() && ty != FeatureValueType::Int64 {
            self.error(format!("{path}.op"), "all, any and diff are for int64 features");
        }
        if matches!(op, ValueOp::StartsWith | ValueOp::EndsWith) && ty != FeatureValueType::Bytes {
            self.error(format!("{path}.op"), "startswith and endswith are for bytes features");
        }
        let field = feature_field(ty, op);
        let operand = match (&r.operand, &r.operand_file) {
            (Some(v), None) => self.operand(path, field, op, v)?,
            (None, Some(_))
                if ty == FeatureValueType::Double
                    && matches!(op, ValueOp::In | ValueOp::NotIn)
                    && r.operand_format.as_deref().is_none_or(|f| f == "filter_values") =>
            {
                // value_filter_by_feature.cc 116-121: a FilterValues float_list
                // is taken only for type float; for double the load fails and
                // the kernel aborts (TF_CHECK_OK, line 223).
                let msg = "a FilterValues file holds no operands for a double feature (Monolith aborts: its \
                           float_list is for type float only); use type float, or operand_format: lines";
                self.error(format!("{path}.operand_file"), msg);
                return None;
            }
            (None, Some(file)) if matches!(op, ValueOp::In | ValueOp::NotIn) => {
                self.operand_file(path, field, file, r.operand_format.as_deref(), files)?
            }
            (None, Some(_)) => {
                self.error(format!("{path}.operand_file"), "operand files are for in and not-in");
                return None;
            }
            _ => {
                self.error(format!("{path}.operand"), "give exactly one of operand and operand_file");
                return None;
            }
        };
        let keep_empty = r.keep_empty.unwrap_or(false);
        Some(spec::FilterByFeatureValue { feature, ty, op, operand, keep_empty })
    }

    /// F 425 and scatter_label_kernel.cc 47-63: `chnid:index` items split
    /// by ','; the labels are the largest index + 1.
    fn scatter_label(&mut self, path: &str, r: &raw::ScatterLabel) -> Option<spec::ScatterLabel> {
        let config = r.config.as_deref().unwrap_or("");
        let mut chnid_to_index = Vec::new();
        for item in config.split(',') {
            // absl::SimpleAtoi allows surrounding whitespace.
            let parsed = item.split_once(':').and_then(|(c, i)| Some((c.trim().parse().ok()?, i.trim().parse().ok()?)));
            match parsed {
                Some((chnid, index)) => chnid_to_index.push((chnid, index)),
                None => {
                    let msg = format!("{item:?} is not chnid:index; write \"100:3,200:1,300:4\"");
                    self.error(format!("{path}.config"), msg);
                    return None;
                }
            }
        }
        let task_num = chnid_to_index.iter().map(|(_, i)| i + 1).max().unwrap_or(1);
        Some(spec::ScatterLabel { chnid_to_index, task_num })
    }

    /// F 678-680: at least one bound.
    fn label_upper_bound(&mut self, path: &str, r: &raw::LabelUpperBound) -> Option<spec::LabelUpperBound> {
        let bounds: Vec<f32> = r.label_upper_bounds.iter().flatten().map(|&b| b as f32).collect();
        if bounds.is_empty() {
            self.error(format!("{path}.label_upper_bounds"), "missing or empty; give one bound per label");
        }
        Some(spec::LabelUpperBound { label_upper_bounds: bounds })
    }

    /// F 701-703: as many values as methods; the kernel knows six methods
    /// (label_normalization_kernel.cc 79-98).
    fn label_normalization(&mut self, path: &str, r: &raw::LabelNormalization) -> Option<spec::LabelNormalization> {
        let (methods, values) =
            (r.norm_methods.as_deref().unwrap_or_default(), r.norm_values.as_deref().unwrap_or_default());
        if methods.len() != values.len() {
            let msg = format!("found {} values for {} methods; give one per method", values.len(), methods.len());
            self.error(format!("{path}.norm_values"), msg);
        }
        let mut steps = Vec::new();
        for (i, m) in methods.iter().enumerate() {
            match NormMethod::parse(m) {
                Some(method) => steps.push((method, values.get(i).copied().unwrap_or(0.0) as f32)),
                None => self.error(
                    format!("{path}.norm_methods"),
                    format!("unknown method {m:?}, expected one of {}", NormMethod::NAMES),
                ),
            }
        }
        Some(spec::LabelNormalization { steps })
    }

    /// use_field_as_label_kernel.cc (0x1997/monolith at 292b556) 92-131: a
    /// singular field of a number type (others make the kernel abort,
    /// "Cannot get label", line 75).
    fn use_field_as_label(&mut self, path: &str, r: &raw::UseFieldAsLabel) -> Option<spec::UseFieldAsLabel> {
        let field = self.value_field(path, r.field.as_ref(), r.r#type.as_deref())?;
        let numeric = !matches!(field.ty, FieldType::Bool | FieldType::Enum) && field.ty.class() != ValueClass::Bytes;
        if field.repeated || !numeric {
            let msg = format!("found {}; the label comes from a singular number field", describe(field));
            self.error(format!("{path}.field"), msg);
        }
        Some(spec::UseFieldAsLabel {
            field,
            overwrite_invalid_value: r.overwrite_invalid_value.unwrap_or(false),
            label_threshold: r.label_threshold.unwrap_or(7200.0) as f32,
        })
    }

    /// F 285-316: ops gt ge eq lt le neq between in, on a singular field of
    /// a number or string type; add_action_kernel.cc 99-101 skips repeated
    /// fields.
    fn add_action(&mut self, path: &str, r: &raw::AddAction) -> Option<spec::AddAction> {
        const OPS: &str = "gt, ge, eq, lt, le, neq, between, in";
        let field = self.value_field(path, r.field.as_ref(), r.r#type.as_deref());
        let parse = |s: &str| ValueOp::parse(s).filter(|o| OPS.split(", ").any(|n| ValueOp::parse(n) == Some(*o)));
        let op = self.op(path, r.op.as_deref(), OPS, parse)?;
        let field = field?;
        if field.repeated || matches!(field.ty, FieldType::Bool | FieldType::Enum) {
            let msg = format!("found {}; add_action compares a singular number or string field", describe(field));
            self.error(format!("{path}.field"), msg);
        }
        let Some(v) = &r.operand else {
            self.error(format!("{path}.operand"), "missing; the value the field is compared with");
            return None;
        };
        let operand = self.operand(path, field, op, v)?;
        let Some(action) = r.action else {
            self.error(format!("{path}.action"), "missing; the action appended to LineId.actions");
            return None;
        };
        let condition = spec::FilterByValue { field, op, operand, keep_empty: false };
        Some(spec::AddAction { condition, action })
    }

    /// F 836-884: task_num above every index (or the largest + 1);
    /// use_origin_label without actions, else some pos_actions. The head
    /// field is chnid or a string field: multi_label_gen_kernel.cc 183-201
    /// prints chnid and cid, and its switch for other fields falls through
    /// every case, which aborts for any field but a string.
    fn multi_label_gen(&mut self, path: &str, r: &raw::MultiLabelGen) -> Option<spec::MultiLabelGen> {
        let chnid = FieldRef::Name("chnid".into());
        let head_field = self.value_field(path, Some(r.head_field.as_ref().unwrap_or(&chnid)), r.r#type.as_deref())?;
        let is_chnid = head_field.number == CHNID && head_field.ty == FieldType::Int64;
        if head_field.repeated || !(is_chnid || head_field.ty.class() == ValueClass::Bytes) {
            let msg = format!("found {}; the head field is chnid or a string field", describe(head_field));
            self.error(format!("{path}.head_field"), msg);
        }
        let head_to_index = self.head_to_index(path, r.head_to_index.as_ref())?;
        let max = head_to_index.iter().map(|(_, i)| *i).max().unwrap_or(0);
        let task_num = match r.task_num {
            None | Some(0) => max + 1,
            Some(n) if n > max as i64 => n as usize,
            Some(n) => {
                self.error(format!("{path}.task_num"), format!("found {n}, must be above the largest index {max}"));
                max + 1
            }
        };
        let (pos_actions, neg_actions) =
            (r.pos_actions.clone().unwrap_or_default(), r.neg_actions.clone().unwrap_or_default());
        let use_origin_label = r.use_origin_label.unwrap_or(false);
        if use_origin_label && !(pos_actions.is_empty() && neg_actions.is_empty()) {
            self.error(format!("{path}.use_origin_label"), "takes the first label; give no pos_actions or neg_actions");
        } else if !use_origin_label && pos_actions.is_empty() {
            self.error(format!("{path}.pos_actions"), "missing or empty; the actions that make a positive");
        }
        let action_priority = kernel_ints(r.action_priority.as_deref().unwrap_or("")).unwrap_or_else(|m| {
            self.error(format!("{path}.action_priority"), m);
            Vec::new()
        });
        Some(spec::MultiLabelGen {
            head_field,
            head_to_index,
            task_num,
            pos_actions,
            neg_actions,
            use_origin_label,
            pos_label: r.pos_label.unwrap_or(1.0) as f32,
            neg_label: r.neg_label.unwrap_or(0.0) as f32,
            action_priority,
        })
    }

    fn head_to_index(&mut self, path: &str, map: Option<&Mapping>) -> Option<Vec<(Vec<u8>, usize)>> {
        let key = format!("{path}.head_to_index");
        let Some(map) = map.filter(|m| !m.is_empty()) else {
            self.error(key, "missing or empty; a mapping of head value to label index ({100: 0, 200: 1})");
            return None;
        };
        let mut out = Vec::new();
        for (head, index) in map {
            let head = match head {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                _ => {
                    self.error(&key, "found a head that is neither a number nor a string");
                    return None;
                }
            };
            match index.as_u64() {
                Some(i) => out.push((head.into_bytes(), i as usize)),
                None => {
                    self.error(&key, format!("head {head:?}: the index must be a non-negative integer"));
                    return None;
                }
            }
        }
        Some(out)
    }

    /// datasets.py 715-722: `action:weight:label` items split by ',' and an
    /// action priority list. A negative weight would make the kernel emit
    /// the row without end (instance_reweight_dataset_kernel.cc 105), so it
    /// is refused.
    fn instance_reweight(&mut self, path: &str, r: &raw::InstanceReweight) -> Option<spec::InstanceReweight> {
        let action_priority = match r.action_priority.as_deref().map(ints) {
            Some(Ok(v)) if !v.is_empty() => v,
            Some(Err(m)) => {
                self.error(format!("{path}.action_priority"), m);
                Vec::new()
            }
            _ => {
                self.error(
                    format!("{path}.action_priority"),
                    "missing; actions by priority, highest first (\"2,7,0\")",
                );
                Vec::new()
            }
        };
        let reweight = match reweights(r.reweight.as_deref().unwrap_or("")) {
            Ok(v) => v,
            Err(m) => {
                self.error(format!("{path}.reweight"), m);
                Vec::new()
            }
        };
        Some(spec::InstanceReweight { action_priority, reweight })
    }

    /// F 632-661: feature name → [inplace, slot]; suffix `share`. Any slot a
    /// v2 fid holds, 0..=32767 (15 bits: reader_util.h 36-37, 58), slot 0
    /// too, as the kernel takes it. A larger or negative slot is refused:
    /// `switch_slot_v2` (reader_util.h 54-56) would put its 16th bit in the
    /// fid's bit 63 and shift the rest out, a fid whose slot reads as
    /// another. (A v1 fid holds 10 bits: `switch_slot_v1`, lines 50-52,
    /// keeps a slot's low 10 bits, and so does fex; see compat.md.)
    fn switch_slot_batch(&mut self, path: &str, r: &raw::SwitchSlotBatch) -> Option<spec::SwitchSlotBatch> {
        let key = format!("{path}.features");
        let Some(map) = r.features.as_ref().filter(|m| !m.is_empty()) else {
            self.error(key, "missing or empty; a mapping of feature name to [inplace, slot] ({f_a: [true, 5]})");
            return None;
        };
        let mut features = Vec::new();
        for (name, value) in map {
            let parsed = match (name.as_str(), value.as_sequence().map(Vec::as_slice)) {
                (Some(n), Some([Value::Bool(inplace), slot])) => slot.as_i64().map(|s| (n, *inplace, s)),
                _ => None,
            };
            match parsed {
                Some((feature, inplace, slot)) if (0..=MAX_SLOT).contains(&slot) => {
                    features.push(spec::SwitchSlot { feature: feature.to_string(), inplace, slot: slot as u64 })
                }
                Some((feature, _, slot)) => self.error(
                    &key,
                    format!(
                        "{feature}: found slot {slot}, slots are 0..=32767: a v2 fid holds 15 bits of slot, and \
                         Monolith would write the rest into the fid's sign bit or lose it, a fid of another slot"
                    ),
                ),
                None => self
                    .error(&key, format!("{}: expected [inplace, slot], as [true, 5]", name.as_str().unwrap_or("?"))),
            }
        }
        let suffix = r.suffix.clone().unwrap_or_else(|| "share".into());
        Some(spec::SwitchSlotBatch { features, suffix })
    }

    fn op(
        &mut self,
        path: &str,
        op: Option<&str>,
        names: &str,
        parse: impl Fn(&str) -> Option<ValueOp>,
    ) -> Option<ValueOp> {
        match op.map(|o| (o, parse(o))) {
            Some((_, Some(op))) => Some(op),
            Some((o, None)) => {
                self.error(format!("{path}.op"), format!("unknown op {o:?}, expected one of {names}"));
                None
            }
            None => {
                self.error(format!("{path}.op"), format!("missing; one of {names}"));
                None
            }
        }
    }

    /// A rate in [0, 1].
    fn rate(&mut self, path: &str, key: &str, v: Option<f64>) -> Option<f32> {
        match v {
            Some(r) if (0.0..=1.0).contains(&r) => Some(r as f32),
            Some(r) => {
                self.error(format!("{path}.{key}"), format!("found {r}, allowed [0, 1]"));
                None
            }
            None => {
                self.error(format!("{path}.{key}"), "missing; a rate in [0, 1]");
                None
            }
        }
    }

    fn i32s(&mut self, path: &str, key: &str, values: &[i64]) -> Vec<i32> {
        let mut out = Vec::new();
        for &v in values {
            match i32::try_from(v) {
                Ok(v) => out.push(v),
                Err(_) => self.error(format!("{path}.{key}"), format!("found {v}, not an int32")),
            }
        }
        out
    }
}

/// The operand type of a feature value, as `operand` reads it: a set op
/// reads a list.
fn feature_field(ty: FeatureValueType, op: ValueOp) -> LineIdField {
    let ty = match ty {
        FeatureValueType::Int64 => FieldType::Int64,
        FeatureValueType::Float => FieldType::Float,
        FeatureValueType::Double => FieldType::Double,
        FeatureValueType::Bytes => FieldType::Bytes,
    };
    LineIdField { number: 0, ty, default: 0.0, repeated: op.is_set() }
}

/// "type int64", "type repeated int32".
fn describe(field: LineIdField) -> String {
    let repeated = if field.repeated { "repeated " } else { "" };
    format!("type {repeated}{}", ty_name(field.ty))
}

/// special_strategy's `strategy_conf` (F 491-506).
fn strategy_rates(conf: &str) -> Result<Vec<spec::StrategyRate>, String> {
    let mut out = Vec::new();
    for item in conf.trim().split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let parts: Vec<&str> = item.split(':').map(str::trim).collect();
        let bad = || format!("{item:?} is not strategy:sample_rate or strategy:sample_rate:label");
        let (strategy, rate, label) = match parts[..] {
            [s, r] => (s, r, None),
            [s, r, l] => (s, r, Some(l)),
            _ => return Err(bad()),
        };
        let strategy = strategy.parse().map_err(|_| bad())?;
        let sample_rate: f32 = rate.parse().map_err(|_| bad())?;
        if !(0.0..=1.0).contains(&sample_rate) {
            return Err(format!("{item:?}: sample rate {sample_rate} is outside [0, 1]"));
        }
        let label = label.map(|l| l.parse::<f32>().map_err(|_| bad())).transpose()?;
        out.push(spec::StrategyRate { strategy, sample_rate, label });
    }
    let labelled = out.iter().filter(|r| r.label.is_some()).count();
    if labelled != 0 && labelled != out.len() {
        return Err("give a label for every strategy or for none".into());
    }
    Ok(out)
}

/// negative_sample's `per_action_drop_rate`: `action:drop_rate` items.
fn action_rates(s: &str) -> Result<Vec<(i32, f32)>, String> {
    let mut out = Vec::new();
    for item in s.trim().split(',').map(str::trim) {
        let bad = || format!("{item:?} is not action:drop_rate (\"1:0.5\")");
        let (a, r) = item.split_once(':').ok_or_else(bad)?;
        let (action, rate): (i32, f32) = (a.trim().parse().map_err(|_| bad())?, r.trim().parse().map_err(|_| bad())?);
        if !(0.0..=1.0).contains(&rate) {
            return Err(format!("{item:?}: drop rate {rate} is outside [0, 1]"));
        }
        out.push((action, rate));
    }
    Ok(out)
}

/// instance_reweight's `reweight`: `action:weight:label` items.
fn reweights(s: &str) -> Result<Vec<(i32, u32, i32)>, String> {
    if s.trim().is_empty() {
        return Err("missing; action:weight:label items (\"0:0:1,2:3:-1\")".into());
    }
    let mut out = Vec::new();
    for item in s.trim().split(',').map(str::trim) {
        let bad = || format!("{item:?} is not action:weight:label (\"2:3:-1\")");
        let parts: Vec<&str> = item.split(':').map(str::trim).collect();
        let [a, w, l] = parts[..] else { return Err(bad()) };
        let (action, weight, label): (i32, i64, i32) =
            (a.parse().map_err(|_| bad())?, w.parse().map_err(|_| bad())?, l.parse().map_err(|_| bad())?);
        let weight = u32::try_from(weight).map_err(|_| format!("{item:?}: weight {weight} must be 0 or more"))?;
        out.push((action, weight, label));
    }
    Ok(out)
}

/// A comma list read as multi_label_gen's kernel reads it
/// (multi_label_gen_kernel.cc lines 53-58: `absl::StrSplit` keeps empty
/// items and `SimpleAtoi` leaves 0 in an item it cannot read): an empty
/// item, the default `""` included, is action 0. An item that is not an
/// integer is refused.
fn kernel_ints(s: &str) -> Result<Vec<i32>, String> {
    s.split(',')
        .map(|p| match p.trim() {
            "" => Ok(0),
            p => p.parse().map_err(|_| format!("{p:?} is not an action (an integer)")),
        })
        .collect()
}
