//! `monolith.io.proto.Feature`: which of the 16 oneof variants a Feature holds,
//! and its values read in place. The last variant on the wire wins; repeated
//! occurrences of the same message variant merge, as protobuf specifies; a
//! variant's field number with another wire type is skipped as an unknown
//! field, as protobuf's C++ parser does.

use crate::wire::{DecodeError, Reader, WireType, for_each_bytes, for_each_fixed32, for_each_fixed64, for_each_varint};

/// The oneof `type` of a Feature; discriminants are the field numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FeatureKind {
    FidV1List = 1,
    FidV2List = 2,
    FloatList = 3,
    DoubleList = 4,
    Int64List = 5,
    BytesList = 6,
    FidV2Lists = 7,
    FloatLists = 8,
    DoubleLists = 9,
    Int64Lists = 10,
    BytesLists = 11,
    Int64Value = 12,
    FloatValue = 13,
    DoubleValue = 14,
    BytesValue = 15,
    FidV1Lists = 16,
}

impl FeatureKind {
    fn from_field(field: u32) -> Option<Self> {
        use FeatureKind::*;
        Some(match field {
            1 => FidV1List,
            2 => FidV2List,
            3 => FloatList,
            4 => DoubleList,
            5 => Int64List,
            6 => BytesList,
            7 => FidV2Lists,
            8 => FloatLists,
            9 => DoubleLists,
            10 => Int64Lists,
            11 => BytesLists,
            12 => Int64Value,
            13 => FloatValue,
            14 => DoubleValue,
            15 => BytesValue,
            16 => FidV1Lists,
            _ => return None,
        })
    }

    /// The proto field name, for messages.
    pub fn name(self) -> &'static str {
        use FeatureKind::*;
        match self {
            FidV1List => "fid_v1_list",
            FidV2List => "fid_v2_list",
            FloatList => "float_list",
            DoubleList => "double_list",
            Int64List => "int64_list",
            BytesList => "bytes_list",
            FidV2Lists => "fid_v2_lists",
            FloatLists => "float_lists",
            DoubleLists => "double_lists",
            Int64Lists => "int64_lists",
            BytesLists => "bytes_lists",
            Int64Value => "int64_value",
            FloatValue => "float_value",
            DoubleValue => "double_value",
            BytesValue => "bytes_value",
            FidV1Lists => "fid_v1_lists",
        }
    }

    fn wire(self) -> WireType {
        match self {
            Self::Int64Value => WireType::Varint,
            Self::FloatValue => WireType::Fixed32,
            Self::DoubleValue => WireType::Fixed64,
            _ => WireType::Len,
        }
    }

    /// True for the `*_lists` (sequence) variants.
    pub fn is_lists(self) -> bool {
        use FeatureKind::*;
        matches!(self, FidV2Lists | FloatLists | DoubleLists | Int64Lists | BytesLists | FidV1Lists)
    }
}

/// A decoded Feature key: its variant and where that variant's values live.
#[derive(Debug, Clone, Copy)]
pub struct FeatureView<'a> {
    msg: &'a [u8],
    base: usize,
    kind: Option<FeatureKind>,
    /// Offset in `msg` of the first occurrence of `kind` since the last other
    /// variant: every occurrence from here on merges into the value.
    run_start: usize,
    /// The last scalar occurrence (`*_value` variants): raw bits or a body.
    scalar: u64,
    scalar_bytes: &'a [u8],
}

impl<'a> FeatureView<'a> {
    /// Reads the Feature's keys; list bodies are checked when their values are read.
    #[inline]
    pub fn parse(msg: &'a [u8], base: usize) -> Result<Self, DecodeError> {
        let mut view = Self { msg, base, kind: None, run_start: 0, scalar: 0, scalar_bytes: &[] };
        let mut r = Reader::new(msg, base);
        while !r.is_empty() {
            let at = r.offset() - base;
            let (field, wire) = r.key()?;
            let Some(kind) = FeatureKind::from_field(field) else {
                r.skip(field, wire)?;
                continue;
            };
            if wire != kind.wire() {
                // A known field with another wire type is an unknown field to
                // protobuf, skipped and kept out of the oneof (C++:
                // generated_message_tctable_lite.cc, `TcParser::MpFixed` /
                // `MpVarint` "mismatched wiretype" → `table->fallback`, the
                // unknown-field path). prost refuses it instead.
                r.skip(field, wire)?;
                continue;
            }
            if view.kind != Some(kind) {
                view.kind = Some(kind);
                view.run_start = at;
            }
            match wire {
                WireType::Varint => view.scalar = r.varint()?,
                WireType::Fixed32 => view.scalar = u64::from(r.fixed32()?),
                WireType::Fixed64 => view.scalar = r.fixed64()?,
                _ => view.scalar_bytes = r.len_delimited()?.0,
            }
        }
        Ok(view)
    }

    /// The Feature's bytes as they came, for callers that move it whole.
    pub fn bytes(&self) -> &'a [u8] {
        self.msg
    }

    /// The variant set, or `None` for an empty Feature.
    pub fn kind(&self) -> Option<FeatureKind> {
        self.kind
    }

    /// Calls `f` with each body of the current variant (one per occurrence).
    fn for_each_body(&self, mut f: impl FnMut(&'a [u8], usize) -> Result<(), DecodeError>) -> Result<(), DecodeError> {
        let Some(kind) = self.kind else { return Ok(()) };
        let mut r = Reader::new(&self.msg[self.run_start..], self.base + self.run_start);
        while !r.is_empty() {
            let (field, wire) = r.key()?;
            if field == kind as u32 && wire == WireType::Len {
                let (body, at) = r.len_delimited()?;
                f(body, at)?;
            } else {
                r.skip(field, wire)?;
            }
        }
        Ok(())
    }

    /// Runs of 8-byte little-endian fids (fid_v1_list / fid_v2_list).
    pub fn fid_runs(&self, mut f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| for_each_fixed64(body, at, &mut f))
    }

    /// Runs of 4-byte little-endian floats (float_list).
    pub fn float_runs(&self, mut f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| for_each_fixed32(body, at, &mut f))
    }

    /// Runs of 8-byte little-endian doubles (double_list).
    pub fn double_runs(&self, mut f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| for_each_fixed64(body, at, &mut f))
    }

    /// Each int64 value (int64_list).
    pub fn int64_values(&self, mut f: impl FnMut(i64)) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| for_each_varint(body, at, |v| f(v as i64)))
    }

    /// Each byte string (bytes_list).
    pub fn bytes_values(&self, mut f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| {
            for_each_bytes(body, at, |v, _| {
                f(v);
                Ok(())
            })
        })
    }

    /// The first value of a bytes_list (`None` when the list is empty).
    pub fn first_bytes(&self) -> Result<Option<&'a [u8]>, DecodeError> {
        let mut first = None;
        self.bytes_values(|v| {
            first.get_or_insert(v);
        })?;
        Ok(first)
    }

    /// Each inner list of a `*_lists` variant, as a list message and its offset.
    pub fn inner_lists(
        &self,
        mut f: impl FnMut(&'a [u8], usize) -> Result<(), DecodeError>,
    ) -> Result<(), DecodeError> {
        self.for_each_body(|body, at| for_each_bytes(body, at, &mut f))
    }

    /// The value of `int64_value`.
    pub fn int64_value(&self) -> i64 {
        self.scalar as i64
    }

    /// The value of `float_value`.
    pub fn float_value(&self) -> f32 {
        f32::from_bits(self.scalar as u32)
    }

    /// The value of `double_value`.
    pub fn double_value(&self) -> f64 {
        f64::from_bits(self.scalar)
    }

    /// The value of `bytes_value`.
    pub fn bytes_value(&self) -> &'a [u8] {
        self.scalar_bytes
    }

    /// All fids as u64 (v1 left as is). Allocates; for tests and tools.
    pub fn fids(&self) -> Result<Vec<u64>, DecodeError> {
        let mut out = Vec::new();
        self.fid_runs(|run| out.extend(run.chunks_exact(8).map(le_u64)))?;
        Ok(out)
    }

    /// All floats of a float_list. Allocates; for tests and tools.
    pub fn floats(&self) -> Result<Vec<f32>, DecodeError> {
        let mut out = Vec::new();
        self.float_runs(|run| out.extend(run.chunks_exact(4).map(le_f32)))?;
        Ok(out)
    }
}

/// Reads a little-endian u64 from an 8-byte chunk.
#[inline]
pub fn le_u64(c: &[u8]) -> u64 {
    u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]])
}

/// Reads a little-endian f32 from a 4-byte chunk.
#[inline]
pub fn le_f32(c: &[u8]) -> f32 {
    f32::from_le_bytes([c[0], c[1], c[2], c[3]])
}

/// Reads a little-endian f64 from an 8-byte chunk.
#[inline]
pub fn le_f64(c: &[u8]) -> f64 {
    f64::from_bits(le_u64(c))
}
