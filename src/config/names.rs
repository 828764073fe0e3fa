//! The names a plan reads, and how a list's name finds its source.
//!
//! [`NameFilter`]: one bit per hash. A wide sample carries hundreds of lists
//! the model does not read; for each, one load and one bit answer "not
//! read" without hashing the whole name and probing the map. A set bit only
//! means "look in the map": two names may share a bit, never a name in the
//! map lack one.
//!
//! [`NameIndex`]: the map itself, laid out for a model that reads thousands
//! of lists. Every name sits in one byte arena and every slot is one word
//! (a hash tag and the source), so a lookup touches a slot and the arena,
//! both dense, instead of a heap box per name.

use std::fmt;
use std::hash::Hasher;

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

/// Name → source index; inserting a name again maps it anew, as a map
/// would. Open addressing with linear probing over slots at most half full:
/// a slot is 0 (empty) or a name's 32-bit hash tag over its entry + 1.
#[derive(Clone)]
pub(crate) struct NameIndex {
    slots: Box<[u64]>,
    /// Every name's bytes, one after another.
    arena: Vec<u8>,
    /// Each name's place in `arena` and its source, in insertion order.
    entries: Vec<Entry>,
}

#[derive(Clone, Copy)]
struct Entry {
    start: u32,
    end: u32,
    source: u32,
}

impl Default for NameIndex {
    fn default() -> Self {
        NameIndex { slots: vec![0; 16].into_boxed_slice(), arena: Vec::new(), entries: Vec::new() }
    }
}

impl NameIndex {
    /// Maps `name` to `source`, replacing what it mapped to before.
    pub(crate) fn insert(&mut self, name: &[u8], source: usize) {
        let source = u32::try_from(source).expect("fewer than 2^32 sources");
        let tag = tag(name);
        let at = self.probe(name, tag);
        if self.slots[at] != 0 {
            let entry = (self.slots[at] & 0xffff_ffff) as usize - 1;
            self.entries[entry].source = source;
            return;
        }
        let width = |n: usize| u32::try_from(n).expect("a plan's names take under 4 GiB");
        let start = width(self.arena.len());
        self.arena.extend_from_slice(name);
        self.entries.push(Entry { start, end: width(self.arena.len()), source });
        self.slots[at] = tag << 32 | self.entries.len() as u64;
        if self.entries.len() * 2 > self.slots.len() {
            self.grow();
        }
    }

    /// The source `name` maps to.
    #[inline]
    pub(crate) fn get(&self, name: &[u8]) -> Option<usize> {
        match self.slots[self.probe(name, tag(name))] {
            0 => None,
            slot => Some(self.entries[(slot & 0xffff_ffff) as usize - 1].source as usize),
        }
    }

    /// The names in the index, in the order they were first inserted.
    pub(crate) fn names(&self) -> impl Iterator<Item = &[u8]> {
        self.entries.iter().map(|e| &self.arena[e.start as usize..e.end as usize])
    }

    /// The slot holding `name`, or the empty slot where it would go.
    #[inline]
    fn probe(&self, name: &[u8], tag: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = tag as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == 0 {
                return at;
            }
            if slot >> 32 == tag {
                let e = self.entries[(slot & 0xffff_ffff) as usize - 1];
                if &self.arena[e.start as usize..e.end as usize] == name {
                    return at;
                }
            }
            at = (at + 1) & mask;
        }
    }

    fn grow(&mut self) {
        let wider = vec![0; self.slots.len() * 2].into_boxed_slice();
        let old = std::mem::replace(&mut self.slots, wider);
        let mask = self.slots.len() - 1;
        for slot in old.iter().copied().filter(|&s| s != 0) {
            let mut at = (slot >> 32) as usize & mask;
            while self.slots[at] != 0 {
                at = (at + 1) & mask;
            }
            self.slots[at] = slot;
        }
    }
}

impl fmt::Debug for NameIndex {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = self
            .entries
            .iter()
            .map(|e| (String::from_utf8_lossy(&self.arena[e.start as usize..e.end as usize]), e.source));
        f.debug_map().entries(names).finish()
    }
}

/// Names one after another in one buffer, by index: a pass over a
/// thousand outputs' names reads them in order instead of one heap box each.
#[derive(Debug, Clone, Default)]
pub(crate) struct NameList {
    bytes: Vec<u8>,
    ends: Vec<usize>,
}

impl NameList {
    pub(crate) fn new<'a>(names: impl IntoIterator<Item = &'a str>) -> Self {
        let mut list = NameList::default();
        for name in names {
            list.bytes.extend_from_slice(name.as_bytes());
            list.ends.push(list.bytes.len());
        }
        list
    }

    /// Name `i`; empty past the end.
    #[inline]
    pub(crate) fn get(&self, i: usize) -> &[u8] {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).copied().unwrap_or(0),
        };
        let end = self.ends.get(i).copied().unwrap_or(start);
        &self.bytes[start..end]
    }
}

/// 32 bits of a hash of every byte of `name`: the slot's tag, whose low
/// bits also pick where probing starts.
#[inline]
fn tag(name: &[u8]) -> u64 {
    let mut h = rustc_hash::FxHasher::default();
    h.write(name);
    h.finish() >> 32
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

#[cfg(test)]
mod index_tests {
    use super::{NameIndex, NameList};
    use crate::wire::same_bytes as same;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// The index answers what a map given the same inserts answers, for
        /// the names inserted and for others (names drawn from a small
        /// alphabet, so many share prefixes, suffixes and lengths).
        #[test]
        fn answers_as_a_map_does(
            inserts in prop::collection::vec(("[ab_]{0,20}", 0usize..50), 0..300),
            others in prop::collection::vec("[ab_]{0,20}", 0..50),
        ) {
            let mut index = NameIndex::default();
            let mut map = HashMap::new();
            let mut order: Vec<String> = Vec::new();
            for (name, source) in &inserts {
                index.insert(name.as_bytes(), *source);
                if map.insert(name.clone(), *source).is_none() {
                    order.push(name.clone());
                }
            }
            for name in inserts.iter().map(|(n, _)| n).chain(&others) {
                prop_assert_eq!(index.get(name.as_bytes()), map.get(name).copied(), "{:?}", name);
            }
            let names: Vec<&[u8]> = index.names().collect();
            prop_assert_eq!(names, order.iter().map(|n| n.as_bytes()).collect::<Vec<_>>());
        }

        /// The list gives back each name by its index; `same` is `==`.
        #[test]
        fn a_list_of_names_and_their_comparison(names in prop::collection::vec("[ab_]{0,20}", 0..40), i in 0usize..50, j in 0usize..50) {
            let list = NameList::new(names.iter().map(String::as_str));
            for (k, name) in names.iter().enumerate() {
                prop_assert_eq!(list.get(k), name.as_bytes());
            }
            prop_assert_eq!(list.get(names.len()), b"");
            let (a, b) = (list.get(i), list.get(j));
            prop_assert_eq!(same(a, b), a == b, "{:?} {:?}", a, b);
        }
    }
}
