//! Sample-reading features (`kind:`): each kind's keys checked and compiled
//! into an [`Op`] that carries the index of the list it reads.

use super::Checker;
use crate::config::plan::{Compat, LineIdField, Op, Output, Task};
use crate::config::raw::{RawEntry, RawKind, RawTask, Scope, entries, read};
use crate::ops::{Transform, TransformKind};
use crate::proto::fex_v1::{DataType, Layout};
use crate::view::known_field;

/// Reserved list names and the kind that reads each.
const RESERVED: &[(&str, &str)] =
    &[("__LABEL__", "label"), ("__LINE_ID__", "line_id"), ("instance_weight", "instance_weight")];

impl Checker {
    /// Checks one `kind:` entry; the output, and whether it is a sequence to
    /// expand per position. `None` when it had errors.
    pub(super) fn kind(&mut self, entry: &RawEntry, kind: &RawKind) -> Option<(Output, bool)> {
        let before = self.count();
        let path = entry.path.as_str();
        let (op, shape, per_position, shared) = match kind {
            RawKind::Sparse(k) => (self.sparse(entry, k), vec![], false, k.shared.as_deref()),
            RawKind::Dense(k) => {
                let (op, shape) = self.dense(entry, k);
                (op, shape, false, k.shared.as_deref())
            }
            RawKind::String(k) => {
                let source = self.list(entry, k.source.as_deref());
                if k.join.is_some() && self.compat == Compat::Monolith {
                    let message = "is fex's own (Monolith reads bytes_list[0] only); use compat: native";
                    self.error(format!("{path}.join"), message);
                }
                let join = k.join.as_ref().map(|j| j.as_bytes().to_vec());
                (Op::String { source, join }, self.unit_shape(), false, k.shared.as_deref())
            }
            RawKind::Sequence(k) => {
                (self.sequence(entry, k), vec![], k.per_position == Some(true), k.shared.as_deref())
            }
            RawKind::List(k) => (self.list_kind(entry, k), vec![], false, k.shared.as_deref()),
            RawKind::LineId(k) => {
                let (op, shape) = self.line_id(path, k);
                (op, shape, false, None)
            }
            RawKind::Label(k) => {
                let (dim, shape) = self.shape(path, k.shape.as_deref());
                (Op::Label { dim, default: self.default_value(path, k.default) }, shape, false, None)
            }
            RawKind::Weight => (Op::Weight, self.unit_shape(), false, None),
            RawKind::ActionLabel(k) => {
                let tasks = self.tasks(path, k.tasks.as_deref().unwrap_or_default());
                let shape = vec![tasks.len() as i64];
                (Op::ActionLabel { tasks }, shape, false, None)
            }
        };
        let shared_once = self.shared_once(path, shared);
        if self.count() > before {
            return None;
        }
        // A per-position sequence is internal: its positions are the outputs.
        let visible = entry.visible && !per_position;
        let output = Output { name: entry.name.clone(), op, shared_once, shape, inputs: vec![], visible };
        Some((output, per_position))
    }

    /// The shape after the rows of a weight or string output: none in native
    /// mode (`[B]`); Monolith allocates every non-ragged output as
    /// `{batch_size, shape}` (parse_example_lib.cc:73), so `[B, 1]`.
    pub(super) fn unit_shape(&self) -> Vec<i64> {
        match self.compat {
            Compat::Native => vec![],
            Compat::Monolith => vec![1],
        }
    }

    /// The index of the list a feature reads (`source`, else its name).
    fn list(&mut self, entry: &RawEntry, source: Option<&str>) -> usize {
        let name = source.unwrap_or(&entry.name);
        if let Some((_, reserved_kind)) = RESERVED.iter().find(|(reserved, _)| *reserved == name) {
            let key = if source.is_some() { "source" } else { "name" };
            let message = format!("{name:?} is reserved; declare it with kind: {reserved_kind}");
            self.error(format!("{}.{key}", entry.path), message);
        }
        if name == "label" && self.compat == Compat::Monolith {
            let key = if source.is_some() { "source" } else { "name" };
            let message = "\"label\" is the label in compat: monolith (Monolith's kernels fill the label from it); declare it with kind: label";
            self.error(format!("{}.{key}", entry.path), message);
        }
        self.source(name)
    }

    fn sparse(&mut self, entry: &RawEntry, k: &entries::Sparse) -> Op {
        let path = entry.path.as_str();
        let values = self.dtype(path, k.dtype.as_deref(), &[DataType::I64, DataType::U64], DataType::I64);
        let splits = self.splits(path, k.splits.as_deref());
        Op::Sparse { source: self.list(entry, k.source.as_deref()), values, splits }
    }

    fn dense(&mut self, entry: &RawEntry, k: &entries::Dense) -> (Op, Vec<i64>) {
        let path = entry.path.as_str();
        let allowed = [DataType::F32, DataType::F64, DataType::I64];
        let dtype = self.dtype(path, k.dtype.as_deref(), &allowed, DataType::F32);
        if dtype == DataType::F64 && self.compat == Compat::Monolith {
            self.error(format!("{path}.dtype"), "f64 dense features abort Monolith; use f32 or compat: native");
        }
        let (dim, shape) = self.shape(path, k.shape.as_deref());
        let name = k.source.as_deref().unwrap_or(&entry.name);
        // The LineId fallback of `__meta__` names is fex's (seed 001 writes
        // both); Monolith's kernel reads them as ordinary dense names.
        let meta = match self.compat {
            Compat::Native => name.strip_prefix("__meta__").and_then(known_field).map(LineIdField::known),
            Compat::Monolith => None,
        };
        let default = self.default_value(path, k.default);
        let source = self.list(entry, k.source.as_deref());
        (Op::Dense { source, dtype, dim, default, meta }, shape)
    }

    fn sequence(&mut self, entry: &RawEntry, k: &entries::Sequence) -> Op {
        let path = entry.path.as_str();
        let allowed = [DataType::I64, DataType::U64, DataType::F32, DataType::F64];
        let dtype = self.dtype(path, k.dtype.as_deref(), &allowed, DataType::I64);
        let max_len = self.bounded(path, "max_len", k.max_len, None, 65_536);
        let width = self.bounded(path, "width", k.width, Some(1), 4_096);
        let splits = self.splits(path, k.splits.as_deref());
        let source = self.list(entry, k.source.as_deref());
        Op::Sequence { source, dtype, max_len, width, splits }
    }

    /// `list`: every value of a float, double or int64 list, a ragged row
    /// (fex's own, for a lookup's map given as lists: `dense` copies a
    /// fixed prefix and loses a list's length).
    fn list_kind(&mut self, entry: &RawEntry, k: &entries::List) -> Op {
        let path = entry.path.as_str();
        if self.compat == Compat::Monolith {
            self.error(format!("{path}.kind"), "list is fex's own (Monolith has no such feature); use compat: native");
        }
        let allowed = [DataType::F32, DataType::F64, DataType::I64];
        let dtype = self.dtype(path, k.dtype.as_deref(), &allowed, DataType::F32);
        let splits = self.splits(path, k.splits.as_deref());
        Op::List { source: self.list(entry, k.source.as_deref()), dtype, splits }
    }

    fn tasks(&mut self, path: &str, tasks: &[serde_norway::Mapping]) -> Vec<Task> {
        if tasks.is_empty() && !self.reported(&format!("{path}.tasks")) {
            self.error(format!("{path}.tasks"), "missing; list tasks as {pos: [actions], neg: [actions]}");
        }
        let mut out = Vec::new();
        for (i, map) in tasks.iter().enumerate() {
            let at = format!("{path}.tasks[{i}]");
            let t: RawTask = read(map, Scope { path: &at, owner: None }, &mut self.errors);
            let rate = t.sample_rate.unwrap_or(1.0);
            if t.pos.is_empty() {
                self.error(format!("{at}.pos"), "must list at least one action");
            }
            if !(rate > 0.0 && rate <= 1.0) {
                self.error(format!("{at}.sample_rate"), format!("found {rate}, allowed (0, 1]"));
            }
            out.push(Task { pos: t.pos, neg: t.neg, sample_rate: rate });
        }
        out
    }
}

/// A `per_position` sequence becomes one dense `[rows, width]` output per
/// position, named `<name>_<i>`, appended after the other sample outputs.
pub(super) fn expand_positions(outputs: &mut Vec<Output>, sequences: &[usize]) {
    for &i in sequences {
        let Op::Sequence { dtype, max_len, width, .. } = outputs[i].op else { continue };
        for p in 0..max_len {
            let transform = Transform {
                kind: TransformKind::Position { index: p, width },
                layout: Layout::Dense,
                dtype,
                splits: DataType::Unspecified,
                spec_shape: vec![-1, width as i64],
                dense_shape: vec![width as i64],
            };
            outputs.push(Output {
                name: format!("{}_{p}", outputs[i].name),
                op: Op::Derived(transform),
                shared_once: false,
                shape: vec![width as i64],
                inputs: vec![i],
                visible: true,
            });
        }
    }
}
