//! `idl.matrix.proto.LineId` read in place: known fields by name, and any field
//! by number and declared type, because production LineIds carry fields no
//! public .proto lists.

use crate::wire::{DecodeError, Reader, WireType, zigzag32, zigzag64};

/// A protobuf scalar type, as a config names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldType {
    Int32,
    Int64,
    Uint32,
    Uint64,
    Sint32,
    Sint64,
    Fixed32,
    Fixed64,
    Sfixed32,
    Sfixed64,
    Bool,
    Enum,
    Float,
    Double,
    String,
    Bytes,
}

/// What a field's values become in a tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueClass {
    Integer,
    Float,
    Bytes,
}

impl FieldType {
    /// Parses the proto spelling (`int64`, `fixed64`, `string`...).
    pub fn parse(s: &str) -> Option<Self> {
        use FieldType::*;
        Some(match s {
            "int32" => Int32,
            "int64" => Int64,
            "uint32" => Uint32,
            "uint64" => Uint64,
            "sint32" => Sint32,
            "sint64" => Sint64,
            "fixed32" => Fixed32,
            "fixed64" => Fixed64,
            "sfixed32" => Sfixed32,
            "sfixed64" => Sfixed64,
            "bool" => Bool,
            "enum" => Enum,
            "float" => Float,
            "double" => Double,
            "string" => String,
            "bytes" => Bytes,
            _ => return None,
        })
    }

    pub const NAMES: &'static str = "int32, int64, uint32, uint64, sint32, sint64, fixed32, fixed64, sfixed32, sfixed64, bool, enum, float, double, string, bytes";

    pub fn class(self) -> ValueClass {
        match self {
            Self::Float | Self::Double => ValueClass::Float,
            Self::String | Self::Bytes => ValueClass::Bytes,
            _ => ValueClass::Integer,
        }
    }

    fn single_wire(self) -> WireType {
        use FieldType::*;
        match self {
            Fixed32 | Sfixed32 | Float => WireType::Fixed32,
            Fixed64 | Sfixed64 | Double => WireType::Fixed64,
            String | Bytes => WireType::Len,
            _ => WireType::Varint,
        }
    }
}

/// One decoded value of a LineId field.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value<'a> {
    Int(i64),
    Float(f64),
    Bytes(&'a [u8]),
}

/// A known LineId field: number, type, repeated, proto2 default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KnownField {
    pub name: &'static str,
    pub number: u32,
    pub ty: FieldType,
    pub repeated: bool,
    pub default: f64,
}

const fn field(name: &'static str, number: u32, ty: FieldType, repeated: bool) -> KnownField {
    KnownField { name, number, ty, repeated, default: 0.0 }
}

/// The LineId fields proto/monolith/line_id.proto declares.
pub const KNOWN_FIELDS: &[KnownField] = &[
    field("uid", 2, FieldType::Fixed64, false),
    field("req_time", 3, FieldType::Int64, false),
    field("item_id", 4, FieldType::Fixed64, false),
    field("req_id", 5, FieldType::String, false),
    field("actions", 6, FieldType::Int32, true),
    field("chnid", 19, FieldType::Int64, false),
    field("generate_time", 20, FieldType::Int64, false),
    field("emit_type", 21, FieldType::Int32, false),
    field("pre_actions", 23, FieldType::Int32, true),
    field("model_names", 25, FieldType::String, false),
    KnownField { name: "sample_rate", number: 27, ty: FieldType::Float, repeated: false, default: 1.0 },
    field("special_strategies", 39, FieldType::Int32, true),
    field("device_type", 41, FieldType::String, false),
    field("cid", 48, FieldType::String, false),
    field("user_id", 49, FieldType::String, false),
    field("is_draw", 87, FieldType::Bool, false),
    field("rank", 145, FieldType::Int32, false),
    field("data_source_name", 235, FieldType::String, false),
];

/// Looks a known field up by name.
pub fn known_field(name: &str) -> Option<&'static KnownField> {
    KNOWN_FIELDS.iter().find(|f| f.name == name)
}

/// A serialized LineId.
#[derive(Debug, Clone, Copy)]
pub struct LineIdView<'a> {
    buf: &'a [u8],
    base: usize,
}

impl<'a> LineIdView<'a> {
    pub fn new(buf: &'a [u8], base: usize) -> Self {
        Self { buf, base }
    }

    /// The serialized LineId.
    pub fn bytes(&self) -> &'a [u8] {
        self.buf
    }

    /// Calls `f` with every value of field `number`, decoded as `ty`. Packed and
    /// unpacked runs are both accepted; for a singular field the caller keeps
    /// the last value.
    pub fn values(&self, number: u32, ty: FieldType, mut f: impl FnMut(Value<'a>)) -> Result<(), DecodeError> {
        let mut r = Reader::new(self.buf, self.base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            if field != number {
                r.skip(field, wire)?;
            } else if wire == ty.single_wire() {
                f(read_one(&mut r, ty)?);
            } else if wire == WireType::Len {
                let mut run = r.sub_reader()?;
                while !run.is_empty() {
                    f(read_one(&mut run, ty)?);
                }
            } else {
                return Err(r.wrong_wire(field, wire, "its declared type"));
            }
        }
        Ok(())
    }

    /// `scan` for the usual LineId, number fields only: keys and varints of
    /// the lengths every encoder writes, in a loop with no error paths.
    /// `None` on anything else (the caller then runs `scan`, which decodes
    /// or reports it); `f` may have been called for a prefix by then.
    pub fn scan_numbers(&self, fields: &[(u32, FieldType)], mut f: impl FnMut(usize, Value<'a>)) -> Option<()> {
        let b = self.buf;
        let mut pos = 0;
        while pos < b.len() {
            let (key, n) = short_varint(b, pos)?;
            pos += n;
            // Field 0 and numbers past 2^29 - 1 are errors `scan` reports.
            if !(1..=0x1fff_ffff).contains(&(key >> 3)) {
                return None;
            }
            let (field, wire) = ((key >> 3) as u32, key & 7);
            let want = fields.iter().position(|&(n, _)| n == field);
            match (wire, want) {
                (0, _) => {
                    let (raw, n) = short_varint(b, pos)?;
                    pos += n;
                    if let Some(i) = want {
                        (fields[i].1.single_wire() == WireType::Varint).then_some(())?;
                        f(i, number(fields[i].1, raw));
                    }
                }
                (1 | 5, _) => {
                    let size = if wire == 1 { 8 } else { 4 };
                    let word = b.get(pos..pos + size)?;
                    pos += size;
                    if let Some(i) = want {
                        let expected = if size == 8 { WireType::Fixed64 } else { WireType::Fixed32 };
                        (fields[i].1.single_wire() == expected).then_some(())?;
                        let raw = word.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x));
                        f(i, number(fields[i].1, raw));
                    }
                }
                (2, _) => {
                    let (len, n) = short_varint(b, pos)?;
                    let end = (pos + n).checked_add(usize::try_from(len).ok()?).filter(|&e| e <= b.len())?;
                    if let Some(i) = want {
                        // A packed run of varints (of fixed-width words, or
                        // a string, the full decoder takes).
                        (fields[i].1.single_wire() == WireType::Varint).then_some(())?;
                        let mut at = pos + n;
                        while at < end {
                            let (raw, used) = short_varint(&b[..end], at)?;
                            f(i, number(fields[i].1, raw));
                            at += used;
                        }
                    }
                    pos = end;
                }
                _ => return None,
            }
        }
        Some(())
    }

    /// Every value of each of `fields` (number and type; numbers distinct),
    /// in one walk: `f(i, value)` in wire order, as `values` gives them for
    /// field `i` alone.
    pub fn scan(&self, fields: &[(u32, FieldType)], mut f: impl FnMut(usize, Value<'a>)) -> Result<(), DecodeError> {
        let mut r = Reader::new(self.buf, self.base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            let Some(i) = fields.iter().position(|&(n, _)| n == field) else {
                r.skip(field, wire)?;
                continue;
            };
            let ty = fields[i].1;
            if wire == ty.single_wire() {
                f(i, read_one(&mut r, ty)?);
            } else if wire == WireType::Len {
                let mut run = r.sub_reader()?;
                while !run.is_empty() {
                    f(i, read_one(&mut run, ty)?);
                }
            } else {
                return Err(r.wrong_wire(field, wire, "its declared type"));
            }
        }
        Ok(())
    }

    /// The last value of field `number`, if present.
    pub fn last(&self, number: u32, ty: FieldType) -> Result<Option<Value<'a>>, DecodeError> {
        let mut out = None;
        self.values(number, ty, |v| out = Some(v))?;
        Ok(out)
    }

    /// Checks every key and length of the message.
    pub fn validate(&self) -> Result<(), DecodeError> {
        let mut r = Reader::new(self.buf, self.base);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            r.skip(field, wire)?;
        }
        Ok(())
    }
}

fn read_one<'a>(r: &mut Reader<'a>, ty: FieldType) -> Result<Value<'a>, DecodeError> {
    Ok(match ty.single_wire() {
        WireType::Varint => number(ty, r.varint()?),
        WireType::Fixed32 => number(ty, u64::from(r.fixed32()?)),
        WireType::Fixed64 => number(ty, r.fixed64()?),
        _ => Value::Bytes(r.len_delimited()?.0),
    })
}

/// A varint at `pos`: (value, bytes used). Ten bytes, as the general
/// decoder reads them (`Reader::varint`: of the tenth byte only bit 63
/// stays), so random 64-bit ids such as `uid` stay on the quick walk.
#[inline(always)]
fn short_varint(b: &[u8], pos: usize) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for i in 0..10 {
        let byte = *b.get(pos + i)?;
        value |= u64::from(byte & 0x7f) << (7 * i);
        if byte < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// A number field's value from its raw wire bits (a varint, or the
/// little-endian bits of a fixed32 / fixed64).
#[inline]
fn number<'a>(ty: FieldType, raw: u64) -> Value<'a> {
    use FieldType::*;
    match ty {
        Int32 | Enum => Value::Int(i64::from(raw as i32)),
        Int64 | Uint64 | Fixed64 | Sfixed64 => Value::Int(raw as i64),
        Uint32 => Value::Int(i64::from(raw as u32)),
        Sint32 => Value::Int(i64::from(zigzag32(raw))),
        Sint64 => Value::Int(zigzag64(raw)),
        Bool => Value::Int(i64::from(raw != 0)),
        Fixed32 => Value::Int(i64::from(raw as u32)),
        Sfixed32 => Value::Int(i64::from(raw as u32 as i32)),
        Float => Value::Float(f64::from(f32::from_bits(raw as u32))),
        Double => Value::Float(f64::from_bits(raw)),
        String | Bytes => Value::Int(0),
    }
}

#[cfg(test)]
mod tests {
    //! The quick number walk must agree with the full decoder whenever it
    //! answers: on random fields of every wire type, packed and unpacked
    //! runs, long varints, field 0 and flipped bytes.

    use super::*;
    use proptest::prelude::*;

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn field() -> impl Strategy<Value = Vec<u8>> {
        let number = prop::sample::select(vec![0u64, 2, 3, 6, 19, 27, 145]);
        (number, 0..6u64, any::<u64>(), prop::collection::vec(any::<u64>(), 0..4)).prop_map(|(n, wire, v, run)| {
            let mut out = Vec::new();
            varint(n << 3 | if wire == 3 { 2 } else { wire.min(5) }, &mut out);
            match wire {
                0 => varint(v, &mut out),
                1 => out.extend(v.to_le_bytes()),
                5 => out.extend((v as u32).to_le_bytes()),
                _ => {
                    let mut body = Vec::new();
                    run.iter().for_each(|&x| varint(x >> (x % 64), &mut body));
                    varint(body.len() as u64, &mut out);
                    out.extend(body);
                }
            }
            out
        })
    }

    #[test]
    fn ten_byte_varints_take_the_quick_walk_and_agree_with_the_full_decoder() {
        // uid = u64::MAX (ten bytes), then a tenth byte with bits past 63
        // (dropped, as protobuf's C++ parser drops them), then one cut short.
        let mut max = vec![0x08];
        varint(u64::MAX, &mut max);
        let mut high = vec![0x08];
        high.extend([0xff; 9]);
        high.push(0x7f);
        let wanted = [(1, FieldType::Uint64)];
        for buf in [max, high] {
            let view = LineIdView::new(&buf, 0);
            let (mut quick, mut full) = (Vec::new(), Vec::new());
            assert!(view.scan_numbers(&wanted, |_, v| quick.push(format!("{v:?}"))).is_some(), "{buf:02x?}");
            view.scan(&wanted, |_, v| full.push(format!("{v:?}"))).unwrap();
            assert_eq!(quick, full, "{buf:02x?}");
            assert_eq!(quick, [format!("{:?}", Value::Int(-1))], "{buf:02x?}");
        }
        let cut = [0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff];
        assert!(LineIdView::new(&cut, 0).scan_numbers(&wanted, |_, _| ()).is_none(), "an eleventh byte is refused");
    }

    proptest! {
        #[test]
        fn quick_walk_agrees_with_the_full_decoder(
            fields in prop::collection::vec(field(), 0..6),
            flip in prop::option::of((any::<usize>(), any::<u8>())),
        ) {
            let mut buf: Vec<u8> = fields.concat();
            if let Some((at, b)) = flip.filter(|_| !buf.is_empty()) {
                let i = at % buf.len();
                buf[i] = b;
            }
            let view = LineIdView::new(&buf, 0);
            let wanted = [(2, FieldType::Fixed64), (3, FieldType::Int64), (6, FieldType::Int32), (27, FieldType::Float)];
            // Floats compare by their bits, so NaN equals itself.
            let bits = |v: Value<'_>| match v {
                Value::Float(f) => (1, f.to_bits()),
                Value::Int(i) => (0, i as u64),
                Value::Bytes(_) => (2, 0),
            };
            let (mut quick, mut full) = (Vec::new(), Vec::new());
            if view.scan_numbers(&wanted, |i, v| quick.push((i, bits(v)))).is_some() {
                prop_assert!(view.scan(&wanted, |i, v| full.push((i, bits(v)))).is_ok());
                prop_assert_eq!(quick, full);
            }
        }
    }
}
