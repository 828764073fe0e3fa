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
    SpecialStrategy(SpecialStrategy),
    NegativeSample(NegativeSample),
    FilterByFeatureValue(FilterByFeatureValue),
    ScatterLabel(ScatterLabel),
    LabelUpperBound(LabelUpperBound),
    LabelNormalization(LabelNormalization),
    UseFieldAsLabel(UseFieldAsLabel),
    AddAction(AddAction),
    MultiLabelGen(MultiLabelGen),
    InstanceReweight(InstanceReweight),
    SwitchSlotBatch(SwitchSlotBatch),
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
            Self::SpecialStrategy(_) => "special_strategy",
            Self::NegativeSample(_) => "negative_sample",
            Self::FilterByFeatureValue(_) => "filter_by_feature_value",
            Self::ScatterLabel(_) => "scatter_label",
            Self::LabelUpperBound(_) => "label_upper_bound",
            Self::LabelNormalization(_) => "label_normalization",
            Self::UseFieldAsLabel(_) => "use_field_as_label",
            Self::AddAction(_) => "add_action",
            Self::MultiLabelGen(_) => "multi_label_gen",
            Self::InstanceReweight(_) => "instance_reweight",
            Self::SwitchSlotBatch(_) => "switch_slot_batch",
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

/// Monolith `special_strategy` (kernels/variant_filter_kernel.cc,
/// `SpecialStrategyOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct SpecialStrategy {
    /// The strategies looked for in LineId.special_strategies, in order.
    pub strategy_list: Vec<i32>,
    /// `strategy_conf`: per strategy, its sample rate and the label it sets.
    pub rates: Vec<StrategyRate>,
    /// Rows without special strategies are kept (true) or dropped.
    pub keep_empty_strategy: bool,
    /// Seeds the draws (see `samples` for how a draw is made).
    pub seed: u64,
}

/// One `strategy:sample_rate[:label]` of special_strategy's config.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StrategyRate {
    pub strategy: i32,
    pub sample_rate: f32,
    pub label: Option<f32>,
}

/// Monolith `negative_sample` (variant_filter_kernel.cc, `NegativeSampleOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct NegativeSample {
    pub drop_rate: f32,
    pub label_index: usize,
    /// A label below this is a negative.
    pub threshold: f32,
    /// `action_priority`, highest first; used with `per_action_drop_rate`.
    pub priorities: Vec<i32>,
    /// `per_action_drop_rate`: (action, drop rate).
    pub per_action_drop_rate: Vec<(i32, f32)>,
    pub seed: u64,
}

/// The value type filter_by_feature_value reads (`field_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FeatureValueType {
    Int64,
    Float,
    Double,
    Bytes,
}

/// Monolith `filter_by_feature_value` (kernels/internal/
/// value_filter_by_feature.cc, `FeatureValueFilter`).
#[derive(Debug, Clone, PartialEq)]
pub struct FilterByFeatureValue {
    /// The named feature read.
    pub feature: String,
    pub ty: FeatureValueType,
    pub op: ValueOp,
    pub operand: Operand,
    /// A row whose feature is missing or holds no usable value is kept.
    pub keep_empty: bool,
}

/// Monolith `scatter_label` (kernels/scatter_label_kernel.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct ScatterLabel {
    /// LineId.chnid → the label index that receives the row's first label.
    pub chnid_to_index: Vec<(i64, usize)>,
    /// Labels per row: the largest index + 1.
    pub task_num: usize,
}

/// Monolith `label_upper_bound` (kernels/label_upper_bound_kernel.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct LabelUpperBound {
    pub label_upper_bounds: Vec<f32>,
}

/// One step of `label_normalization` (label_normalization_kernel.cc).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NormMethod {
    Log,
    Scale,
    Scale2Int,
    Pow,
    Repow,
    ScaleLog,
}

impl NormMethod {
    pub const NAMES: &'static str = "log, scale, scale2int, pow, repow, scalelog";

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "log" => Self::Log,
            "scale" => Self::Scale,
            "scale2int" => Self::Scale2Int,
            "pow" => Self::Pow,
            "repow" => Self::Repow,
            "scalelog" => Self::ScaleLog,
            _ => return None,
        })
    }
}

/// Monolith `label_normalization`: each label through every step in order.
#[derive(Debug, Clone, PartialEq)]
pub struct LabelNormalization {
    pub steps: Vec<(NormMethod, f32)>,
}

/// Monolith `use_field_as_label` (kernels/use_field_as_label_kernel.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct UseFieldAsLabel {
    /// A singular numeric LineId field.
    pub field: LineIdField,
    pub overwrite_invalid_value: bool,
    pub label_threshold: f32,
}

/// Monolith `add_action` (kernels/add_action_kernel.cc): the action is
/// appended to LineId.actions when the field passes `condition`, a
/// filter_by_value on a singular field.
#[derive(Debug, Clone, PartialEq)]
pub struct AddAction {
    pub condition: FilterByValue,
    pub action: i32,
}

/// Monolith `multi_label_gen` (kernels/multi_label_gen_kernel.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct MultiLabelGen {
    /// The LineId field whose value, as text, picks the label index:
    /// chnid (decimal) or a string field.
    pub head_field: LineIdField,
    pub head_to_index: Vec<(Vec<u8>, usize)>,
    pub task_num: usize,
    pub pos_actions: Vec<i32>,
    pub neg_actions: Vec<i32>,
    pub use_origin_label: bool,
    pub pos_label: f32,
    pub neg_label: f32,
    /// Highest first.
    pub action_priority: Vec<i32>,
}

/// Monolith `instance_reweight` (kernels/instance_reweight_dataset_kernel.cc).
#[derive(Debug, Clone, PartialEq)]
pub struct InstanceReweight {
    /// Highest first.
    pub action_priority: Vec<i32>,
    /// `action:weight:label` entries, in config order (a later entry for
    /// the same action wins, as in the kernel's map).
    pub reweight: Vec<(i32, u32, i32)>,
}

/// Monolith `switch_slot_batch` (kernels/ragged_feature_kernel.cc,
/// `SwitchSlotBatchOp`).
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSlotBatch {
    pub features: Vec<SwitchSlot>,
    /// A feature not switched in place is added as `<name>_<suffix>`.
    pub suffix: String,
}

/// One feature of switch_slot_batch.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchSlot {
    pub feature: String,
    pub inplace: bool,
    pub slot: u64,
}
