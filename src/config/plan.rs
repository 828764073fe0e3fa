//! The compiled, immutable form of a model config: what to read from a sample
//! and which tensor each output becomes. Online and offline run the same Plan.

use rustc_hash::FxHashMap;

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

/// Where an output's values come from.
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

/// What an output computes from its source, per row.
#[derive(Debug, Clone, PartialEq)]
pub enum Op {
    /// fid_v1_list (converted to v2) and fid_v2_list → ragged ids.
    Sparse { values: DataType, splits: DataType },
    /// float/double/int64 values → `[rows, dim]`, prefix copy then `default`.
    /// `meta` is the LineId field a `__meta__` name falls back to.
    Dense { dtype: DataType, dim: usize, default: f64, meta: Option<LineIdField> },
    /// bytes_list[0] or bytes_value → one string per row.
    String,
    /// A `*_lists` feature → ragged positions, each a `width` prefix (padded).
    Sequence { dtype: DataType, max_len: usize, width: usize, splits: DataType },
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
    pub source: Source,
    pub op: Op,
    /// Return once with rows = 1 when the source list is SHARED.
    pub shared_once: bool,
    /// The declared shape after the row dimension (dense only).
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
    pub(crate) index: FxHashMap<Box<[u8]>, usize>,
    /// Source indices of the reserved lists, when some output needs them.
    pub(crate) line_id_source: Option<usize>,
    pub(crate) label_source: Option<usize>,
    pub(crate) weight_source: Option<usize>,
    /// Files the config refers to (vocabularies), with a digest of their
    /// contents: part of the model's identity.
    pub files: Vec<std::path::PathBuf>,
    pub files_digest: u64,
}

impl Plan {
    /// Parses and validates a YAML model config. Relative file references
    /// (vocabularies) resolve against the current directory.
    pub fn from_yaml(text: &str) -> Result<Self, super::ConfigErrors> {
        super::validate::plan_from_yaml(text, std::path::Path::new("."))
    }

    /// Parses a config whose file references resolve against `base_dir`.
    pub fn from_yaml_in(text: &str, base_dir: &std::path::Path) -> Result<Self, super::ConfigErrors> {
        super::validate::plan_from_yaml(text, base_dir)
    }

    /// Reads and parses a config file; references resolve against its directory.
    pub fn from_file(path: &std::path::Path) -> Result<Self, super::ConfigErrors> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| super::ConfigErrors::one(path.display().to_string(), e.to_string()))?;
        Self::from_yaml_in(&text, path.parent().unwrap_or(std::path::Path::new(".")))
    }

    /// The embedded default model.
    pub fn default_model() -> Self {
        Self::from_yaml(super::DEFAULT_MODEL_YAML).expect("the embedded default model is valid")
    }

    /// The source index of a sample feature name, if the plan reads it.
    #[inline]
    pub fn source_of(&self, name: &[u8]) -> Option<usize> {
        self.index.get(name).copied()
    }

    /// Output indices for a list of output names, in the order given; an
    /// unknown name is an error that lists the outputs the model has.
    pub fn select<S: AsRef<str>>(&self, names: &[S]) -> Result<Vec<usize>, String> {
        if let Some(i) = (1..names.len()).find(|&i| names[..i].iter().any(|n| n.as_ref() == names[i].as_ref())) {
            return Err(format!("output {:?} is asked for twice", names[i].as_ref()));
        }
        names
            .iter()
            .map(|name| {
                let name = name.as_ref();
                self.outputs.iter().position(|o| o.visible && o.name == name).ok_or_else(|| {
                    let known: Vec<&str> = self.visible().map(|o| o.name.as_str()).collect();
                    format!("model {:?} has no output {name:?}; it has {}", self.name, known.join(", "))
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
    /// This output's layout, element dtype, and row_splits dtype.
    pub fn layout(&self) -> (Layout, DataType, DataType) {
        use crate::view::ValueClass;
        match &self.op {
            Op::Sparse { values, splits } => (Layout::Ragged, *values, *splits),
            Op::Dense { dtype, .. } => (Layout::Dense, *dtype, DataType::Unspecified),
            Op::String => (Layout::Strings, DataType::Bytes, DataType::I64),
            Op::Sequence { dtype, splits, .. } => (Layout::Ragged, *dtype, *splits),
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
            (Op::Weight, _) | (_, Layout::Strings) => {}
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
