//! Property tests for extraction: random Monolith samples go through fex and
//! through a deliberately simple reference written here over the prost-decoded
//! structs, and the tensors must match byte for byte. Also checked: truncated
//! and corrupted input never panics (extraction and every view), and every
//! legal wire layout (unpacked or split runs, fields in reverse order, merged
//! occurrences, unknown fields) extracts exactly like prost's canonical bytes.

use std::cell::Cell;
use std::collections::{HashMap, HashSet};

use fex::proto::matrix::LineId;
use fex::proto::monolith_pb as pb;
use fex::proto::parser_pb;
use fex::view::{
    ExampleBatchView, ExampleView, FeatureView, FieldType, InstanceView, KNOWN_FIELDS, LineIdView, labels_of,
};
use fex::wire::{for_each_bytes, for_each_fixed32, for_each_fixed64, for_each_varint};
use fex::{DataType, Layout, Plan, Tensor};
use pb::feature::Type as T;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::strategy::Union;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use prost::Message;
use serde::Deserialize;

// ───────────────────────────── test models ─────────────────────────────

/// Native mode: explicit defaults, f64 outputs, i32 splits, u64 ids, `shared: once`,
/// a `__meta__` fallback, LineId fields by name and by number.
const NATIVE_YAML: &str = r#"
name: prop_native
compat: native
features:
  - {name: user_id, kind: sparse, shared: once}
  - {name: item_id, kind: sparse}
  - {name: item_id_u64, kind: sparse, source: item_id, dtype: u64, splits: i32}
  - {name: ctx_hour, kind: sparse}
  - {name: ctr, kind: dense, dtype: f32, shape: [1], default: 0.5}
  - {name: emb, kind: dense, dtype: f32, shape: [2, 2], default: -1}
  - {name: user_emb, kind: dense, dtype: f32, shape: [3], shared: once}
  - {name: counts, kind: dense, dtype: i64, shape: [2], default: 7}
  - {name: price, kind: dense, dtype: f64, shape: [2], default: 0.25}
  - {name: meta_actions, kind: dense, source: __meta__actions, dtype: f32, shape: [3], default: 2}
  - {name: title, kind: string}
  - {name: user_name, kind: string, shared: once}
  - {name: click_seq, kind: sequence, dtype: i64, max_len: 3, width: 2}
  - {name: id_seq, kind: sequence, dtype: u64, max_len: 2, splits: i32, shared: once}
  - {name: watch_seq, kind: sequence, dtype: f32, max_len: 2, width: 3}
  - {name: price_seq, kind: sequence, dtype: f64, max_len: 4, width: 1}
  - {name: req_time, kind: line_id, field: req_time}
  - {name: sample_rate, kind: line_id, field: sample_rate}
  - {name: actions, kind: line_id, field: actions, shape: [3]}
  - {name: uid, kind: line_id, field: uid}
  - {name: req_id, kind: line_id, field: req_id}
  - {name: rank, kind: line_id, field: 145, type: int32}
  - {name: chnid_zigzag, kind: line_id, field: 19, type: sint64, shape: [2]}
  - {name: is_draw, kind: line_id, field: is_draw}
  - {name: label, kind: label, shape: [2], default: -1}
  - {name: instance_weight, kind: instance_weight}
"#;

/// Monolith mode: no defaults, no f64, the FLT_MIN and abort rules.
const MONOLITH_YAML: &str = r#"
name: prop_monolith
compat: monolith
features:
  - {name: user_id, kind: sparse, shared: once}
  - {name: item_id, kind: sparse}
  - {name: ctx_hour, kind: sparse, splits: i32}
  - {name: ctr, kind: dense, dtype: f32, shape: [1]}
  - {name: emb, kind: dense, dtype: f32, shape: [3]}
  - {name: user_emb, kind: dense, dtype: f32, shape: [2], shared: once}
  - {name: counts, kind: dense, dtype: i64, shape: [1]}
  - {name: meta_actions, kind: dense, source: __meta__actions, dtype: i64, shape: [3]}
  - {name: title, kind: string}
  - {name: click_seq, kind: sequence, dtype: i64, max_len: 3, width: 2}
  - {name: watch_seq, kind: sequence, dtype: f32, max_len: 2, width: 2, shared: once}
  - {name: req_time, kind: line_id, field: req_time}
  - {name: sample_rate, kind: line_id, field: sample_rate}
  - {name: actions, kind: line_id, field: actions, shape: [3]}
  - {name: req_id, kind: line_id, field: req_id}
  - {name: rank, kind: line_id, field: 145, type: int32}
  - {name: item_id_lid, kind: line_id, field: item_id}
  - {name: uid_wide, kind: line_id, field: uid, shape: [2]}
  - {name: label, kind: label, shape: [2]}
  - {name: instance_weight, kind: instance_weight}
"#;

const LINE_ID: &str = "__LINE_ID__";
const LABEL: &str = "__LABEL__";
const WEIGHT: &str = "instance_weight";
const RESERVED: [&str; 3] = [LINE_ID, LABEL, WEIGHT];

fn plan(yaml: &str) -> Plan {
    Plan::from_yaml(yaml).unwrap_or_else(|e| panic!("test model is valid: {e}"))
}

// ─────────────── the model as the reference reads it (from YAML) ───────────────

#[derive(Deserialize)]
struct YamlModel {
    compat: Option<String>,
    features: Vec<YamlFeature>,
}

#[derive(Deserialize)]
struct YamlFeature {
    name: String,
    kind: String,
    source: Option<String>,
    dtype: Option<String>,
    shape: Option<Vec<i64>>,
    default: Option<f64>,
    splits: Option<String>,
    shared: Option<String>,
    max_len: Option<usize>,
    width: Option<usize>,
    field: Option<YamlField>,
    #[serde(rename = "type")]
    ty: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum YamlField {
    Number(u32),
    Name(String),
}

struct RefModel {
    monolith: bool,
    outputs: Vec<RefOutput>,
}

struct RefOutput {
    name: String,
    once: bool,
    op: RefOp,
    /// Monolith's kernel shapes weights and strings `[B, 1]`.
    monolith: bool,
}

enum RefOp {
    Sparse { source: String, dtype: DataType, splits: DataType },
    Dense { source: String, dtype: DataType, shape: Vec<i64>, default: f64, meta: Option<LidField> },
    Str { source: String },
    Seq { source: String, dtype: DataType, max_len: usize, width: usize, splits: DataType },
    LineId { field: LidField, shape: Vec<i64> },
    Label { shape: Vec<i64>, default: f64 },
    Weight,
}

/// What a sample feature should hold, for the generators.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Want {
    Fids,
    Floats,
    Ints,
    Bytes,
    SeqInts,
    SeqFloats,
    LineId,
    Labels,
    Weight,
}

fn parse_dtype(s: Option<&str>, default: DataType) -> DataType {
    match s {
        None => default,
        Some("f32") => DataType::F32,
        Some("f64") => DataType::F64,
        Some("i32") => DataType::I32,
        Some("i64") => DataType::I64,
        Some("u64") => DataType::U64,
        Some(other) => panic!("unknown dtype {other}"),
    }
}

fn dim(shape: &[i64]) -> usize {
    shape.iter().product::<i64>() as usize
}

impl RefModel {
    fn parse(yaml: &str) -> Self {
        let m: YamlModel = serde_norway::from_str(yaml).expect("test model parses");
        let monolith = m.compat.as_deref() == Some("monolith");
        let outputs = m.features.into_iter().map(|f| RefOutput::from_yaml(f, monolith)).collect();
        Self { monolith, outputs }
    }

    /// Every sample feature the model reads (reserved ones included), in order.
    fn sources(&self) -> Vec<(String, Want)> {
        let mut out: Vec<(String, Want)> = Vec::new();
        let mut add = |name: &str, want| {
            if !out.iter().any(|(n, _)| n == name) {
                out.push((name.to_string(), want));
            }
        };
        for o in &self.outputs {
            match &o.op {
                RefOp::Sparse { source, .. } => add(source, Want::Fids),
                RefOp::Dense { source, dtype, meta, .. } => {
                    add(source, if *dtype == DataType::I64 { Want::Ints } else { Want::Floats });
                    if meta.is_some() {
                        add(LINE_ID, Want::LineId);
                    }
                }
                RefOp::Str { source } => add(source, Want::Bytes),
                RefOp::Seq { source, dtype, .. } => {
                    let ints = matches!(dtype, DataType::I64 | DataType::U64);
                    add(source, if ints { Want::SeqInts } else { Want::SeqFloats })
                }
                RefOp::LineId { .. } => add(LINE_ID, Want::LineId),
                RefOp::Label { .. } => add(LABEL, Want::Labels),
                RefOp::Weight => add(WEIGHT, Want::Weight),
            }
        }
        out
    }
}

impl RefOutput {
    fn from_yaml(f: YamlFeature, monolith: bool) -> Self {
        let source = f.source.clone().unwrap_or_else(|| f.name.clone());
        let shape = f.shape.clone().unwrap_or_else(|| vec![1]);
        let splits = parse_dtype(f.splits.as_deref(), DataType::I64);
        let default = f.default.unwrap_or(0.0);
        let op = match f.kind.as_str() {
            "sparse" => RefOp::Sparse { dtype: parse_dtype(f.dtype.as_deref(), DataType::I64), splits, source },
            "dense" => RefOp::Dense {
                // Monolith has no `__meta__` fallback to the LineId.
                meta: source.strip_prefix("__meta__").and_then(known_lid_field).filter(|_| !monolith),
                dtype: parse_dtype(f.dtype.as_deref(), DataType::F32),
                shape,
                default,
                source,
            },
            "string" => RefOp::Str { source },
            "sequence" => RefOp::Seq {
                dtype: parse_dtype(f.dtype.as_deref(), DataType::I64),
                max_len: f.max_len.expect("sequence max_len"),
                width: f.width.unwrap_or(1),
                splits,
                source,
            },
            "line_id" => {
                let field = match f.field.as_ref().expect("line_id field") {
                    YamlField::Name(name) => known_lid_field(name).expect("known LineId field"),
                    YamlField::Number(n) => lid_field_by_number(*n, f.ty.as_deref().expect("type"), &shape),
                };
                RefOp::LineId { field, shape }
            }
            "label" => RefOp::Label { shape, default },
            "instance_weight" => RefOp::Weight,
            other => panic!("unknown kind {other}"),
        };
        Self { name: f.name, once: f.shared.as_deref() == Some("once"), op, monolith }
    }

    /// The sample feature whose list decides sharing.
    fn source(&self) -> &str {
        match &self.op {
            RefOp::Sparse { source, .. }
            | RefOp::Dense { source, .. }
            | RefOp::Str { source }
            | RefOp::Seq { source, .. } => source,
            RefOp::LineId { .. } => LINE_ID,
            RefOp::Label { .. } => LABEL,
            RefOp::Weight => WEIGHT,
        }
    }

    /// Layout, value dtype and splits dtype of the tensor.
    fn layout(&self) -> (Layout, DataType, DataType) {
        match &self.op {
            RefOp::Sparse { dtype, splits, .. } | RefOp::Seq { dtype, splits, .. } => (Layout::Ragged, *dtype, *splits),
            RefOp::Dense { dtype, .. } => (Layout::Dense, *dtype, DataType::Unspecified),
            RefOp::Str { .. } => (Layout::Strings, DataType::Bytes, DataType::I64),
            RefOp::LineId { field, .. } => match field.class {
                Class::Int => (Layout::Dense, DataType::I64, DataType::Unspecified),
                Class::Float => (Layout::Dense, DataType::F32, DataType::Unspecified),
                Class::Bytes => (Layout::Strings, DataType::Bytes, DataType::I64),
            },
            RefOp::Label { .. } | RefOp::Weight => (Layout::Dense, DataType::F32, DataType::Unspecified),
        }
    }

    /// The shape after the row dimension.
    fn inner_shape(&self) -> Vec<i64> {
        match &self.op {
            RefOp::Sparse { .. } => vec![-1],
            RefOp::Seq { width, .. } => vec![-1, *width as i64],
            RefOp::Dense { shape, .. } | RefOp::Label { shape, .. } => shape.clone(),
            RefOp::LineId { field, shape } if field.class != Class::Bytes => shape.clone(),
            _ if self.monolith => vec![1],
            _ => vec![],
        }
    }
}

// ─────────────── LineId fields, read from the prost struct ───────────────

#[derive(Debug, Clone, Copy, PartialEq)]
enum Class {
    Int,
    Float,
    Bytes,
}

#[derive(Debug, Clone, PartialEq)]
enum LidVal {
    Int(i64),
    Float(f32),
    Bytes(Vec<u8>),
}

/// A LineId field: what it becomes, whether repeated, its proto2 default, and
/// how to read its values off a decoded LineId.
#[derive(Debug, Clone, Copy)]
struct LidField {
    class: Class,
    repeated: bool,
    default: f64,
    read: fn(&LineId) -> Vec<LidVal>,
}

fn singular(class: Class, read: fn(&LineId) -> Vec<LidVal>) -> LidField {
    LidField { class, repeated: false, default: 0.0, read }
}

fn known_lid_field(name: &str) -> Option<LidField> {
    use LidVal::{Bytes, Float, Int};
    Some(match name {
        "uid" => singular(Class::Int, |l| l.uid.map(|v| Int(v as i64)).into_iter().collect()),
        "req_time" => singular(Class::Int, |l| l.req_time.map(Int).into_iter().collect()),
        "item_id" => singular(Class::Int, |l| l.item_id.map(|v| Int(v as i64)).into_iter().collect()),
        "req_id" => singular(Class::Bytes, |l| l.req_id.clone().map(|s| Bytes(s.into_bytes())).into_iter().collect()),
        "actions" => LidField {
            repeated: true,
            ..singular(Class::Int, |l| l.actions.iter().map(|&a| Int(i64::from(a))).collect())
        },
        "chnid" => singular(Class::Int, |l| l.chnid.map(Int).into_iter().collect()),
        "sample_rate" => {
            LidField { default: 1.0, ..singular(Class::Float, |l| l.sample_rate.map(Float).into_iter().collect()) }
        }
        "is_draw" => singular(Class::Int, |l| l.is_draw.map(|b| Int(i64::from(b))).into_iter().collect()),
        "rank" => singular(Class::Int, |l| l.rank.map(|v| Int(i64::from(v))).into_iter().collect()),
        _ => return None,
    })
}

/// A field named by number and type: a known field when both match, else the
/// raw field reinterpreted as the declared type (repeated when shape > 1).
fn lid_field_by_number(number: u32, ty: &str, shape: &[i64]) -> LidField {
    match (number, ty) {
        (145, "int32") => known_lid_field("rank").unwrap(),
        // chnid is an int64 varint; read as sint64 it is zigzag-decoded.
        (19, "sint64") => LidField {
            class: Class::Int,
            repeated: dim(shape) > 1,
            default: 0.0,
            read: |l| l.chnid.map(|v| LidVal::Int(unzigzag(v as u64))).into_iter().collect(),
        },
        _ => panic!("the reference does not model LineId field {number} as {ty}"),
    }
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

fn v1_to_v2(fid: u64) -> u64 {
    (fid & ((1 << 48) - 1)) | ((fid >> 54) << 48)
}

// ───────────────────────────── the reference ─────────────────────────────

/// A number on its way into a tensor of some dtype.
#[derive(Debug, Clone, Copy)]
enum Num {
    I(i64),
    F32(f32),
    F64(f64),
}

fn put(buf: &mut Vec<u8>, dtype: DataType, v: Num) {
    match (dtype, v) {
        (DataType::F32, Num::I(i)) => buf.extend((i as f32).to_le_bytes()),
        (DataType::F32, Num::F32(x)) => buf.extend(x.to_le_bytes()),
        (DataType::F32, Num::F64(x)) => buf.extend((x as f32).to_le_bytes()),
        (DataType::F64, Num::I(i)) => buf.extend((i as f64).to_le_bytes()),
        (DataType::F64, Num::F32(x)) => buf.extend(f64::from(x).to_le_bytes()),
        (DataType::F64, Num::F64(x)) => buf.extend(x.to_le_bytes()),
        (_, Num::I(i)) => buf.extend(i.to_le_bytes()),
        (_, Num::F32(x)) => buf.extend((x as i64).to_le_bytes()),
        (_, Num::F64(x)) => buf.extend((x as i64).to_le_bytes()),
    }
}

/// One computed row: its bytes and, for ragged and strings layouts, its length
/// in the unit the row splits count (ids, positions or bytes).
#[derive(Debug, Clone, Default)]
struct Row {
    values: Vec<u8>,
    len: usize,
}

impl Row {
    /// `dim` values: `vals` (at most `dim`) then `pad`.
    fn dense(dtype: DataType, vals: &[Num], dim: usize, pad: f64) -> Self {
        let mut values = Vec::new();
        vals.iter().take(dim).for_each(|&v| put(&mut values, dtype, v));
        (vals.len()..dim).for_each(|_| put(&mut values, dtype, Num::F64(pad)));
        Self { values, len: dim }
    }

    fn bytes(b: &[u8]) -> Self {
        Self { values: b.to_vec(), len: b.len() }
    }
}

static EMPTY: pb::Feature = pb::Feature { r#type: None };

/// One column of an ExampleBatch: the last list of that name.
struct Col<'a> {
    features: &'a [pb::Feature],
    shared: bool,
}

enum Input<'a> {
    Batch { rows: usize, cols: HashMap<&'a str, Col<'a>> },
    Examples(&'a [pb::Example]),
}

struct Ref<'a> {
    monolith: bool,
    input: Input<'a>,
}

type RefResult = Result<Vec<Tensor>, String>;

/// The reference extraction of a decoded ExampleBatch.
fn reference_batch(model: &RefModel, batch: &pb::ExampleBatch) -> RefResult {
    if batch.batch_size < 0 {
        return Err(format!("negative batch_size {}", batch.batch_size));
    }
    let rows = batch.batch_size as usize;
    let needed: HashSet<String> = model.sources().into_iter().map(|(n, _)| n).collect();
    let mut cols = HashMap::new();
    // A repeated list: the last copy wins, and only it must fit the batch.
    for list in &batch.named_feature_list {
        if !needed.contains(&list.name) {
            continue;
        }
        // Monolith reads the reserved lists row by row, whatever their type.
        let row_by_row = model.monolith && RESERVED.contains(&list.name.as_str());
        let shared = list.r#type == 1 && !row_by_row;
        cols.insert(list.name.as_str(), (Col { features: &list.feature, shared }, row_by_row));
    }
    for (name, (col, row_by_row)) in &cols {
        let n = col.features.len();
        // A SHARED list: Monolith needs feature(0); native allows none
        // (missing) and refuses more than one.
        let ok = if col.shared {
            if model.monolith { n >= 1 } else { n <= 1 }
        } else if *row_by_row {
            n <= rows
        } else {
            n == rows
        };
        if !ok {
            return Err(format!("list {name} has {n} features for {rows} rows"));
        }
    }
    let cols = cols.into_iter().map(|(name, (col, _))| (name, col)).collect();
    Ref { monolith: model.monolith, input: Input::Batch { rows, cols } }.run(model)
}

/// The reference extraction of decoded Examples (one per row).
fn reference_examples(model: &RefModel, examples: &[pb::Example]) -> RefResult {
    Ref { monolith: model.monolith, input: Input::Examples(examples) }.run(model)
}

impl<'a> Ref<'a> {
    fn run(&self, model: &RefModel) -> RefResult {
        model.outputs.iter().map(|o| self.output(o)).collect()
    }

    fn rows(&self) -> usize {
        match &self.input {
            Input::Batch { rows, .. } => *rows,
            Input::Examples(ex) => ex.len(),
        }
    }

    fn is_batch(&self) -> bool {
        matches!(self.input, Input::Batch { .. })
    }

    fn col(&self, name: &str) -> Option<&Col<'a>> {
        match &self.input {
            Input::Batch { cols, .. } => cols.get(name),
            Input::Examples(_) => None,
        }
    }

    /// The Feature `name` holds at `row`; `None` when it is missing.
    fn feature(&self, name: &str, row: usize) -> Option<&'a pb::Feature> {
        match &self.input {
            Input::Batch { cols, .. } => {
                let col = cols.get(name)?;
                col.features.get(if col.shared { 0 } else { row })
            }
            Input::Examples(ex) => {
                let named = ex[row].named_feature.iter().rev().find(|nf| nf.name == name)?;
                Some(named.feature.as_ref().unwrap_or(&EMPTY))
            }
        }
    }

    fn kind(&self, name: &str, row: usize) -> Option<&'a T> {
        self.feature(name, row).and_then(|f| f.r#type.as_ref())
    }

    fn output(&self, out: &RefOutput) -> Result<Tensor, String> {
        let b = self.rows();
        let col = self.col(out.source());
        // A SHARED list is computed once; `shared: once` returns that one row,
        // and does so for a missing list too.
        let shared = self.is_batch() && (col.is_some_and(|c| c.shared) || (col.is_none() && out.once));
        let (compute, total) = match (shared, out.once) {
            (true, true) => (1, 1),
            (true, false) => (b.min(1), b),
            _ => (b, b),
        };
        let mut rows = (0..compute).map(|r| self.row(out, r)).collect::<Result<Vec<_>, _>>()?;
        if let RefOp::LineId { field, shape } = &out.op
            && self.monolith
            && !field.repeated
            && field.class != Class::Bytes
            && dim(shape) > 1
        {
            // Monolith writes row r's value of a singular field at flat index r.
            let size = if field.class == Class::Int { 8 } else { 4 };
            let mut flat: Vec<u8> = rows.iter().flat_map(|r| r.values[..size].to_vec()).collect();
            let width = size * dim(shape);
            flat.resize(width * rows.len(), 0);
            rows = flat.chunks(width).map(|c| Row { values: c.to_vec(), len: dim(shape) }).collect();
        }
        if total > compute {
            rows = vec![rows[0].clone(); total];
        }
        Ok(assemble(out, &rows, shared && out.once))
    }

    fn row(&self, out: &RefOutput, r: usize) -> Result<Row, String> {
        match &out.op {
            RefOp::Sparse { source, .. } => self.sparse_row(source, r),
            RefOp::Dense { source, dtype, shape, default, meta } => {
                self.dense_row(source, r, *dtype, dim(shape), *default, *meta)
            }
            RefOp::Str { source } => self.string_row(source, r),
            RefOp::Seq { source, dtype, max_len, width, .. } => self.seq_row(source, r, *dtype, *max_len, *width),
            RefOp::LineId { field, shape } => self.line_id_row(r, *field, dim(shape)),
            RefOp::Label { shape, default } => self.label_row(r, dim(shape), *default),
            RefOp::Weight => self.weight_row(r),
        }
    }

    /// fid_v1_list (converted) and fid_v2_list; other variants are an error
    /// (native) or an empty row (monolith).
    fn sparse_row(&self, source: &str, r: usize) -> Result<Row, String> {
        let ids: Vec<u64> = match self.kind(source, r) {
            None => vec![],
            Some(T::FidV1List(l)) => l.value.iter().map(|&f| v1_to_v2(f)).collect(),
            Some(T::FidV2List(l)) => l.value.clone(),
            // Monolith's FillFeature aborts on other lists, skips the rest.
            Some(t) if self.monolith && fill_ignores(t) => vec![],
            Some(other) => return Err(format!("sparse {source}: {other:?}")),
        };
        Ok(Row { values: ids.iter().flat_map(|f| f.to_le_bytes()).collect(), len: ids.len() })
    }

    fn dense_row(
        &self,
        source: &str,
        r: usize,
        dtype: DataType,
        dim: usize,
        default: f64,
        meta: Option<LidField>,
    ) -> Result<Row, String> {
        let pad = if self.monolith { 0.0 } else { default };
        let vals = match (self.feature(source, r), meta) {
            (None, Some(field)) => self.lid_nums(r, field, dim)?,
            (None, None) => vec![],
            (Some(f), _) => self.dense_values(source, f, dtype, dim)?,
        };
        Ok(Row::dense(dtype, &vals, dim, pad))
    }

    /// The values a dense Feature gives (at most `dim`).
    fn dense_values(&self, source: &str, f: &pb::Feature, dtype: DataType, dim: usize) -> Result<Vec<Num>, String> {
        let float_out = matches!(dtype, DataType::F32 | DataType::F64);
        let prefix = |v: Vec<Num>| v.into_iter().take(dim).collect::<Vec<_>>();
        let mut vals = match &f.r#type {
            None => vec![],
            Some(T::FloatList(l)) if float_out => prefix(l.value.iter().map(|&x| Num::F32(x)).collect()),
            Some(T::DoubleList(l)) if float_out => prefix(l.value.iter().map(|&x| Num::F64(x)).collect()),
            Some(T::Int64List(l)) if dtype == DataType::I64 => {
                if self.monolith && l.value.is_empty() && dim == 1 {
                    return Err(format!("dense {source}: empty int64_list (Monolith aborts)"));
                }
                prefix(l.value.iter().map(|&x| Num::I(x)).collect())
            }
            // Monolith ignores scalar and list-of-lists variants: zeros.
            Some(t) if self.monolith && fill_ignores(t) => vec![],
            Some(T::FloatValue(x)) if float_out => vec![Num::F32(*x)],
            Some(T::DoubleValue(x)) if float_out => vec![Num::F64(*x)],
            Some(T::Int64Value(x)) if dtype == DataType::I64 => vec![Num::I(*x)],
            Some(other) => return Err(format!("dense {source} ({dtype:?}): {other:?}")),
        };
        let float_list = matches!(f.r#type, Some(T::FloatList(_) | T::DoubleList(_)));
        if self.monolith && float_list && vals.is_empty() && dim == 1 {
            vals.push(Num::F32(f32::MIN_POSITIVE));
        }
        Ok(vals)
    }

    fn string_row(&self, source: &str, r: usize) -> Result<Row, String> {
        match self.kind(source, r) {
            None => Ok(Row::default()),
            Some(T::BytesList(l)) => match l.value.first() {
                Some(v) => Ok(Row::bytes(v)),
                None if self.monolith => Err(format!("string {source}: empty bytes_list (Monolith aborts)")),
                None => Ok(Row::default()),
            },
            Some(t) if self.monolith && fill_ignores(t) => Ok(Row::default()),
            Some(T::BytesValue(v)) => Ok(Row::bytes(v)),
            Some(other) => Err(format!("string {source}: {other:?}")),
        }
    }

    fn seq_row(&self, source: &str, r: usize, dtype: DataType, max_len: usize, width: usize) -> Result<Row, String> {
        let ints = matches!(dtype, DataType::I64 | DataType::U64);
        let fids = |l: &pb::FidLists, v1: bool| -> Vec<Vec<Num>> {
            let conv = |f: u64| if v1 { v1_to_v2(f) } else { f };
            l.list.iter().map(|x| x.value.iter().map(|&f| Num::I(conv(f) as i64)).collect()).collect()
        };
        let lists: Vec<Vec<Num>> = match self.kind(source, r) {
            None => vec![],
            Some(T::FidV1Lists(l)) if ints => fids(l, true),
            Some(T::FidV2Lists(l)) if ints => fids(l, false),
            Some(T::Int64Lists(l)) if ints => {
                l.list.iter().map(|x| x.value.iter().map(|&v| Num::I(v)).collect()).collect()
            }
            Some(T::FloatLists(l)) if !ints => {
                l.list.iter().map(|x| x.value.iter().map(|&v| Num::F32(v)).collect()).collect()
            }
            Some(T::DoubleLists(l)) if !ints => {
                l.list.iter().map(|x| x.value.iter().map(|&v| Num::F64(v)).collect()).collect()
            }
            Some(other) => return Err(format!("sequence {source} ({dtype:?}): {other:?}")),
        };
        let mut row = Row::default();
        for list in lists.iter().take(max_len) {
            row.values.extend(Row::dense(dtype, list, width, 0.0).values);
            row.len += 1;
        }
        Ok(row)
    }

    /// The LineId of row `r`: `__LINE_ID__` bytes_list[0], else (Examples) field 100.
    fn line_id(&self, r: usize) -> Result<Option<LineId>, String> {
        match self.feature(LINE_ID, r) {
            Some(f) => match &f.r#type {
                None if self.monolith => Err("no __LINE_ID__ bytes_list (Monolith aborts)".into()),
                None => Ok(None),
                Some(T::BytesList(l)) => match l.value.first() {
                    Some(b) => LineId::decode(b.as_slice()).map(Some).map_err(|e| e.to_string()),
                    None if self.monolith => Err("empty __LINE_ID__ bytes_list (Monolith aborts)".into()),
                    None => Ok(None),
                },
                Some(other) => Err(format!("__LINE_ID__: {other:?}")),
            },
            None => match &self.input {
                Input::Batch { .. } => Ok(None),
                Input::Examples(ex) => Ok(ex[r].line_id.clone()),
            },
        }
    }

    /// A numeric LineId field of row `r`: a prefix of a repeated field, or the
    /// single value of a singular one (its default when absent).
    fn lid_nums(&self, r: usize, field: LidField, dim: usize) -> Result<Vec<Num>, String> {
        let num = |v: &LidVal| match v {
            LidVal::Int(i) => Num::I(*i),
            LidVal::Float(x) => Num::F32(*x),
            LidVal::Bytes(_) => Num::I(0),
        };
        Ok(match self.line_id(r)? {
            // Monolith zeroes the extras of a batch row without a LineId.
            None if field.repeated => vec![],
            None if self.monolith && self.is_batch() => vec![Num::I(0)],
            None => vec![Num::F64(field.default)],
            Some(lid) => {
                let vals = (field.read)(&lid);
                if field.repeated {
                    vals.iter().take(dim).map(num).collect()
                } else {
                    vec![vals.last().map_or(Num::F64(field.default), num)]
                }
            }
        })
    }

    fn line_id_row(&self, r: usize, field: LidField, dim: usize) -> Result<Row, String> {
        match field.class {
            Class::Bytes => {
                let last = self.line_id(r)?.and_then(|l| (field.read)(&l).pop());
                Ok(match last {
                    Some(LidVal::Bytes(b)) => Row::bytes(&b),
                    _ => Row::default(),
                })
            }
            Class::Int => Ok(Row::dense(DataType::I64, &self.lid_nums(r, field, dim)?, dim, 0.0)),
            Class::Float => Ok(Row::dense(DataType::F32, &self.lid_nums(r, field, dim)?, dim, 0.0)),
        }
    }

    /// Example labels (field 101) then `__LABEL__` float_list, a prefix of `dim`.
    fn label_row(&self, r: usize, dim: usize, default: f64) -> Result<Row, String> {
        let pad = match (self.monolith, self.is_batch()) {
            (true, true) => 0.0,
            (true, false) => f64::from(f32::MIN),
            (false, _) => default,
        };
        let mut labels: Vec<f32> = match &self.input {
            Input::Examples(ex) => ex[r].label.clone(),
            Input::Batch { .. } => vec![],
        };
        let monolith_batch = self.monolith && self.is_batch();
        match self.feature(LABEL, r).map(|f| &f.r#type) {
            None => {}
            Some(Some(T::FloatList(l))) => labels.extend(&l.value),
            // Monolith reads float_list() of any Feature: no floats.
            Some(_) if self.monolith => {}
            Some(None) => {}
            Some(Some(other)) => return Err(format!("__LABEL__: {other:?}")),
        }
        if self.feature(LABEL, r).is_some() && labels.is_empty() && dim == 1 && monolith_batch {
            return Err("no __LABEL__ value for a dim-1 label (Monolith aborts)".into());
        }
        let nums: Vec<Num> = labels.iter().map(|&x| Num::F32(x)).collect();
        Ok(Row::dense(DataType::F32, &nums, dim, pad))
    }

    /// The first positive of: Example field 102, `instance_weight` float_list[0]; else 1.
    fn weight_row(&self, r: usize) -> Result<Row, String> {
        let row = |w: f32| Row::dense(DataType::F32, &[Num::F32(w)], 1, 0.0);
        if let Input::Examples(ex) = &self.input
            && self.monolith
        {
            // An `instance_weight` feature is filled raw like a dense feature
            // of shape 1; without one, field 102 when positive, else 1.
            return match self.feature(WEIGHT, r) {
                Some(f) => {
                    let vals = self.dense_values(WEIGHT, f, DataType::F32, 1)?;
                    Ok(Row::dense(DataType::F32, &vals, 1, 0.0))
                }
                None => Ok(row(if ex[r].instance_weight > 0.0 { ex[r].instance_weight } else { 1.0 })),
            };
        }
        if let Input::Examples(ex) = &self.input
            && ex[r].instance_weight > 0.0
        {
            return Ok(row(ex[r].instance_weight));
        }
        let monolith_batch = self.monolith && self.is_batch();
        if monolith_batch && self.col(WEIGHT).is_none() {
            return Ok(row(0.0));
        }
        let Some(f) = self.feature(WEIGHT, r) else {
            // Monolith writes one row per Feature; the rest stay 0.
            return Ok(row(if monolith_batch { 0.0 } else { 1.0 }));
        };
        let first = match &f.r#type {
            None => None,
            Some(T::FloatList(l)) => l.value.first().copied(),
            Some(other) => return Err(format!("instance_weight: {other:?}")),
        };
        match first {
            None if monolith_batch => Err("empty instance_weight (Monolith aborts)".into()),
            Some(w) if w > 0.0 => Ok(row(w)),
            _ => Ok(row(1.0)),
        }
    }
}

/// The variants Monolith's FillFeature writes nothing for: scalars and lists of lists.
fn fill_ignores(t: &T) -> bool {
    matches!(
        t,
        T::Int64Value(_)
            | T::FloatValue(_)
            | T::DoubleValue(_)
            | T::BytesValue(_)
            | T::FidV1Lists(_)
            | T::FidV2Lists(_)
            | T::FloatLists(_)
            | T::DoubleLists(_)
            | T::Int64Lists(_)
            | T::BytesLists(_)
    )
}

fn assemble(out: &RefOutput, rows: &[Row], shared: bool) -> Tensor {
    let (layout, dtype, splits) = out.layout();
    let mut shape = vec![rows.len() as i64];
    shape.extend(out.inner_shape());
    let mut row_splits = Vec::new();
    if layout != Layout::Dense {
        let mut at = 0usize;
        let mut push = |n: usize| match splits {
            DataType::I32 => row_splits.extend((n as i32).to_le_bytes()),
            _ => row_splits.extend((n as i64).to_le_bytes()),
        };
        push(0);
        for row in rows {
            at += row.len;
            push(at);
        }
    }
    Tensor {
        name: out.name.clone(),
        layout: layout as i32,
        dtype: dtype as i32,
        shape,
        values: rows.iter().flat_map(|r| r.values.iter().copied()).collect::<Vec<u8>>().into(),
        splits_dtype: splits as i32,
        row_splits: row_splits.into(),
        shared,
        ..Default::default()
    }
}

// ───────────────────────────── comparison ─────────────────────────────

/// How a checked case ended.
enum Outcome {
    Compared,
    BothFailed,
}

/// A tensor with its values typed, for readable failure messages.
fn show(t: &Tensor) -> String {
    let values = match (t.layout(), t.dtype()) {
        (Layout::Strings, _) => {
            format!("{:?}", t.strings().iter().map(|s| String::from_utf8_lossy(s)).collect::<Vec<_>>())
        }
        (_, DataType::F32) => format!("{:?}", t.f32s()),
        (_, DataType::F64) => format!("{:?}", t.f64s()),
        (_, DataType::U64) => format!("{:?}", t.u64s()),
        _ => format!("{:?}", t.i64s()),
    };
    format!(
        "{} {:?} {:?} shape={:?} shared={} splits({:?})={:?} values={values}",
        t.name,
        t.layout(),
        t.dtype(),
        t.shape,
        t.shared,
        t.splits_dtype(),
        t.splits()
    )
}

fn compare(
    rows: usize,
    got: Result<fex::Extracted, fex::ExtractError>,
    want: RefResult,
) -> Result<Outcome, TestCaseError> {
    match (got, want) {
        (Ok(got), Ok(want)) => {
            prop_assert_eq!(got.batch_size, rows);
            prop_assert_eq!(got.columns.len(), want.len());
            for (g, w) in got.tensors().iter().zip(&want) {
                if g != w {
                    return Err(TestCaseError::fail(format!(
                        "tensor {} differs\n  fex:       {}\n  reference: {}",
                        w.name,
                        show(g),
                        show(w)
                    )));
                }
            }
            Ok(Outcome::Compared)
        }
        (Err(_), Err(_)) => Ok(Outcome::BothFailed),
        (Ok(_), Err(e)) => Err(TestCaseError::fail(format!("fex succeeded, the reference failed: {e}"))),
        (Err(e), Ok(_)) => Err(TestCaseError::fail(format!("fex failed, the reference succeeded: {e}"))),
    }
}

fn check_batch(plan: &Plan, model: &RefModel, batch: &pb::ExampleBatch) -> Result<Outcome, TestCaseError> {
    let bytes = batch.encode_to_vec();
    let decoded = pb::ExampleBatch::decode(bytes.as_slice()).expect("prost reads its own bytes");
    let rows = usize::try_from(batch.batch_size).unwrap_or(0);
    compare(rows, fex::extract_batch(plan, &bytes), reference_batch(model, &decoded))
}

fn check_examples(plan: &Plan, model: &RefModel, examples: &[pb::Example]) -> Result<Outcome, TestCaseError> {
    let bufs: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
    let decoded: Vec<pb::Example> =
        bufs.iter().map(|b| pb::Example::decode(b.as_slice()).expect("prost reads its own bytes")).collect();
    compare(bufs.len(), fex::extract_examples(plan, &slices(&bufs)), reference_examples(model, &decoded))
}

fn slices(bufs: &[Vec<u8>]) -> Vec<&[u8]> {
    bufs.iter().map(Vec::as_slice).collect()
}

/// Runs `cases` cases of `strategy` through `check`, then requires that at
/// least half compared tensors and that some exercised the error paths.
fn run_cases<S: Strategy>(
    what: &str,
    cases: u32,
    strategy: S,
    check: impl Fn(S::Value) -> Result<Outcome, TestCaseError>,
) {
    let (compared, failed) = (Cell::new(0u32), Cell::new(0u32));
    let mut runner = TestRunner::new(Config { cases, failure_persistence: None, ..Config::default() });
    let result = runner.run(&strategy, |value| {
        match check(value)? {
            Outcome::Compared => compared.set(compared.get() + 1),
            Outcome::BothFailed => failed.set(failed.get() + 1),
        }
        Ok(())
    });
    if let Err(e) = result {
        panic!("{what}: {e}");
    }
    let (compared, failed) = (compared.get(), failed.get());
    eprintln!("{what}: {compared} cases compared tensors, {failed} failed in both");
    assert!(compared * 2 >= cases, "{what}: only {compared} of {cases} cases compared tensors");
    assert!(failed > 0, "{what}: no case exercised an error");
}

// ───────────────────────────── generators ─────────────────────────────

fn float32() -> impl Strategy<Value = f32> + Clone {
    let special =
        [0.0, -0.0, 1.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY, f32::MIN_POSITIVE, f32::MAX, f32::MIN];
    prop_oneof![8 => -1000.0f32..1000.0, 2 => prop::sample::select(special.to_vec())]
}

fn float64() -> impl Strategy<Value = f64> + Clone {
    let special = [0.0, -0.0, 1.0, f64::NAN, f64::INFINITY, f64::MIN_POSITIVE, 1e300, -1e300];
    prop_oneof![8 => -1000.0f64..1000.0, 2 => prop::sample::select(special.to_vec())]
}

/// Instance weights: positive, zero, negative and NaN all occur.
fn weight32() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![4 => 0.01f32..10.0, 1 => Just(0.0f32), 1 => -5.0f32..0.0, 1 => Just(f32::NAN)]
}

fn bytes() -> impl Strategy<Value = Vec<u8>> + Clone {
    vec(any::<u8>(), 0..6)
}

fn fids() -> impl Strategy<Value = Vec<u64>> + Clone {
    vec(any::<u64>(), 0..4)
}

fn fid_list(value: Vec<u64>) -> pb::FidList {
    pb::FidList { value }
}

fn fid_lists() -> impl Strategy<Value = pb::FidLists> + Clone {
    vec(fids().prop_map(fid_list), 0..4).prop_map(|list| pb::FidLists { list })
}

fn float_list(n: std::ops::Range<usize>) -> impl Strategy<Value = T> + Clone {
    vec(float32(), n).prop_map(|value| T::FloatList(pb::FloatList { value }))
}

fn double_list() -> impl Strategy<Value = T> + Clone {
    vec(float64(), 0..5).prop_map(|value| T::DoubleList(pb::DoubleList { value }))
}

fn int64_list(n: std::ops::Range<usize>) -> impl Strategy<Value = T> + Clone {
    vec(any::<i64>(), n).prop_map(|value| T::Int64List(pb::Int64List { value }))
}

fn bytes_list(n: std::ops::Range<usize>) -> impl Strategy<Value = T> + Clone {
    vec(bytes(), n).prop_map(|value| T::BytesList(pb::BytesList { value }))
}

fn float_lists() -> impl Strategy<Value = T> + Clone {
    vec(vec(float32(), 0..4).prop_map(|value| pb::FloatList { value }), 0..4)
        .prop_map(|list| T::FloatLists(pb::FloatLists { list }))
}

fn double_lists() -> impl Strategy<Value = T> + Clone {
    vec(vec(float64(), 0..4).prop_map(|value| pb::DoubleList { value }), 0..4)
        .prop_map(|list| T::DoubleLists(pb::DoubleLists { list }))
}

fn int64_lists() -> impl Strategy<Value = T> + Clone {
    vec(vec(any::<i64>(), 0..4).prop_map(|value| pb::Int64List { value }), 0..4)
        .prop_map(|list| T::Int64Lists(pb::Int64Lists { list }))
}

fn bytes_lists() -> impl Strategy<Value = T> + Clone {
    vec(vec(bytes(), 0..3).prop_map(|value| pb::BytesList { value }), 0..3)
        .prop_map(|list| T::BytesLists(pb::BytesLists { list }))
}

/// Scalar and list-of-lists variants: what Monolith reads as zeros in a dense feature.
fn scalars_and_lists() -> BoxedStrategy<Option<T>> {
    prop_oneof![
        any::<i64>().prop_map(T::Int64Value),
        float32().prop_map(T::FloatValue),
        float64().prop_map(T::DoubleValue),
        fid_lists().prop_map(T::FidV2Lists),
        fid_lists().prop_map(T::FidV1Lists),
        float_lists(),
        double_lists(),
        int64_lists(),
        bytes_lists(),
    ]
    .prop_map(Some)
    .boxed()
}

/// Any of the 16 variants, or an empty Feature.
fn any_type() -> BoxedStrategy<Option<T>> {
    Union::new(vec![
        Just(None).boxed(),
        fids().prop_map(|v| Some(T::FidV1List(fid_list(v)))).boxed(),
        fids().prop_map(|v| Some(T::FidV2List(fid_list(v)))).boxed(),
        float_list(0..4).prop_map(Some).boxed(),
        double_list().prop_map(Some).boxed(),
        int64_list(0..4).prop_map(Some).boxed(),
        bytes_list(0..3).prop_map(Some).boxed(),
        bytes().prop_map(|b| Some(T::BytesValue(b))).boxed(),
        scalars_and_lists(),
    ])
    .boxed()
}

fn line_id() -> impl Strategy<Value = LineId> + Clone {
    (
        (prop::option::of(any::<u64>()), prop::option::of(any::<i64>()), prop::option::of(any::<u64>())),
        (prop::option::of("[a-z0-9]{0,6}"), vec(any::<i32>(), 0..5), prop::option::of(any::<i64>())),
        (prop::option::of(float32()), prop::option::of(any::<i32>()), prop::option::of(any::<bool>())),
        (vec(any::<i32>(), 0..3), prop::option::of("[A-Z]{0,3}")),
    )
        .prop_map(
            |(
                (uid, req_time, item_id),
                (req_id, actions, chnid),
                (sample_rate, rank, is_draw),
                (special_strategies, user_id),
            )| LineId {
                uid,
                req_time,
                item_id,
                req_id,
                actions,
                chnid,
                sample_rate,
                rank,
                is_draw,
                special_strategies,
                user_id,
                ..Default::default()
            },
        )
}

/// A serialized LineId in any legal layout, sometimes followed by a second
/// (partial) LineId that merges into it as protobuf specifies.
fn line_id_bytes() -> impl Strategy<Value = Vec<u8>> + Clone {
    (line_id(), style(), prop::option::weighted(0.2, line_id())).prop_map(|(lid, s, tail)| {
        let mut out = alt_line_id(&lid, s);
        // The native model reads chnid by number as a repeated field, which
        // sees every occurrence; prost merges a singular field to the last.
        if let Some(tail) = tail.map(|t| LineId { chnid: None, ..t }) {
            out.extend(tail.encode_to_vec());
        }
        out
    })
}

/// A Feature of the right type for `want`. Clean features never make the
/// extraction fail; dirty ones may hold any variant.
fn feature(want: Want, monolith: bool, dirty: bool) -> BoxedStrategy<pb::Feature> {
    let typed = typed_feature(want, monolith);
    let t = if dirty { prop_oneof![5 => typed, 1 => any_type()].boxed() } else { typed };
    t.prop_map(|r#type| pb::Feature { r#type }).boxed()
}

fn typed_feature(want: Want, monolith: bool) -> BoxedStrategy<Option<T>> {
    let none = || Just(None::<T>);
    // Monolith aborts on some empty lists; clean monolith data avoids them.
    let min = usize::from(monolith);
    match want {
        Want::Fids => {
            let v2 = fids().prop_map(|v| Some(T::FidV2List(fid_list(v))));
            let v1 = fids().prop_map(|v| Some(T::FidV1List(fid_list(v))));
            if monolith {
                prop_oneof![4 => v2, 3 => v1, 1 => none(), 2 => scalars_and_lists()].boxed()
            } else {
                prop_oneof![4 => v2, 3 => v1, 1 => none()].boxed()
            }
        }
        Want::Floats => {
            let lists = prop_oneof![3 => float_list(0..5).prop_map(Some), 2 => double_list().prop_map(Some)];
            let values = prop_oneof![
                float32().prop_map(|x| Some(T::FloatValue(x))),
                float64().prop_map(|x| Some(T::DoubleValue(x)))
            ];
            if monolith {
                prop_oneof![5 => lists, 1 => values, 1 => none(), 1 => scalars_and_lists()].boxed()
            } else {
                prop_oneof![5 => lists, 2 => values, 1 => none()].boxed()
            }
        }
        Want::Ints => {
            let list = int64_list(min..4).prop_map(Some);
            if monolith {
                prop_oneof![5 => list, 1 => none(), 1 => scalars_and_lists()].boxed()
            } else {
                prop_oneof![5 => list, 2 => any::<i64>().prop_map(|x| Some(T::Int64Value(x))), 1 => none()].boxed()
            }
        }
        Want::Bytes => prop_oneof![
            5 => bytes_list(min..3).prop_map(Some),
            2 => bytes().prop_map(|b| Some(T::BytesValue(b))),
            1 => none(),
        ]
        .boxed(),
        Want::SeqInts => prop_oneof![
            3 => fid_lists().prop_map(|l| Some(T::FidV2Lists(l))),
            2 => fid_lists().prop_map(|l| Some(T::FidV1Lists(l))),
            2 => int64_lists().prop_map(Some),
            1 => none(),
        ]
        .boxed(),
        Want::SeqFloats => {
            prop_oneof![3 => float_lists().prop_map(Some), 2 => double_lists().prop_map(Some), 1 => none()].boxed()
        }
        Want::LineId => {
            let lid = (line_id_bytes(), vec(bytes(), 0..2)).prop_map(|(first, mut rest)| {
                rest.insert(0, first);
                Some(T::BytesList(pb::BytesList { value: rest }))
            });
            let empty_list = Just(Some(T::BytesList(pb::BytesList::default())));
            if monolith { lid.boxed() } else { prop_oneof![8 => lid, 1 => none(), 1 => empty_list].boxed() }
        }
        Want::Labels => prop_oneof![6 => float_list(0..4).prop_map(Some), 1 => none()].boxed(),
        Want::Weight => {
            let list = vec(weight32(), min..3).prop_map(|value| Some(T::FloatList(pb::FloatList { value })));
            if monolith { list.boxed() } else { prop_oneof![5 => list, 1 => none()].boxed() }
        }
    }
}

/// How many Features a list of `rows` rows holds. Clean counts are legal (an
/// empty SHARED list only in native mode, a longer one only in Monolith mode);
/// dirty ones may be off by one.
fn feature_count(rows: usize, shared: bool, monolith: bool, reserved: bool, dirty: bool) -> BoxedStrategy<usize> {
    let reserved_monolith = monolith && reserved;
    match (shared, dirty) {
        (true, false) if monolith => prop_oneof![9 => Just(1), 1 => Just(2)].boxed(),
        (true, false) => prop_oneof![9 => Just(1), 1 => Just(0)].boxed(),
        (true, true) => (0usize..3).boxed(),
        (false, false) if reserved_monolith => prop_oneof![4 => Just(rows), 1 => 0..=rows].boxed(),
        (false, false) => Just(rows).boxed(),
        (false, true) => prop_oneof![6 => Just(rows), 1 => Just(rows + 1), 1 => Just(rows.saturating_sub(1))].boxed(),
    }
}

fn named_list(
    name: String,
    want: Want,
    rows: usize,
    monolith: bool,
    dirty: bool,
) -> BoxedStrategy<pb::NamedFeatureList> {
    let reserved = RESERVED.contains(&name.as_str());
    prop::bool::weighted(0.4)
        .prop_flat_map(move |shared| {
            let name = name.clone();
            feature_count(rows, shared, monolith, reserved, dirty).prop_flat_map(move |n| {
                let name = name.clone();
                vec(feature(want, monolith, dirty), n).prop_map(move |feature| pb::NamedFeatureList {
                    name: name.clone(),
                    feature,
                    r#type: i32::from(shared),
                    id: 0,
                })
            })
        })
        .boxed()
}

/// The lists of one source: missing, one, or two of the same name (the last wins).
fn lists_for(
    name: &str,
    want: Want,
    rows: usize,
    monolith: bool,
    dirty: bool,
) -> BoxedStrategy<Vec<pb::NamedFeatureList>> {
    let one = named_list(name.to_string(), want, rows, monolith, dirty);
    let missing = if name.starts_with("__meta__") { 5 } else { 1 };
    // Monolith applies the copies of a repeated list in turn; the reference
    // models native mode's last copy only, so monolith data does not repeat
    // (the corpus cases monolith_repeated_* hold the compat rule).
    let repeats = if monolith { 0 } else { 1 };
    prop_oneof![
        missing => Just(vec![]),
        8 => one.clone().prop_map(|l| vec![l]),
        repeats => vec(one, 2),
    ]
    .boxed()
}

/// Names near the real ones that no plan reads.
fn noise_name() -> impl Strategy<Value = String> + Clone {
    let names = ["", "item_i", "item_id_", "Item_id", "__LABEL", "__line_id__", "instance_weights", "zz", "user"];
    (prop::sample::select(names.to_vec()), prop::option::of(0u8..9)).prop_map(|(n, k)| match k {
        Some(k) => format!("{n}{k}"),
        None => n.to_string(),
    })
}

/// A list the plan must skip: any name it does not read, any features, any length.
fn noise_list(rows: usize) -> impl Strategy<Value = pb::NamedFeatureList> {
    (noise_name(), vec(any_type().prop_map(|r#type| pb::Feature { r#type }), 0..rows + 3), 0i32..2, any::<i32>())
        .prop_map(|(name, feature, r#type, id)| pb::NamedFeatureList { name, feature, r#type, id })
}

/// Raw feature lists live in field 2 and must never be mistaken for field 1.
fn raw_list() -> impl Strategy<Value = pb::NamedRawFeatureList> {
    let raw =
        vec(any_type().prop_map(|r#type| pb::Feature { r#type }), 0..2).prop_map(|feature| pb::RawFeature { feature });
    (prop::sample::select(vec!["item_id", LABEL, "noise"]), vec(raw, 0..3), 0i32..2).prop_map(
        |(name, raw_feature, r#type)| pb::NamedRawFeatureList { name: name.into(), raw_feature, r#type, id: 0 },
    )
}

/// Random ExampleBatches for `model`: about one in five "dirty" (mistyped
/// features, wrong list lengths, a negative batch_size).
fn batch_strategy(model: &RefModel) -> BoxedStrategy<pb::ExampleBatch> {
    let sources = model.sources();
    let monolith = model.monolith;
    (0usize..=5, prop::bool::weighted(0.2))
        .prop_flat_map(move |(rows, dirty)| {
            let lists: Vec<_> =
                sources.iter().map(|(name, want)| lists_for(name, *want, rows, monolith, dirty)).collect();
            let batch_size = if dirty {
                prop_oneof![9 => Just(rows as i32), 1 => Just(-1)].boxed()
            } else {
                Just(rows as i32).boxed()
            };
            (lists, vec(noise_list(rows), 0..3), vec(raw_list(), 0..2), batch_size, any::<u32>())
        })
        .prop_flat_map(|(lists, noise, raw, batch_size, data_source_key)| {
            let all: Vec<pb::NamedFeatureList> = lists.into_iter().flatten().chain(noise).collect();
            (Just(all).prop_shuffle(), Just(raw), Just(batch_size), Just(data_source_key))
        })
        .prop_map(|(named_feature_list, named_raw_feature_list, batch_size, data_source_key)| pb::ExampleBatch {
            named_feature_list,
            named_raw_feature_list,
            batch_size,
            data_source_key,
        })
        .boxed()
}

fn named(name: &str, feature: Option<pb::Feature>) -> pb::NamedFeature {
    pb::NamedFeature { name: name.to_string(), feature, id: 0, sorted_id: 0 }
}

/// The named features of one source in an Example: missing, present, present
/// without a Feature, or twice (the last wins).
fn named_for(name: &str, want: Want, monolith: bool, dirty: bool) -> BoxedStrategy<Vec<pb::NamedFeature>> {
    let f = feature(want, monolith, dirty);
    let (n1, n2) = (name.to_string(), name.to_string());
    let missing = if RESERVED.contains(&name) || name.starts_with("__meta__") { 6 } else { 2 };
    // As for batches: monolith Examples do not repeat a name.
    let repeats = if monolith { 0 } else { 1 };
    prop_oneof![
        missing => Just(vec![]),
        8 => f.clone().prop_map(move |f| vec![named(&n1, Some(f))]),
        1 => Just(vec![named(name, None)]),
        repeats => vec(f, 2).prop_map(move |fs| fs.into_iter().map(|f| named(&n2, Some(f))).collect()),
    ]
    .boxed()
}

fn example(sources: &[(String, Want)], monolith: bool, dirty: bool) -> BoxedStrategy<pb::Example> {
    let per_source: Vec<_> = sources.iter().map(|(name, want)| named_for(name, *want, monolith, dirty)).collect();
    let noise = vec((noise_name(), any_type()).prop_map(|(n, t)| named(&n, Some(pb::Feature { r#type: t }))), 0..2);
    let weight = prop_oneof![Just(0.0f32), weight32()];
    (per_source, noise, prop::option::weighted(0.8, line_id()), vec(float32(), 0..3), weight, any::<u32>())
        .prop_flat_map(|(named, noise, line_id, label, instance_weight, data_source_key)| {
            let all: Vec<pb::NamedFeature> = named.into_iter().flatten().chain(noise).collect();
            (Just(all).prop_shuffle(), Just((line_id, label, instance_weight, data_source_key)))
        })
        .prop_map(|(named_feature, (line_id, label, instance_weight, data_source_key))| pb::Example {
            named_feature,
            named_raw_feature: vec![],
            line_id,
            label,
            instance_weight,
            data_source_key,
        })
        .boxed()
}

/// 0..5 Examples, about one set in five dirty.
fn examples_strategy(model: &RefModel) -> BoxedStrategy<Vec<pb::Example>> {
    let sources = model.sources();
    let monolith = model.monolith;
    prop::bool::weighted(0.2).prop_flat_map(move |dirty| vec(example(&sources, monolith, dirty), 0..5)).boxed()
}

fn instance_strategy() -> impl Strategy<Value = parser_pb::Instance> {
    let feature =
        (prop::option::of("[a-z]{0,4}"), fids(), vec(float32(), 0..3), vec(any::<i64>(), 0..3), vec(bytes(), 0..2))
            .prop_map(|(name, fid, float_value, int64_value, bytes_value)| fex::proto::matrix::Feature {
                name,
                fid,
                float_value,
                int64_value,
                bytes_value,
            });
    (
        fids(),
        vec(float32(), 0..3),
        vec(float32(), 0..3),
        prop::option::of(float32()),
        prop::option::of(line_id()),
        fids(),
        vec(feature, 0..3),
    )
        .prop_map(|(fid, value, label, instance_weight, line_id, next_fid, feature)| parser_pb::Instance {
            fid,
            value,
            label,
            instance_weight,
            line_id,
            next_fid,
            feature,
            data_source_key: Some(7),
        })
}

// ─────────────── a hand encoder for every legal wire layout ───────────────

/// How the hand encoder departs from prost's canonical bytes.
#[derive(Debug, Clone, Copy, Default)]
struct Style {
    /// One key per repeated scalar instead of a packed run.
    unpacked: bool,
    /// Fields in reverse order of their numbers (repeated ones keep their order).
    reverse: bool,
    /// Packed runs cut in two, list variants sent as two occurrences that merge,
    /// and scalar variants preceded by a value the later one replaces.
    split: bool,
    /// Unknown fields the decoders must skip.
    unknown: bool,
    /// Feature variant numbers carrying a wire type their declaration does not
    /// have. Protobuf's C++ parser skips them as unknown fields (issue 11);
    /// prost refuses them, so prost only checks the bytes without them.
    misfit: bool,
}

fn style() -> impl Strategy<Value = Style> + Clone {
    (any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>())
        .prop_map(|(unpacked, reverse, split, unknown, misfit)| Style { unpacked, reverse, split, unknown, misfit })
}

#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    fn len(&mut self, field: u32, body: &[u8]) {
        self.key(field, 2);
        self.varint(body.len() as u64);
        self.0.extend_from_slice(body);
    }

    fn uint(&mut self, field: u32, v: u64) {
        self.key(field, 0);
        self.varint(v);
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, 1);
        self.0.extend(v.to_le_bytes());
    }

    fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, 5);
        self.0.extend(v.to_le_bytes());
    }

    /// A repeated scalar: one packed run, two runs, or a key per value.
    fn repeated<V: Copy>(&mut self, field: u32, values: &[V], s: Style, wire: u32, put: impl Fn(&mut Enc, V)) {
        if s.unpacked {
            for &v in values {
                self.key(field, wire);
                put(self, v);
            }
            return;
        }
        let cut = if s.split { values.len() / 2 } else { values.len() };
        for part in [&values[..cut], &values[cut..]] {
            if !part.is_empty() {
                let mut body = Enc::default();
                part.iter().for_each(|&v| put(&mut body, v));
                self.len(field, &body.0);
            }
        }
    }
}

/// A message as chunks, one per field, put in order or reversed at the end.
#[derive(Default)]
struct Msg(Vec<Enc>);

impl Msg {
    fn field(&mut self, f: impl FnOnce(&mut Enc)) {
        let mut e = Enc::default();
        f(&mut e);
        self.0.push(e);
    }

    fn finish(mut self, s: Style) -> Vec<u8> {
        if s.unknown {
            let mut e = Enc::default();
            e.uint(1000, 7);
            e.len(1001, b"skip me");
            e.fixed32(1002, 1);
            self.0.insert(self.0.len() / 2, e);
        }
        if s.reverse {
            self.0.reverse();
        }
        self.0.into_iter().flat_map(|e| e.0).collect()
    }
}

fn put_fixed64(e: &mut Enc, v: u64) {
    e.0.extend(v.to_le_bytes());
}

fn put_f32(e: &mut Enc, v: f32) {
    e.0.extend(v.to_le_bytes());
}

fn put_f64(e: &mut Enc, v: f64) {
    e.0.extend(v.to_le_bytes());
}

fn put_i64(e: &mut Enc, v: i64) {
    e.varint(v as u64);
}

fn put_i32(e: &mut Enc, v: i32) {
    e.varint(i64::from(v) as u64);
}

/// `{repeated <scalar> value = 1}` list bodies.
fn fids_body(v: &[u64], s: Style) -> Vec<u8> {
    let mut e = Enc::default();
    e.repeated(1, v, s, 1, put_fixed64);
    e.0
}

fn floats_body(v: &[f32], s: Style) -> Vec<u8> {
    let mut e = Enc::default();
    e.repeated(1, v, s, 5, put_f32);
    e.0
}

fn doubles_body(v: &[f64], s: Style) -> Vec<u8> {
    let mut e = Enc::default();
    e.repeated(1, v, s, 1, put_f64);
    e.0
}

fn int64s_body(v: &[i64], s: Style) -> Vec<u8> {
    let mut e = Enc::default();
    e.repeated(1, v, s, 0, put_i64);
    e.0
}

fn bytes_body(v: &[Vec<u8>]) -> Vec<u8> {
    let mut e = Enc::default();
    v.iter().for_each(|b| e.len(1, b));
    e.0
}

/// `{repeated XList list = 1}` bodies.
fn lists_body<L>(lists: &[L], body: impl Fn(&L) -> Vec<u8>) -> Vec<u8> {
    let mut e = Enc::default();
    lists.iter().for_each(|l| e.len(1, &body(l)));
    e.0
}

/// A Feature's list variant: once, or (split) as two occurrences that merge.
fn variant<V>(e: &mut Enc, field: u32, items: &[V], s: Style, body: impl Fn(&[V]) -> Vec<u8>) {
    if s.split {
        let cut = items.len() / 2;
        e.len(field, &body(&items[..cut]));
        e.len(field, &body(&items[cut..]));
    } else {
        e.len(field, &body(items));
    }
}

/// Known Feature fields with the wrong wire type: list variants as varint
/// and fixed32, scalar variants as length-delimited and as another width.
fn misfits(e: &mut Enc, f: &pb::Feature) {
    e.uint(2, 7);
    e.fixed32(3, 9);
    e.len(12, b"not a varint");
    e.uint(13, 1);
    e.len(14, &[0; 8]);
    e.fixed64(15, 3);
    // The variant the Feature holds, under the wrong wire type.
    match &f.r#type {
        Some(T::Int64Value(_)) => e.fixed64(12, 5),
        Some(T::FloatValue(_)) => e.uint(13, 5),
        Some(T::DoubleValue(_)) => e.fixed32(14, 5),
        Some(T::BytesValue(_)) => e.uint(15, 5),
        Some(t) => e.uint(variant_number(t), 1),
        None => {}
    }
}

fn variant_number(t: &T) -> u32 {
    match t {
        T::FidV1List(_) => 1,
        T::FidV2List(_) => 2,
        T::FloatList(_) => 3,
        T::DoubleList(_) => 4,
        T::Int64List(_) => 5,
        T::BytesList(_) => 6,
        T::FidV2Lists(_) => 7,
        T::FloatLists(_) => 8,
        T::DoubleLists(_) => 9,
        T::Int64Lists(_) => 10,
        T::BytesLists(_) => 11,
        T::Int64Value(_) => 12,
        T::FloatValue(_) => 13,
        T::DoubleValue(_) => 14,
        T::BytesValue(_) => 15,
        T::FidV1Lists(_) => 16,
    }
}

fn alt_feature(f: &pb::Feature, s: Style) -> Vec<u8> {
    let mut e = Enc::default();
    if s.unknown {
        e.uint(17, 3);
    }
    if s.misfit {
        misfits(&mut e, f);
    }
    alt_variant(&mut e, f, s);
    if s.misfit {
        misfits(&mut e, f);
    }
    e.0
}

fn alt_variant(e: &mut Enc, f: &pb::Feature, s: Style) {
    match &f.r#type {
        None => {}
        Some(T::FidV1List(l)) => variant(e, 1, &l.value, s, |v| fids_body(v, s)),
        Some(T::FidV2List(l)) => variant(e, 2, &l.value, s, |v| fids_body(v, s)),
        Some(T::FloatList(l)) => variant(e, 3, &l.value, s, |v| floats_body(v, s)),
        Some(T::DoubleList(l)) => variant(e, 4, &l.value, s, |v| doubles_body(v, s)),
        Some(T::Int64List(l)) => variant(e, 5, &l.value, s, |v| int64s_body(v, s)),
        Some(T::BytesList(l)) => variant(e, 6, &l.value, s, bytes_body),
        Some(T::FidV2Lists(l)) => variant(e, 7, &l.list, s, |v| lists_body(v, |x| fids_body(&x.value, s))),
        Some(T::FloatLists(l)) => variant(e, 8, &l.list, s, |v| lists_body(v, |x| floats_body(&x.value, s))),
        Some(T::DoubleLists(l)) => variant(e, 9, &l.list, s, |v| lists_body(v, |x| doubles_body(&x.value, s))),
        Some(T::Int64Lists(l)) => variant(e, 10, &l.list, s, |v| lists_body(v, |x| int64s_body(&x.value, s))),
        Some(T::BytesLists(l)) => variant(e, 11, &l.list, s, |v| lists_body(v, |x| bytes_body(&x.value))),
        Some(T::FidV1Lists(l)) => variant(e, 16, &l.list, s, |v| lists_body(v, |x| fids_body(&x.value, s))),
        Some(T::Int64Value(v)) => {
            if s.split {
                e.uint(12, !*v as u64);
            }
            e.uint(12, *v as u64);
        }
        Some(T::FloatValue(v)) => {
            if s.split {
                e.fixed32(13, 0x7f7f_ffff);
            }
            e.fixed32(13, v.to_bits());
        }
        Some(T::DoubleValue(v)) => {
            if s.split {
                e.fixed64(14, 1);
            }
            e.fixed64(14, v.to_bits());
        }
        Some(T::BytesValue(b)) => {
            if s.split {
                e.len(15, b"replaced");
            }
            e.len(15, b);
        }
    }
}

fn alt_list(l: &pb::NamedFeatureList, s: Style) -> Vec<u8> {
    let mut m = Msg::default();
    m.field(|e| e.len(1, l.name.as_bytes()));
    m.field(|e| l.feature.iter().for_each(|f| e.len(2, &alt_feature(f, s))));
    m.field(|e| e.uint(3, i64::from(l.r#type) as u64));
    m.field(|e| e.uint(4, i64::from(l.id) as u64));
    m.finish(s)
}

fn alt_batch(b: &pb::ExampleBatch, s: Style) -> Vec<u8> {
    let mut m = Msg::default();
    m.field(|e| b.named_feature_list.iter().for_each(|l| e.len(1, &alt_list(l, s))));
    m.field(|e| b.named_raw_feature_list.iter().for_each(|l| e.len(2, &l.encode_to_vec())));
    m.field(|e| e.uint(3, i64::from(b.batch_size) as u64));
    m.field(|e| e.uint(100, u64::from(b.data_source_key)));
    m.finish(s)
}

fn alt_line_id(l: &LineId, s: Style) -> Vec<u8> {
    let mut m = Msg::default();
    let string = |m: &mut Msg, field, v: &Option<String>| {
        if let Some(v) = v {
            m.field(|e| e.len(field, v.as_bytes()));
        }
    };
    let int = |m: &mut Msg, field, v: Option<i64>| {
        if let Some(v) = v {
            m.field(|e| e.uint(field, v as u64));
        }
    };
    let ints = |m: &mut Msg, field, v: &[i32]| m.field(|e| e.repeated(field, v, s, 0, put_i32));
    if let Some(v) = l.uid {
        m.field(|e| e.fixed64(2, v));
    }
    int(&mut m, 3, l.req_time);
    if let Some(v) = l.item_id {
        m.field(|e| e.fixed64(4, v));
    }
    string(&mut m, 5, &l.req_id);
    ints(&mut m, 6, &l.actions);
    int(&mut m, 19, l.chnid);
    int(&mut m, 20, l.generate_time);
    int(&mut m, 21, l.emit_type.map(i64::from));
    ints(&mut m, 23, &l.pre_actions);
    string(&mut m, 25, &l.model_names);
    if let Some(v) = l.sample_rate {
        m.field(|e| e.fixed32(27, v.to_bits()));
    }
    ints(&mut m, 39, &l.special_strategies);
    string(&mut m, 41, &l.device_type);
    string(&mut m, 48, &l.cid);
    string(&mut m, 49, &l.user_id);
    int(&mut m, 87, l.is_draw.map(i64::from));
    int(&mut m, 145, l.rank.map(i64::from));
    string(&mut m, 235, &l.data_source_name);
    m.finish(s)
}

fn alt_named_feature(nf: &pb::NamedFeature, s: Style) -> Vec<u8> {
    let mut m = Msg::default();
    m.field(|e| e.len(1, nf.name.as_bytes()));
    if let Some(f) = &nf.feature {
        m.field(|e| e.len(2, &alt_feature(f, s)));
    }
    m.field(|e| e.uint(3, i64::from(nf.id) as u64));
    m.finish(s)
}

fn alt_example(x: &pb::Example, s: Style) -> Vec<u8> {
    let mut m = Msg::default();
    m.field(|e| x.named_feature.iter().for_each(|nf| e.len(1, &alt_named_feature(nf, s))));
    if let Some(l) = &x.line_id {
        m.field(|e| e.len(100, &alt_line_id(l, s)));
    }
    m.field(|e| e.repeated(101, &x.label, s, 5, put_f32));
    m.field(|e| e.fixed32(102, x.instance_weight.to_bits()));
    m.field(|e| e.uint(103, u64::from(x.data_source_key)));
    m.finish(s)
}

// ───────────────────────────── robustness ─────────────────────────────

/// Runs every view over `buf` and reads everything each offers. Errors are
/// expected; panics are the failure.
fn exercise_views(buf: &[u8]) {
    if let Ok(batch) = ExampleBatchView::parse(buf) {
        let _ = (batch.batch_size(), batch.data_source_key(), batch.list_count());
        for entry in batch.lists().flatten() {
            let _ = entry.name();
            if let Ok((_, features)) = entry.features() {
                features.iter().for_each(exercise_feature);
            }
        }
    }
    for base in [0, 1000] {
        if let Ok(ex) = ExampleView::parse(buf, base) {
            let _ = (ex.instance_weight(), ex.data_source_key(), ex.feature_count(), labels_of(&ex));
            if let Some((b, at)) = ex.line_id() {
                exercise_line_id(LineIdView::new(b, at));
            }
            for entry in ex.features().flatten() {
                let _ = entry.name;
                if let Some(Ok(f)) = entry.feature.map(|(body, at)| FeatureView::parse(body, at)) {
                    exercise_feature(&f);
                }
            }
        }
    }
    if let Ok(inst) = InstanceView::parse(buf) {
        let _ = (inst.instance_weight(), inst.data_source_key());
        let _ = (inst.fids(), inst.next_fids(), inst.values(), inst.labels(), inst.features());
        if let Some(l) = inst.line_id() {
            exercise_line_id(l);
        }
    }
    if let Ok(f) = FeatureView::parse(buf, 0) {
        exercise_feature(&f);
    }
    exercise_line_id(LineIdView::new(buf, 0));
}

fn exercise_feature(f: &FeatureView<'_>) {
    let _ = (f.kind(), f.fids(), f.floats());
    let _ = f.double_runs(|_| {});
    let _ = f.int64_values(|_| {});
    let _ = f.bytes_values(|b| exercise_line_id(LineIdView::new(b, 0)));
    let _ = f.inner_lists(|list, at| {
        let _ = for_each_fixed64(list, at, |_| {});
        let _ = for_each_fixed32(list, at, |_| {});
        let _ = for_each_varint(list, at, |_| {});
        let _ = for_each_bytes(list, at, |_, _| Ok(()));
        Ok(())
    });
    let _ = (f.int64_value(), f.float_value(), f.double_value(), f.bytes_value());
}

const ALL_TYPES: [&str; 16] = [
    "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64", "sfixed32", "sfixed64", "bool",
    "enum", "float", "double", "string", "bytes",
];

fn exercise_line_id(v: LineIdView<'_>) {
    let _ = v.validate();
    for k in KNOWN_FIELDS {
        let _ = v.values(k.number, k.ty, |_| {});
    }
    for ty in ALL_TYPES.iter().filter_map(|t| FieldType::parse(t)) {
        for number in [1, 6, 27, 145] {
            let _ = v.last(number, ty);
        }
    }
}

/// Prefix lengths to try: all of them for small inputs, about 160 for large.
fn prefix_lengths(len: usize) -> Vec<usize> {
    if len <= 400 {
        return (0..len).collect();
    }
    let step = len / 128;
    let mut out: Vec<usize> = (0..len).step_by(step).collect();
    out.extend(0..16);
    out.extend(len - 16..len);
    out
}

/// Up to four bytes xored at chosen positions.
fn corrupt(buf: &[u8], flips: &[(prop::sample::Index, u8)]) -> Vec<u8> {
    let mut out = buf.to_vec();
    if !out.is_empty() {
        for (i, x) in flips {
            let i = i.index(out.len());
            out[i] ^= (*x).max(1);
        }
    }
    out
}

fn flips() -> impl Strategy<Value = Vec<(prop::sample::Index, u8)>> {
    vec((any::<prop::sample::Index>(), any::<u8>()), 1..5)
}

/// Extraction with every plan, and every view, over `buf`: Ok or Err, no panic.
fn must_not_panic_batch(plans: &[Plan], buf: &[u8]) {
    for p in plans {
        let _ = fex::extract_batch(p, buf);
        let _ = fex::extract_examples(p, &[buf, buf]);
    }
    exercise_views(buf);
}

// ───────────────────────────── properties ─────────────────────────────

#[test]
fn native_batches_match_reference() {
    let (plan, model) = (plan(NATIVE_YAML), RefModel::parse(NATIVE_YAML));
    run_cases("native ExampleBatch", 192, batch_strategy(&model), |b| check_batch(&plan, &model, &b));
}

#[test]
fn monolith_batches_match_reference() {
    let (plan, model) = (plan(MONOLITH_YAML), RefModel::parse(MONOLITH_YAML));
    run_cases("monolith ExampleBatch", 192, batch_strategy(&model), |b| check_batch(&plan, &model, &b));
}

#[test]
fn native_examples_match_reference() {
    let (plan, model) = (plan(NATIVE_YAML), RefModel::parse(NATIVE_YAML));
    run_cases("native Examples", 128, examples_strategy(&model), |x| check_examples(&plan, &model, &x));
}

#[test]
fn monolith_examples_match_reference() {
    let (plan, model) = (plan(MONOLITH_YAML), RefModel::parse(MONOLITH_YAML));
    run_cases("monolith Examples", 128, examples_strategy(&model), |x| check_examples(&plan, &model, &x));
}

/// Outcomes equal, and tensors equal when both succeed.
fn same_extraction(
    a: Result<fex::Extracted, fex::ExtractError>,
    b: Result<fex::Extracted, fex::ExtractError>,
) -> Result<(), TestCaseError> {
    match (a, b) {
        (Ok(a), Ok(b)) => {
            for (x, y) in a.tensors().iter().zip(&b.tensors()) {
                prop_assert!(
                    x == y,
                    "tensor {} differs\n  canonical: {}\n  hand-encoded: {}",
                    x.name,
                    show(x),
                    show(y)
                );
            }
            prop_assert_eq!(a.columns.len(), b.columns.len());
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        (a, b) => {
            Err(TestCaseError::fail(format!("canonical: {:?}\nhand-encoded: {:?}", a.map(|_| "ok"), b.map(|_| "ok"))))
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// Unpacked or split runs, reversed fields, merged occurrences and unknown
    /// fields decode (by prost) to the same message and extract the same.
    #[test]
    fn every_wire_layout_extracts_alike(batch in batch_strategy(&RefModel::parse(NATIVE_YAML)), s in style()) {
        let canonical = batch.encode_to_vec();
        let alt = alt_batch(&batch, s);
        let fit = alt_batch(&batch, Style { misfit: false, ..s });
        let decoded = pb::ExampleBatch::decode(fit.as_slice()).expect("hand encoding decodes");
        prop_assert_eq!(decoded.encode_to_vec(), canonical.clone());
        for p in [plan(NATIVE_YAML), plan(MONOLITH_YAML)] {
            same_extraction(fex::extract_batch(&p, &canonical), fex::extract_batch(&p, &alt))?;
        }
    }

    #[test]
    fn every_wire_layout_extracts_alike_examples(examples in examples_strategy(&RefModel::parse(NATIVE_YAML)), s in style()) {
        let canonical: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
        let alt: Vec<Vec<u8>> = examples.iter().map(|x| alt_example(x, s)).collect();
        for (x, canon) in examples.iter().zip(&canonical) {
            let fit = alt_example(x, Style { misfit: false, ..s });
            let decoded = pb::Example::decode(fit.as_slice()).expect("hand encoding decodes");
            prop_assert_eq!(&decoded.encode_to_vec(), canon);
        }
        for p in [plan(NATIVE_YAML), plan(MONOLITH_YAML)] {
            same_extraction(fex::extract_examples(&p, &slices(&canonical)), fex::extract_examples(&p, &slices(&alt)))?;
        }
    }

    #[test]
    fn alt_line_ids_decode_alike(lid in line_id(), s in style()) {
        let decoded = LineId::decode(alt_line_id(&lid, s).as_slice()).expect("decodes");
        prop_assert_eq!(decoded.encode_to_vec(), lid.encode_to_vec());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every prefix of a valid batch, and corrupted copies, give Ok or Err.
    #[test]
    fn truncated_or_corrupted_batches_never_panic(batch in batch_strategy(&RefModel::parse(NATIVE_YAML)), flips in vec(flips(), 4)) {
        let plans = [plan(NATIVE_YAML), plan(MONOLITH_YAML), Plan::default_model()];
        let bytes = batch.encode_to_vec();
        for n in prefix_lengths(bytes.len()) {
            must_not_panic_batch(&plans, &bytes[..n]);
        }
        for f in &flips {
            must_not_panic_batch(&plans, &corrupt(&bytes, f));
        }
    }

    /// The same for Examples: one corrupted or truncated among valid ones.
    #[test]
    fn truncated_or_corrupted_examples_never_panic(
        examples in examples_strategy(&RefModel::parse(MONOLITH_YAML)).prop_filter("non-empty", |x| !x.is_empty()),
        victim in any::<prop::sample::Index>(),
        flips in vec(flips(), 4),
    ) {
        let plans = [plan(NATIVE_YAML), plan(MONOLITH_YAML)];
        let mut bufs: Vec<Vec<u8>> = examples.iter().map(Message::encode_to_vec).collect();
        let v = victim.index(bufs.len());
        let whole = bufs[v].clone();
        let run = |bufs: &[Vec<u8>]| {
            for p in &plans {
                let _ = fex::extract_examples(p, &slices(bufs));
            }
            exercise_views(&bufs[v]);
        };
        for n in prefix_lengths(whole.len()) {
            bufs[v] = whole[..n].to_vec();
            run(&bufs);
        }
        for f in &flips {
            bufs[v] = corrupt(&whole, f);
            run(&bufs);
        }
    }

    /// Legacy Instances and bare LineIds through their views.
    #[test]
    fn truncated_or_corrupted_instances_never_panic(inst in instance_strategy(), lid in line_id_bytes(), flips in vec(flips(), 4)) {
        for bytes in [inst.encode_to_vec(), lid] {
            for n in prefix_lengths(bytes.len()) {
                exercise_views(&bytes[..n]);
            }
            for f in &flips {
                exercise_views(&corrupt(&bytes, f));
            }
        }
    }
}

// ───────────────────────────── fixed cases ─────────────────────────────

/// A hand-encoded batch — batch_size first, each list's type before its
/// features and its name last, fids unpacked — extracts exactly like prost's.
#[test]
fn unpacked_fids_in_reverse_field_order() {
    let fids = [1u64, (3 << 54) | 5, u64::MAX];
    let batch = pb::ExampleBatch {
        batch_size: 2,
        named_feature_list: vec![
            pb::NamedFeatureList {
                name: "item_id".into(),
                feature: vec![
                    pb::Feature { r#type: Some(T::FidV2List(fid_list(fids.to_vec()))) },
                    pb::Feature { r#type: Some(T::FidV1List(fid_list(fids.to_vec()))) },
                ],
                r#type: 0,
                id: 0,
            },
            pb::NamedFeatureList {
                name: "user_id".into(),
                feature: vec![pb::Feature { r#type: Some(T::FidV2List(fid_list(vec![9]))) }],
                r#type: 1,
                id: 0,
            },
        ],
        ..Default::default()
    };
    let mut e = Enc::default();
    e.uint(3, 2);
    let mut item = Enc::default();
    item.uint(3, 0);
    for kind in [2, 1] {
        let mut body = Enc::default();
        fids.iter().for_each(|&f| body.fixed64(1, f));
        let mut feature = Enc::default();
        feature.len(kind, &body.0);
        item.len(2, &feature.0);
    }
    item.len(1, b"item_id");
    e.len(1, &item.0);
    let mut user = Enc::default();
    user.uint(3, 1);
    let mut body = Enc::default();
    body.fixed64(1, 9);
    let mut feature = Enc::default();
    feature.len(2, &body.0);
    user.len(2, &feature.0);
    user.len(1, b"user_id");
    e.len(1, &user.0);

    assert_eq!(pb::ExampleBatch::decode(e.0.as_slice()).unwrap(), batch);
    let plan = plan(NATIVE_YAML);
    let canonical = fex::extract_batch(&plan, &batch.encode_to_vec()).unwrap();
    let hand = fex::extract_batch(&plan, &e.0).unwrap();
    assert_eq!(canonical, hand);
    let item_id = hand.tensor("item_id").unwrap();
    let converted: Vec<u64> = fids.iter().map(|&f| v1_to_v2(f)).collect();
    assert_eq!(item_id.ragged_u64(), vec![fids.to_vec(), converted]);
    let user_id = hand.tensor("user_id").unwrap();
    assert_eq!((user_id.shape.clone(), user_id.shared, user_id.ragged_u64()), (vec![1, -1], true, vec![vec![9]]));
}

/// The test models themselves: the reference reads the same outputs the plan has.
#[test]
fn reference_models_match_plans() {
    for yaml in [NATIVE_YAML, MONOLITH_YAML] {
        let (plan, model) = (plan(yaml), RefModel::parse(yaml));
        let names: Vec<&str> = plan.outputs.iter().map(|o| o.name.as_str()).collect();
        let ref_names: Vec<&str> = model.outputs.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ref_names);
        for (spec, out) in plan.signature().iter().zip(&model.outputs) {
            let (layout, dtype, splits) = out.layout();
            assert_eq!(
                (spec.layout, spec.dtype, spec.splits_dtype),
                (layout as i32, dtype as i32, splits as i32),
                "{}",
                out.name
            );
            assert_eq!(spec.shape[1..], out.inner_shape()[..], "{}", out.name);
        }
    }
}
