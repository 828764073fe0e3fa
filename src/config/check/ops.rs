//! `op:` entries: inputs resolved by name in any order (unknown names and
//! cycles are errors), input layouts checked, each compiled into an
//! `Op::Derived` output once its inputs exist, so outputs stay in
//! dependency order.

use super::{Checker, Files};
use crate::config::plan::{Op, Output};
use crate::config::raw::{RawEntry, RawOp};
use crate::proto::fex_v1::{DataType, Layout};

/// What an input must be for an operator.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Need {
    /// Ragged ids (sparse features or id operators).
    Ids,
    /// Ragged ids or one string per row.
    IdsOrStrings,
    /// Ragged ids, or an id sequence mapped position by position.
    IdsOrSequence,
    /// Ragged ids, one string per row, or an id sequence.
    IdsStringsOrSequence,
    /// Dense numbers.
    Dense,
    /// Dense numbers, or a sequence mapped value by value.
    DenseOrSequence,
    /// Dense numbers, or a float sequence (`expr` per position).
    DenseOrFloatSequence,
}

/// The names a model declares, and those of them that had errors.
pub(super) struct Declared {
    pub names: Vec<String>,
    pub failed: Vec<String>,
}

/// Compiles every op entry once its inputs exist; `outputs` grows as they do.
/// A name no entry declares is unknown; a declared feature that had errors
/// (a bad kind, say) is named as such by the entries that read it.
pub(super) fn resolve(
    cx: &mut Checker,
    outputs: &mut Vec<Output>,
    entries: Vec<(RawEntry, RawOp)>,
    declared: Declared,
    files: Files<'_>,
) {
    let Declared { names: declared, mut failed } = declared;
    let mut pending = entries;
    while !pending.is_empty() {
        let before = pending.len();
        let mut waiting = Vec::new();
        for (entry, op) in pending {
            let (names, key) = &entry.inputs;
            // Declared by an entry, or made by one (a sequence's positions).
            let known = |n: &&String| declared.contains(n) || outputs.iter().any(|o| &o.name == *n);
            let unknown: Vec<&String> = names.iter().filter(|n| !known(n)).collect();
            for name in &unknown {
                cx.error(format!("{}.{key}", entry.path), format!("unknown feature {name:?}"));
            }
            if !unknown.is_empty() {
                failed.push(entry.name.clone());
                continue;
            }
            if let Some(bad) = names.iter().find(|n| failed.contains(n)) {
                // Its own errors are reported; say why this one is skipped.
                cx.error(format!("{}.{key}", entry.path), format!("{bad:?} has errors, so this cannot be built"));
                failed.push(entry.name.clone());
                continue;
            }
            let found: Option<Vec<usize>> = names.iter().map(|n| outputs.iter().position(|o| &o.name == n)).collect();
            match found {
                Some(inputs) => match compile(cx, &entry, &op, &inputs, outputs, files) {
                    Some(out) => outputs.push(out),
                    None => failed.push(entry.name.clone()),
                },
                None => waiting.push((entry, op)),
            }
        }
        if waiting.len() == before {
            report_cycles(cx, &waiting, outputs);
            return;
        }
        pending = waiting;
    }
}

/// Entries still waiting when nothing more can be built wait on each other.
fn report_cycles(cx: &mut Checker, waiting: &[(RawEntry, RawOp)], outputs: &[Output]) {
    for (entry, _) in waiting {
        let (names, key) = &entry.inputs;
        for name in names.iter().filter(|n| outputs.iter().all(|o| &o.name != *n)) {
            cx.error(format!("{}.{key}", entry.path), format!("{name:?} depends on {:?} in a cycle", entry.name));
        }
    }
}

fn compile(
    cx: &mut Checker,
    entry: &RawEntry,
    op: &RawOp,
    inputs: &[usize],
    outputs: &[Output],
    files: Files<'_>,
) -> Option<Output> {
    let before = cx.count();
    let ins: Vec<&Output> = inputs.iter().map(|&i| &outputs[i]).collect();
    let transform = cx.transform(entry, op, &ins, files)?;
    if cx.count() > before {
        return None;
    }
    let shape = transform.dense_shape.clone();
    Some(Output {
        name: entry.name.clone(),
        op: Op::Derived(transform),
        shared_once: false,
        shape,
        inputs: inputs.to_vec(),
        visible: entry.visible,
    })
}

impl Checker {
    /// Whether `ins` are `count` inputs of the kind `need`; reports each bad one.
    pub(super) fn inputs_fit(
        &mut self,
        entry: &RawEntry,
        ins: &[&Output],
        need: Need,
        count: std::ops::RangeInclusive<usize>,
    ) -> bool {
        let (path, op) = (&entry.path, &entry.tag);
        if !count.contains(&ins.len()) {
            let key = if *count.end() == 1 { "input" } else { "inputs" };
            self.error(format!("{path}.{key}"), format!("op {op} takes {count:?} inputs, found {}", ins.len()));
            return false;
        }
        let mut ok = true;
        for o in ins {
            let (layout, dtype, _) = o.layout();
            let any_ids = layout == Layout::Ragged && matches!(dtype, DataType::I64 | DataType::U64);
            let sequence = sequence_width(o).is_some();
            let ids = any_ids && !sequence;
            let strings = layout == Layout::Strings;
            let (fits, want) = match need {
                Need::Ids => (ids, "ragged ids"),
                Need::IdsOrStrings => (ids || strings, "ragged ids or strings"),
                Need::IdsOrSequence => (any_ids, "ragged ids or an id sequence"),
                Need::IdsStringsOrSequence => (any_ids || strings, "ragged ids, strings or an id sequence"),
                Need::Dense => (layout == Layout::Dense, "a dense tensor"),
                Need::DenseOrSequence => (layout == Layout::Dense || sequence, "a dense tensor or a sequence"),
                Need::DenseOrFloatSequence => {
                    let floats = sequence && matches!(dtype, DataType::F32 | DataType::F64);
                    (layout == Layout::Dense || floats, "a dense tensor or a float sequence (f32, f64)")
                }
            };
            if !fits {
                let kind = if sequence { ", a sequence" } else { "" };
                let found = format!("{} {}{kind}", layout.as_str_name(), dtype.as_str_name());
                self.error(format!("{path}.input"), format!("op {op} takes {want}; {:?} is {found}", o.name));
                ok = false;
            }
        }
        ok
    }
}

/// Values per position when `o` is a sequence (`[B, -1, width]`): the
/// `sequence` kind, or an operator that mapped one position by position.
pub(super) fn sequence_width(o: &Output) -> Option<i64> {
    match &o.op {
        Op::Sequence { width, .. } => Some(*width as i64),
        Op::Derived(t) if t.layout == Layout::Ragged && t.spec_shape.len() == 3 => t.spec_shape.last().copied(),
        _ => None,
    }
}
