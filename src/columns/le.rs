//! The library's one `unsafe` module: appending little-endian wire words to a
//! typed vector as one copy of their bytes.
//!
//! The naive code is `v.extend(le.chunks_exact(8).map(u64::from_le_bytes))`,
//! a load and a push per element; on the B = 256 ranking request, where most
//! of the 2 MB input is fids, that loop was the largest single cost of
//! extraction. On the little-endian machines fex supports (`columns` refuses
//! to compile elsewhere) the wire bytes already are the values, so they are
//! copied as they are.

/// Appends the whole little-endian words of `le` to `v` (a trailing partial
/// word is not a value and is left out).
#[inline]
pub(crate) fn extend_le<T: bytemuck::Pod>(v: &mut Vec<T>, le: &[u8]) {
    let size = const { std::mem::size_of::<T>() };
    const { assert!(std::mem::size_of::<T>() > 0, "a zero-sized value has no wire form") };
    let n = le.len() / size;
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
        copy(le.as_ptr(), v.as_mut_ptr().add(len).cast::<u8>(), n * size);
        v.set_len(len + n);
    }
}

/// How many bytes `extend_le_padded` copies whatever the run's length: every
/// run of a Feature with a one-byte length (under 128 bytes) fits.
pub(crate) const PAD: usize = 128;

/// `extend_le` of the first `n` bytes of `src` (`n <= PAD`), for a run that
/// has at least `PAD` readable bytes from its start (the rest of its list
/// follows it in the input). It copies all `PAD` bytes, the words past `n`
/// landing in `v`'s spare capacity, where the next append overwrites them:
/// one fixed-size copy instead of a branch on the run's size, which random
/// run lengths make unpredictable. Returns false, having appended nothing,
/// when `n` is over `PAD`.
#[inline]
pub(crate) fn extend_le_padded<T: bytemuck::Pod>(v: &mut Vec<T>, src: &[u8; PAD], n: usize) -> bool {
    let size = const { std::mem::size_of::<T>() };
    const { assert!(std::mem::size_of::<T>() > 0 && PAD.is_multiple_of(std::mem::size_of::<T>()), "PAD holds whole values") };
    if n > PAD {
        return false;
    }
    v.reserve(PAD / size);
    let len = v.len();
    debug_assert!(v.capacity() - len >= PAD / size);
    // SAFETY: `reserve` made room for `PAD / size` more elements after `len`,
    // so the `PAD` bytes written at element `len` lie inside `v`'s allocation
    // (spare capacity may be written; it is not exposed until `set_len`).
    // `src` is exactly `PAD` readable bytes, borrowed shared while `v` is
    // borrowed exclusively, so the ranges cannot overlap. Only the first
    // `n / size <= PAD / size` new elements are exposed, and each of their
    // bytes was just written; `T: Pod` makes any byte pattern a valid `T`,
    // and on a little-endian machine these bytes are exactly the values.
    unsafe {
        std::ptr::copy_nonoverlapping(src.as_ptr(), v.as_mut_ptr().add(len).cast::<u8>(), PAD);
        v.set_len(len + n / size);
    }
    true
}

/// Copies `len` bytes. Most runs are a few words, for which a call into
/// `memcpy` costs more than the copy: up to 64 bytes are copied inline as a
/// head and a tail of one fixed size (which overlap when `len` is not twice
/// that size), the way `memcpy` itself copies small sizes.
///
/// # Safety
/// `src` must be valid for reading and `dst` for writing `len` bytes, and the
/// two ranges must not overlap.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY (every arm): each copy reads `k <= len` bytes at `src` or at
    // `src + len - k`, and writes as many at the same offsets from `dst`, so
    // both stay within the `len` bytes the caller vouches for; source and
    // destination never overlap, only the two writes into `dst` may.
    unsafe {
        match len {
            0..4 => std::ptr::copy_nonoverlapping(src, dst, len),
            4..8 => head_tail::<4>(src, dst, len),
            8..16 => head_tail::<8>(src, dst, len),
            16..32 => head_tail::<16>(src, dst, len),
            32..=64 => head_tail::<32>(src, dst, len),
            _ => std::ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}

/// The first and the last `K` bytes of `len` (`K <= len <= 2 * K`).
///
/// # Safety
/// As for `copy`, with `K <= len`.
#[inline(always)]
unsafe fn head_tail<const K: usize>(src: *const u8, dst: *mut u8, len: usize) {
    debug_assert!(K <= len && len <= 2 * K);
    // SAFETY: `K <= len`, so both ranges lie within the caller's `len` bytes.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, K);
        std::ptr::copy_nonoverlapping(src.add(len - K), dst.add(len - K), K);
    }
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

    #[test]
    fn a_padded_append_exposes_only_the_run() {
        let mut wire = [0xeeu8; PAD];
        wire[..16].copy_from_slice(&[2, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]);
        let mut v = vec![1u64];
        for n in [16, 0, 8, 12] {
            assert!(extend_le_padded(&mut v, &wire, n));
        }
        assert_eq!(v, [1, 2, 3, 2, 2], "16 bytes, none, 8 bytes, and a partial word left out");
        assert!(!extend_le_padded(&mut v, &wire, PAD + 8), "longer than the padding");
        assert_eq!(v.len(), 5);
    }
}
