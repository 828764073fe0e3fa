//! Id operators over ragged ids (or strings, one value per row): per-value
//! maps (v1→v2, slot, reslot, filter), hashing into buckets, and crosses.

use super::Budget;
use super::hash::{hash_bytes, hash_u64};
use super::rows::row_of;
use crate::extract::{ExtractError, push_split};
use crate::proto::fex_v1::{DataType, Layout, Tensor};

/// The values of row `r` of a ragged id tensor, as an index range.
#[inline]
pub(super) fn row_range(t: &Tensor, r: usize) -> std::ops::Range<usize> {
    let r = row_of(t, r);
    t.split(r)..t.split(r + 1)
}

/// The 8-byte values of row `r` of a ragged id tensor. Splits and values come
/// from the library's own writers and agree; if they did not, the row reads
/// as empty rather than panicking.
#[inline]
pub(super) fn row_id_bytes(t: &Tensor, r: usize) -> &[u8] {
    let range = row_range(t, r);
    t.values.get(range.start * 8..range.end * 8).unwrap_or(&[])
}

pub(super) fn is_strings(t: &Tensor) -> bool {
    t.layout == Layout::Strings as i32
}

/// Applies `f` to every id; `None` drops the value.
pub(super) fn map(
    input: &Tensor,
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
    mut f: impl FnMut(u64) -> Option<u64>,
) -> Result<(), ExtractError> {
    push_split(out, splits, 0)?;
    for r in 0..rows {
        for i in row_range(input, r) {
            if let Some(v) = f(input.u64_at(i)) {
                out.values.extend_from_slice(&v.to_le_bytes());
            }
        }
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}

/// Hashes ids (or whole strings) into `buckets`.
pub(super) fn hash(
    input: &Tensor,
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
    buckets: u64,
) -> Result<(), ExtractError> {
    if !is_strings(input) {
        return map(input, out, splits, rows, |x| Some(hash_u64(x) % buckets));
    }
    push_split(out, splits, 0)?;
    for r in 0..rows {
        let bytes = string_at(input, r);
        if !bytes.is_empty() {
            out.values.extend_from_slice(&(hash_bytes(bytes) % buckets).to_le_bytes());
        }
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}

/// Row `r` of a strings tensor.
pub(super) fn string_at(t: &Tensor, r: usize) -> &[u8] {
    let r = row_of(t, r);
    t.values.get(t.split(r)..t.split(r + 1)).unwrap_or(&[])
}

/// One input's values in the current row: its ids' bytes, or a string's hash
/// (at most one value).
#[derive(Clone, Copy, Default)]
struct RowIds<'a> {
    ids: &'a [u8],
    hash: Option<u64>,
    len: usize,
}

impl<'a> RowIds<'a> {
    fn of(t: &'a Tensor, r: usize) -> Self {
        if is_strings(t) {
            let s = string_at(t, r);
            let hash = (!s.is_empty()).then(|| hash_bytes(s));
            RowIds { ids: &[], hash, len: usize::from(hash.is_some()) }
        } else {
            let ids = row_id_bytes(t, r);
            RowIds { ids, hash: None, len: ids.len() / 8 }
        }
    }

    /// Value `k` as the 8 bytes it contributes to a tuple.
    fn bytes(&self, k: usize) -> [u8; 8] {
        match self.hash {
            Some(h) => h.to_le_bytes(),
            None => self.ids[k * 8..k * 8 + 8].try_into().unwrap_or_default(),
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
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
    (buckets, slot, max_per_row): (Option<u64>, Option<u64>, usize),
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    let n = inputs.len();
    if n > super::MAX_INPUTS {
        let message = format!("{n} inputs, the most an operator takes is {}", super::MAX_INPUTS);
        return Err(ExtractError::Operator { name: out.name.clone(), message });
    }
    let mut lists = [RowIds::default(); super::MAX_INPUTS];
    let mut at = [0usize; super::MAX_INPUTS];
    let mut tuple = [0u8; 8 * super::MAX_INPUTS];
    let (lists, at, tuple) = (&mut lists[..n], &mut at[..n], &mut tuple[..8 * n]);
    push_split(out, splits, 0)?;
    for r in 0..rows {
        for (list, t) in lists.iter_mut().zip(inputs.iter()) {
            *list = RowIds::of(t, r);
        }
        let combos = lists.iter().try_fold(1usize, |acc, l| acc.checked_mul(l.len)).unwrap_or(usize::MAX);
        if combos > max_per_row {
            let names: Vec<&str> = inputs.iter().map(|t| t.name.as_str()).collect();
            let message =
                format!("row {r} has {combos} combinations of {}, the limit is {max_per_row}", names.join(" x "));
            return Err(ExtractError::Operator { name: out.name.clone(), message });
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
            out.values.extend_from_slice(&id.to_le_bytes());
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
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}
