//! Layout operators: several ragged inputs into one CSR (deepx group) or one
//! KeyedJaggedTensor (TorchRec), dense inputs concatenated, and one position of
//! a sequence as its own tensor.

use super::ids::{row_id_bytes, row_range};
use super::rows::row_of;
use crate::extract::{ExtractError, push_split};
use crate::proto::fex_v1::{DataType, Tensor};

/// Row r of the result is row r of every input, one after the other.
pub(super) fn group(
    inputs: super::Inputs<'_>,
    out: &mut Tensor,
    splits: DataType,
    rows: usize,
) -> Result<(), ExtractError> {
    push_split(out, splits, 0)?;
    for r in 0..rows {
        for t in inputs.iter() {
            out.values.extend_from_slice(row_id_bytes(t, r));
        }
        push_split(out, splits, out.values.len() / 8)?;
    }
    Ok(())
}

/// Key-major: all rows of key 0, then key 1...; `lengths[k * rows + r]`.
/// `row_splits` carries the offsets (lengths' prefix sums, i64) so a reader
/// gets `offsets` without recomputing them.
pub(super) fn keyed_jagged(
    keys: &[String],
    inputs: super::Inputs<'_>,
    out: &mut Tensor,
    rows: usize,
) -> Result<(), ExtractError> {
    if out.keys != keys {
        out.keys.clear();
        out.keys.extend(keys.iter().cloned());
    }
    push_split(out, DataType::I64, 0)?;
    for t in inputs.iter() {
        for r in 0..rows {
            let ids = row_id_bytes(t, r);
            out.values.extend_from_slice(ids);
            let found = ids.len() / 8;
            let n = i32::try_from(found).map_err(|_| ExtractError::SplitsOverflow { found })?;
            out.lengths.extend_from_slice(&n.to_le_bytes());
            push_split(out, DataType::I64, out.values.len() / 8)?;
        }
        if !t.weights.is_empty() {
            for r in 0..rows {
                let range = row_range(t, r);
                out.weights.extend_from_slice(&t.weights[range.start * 4..range.end * 4]);
            }
        }
    }
    Ok(())
}

/// `[rows, w1 + w2 + ...]` f32 from dense inputs of any numeric dtype.
pub(super) fn concat(inputs: super::Inputs<'_>, out: &mut Tensor, rows: usize) -> Result<(), ExtractError> {
    for r in 0..rows {
        for t in inputs.iter() {
            let w = t.row_width();
            let base = row_of(t, r) * w;
            for i in base..base + w {
                out.values.extend_from_slice(&(t.f64_at(i) as f32).to_le_bytes());
            }
        }
    }
    Ok(())
}

/// Position `index` of a ragged `[rows, -1, width]` sequence; rows shorter
/// than `index + 1` give zeros.
pub(super) fn position(
    input: &Tensor,
    out: &mut Tensor,
    rows: usize,
    index: usize,
    width: usize,
) -> Result<(), ExtractError> {
    let elem = crate::extract::elem_size(DataType::try_from(input.dtype).unwrap_or(DataType::I64));
    for r in 0..rows {
        let range = row_range(input, r);
        if index < range.len() {
            let start = (range.start + index) * width * elem;
            out.values.extend_from_slice(&input.values[start..start + width * elem]);
        } else {
            out.values.resize(out.values.len() + width * elem, 0);
        }
    }
    Ok(())
}
