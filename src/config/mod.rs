//! Model configs, in stages that import one way: `raw` (YAML read entry by
//! entry into per-kind structs, unknown keys and wrong types reported) →
//! `check` (each kind's and op's rules, every problem with its path) →
//! `compile` (the [`Plan`] and its identity) → `plan` (pure data).

mod check;
mod compile;
mod errors;
pub mod label_join;
pub(crate) mod names;
pub mod offline;
mod plan;
mod raw;
pub mod upstream;

pub use errors::{ConfigError, ConfigErrors};
pub use label_join::{KeySource, LabelJoin, LateActions, TimeSource, TimeUnit};
pub use offline::{Offline, SampleTransform};
pub(crate) use plan::Everything;
pub use plan::{Compat, Identity, Limits, LineIdField, Op, Output, Plan, SelectError, Source, Task};
pub use upstream::{MappingError, Upstream, UpstreamInput, UpstreamTls};

/// The embedded default model: a ranking model with shared user and context
/// features, per-candidate item features, dense features and labels.
pub const DEFAULT_MODEL_YAML: &str = include_str!("../../models/default.yaml");
