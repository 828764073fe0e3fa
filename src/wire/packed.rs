//! Repeated scalars of a list message (field 1 of FidList, FloatList...), in
//! packed or unpacked form, possibly split over several runs. Fixed-width values
//! are handed out as little-endian byte runs so callers can copy them whole.

use super::{DecodeError, DecodeErrorKind, Reader, WireType};

/// Field number of `value` / `list` in every Monolith list message.
const VALUE: u32 = 1;

/// Calls `f` with each run of 8-byte little-endian values of field 1.
/// A packed run arrives whole; an unpacked value arrives as one 8-byte run.
#[inline]
pub fn for_each_fixed64<'a>(list: &'a [u8], base: usize, f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
    for_each_fixed::<8>(list, base, VALUE, WireType::Fixed64, "fixed64 or packed", f)
}

/// Calls `f` with each run of 4-byte little-endian values of field 1.
#[inline]
pub fn for_each_fixed32<'a>(list: &'a [u8], base: usize, f: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
    for_each_fixed::<4>(list, base, VALUE, WireType::Fixed32, "fixed32 or packed", f)
}

#[inline]
fn for_each_fixed<'a, const N: usize>(
    list: &'a [u8],
    base: usize,
    number: u32,
    single: WireType,
    expected: &'static str,
    mut f: impl FnMut(&'a [u8]),
) -> Result<(), DecodeError> {
    let mut r = Reader::new(list, base);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        if field != number {
            r.skip(field, wire)?;
        } else if wire == WireType::Len {
            let (run, at) = r.len_delimited()?;
            if run.len() % N != 0 {
                return Err(DecodeError::new(DecodeErrorKind::PackedLength { len: run.len(), element: N }, at));
            }
            f(run);
        } else if wire == single {
            let (run, _) = take_fixed::<N>(&mut r)?;
            f(run);
        } else {
            return Err(r.wrong_wire(field, wire, expected));
        }
    }
    Ok(())
}

/// Runs of 8-byte values of field `number` of any message (packed or not).
pub fn for_each_fixed64_field<'a>(
    msg: &'a [u8],
    base: usize,
    number: u32,
    f: impl FnMut(&'a [u8]),
) -> Result<(), DecodeError> {
    for_each_fixed::<8>(msg, base, number, WireType::Fixed64, "fixed64 or packed", f)
}

/// Runs of 4-byte values of field `number` of any message (packed or not).
pub fn for_each_fixed32_field<'a>(
    msg: &'a [u8],
    base: usize,
    number: u32,
    f: impl FnMut(&'a [u8]),
) -> Result<(), DecodeError> {
    for_each_fixed::<4>(msg, base, number, WireType::Fixed32, "fixed32 or packed", f)
}

#[inline]
fn take_fixed<'a, const N: usize>(r: &mut Reader<'a>) -> Result<(&'a [u8], usize), DecodeError> {
    let at = r.offset();
    let start = at - r.base;
    if N == 8 {
        r.fixed64()?;
    } else {
        r.fixed32()?;
    }
    Ok((&r.buf[start..start + N], at))
}

/// Calls `f` with each varint value of field 1, packed or not.
#[inline]
pub fn for_each_varint(list: &[u8], base: usize, mut f: impl FnMut(u64)) -> Result<(), DecodeError> {
    let mut r = Reader::new(list, base);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        if field != VALUE {
            r.skip(field, wire)?;
        } else if wire == WireType::Len {
            let mut run = r.sub_reader()?;
            while !run.is_empty() {
                f(run.varint()?);
            }
        } else if wire == WireType::Varint {
            f(r.varint()?);
        } else {
            return Err(r.wrong_wire(field, wire, "varint or packed"));
        }
    }
    Ok(())
}

/// Calls `f` with each length-delimited value of field 1 and its offset
/// (BytesList values, or the inner lists of a `*_lists` message).
#[inline]
pub fn for_each_bytes<'a>(
    list: &'a [u8],
    base: usize,
    mut f: impl FnMut(&'a [u8], usize) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let mut r = Reader::new(list, base);
    while !r.is_empty() {
        let (field, wire) = r.key()?;
        if field != VALUE {
            r.skip(field, wire)?;
        } else if wire == WireType::Len {
            let (body, at) = r.len_delimited()?;
            f(body, at)?;
        } else {
            return Err(r.wrong_wire(field, wire, "length-delimited"));
        }
    }
    Ok(())
}
