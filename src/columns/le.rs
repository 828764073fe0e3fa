//! The library's one `unsafe` module: appending little-endian wire words to a
//! typed vector with a single `memcpy`.
//!
//! The naive code is `v.extend(le.chunks_exact(8).map(u64::from_le_bytes))`,
//! a load and a push per element; on the B = 256 ranking request, where most
//! of the 2 MB input is fids, that loop was the largest single cost of
//! extraction. On little-endian machines the wire bytes already are the
//! values, so they are copied as they are; big-endian machines take the loop.

/// Appends the whole little-endian words of `le` to `v` (a trailing partial
/// word is not a value and is left out).
#[inline]
pub(crate) fn extend_le<T: bytemuck::Pod>(v: &mut Vec<T>, le: &[u8]) {
    let size = std::mem::size_of::<T>();
    let n = le.len() / size;
    if cfg!(target_endian = "big") {
        v.extend(le.chunks_exact(size).map(|c| swap_bytes(bytemuck::pod_read_unaligned::<T>(c))));
        return;
    }
    v.reserve(n);
    let len = v.len();
    debug_assert!(v.capacity() - len >= n && le.len() >= n * size);
    // SAFETY: `reserve` made room for `n` more elements after `len`, so the
    // destination range of `n * size` bytes lies inside `v`'s allocation; `le`
    // holds at least `n * size` bytes; the two cannot overlap, since `le` is
    // borrowed shared while `v` is borrowed exclusively. `T: Pod` makes every
    // byte pattern a valid `T`, and on a little-endian machine these bytes
    // are exactly the values, so the `n` new elements are initialised before
    // `set_len` exposes them.
    unsafe {
        std::ptr::copy_nonoverlapping(le.as_ptr(), v.as_mut_ptr().add(len).cast::<u8>(), n * size);
        v.set_len(len + n);
    }
}

/// Reverses the bytes of a plain value (only big-endian machines need it).
fn swap_bytes<T: bytemuck::Pod>(mut x: T) -> T {
    bytemuck::bytes_of_mut(&mut x).reverse();
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_appended_and_a_partial_word_is_not() {
        let mut v = vec![1u64];
        let wire: Vec<u8> = [2u64, 3].iter().flat_map(|x| x.to_le_bytes()).chain([9]).collect();
        extend_le(&mut v, &wire[1..1]);
        extend_le(&mut v, &wire);
        assert_eq!(v, [1, 2, 3]);
        let mut f = Vec::<f32>::new();
        extend_le(&mut f, &[0, 0, 0xc0, 0x3f, 0, 0, 0x80, 0x3f]);
        assert_eq!(f, [1.5, 1.0]);
    }
}
