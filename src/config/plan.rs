//! The compiled, immutable form of a model config: what to read from a sample
//! and which tensor each output becomes. Online and offline run the same Plan.
//! Pure data: it imports nothing from the stages that build it (`raw`,
//! `check`, `compile`), which is where `Plan::from_yaml` lives.

use crate::proto::fex_v1::{DataType, Layout, TensorSpec};
use crate::view::FieldType;

/// `compat: monolith` reproduces Monolith's parse_example_batch exactly,
/// quirks included; `native` uses explicit defaults and rejects dtype mismatches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compat {
    Native,
    Monolith,
}

impl Compat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Native => "native",
            Self::Monolith => "monolith",
        }
    }
}

/// Per-request bounds, so no request can make the extractor allocate without limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub max_batch_size: usize,
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_batch_size: 65_536, max_output_bytes: 256 << 20 }
    }
}

/// A LineId field resolved to its number and type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LineIdField {
    pub number: u32,
    pub ty: FieldType,
    /// The proto2 default of a known field (sample_rate: 1.0), else 0.
    pub default: f64,
    /// Repeated fields give a prefix; singular fields their last value.
    pub repeated: bool,
}

impl LineIdField {
    pub fn known(f: &crate::view::KnownField) -> Self {
        Self { number: f.number, ty: f.ty, default: f.default, repeated: f.repeated }
    }
}

/// Where an output's values come from; derived from its [`Op`]
/// ([`Output::source`]), so the two cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A named feature list (ExampleBatch) or named feature (Example), by index
    /// into [`Plan::source_names`].
    Feature(usize),
    /// The sample's LineId (`__LINE_ID__`, or Example field 100).
    LineId,
    /// The labels (`__LABEL__`, or Example field 101).
    Label,
    /// The instance weight (`instance_weight`, or Example field 102).
    Weight,
    /// Computed from other outputs (`Output::inputs`), not from the sample.
    Derived,
}

/// What an output computes, per row, and from what. The ops that read a
/// named feature carry its index into [`Plan::source_names`]; the others read
/// a reserved list or other outputs, so no op can meet a source it cannot read.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// fid_v1_list (converted to v2) and fid_v2_list → ragged ids.
    Sparse { source: usize, values: DataType, splits: DataType },
    /// float/double/int64 values → `[rows, dim]`, prefix copy then `default`.
    /// `meta` is the LineId field a `__meta__` name falls back to.
    Dense { source: usize, dtype: DataType, dim: usize, default: f64, meta: Option<LineIdField> },
    /// bytes_list[0] or bytes_value → one string per row; with `join`,
    /// every value of the bytes_list, `join` between them.
    String { source: usize, join: Option<Vec<u8>> },
    /// A `*_lists` feature → ragged positions, each a `width` prefix (padded).
    Sequence { source: usize, dtype: DataType, max_len: usize, width: usize, splits: DataType },
    /// A float/double/int64 list (or value), every value → one ragged row.
    List { source: usize, dtype: DataType, splits: DataType },
    /// A LineId field → `[rows, dim]` (integers i64, floats f32) or strings.
    LineId { field: LineIdField, dim: usize },
    /// Labels → f32 `[rows, dim]`.
    Label { dim: usize, default: f64 },
    /// Instance weight → f32 `[rows]`: the value if > 0, else 1.
    Weight,
    /// Labels from LineId actions (Monolith AddLabel) → f32 `[rows, tasks]`.
    ActionLabel { tasks: Vec<Task> },
    /// An operator over other outputs.
    Derived(crate::ops::Transform),
}

/// One task of an action label: 1 when an action is in `pos`; else 0 when
/// `neg` is empty or holds an action; else INVALID_LABEL. Negatives are kept
/// with probability `sample_rate`, decided by a hash of the LineId.
#[derive(Debug, Clone, PartialEq)]
pub struct Task {
    pub pos: Vec<i64>,
    pub neg: Vec<i64>,
    pub sample_rate: f64,
}

/// One output tensor of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub name: String,
    pub op: Op,
    /// Return once with rows = 1 when the source list is SHARED.
    pub shared_once: bool,
    /// The shape after the row dimension of a dense or strings output: the
    /// declared one; for weights and strings none (`[B]`), or `[1]` in
    /// `compat: monolith` (`[B, 1]`).
    pub shape: Vec<i64>,
    /// Outputs this one is computed from (indices into `Plan::outputs`, all
    /// smaller than its own: outputs are in dependency order).
    pub inputs: Vec<usize>,
    /// Returned to callers; `output: false` features are internal.
    pub visible: bool,
}

/// A validated model: immutable, cheap to share behind an `Arc`.
#[derive(Debug, Clone)]
pub struct Plan {
    pub name: String,
    pub version: String,
    pub compat: Compat,
    pub limits: Limits,
    pub outputs: Vec<Output>,
    /// Sample feature names the plan reads, indexed by `Source::Feature`.
    pub source_names: Vec<String>,
    pub(crate) index: crate::config::names::NameIndex,
    /// Answers "not read" for most other names before `index` is probed.
    pub(crate) names: crate::config::names::NameFilter,
    /// Source indices of the reserved lists, when some output needs them.
    pub(crate) line_id_source: Option<usize>,
    pub(crate) label_source: Option<usize>,
    pub(crate) weight_source: Option<usize>,
    /// `compat: monolith`: the list (or Example feature) named `label`, which
    /// Monolith's kernels fill the label from like a dense feature.
    pub(crate) label_list_source: Option<usize>,
    /// Files the config refers to (vocabularies), in config order.
    pub files: Vec<std::path::PathBuf>,
    pub(crate) identity: Identity,
    /// The `offline:` section: sample transforms for offline runs.
    pub offline: crate::config::offline::Offline,
    /// The `upstream:` section: the v2 model server fex-server forwards to.
    pub upstream: Option<crate::config::upstream::Upstream>,
    /// The `label_join:` section: how a near-line job joins logged requests
    /// with user actions (`fex::nearline`).
    pub label_join: Option<crate::config::label_join::LabelJoin>,
    /// This compilation, among all in the process (clones share it): what
    /// an extractor's memo of the last input's list names is tied to.
    pub(crate) uid: u64,
    /// The outputs' names, by output index, in one buffer.
    pub(crate) output_names: crate::config::names::NameList,
    /// The call for every visible output, worked out by the first such call
    /// (see `Everything`).
    pub(crate) everything: std::sync::OnceLock<Everything>,
}

/// What a call for every visible output computes and reads, worked out once
/// per plan instead of on each call: a model of a thousand outputs walked
/// its outputs three more times per call for these.
#[derive(Debug, Clone, Default)]
pub(crate) struct Everything {
    /// The outputs computed (`extract::mark_needed` of no selection).
    pub needed: Vec<bool>,
    /// The sources whose writers walk their lists (`gather::direct_sources`).
    pub direct: Vec<bool>,
    /// Visible outputs.
    pub visible: usize,
}

/// What a model is, for the server's reports and for training data to carry:
/// computed once when the plan is compiled, from the config text and the
/// digests of the files it refers to (XXH64, [`crate::ops::digest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The declared `version`; `<version>+files.<8 hex>` when the model reads
    /// files (a changed vocabulary is a new version); 16 hex digits of
    /// `digest` when the config declares none.
    pub version: String,
    /// Changes whenever the config text or a file it reads changes.
    pub digest: u64,
}

/// Why [`Plan::select`] refused a list of output names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    #[error("output {name:?} is asked for twice")]
    Repeated { name: String },
    #[error("model {model:?} has no output {name:?}; it has {}", known.join(", "))]
    Unknown { model: String, name: String, known: Vec<String> },
}

impl Plan {
    /// The model's identity (version string and digest).
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The `label_join:` section, if the config has one.
    pub fn label_join(&self) -> Option<&crate::config::label_join::LabelJoin> {
        self.label_join.as_ref()
    }

    /// Whether a source is one of the reserved lists (`__LINE_ID__`,
    /// `__LABEL__`, `instance_weight`, and `label` in compat: monolith).
    pub(crate) fn is_reserved(&self, source: usize) -> bool {
        [self.line_id_source, self.label_source, self.weight_source, self.label_list_source].contains(&Some(source))
    }

    /// The source index of a sample feature name, if the plan reads it.
    #[inline]
    pub fn source_of(&self, name: &[u8]) -> Option<usize> {
        if !self.may_read(name) {
            return None;
        }
        self.lookup(name)
    }

    /// False when the plan surely reads no list named `name` (one bit of
    /// its name filter); true means "ask `source_of`".
    #[inline]
    pub(crate) fn may_read(&self, name: &[u8]) -> bool {
        self.names.may_contain(name)
    }

    /// The name map's answer, out of line: `source_of` stays small enough to
    /// inline into the list walks, where most names stop at the filter.
    #[inline(never)]
    fn lookup(&self, name: &[u8]) -> Option<usize> {
        self.index.get(name)
    }

    /// Output indices for a list of output names, in the order given; an
    /// unknown name is an error that lists the outputs the model has.
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<usize>, SelectError> {
        // A set, not a scan of the names before each: a request may send
        // many names, and this must stay linear in them.
        let mut seen = rustc_hash::FxHashSet::default();
        if let Some(name) = names.iter().map(AsRef::as_ref).find(|&n| !seen.insert(n)) {
            return Err(SelectError::Repeated { name: name.to_string() });
        }
        names
            .iter()
            .map(|name| {
                let name = name.as_ref();
                self.outputs.iter().position(|o| o.visible && o.name == name).ok_or_else(|| SelectError::Unknown {
                    model: self.name.clone(),
                    name: name.to_string(),
                    known: self.visible().map(|o| o.name.clone()).collect(),
                })
            })
            .collect()
    }

    /// The output signature: name, layout, dtype and shape of every output.
    pub fn signature(&self) -> Vec<TensorSpec> {
        self.visible().map(Output::spec).collect()
    }

    /// The outputs returned to callers, in order.
    pub fn visible(&self) -> impl Iterator<Item = &Output> {
        self.outputs.iter().filter(|o| o.visible)
    }

    /// Indices of the outputs returned to callers.
    pub fn visible_indices(&self) -> Vec<usize> {
        (0..self.outputs.len()).filter(|&i| self.outputs[i].visible).collect()
    }
}

impl Output {
    /// Where this output's values come from.
    pub fn source(&self) -> Source {
        match &self.op {
            Op::Sparse { source, .. }
            | Op::Dense { source, .. }
            | Op::String { source, .. }
            | Op::Sequence { source, .. }
            | Op::List { source, .. } => Source::Feature(*source),
            Op::LineId { .. } | Op::ActionLabel { .. } => Source::LineId,
            Op::Label { .. } => Source::Label,
            Op::Weight => Source::Weight,
            Op::Derived(_) => Source::Derived,
        }
    }

    /// This output's layout, element dtype, and row_splits dtype.
    pub fn layout(&self) -> (Layout, DataType, DataType) {
        use crate::view::ValueClass;
        match &self.op {
            Op::Sparse { values, splits, .. } => (Layout::Ragged, *values, *splits),
            Op::Dense { dtype, .. } => (Layout::Dense, *dtype, DataType::Unspecified),
            Op::String { .. } => (Layout::Strings, DataType::Bytes, DataType::I64),
            Op::Sequence { dtype, splits, .. } | Op::List { dtype, splits, .. } => (Layout::Ragged, *dtype, *splits),
            Op::LineId { field, .. } => match field.ty.class() {
                ValueClass::Integer => (Layout::Dense, DataType::I64, DataType::Unspecified),
                ValueClass::Float => (Layout::Dense, DataType::F32, DataType::Unspecified),
                ValueClass::Bytes => (Layout::Strings, DataType::Bytes, DataType::I64),
            },
            Op::Label { .. } | Op::Weight | Op::ActionLabel { .. } => {
                (Layout::Dense, DataType::F32, DataType::Unspecified)
            }
            Op::Derived(t) => (t.layout, t.dtype, t.splits),
        }
    }

    /// The shape with -1 for the rows and any ragged dimension.
    pub fn spec(&self) -> TensorSpec {
        let (layout, dtype, splits) = self.layout();
        let mut shape = vec![-1];
        match (&self.op, layout) {
            (Op::Derived(t), _) => shape = t.spec_shape.clone(),
            (Op::Sequence { width, .. }, _) => shape.extend([-1, *width as i64]),
            (_, Layout::Ragged) => shape.push(-1),
            _ => shape.extend(&self.shape),
        }
        TensorSpec {
            name: self.name.clone(),
            layout: layout as i32,
            dtype: dtype as i32,
            shape,
            splits_dtype: splits as i32,
            shared_once: self.shared_once,
        }
    }
}
