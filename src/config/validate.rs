//! Stage two of config parsing: raw entries checked kind by kind and compiled
//! into a [`Plan`]. Every problem is collected with its path before failing.

use std::path::Path;

use rustc_hash::FxHashMap;

use super::plan::{Compat, Limits, LineIdField, Op, Output, Plan, Source};
use super::raw::{FieldRef, RawFeature, RawModel};
use super::{ConfigError, ConfigErrors};
use crate::proto::fex_v1::DataType;
use crate::view::{FieldType, KNOWN_FIELDS, ValueClass, known_field};

const KINDS: &str = "sparse, dense, string, sequence, line_id, label, instance_weight, action_label";
const RESERVED: &[(&str, &str)] =
    &[("__LABEL__", "label"), ("__LINE_ID__", "line_id"), ("instance_weight", "instance_weight")];
/// Largest number of elements one dense row may declare.
const MAX_ROW_ELEMENTS: i64 = 1 << 20;

pub(super) fn plan_from_yaml(text: &str, base_dir: &Path) -> Result<Plan, ConfigErrors> {
    let raw: RawModel = serde_norway::from_str(text).map_err(|e| ConfigErrors::one("model", e.to_string()))?;
    let mut cx = Checker { errors: Vec::new(), compat: Compat::Native, files: Vec::new() };
    cx.compat = match raw.compat.as_deref() {
        None | Some("native") => Compat::Native,
        Some("monolith") => Compat::Monolith,
        Some(other) => {
            cx.error("compat", format!("unknown mode {other:?}, expected native or monolith"));
            Compat::Native
        }
    };
    if raw.name.trim().is_empty() {
        cx.error("name", "must not be empty");
    }
    let limits = cx.limits(&raw);
    let (kinds, op_entries) = cx.features(&raw.features);
    let mut outputs: Vec<Output> = kinds.iter().map(|k| k.0.clone()).collect();
    let sources: Vec<Option<String>> = kinds.into_iter().map(|k| k.1).collect();
    expand_positions(&mut outputs);
    super::ops::resolve(&mut cx, &mut outputs, op_entries, base_dir);
    if !cx.errors.is_empty() {
        return Err(ConfigErrors(cx.errors));
    }
    let files_digest = cx.files.iter().fold(0u64, |h, (_, d)| h.rotate_left(5) ^ d);
    let files = cx.files.into_iter().map(|(p, _)| p).collect();
    let mut plan = compile(raw, cx.compat, limits, outputs, sources);
    (plan.files, plan.files_digest) = (files, files_digest);
    Ok(plan)
}

/// A `per_position` sequence becomes one dense `[rows, width]` output per
/// position, named `<name>_<i>`; the ragged sequence itself stays internal.
fn expand_positions(outputs: &mut Vec<Output>) {
    for i in 0..outputs.len() {
        let Op::Sequence { dtype, max_len, width, .. } = outputs[i].op else { continue };
        if outputs[i].shape.first() != Some(&PER_POSITION) {
            continue;
        }
        outputs[i].shape.clear();
        outputs[i].visible = false;
        for p in 0..max_len {
            let kind = crate::ops::TransformKind::Position { index: p, width };
            let spec_shape = vec![-1, width as i64];
            let layout = crate::proto::fex_v1::Layout::Dense;
            let transform = crate::ops::Transform {
                kind,
                layout,
                dtype,
                splits: DataType::Unspecified,
                spec_shape,
                dense_shape: vec![width as i64],
            };
            outputs.push(Output {
                name: format!("{}_{p}", outputs[i].name),
                source: Source::Derived,
                op: Op::Derived(transform),
                shared_once: false,
                shape: vec![width as i64],
                inputs: vec![i],
                visible: true,
            });
        }
    }
}

/// Marks a sequence declared `per_position: true` until it is expanded.
const PER_POSITION: i64 = -7;

/// Assigns source indices (to the sample-reading outputs, which come first)
/// and builds the name index.
fn compile(raw: RawModel, compat: Compat, limits: Limits, outputs: Vec<Output>, sources: Vec<Option<String>>) -> Plan {
    let mut source_names: Vec<String> = Vec::new();
    let mut index: FxHashMap<Box<[u8]>, usize> = FxHashMap::default();
    let mut compiled = Vec::with_capacity(outputs.len());
    let sources = sources.into_iter().chain(std::iter::repeat(None));
    for (mut out, source) in outputs.into_iter().zip(sources) {
        if let Some(name) = source {
            let next = source_names.len();
            let i = *index.entry(name.as_bytes().into()).or_insert(next);
            if i == next {
                source_names.push(name);
            }
            out.source = Source::Feature(i);
        }
        compiled.push(out);
    }
    let needs = |s: Source| compiled.iter().any(|o: &Output| o.source == s);
    let meta_fallback = compiled.iter().any(|o| matches!(o.op, Op::Dense { meta: Some(_), .. }));
    // The reserved lists become ordinary sources, so gathering treats every
    // list alike; only the ops that read them know they are special.
    let mut reserve = |needed: bool, name: &str| {
        needed.then(|| {
            index.insert(name.as_bytes().into(), source_names.len());
            source_names.push(name.to_string());
            source_names.len() - 1
        })
    };
    let line_id_source = reserve(needs(Source::LineId) || meta_fallback, "__LINE_ID__");
    let label_source = reserve(needs(Source::Label), "__LABEL__");
    let weight_source = reserve(needs(Source::Weight), "instance_weight");
    Plan {
        name: raw.name,
        version: raw.version.unwrap_or_default(),
        compat,
        limits,
        outputs: compiled,
        source_names,
        index,
        line_id_source,
        label_source,
        weight_source,
        files: Vec::new(),
        files_digest: 0,
    }
}

pub(super) struct Checker {
    pub(super) errors: Vec<ConfigError>,
    compat: Compat,
    /// Files referenced (vocabularies) with their digests.
    pub(super) files: Vec<(std::path::PathBuf, u64)>,
}

impl Checker {
    pub(super) fn error(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.errors.push(ConfigError { path: path.into(), message: message.into() });
    }

    fn limits(&mut self, raw: &RawModel) -> Limits {
        let mut limits = Limits::default();
        let Some(l) = &raw.limits else { return limits };
        if let Some(n) = l.max_batch_size {
            if n == 0 || n > 1 << 24 {
                self.error("limits.max_batch_size", format!("found {n}, allowed 1..=16777216"));
            }
            limits.max_batch_size = n as usize;
        }
        if let Some(n) = l.max_output_bytes {
            if n == 0 {
                self.error("limits.max_output_bytes", "must be positive");
            }
            limits.max_output_bytes = usize::try_from(n).unwrap_or(usize::MAX);
        }
        limits
    }

    /// Sample-reading entries compiled (with their source names), and the
    /// `op:` entries left for `ops::resolve`.
    #[allow(clippy::type_complexity)]
    fn features(
        &mut self,
        values: &[serde_norway::Value],
    ) -> (Vec<(Output, Option<String>)>, Vec<(String, RawFeature)>) {
        let mut out = Vec::new();
        let mut ops = Vec::new();
        let mut seen: FxHashMap<String, String> = FxHashMap::default();
        if values.is_empty() {
            self.error("features", "a model needs at least one feature");
        }
        for (i, value) in values.iter().enumerate() {
            let raw: RawFeature = match serde_norway::from_value(value.clone()) {
                Ok(raw) => raw,
                Err(e) => {
                    self.error(entry_path(i, value), e.to_string());
                    continue;
                }
            };
            let path = format!("features.{}", raw.name);
            if raw.name.is_empty() {
                self.error(format!("features[{i}].name"), "must not be empty");
                continue;
            }
            if let Some(first) = seen.insert(raw.name.clone(), format!("features[{i}]")) {
                self.error(&path, format!("duplicate name {:?}, also defined at {first}", raw.name));
                continue;
            }
            if raw.op.is_some() {
                ops.push((path, raw));
            } else if let Some(compiled) = self.feature(&path, &raw) {
                out.push(compiled);
            }
        }
        (out, ops)
    }

    /// Checks one entry; returns the output and the sample feature it reads.
    fn feature(&mut self, path: &str, raw: &RawFeature) -> Option<(Output, Option<String>)> {
        let allowed: &[&str] = match raw.kind.as_str() {
            "sparse" => &["source", "dtype", "splits", "shared"],
            "dense" => &["source", "dtype", "shape", "default", "shared"],
            "string" => &["source", "shared"],
            "sequence" => &["source", "dtype", "max_len", "width", "splits", "shared", "per_position"],
            "line_id" => &["field", "type", "shape"],
            "label" => &["shape", "default"],
            "instance_weight" => &[],
            "action_label" => &["tasks"],
            "" => {
                let msg = format!("missing; give a kind ({KINDS}) or an op ({})", super::ops::OPS);
                self.error(format!("{path}.kind"), msg);
                return None;
            }
            other => {
                self.error(format!("{path}.kind"), format!("unknown feature kind {other:?}, expected one of {KINDS}"));
                return None;
            }
        };
        let before = self.errors.len();
        for key in raw.present_keys() {
            if !allowed.contains(&key) {
                self.error(format!("{path}.{key}"), format!("not allowed for kind {}", raw.kind));
            }
        }
        let source = self.source(path, raw);
        let shared_once = self.shared(path, raw);
        let (op, shape, source) = match raw.kind.as_str() {
            "sparse" => (self.sparse(path, raw), vec![], Some(source)),
            "dense" => {
                let (op, shape) = self.dense(path, raw, &source);
                (op, shape, Some(source))
            }
            "string" => (Op::String, vec![], Some(source)),
            "sequence" => (self.sequence(path, raw), vec![], Some(source)),
            "line_id" => {
                let (op, shape) = self.line_id(path, raw);
                (op, shape, None)
            }
            "label" => {
                let (dim, shape) = self.shape(path, raw.shape.as_deref());
                (Op::Label { dim, default: self.default(path, raw) }, shape, None)
            }
            "action_label" => {
                let tasks = self.tasks(path, raw);
                let shape = vec![tasks.len() as i64];
                (Op::ActionLabel { tasks }, shape, None)
            }
            _ => (Op::Weight, vec![], None),
        };
        if self.errors.len() > before {
            return None;
        }
        let fixed = match &op {
            Op::LineId { .. } | Op::ActionLabel { .. } => Source::LineId,
            Op::Label { .. } => Source::Label,
            Op::Weight => Source::Weight,
            _ => Source::Feature(usize::MAX),
        };
        let shape = if raw.per_position == Some(true) { vec![PER_POSITION] } else { shape };
        let visible = raw.output.unwrap_or(true);
        Some((
            Output { name: raw.name.clone(), source: fixed, op, shared_once, shape, inputs: vec![], visible },
            source,
        ))
    }

    fn source(&mut self, path: &str, raw: &RawFeature) -> String {
        let source = raw.source.clone().unwrap_or_else(|| raw.name.clone());
        let takes_source = matches!(raw.kind.as_str(), "sparse" | "dense" | "string" | "sequence");
        if let Some((_, kind)) = RESERVED.iter().find(|(name, _)| *name == source).filter(|_| takes_source) {
            let key = if raw.source.is_some() { "source" } else { "name" };
            self.error(format!("{path}.{key}"), format!("{source:?} is reserved; declare it with kind: {kind}"));
        }
        source
    }

    fn shared(&mut self, path: &str, raw: &RawFeature) -> bool {
        match raw.shared.as_deref() {
            None | Some("broadcast") => false,
            Some("once") => true,
            Some(other) => {
                self.error(format!("{path}.shared"), format!("found {other:?}, expected broadcast or once"));
                false
            }
        }
    }

    pub(super) fn dtype(&mut self, path: &str, raw: &RawFeature, allowed: &[DataType], default: DataType) -> DataType {
        let Some(name) = raw.dtype.as_deref() else { return default };
        match allowed.iter().find(|d| dtype_name(**d) == name) {
            Some(d) => *d,
            None => {
                let names: Vec<_> = allowed.iter().map(|d| dtype_name(*d)).collect();
                self.error(format!("{path}.dtype"), format!("found {name:?}, expected one of {}", names.join(", ")));
                default
            }
        }
    }

    pub(super) fn splits(&mut self, path: &str, raw: &RawFeature) -> DataType {
        match raw.splits.as_deref() {
            None | Some("i64") => DataType::I64,
            Some("i32") => DataType::I32,
            Some(other) => {
                self.error(format!("{path}.splits"), format!("found {other:?}, expected i32 or i64"));
                DataType::I64
            }
        }
    }

    fn sparse(&mut self, path: &str, raw: &RawFeature) -> Op {
        let values = self.dtype(path, raw, &[DataType::I64, DataType::U64], DataType::I64);
        Op::Sparse { values, splits: self.splits(path, raw) }
    }

    fn dense(&mut self, path: &str, raw: &RawFeature, source: &str) -> (Op, Vec<i64>) {
        let dtype = self.dtype(path, raw, &[DataType::F32, DataType::F64, DataType::I64], DataType::F32);
        if dtype == DataType::F64 && self.compat == Compat::Monolith {
            self.error(format!("{path}.dtype"), "f64 dense features abort Monolith; use f32 or compat: native");
        }
        let (dim, shape) = self.shape(path, raw.shape.as_deref());
        let meta = source.strip_prefix("__meta__").and_then(known_field).map(LineIdField::known);
        (Op::Dense { dtype, dim, default: self.default(path, raw), meta }, shape)
    }

    fn default(&mut self, path: &str, raw: &RawFeature) -> f64 {
        match raw.default {
            Some(_) if self.compat == Compat::Monolith => {
                self.error(format!("{path}.default"), "explicit defaults need compat: native (Monolith fills 0)");
                0.0
            }
            Some(v) if !v.is_finite() => {
                self.error(format!("{path}.default"), format!("found {v}, expected a finite number"));
                0.0
            }
            Some(v) => v,
            None => 0.0,
        }
    }

    fn shape(&mut self, path: &str, shape: Option<&[i64]>) -> (usize, Vec<i64>) {
        let shape = shape.map(<[i64]>::to_vec).unwrap_or_else(|| vec![1]);
        let product = shape.iter().try_fold(1i64, |acc, &d| if d >= 1 { acc.checked_mul(d) } else { None });
        match product {
            Some(n) if !shape.is_empty() && n <= MAX_ROW_ELEMENTS => (n as usize, shape),
            _ => {
                let msg = format!(
                    "found {shape:?}, expected positive dimensions with at most {MAX_ROW_ELEMENTS} elements per row"
                );
                self.error(format!("{path}.shape"), msg);
                (1, vec![1])
            }
        }
    }

    fn sequence(&mut self, path: &str, raw: &RawFeature) -> Op {
        let allowed = [DataType::I64, DataType::U64, DataType::F32, DataType::F64];
        let dtype = self.dtype(path, raw, &allowed, DataType::I64);
        let max_len = self.bounded(path, "max_len", raw.max_len, None, 65_536);
        let width = self.bounded(path, "width", raw.width, Some(1), 4_096);
        Op::Sequence { dtype, max_len, width, splits: self.splits(path, raw) }
    }

    /// A required integer parameter within `range`.
    pub(super) fn required_u64(
        &mut self,
        path: &str,
        key: &str,
        value: Option<u64>,
        range: std::ops::RangeInclusive<u64>,
    ) -> u64 {
        match value {
            Some(v) if range.contains(&v) => v,
            Some(v) => {
                self.error(format!("{path}.{key}"), format!("found {v}, allowed {range:?}"));
                *range.start()
            }
            None => {
                self.error(format!("{path}.{key}"), "missing; required for this op");
                *range.start()
            }
        }
    }

    fn tasks(&mut self, path: &str, raw: &RawFeature) -> Vec<super::plan::Task> {
        let tasks = raw.tasks.clone().unwrap_or_default();
        if tasks.is_empty() {
            self.error(format!("{path}.tasks"), "missing; list tasks as {pos: [actions], neg: [actions]}");
        }
        let mut out = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            let rate = t.sample_rate.unwrap_or(1.0);
            if t.pos.is_empty() {
                self.error(format!("{path}.tasks[{i}].pos"), "must list at least one action");
            }
            if !(rate > 0.0 && rate <= 1.0) {
                self.error(format!("{path}.tasks[{i}].sample_rate"), format!("found {rate}, allowed (0, 1]"));
            }
            out.push(super::plan::Task { pos: t.pos, neg: t.neg, sample_rate: rate });
        }
        out
    }

    fn bounded(&mut self, path: &str, key: &str, value: Option<i64>, default: Option<i64>, max: i64) -> usize {
        match value.or(default) {
            Some(v) if (1..=max).contains(&v) => v as usize,
            Some(v) => {
                self.error(format!("{path}.{key}"), format!("found {v}, allowed 1..={max}"));
                1
            }
            None => {
                self.error(format!("{path}.{key}"), "missing; required for this kind");
                1
            }
        }
    }

    fn line_id(&mut self, path: &str, raw: &RawFeature) -> (Op, Vec<i64>) {
        let field = self.line_id_field(path, raw);
        let (dim, shape) = self.shape(path, raw.shape.as_deref());
        if field.ty.class() == ValueClass::Bytes && dim != 1 {
            self.error(format!("{path}.shape"), "string LineId fields take shape [1]");
        }
        if self.compat == Compat::Monolith && matches!(field.ty, FieldType::Bool | FieldType::Enum) {
            self.error(format!("{path}.field"), "Monolith rejects bool and enum LineId fields; use compat: native");
        }
        (Op::LineId { field, dim }, shape)
    }

    fn line_id_field(&mut self, path: &str, raw: &RawFeature) -> LineIdField {
        let fallback = LineIdField { number: 1, ty: FieldType::Int64, default: 0.0, repeated: false };
        let ty = raw.field_type.as_deref().map(|t| (t, FieldType::parse(t)));
        match (&raw.field, ty) {
            (None, _) => self.error(format!("{path}.field"), "missing; name a LineId field or give its number"),
            (Some(FieldRef::Name(name)), ty) => match known_field(name) {
                Some(_) if ty.is_some() => {
                    self.error(format!("{path}.type"), format!("{name:?} is a known field; its type is fixed"))
                }
                Some(f) => return LineIdField::known(f),
                None => {
                    let names: Vec<_> = KNOWN_FIELDS.iter().map(|f| f.name).collect();
                    let msg =
                        format!("unknown LineId field {name:?}; use one of {} or a number with type", names.join(", "));
                    self.error(format!("{path}.field"), msg);
                }
            },
            (Some(FieldRef::Number(n)), _) if !(1..=0x1fff_ffff).contains(n) => {
                self.error(format!("{path}.field"), format!("found {n}, field numbers are 1..=536870911"))
            }
            (Some(FieldRef::Number(_)), None) => {
                self.error(format!("{path}.type"), "missing; a field given by number needs its type")
            }
            (Some(FieldRef::Number(_)), Some((t, None))) => {
                self.error(format!("{path}.type"), format!("unknown type {t:?}, expected one of {}", FieldType::NAMES))
            }
            (Some(FieldRef::Number(n)), Some((_, Some(ty)))) => {
                if let Some(f) = KNOWN_FIELDS.iter().find(|f| f.number == *n as u32 && f.ty == ty) {
                    return LineIdField::known(f);
                }
                // An undeclared field is read as repeated when more than one
                // value per row is asked for.
                let repeated = raw.shape.as_deref().is_some_and(|s| s.iter().product::<i64>() > 1);
                return LineIdField { number: *n as u32, ty, default: 0.0, repeated };
            }
        }
        fallback
    }
}

fn entry_path(i: usize, value: &serde_norway::Value) -> String {
    match value.get("name").and_then(|n| n.as_str()) {
        Some(name) => format!("features.{name}"),
        None => format!("features[{i}]"),
    }
}

/// The config spelling of a dtype.
pub fn dtype_name(d: DataType) -> &'static str {
    match d {
        DataType::F32 => "f32",
        DataType::F64 => "f64",
        DataType::I32 => "i32",
        DataType::I64 => "i64",
        DataType::U64 => "u64",
        DataType::Bytes => "bytes",
        DataType::Unspecified => "unspecified",
    }
}
