//! The one hash function of fex operators: XXH64 with seed 0 (xxhash-rust).
//! Ids are hashed as their 8 little-endian bytes, strings as their bytes. It is
//! specified, portable and stable across releases; `tests` pins its outputs,
//! because changing it would silently re-bucket every trained embedding.

use xxhash_rust::xxh64::xxh64;

/// XXH64 of an id's 8 little-endian bytes.
#[inline]
pub fn hash_u64(x: u64) -> u64 {
    xxh64(&x.to_le_bytes(), 0)
}

/// XXH64 of a byte string.
#[inline]
pub fn hash_bytes(b: &[u8]) -> u64 {
    xxh64(b, 0)
}

/// XXH64 of `parts` joined by `_` (FG's joiner in a discrete feature's
/// string: `item_is_main_100` for need_prefix, `k2_v2` for need_key): equal to
/// [`hash_bytes`] of the joined bytes, built on the stack up to 256 bytes
/// (the one-shot hash is the cheaper one; a short buffer first, as zeroing
/// one costs per byte), streamed past that.
pub fn hash_joined(parts: &[&[u8]]) -> u64 {
    let len = parts.iter().map(|p| p.len() + 1).sum::<usize>().saturating_sub(1);
    if len <= 64 {
        return joined_on_stack::<64>(parts, len);
    }
    if len <= 256 {
        return joined_on_stack::<256>(parts, len);
    }
    let mut h = xxhash_rust::xxh64::Xxh64::new(0);
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update(b"_");
        }
        h.update(p);
    }
    h.digest()
}

/// [`hash_joined`] through a buffer of `N >= len` bytes.
#[inline]
fn joined_on_stack<const N: usize>(parts: &[&[u8]], len: usize) -> u64 {
    let mut buf = [0u8; N];
    let mut at = 0;
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            buf[at] = b'_';
            at += 1;
        }
        buf[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    xxh64(&buf[..len], 0)
}

/// XXH64 of a tuple of ids (a cross), as their concatenated little-endian bytes.
#[inline]
pub fn hash_tuple(ids: &[u64]) -> u64 {
    let mut h = xxhash_rust::xxh64::Xxh64::new(0);
    for id in ids {
        h.update(&id.to_le_bytes());
    }
    h.digest()
}

/// The identity digest of configs and vocabularies: XXH64 too, so fex has one
/// hash function (this one is not used for bucketing).
#[inline]
pub fn digest(bytes: &[u8]) -> u64 {
    hash_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_outputs() {
        // Published XXH64 test vectors (seed 0).
        assert_eq!(hash_bytes(b""), 0xef46_db37_51d8_e999);
        assert_eq!(hash_bytes(b"a"), 0xd24e_c4f1_a98c_6e5b);
        assert_eq!(hash_bytes(b"abc"), 0x44bc_2cf5_ad77_0999);
        // Our encodings of ids and tuples, pinned: changing them re-buckets models.
        assert_eq!(hash_u64(0), hash_bytes(&[0; 8]));
        assert_eq!(hash_u64(42), 0xb556_806f_b6d1_4353);
        assert_eq!(hash_tuple(&[1, 2]), hash_bytes(&[1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0]));
        // Joined parts hash as their joined bytes, on the stack or streamed.
        assert_eq!(hash_joined(&[b"k2", b"v2"]), hash_bytes(b"k2_v2"));
        assert_eq!(hash_joined(&[b"abc"]), hash_bytes(b"abc"));
        assert_eq!(hash_joined(&[b"", b""]), hash_bytes(b"_"));
        for n in [60, 61, 62, 63, 254, 255, 256, 300] {
            let long = vec![b'x'; n];
            let joined = [&b"p"[..], b"_", &long].concat();
            assert_eq!(hash_joined(&[b"p", &long]), hash_bytes(&joined), "{n}");
        }
    }
}
