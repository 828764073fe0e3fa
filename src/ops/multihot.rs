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
use super::ids::row_range;
use crate::extract::{ExtractError, push_split};
use crate::proto::fex_v1::{DataType, Tensor};

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
    out: &mut Tensor,
    rows: usize,
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    if out.keys != keys {
        out.keys.clear();
        out.keys.extend(keys.iter().cloned());
    }
    push_split(out, DataType::I64, 0)?;
    for (table, (t, &n)) in inputs.iter().zip(num_embeddings).enumerate() {
        let expanded = n >= min_table_size;
        for r in 0..rows {
            let range = row_range(t, r);
            let per_id = if expanded { size } else { 1 };
            budget.charge(range.len() * per_id * 8)?;
            for i in range.clone() {
                let x = t.u64_at(i);
                if x >= n {
                    let message = format!("id {x} of row {r} is outside table {table} (num_embeddings {n})");
                    return Err(ExtractError::Operator { name: t.name.clone(), message });
                }
                out.values.extend_from_slice(&x.to_le_bytes());
                for j in 1..per_id as u64 {
                    out.values.extend_from_slice(&weight(table as u64, x, j, n).to_le_bytes());
                }
            }
            let len = range.len() * per_id;
            let len32 = i32::try_from(len).map_err(|_| ExtractError::SplitsOverflow { found: len })?;
            out.lengths.extend_from_slice(&len32.to_le_bytes());
            push_split(out, DataType::I64, out.values.len() / 8)?;
        }
    }
    Ok(())
}
