//! Worked cases for the wire primitives, one `check` per rule.

use super::*;

fn varint_of(bytes: &[u8]) -> Result<u64, String> {
    Reader::new(bytes, 0).varint().map_err(|e| e.to_string())
}

#[test]
fn varints() {
    let check = |input: &[u8], expected: Result<u64, &str>| {
        assert_eq!(varint_of(input), expected.map_err(str::to_string), "input {input:?}");
    };
    check(&[0], Ok(0));
    check(&[0x7f], Ok(127));
    check(&[0x80, 0x01], Ok(128));
    check(&[0xac, 0x02], Ok(300));
    check(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01], Ok(u64::MAX));
    check(&[], Err("@ byte 0: truncated varint"));
    check(&[0x80, 0x80], Err("@ byte 0: truncated varint"));
    let too_long = "@ byte 0: varint longer than 10 bytes (the tenth byte has its continuation bit set)";
    check(&[0xff; 10], Err(too_long));
    check(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00], Err(too_long));
}

/// Issue 11: a 10-byte varint whose last byte is above 1 is exactly 10 bytes
/// long; protobuf's C++ parser (`VarintParseSlow64`) keeps bit 63 from it and
/// drops the bits that overflow 64, so fex reads the same value.
#[test]
fn tenth_varint_byte_overflow_bits_are_dropped() {
    let nine = [0xffu8; 9];
    let ten = |last: u8| {
        let mut v = nine.to_vec();
        v.push(last);
        v
    };
    // Bit 0 of the tenth byte is bit 63; its bits 1..=6 fall off the end.
    for (last, expected) in [(0x02, u64::MAX >> 1), (0x03, u64::MAX), (0x7e, u64::MAX >> 1), (0x7f, u64::MAX)] {
        assert_eq!(varint_of(&ten(last)), Ok(expected), "tenth byte {last:#04x}");
        let input = ten(last);
        let mut r = Reader::new(&input, 0);
        r.varint().unwrap();
        assert!(r.is_empty(), "all 10 bytes consumed");
    }
    // The low nine bytes keep their bits: 1, then zeros, then an overflowing tenth byte.
    let one = [0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7e];
    assert_eq!(varint_of(&one), Ok(1));
    // The same value through a key and a skip: a varint field is skipped whole.
    let mut msg = vec![0x08];
    msg.extend(ten(0x42));
    msg.extend([0x10, 0x05]);
    let mut r = Reader::new(&msg, 0);
    let (f, w) = r.key().unwrap();
    r.skip(f, w).unwrap();
    assert_eq!(r.key().unwrap(), (2, WireType::Varint));
    assert_eq!(r.varint().unwrap(), 5);
}

#[test]
fn zigzag() {
    assert_eq!(zigzag64(0), 0);
    assert_eq!(zigzag64(1), -1);
    assert_eq!(zigzag64(2), 1);
    assert_eq!(zigzag64(u64::MAX), i64::MIN);
    assert_eq!(zigzag32(3), -2);
    assert_eq!(zigzag32(0xffff_fffe), i32::MAX);
}

#[test]
fn keys_reject_zero_tag_and_wire_types_6_7() {
    let key = |b: &[u8]| Reader::new(b, 10).key().map_err(|e| e.to_string());
    assert_eq!(key(&[0x08]), Ok((1, WireType::Varint)));
    assert_eq!(key(&[0x02]), Err("@ byte 10: field number 0 is invalid".into()));
    assert_eq!(key(&[0x0e]), Err("@ byte 10: invalid wire type 6".into()));
    assert_eq!(key(&[0x0f]), Err("@ byte 10: invalid wire type 7".into()));
}

#[test]
fn skip_every_wire_type() {
    // varint, fixed64, len(2), group{ varint }, fixed32, then field 9 varint.
    let msg = [
        0x08, 0x96, 0x01, //
        0x11, 1, 2, 3, 4, 5, 6, 7, 8, //
        0x1a, 2, 0xaa, 0xbb, //
        0x23, 0x08, 0x01, 0x24, //
        0x2d, 1, 2, 3, 4, //
        0x48, 0x05,
    ];
    let mut r = Reader::new(&msg, 0);
    let mut seen = Vec::new();
    while !r.is_empty() {
        let (field, wire) = r.key().unwrap();
        seen.push(field);
        if field == 9 {
            assert_eq!(r.varint().unwrap(), 5);
        } else {
            r.skip(field, wire).unwrap();
        }
    }
    assert_eq!(seen, [1, 2, 3, 4, 5, 9]);
}

#[test]
fn skip_errors() {
    let skip_all = |b: &[u8]| -> Result<(), String> {
        let mut r = Reader::new(b, 0);
        while !r.is_empty() {
            let (f, w) = r.key().map_err(|e| e.to_string())?;
            r.skip(f, w).map_err(|e| e.to_string())?;
        }
        Ok(())
    };
    assert_eq!(skip_all(&[0x0a, 5, 1]), Err("@ byte 2: needs 5 bytes, only 1 remain".into()));
    assert_eq!(skip_all(&[0x09, 1, 2]), Err("@ byte 1: needs 8 bytes, only 2 remain".into()));
    assert_eq!(skip_all(&[0x0b, 0x08, 1]), Err("@ byte 3: unbalanced group markers".into()));
    assert_eq!(skip_all(&[0x0c]), Err("@ byte 1: unbalanced group markers".into()));
    let mut deep = vec![0x0b; MAX_DEPTH + 2];
    deep.extend(vec![0x0c; MAX_DEPTH + 2]);
    assert!(skip_all(&deep).unwrap_err().contains("nesting deeper than"));
}

#[test]
fn packed_and_unpacked_fixed64_runs() {
    // field 1 packed [1, 2], then field 1 unpacked 3, then unknown field 2.
    let mut msg = vec![0x0a, 16];
    msg.extend(1u64.to_le_bytes());
    msg.extend(2u64.to_le_bytes());
    msg.push(0x09);
    msg.extend(3u64.to_le_bytes());
    msg.extend([0x10, 0x07]);
    let mut values = Vec::new();
    for_each_fixed64(&msg, 0, |run| {
        values.extend(run.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())))
    })
    .unwrap();
    assert_eq!(values, [1, 2, 3]);
}

#[test]
fn packed_length_must_divide() {
    let msg = [0x0a, 3, 1, 2, 3];
    let err = for_each_fixed32(&msg, 100, |_| {}).unwrap_err();
    assert_eq!(err.to_string(), "@ byte 102: packed run of 3 bytes is not a multiple of 4");
    let wrong = [0x08, 1];
    let err = for_each_fixed32(&wrong, 0, |_| {}).unwrap_err();
    assert_eq!(err.to_string(), "@ byte 1: field 1 has wire type 0, expected fixed32 or packed");
}

#[test]
fn varint_lists_packed_and_not() {
    let msg = [0x0a, 3, 1, 0x96, 0x01, 0x08, 5];
    let mut values = Vec::new();
    for_each_varint(&msg, 0, |v| values.push(v)).unwrap();
    assert_eq!(values, [1, 150, 5]);
}

#[test]
fn error_paths_read_outermost_first() {
    let err = DecodeError::new(DecodeErrorKind::TruncatedVarint, 51234)
        .within("feature", Some(17))
        .within("named_feature_list", Some(3));
    assert_eq!(err.to_string(), "named_feature_list[3].feature[17] @ byte 51234: truncated varint");
    assert_eq!(std::mem::size_of::<Result<(), DecodeError>>(), std::mem::size_of::<usize>());
}

// The inline fast paths (one- and two-byte varints, one-byte keys, the name
// scan) must agree with the general code on every input, errors included.

#[test]
fn short_varints_match_the_general_path() {
    for b0 in 0..=255u8 {
        for b1 in 0..=255u8 {
            for input in [&[b0][..], &[b0, b1][..], &[b0, b1, 0x01][..]] {
                let (mut fast, mut slow) = (Reader::new(input, 3), Reader::new(input, 3));
                let f = fast.varint().map_err(|e| e.to_string());
                assert_eq!(f, slow.varint_slow().map_err(|e| e.to_string()), "input {input:?}");
                assert_eq!(fast.offset(), slow.offset(), "input {input:?}");
            }
        }
    }
}

#[test]
fn one_byte_keys_match_the_general_path() {
    for b in 0..=255u8 {
        for input in [&[b][..], &[b, 0x01][..], &[b, 0x80][..]] {
            let mut fast = Reader::new(input, 7);
            let mut slow = Reader::new(input, 7);
            let (f, s) = (fast.key().map_err(|e| e.to_string()), slow.key_slow().map_err(|e| e.to_string()));
            assert_eq!(f, s, "input {input:?}");
            assert_eq!(fast.offset(), slow.offset(), "input {input:?}");
        }
    }
}

/// The scan `last_len_field` replaces: every key read and skipped in turn.
fn last_len_field_reference<'a>(r: &mut Reader<'a>, field: u32) -> Result<&'a [u8], DecodeError> {
    let mut found: &[u8] = &[];
    while !r.is_empty() {
        let (f, wire) = r.key()?;
        if f == field && wire == WireType::Len {
            found = r.len_delimited()?.0;
        } else {
            r.skip(f, wire)?;
        }
    }
    Ok(found)
}

/// A message of fields of every wire type, then cut short or corrupted.
fn scan_input() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::prelude::*;
    // Few field numbers, so duplicates are common; lengths of one and two bytes.
    let field = (prop_oneof![1u32..4, 1u32..20], 0u8..6, prop_oneof![0usize..40, 0usize..300], any::<u64>());
    (proptest::collection::vec(field, 0..12), any::<usize>(), any::<u8>(), 0u8..3).prop_map(
        |(fields, at, byte, damage)| {
            let mut buf = Vec::new();
            let push_varint = |buf: &mut Vec<u8>, mut v: u64| {
                while v >= 0x80 {
                    buf.push(v as u8 | 0x80);
                    v >>= 7;
                }
                buf.push(v as u8);
            };
            for (f, wire, len, v) in fields {
                push_varint(&mut buf, u64::from(f << 3 | u32::from(wire)));
                match wire {
                    0 => push_varint(&mut buf, v),
                    1 => buf.extend_from_slice(&v.to_le_bytes()),
                    2 => {
                        push_varint(&mut buf, len as u64);
                        buf.extend((0..len).map(|i| i as u8));
                    }
                    3 => push_varint(&mut buf, u64::from(f << 3 | 4)),
                    4 => {}
                    _ => buf.extend_from_slice(&(v as u32).to_le_bytes()),
                }
            }
            match damage {
                1 if !buf.is_empty() => buf.truncate(at % buf.len()),
                2 if !buf.is_empty() => {
                    let i = at % buf.len();
                    buf[i] = byte;
                }
                _ => {}
            }
            buf
        },
    )
}

proptest::proptest! {
    #[test]
    fn last_len_field_matches_key_and_skip(buf in scan_input(), field in 1u32..4) {
        let mut fast = Reader::new(&buf, 5);
        let mut slow = Reader::new(&buf, 5);
        let f = fast.last_len_field(field).map_err(|e| e.to_string());
        let s = last_len_field_reference(&mut slow, field).map_err(|e| e.to_string());
        proptest::prop_assert_eq!(f, s);
    }
}

/// The one-byte shortcut writes what prost's key and varint write, on both
/// sides of its bounds.
#[test]
fn len_headers_are_prosts() {
    for field in [1, 2, 15, 16, 17, 100, 102] {
        for len in [0, 1, 127, 128, 300, 1 << 20] {
            let mut ours = Vec::new();
            push_len_header(&mut ours, field, len);
            let mut prosts = Vec::new();
            prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, &mut prosts);
            prost::encoding::encode_varint(len as u64, &mut prosts);
            assert_eq!(ours, prosts, "field {field}, len {len}");
            assert_eq!(len_field_len(field, len), ours.len() + len);
        }
    }
}
