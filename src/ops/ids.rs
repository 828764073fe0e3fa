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

/// The values of row `r` of an input as ids: ids as they are, a string as its hash.
fn row_ids(t: &Tensor, r: usize, out: &mut Vec<u64>) {
    out.clear();
    if is_strings(t) {
        let s = string_at(t, r);
        if !s.is_empty() {
            out.push(hash_bytes(s));
        }
    } else {
        out.extend(row_range(t, r).map(|i| t.u64_at(i)));
    }
}

/// Every combination of the inputs' values in a row, in row-major order of the
/// inputs, hashed as a tuple; then `mod buckets` and re-slotted if asked.
pub(super) fn cross(
    inputs: super::Inputs<'_>,
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
    (buckets, slot, max_per_row): (Option<u64>, Option<u64>, usize),
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    let mut lists: Vec<Vec<u64>> = vec![Vec::new(); inputs.len()];
    let mut tuple: Vec<u8> = vec![0; 8 * inputs.len()];
    push_split(out, splits, 0)?;
    for r in 0..rows {
        for (list, t) in lists.iter_mut().zip(inputs.iter()) {
            row_ids(t, r, list);
        }
        let combos = lists.iter().try_fold(1usize, |acc, l| acc.checked_mul(l.len())).unwrap_or(usize::MAX);
        if combos > max_per_row {
            let names: Vec<&str> = inputs.iter().map(|t| t.name.as_str()).collect();
            let message =
                format!("row {r} has {combos} combinations of {}, the limit is {max_per_row}", names.join(" x "));
            return Err(ExtractError::Operator { name: out.name.clone(), message });
        }
        budget.charge(combos * 8)?;
        for k in 0..combos {
            let mut rest = k;
            for (slot_i, list) in lists.iter().enumerate().rev() {
                tuple[slot_i * 8..slot_i * 8 + 8].copy_from_slice(&list[rest % list.len()].to_le_bytes());
                rest /= list.len();
            }
            // One-shot XXH64 of the concatenated ids: equal to `hash_tuple`.
            let mut id = hash_bytes(&tuple);
            if let Some(b) = buckets {
                id %= b;
            }
            if let Some(s) = slot {
                id = crate::fid::reslot(s, id);
            }
            out.values.extend_from_slice(&id.to_le_bytes());
        }
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}
