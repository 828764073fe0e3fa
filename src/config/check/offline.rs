//! The `offline:` section's rules: each transform's parameters as Monolith's
//! Python wrappers and kernels check them (`feature_utils.py`,
//! `datasets.py`, `label_utils.cc`), every problem with its path. Operand
//! files are read here, through the model's `FileSource`.

use serde_norway::Value;

use super::{Checker, Files};
use crate::config::offline::{self as spec, Offline, Operand, SampleTransform, ValueOp};
use crate::config::plan::LineIdField;
use crate::config::raw::FieldRef;
use crate::config::raw::offline::{self as raw, RawBody, RawTransform};
use crate::view::{FieldType, KNOWN_FIELDS, ValueClass, known_field};

impl Checker {
    pub(super) fn offline(&mut self, transforms: &[RawTransform], files: Files<'_>) -> Offline {
        let mut out = Vec::new();
        for t in transforms {
            let p = t.path.as_str();
            let checked = match &t.body {
                RawBody::FilterByFids(r) => self.filter_by_fids(p, r),
                RawBody::FilterByValue(r) => self.filter_by_value(p, r, files),
                RawBody::FilterByLabel(r) => self.filter_by_label(p, r),
                RawBody::AddLabel(r) => self.add_label(p, r),
                RawBody::NegativeGen(r) => self.negative_gen(p, r),
                RawBody::Shuffle(r) => Some(SampleTransform::Shuffle {
                    buffer_size: self.positive(p, "buffer_size", r.buffer_size, None),
                    seed: r.seed.unwrap_or(0),
                }),
                RawBody::Batch(r) => Some(SampleTransform::Batch {
                    batch_size: self.positive(p, "batch_size", r.batch_size, None),
                    drop_remainder: r.drop_remainder.unwrap_or(false),
                }),
                other => self.row_transform(p, other, files),
            };
            out.extend(checked.map(|c| (p, c)));
        }
        self.order(&out);
        Offline { transforms: out.into_iter().map(|(_, t)| t).collect() }
    }

    /// Shuffle and batch order rows across inputs: at most one each, after
    /// every row transform, batch last.
    fn order(&mut self, checked: &[(&str, SampleTransform)]) {
        let mut seen_reorder = None::<&str>;
        let mut counts = [0; 2];
        for (path, t) in checked {
            match t {
                SampleTransform::Shuffle { .. } | SampleTransform::Batch { .. } => {
                    let i = usize::from(matches!(t, SampleTransform::Batch { .. }));
                    counts[i] += 1;
                    if counts[i] > 1 {
                        self.error(*path, format!("a second {}; give it once", t.name()));
                    }
                    if seen_reorder == Some("batch") {
                        self.error(*path, format!("{} after batch; batch comes last", t.name()));
                    }
                    seen_reorder = Some(t.name());
                }
                _ => {
                    if let Some(prev) = seen_reorder {
                        let msg = format!("{} after {prev}; row transforms come before shuffle and batch", t.name());
                        self.error(*path, msg);
                    }
                }
            }
        }
    }

    /// A count that must be at least 1 (`default` when absent and allowed).
    pub(super) fn positive(&mut self, path: &str, key: &str, v: Option<i64>, default: Option<usize>) -> usize {
        match (v, default) {
            (Some(n), _) if n >= 1 => n as usize,
            (Some(n), _) => {
                self.error(format!("{path}.{key}"), format!("found {n}, must be at least 1"));
                1
            }
            (None, Some(d)) => d,
            (None, None) => {
                self.error(format!("{path}.{key}"), "missing; give a count of at least 1");
                1
            }
        }
    }

    pub(super) fn non_negative(&mut self, path: &str, key: &str, v: Option<i64>, default: usize) -> usize {
        match v {
            Some(n) if n < 0 => {
                self.error(format!("{path}.{key}"), format!("found {n}, must not be negative"));
                default
            }
            Some(n) => n as usize,
            None => default,
        }
    }

    fn filter_by_fids(&mut self, path: &str, r: &raw::FilterByFids) -> Option<SampleTransform> {
        let mut select_slots = Vec::new();
        for &s in r.select_slots.iter().flatten() {
            if (1..=32767).contains(&s) {
                select_slots.push(s as u32);
            } else {
                // feature_utils.py asserts every slot > 0; v2 slots have 15 bits.
                self.error(format!("{path}.select_slots"), format!("found slot {s}, slots are 1..=32767"));
            }
        }
        Some(SampleTransform::FilterByFids(spec::FilterByFids {
            filter_fids: r.filter_fids.clone().unwrap_or_default(),
            has_fids: r.has_fids.clone().unwrap_or_default(),
            select_fids: r.select_fids.clone().unwrap_or_default(),
            has_actions: r.has_actions.clone().unwrap_or_default(),
            req_time_min: r.req_time_min.unwrap_or(0),
            select_slots,
        }))
    }

    fn filter_by_label(&mut self, path: &str, r: &raw::FilterByLabel) -> Option<SampleTransform> {
        let label_threshold: Vec<f32> = r.label_threshold.iter().flatten().map(|&v| v as f32).collect();
        if label_threshold.is_empty() {
            self.error(format!("{path}.label_threshold"), "missing or empty; give one threshold per label");
        }
        let filter_equal = r.filter_equal.unwrap_or(false);
        Some(SampleTransform::FilterByLabel(spec::FilterByLabel { label_threshold, filter_equal }))
    }

    fn add_label(&mut self, path: &str, r: &raw::AddLabel) -> Option<SampleTransform> {
        let before = self.count();
        let tasks = match r.config.as_deref() {
            Some(c) => label_tasks(c).unwrap_or_else(|m| {
                self.error(format!("{path}.config"), m);
                Vec::new()
            }),
            None => {
                self.error(
                    format!("{path}.config"),
                    "missing; tasks as pos:neg:rate, separated by ';' (\"1,2:3:1.0;4::0.5\")",
                );
                Vec::new()
            }
        };
        let Some(negative_value) = r.negative_value else {
            self.error(format!("{path}.negative_value"), "missing; the label of a sampled negative (0.0 or -1.0)");
            return None;
        };
        let new_sample_rate = match r.new_sample_rate {
            Some(v) if v > 0.0 && v <= 1.0 => v as f32,
            Some(v) => {
                self.error(format!("{path}.new_sample_rate"), format!("found {v}, allowed (0, 1]"));
                1.0
            }
            None => {
                self.error(format!("{path}.new_sample_rate"), "missing; the LineId.sample_rate to write, in (0, 1]");
                1.0
            }
        };
        let negative_value = negative_value as f32;
        (self.count() == before).then_some(SampleTransform::AddLabel(spec::AddLabel {
            tasks,
            negative_value,
            new_sample_rate,
        }))
    }

    fn negative_gen(&mut self, path: &str, r: &raw::NegativeGen) -> Option<SampleTransform> {
        // Monolith registers the op with `neg_num: int >= 1`
        // (monolith/native_training/data/ops/pb_dataset_ops.cc line 82).
        let neg_num = self.positive(path, "neg_num", r.neg_num, None);
        let action_priority = match ints(r.action_priority.as_deref().unwrap_or("")) {
            Ok(v) => v,
            Err(m) => {
                self.error(format!("{path}.action_priority"), m);
                Vec::new()
            }
        };
        let easy_hard_ratio = r.easy_hard_ratio.unwrap_or(0.0);
        if !(0.0..=1.0).contains(&easy_hard_ratio) {
            self.error(format!("{path}.easy_hard_ratio"), format!("found {easy_hard_ratio}, allowed [0, 1]"));
        }
        let per_channel = r.per_channel.unwrap_or(false);
        if per_channel && r.channel_feature.as_deref().unwrap_or("").is_empty() {
            self.error(
                format!("{path}.channel_feature"),
                "missing; per_channel pools items by this feature's first fid",
            );
        }
        let f = |v: Option<f64>, d: f32| v.map_or(d, |v| v as f32);
        Some(SampleTransform::NegativeGen(spec::NegativeGen {
            neg_num,
            per_channel,
            channel_feature: r.channel_feature.clone().unwrap_or_default(),
            item_features: r.item_features.clone().unwrap_or_default(),
            start_num: self.non_negative(path, "start_num", r.start_num, 500),
            max_item_num: self.positive(path, "max_item_num", r.max_item_num, Some(100_000)),
            positive_label: r.positive_label.unwrap_or(1),
            negative_label: r.negative_label.unwrap_or(-1),
            negative_action: r.negative_action.filter(|&a| a != -99_999),
            positive_actions: r.positive_actions.clone().unwrap_or_default(),
            label_index: self.non_negative(path, "label_index", r.label_index, 0),
            action_priority,
            index_feature: r.index_feature.clone().unwrap_or_default(),
            throw_origin: r.throw_origin.unwrap_or(false),
            throw_origin_neg: r.throw_origin_neg.unwrap_or(false),
            cache_only_pos: r.cache_only_pos.unwrap_or(false),
            cache_negative_actions: r.cache_negative_actions.clone().unwrap_or_default(),
            real_neg_instance_weight: f(r.real_neg_instance_weight, 1.0),
            sampled_neg_instance_weight: f(r.sampled_neg_instance_weight, -1.0),
            unbias_sampled_neg: r.unbias_sampled_neg.unwrap_or(true),
            origin_neg_in_pool_proba: f(r.origin_neg_in_pool_proba, 1.0),
            neg_sample_declay_factor: f(r.neg_sample_declay_factor, 1.0),
            easy_hard_ratio: easy_hard_ratio as f32,
            seed: r.seed.unwrap_or(0),
        }))
    }

    fn filter_by_value(&mut self, path: &str, r: &raw::FilterByValue, files: Files<'_>) -> Option<SampleTransform> {
        let before = self.count();
        let field = self.value_field(path, r.field.as_ref(), r.r#type.as_deref());
        let op = match r.op.as_deref().map(|o| (o, ValueOp::parse(o))) {
            Some((_, Some(op))) => op,
            Some((o, None)) => {
                self.error(format!("{path}.op"), format!("unknown op {o:?}, expected one of {}", ValueOp::NAMES));
                return None;
            }
            None => {
                self.error(format!("{path}.op"), format!("missing; one of {}", ValueOp::NAMES));
                return None;
            }
        };
        let field = field?;
        self.value_op_fits(path, field, op);
        let operand = match (&r.operand, &r.operand_file) {
            (Some(_), Some(_)) | (None, None) => {
                self.error(format!("{path}.operand"), "give exactly one of operand and operand_file");
                return None;
            }
            (Some(v), None) => self.operand(path, field, op, v)?,
            (None, Some(file)) => {
                if !matches!(op, ValueOp::In | ValueOp::NotIn) {
                    self.error(format!("{path}.operand_file"), "operand files are for in and not-in");
                }
                self.operand_file(path, field, file, r.operand_format.as_deref(), files)?
            }
        };
        let keep_empty = r.keep_empty.unwrap_or(false);
        (self.count() == before).then_some(SampleTransform::FilterByValue(spec::FilterByValue {
            field,
            op,
            operand,
            keep_empty,
        }))
    }

    /// A LineId field by known name, or by number with `type`.
    pub(super) fn value_field(
        &mut self,
        path: &str,
        field: Option<&FieldRef>,
        ty: Option<&str>,
    ) -> Option<LineIdField> {
        match field {
            None => self.error(format!("{path}.field"), "missing; name a LineId field or give its number and type"),
            Some(FieldRef::Name(name)) => match known_field(name) {
                Some(_) if ty.is_some() => {
                    self.error(format!("{path}.type"), format!("{name:?} is a known field; its type is fixed"))
                }
                Some(f) => return Some(LineIdField::known(f)),
                None => {
                    let names: Vec<_> = KNOWN_FIELDS.iter().map(|f| f.name).collect();
                    self.error(
                        format!("{path}.field"),
                        format!("unknown LineId field {name:?}; use one of {} or a number with type", names.join(", ")),
                    );
                }
            },
            Some(FieldRef::Number(n)) if !(1..=0x1fff_ffff).contains(n) => {
                self.error(format!("{path}.field"), format!("found {n}, field numbers are 1..=536870911"));
            }
            Some(FieldRef::Number(n)) => match ty.map(|t| (t, FieldType::parse(t.trim_start_matches("repeated ")))) {
                None => self.error(
                    format!("{path}.type"),
                    "missing; a field given by number needs its type (\"int64\", \"repeated int32\")",
                ),
                Some((t, None)) => self
                    .error(format!("{path}.type"), format!("unknown type {t:?}, expected one of {}", FieldType::NAMES)),
                Some((t, Some(ty))) => {
                    let repeated = t.starts_with("repeated ");
                    let known =
                        KNOWN_FIELDS.iter().find(|f| f.number == *n as u32 && f.ty == ty && f.repeated == repeated);
                    return Some(
                        known.map_or(LineIdField { number: *n as u32, ty, default: 0.0, repeated }, LineIdField::known),
                    );
                }
            },
        }
        None
    }

    /// feature_utils.py: set ops on repeated integer fields only, string ops
    /// on string fields only.
    pub(super) fn value_op_fits(&mut self, path: &str, field: LineIdField, op: ValueOp) {
        let class = field.ty.class();
        let msg = if field.repeated && !op.is_set() {
            Some("repeated fields take all, any or diff")
        } else if op.is_set() && !(field.repeated && class == ValueClass::Integer) {
            Some("all, any and diff are for repeated integer fields")
        } else if matches!(op, ValueOp::StartsWith | ValueOp::EndsWith) && class != ValueClass::Bytes {
            Some("startswith and endswith are for string fields")
        } else {
            None
        };
        if let Some(m) = msg {
            self.error(format!("{path}.op"), m);
        }
    }

    pub(super) fn operand(&mut self, path: &str, field: LineIdField, op: ValueOp, v: &Value) -> Option<Operand> {
        let list =
            matches!(op, ValueOp::Between | ValueOp::In | ValueOp::NotIn | ValueOp::StartsWith | ValueOp::EndsWith)
                || op.is_set();
        let items: Vec<&Value> = match v {
            Value::Sequence(s) => s.iter().collect(),
            one => vec![one],
        };
        let key = format!("{path}.operand");
        if !list && items.len() != 1 {
            self.error(&key, format!("found {} values; this op compares with one", items.len()));
            return None;
        }
        if op == ValueOp::Between && items.len() != 2 {
            self.error(&key, format!("found {} values; between takes [low, high)", items.len()));
            return None;
        }
        if items.is_empty() {
            self.error(&key, "empty; give at least one value");
            return None;
        }
        let bad = |what: &str| format!("found a value that is not {what}; the field is {}", ty_name(field.ty));
        match field.ty.class() {
            ValueClass::Integer => match items.iter().map(|v| v.as_i64()).collect::<Option<Vec<_>>>() {
                Some(v) => Some(Operand::Int(v)),
                None => {
                    self.error(&key, bad("an integer"));
                    None
                }
            },
            ValueClass::Float => match items.iter().map(|v| v.as_f64()).collect::<Option<Vec<_>>>() {
                Some(v) => Some(Operand::Float(v.into_iter().map(|x| x as f32).collect())),
                None => {
                    self.error(&key, bad("a number"));
                    None
                }
            },
            ValueClass::Bytes => match items.iter().map(|v| v.as_str()).collect::<Option<Vec<_>>>() {
                Some(v) => Some(Operand::Bytes(v.into_iter().map(|s| s.as_bytes().to_vec()).collect())),
                None => {
                    self.error(&key, bad("a string"));
                    None
                }
            },
        }
    }

    /// An operand file: Monolith's serialized `FilterValues` (the default),
    /// or `lines`, one value per line.
    pub(super) fn operand_file(
        &mut self,
        path: &str,
        field: LineIdField,
        file: &str,
        format: Option<&str>,
        files: Files<'_>,
    ) -> Option<Operand> {
        let full = files.base_dir.join(file);
        let bytes = match files.source.read(&full) {
            Ok(b) => b,
            Err(e) => {
                self.error(format!("{path}.operand_file"), format!("cannot read {}: {e}", full.display()));
                return None;
            }
        };
        let parsed = match format.unwrap_or("filter_values") {
            "filter_values" => filter_values(&bytes).map_err(|e| e.to_string()).and_then(|v| typed(field, v)),
            "lines" => lines(field, &bytes),
            other => {
                self.error(
                    format!("{path}.operand_format"),
                    format!("unknown format {other:?}, expected filter_values or lines"),
                );
                return None;
            }
        };
        match parsed {
            Ok(operand) => {
                self.files.push((full, crate::ops::digest(&bytes)));
                Some(operand)
            }
            Err(m) => {
                self.error(format!("{path}.operand_file"), format!("{}: {m}", full.display()));
                None
            }
        }
    }
}

/// `FilterValues` must hold the field's class of values (the kernel's
/// "Filter values' type should be the same with field type").
fn typed(field: LineIdField, v: Operand) -> Result<Operand, String> {
    let fits = matches!(
        (field.ty.class(), &v),
        (ValueClass::Integer, Operand::Int(_))
            | (ValueClass::Float, Operand::Float(_))
            | (ValueClass::Bytes, Operand::Bytes(_))
    );
    if fits { Ok(v) } else { Err(format!("its values are not of the field's type {}", ty_name(field.ty))) }
}

fn lines(field: LineIdField, bytes: &[u8]) -> Result<Operand, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    let rows = text.lines().map(str::trim).filter(|l| !l.is_empty()).enumerate();
    let at = |i: usize, l: &str| format!("line {}: {l:?} is not a value of type {}", i + 1, ty_name(field.ty));
    Ok(match field.ty.class() {
        ValueClass::Integer => {
            Operand::Int(rows.map(|(i, l)| l.parse().map_err(|_| at(i, l))).collect::<Result<_, _>>()?)
        }
        ValueClass::Float => {
            Operand::Float(rows.map(|(i, l)| l.parse().map_err(|_| at(i, l))).collect::<Result<_, _>>()?)
        }
        ValueClass::Bytes => {
            Operand::Bytes(text.lines().filter(|l| !l.is_empty()).map(|l| l.as_bytes().to_vec()).collect())
        }
    })
}

/// add_label's config, parsed as feature_utils.py and label_utils.cc do:
/// tasks split by ';' (empty parts skipped), each `pos:neg:rate`, actions
/// split by ','; positives required, disjoint from negatives, rate in [0, 1].
pub(super) fn label_tasks(config: &str) -> Result<Vec<spec::LabelTask>, String> {
    let mut tasks = Vec::new();
    for (i, task) in config.split(';').filter(|t| !t.is_empty()).enumerate() {
        let n = i + 1;
        let parts: Vec<&str> = task.split(':').collect();
        let [pos, neg, rate] = parts[..] else {
            return Err(format!(
                "task {n} {task:?} has {} parts; write pos_actions:neg_actions:sample_rate",
                parts.len()
            ));
        };
        let (pos_actions, neg_actions) =
            (ints(pos).map_err(|m| format!("task {n}: {m}"))?, ints(neg).map_err(|m| format!("task {n}: {m}"))?);
        if pos_actions.is_empty() {
            return Err(format!("task {n} {task:?} has no positive actions"));
        }
        if let Some(a) = pos_actions.iter().find(|a| neg_actions.contains(a)) {
            return Err(format!("task {n}: action {a} is both positive and negative"));
        }
        let sample_rate: f32 =
            rate.trim().parse().map_err(|_| format!("task {n}: sample rate {rate:?} is not a number"))?;
        if !(0.0..=1.0).contains(&sample_rate) {
            return Err(format!("task {n}: sample rate {sample_rate} is outside [0, 1]"));
        }
        tasks.push(spec::LabelTask { pos_actions, neg_actions, sample_rate });
    }
    if tasks.is_empty() {
        return Err("no task; write pos_actions:neg_actions:sample_rate per task (\"1,2:3:1.0;4::0.5\")".into());
    }
    Ok(tasks)
}

/// Comma-separated integers, empty parts skipped.
pub(super) fn ints(s: &str) -> Result<Vec<i32>, String> {
    s.split(',')
        .filter(|p| !p.trim().is_empty())
        .map(|p| p.trim().parse().map_err(|_| format!("{p:?} is not an action (an integer)")))
        .collect()
}

pub(super) fn ty_name(ty: FieldType) -> String {
    format!("{ty:?}").to_lowercase()
}

/// Decodes Monolith's `FilterValues` (`idl/matrix/proto/example.proto`):
/// oneof float_list = 1, int64_list = 2, bytes_list = 3, each `{value = 1}`
/// packed or not; the last list given wins, as for a oneof.
fn filter_values(bytes: &[u8]) -> Result<Operand, crate::wire::DecodeError> {
    use crate::wire::{Reader, WireType, for_each_bytes, for_each_fixed32, for_each_varint};
    let mut r = Reader::new(bytes, 0);
    let mut out = Operand::Int(Vec::new());
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        if !(1..=3).contains(&field) || wire != WireType::Len {
            r.skip(field, wire)?;
            continue;
        }
        let (list, base) = r.len_delimited()?;
        out = match field {
            1 => {
                let mut v = Vec::new();
                // A packed run holds every float of the list, not one: the
                // kernels insert the whole float_list into their operand set
                // (value_filter_by_feature.cc 122-123, value_filter_by_line_id.cc
                // 123-124).
                for_each_fixed32(list, base, |run| v.extend(run.chunks_exact(4).map(crate::view::le_f32)))?;
                Operand::Float(v)
            }
            2 => {
                let mut v = Vec::new();
                for_each_varint(list, base, |x| v.push(x as i64))?;
                Operand::Int(v)
            }
            _ => {
                let mut v = Vec::new();
                for_each_bytes(list, base, |b, _| {
                    v.push(b.to_vec());
                    Ok(())
                })?;
                Operand::Bytes(v)
            }
        };
    }
    Ok(out)
}
