//! Wire input that protobuf's C++ parser (which wrote the Monolith samples)
//! accepts and prost refuses: fex reads it as C++ does (issue 11). Inputs are
//! hand-encoded; each test also shows that prost refuses the same bytes, so
//! the difference is deliberate.

use fex::Plan;
use fex::proto::monolith_pb as pb;
use prost::Message;

/// A minimal protobuf writer: enough to put any wire type under any field.
#[derive(Default)]
struct Enc(Vec<u8>);

impl Enc {
    fn varint(&mut self, mut v: u64) -> &mut Self {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
        self
    }

    fn key(&mut self, field: u32, wire: u32) -> &mut Self {
        self.varint(u64::from(field << 3 | wire))
    }

    fn len(&mut self, field: u32, body: &[u8]) -> &mut Self {
        self.key(field, 2).varint(body.len() as u64);
        self.0.extend_from_slice(body);
        self
    }

    fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        self.0.extend_from_slice(bytes);
        self
    }
}

/// One INDIVIDUAL list `name` with these Feature bodies, one per row.
fn batch(name: &str, features: &[Vec<u8>]) -> Vec<u8> {
    let mut list = Enc::default();
    list.len(1, name.as_bytes());
    for f in features {
        list.len(2, f);
    }
    let mut batch = Enc::default();
    batch.len(1, &list.0).key(3, 0).varint(features.len() as u64);
    batch.0
}

/// A 10-byte varint: nine bytes of all ones, then `last`.
fn ten_bytes(last: u8) -> Vec<u8> {
    let mut v = vec![0xff; 9];
    v.push(last);
    v
}

/// Issue 11: a 10-byte varint whose last byte is above 1 was refused with
/// "varint longer than 10 bytes". C++ (`VarintParseSlow64`) keeps bit 63 of
/// the tenth byte and drops the overflow.
#[test]
fn ten_byte_varints_keep_bit_63_and_drop_the_overflow() {
    let plan = Plan::from_yaml("name: t\nfeatures:\n  - {name: n, kind: dense, dtype: i64, shape: [3]}\n").unwrap();
    // int64_list, packed: 0x02 ends with bit 63 clear, 0x7f with it set;
    // then 5 as a 10-byte varint whose tenth byte holds only overflow bits.
    let mut packed = ten_bytes(0x02);
    packed.extend(ten_bytes(0x7f));
    packed.extend([0x85, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7e]);
    let mut list = Enc::default();
    list.len(1, &packed);
    let mut feature = Enc::default();
    feature.len(5, &list.0);
    let bytes = batch("n", &[feature.0]);

    let out = fex::extract_batch(&plan, &bytes).unwrap();
    assert_eq!(out.tensor("n").unwrap().i64s(), [i64::MAX, -1, 5]);
    assert!(pb::ExampleBatch::decode(bytes.as_slice()).is_err(), "prost refuses a tenth byte above 1");
}

/// An 11-byte varint is still refused, and the message says so.
#[test]
fn eleven_byte_varints_are_refused() {
    let plan = Plan::from_yaml("name: t\nfeatures:\n  - {name: n, kind: dense, dtype: i64, shape: [1]}\n").unwrap();
    let mut list = Enc::default();
    list.key(1, 0).raw(&[0x80; 10]).raw(&[0x00]);
    let mut feature = Enc::default();
    feature.len(5, &list.0);
    let err = fex::extract_batch(&plan, &batch("n", &[feature.0])).unwrap_err().to_string();
    assert!(err.ends_with("varint longer than 10 bytes (the tenth byte has its continuation bit set)"), "{err}");
}

/// Issue 11: a Feature's variant field with the wrong wire type was refused
/// ("field 2 has wire type 0, expected length-delimited"). C++ parses it as
/// an unknown field: skipped, and the oneof keeps the variant it had.
#[test]
fn feature_fields_with_the_wrong_wire_type_are_skipped() {
    let plan = Plan::from_yaml("name: t\nfeatures:\n  - {name: ids, kind: sparse}\n").unwrap();
    let fids = |v: &[u64]| {
        let mut body = Vec::new();
        v.iter().for_each(|f| body.extend(f.to_le_bytes()));
        let mut list = Enc::default();
        list.len(1, &body);
        list.0
    };
    // Row 0: fid_v2_list [5], then field 2 again as a varint, and
    // float_value (13) as a varint: neither replaces the list.
    let mut row0 = Enc::default();
    row0.len(2, &fids(&[5])).key(2, 0).varint(9).key(13, 0).varint(1);
    // Row 1: only misfits (fid_v2_list as fixed32, float_list as fixed64):
    // an empty Feature.
    let mut row1 = Enc::default();
    row1.key(2, 5).raw(&[1, 2, 3, 4]).key(3, 1).raw(&[0; 8]);
    // Row 2: int64_value (12) sent length-delimited before a fid_v2_list
    // sent in two runs that merge, with a misfit between them.
    let mut row2 = Enc::default();
    row2.len(12, b"xyz").len(2, &fids(&[7])).key(2, 1).raw(&[0; 8]).len(2, &fids(&[8]));
    let bytes = batch("ids", &[row0.0, row1.0, row2.0]);

    let out = fex::extract_batch(&plan, &bytes).unwrap();
    assert_eq!(out.tensor("ids").unwrap().ragged_u64(), [vec![5], vec![], vec![7, 8]]);
    assert!(pb::ExampleBatch::decode(bytes.as_slice()).is_err(), "prost refuses a wrong wire type");
}
