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
    use FieldType::*;
    Ok(match ty {
        Int32 | Enum => Value::Int(i64::from(r.varint()? as i32)),
        Int64 => Value::Int(r.varint()? as i64),
        Uint32 => Value::Int(i64::from(r.varint()? as u32)),
        Uint64 => Value::Int(r.varint()? as i64),
        Sint32 => Value::Int(i64::from(zigzag32(r.varint()?))),
        Sint64 => Value::Int(zigzag64(r.varint()?)),
        Bool => Value::Int(i64::from(r.varint()? != 0)),
        Fixed32 => Value::Int(i64::from(r.fixed32()?)),
        Sfixed32 => Value::Int(i64::from(r.fixed32()? as i32)),
        Fixed64 => Value::Int(r.fixed64()? as i64),
        Sfixed64 => Value::Int(r.fixed64()? as i64),
        Float => Value::Float(f64::from(f32::from_bits(r.fixed32()?))),
        Double => Value::Float(f64::from_bits(r.fixed64()?)),
        String | Bytes => Value::Bytes(r.len_delimited()?.0),
    })
}
