//! Stage two for `op:` entries: resolve inputs by name (any order; cycles and
//! unknown names are errors), check each operator's parameters and input
//! types, and compile them into `Op::Derived` outputs in dependency order.

use std::path::Path;
use std::sync::Arc;

use super::plan::{Op, Output, Source};
use super::raw::RawFeature;
use super::validate::Checker;
use crate::ops::{Transform, TransformKind, Vocab};
use crate::proto::fex_v1::{DataType, Layout};

pub(super) const OPS: &str = "v1_to_v2, slot, reslot, hash, filter_slots, cross, vocab, ln, clip, normalize, bucketize, cast, scale, pow, group, kjt, concat, multi_hot";

/// What an input must be for an operator.
#[derive(Clone, Copy, PartialEq)]
enum Need {
    /// Ragged ids (sparse features or id operators).
    Ids,
    /// Ragged ids or one string per row.
    IdsOrStrings,
    /// Dense numbers.
    Dense,
}

/// Compiles every op entry once its inputs exist; `outputs` grows as they do.
pub(super) fn resolve(
    cx: &mut Checker,
    outputs: &mut Vec<Output>,
    entries: Vec<(String, RawFeature)>,
    base_dir: &Path,
) {
    let mut pending = entries;
    let mut failed: Vec<String> = Vec::new();
    while !pending.is_empty() {
        let before = pending.len();
        let mut waiting = Vec::new();
        for (path, raw) in pending {
            let names = input_names(&raw);
            if let Some(bad) = names.iter().find(|n| failed.contains(n)) {
                // Its own errors are reported; say why this one is skipped.
                let key = if raw.input.is_some() { "input" } else { "inputs" };
                cx.error(format!("{path}.{key}"), format!("{bad:?} has errors, so this cannot be built"));
                failed.push(raw.name.clone());
                continue;
            }
            let found: Vec<Option<usize>> = names.iter().map(|n| outputs.iter().position(|o| &o.name == n)).collect();
            if found.iter().all(Option::is_some) {
                let inputs: Vec<usize> = found.into_iter().flatten().collect();
                match compile(cx, &path, &raw, &inputs, outputs, base_dir) {
                    Some(out) => outputs.push(out),
                    None => failed.push(raw.name.clone()),
                }
            } else {
                waiting.push((path, raw));
            }
        }
        if waiting.len() == before {
            report_unresolved(cx, &waiting, outputs);
            return;
        }
        pending = waiting;
    }
}

fn input_names(raw: &RawFeature) -> Vec<String> {
    raw.inputs.clone().unwrap_or_default().into_iter().chain(raw.input.clone()).collect()
}

/// Names nothing defines, or entries that wait on each other (a cycle).
fn report_unresolved(cx: &mut Checker, waiting: &[(String, RawFeature)], outputs: &[Output]) {
    for (path, raw) in waiting {
        for name in input_names(raw) {
            let defined = outputs.iter().any(|o| o.name == name) || waiting.iter().any(|(_, w)| w.name == name);
            let key = if raw.input.is_some() { "input" } else { "inputs" };
            if !defined {
                cx.error(format!("{path}.{key}"), format!("unknown feature {name:?}"));
            } else if outputs.iter().all(|o| o.name != name) {
                cx.error(format!("{path}.{key}"), format!("{name:?} depends on {:?} in a cycle", raw.name));
            }
        }
    }
}

fn compile(
    cx: &mut Checker,
    path: &str,
    raw: &RawFeature,
    inputs: &[usize],
    outputs: &[Output],
    base: &Path,
) -> Option<Output> {
    let before = cx.errors.len();
    let op = raw.op.as_deref().unwrap_or_default();
    let allowed = allowed_keys(op);
    let Some(allowed) = allowed else {
        cx.error(format!("{path}.op"), format!("unknown operator {op:?}, expected one of {OPS}"));
        return None;
    };
    for key in raw.present_keys() {
        if !allowed.contains(&key) {
            cx.error(format!("{path}.{key}"), format!("not allowed for op {op}"));
        }
    }
    if !raw.kind.is_empty() {
        cx.error(format!("{path}.kind"), "a feature has either a kind (read from the sample) or an op, not both");
    }
    let ins: Vec<&Output> = inputs.iter().map(|&i| &outputs[i]).collect();
    let transform = transform(cx, path, raw, op, &ins, base)?;
    if cx.errors.len() > before {
        return None;
    }
    let shape = transform.dense_shape.clone();
    Some(Output {
        name: raw.name.clone(),
        source: Source::Derived,
        op: Op::Derived(transform),
        shared_once: false,
        shape,
        inputs: inputs.to_vec(),
        visible: raw.output.unwrap_or(true),
    })
}

fn allowed_keys(op: &str) -> Option<&'static [&'static str]> {
    Some(match op {
        "v1_to_v2" | "cast" | "concat" | "group" | "kjt" => &["input", "inputs", "dtype", "splits"],
        "slot" => &["input", "method", "splits"],
        "reslot" => &["input", "slot", "splits"],
        "hash" => &["input", "buckets", "splits"],
        "filter_slots" => &["input", "slots", "splits"],
        "cross" => &["inputs", "buckets", "slot", "max_per_row", "splits"],
        "vocab" => &["input", "file", "splits"],
        "ln" => &["input", "c", "floor"],
        "clip" => &["input", "min", "max"],
        "normalize" => &["input", "method", "mean", "std", "min", "max"],
        "bucketize" => &["input", "boundaries"],
        "scale" => &["input", "factor"],
        "pow" => &["input", "exponent"],
        "multi_hot" => &["inputs", "num_embeddings", "min_table_size", "multi_hot_size"],
        _ => return None,
    })
}

/// The kind of values an output holds, for input checks.
fn class(o: &Output) -> (Layout, DataType, bool) {
    let (layout, dtype, _) = o.layout();
    let sequence = matches!(o.op, Op::Sequence { .. });
    (layout, dtype, sequence)
}

fn check_inputs(
    cx: &mut Checker,
    path: &str,
    op: &str,
    ins: &[&Output],
    need: Need,
    count: std::ops::RangeInclusive<usize>,
) -> bool {
    if !count.contains(&ins.len()) {
        let key = if *count.end() == 1 { "input" } else { "inputs" };
        cx.error(format!("{path}.{key}"), format!("op {op} takes {count:?} inputs, found {}", ins.len()));
        return false;
    }
    let mut ok = true;
    for o in ins {
        let (layout, dtype, sequence) = class(o);
        let ids = layout == Layout::Ragged && matches!(dtype, DataType::I64 | DataType::U64) && !sequence;
        let fits = match need {
            Need::Ids => ids,
            Need::IdsOrStrings => ids || layout == Layout::Strings,
            Need::Dense => layout == Layout::Dense,
        };
        if !fits {
            let want = match need {
                Need::Ids => "ragged ids",
                Need::IdsOrStrings => "ragged ids or strings",
                Need::Dense => "a dense tensor",
            };
            let found = format!("{} {}", layout.as_str_name(), dtype.as_str_name());
            cx.error(format!("{path}.input"), format!("op {op} takes {want}; {:?} is {found}", o.name));
            ok = false;
        }
    }
    ok
}

fn ragged(kind: TransformKind, splits: DataType) -> Transform {
    Transform {
        kind,
        layout: Layout::Ragged,
        dtype: DataType::I64,
        splits,
        spec_shape: vec![-1, -1],
        dense_shape: vec![],
    }
}

fn dense(kind: TransformKind, dtype: DataType, shape: Vec<i64>) -> Transform {
    let mut spec_shape = vec![-1];
    spec_shape.extend(&shape);
    Transform { kind, layout: Layout::Dense, dtype, splits: DataType::Unspecified, spec_shape, dense_shape: shape }
}

fn keyed(kind: TransformKind, keys: usize) -> Transform {
    let spec_shape = vec![keys as i64, -1];
    Transform {
        kind,
        layout: Layout::KeyedJagged,
        dtype: DataType::I64,
        splits: DataType::I64,
        spec_shape,
        dense_shape: vec![],
    }
}

/// The dense dimensions (after rows) of a dense output.
fn dims(o: &Output) -> Vec<i64> {
    match &o.op {
        Op::Derived(t) => t.dense_shape.clone(),
        Op::Weight => vec![],
        _ => o.shape.clone(),
    }
}

fn transform(
    cx: &mut Checker,
    path: &str,
    raw: &RawFeature,
    op: &str,
    ins: &[&Output],
    base: &Path,
) -> Option<Transform> {
    use TransformKind as K;
    let splits = cx.splits(path, raw);
    let one = |cx: &mut Checker, need| check_inputs(cx, path, op, ins, need, 1..=1);
    let many = |cx: &mut Checker, need, min| check_inputs(cx, path, op, ins, need, min..=crate::ops::MAX_INPUTS);
    Some(match op {
        "v1_to_v2" => one(cx, Need::Ids).then(|| ragged(K::V1ToV2, splits))?,
        "slot" => {
            let v1 = match raw.method.as_deref() {
                None | Some("v2") => false,
                Some("v1") => true,
                Some(m) => {
                    cx.error(format!("{path}.method"), format!("found {m:?}, expected v1 or v2"));
                    false
                }
            };
            one(cx, Need::Ids).then(|| ragged(K::Slot { v1 }, splits))?
        }
        "reslot" => {
            let slot = cx.required_u64(path, "slot", raw.slot, 0..=0x7fff);
            one(cx, Need::Ids).then(|| ragged(K::Reslot { slot }, splits))?
        }
        "hash" => {
            let buckets = cx.required_u64(path, "buckets", raw.buckets, 1..=u64::MAX);
            one(cx, Need::IdsOrStrings).then(|| ragged(K::Hash { buckets }, splits))?
        }
        "filter_slots" => {
            let mut slots = raw.slots.clone().unwrap_or_default();
            if slots.is_empty() || slots.iter().any(|&s| s > 0x7fff) {
                cx.error(
                    format!("{path}.slots"),
                    format!("found {slots:?}, expected a non-empty list of slots 0..=32767"),
                );
            }
            slots.sort_unstable();
            one(cx, Need::Ids).then(|| ragged(K::FilterSlots { slots }, splits))?
        }
        "cross" => {
            let buckets = raw.buckets.map(|b| cx.required_u64(path, "buckets", Some(b), 1..=u64::MAX));
            let slot = raw.slot.map(|s| cx.required_u64(path, "slot", Some(s), 0..=0x7fff));
            let max_per_row =
                cx.required_u64(path, "max_per_row", raw.max_per_row.or(Some(1024)), 1..=1 << 20) as usize;
            many(cx, Need::IdsOrStrings, 2).then(|| ragged(K::Cross { buckets, slot, max_per_row }, splits))?
        }
        "vocab" => {
            let file = raw.file.as_deref().unwrap_or_default();
            if file.is_empty() {
                cx.error(format!("{path}.file"), "missing; name the vocabulary file (one entry per line)");
                return None;
            }
            match Vocab::load(&base.join(file)) {
                Ok(v) => {
                    cx.files.push((v.path.clone(), v.digest));
                    one(cx, Need::IdsOrStrings).then(|| ragged(K::Vocab(Arc::new(v)), splits))?
                }
                Err(e) => {
                    cx.error(format!("{path}.file"), e);
                    return None;
                }
            }
        }
        "group" => many(cx, Need::Ids, 1).then(|| ragged(K::Group, splits))?,
        "kjt" => {
            let keys = ins.iter().map(|o| o.name.clone()).collect::<Vec<_>>();
            let n = keys.len();
            many(cx, Need::Ids, 1).then(|| keyed(K::KeyedJagged { keys }, n))?
        }
        "multi_hot" => {
            let inputs_ok = many(cx, Need::Ids, 1);
            multi_hot(cx, path, raw, ins, inputs_ok)?
        }
        "concat" => {
            let width: i64 = ins.iter().map(|o| dims(o).iter().product::<i64>()).sum();
            many(cx, Need::Dense, 1).then(|| dense(K::Concat, DataType::F32, vec![width]))?
        }
        _ => numeric(cx, path, raw, op, ins)?,
    })
}

fn multi_hot(cx: &mut Checker, path: &str, raw: &RawFeature, ins: &[&Output], inputs_ok: bool) -> Option<Transform> {
    let num_embeddings = raw.num_embeddings.clone().unwrap_or_default();
    if num_embeddings.len() != ins.len() || num_embeddings.contains(&0) {
        let msg =
            format!("found {num_embeddings:?}, expected one positive table size per input ({} inputs)", ins.len());
        cx.error(format!("{path}.num_embeddings"), msg);
    }
    let min_table_size = cx.required_u64(path, "min_table_size", raw.min_table_size, 1..=u64::MAX);
    let size = cx.required_u64(path, "multi_hot_size", raw.multi_hot_size, 1..=1024) as usize;
    let keys: Vec<String> = ins.iter().map(|o| o.name.clone()).collect();
    let n = keys.len();
    inputs_ok.then(|| keyed(TransformKind::MultiHot { keys, num_embeddings, min_table_size, size }, n))
}

fn numeric(cx: &mut Checker, path: &str, raw: &RawFeature, op: &str, ins: &[&Output]) -> Option<Transform> {
    use TransformKind as K;
    let finite = |cx: &mut Checker, key: &str, v: Option<f64>, default: Option<f64>| match v.or(default) {
        Some(x) if x.is_finite() => x,
        Some(x) => {
            cx.error(format!("{path}.{key}"), format!("found {x}, expected a finite number"));
            0.0
        }
        None => {
            cx.error(format!("{path}.{key}"), format!("missing; required for op {op}"));
            0.0
        }
    };
    let kind = match op {
        "ln" => K::Ln { c: finite(cx, "c", raw.c, Some(1.0)), floor: finite(cx, "floor", raw.floor, Some(0.0)) },
        "clip" => {
            let (min, max) = (raw.min.unwrap_or(f64::NEG_INFINITY), raw.max.unwrap_or(f64::INFINITY));
            if raw.min.is_none() && raw.max.is_none() || min.is_nan() || max.is_nan() || min > max {
                cx.error(
                    format!("{path}.min"),
                    format!("found min {min} and max {max}; give min, max or both with min <= max"),
                );
            }
            K::Clip { min, max }
        }
        "normalize" => normalize(cx, path, raw, &finite)?,
        "bucketize" => {
            let b = raw.boundaries.clone().unwrap_or_default();
            if b.is_empty() || b.iter().any(|x| !x.is_finite()) || b.windows(2).any(|w| w[0] >= w[1]) {
                cx.error(
                    format!("{path}.boundaries"),
                    format!("found {b:?}, expected finite numbers in strictly increasing order"),
                );
            }
            K::Bucketize { boundaries: b }
        }
        "cast" => K::Cast,
        "scale" => K::Scale { factor: finite(cx, "factor", raw.factor, None) },
        "pow" => K::Pow { exponent: finite(cx, "exponent", raw.exponent, None) },
        _ => {
            cx.error(format!("{path}.op"), format!("unknown operator {op:?}, expected one of {OPS}"));
            return None;
        }
    };
    let dtype = match &kind {
        K::Bucketize { .. } => DataType::I64,
        K::Cast => cx.dtype(path, raw, &[DataType::F32, DataType::F64, DataType::I64, DataType::I32], DataType::F32),
        _ => DataType::F32,
    };
    if !check_inputs(cx, path, op, ins, Need::Dense, 1..=1) {
        return None;
    }
    Some(dense(kind, dtype, dims(ins[0])))
}

/// Reads a finite number parameter (value, default), reporting errors.
type Finite<'f> = &'f dyn Fn(&mut Checker, &str, Option<f64>, Option<f64>) -> f64;

fn normalize(cx: &mut Checker, path: &str, raw: &RawFeature, finite: Finite<'_>) -> Option<TransformKind> {
    match raw.method.as_deref() {
        Some("zscore") => {
            let (mean, std) = (finite(cx, "mean", raw.mean, None), finite(cx, "std", raw.std, None));
            if std <= 0.0 {
                cx.error(format!("{path}.std"), format!("found {std}, expected a positive number"));
            }
            Some(TransformKind::ZScore { mean, std })
        }
        Some("minmax") => {
            let (min, max) = (finite(cx, "min", raw.min, None), finite(cx, "max", raw.max, None));
            if min >= max {
                cx.error(format!("{path}.max"), format!("found min {min} and max {max}, expected min < max"));
            }
            Some(TransformKind::MinMax { min, max })
        }
        other => {
            cx.error(format!("{path}.method"), format!("found {other:?}, expected zscore or minmax"));
            None
        }
    }
}
