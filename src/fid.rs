//! Feature ids (fids): a slot in the high bits, a hashed value in the rest.
//! v1 fids keep the slot in the top 10 bits; v2 in bits 48..63 (15 bits).

/// Bits of a v2 fid below its slot.
pub const V2_VALUE_BITS: u32 = 48;
const VALUE_MASK: u64 = (1 << V2_VALUE_BITS) - 1;

/// The slot of a v1 fid: its top 10 bits.
#[inline]
pub fn v1_slot(fid: u64) -> u64 {
    fid >> 54
}

/// The slot of a v2 fid: bits 48..63.
#[inline]
pub fn v2_slot(fid: u64) -> u64 {
    (fid >> V2_VALUE_BITS) & 0x7fff
}

/// Converts a v1 fid to v2: the slot moves down to bit 48, and bits 48..53 of
/// the v1 value are dropped.
#[inline]
pub fn v1_to_v2(fid: u64) -> u64 {
    (fid & VALUE_MASK) | (v1_slot(fid) << V2_VALUE_BITS)
}

/// Moves an id into `slot`: `slot << 48 | (x & (2^48 - 1))` (Monolith GetFidV2).
#[inline]
pub fn reslot(slot: u64, x: u64) -> u64 {
    ((slot & 0x7fff) << V2_VALUE_BITS) | (x & VALUE_MASK)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_examples() {
        // slot 5 in v1 (bits 54..63), value 0x1234 with junk in bits 48..53.
        let v1 = (5u64 << 54) | (0x3f << 48) | 0x1234;
        assert_eq!(v1_slot(v1), 5);
        assert_eq!(v1_to_v2(v1), (5u64 << 48) | 0x1234);
        assert_eq!(v2_slot(v1_to_v2(v1)), 5);
        // The largest v1 slot (1023) still fits the 15-bit v2 slot.
        assert_eq!(v2_slot(v1_to_v2(u64::MAX)), 1023);
        assert_eq!(v1_to_v2(u64::MAX), (1023 << 48) | VALUE_MASK);
        // Re-slotting keeps the low 48 bits and replaces the rest.
        assert_eq!(reslot(7, (3 << 48) | 0xabc), (7 << 48) | 0xabc);
        assert_eq!(reslot(7, u64::MAX), (7 << 48) | VALUE_MASK);
    }
}
