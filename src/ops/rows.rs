//! Row alignment of several inputs: an input returned once (rows = 1, a SHARED
//! feature) stands for every row; all others must agree.

use crate::columns::Column;
use crate::error::{ErrorKind, ExtractError};

/// The rows of an operator's result: the largest input row count.
pub(super) fn common(inputs: super::Inputs<'_>) -> Result<usize, ExtractError> {
    let rows = inputs.iter().map(|t| t.column.rows()).max().unwrap_or(0);
    for t in inputs.iter() {
        let r = t.column.rows();
        if r != rows && r != 1 {
            let message = format!("has {r} rows where others have {rows}");
            return Err(ErrorKind::Operator { name: t.name.clone(), message }.into());
        }
    }
    Ok(rows)
}

/// The row of `c` that stands for row `r` of the result.
#[inline]
pub(super) fn row_of(c: &Column, r: usize) -> usize {
    if c.rows() == 1 { 0 } else { r }
}

/// One operator's scratch for each thread: boxed, so that the thread-local
/// block holds a pointer, not the buffers. (The JNI library is loaded into
/// JVMs whose static TLS space is shared with RocksDB's; a block of a few
/// hundred bytes more made `dlopen` fail with "cannot allocate memory in
/// static TLS block".)
pub(super) type Scratch<T> = std::cell::RefCell<Option<Box<T>>>;

/// Runs `f` on this thread's scratch of one operator (buffers kept from
/// call to call, so steady state allocates nothing); a re-entrant call,
/// which finds it taken, works on scratch of its own.
pub(super) fn with_scratch<T: Default + 'static, R>(
    key: &'static std::thread::LocalKey<Scratch<T>>,
    f: impl FnOnce(&mut T) -> R,
) -> R {
    key.with(|cell| match cell.try_borrow_mut() {
        Ok(mut scratch) => f(scratch.get_or_insert_with(Box::default)),
        Err(_) => f(&mut T::default()),
    })
}
