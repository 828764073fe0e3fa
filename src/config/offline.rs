//! The model's `offline:` section, compiled: the sample transforms an offline
//! run applies between indexing and writing, in order, with Monolith's names
//! and parameters (`feature_utils.py`, `datasets.py`). Pure data, like `plan`.

use super::plan::LineIdField;

/// What an offline run does beyond extraction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Offline {
    /// Applied in order to every input's rows.
    pub transforms: Vec<SampleTransform>,
}

/// One sample transform.
#[derive(Debug, Clone, PartialEq)]
pub enum SampleTransform {
    FilterByFids(FilterByFids),
    FilterByValue(FilterByValue),
    FilterByLabel(FilterByLabel),
    AddLabel(AddLabel),
    NegativeGen(NegativeGen),
    Shuffle { buffer_size: usize, seed: u64 },
    Batch { batch_size: usize, drop_remainder: bool },
}

impl SampleTransform {
    /// The name the config gives it (`transform:`).
    pub fn name(&self) -> &'static str {
        match self {
            Self::FilterByFids(_) => "filter_by_fids",
            Self::FilterByValue(_) => "filter_by_value",
            Self::FilterByLabel(_) => "filter_by_label",
            Self::AddLabel(_) => "add_label",
            Self::NegativeGen(_) => "negative_gen",
            Self::Shuffle { .. } => "shuffle",
            Self::Batch { .. } => "batch",
        }
    }
}

/// Monolith `filter_by_fids` (kernel `SetFilterOp`, `IsInstanceOfInterest`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FilterByFids {
    /// Dropped when any of these fids is present.
    pub filter_fids: Vec<u64>,
    /// Kept only when one of these fids is present.
    pub has_fids: Vec<u64>,
    /// Kept only when all of these fids are present.
    pub select_fids: Vec<u64>,
    /// Kept only when the LineId has one of these actions.
    pub has_actions: Vec<i32>,
    /// Dropped when LineId.req_time is below this.
    pub req_time_min: i64,
    /// Kept only when a fid of each of these slots is present.
    pub select_slots: Vec<u32>,
}

/// The comparison of `filter_by_value`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueOp {
    Gt,
    Ge,
    Eq,
    Lt,
    Le,
    Neq,
    /// `[lo, hi)`.
    Between,
    In,
    NotIn,
    /// Repeated fields: every operand present.
    All,
    /// Repeated fields: some operand present.
    Any,
    /// Repeated fields: no operand present.
    Diff,
    StartsWith,
    EndsWith,
}

impl ValueOp {
    pub const NAMES: &'static str =
        "gt, ge, eq, lt, le, neq, between, in, not-in, all, any, diff, startswith, endswith";

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "gt" => Self::Gt,
            "ge" => Self::Ge,
            "eq" => Self::Eq,
            "lt" => Self::Lt,
            "le" => Self::Le,
            "neq" => Self::Neq,
            "between" => Self::Between,
            "in" => Self::In,
            "not-in" => Self::NotIn,
            "all" => Self::All,
            "any" => Self::Any,
            "diff" => Self::Diff,
            "startswith" => Self::StartsWith,
            "endswith" => Self::EndsWith,
            _ => return None,
        })
    }

    /// The set operators, for repeated fields.
    pub fn is_set(self) -> bool {
        matches!(self, Self::All | Self::Any | Self::Diff)
    }
}

/// Operands of `filter_by_value`, typed by the field: integers, floats (f32,
/// as Monolith stores them) or strings.
#[derive(Debug, Clone, PartialEq)]
pub enum Operand {
    Int(Vec<i64>),
    Float(Vec<f32>),
    Bytes(Vec<Vec<u8>>),
}

/// Monolith `filter_by_value` on a LineId field (`LineIdValueFilter`).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterByValue {
    pub field: LineIdField,
    pub op: ValueOp,
    pub operand: Operand,
    /// Repeated fields without values are kept (true) or dropped.
    pub keep_empty: bool,
}

/// Monolith `filter_by_label` (kernel `FilterByLabelOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterByLabel {
    pub label_threshold: Vec<f32>,
    pub filter_equal: bool,
}

/// One task of `add_label`'s `pos:neg:rate` config.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelTask {
    pub pos_actions: Vec<i32>,
    pub neg_actions: Vec<i32>,
    pub sample_rate: f32,
}

/// Monolith `add_label` (kernel `AddLabelOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct AddLabel {
    pub tasks: Vec<LabelTask>,
    pub negative_value: f32,
    /// Written to LineId.sample_rate.
    pub new_sample_rate: f32,
}

/// Monolith `negative_gen` (`negative_gen_dataset_kernel.cc`).
#[derive(Debug, Clone, PartialEq)]
pub struct NegativeGen {
    pub neg_num: usize,
    pub per_channel: bool,
    pub channel_feature: String,
    pub item_features: Vec<String>,
    pub start_num: usize,
    pub max_item_num: usize,
    pub positive_label: i32,
    pub negative_label: i32,
    /// `None`: the negatives keep the positive's actions.
    pub negative_action: Option<i32>,
    pub positive_actions: Vec<i32>,
    pub label_index: usize,
    /// Actions in priority order (first is highest).
    pub action_priority: Vec<i32>,
    pub index_feature: String,
    pub throw_origin: bool,
    pub throw_origin_neg: bool,
    pub cache_only_pos: bool,
    pub cache_negative_actions: Vec<i32>,
    pub real_neg_instance_weight: f32,
    pub sampled_neg_instance_weight: f32,
    pub unbias_sampled_neg: bool,
    pub origin_neg_in_pool_proba: f32,
    pub neg_sample_declay_factor: f32,
    pub easy_hard_ratio: f32,
    /// Seeds the sampling, so a run is reproducible.
    pub seed: u64,
}
