//! Model configs: YAML parsed in two stages, a raw serde form that rejects
//! unknown keys (`raw`) and validation into an immutable [`Plan`] that reports
//! every problem with its path (`validate`).

mod errors;
mod ops;
mod plan;
mod raw;
mod validate;

pub use errors::{ConfigError, ConfigErrors};
pub use plan::{Compat, Limits, LineIdField, Op, Output, Plan, Source, Task};

/// The embedded default model: a ranking model with shared user and context
/// features, per-candidate item features, dense features and labels.
pub const DEFAULT_MODEL_YAML: &str = include_str!("../../models/default.yaml");
