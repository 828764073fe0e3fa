//! What went wrong in an extraction: one variant per rule a request can
//! break. Display texts are part of the contract (the corpus prints them,
//! the server returns them), so change them only with every caller.

use crate::wire::DecodeError;

/// The kind of an [`ExtractError`](super::ExtractError). New kinds may be
/// added; every one describes the request, never the library.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Malformed wire bytes, with field path and byte offset.
    #[error("{0}")]
    Decode(#[from] DecodeError),
    #[error("batch_size is {found}, allowed 0..={limit}")]
    BatchSize { found: i64, limit: usize },
    #[error("{found} examples, the limit is {limit}")]
    TooManyRows { found: usize, limit: usize },
    #[error("named_feature_list[{index}] {name:?} has {found} features, batch_size is {batch}")]
    ListLength { index: usize, name: String, found: usize, batch: usize },
    /// Native mode: a SHARED list holds at most one Feature.
    #[error(
        "named_feature_list[{index}] {name:?} is SHARED and holds {found} features, allowed at most 1 (its one feature is used for every row)"
    )]
    SharedListLength { index: usize, name: String, found: usize },
    /// A feature holds a type the output cannot take.
    #[error("{path} ({name:?}): found {found}, expected {expected}")]
    TypeMismatch { path: String, name: String, found: &'static str, expected: &'static str },
    /// A value Monolith would abort on, or that breaks a documented rule.
    #[error("{path} ({name:?}): {message}")]
    Invalid { path: String, name: String, message: &'static str },
    /// The outputs would pass the call's `max_output_bytes`.
    #[error("output would take {found} bytes, the limit is {limit}")]
    TooLarge { found: usize, limit: usize },
    #[error("input of {found} bytes is over the 4294967295-byte limit of one buffer")]
    InputTooLarge { found: usize },
    #[error("{found} row_splits overflow i32; declare splits: i64")]
    SplitsOverflow { found: usize },
    /// An operator met input it cannot process (an id outside its table...).
    #[error("{name}: {message}")]
    Operator { name: String, message: String },
}

impl ErrorKind {
    /// The feature, list or operator output the kind itself names.
    pub(super) fn name(&self) -> Option<&str> {
        match self {
            Self::ListLength { name, .. }
            | Self::SharedListLength { name, .. }
            | Self::TypeMismatch { name, .. }
            | Self::Invalid { name, .. }
            | Self::Operator { name, .. } => Some(name),
            _ => None,
        }
    }

    /// The field path the kind itself carries.
    pub(super) fn path(&self) -> Option<String> {
        match self {
            Self::Decode(e) => Some(e.path()).filter(|p| !p.is_empty()),
            Self::TypeMismatch { path, .. } | Self::Invalid { path, .. } => Some(path.clone()),
            Self::ListLength { index, .. } | Self::SharedListLength { index, .. } => {
                Some(format!("named_feature_list[{index}]"))
            }
            _ => None,
        }
    }
}
