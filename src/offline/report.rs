//! What a run reports: each bad record (file, record index, byte offset and
//! the library's structured error), the summary, and why a run failed.

use std::fmt;
use std::sync::Arc;

use crate::error::ExtractError;
use crate::records::RecordError;

/// A record that could not be read or extracted.
#[derive(Debug, Clone)]
pub struct BadRecord {
    pub source: Arc<str>,
    pub index: u64,
    pub offset: u64,
    pub error: BadError,
}

/// Why.
#[derive(Debug, Clone)]
pub enum BadError {
    /// Its framing (or the file) could not be read; the file ends here.
    Read(Arc<RecordError>),
    /// Extraction refused it.
    Extract(Arc<ExtractError>),
    /// Its columns could not become a table (an output changed type).
    Arrow(String),
}

impl BadRecord {
    pub(super) fn read(e: RecordError) -> Self {
        Self {
            source: Arc::from(e.source_name()),
            index: e.index(),
            offset: e.offset(),
            error: BadError::Read(Arc::new(e)),
        }
    }

    pub(super) fn at(chunk: &super::run::ChunkRef<'_>, i: usize, error: BadError) -> Self {
        let (meta, _) = chunk.records[i];
        Self { source: Arc::clone(chunk.source), index: meta.index, offset: meta.offset, error }
    }
}

impl fmt::Display for BadRecord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.error {
            BadError::Read(e) => write!(f, "{e}"),
            BadError::Arrow(e) => write!(f, "{}: record {} at byte {}: {e}", self.source, self.index, self.offset),
            BadError::Extract(e) => {
                let message = e.to_string();
                write!(f, "{}: record {} at byte {}: {message}", self.source, self.index, self.offset)?;
                // The structured fields the message does not already say.
                let mut parts = Vec::new();
                if let Some(row) = e.row() {
                    parts.push(format!("row {row}"));
                }
                if let Some(name) = e.source_name() {
                    parts.push(format!("feature {name:?}"));
                }
                if let Some(path) = e.path().filter(|p| !message.contains(p.as_str())) {
                    parts.push(format!("at {path}"));
                }
                if let Some(offset) = e.offset().filter(|o| !message.contains(&format!("byte {o}"))) {
                    parts.push(format!("payload byte {offset}"));
                }
                if !parts.is_empty() {
                    write!(f, " ({})", parts.join(", "))?;
                }
                Ok(())
            }
        }
    }
}

/// What a run did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Input streams opened.
    pub files: u64,
    /// Records read (bad ones included, framing errors not).
    pub records: u64,
    pub bad_records: u64,
    /// Rows written to the output (samples, after transforms).
    pub rows_written: u64,
    /// Bytes read from the files (compressed bytes when compressed).
    pub input_bytes: u64,
    /// Payload bytes of the records read.
    pub payload_bytes: u64,
    /// The transforms' counters (`RowsHook::counts`).
    pub transforms: Vec<(String, u64)>,
}

/// Why a run stopped.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A bad record under `OnError::Fail`.
    #[error("{0}")]
    Bad(Box<BadRecord>),
    #[error(transparent)]
    Sink(#[from] super::sink::SinkError),
    /// The observer asked to stop (`Observer::stop`): the input was not read
    /// to its end and the output was not finished.
    #[error("stopped before the end of the input, as asked (the output is incomplete)")]
    Stopped,
}
