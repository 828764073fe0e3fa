//! Extraction errors, below both the writers (`extract`) and the operators
//! (`ops`) so neither imports the other. Every error describes the request,
//! never the library: the server answers them all as client errors.

mod budget;
mod kind;

use std::fmt;

pub(crate) use budget::charge;
pub use kind::ErrorKind;

use crate::columns::SplitsOverflow;
use crate::wire::DecodeError;

/// Why an extraction failed: its [`ErrorKind`] and, where the failing site
/// knows them, the row and the feature. Boxed so `Result<_, ExtractError>`
/// stays one pointer wide on the hot path.
pub struct ExtractError(Box<Inner>);

struct Inner {
    kind: ErrorKind,
    row: Option<usize>,
    /// The feature or list, where the kind does not name it itself.
    source: Option<String>,
}

// The hot path returns `Result<(), ExtractError>` from every writer call.
const _: () = assert!(size_of::<Result<(), ExtractError>>() == size_of::<usize>());

impl ExtractError {
    /// What went wrong; match on it to tell errors apart.
    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The kind, by value.
    pub fn into_kind(self) -> ErrorKind {
        self.0.kind
    }

    /// The row (ExampleBatch row or Example index) whose data failed, when
    /// the error is about one row: offline callers skip and count by it.
    pub fn row(&self) -> Option<usize> {
        self.0.row
    }

    /// The feature or list the error is about (an operator's output name
    /// for operator errors). Not `source`: that is `std::error::Error`'s.
    pub fn source_name(&self) -> Option<&str> {
        self.0.source.as_deref().or_else(|| self.0.kind.name())
    }

    /// The field path in the input, e.g. `named_feature_list[3].feature[17]`.
    pub fn path(&self) -> Option<String> {
        self.0.kind.path()
    }

    /// The absolute byte offset in the input where decoding stopped.
    pub fn offset(&self) -> Option<usize> {
        match &self.0.kind {
            ErrorKind::Decode(e) => Some(e.offset()),
            _ => None,
        }
    }

    /// Records the row the error is about.
    #[cold]
    pub(crate) fn at_row(mut self, row: usize) -> Self {
        self.0.row = Some(row);
        self
    }

    /// Records the feature or list the error is about.
    #[cold]
    pub(crate) fn in_source(mut self, name: &str) -> Self {
        self.0.source = Some(name.to_owned());
        self
    }
}

impl From<ErrorKind> for ExtractError {
    #[cold]
    fn from(kind: ErrorKind) -> Self {
        Self(Box::new(Inner { kind, row: None, source: None }))
    }
}

impl From<DecodeError> for ExtractError {
    #[cold]
    fn from(e: DecodeError) -> Self {
        ErrorKind::Decode(e).into()
    }
}

impl From<SplitsOverflow> for ExtractError {
    #[cold]
    fn from(e: SplitsOverflow) -> Self {
        ErrorKind::SplitsOverflow { found: e.found }.into()
    }
}

impl fmt::Display for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.kind.fmt(f)
    }
}

impl fmt::Debug for ExtractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExtractError")
            .field("kind", &self.0.kind)
            .field("row", &self.0.row)
            .field("source", &self.source_name())
            .finish()
    }
}

impl std::error::Error for ExtractError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.0.kind)
    }
}
