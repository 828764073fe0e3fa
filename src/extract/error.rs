//! Extraction errors. All of them describe the request, never the server: the
//! server maps every variant to INVALID_ARGUMENT.

use crate::wire::DecodeError;

#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
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
