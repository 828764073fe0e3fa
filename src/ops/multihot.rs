//! Multi-hot expansion, as seed 004 describes DLRM's: table i has a weight
//! matrix `[num_embeddings[i], size]` seeded with i, entries in
//! `[0, num_embeddings[i])`. An id x of a table with `num_embeddings >=
//! min_table_size` becomes row x of the matrix with column 0 replaced by x
//! itself; smaller tables pass through. The result is a KeyedJaggedTensor
//! whose offsets grow by `size` for expanded ids and by 1 elsewhere.
//!
//! The matrix is never stored: entry (x, j) is computed on demand by a
//! counter-based generator (SplitMix64 of the seed, x and j), so a 40 M-row
//! table costs nothing and every process computes the same values.

use super::Budget;
use super::ids::row_ids;
use crate::columns::Column;
use crate::error::{ErrorKind, ExtractError};

/// Entry (x, j) of table `seed`'s weight matrix, in `[0, n)`.
pub fn weight(seed: u64, x: u64, j: u64, n: u64) -> u64 {
    let mut z = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ x.wrapping_mul(0xbf58_476d_1ce4_e5b9)
        ^ j.wrapping_mul(0x94d0_49bb_1331_11eb);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    z % n
}

#[allow(clippy::too_many_arguments)]
pub(super) fn expand(
    keys: &[String],
    num_embeddings: &[u64],
    min_table_size: u64,
    size: usize,
    inputs: super::Inputs<'_>,
    out: &mut Column,
    rows: usize,
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    let o = out.keyed_jagged_mut();
    o.begin(keys, rows);
    for (table, (t, &n)) in inputs.iter().zip(num_embeddings).enumerate() {
        let expanded = n >= min_table_size;
        for r in 0..rows {
            let ids = row_ids(&t.column, r);
            let per_id = if expanded { size } else { 1 };
            budget.charge(ids.len() * per_id * 8)?;
            for &x in ids {
                if x >= n {
                    let message = format!("id {x} of row {r} is outside table {table} (num_embeddings {n})");
                    return Err(ErrorKind::Operator { name: t.name.clone(), message }.into());
                }
                o.values.push_u64(x);
                for j in 1..per_id as u64 {
                    o.values.push_u64(weight(table as u64, x, j, n));
                }
            }
            let len = ids.len() * per_id;
            let len32 = i32::try_from(len).map_err(|_| ExtractError::from(ErrorKind::SplitsOverflow { found: len }))?;
            o.lengths.push(len32);
            o.offsets.push(o.values.len() as i64);
        }
    }
    Ok(())
}
