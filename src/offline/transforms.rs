//! The model's `offline:` transforms (`samples::Transforms`) as the
//! pipeline's hook: the stateless transforms before the first stateful one
//! run on the worker that read the record (`each`); the rest, then shuffle
//! and batch, in input order (`in_order`). With shuffle or batch the
//! record's rows are made owned and what `Transforms::release` lets go is
//! written, each batch as its own table; what the buffers still hold at the
//! end is written by `RowsHook::finish`.

use bytes::Bytes;

use super::hook::{Carry, RecordCtx, RowsHook};
use crate::error::ExtractError;
use crate::extract::{Rows, Sample};
use crate::samples::{Prepared, TransformError, Transforms};

impl RowsHook for Transforms {
    fn each(&self, record: &RecordCtx<'_>, rows: &mut Rows<'_>) -> Result<Carry, ExtractError> {
        self.as_examples(rows)?;
        // Counted only once all of `each` stands: after a failure the run
        // goes through the chunk's records one at a time.
        let counted = self.apply_free_uncounted(rows).map_err(|e| blamed(e, rows, record))?;
        let prepared = self.prepare(rows).map_err(|e| blamed(e, rows, record))?;
        self.count(counted);
        Ok(prepared.map(|p| Box::new(p) as Box<dyn std::any::Any + Send>))
    }

    fn in_order<'a>(
        &self,
        record: &RecordCtx<'_>,
        mut rows: Rows<'a>,
        carry: Carry,
    ) -> Result<Vec<Rows<'a>>, ExtractError> {
        let prepared = carry.and_then(|c| c.downcast::<Prepared>().ok()).map(|p| *p);
        self.apply_prepared(&mut rows, prepared).map_err(|e| blamed(e, &rows, record))?;
        if !self.reorders() {
            return Ok(vec![rows]);
        }
        // Rows kept past their record own their bytes: the record's payloads
        // are copied once, and the rows slice them.
        let owners: Vec<Bytes> = record.payloads.iter().map(|p| Bytes::copy_from_slice(p)).collect();
        Ok(self.release(rows.into_owned(&owners)))
    }

    fn finish(&self) -> Result<Vec<Rows<'static>>, ExtractError> {
        Ok(Transforms::finish(self))
    }

    fn counts(&self) -> Vec<(String, u64)> {
        self.summary()
    }
}

/// The error at the record the failing row came from (rows of several
/// Examples are indexed together, and transforms drop and add rows).
fn blamed(e: TransformError, rows: &Rows<'_>, record: &RecordCtx<'_>) -> ExtractError {
    let record_index = match rows.sample(e.row) {
        Sample::Example(bytes) => {
            record.payloads.iter().position(|p| p.as_ptr() == bytes.as_ptr() && p.len() == bytes.len())
        }
        Sample::BatchRow { .. } => None,
    };
    let row = e.row;
    ExtractError::from(e).at_row(record_index.unwrap_or(row))
}
