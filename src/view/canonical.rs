//! The canonical encoding of a list Feature, read without a general decoder.
//!
//! Every protobuf encoder writes a Feature holding one list variant the same
//! way: the variant's key, its length, then the list message, which is the
//! packed field 1 (key 0x0A, a length, the values) or nothing at all for an
//! empty list. When a Feature's bytes are exactly that, its values are one
//! contiguous run and a writer can copy them in one go. Anything else (split
//! runs, unpacked values, repeated or unknown fields, another variant) gets
//! `None`, and the caller takes the general path, which also reports errors.

use super::FeatureKind;

/// A length of at most 3 varint bytes (2 MiB), at `at`: (value, bytes used).
#[inline(always)]
pub fn short_len(b: &[u8], at: usize) -> Option<(usize, usize)> {
    let b0 = *b.get(at)?;
    if b0 < 0x80 {
        return Some((usize::from(b0), 1));
    }
    let b1 = *b.get(at + 1)?;
    if b1 < 0x80 {
        return Some((usize::from(b0 & 0x7f) | usize::from(b1) << 7, 2));
    }
    let b2 = *b.get(at + 2)?;
    (b2 < 0x80).then(|| (usize::from(b0 & 0x7f) | usize::from(b1 & 0x7f) << 7 | usize::from(b2) << 14, 3))
}

/// The packed values of `kind` when `feature` is its canonical encoding: one
/// key of `kind` (a field below 16), then a list message that is empty or a
/// single packed field 1 filling it exactly.
#[inline(always)]
pub fn packed_run(feature: &[u8], kind: FeatureKind) -> Option<&[u8]> {
    let key = ((kind as u8) << 3) | 2;
    if kind as u8 >= 16 || *feature.first()? != key {
        return None;
    }
    let (len, n) = short_len(feature, 1)?;
    let body = feature.get(1 + n..)?;
    if body.len() != len {
        return None;
    }
    if body.is_empty() {
        return Some(body);
    }
    if body[0] != 0x0a {
        return None;
    }
    let (run, m) = short_len(body, 1)?;
    let values = &body[1 + m..];
    (values.len() == run).then_some(values)
}

/// Whether `feature` is empty or one length-delimited field (of any number
/// 1 to 15) whose length fills it exactly: a Feature every decoder accepts
/// at the top level, whatever its body holds (`FeatureView::parse` reads no
/// further). Most Features are one list variant written this way.
#[inline]
pub fn one_field(feature: &[u8]) -> bool {
    let Some(&key) = feature.first() else { return true };
    if key & 7 != 2 || key >> 3 == 0 || key >= 0x80 {
        return false;
    }
    short_len(feature, 1).is_some_and(|(len, n)| 1 + n + len == feature.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_exact_canonical_layout_is_taken() {
        let fids = [0x12, 10, 0x0a, 8, 1, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(packed_run(&fids, FeatureKind::FidV2List), Some(&fids[4..]));
        assert_eq!(packed_run(&fids, FeatureKind::FidV1List), None, "another variant");
        assert_eq!(packed_run(&[0x12, 0], FeatureKind::FidV2List), Some(&[][..]), "an empty list");
        assert_eq!(packed_run(&fids[..11], FeatureKind::FidV2List), None, "truncated");
        let mut two_keys = fids.to_vec();
        two_keys.extend([0x12, 0]);
        assert_eq!(packed_run(&two_keys, FeatureKind::FidV2List), None, "a second occurrence merges");
        let unpacked = [0x12, 9, 0x09, 1, 0, 0, 0, 0, 0, 0, 0];
        assert_eq!(packed_run(&unpacked, FeatureKind::FidV2List), None, "unpacked values");
        assert_eq!(packed_run(&[], FeatureKind::FidV2List), None, "an empty Feature");
    }

    #[test]
    fn two_and_three_byte_lengths_are_read() {
        for n in [16usize, 2000, 100_000] {
            let values = vec![7u8; n * 8];
            let inner = [vec![0x0a], varint(values.len()), values.clone()].concat();
            let feature = [vec![0x12], varint(inner.len()), inner].concat();
            assert_eq!(packed_run(&feature, FeatureKind::FidV2List), Some(&values[..]), "{n} fids");
        }
    }

    /// One occurrence of a list variant: packed, unpacked or empty.
    fn occurrence(field: u8, values: &[u64], packed: bool) -> Vec<u8> {
        let body: Vec<u8> = if packed && !values.is_empty() {
            let run: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
            [vec![0x0a], varint(run.len()), run].concat()
        } else {
            values.iter().flat_map(|v| [vec![0x09], v.to_le_bytes().to_vec()].concat()).collect()
        };
        [vec![(field << 3) | 2], varint(body.len()), body].concat()
    }

    fn general(bytes: &[u8], kind: FeatureKind) -> Option<Vec<u8>> {
        let view = super::super::FeatureView::parse(bytes, 0).ok()?;
        let mut out = Vec::new();
        (view.kind() == Some(kind)).then_some(())?;
        view.fid_runs(|run| out.extend_from_slice(run)).ok()?;
        Some(out)
    }

    proptest::proptest! {
        /// Whenever the fast path answers, the general decoder gives the same
        /// values: over split runs, unpacked values, repeated and mixed
        /// variants, and damaged bytes.
        #[test]
        fn fast_path_agrees_with_the_general_decoder(
            parts in proptest::collection::vec(
                (proptest::sample::select(vec![1u8, 2, 3]), proptest::collection::vec(proptest::num::u64::ANY, 0..4), proptest::bool::ANY),
                0..4,
            ),
            damage in proptest::option::of((proptest::num::usize::ANY, proptest::num::u8::ANY)),
        ) {
            let mut bytes: Vec<u8> = parts.iter().flat_map(|(f, v, p)| occurrence(*f, v, *p)).collect();
            if let Some((at, b)) = damage.filter(|_| !bytes.is_empty()) {
                let i = at % bytes.len();
                bytes[i] = b;
            }
            if let Some(run) = packed_run(&bytes, FeatureKind::FidV2List).filter(|r| r.len() % 8 == 0) {
                proptest::prop_assert_eq!(Some(run.to_vec()), general(&bytes, FeatureKind::FidV2List));
            }
        }
    }

    proptest::proptest! {
        /// `one_field` vouches only for Features the parser accepts.
        #[test]
        fn one_field_features_parse(
            key in proptest::num::u8::ANY,
            len in 0usize..300,
            slack in -2isize..3,
            body in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
        ) {
            let mut bytes = vec![key];
            bytes.extend(varint(len));
            let n = (len as isize + slack).clamp(0, 299) as usize;
            bytes.extend(body.iter().cycle().take(n));
            if one_field(&bytes) {
                proptest::prop_assert!(crate::view::FeatureView::parse(&bytes, 0).is_ok(), "{:?}", bytes);
            }
        }
    }

    #[test]
    fn one_field_takes_a_list_variant_and_nothing_else() {
        assert!(one_field(&[]));
        assert!(one_field(&[0x12, 2, 0x0a, 0]), "fid_v2_list, one packed run");
        assert!(one_field(&[0x12, 0]), "an empty list");
        assert!(!one_field(&[0x12, 2, 0x0a]), "short");
        assert!(!one_field(&[0x12, 0, 0x12, 0]), "two fields");
        assert!(!one_field(&[0x10, 1]), "a varint field");
        assert!(!one_field(&[0x02, 0]), "field 0");
    }

    fn varint(mut v: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }
}
