//! Where a record went wrong: the stream's name, the record's index and the
//! byte offset of its first byte (of the decompressed stream when the input
//! is compressed), and what was found there.

use std::fmt;

/// A record that could not be read. Boxed, so `Result<_, RecordError>` stays
/// one pointer wide.
#[derive(Debug)]
pub struct RecordError(Box<Inner>);

#[derive(Debug)]
struct Inner {
    source: String,
    index: u64,
    offset: u64,
    kind: RecordErrorKind,
}

/// What was wrong.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordErrorKind {
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// The stream ended inside a record.
    #[error("truncated {what}: expected {expected} bytes, found {found}")]
    Truncated { what: &'static str, expected: u64, found: u64 },
    /// Monolith's marker of a corrupt record (data_reader.h: "DEADBEEF value found").
    #[error("corrupt record: length is 0xfefefefe")]
    CorruptLength,
    #[error("{what} of {found} bytes is over the limit of {limit} bytes (raise it with --max-record-bytes)")]
    TooLarge { what: &'static str, found: u64, limit: u64 },
    /// A length no protobuf message can have (over 2 GiB): the bytes read as
    /// a length are something else, so the stream is compressed or framed
    /// otherwise than it is read (or corrupt).
    #[error(
        "{what} of {found} bytes cannot be right (a protobuf message is under 2 GiB): the stream is not \
         framed or compressed as it is read; check --compression and the header flags (--has-sort-id, \
         --kafka-dump-prefix, --kafka-dump, --lagrangex-header)"
    )]
    NotALength { what: &'static str, found: u64 },
    #[error("{0}")]
    Compression(String),
}

impl RecordError {
    pub fn new(source: &str, index: u64, offset: u64, kind: RecordErrorKind) -> Self {
        Self(Box::new(Inner { source: source.to_string(), index, offset, kind }))
    }

    /// The file (or `-` for stdin) the record came from.
    pub fn source_name(&self) -> &str {
        &self.0.source
    }

    /// The record's index in its stream, from 0.
    pub fn index(&self) -> u64 {
        self.0.index
    }

    /// The byte offset where the record starts.
    pub fn offset(&self) -> u64 {
        self.0.offset
    }

    pub fn kind(&self) -> &RecordErrorKind {
        &self.0.kind
    }
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let i = &self.0;
        write!(f, "{}: record {} at byte {}: {}", i.source, i.index, i.offset, i.kind)
    }
}

impl std::error::Error for RecordError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            RecordErrorKind::Io(e) => Some(e),
            _ => None,
        }
    }
}
