//! The library side of the near-line label join (issue 23): a job joins
//! fex-server's logged requests (`fex.v1.LoggedRequest`, `--request-log`)
//! with user actions. [`request_keys`] reads what the join keys on, as the
//! model's `label_join:` section says; [`attach_actions`] gives the request's
//! samples with each row's actions appended to its LineId, ready for
//! extraction. Pure: no I/O, no clock, no state between calls.

mod attach;
#[cfg(feature = "offline")]
mod compute;
mod keys;
mod logged;
mod rows;
#[cfg(test)]
mod tests;

pub use attach::attach_actions;
#[cfg(feature = "offline")]
pub use compute::{ComputeError, Computed, ComputedBatches, compute, compute_batches};
pub use keys::request_keys;

use crate::wire::DecodeError;

/// Which member of the `ExtractRequest.payload` oneof the request used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// `example_batch`: one ExampleBatch.
    Batch,
    /// `examples`: one Example per row.
    Examples,
}

impl Payload {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Batch => "batch",
            Self::Examples => "examples",
        }
    }
}

/// What a logged request is joined on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestKeys {
    pub request_id: String,
    /// Integers as decimal text, strings as they are.
    pub user_id: String,
    /// Milliseconds since the Unix epoch.
    pub time_ms: i64,
    pub refresh: bool,
    /// One per row; empty for a row without one.
    pub item_ids: Vec<String>,
    pub payload: Payload,
    pub rows: usize,
    /// The model that answered, as the log names it.
    pub model: String,
}

/// Why a logged request could not be read or joined.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum NearlineError {
    #[error("logged request: {0}")]
    Decode(#[from] DecodeError),
    #[error("logged request: {what} @ byte {offset} is not UTF-8")]
    Utf8 { what: &'static str, offset: usize },
    #[error("logged request: its ExtractRequest holds no samples (neither example_batch nor examples)")]
    NoSamples,
    #[error("logged request: {found} rows, the model's limit is {limit}")]
    BatchSize { found: i64, limit: usize },
    #[error("model {model:?} has no label_join: section; add one to say where a request's keys are")]
    NoLabelJoin { model: String },
    #[error("label_join.{key}: {message}")]
    Key { key: &'static str, message: String },
    #[error("row {row}'s __LINE_ID__ is a {kind}; expected a bytes_list holding a serialized LineId")]
    NotALineId { row: usize, kind: &'static str },
    #[error("found actions for {found} rows; the request has {rows}")]
    Rows { found: usize, rows: i64 },
}

impl NearlineError {
    /// The byte offset in the logged record where decoding stopped, when
    /// the error is about its bytes.
    pub fn offset(&self) -> Option<usize> {
        match self {
            Self::Decode(e) => Some(e.offset()),
            Self::Utf8 { offset, .. } => Some(*offset),
            _ => None,
        }
    }

    fn key(key: &'static str, message: String) -> Self {
        Self::Key { key, message }
    }
}
