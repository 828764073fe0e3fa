//! The transforms hook: where sample transforms (filters, labels, negative
//! generation, shuffle, batch) plug into the pipeline. A hook sees each
//! input record's rows after indexing and before writing, and may drop rows
//! (`Rows::retain`), append rows (`Rows::push_row`, `Rows::push_with` from
//! bytes it owns) or hold rows back and release them later as batches.
//! Extraction then writes what it returns, so transforms never re-encode
//! protobufs.

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

/// What a hook's `each` read of some rows for its `in_order`.
pub type Carry = Option<Box<dyn std::any::Any + Send>>;

/// Sample transforms, applied to the rows of each record. A hook is shared
/// by the run's workers: `each` runs on whichever worker read the record,
/// records in any order; `in_order` then sees every record strictly in
/// input order, one at a time, so a stateful transform (an item pool, a
/// seeded sampler) sees records exactly in file order and the output does
/// not depend on `--threads`. Extraction of what `in_order` returns runs on
/// the workers again.
pub trait RowsHook: Send + Sync {
    /// Edits `rows` (drop rows, set labels) without state across records,
    /// and may read ahead for `in_order` what depends on the rows alone
    /// (handed back to it with the same rows). An error is the record's
    /// error (reported with its file, index and offset; skipped under
    /// `--on-error skip`).
    fn each(&self, _record: &RecordCtx<'_>, _rows: &mut Rows<'_>) -> Result<Carry, ExtractError> {
        Ok(None)
    }

    /// Edits `rows` in input order and returns what to write now, each
    /// element one table (or response): none, the rows as they are, or
    /// batches the hook completed from rows it held back. `carry` is what
    /// `each` returned for these rows.
    fn in_order<'a>(&self, record: &RecordCtx<'_>, rows: Rows<'a>, carry: Carry)
    -> Result<Vec<Rows<'a>>, ExtractError>;

    /// Counters for the run's summary, in a stable order: e.g.
    /// `("filter_by_fids: dropped", 12)`, `("negative_gen: generated", 40)`.
    fn counts(&self) -> Vec<(String, u64)> {
        Vec::new()
    }

    /// The end of input: rows the hook held back across records (a shuffle
    /// buffer, a partial batch), written after the last record's, in order,
    /// each element one table.
    fn finish(&self) -> Result<Vec<Rows<'static>>, ExtractError> {
        Ok(Vec::new())
    }
}
