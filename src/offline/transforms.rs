//! The model's `offline:` transforms (`samples::Transforms`) as the
//! pipeline's hook: row transforms run on each record's rows; shuffle and
//! batch (`Reorder`), when declared, run after them on the same thread, and
//! the rows a record leaves in place are the ones `Reorder` releases, so the
//! output is in the reordered order. What the buffers still hold at the end
//! is written by `RowsHook::finish`.

use bytes::Bytes;

use super::hook::{RecordCtx, RowsHook};
use crate::error::ExtractError;
use crate::extract::Rows;
use crate::samples::Transforms;

impl RowsHook for Transforms {
    fn apply<'a>(&'a mut self, record: &RecordCtx<'_>, rows: &mut Rows<'a>) -> Result<(), ExtractError> {
        Transforms::apply(self, rows)?;
        let Some(reorder) = self.reorder() else { return Ok(()) };
        // Rows kept past their record own their bytes: the record's payloads
        // are copied once, and the rows slice them.
        let owners: Vec<Bytes> = record.payloads.iter().map(|p| Bytes::copy_from_slice(p)).collect();
        let taken = std::mem::replace(rows, rows.empty_like());
        let ready = reorder.push(taken.into_owned(&owners));
        *rows = join(ready, rows.empty_like());
        Ok(())
    }

    fn finish(&mut self) -> Result<Vec<Rows<'static>>, ExtractError> {
        Ok(self.reorder().map(|r| r.finish()).unwrap_or_default())
    }

    fn counts(&self) -> Vec<(String, u64)> {
        self.summary()
    }
}

/// The released batches as one record's rows (in order).
fn join<'a>(mut ready: Vec<Rows<'static>>, empty: Rows<'a>) -> Rows<'a> {
    if ready.len() == 1 {
        return ready.pop().expect("one");
    }
    let mut all = empty;
    for batch in &ready {
        for row in 0..batch.len() {
            all.push_row(batch, row).expect("rows of one plan join");
        }
    }
    all
}
