//! `bool_mask`: FG's bool_mask_feature, `tf.boolean_mask` per row. The
//! values (a string's parts between `separator`s, or ragged ids) are kept
//! where the mask at the same place is true; the mask is a string's parts
//! (`true`, `True`, `TRUE` or `1` are true, anything else false) or ids
//! (non-zero is true). fex's rules where FG says nothing: a value past the
//! end of the mask is dropped, mask entries past the values are ignored.
//! String values are hashed into `buckets` as `hash` hashes a string; ids
//! are kept, or hashed into `buckets` when it is given.

use super::hash::{hash_bytes, hash_u64};
use super::ids::{for_each_part, is_strings, row_ids, string_at};
use crate::columns::Column;
use crate::error::ExtractError;

/// Whether a mask part is true.
fn truthy(part: &[u8]) -> bool {
    matches!(part, b"true" | b"True" | b"TRUE" | b"1")
}

/// The mask of row `r`, into `bits` (cleared first).
fn mask_of(mask: &Column, r: usize, separator: &[u8], bits: &mut Vec<bool>) {
    bits.clear();
    if is_strings(mask) {
        for_each_part(string_at(mask, r), separator, |p| bits.push(truthy(p)));
    } else {
        bits.extend(row_ids(mask, r).iter().map(|&x| x != 0));
    }
}

/// Ragged ids: each row's values where its mask is true, in order.
pub(super) fn apply(
    values: &Column,
    mask: &Column,
    out: &mut Column,
    rows: usize,
    (separator, buckets): (&[u8], Option<u64>),
) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    super::rows::with_scratch(|bits: &mut Vec<bool>| {
        for r in 0..rows {
            mask_of(mask, r, separator, bits);
            let mut at = 0;
            let mut keep = || {
                at += 1;
                bits.get(at - 1).copied().unwrap_or(false)
            };
            if is_strings(values) {
                let buckets = buckets.unwrap_or(u64::MAX);
                for_each_part(string_at(values, r), separator, |p| {
                    if keep() {
                        o.values.push_u64(hash_bytes(p) % buckets);
                    }
                });
            } else {
                for &x in row_ids(values, r) {
                    if keep() {
                        o.values.push_u64(buckets.map_or(x, |b| hash_u64(x) % b));
                    }
                }
            }
            o.splits.push(o.values.len())?;
        }
        Ok(())
    })
}
