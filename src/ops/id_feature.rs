//! `hash`, FG's id_feature: each value (an id, a string, or each part of
//! a string) made an id by a [`Bucketing`] rule: hashed into `buckets`
//! (with need_prefix, the feature's name and `_` before the value) or taken
//! as it is below `num_buckets`; `key:weight` parts (weighted); and
//! value_dim, each row's first ids kept.

use super::hash::{hash_bytes, hash_joined, hash_u64};
use super::ids::{for_each_part, is_strings, map, string_at};
use crate::columns::Column;
use crate::error::ExtractError;

/// FG's id_feature `value_dim` (value_dimension: "truncates the output
/// when a feature has multiple values"): keeps the first `n` ids of each
/// row of a ragged result, and their weights, moving them down in place.
pub(super) fn keep_first(out: &mut Column, n: usize) {
    let Column::Ragged(o) = out else { return };
    let rows = o.splits.len().saturating_sub(1);
    let (mut kept, mut start) = (0usize, 0usize);
    for r in 0..rows {
        let end = o.splits.get(r + 1);
        let take = end.saturating_sub(start).min(n);
        move_down(&mut o.values, start..start + take, kept);
        if o.weighted {
            o.weights.copy_within(start..start + take, kept);
        }
        kept += take;
        // An offset no larger than the one it replaces fits its type.
        match &mut o.splits {
            crate::columns::Splits::I32(v) => v[r + 1] = kept as i32,
            crate::columns::Splits::I64(v) => v[r + 1] = kept as i64,
        }
        start = end;
    }
    o.values.truncate(kept);
    if o.weighted {
        o.weights.truncate(kept);
    }
}

/// Copies `values[range]` to start at `to` (`to <= range.start`).
fn move_down(values: &mut crate::columns::Values, range: std::ops::Range<usize>, to: usize) {
    use crate::columns::Values;
    match values {
        Values::U64(v) => v.copy_within(range, to),
        Values::I64(v) => v.copy_within(range, to),
        Values::I32(v) => v.copy_within(range, to),
        Values::F32(v) => v.copy_within(range, to),
        Values::F64(v) => v.copy_within(range, to),
    }
}

/// How `hash` makes an id of a value: FG's id_feature with
/// `hash_bucket_size` (hashed into `buckets`, with need_prefix the feature's
/// name and `_` before the value), or with `num_buckets` (the value is the
/// id, kept when it is in `0..num_buckets`).
#[derive(Debug, Clone, PartialEq)]
pub enum Bucketing {
    Hash { buckets: u64, prefix: Option<Vec<u8>> },
    Ids { num_buckets: u64 },
}

impl Bucketing {
    /// The id of a string value (or a part of one); None drops it. With
    /// `num_buckets` the string must be a whole number in decimal (Rust's
    /// i64 syntax: an optional sign, then digits).
    #[inline]
    fn of_bytes(&self, b: &[u8]) -> Option<u64> {
        match self {
            Bucketing::Hash { buckets, prefix: None } => Some(hash_bytes(b) % buckets),
            Bucketing::Hash { buckets, prefix: Some(p) } => Some(hash_joined(&[p, b]) % buckets),
            Bucketing::Ids { num_buckets } => {
                let x: i64 = std::str::from_utf8(b).ok()?.parse().ok()?;
                (0..*num_buckets as i128).contains(&(x as i128)).then_some(x as u64)
            }
        }
    }

    /// The id of an id value (`signed`: the column holds i64); None drops
    /// it. With a prefix, the id is hashed as its decimal text.
    #[inline]
    fn of_id(&self, x: u64, signed: bool) -> Option<u64> {
        match self {
            Bucketing::Hash { buckets, prefix: None } => Some(hash_u64(x) % buckets),
            Bucketing::Hash { buckets, prefix: Some(p) } => {
                let mut text = [0u8; 20];
                let n = super::lookup::decimal(x, signed, &mut text);
                Some(hash_joined(&[p, &text[text.len() - n..]]) % buckets)
            }
            Bucketing::Ids { num_buckets } => {
                let inside = if signed { (x as i64) >= 0 && x < *num_buckets } else { x < *num_buckets };
                inside.then_some(x)
            }
        }
    }

    /// `of_id` as a total map, for a sequence's positions (which cannot
    /// drop a value: the config gives sequences to `Hash` only).
    pub(super) fn hash_id(&self, x: u64, signed: bool) -> u64 {
        self.of_id(x, signed).unwrap_or_default()
    }
}

/// Whether the ids of `c` are signed (every id dtype but u64).
pub(super) fn signed(c: &Column) -> bool {
    c.values().is_some_and(|v| v.dtype() != crate::proto::fex_v1::DataType::U64)
}

/// Makes an id of each id (or whole string) by `rule`.
pub(super) fn hash(input: &Column, out: &mut Column, rows: usize, rule: &Bucketing) -> Result<(), ExtractError> {
    // Plain hashing (every model before need_prefix and num_buckets) gets
    // its own copy of the loop, with no rule to consult per value.
    if let Bucketing::Hash { buckets, prefix: None } = *rule {
        return hash_with(input, out, rows, |x| Some(hash_u64(x) % buckets), |b| Some(hash_bytes(b) % buckets));
    }
    let signed = signed(input);
    hash_with(input, out, rows, |x| rule.of_id(x, signed), |b| rule.of_bytes(b))
}

/// [`hash`] with the rule's two halves: `of_id` for ids, `of_bytes` for a
/// string (an empty one gives nothing).
fn hash_with(
    input: &Column,
    out: &mut Column,
    rows: usize,
    of_id: impl FnMut(u64) -> Option<u64>,
    of_bytes: impl Fn(&[u8]) -> Option<u64>,
) -> Result<(), ExtractError> {
    if !is_strings(input) {
        return map(input, out, rows, of_id);
    }
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        let bytes = string_at(input, r);
        if let Some(id) = (!bytes.is_empty()).then(|| of_bytes(bytes)).flatten() {
            o.values.push_u64(id);
        }
        o.splits.push(o.values.len())?;
    }
    Ok(())
}

/// Makes an id of each non-empty part of each string between `sep`s by
/// `rule`, in order (FG's multi-value id_feature: `a\x1db` gives two ids).
/// Ids are taken as `hash` takes them: the separator only splits strings.
pub(super) fn hash_parts(
    input: &Column,
    out: &mut Column,
    rows: usize,
    rule: &Bucketing,
    sep: &[u8],
) -> Result<(), ExtractError> {
    if !is_strings(input) {
        return hash(input, out, rows, rule);
    }
    if let Bucketing::Hash { buckets, prefix: None } = *rule {
        return parts_with(input, out, rows, sep, |b| Some(hash_bytes(b) % buckets));
    }
    parts_with(input, out, rows, sep, |b| rule.of_bytes(b))
}

/// [`hash_parts`] over strings, each part's id by `of_bytes`.
fn parts_with(
    input: &Column,
    out: &mut Column,
    rows: usize,
    sep: &[u8],
    of_bytes: impl Fn(&[u8]) -> Option<u64>,
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        for_each_part(string_at(input, r), sep, |part| {
            if let Some(id) = of_bytes(part) {
                o.values.push_u64(id);
            }
        });
        o.splits.push(o.values.len())?;
    }
    Ok(())
}

/// FG's weighted id_feature: each non-empty part of a string between
/// `sep`s is `key:weight`; the key (up to the part's last `:`) is made an
/// id by `rule` as a whole string is, and the weight (after it, a number as
/// Rust reads an f32) goes to the value's weight. A part without `:`, with
/// an empty key, a weight that is not a number, or a key `rule` drops is
/// skipped. Ragged ids with weights.
pub(super) fn hash_weighted(
    input: &Column,
    out: &mut Column,
    rows: usize,
    rule: &Bucketing,
    sep: &[u8],
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.weighted = true;
    o.splits.push(0)?;
    for r in 0..rows {
        for_each_part(string_at(input, r), sep, |part| {
            if let Some((id, weight)) = weighted_part(part).and_then(|(k, w)| Some((rule.of_bytes(k)?, w))) {
                o.values.push_u64(id);
                o.weights.push(weight);
            }
        });
        o.splits.push(o.values.len())?;
    }
    Ok(())
}

/// A `key:weight` part: the key up to the last `:` (not empty) and the
/// weight after it.
fn weighted_part(part: &[u8]) -> Option<(&[u8], f32)> {
    let at = part.iter().rposition(|&b| b == b':')?;
    let (key, weight) = (&part[..at], &part[at + 1..]);
    let weight = std::str::from_utf8(weight).ok()?.parse().ok()?;
    (!key.is_empty()).then_some((key, weight))
}
