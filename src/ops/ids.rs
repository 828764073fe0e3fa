//! Id operators over ragged ids (or strings, one value per row): per-value
//! maps (v1→v2, slot, reslot, filter) and crosses; `hash` is in
//! `id_feature`.

use super::Budget;
use super::hash::hash_bytes;
use super::rows::row_of;
use crate::columns::{Column, Ragged};
use crate::error::{ErrorKind, ExtractError};

/// The ids of row `r` of a ragged id column (the shared row for a column
/// returned once). Splits and values come from the library's own writers and
/// agree; if they did not, the row reads as empty rather than panicking.
#[inline]
pub(super) fn row_ids(c: &Column, r: usize) -> &[u64] {
    c.row_ids(row_of(c, r))
}

/// Row `r` of a ragged column as a range of positions.
#[inline]
pub(super) fn row_range(c: &Column, r: usize) -> std::ops::Range<usize> {
    c.row_range(row_of(c, r))
}

/// Row `r` of a strings column.
#[inline]
pub(super) fn string_at(c: &Column, r: usize) -> &[u8] {
    c.string(row_of(c, r))
}

pub(super) fn is_strings(c: &Column) -> bool {
    matches!(c, Column::Strings(_))
}

/// Applies `f` to every id; `None` drops the value.
pub(super) fn map(
    input: &Column,
    out: &mut Column,
    rows: usize,
    mut f: impl FnMut(u64) -> Option<u64>,
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        for &x in row_ids(input, r) {
            if let Some(v) = f(x) {
                o.values.push_u64(v);
            }
        }
        o.splits.push(o.values.len())?;
    }
    Ok(())
}

/// An id sequence (`[rows, -1, width]`) mapped value by value: the same
/// positions, the same width, each id replaced by `f(id)`.
pub(super) fn map_positions(input: &Column, out: &mut Column, f: impl Fn(u64) -> u64) -> Result<(), ExtractError> {
    let (Column::Ragged(i), Column::Ragged(o)) = (input, out) else {
        return Ok(());
    };
    o.width = i.width;
    let ids = i.values.ids(0..i.values.len());
    o.values.reserve(ids.len());
    ids.iter().for_each(|&x| o.values.push_u64(f(x)));
    for k in 0..i.splits.len() {
        o.splits.push(i.splits.get(k))?;
    }
    Ok(())
}

/// Whether `c` is a sequence (`[rows, -1, width]`): its values are mapped
/// position by position.
pub(super) fn is_sequence(c: &Column) -> bool {
    matches!(c, Column::Ragged(r) if r.width.is_some())
}

/// Calls `f` with each non-empty part of `s` between `sep`s (not empty).
#[inline]
pub(super) fn for_each_part(s: &[u8], sep: &[u8], mut f: impl FnMut(&[u8])) {
    let mut rest = s;
    while !rest.is_empty() {
        let at = if sep.len() == 1 {
            rest.iter().position(|&b| b == sep[0])
        } else {
            rest.windows(sep.len()).position(|w| w == sep)
        };
        let (part, next) = match at {
            Some(at) => (&rest[..at], &rest[at + sep.len()..]),
            None => (rest, &rest[rest.len()..]),
        };
        if !part.is_empty() {
            f(part);
        }
        rest = next;
    }
}

/// One input's values in the current row: its ids' bytes, or a string's hash
/// (at most one value).
#[derive(Clone, Copy, Default)]
struct RowIds<'a> {
    ids: &'a [u64],
    hash: Option<u64>,
    len: usize,
}

impl<'a> RowIds<'a> {
    fn of(c: &'a Column, r: usize) -> Self {
        if is_strings(c) {
            let s = string_at(c, r);
            let hash = (!s.is_empty()).then(|| hash_bytes(s));
            RowIds { ids: &[], hash, len: usize::from(hash.is_some()) }
        } else {
            let ids = row_ids(c, r);
            RowIds { ids, hash: None, len: ids.len() }
        }
    }

    /// Value `k` as the 8 bytes it contributes to a tuple.
    fn bytes(&self, k: usize) -> [u8; 8] {
        match self.hash {
            Some(h) => h.to_le_bytes(),
            None => self.ids.get(k).copied().unwrap_or_default().to_le_bytes(),
        }
    }
}

/// Every combination of the inputs' values in a row, in row-major order of the
/// inputs (the last varies fastest), hashed as a tuple; then `mod buckets` and
/// re-slotted if asked. The per-row state lives on the stack (at most
/// `MAX_INPUTS` inputs), so a cross allocates nothing but its output; the
/// tuple is advanced like an odometer, rewriting only the inputs that moved.
pub(super) fn cross(
    inputs: super::Inputs<'_>,
    name: &str,
    out: &mut Column,
    rows: usize,
    (buckets, slot, max_per_row): (Option<u64>, Option<u64>, usize),
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    let n = inputs.len();
    if n > super::MAX_INPUTS {
        let message = format!("{n} inputs, the most an operator takes is {}", super::MAX_INPUTS);
        return Err(ErrorKind::Operator { name: name.to_string(), message }.into());
    }
    let out: &mut Ragged = out.ragged_mut();
    let mut lists = [RowIds::default(); super::MAX_INPUTS];
    let mut at = [0usize; super::MAX_INPUTS];
    let mut tuple = [0u8; 8 * super::MAX_INPUTS];
    let (lists, at, tuple) = (&mut lists[..n], &mut at[..n], &mut tuple[..8 * n]);
    out.splits.push(0)?;
    for r in 0..rows {
        for (list, t) in lists.iter_mut().zip(inputs.iter()) {
            *list = RowIds::of(&t.column, r);
        }
        let combos = lists.iter().try_fold(1usize, |acc, l| acc.checked_mul(l.len)).unwrap_or(usize::MAX);
        if combos > max_per_row {
            let names: Vec<&str> = inputs.iter().map(|t| t.name.as_str()).collect();
            let message =
                format!("row {r} has {combos} combinations of {}, the limit is {max_per_row}", names.join(" x "));
            return Err(ErrorKind::Operator { name: name.to_string(), message }.into());
        }
        budget.charge(combos * 8)?;
        if combos > 0 {
            for (i, list) in lists.iter().enumerate() {
                at[i] = 0;
                tuple[i * 8..i * 8 + 8].copy_from_slice(&list.bytes(0));
            }
        }
        for _ in 0..combos {
            // One-shot XXH64 of the concatenated ids: equal to `hash_tuple`.
            let mut id = hash_bytes(tuple);
            if let Some(b) = buckets {
                id %= b;
            }
            if let Some(s) = slot {
                id = crate::fid::reslot(s, id);
            }
            out.values.push_u64(id);
            // Next combination: bump the last input, carrying leftwards.
            for i in (0..n).rev() {
                at[i] += 1;
                if at[i] < lists[i].len {
                    tuple[i * 8..i * 8 + 8].copy_from_slice(&lists[i].bytes(at[i]));
                    break;
                }
                at[i] = 0;
                tuple[i * 8..i * 8 + 8].copy_from_slice(&lists[i].bytes(0));
            }
        }
        out.splits.push(out.values.len())?;
    }
    Ok(())
}
