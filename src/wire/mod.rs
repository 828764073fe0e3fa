//! Protobuf wire-format primitives over `&[u8]`: varints, fixed-width values,
//! length-delimited bodies and skipping of every wire type. Every length is
//! checked against what remains before the cursor moves, so nothing here can
//! read out of bounds, panic, or allocate.

mod error;
mod packed;

pub use error::{DecodeError, DecodeErrorKind, Within};
pub use packed::{
    for_each_bytes, for_each_fixed32, for_each_fixed32_field, for_each_fixed64, for_each_fixed64_field, for_each_varint,
};

/// Deepest group nesting `skip` follows before giving up.
pub const MAX_DEPTH: usize = 64;

/// The six wire types protobuf defines (3 and 4 are the deprecated groups).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WireType {
    Varint = 0,
    Fixed64 = 1,
    Len = 2,
    StartGroup = 3,
    EndGroup = 4,
    Fixed32 = 5,
}

/// Wire types by their number (0..=5), for the one-byte key fast path.
const WIRE_TYPES: [WireType; 6] =
    [WireType::Varint, WireType::Fixed64, WireType::Len, WireType::StartGroup, WireType::EndGroup, WireType::Fixed32];

/// A cursor over one message body. `base` is the body's offset in the
/// outermost buffer, so errors report absolute positions.
#[derive(Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8], base: usize) -> Self {
        Self { buf, pos: 0, base }
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    /// Absolute offset of the next byte.
    #[inline]
    pub fn offset(&self) -> usize {
        self.base + self.pos
    }

    #[inline]
    fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[cold]
    fn error(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(kind, self.offset())
    }

    /// Reads a base-128 varint. One- and two-byte varints (values below 16384,
    /// such as the lengths of most lists and Features) take the inline path.
    #[inline]
    pub fn varint(&mut self) -> Result<u64, DecodeError> {
        match self.buf.get(self.pos..) {
            Some(&[b0, ..]) if b0 < 0x80 => {
                self.pos += 1;
                Ok(u64::from(b0))
            }
            Some(&[b0, b1, ..]) if b1 < 0x80 => {
                self.pos += 2;
                Ok(u64::from(b0 & 0x7f) | (u64::from(b1) << 7))
            }
            _ => self.varint_slow(),
        }
    }

    /// Any varint of at most 10 bytes. Like protobuf's C++ parser, which wrote
    /// the samples fex reads, the tenth byte's bits above bit 63 are dropped,
    /// not refused (protocolbuffers/protobuf, src/google/protobuf/
    /// parse_context.cc, `VarintParseSlow64`: `res += (byte - 1) << (7 * i)`
    /// for i up to 9, wrapping in a uint64_t; only a continuation bit on the
    /// tenth byte fails). prost and Go refuse a tenth byte above 1 instead.
    #[cold]
    fn varint_slow(&mut self) -> Result<u64, DecodeError> {
        let mut value = 0u64;
        for i in 0..10 {
            let Some(&b) = self.buf.get(self.pos + i) else {
                return Err(self.error(DecodeErrorKind::TruncatedVarint));
            };
            // `<<` drops what overflows: of the tenth byte only bit 63 stays.
            value |= u64::from(b & 0x7f) << (7 * i);
            if b < 0x80 {
                self.pos += i + 1;
                return Ok(value);
            }
        }
        Err(self.error(DecodeErrorKind::VarintTooLong))
    }

    /// Reads a field key: field number and wire type. A one-byte key of a
    /// valid wire type (fields 1..=15, nearly every key here) is decoded inline.
    #[inline]
    pub fn key(&mut self) -> Result<(u32, WireType), DecodeError> {
        if let Some(&b) = self.buf.get(self.pos) {
            // b >= 8: field 0 is invalid; b < 0x80: one byte; wire types 6, 7 are invalid.
            if (8..0x80).contains(&b) && b & 7 < 6 {
                self.pos += 1;
                return Ok((u32::from(b >> 3), WIRE_TYPES[usize::from(b & 7)]));
            }
        }
        self.key_slow()
    }

    /// Any key, with every check: multi-byte keys and all the error cases.
    fn key_slow(&mut self) -> Result<(u32, WireType), DecodeError> {
        let start = self.pos;
        let key = self.varint()?;
        let wire = match key & 7 {
            0 => WireType::Varint,
            1 => WireType::Fixed64,
            2 => WireType::Len,
            3 => WireType::StartGroup,
            4 => WireType::EndGroup,
            5 => WireType::Fixed32,
            w => return Err(self.error_at(start, DecodeErrorKind::InvalidWireType(w as u8))),
        };
        let field = key >> 3;
        if field == 0 {
            return Err(self.error_at(start, DecodeErrorKind::ZeroTag));
        }
        if field > 0x1fff_ffff {
            return Err(self.error_at(start, DecodeErrorKind::FieldNumberTooLarge(field)));
        }
        Ok((field as u32, wire))
    }

    #[cold]
    fn error_at(&self, pos: usize, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(kind, self.base + pos)
    }

    /// Takes the next `n` bytes, or fails without moving.
    #[inline]
    fn take(&mut self, n: u64) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() as u64 {
            return Err(self.error(DecodeErrorKind::Truncated { needed: n, remaining: self.remaining() }));
        }
        let n = n as usize;
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    #[inline]
    pub fn fixed32(&mut self) -> Result<u32, DecodeError> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    #[inline]
    pub fn fixed64(&mut self) -> Result<u64, DecodeError> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
    }

    /// Reads a length-delimited body; returns it with its absolute offset.
    #[inline]
    pub fn len_delimited(&mut self) -> Result<(&'a [u8], usize), DecodeError> {
        let len = self.varint()?;
        let at = self.offset();
        Ok((self.take(len)?, at))
    }

    /// The next field, when its key is the one byte `key` and its length one
    /// or two bytes that fit: its body and absolute offset, and the reader
    /// moves past it. Otherwise None, and nothing is consumed (the caller
    /// reads the field the general way, with every check).
    #[inline]
    pub fn short_field(&mut self, key: u8) -> Option<(&'a [u8], usize)> {
        let rest = self.buf.get(self.pos..)?;
        let (len, head) = match *rest {
            [k, l0, ..] if k == key && l0 < 0x80 => (usize::from(l0), 2),
            [k, l0, l1, ..] if k == key && l1 < 0x80 => (usize::from(l0 & 0x7f) | usize::from(l1) << 7, 3),
            _ => return None,
        };
        let body = rest.get(head..head + len)?;
        let at = self.base + self.pos + head;
        self.pos += head + len;
        Some((body, at))
    }

    /// Reads to the end of the body and returns the last value of the
    /// length-delimited `field` (empty when absent): how a list's name is found
    /// without decoding its features. One-byte keys of varint fields, and of
    /// length-delimited fields with a length of one or two bytes (every feature
    /// of a list), are stepped over in the tight loop; anything else goes
    /// through `key` and `skip`, with all their checks and errors.
    #[inline]
    pub fn last_len_field(&mut self, field: u32) -> Result<&'a [u8], DecodeError> {
        let mut found: &'a [u8] = &[];
        while let Some(&b) = self.buf.get(self.pos) {
            if b & 7 == 0 && (8..0x80).contains(&b) {
                self.pos += 1;
                self.varint()?;
                continue;
            }
            if b & 7 == 2 && (8..0x80).contains(&b) {
                let after = self.pos + 1;
                let short = match self.buf[after..] {
                    [l0, ..] if l0 < 0x80 => Some((usize::from(l0), after + 1)),
                    [l0, l1, ..] if l1 < 0x80 => Some((usize::from(l0 & 0x7f) | (usize::from(l1) << 7), after + 2)),
                    _ => None,
                };
                if let Some((len, start)) = short.filter(|&(len, start)| len <= self.buf.len() - start) {
                    if u32::from(b >> 3) == field {
                        found = &self.buf[start..start + len];
                    }
                    self.pos = start + len;
                    continue;
                }
            }
            let (f, wire) = self.key()?;
            if wire == WireType::Len {
                let body = self.len_delimited()?.0;
                if f == field {
                    found = body;
                }
            } else {
                self.skip(f, wire)?;
            }
        }
        Ok(found)
    }

    /// Reads a length-delimited body as a reader positioned at its start.
    #[inline]
    pub fn sub_reader(&mut self) -> Result<Reader<'a>, DecodeError> {
        let (body, at) = self.len_delimited()?;
        Ok(Reader::new(body, at))
    }

    /// Skips the value of a field whose key was just read. The common wire
    /// types are skipped inline; groups take the out-of-line path.
    #[inline]
    pub fn skip(&mut self, field: u32, wire: WireType) -> Result<(), DecodeError> {
        match wire {
            WireType::Len => self.len_delimited().map(drop),
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.take(8).map(drop),
            WireType::Fixed32 => self.take(4).map(drop),
            WireType::StartGroup | WireType::EndGroup => self.skip_at_depth(field, wire, 0),
        }
    }

    fn skip_at_depth(&mut self, field: u32, wire: WireType, depth: usize) -> Result<(), DecodeError> {
        match wire {
            WireType::Varint => self.varint().map(drop),
            WireType::Fixed64 => self.take(8).map(drop),
            WireType::Fixed32 => self.take(4).map(drop),
            WireType::Len => self.len_delimited().map(drop),
            WireType::StartGroup => self.skip_group(field, depth + 1),
            WireType::EndGroup => Err(self.error(DecodeErrorKind::UnbalancedGroup)),
        }
    }

    #[cold]
    fn skip_group(&mut self, field: u32, depth: usize) -> Result<(), DecodeError> {
        if depth > MAX_DEPTH {
            return Err(self.error(DecodeErrorKind::TooDeep));
        }
        loop {
            if self.is_empty() {
                return Err(self.error(DecodeErrorKind::UnbalancedGroup));
            }
            let (inner, wire) = self.key()?;
            if wire == WireType::EndGroup {
                return if inner == field { Ok(()) } else { Err(self.error(DecodeErrorKind::UnbalancedGroup)) };
            }
            self.skip_at_depth(inner, wire, depth)?;
        }
    }

    /// Fails with a wrong-wire-type error for `field`, at the key just read.
    #[cold]
    pub fn wrong_wire(&self, field: u32, found: WireType, expected: &'static str) -> DecodeError {
        self.error(DecodeErrorKind::WrongWireType { field, found: found as u8, expected })
    }
}

/// Decodes a zigzag-encoded signed integer.
#[inline]
pub fn zigzag64(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Decodes a zigzag-encoded 32-bit signed integer carried in a varint.
#[inline]
pub fn zigzag32(v: u64) -> i32 {
    let v = v as u32;
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// `a == b` for short byte strings (feature names, terms), compared inline
/// (two overlapping words of 4 or 8 bytes each, up to 16 bytes) instead of
/// in a call to `memcmp`.
#[inline]
pub(crate) fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let n = a.len();
    if let (Some(ah), Some(at), Some(bh), Some(bt)) =
        (a.first_chunk::<8>(), a.last_chunk::<8>(), b.first_chunk::<8>(), b.last_chunk::<8>())
    {
        return if n <= 16 { ah == bh && at == bt } else { a == b };
    }
    if let (Some(ah), Some(at), Some(bh), Some(bt)) =
        (a.first_chunk::<4>(), a.last_chunk::<4>(), b.first_chunk::<4>(), b.last_chunk::<4>())
    {
        return ah == bh && at == bt;
    }
    a.iter().zip(b).all(|(x, y)| x == y)
}

/// A length-delimited field (key, length, body) as encoders write it: the
/// small messages offline edits build (label and LineId overrides, pooled
/// items) are laid out exactly as a sample's own bytes would be.
/// Bytes of a length-delimited field `field` with a body of `len` bytes.
pub(crate) fn len_field_len(field: u32, len: usize) -> usize {
    prost::encoding::key_len(field) + prost::encoding::encoded_len_varint(len as u64) + len
}

/// Appends the key and length of a length-delimited field `field` whose
/// body of `len` bytes the caller appends next.
#[inline]
pub(crate) fn push_len_header(out: &mut Vec<u8>, field: u32, len: usize) {
    // Fields below 16 and bodies below 128 bytes (names, item Features,
    // labels) take a byte each: two pushes, not two varint loops.
    if field < 16 && len < 0x80 {
        out.extend_from_slice(&[(field << 3 | 2) as u8, len as u8]);
        return;
    }
    prost::encoding::encode_key(field, prost::encoding::WireType::LengthDelimited, out);
    prost::encoding::encode_varint(len as u64, out);
}

pub(crate) fn len_field(field: u32, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(len_field_len(field, body.len()));
    push_len_header(&mut out, field, body.len());
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests;
