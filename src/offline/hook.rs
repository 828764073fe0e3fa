//! The transforms hook: where sample transforms (filters, labels, negative
//! generation) plug into the pipeline. A hook sees each input record's rows
//! after indexing and before writing, in input order, and may drop rows
//! (`Rows::retain`) or append rows (`Rows::push_row`, from rows of buffers it
//! keeps itself: the `'a` of `apply` lets it lend them). Extraction then
//! writes whatever rows remain, so transforms never re-encode protobufs.

use crate::error::ExtractError;
use crate::extract::Rows;

/// Which record the rows came from.
#[derive(Debug, Clone, Copy)]
pub struct RecordCtx<'r> {
    /// The file (or `-`).
    pub source: &'r str,
    /// The first record's index in its file, and its byte offset.
    pub index: u64,
    pub offset: u64,
    /// How many records these rows came from (Examples are indexed a chunk
    /// of records at a time; an ExampleBatch is one record).
    pub records: usize,
    /// The records' payloads, in order.
    pub payloads: &'r [&'r [u8]],
}

/// Sample transforms, applied to the rows of each record in input order.
/// Runs on one thread: a pipeline with a hook extracts on one worker, so a
/// stateful transform (an item pool, a seeded sampler) sees records exactly
/// in file order and its output does not depend on `--threads`.
pub trait RowsHook: Send {
    /// Edits `rows`: drop rows, append rows. An error is the record's error
    /// (reported with its file, index and offset; skipped under
    /// `--on-error skip`).
    fn apply<'a>(&'a mut self, record: &RecordCtx<'_>, rows: &mut Rows<'a>) -> Result<(), ExtractError>;

    /// Counters for the run's summary, in a stable order: e.g.
    /// `("filter_by_fids: dropped", 12)`, `("negative_gen: generated", 40)`.
    fn counts(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// The end of input: rows the hook held back across records (a shuffle
    /// buffer, a partial batch), written after the last record's, in order.
    fn finish(&mut self) -> Result<Vec<Rows<'static>>, ExtractError> {
        Ok(Vec::new())
    }
}
