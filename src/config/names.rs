//! A one-bit-per-hash filter over the names a plan reads. A wide sample
//! carries hundreds of lists the model does not read; for each, one load
//! and one bit answer "not read" without hashing the whole name and probing
//! the name map. A set bit only means "look in the map": two names may share
//! a bit, never a name in the map lack one.

use std::fmt;

/// 2^16 bits (8 KiB): with a few thousand names read, few unread names land
/// on a set bit.
const BITS: u32 = 16;

#[derive(Clone)]
pub(crate) struct NameFilter {
    bits: Box<[u64; 1 << (BITS - 6)]>,
}

impl NameFilter {
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut bits = Box::new([0u64; 1 << (BITS - 6)]);
        for name in names {
            let h = quick_hash(name);
            bits[h >> 6] |= 1 << (h & 63);
        }
        NameFilter { bits }
    }

    /// False when the plan surely does not read `name`.
    #[inline]
    pub(crate) fn may_contain(&self, name: &[u8]) -> bool {
        let h = quick_hash(name);
        self.bits[h >> 6] >> (h & 63) & 1 != 0
    }
}

impl fmt::Debug for NameFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let set: u32 = self.bits.iter().map(|w| w.count_ones()).sum();
        write!(f, "NameFilter({set} of {} bits set)", 1u32 << BITS)
    }
}

/// `BITS` bits of a hash of `name` from at most two loads: its first and last
/// eight bytes (four, or three single bytes, for shorter names) and its
/// length, mixed by one multiplication.
#[inline]
fn quick_hash(name: &[u8]) -> usize {
    let n = name.len();
    let (head, tail) = if let (Some(h), Some(t)) = (name.first_chunk::<8>(), name.last_chunk::<8>()) {
        (u64::from_le_bytes(*h), u64::from_le_bytes(*t))
    } else if let (Some(h), Some(t)) = (name.first_chunk::<4>(), name.last_chunk::<4>()) {
        (u64::from(u32::from_le_bytes(*h)), u64::from(u32::from_le_bytes(*t)))
    } else if let [first, .., last] | [first @ last] = name {
        (u64::from(*first) | u64::from(name[n / 2]) << 8, u64::from(*last))
    } else {
        (0, 0)
    };
    let mixed = (head ^ tail.rotate_left(32) ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (mixed >> (64 - BITS)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_in_the_filter_is_found_whatever_its_length() {
        let names: Vec<Vec<u8>> = (0..40usize).map(|n| (0..n).map(|i| b'a' + (i * 7 % 26) as u8).collect()).collect();
        let filter = NameFilter::new(names.iter().map(|n| n.as_slice()));
        for name in &names {
            assert!(filter.may_contain(name), "{:?}", String::from_utf8_lossy(name));
        }
    }

    #[test]
    fn most_other_names_are_turned_away() {
        let read: Vec<String> = (0..50).map(|i| format!("item_f{i:04}")).collect();
        let filter = NameFilter::new(read.iter().map(|n| n.as_bytes()));
        let others = (50..10_050).map(|i| format!("item_f{i:04}"));
        let passed = others.filter(|n| filter.may_contain(n.as_bytes())).count();
        // 50 bits of 65,536 set: about 8 of 10,000 expected; a bad mix
        // (e.g. one that ignored the last bytes) passes thousands.
        assert!(passed < 100, "{passed} of 10,000 unread names passed");
    }
}
