//! One Criteo TSV line (seed 004; TorchRec torchrec/datasets/criteo.py:226-236):
//! 40 tab-separated fields, a decimal label, 13 decimal integers and 26
//! hexadecimal categorical values; an empty field is 0.

use std::ops::Range;

use crate::text::error::TextErrorKind;

pub const INT_FEATURES: usize = 13;
pub const CAT_FEATURES: usize = 26;
pub const FIELDS: usize = 1 + INT_FEATURES + CAT_FEATURES;

/// A line's numbers before any preprocessing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawRow {
    pub label: i64,
    pub dense: [i64; INT_FEATURES],
    pub cats: [u64; CAT_FEATURES],
}

impl Default for RawRow {
    fn default() -> Self {
        Self { label: 0, dense: [0; INT_FEATURES], cats: [0; CAT_FEATURES] }
    }
}

/// A failure: the 0-based byte range of the offending field and what is wrong.
pub type Bad = (Range<usize>, TextErrorKind);

/// Parses `line` into `row`; on error `row` is partly written.
pub fn parse(line: &[u8], row: &mut RawRow) -> Result<(), Bad> {
    let mut start = 0;
    for field in 0..FIELDS {
        let end = line[start..].iter().position(|&b| b == b'\t').map_or(line.len(), |i| start + i);
        if field + 1 < FIELDS && end == line.len() {
            return Err(shape(line, field + 1));
        }
        let r = start..end;
        match field {
            0 => row.label = decimal(line, r, "label")?,
            f if f <= INT_FEATURES => row.dense[f - 1] = decimal(line, r, "integer feature")?,
            f => row.cats[f - 1 - INT_FEATURES] = hex(line, r)?,
        }
        start = end + 1;
    }
    if start <= line.len() {
        let fields = FIELDS + 1 + line[start..].iter().filter(|&&b| b == b'\t').count();
        return Err(shape(line, fields));
    }
    Ok(())
}

fn shape(line: &[u8], found: usize) -> Bad {
    let m = format!(
        "found {found} tab-separated fields, a Criteo line has {FIELDS} (label, {INT_FEATURES} integer, \
         {CAT_FEATURES} categorical)"
    );
    (0..line.len(), TextErrorKind::Shape(m))
}

/// A decimal i64 (optional sign); empty is 0.
fn decimal(line: &[u8], r: Range<usize>, what: &str) -> Result<i64, Bad> {
    let s = &line[r.clone()];
    if s.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        b'+' => (false, &s[1..]),
        _ => (false, s),
    };
    let mut x: i64 = 0;
    let bad = || (r.clone(), TextErrorKind::Invalid(format!("{what} is not a decimal integer")));
    if digits.is_empty() {
        return Err(bad());
    }
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return Err(bad());
        }
        x = x.checked_mul(10).and_then(|x| x.checked_sub(i64::from(d))).ok_or_else(bad)?;
    }
    if neg { Ok(x) } else { x.checked_neg().ok_or_else(bad) }
}

/// A hexadecimal u64 of at most 16 digits, either case; empty is 0.
fn hex(line: &[u8], r: Range<usize>) -> Result<u64, Bad> {
    let s = &line[r.clone()];
    if s.len() > 16 {
        return Err((r, TextErrorKind::Invalid("categorical value has more than 16 hex digits".into())));
    }
    let mut x = 0u64;
    for &b in s {
        let d = match b {
            b'0'..=b'9' => b - b'0',
            b'a'..=b'f' => b - b'a' + 10,
            b'A'..=b'F' => b - b'A' + 10,
            _ => return Err((r, TextErrorKind::Invalid("categorical value is not hexadecimal".into()))),
        };
        x = x << 4 | u64::from(d);
    }
    Ok(x)
}

/// DLRM's dense transform, `ln(x + 3)` as f32 (seed 004, step 2), computed
/// in f64 and rounded once. Criteo holds values with `x + 3 <= 0`, where the
/// logarithm is -inf or NaN; fex clamps x to -2 from below first, so every
/// `x <= -2` gives `ln 1 = 0` and the transform stays finite and monotone.
/// (TorchRec instead shifts by the minimum of the whole file,
/// criteo.py:261-262, which makes a row's value depend on other rows.)
#[inline]
pub fn dense_ln(x: i64) -> f32 {
    ((x.max(-2) as f64) + 3.0).ln() as f32
}
