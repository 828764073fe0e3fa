//! Multi-hot expansion of a Criteo batch (seed 004, "mulit_hot"): key i with
//! `num_embeddings[i] >= min_table_size` has each id x replaced by `size`
//! ids, x itself then entries 1.. of row x of the table's fixed weight
//! matrix (seeded with i); other keys pass through. Offsets then grow by
//! `size` in expanded keys and by 1 elsewhere. The matrix entries are the
//! library's `multi_hot` operator's (`fex::ops::multihot_weight`), so this
//! and the model's operator agree.

use crate::columns::{KeyedJagged, Values};
use crate::ops::multihot_weight;

/// Why a batch cannot be expanded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MultiHotError {
    #[error("{found} num_embeddings for {keys} keys")]
    Tables { found: usize, keys: usize },
    #[error("multi_hot_size must be at least 1")]
    Size,
    #[error("id {id} of key {key} is outside its table (num_embeddings {n})")]
    OutOfRange { key: String, id: i64, n: u64 },
    #[error("the KeyedJaggedTensor's values must be i64 ids")]
    NotIds,
}

/// The expanded copy of `k` (values i64, offsets from 0).
pub fn multi_hot(
    k: &KeyedJagged,
    num_embeddings: &[u64],
    min_table_size: u64,
    size: usize,
) -> Result<KeyedJagged, MultiHotError> {
    if num_embeddings.len() != k.keys.len() {
        return Err(MultiHotError::Tables { found: num_embeddings.len(), keys: k.keys.len() });
    }
    if size == 0 {
        return Err(MultiHotError::Size);
    }
    let Values::I64(ids) = &k.values else { return Err(MultiHotError::NotIds) };
    let mut out = KeyedJagged { keys: k.keys.clone(), rows: k.rows, offsets: vec![0], ..KeyedJagged::default() };
    let mut values = Vec::with_capacity(ids.len());
    for (key, &n) in num_embeddings.iter().enumerate() {
        let per_id = if n >= min_table_size { size } else { 1 };
        for slot in key * k.rows..(key + 1) * k.rows {
            let (a, b) = (k.offsets[slot] as usize, k.offsets[slot + 1] as usize);
            for &x in &ids[a..b] {
                if x < 0 || x as u64 >= n {
                    return Err(MultiHotError::OutOfRange { key: k.keys[key].clone(), id: x, n });
                }
                values.push(x);
                values.extend((1..per_id as u64).map(|j| multihot_weight(key as u64, x as u64, j, n) as i64));
            }
            out.lengths.push(((b - a) * per_id) as i32);
            out.offsets.push(values.len() as i64);
        }
    }
    out.values = Values::I64(values);
    Ok(out)
}
