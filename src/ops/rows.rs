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

/// Every operator's scratch for this thread (buffers kept from call to
/// call, so steady state allocates nothing), in one thread-local keyed by
/// the scratch's type: the thread-local block holds one vector, not a cell
/// per operator. The JNI library is loaded into JVMs whose static TLS
/// space is shared with RocksDB's: a block a few hundred bytes larger made
/// `dlopen` fail with "cannot allocate memory in static TLS block", and
/// SentencePiece's C++ brings thread-locals of its own
/// (jni/src/lib.rs holds the block under a budget). A slot is empty while
/// its scratch is lent out.
type Slots = Vec<(std::any::TypeId, Option<Box<dyn std::any::Any>>)>;

thread_local! {
    static SCRATCH: std::cell::RefCell<Slots> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Puts a lent scratch back in its slot, also when the operator panicked.
struct Lent(std::any::TypeId, Option<Box<dyn std::any::Any>>);

impl Drop for Lent {
    fn drop(&mut self) {
        let (id, scratch) = (self.0, self.1.take());
        let _ = SCRATCH.try_with(|cell| {
            if let Ok(mut slots) = cell.try_borrow_mut()
                && let Some((_, slot)) = slots.iter_mut().find(|(k, _)| *k == id)
            {
                *slot = scratch;
            }
        });
    }
}

/// Runs `f` on this thread's scratch of type `T`, or on `None` when that
/// scratch is in use (a re-entrant call), for an operator that has a
/// cheaper way without it.
pub(super) fn try_scratch<T: Default + 'static, R>(f: impl FnOnce(Option<&mut T>) -> R) -> R {
    let id = std::any::TypeId::of::<T>();
    let lent = SCRATCH.try_with(|cell| {
        let mut slots = cell.try_borrow_mut().ok()?;
        match slots.iter_mut().find(|(k, _)| *k == id) {
            Some((_, slot)) => slot.take().map(|s| Lent(id, Some(s))),
            None => {
                slots.push((id, None));
                Some(Lent(id, Some(Box::new(T::default()))))
            }
        }
    });
    match lent.ok().flatten() {
        Some(mut lent) => f(lent.1.as_mut().and_then(|s| s.downcast_mut::<T>())),
        None => f(None),
    }
}

/// Runs `f` on this thread's scratch of type `T`; a re-entrant call, which
/// finds it lent out, works on scratch of its own.
pub(super) fn with_scratch<T: Default + 'static, R>(f: impl FnOnce(&mut T) -> R) -> R {
    try_scratch(|s: Option<&mut T>| match s {
        Some(s) => f(s),
        None => f(&mut T::default()),
    })
}

#[cfg(test)]
mod tests {
    use super::{try_scratch, with_scratch};

    #[derive(Default)]
    struct A(Vec<u32>);
    #[derive(Default)]
    struct B(u32);

    /// A scratch keeps its buffers from call to call; another type's
    /// scratch nests inside it; the same type nested gets one of its own
    /// (`try_scratch` says so with `None`); a panic inside gives it back.
    #[test]
    fn scratch_is_kept_nested_and_given_back() {
        with_scratch(|a: &mut A| a.0.push(1));
        with_scratch(|a: &mut A| {
            assert_eq!(a.0, [1], "kept from the last call");
            with_scratch(|b: &mut B| b.0 += 1);
            with_scratch(|inner: &mut A| assert!(inner.0.is_empty(), "a re-entrant call's own scratch"));
            try_scratch(|inner: Option<&mut A>| assert!(inner.is_none(), "lent out"));
            a.0.push(2);
        });
        with_scratch(|b: &mut B| assert_eq!(b.0, 1));
        let panicked = std::panic::catch_unwind(|| with_scratch(|a: &mut A| panic!("{:?}", a.0)));
        assert!(panicked.is_err());
        with_scratch(|a: &mut A| assert_eq!(a.0, [1, 2], "given back after the panic"));
    }
}
