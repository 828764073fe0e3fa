//! Decode errors that say where: the field path from the outermost message and
//! the absolute byte offset. Boxed so `Result<T, DecodeError>` stays one word.

use std::fmt;

/// What went wrong at the byte where decoding stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeErrorKind {
    /// The input ended inside a varint.
    TruncatedVarint,
    /// A varint whose tenth byte still has the continuation bit set.
    VarintTooLong,
    /// A fixed-width value or a length-delimited body runs past the end.
    Truncated { needed: u64, remaining: usize },
    /// Field number 0 is reserved.
    ZeroTag,
    /// Field numbers stop at 2^29 - 1.
    FieldNumberTooLarge(u64),
    /// Wire types 6 and 7 do not exist.
    InvalidWireType(u8),
    /// A known field arrived with a wire type its declaration forbids.
    WrongWireType { field: u32, found: u8, expected: &'static str },
    /// A packed run whose length is not a multiple of the element size.
    PackedLength { len: usize, element: usize },
    /// An end-group marker without its start, or a group closed by another field.
    UnbalancedGroup,
    /// Groups nested deeper than [`crate::wire::MAX_DEPTH`].
    TooDeep,
}

impl fmt::Display for DecodeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TruncatedVarint => f.write_str("truncated varint"),
            Self::VarintTooLong => {
                f.write_str("varint longer than 10 bytes (the tenth byte has its continuation bit set)")
            }
            Self::Truncated { needed, remaining } => {
                write!(f, "needs {needed} bytes, only {remaining} remain")
            }
            Self::ZeroTag => f.write_str("field number 0 is invalid"),
            Self::FieldNumberTooLarge(n) => write!(f, "field number {n} exceeds 536870911"),
            Self::InvalidWireType(w) => write!(f, "invalid wire type {w}"),
            Self::WrongWireType { field, found, expected } => {
                write!(f, "field {field} has wire type {found}, expected {expected}")
            }
            Self::PackedLength { len, element } => {
                write!(f, "packed run of {len} bytes is not a multiple of {element}")
            }
            Self::UnbalancedGroup => f.write_str("unbalanced group markers"),
            Self::TooDeep => write!(f, "nesting deeper than {}", super::MAX_DEPTH),
        }
    }
}

/// One step of the path from the outermost message to the failing field.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Step {
    field: &'static str,
    index: Option<usize>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Inner {
    kind: DecodeErrorKind,
    offset: usize,
    /// Innermost step first: callers push as the error travels outwards.
    path: Vec<Step>,
}

/// A wire-format error with its field path and byte offset.
#[derive(Clone, PartialEq, Eq)]
pub struct DecodeError(Box<Inner>);

impl DecodeError {
    #[cold]
    pub(crate) fn new(kind: DecodeErrorKind, offset: usize) -> Self {
        Self(Box::new(Inner { kind, offset, path: Vec::new() }))
    }

    /// Adds the enclosing field (outermost last) to the path.
    #[cold]
    pub fn within(mut self, field: &'static str, index: Option<usize>) -> Self {
        self.0.path.push(Step { field, index });
        self
    }

    /// What went wrong.
    pub fn kind(&self) -> &DecodeErrorKind {
        &self.0.kind
    }

    /// Absolute byte offset in the outermost buffer.
    pub fn offset(&self) -> usize {
        self.0.offset
    }

    /// The field path, outermost first, e.g. `named_feature_list[3].feature[17]`.
    pub fn path(&self) -> String {
        let mut out = String::new();
        for step in self.0.path.iter().rev() {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(step.field);
            if let Some(i) = step.index {
                out.push_str(&format!("[{i}]"));
            }
        }
        out
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.path();
        if path.is_empty() {
            write!(f, "@ byte {}: {}", self.0.offset, self.0.kind)
        } else {
            write!(f, "{path} @ byte {}: {}", self.0.offset, self.0.kind)
        }
    }
}

impl fmt::Debug for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DecodeError({self})")
    }
}

impl std::error::Error for DecodeError {}

/// Adds a path step to the error of a `Result`, on the cold path only.
pub trait Within<T> {
    fn within(self, field: &'static str, index: Option<usize>) -> Result<T, DecodeError>;
}

impl<T> Within<T> for Result<T, DecodeError> {
    #[inline]
    fn within(self, field: &'static str, index: Option<usize>) -> Result<T, DecodeError> {
        self.map_err(|e| e.within(field, index))
    }
}
