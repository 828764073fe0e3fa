//! Layout operators: several ragged inputs into one CSR (deepx group) or one
//! KeyedJaggedTensor (TorchRec), dense inputs concatenated, and one position of
//! a sequence as its own tensor.

use super::ids::{row_ids, row_range};
use super::rows::row_of;
use crate::columns::{Column, Values};
use crate::error::{ErrorKind, ExtractError};

/// Row r of the result is row r of every input, one after the other.
pub(super) fn group(inputs: super::Inputs<'_>, out: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let o = out.ragged_mut();
    o.splits.push(0)?;
    for r in 0..rows {
        for t in inputs.iter() {
            o.values.extend_ids(row_ids(&t.column, r));
        }
        o.splits.push(o.values.len())?;
    }
    Ok(())
}

/// Key-major: all rows of key 0, then key 1...; `lengths[k * rows + r]`, and
/// `offsets` (lengths' prefix sums) so a reader need not recompute them.
pub(super) fn keyed_jagged(
    keys: &[String],
    inputs: super::Inputs<'_>,
    out: &mut Column,
    rows: usize,
) -> Result<(), ExtractError> {
    let o = out.keyed_jagged_mut();
    o.begin(keys, rows);
    for t in inputs.iter() {
        for r in 0..rows {
            let ids = row_ids(&t.column, r);
            o.values.extend_ids(ids);
            let n = i32::try_from(ids.len())
                .map_err(|_| ExtractError::from(ErrorKind::SplitsOverflow { found: ids.len() }))?;
            o.lengths.push(n);
            o.offsets.push(o.values.len() as i64);
        }
        if let Column::Ragged(input) = &t.column
            && (input.weighted || !input.weights.is_empty())
        {
            o.weighted = true;
            for r in 0..rows {
                o.weights.extend_from_slice(input.weights.get(row_range(&t.column, r)).unwrap_or(&[]));
            }
        }
    }
    Ok(())
}

/// `[rows, w1 + w2 + ...]` f32 from dense inputs of any numeric dtype.
pub(super) fn concat(inputs: super::Inputs<'_>, out: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let o = &mut out.dense_mut().values;
    for r in 0..rows {
        for t in inputs.iter() {
            let w = t.column.row_width();
            let base = row_of(&t.column, r) * w;
            let Some(values) = t.column.values() else { continue };
            for i in base..base + w {
                o.push_f64(f64::from(values.f64_at(i) as f32));
            }
        }
    }
    Ok(())
}

/// Position `index` of a ragged `[rows, -1, width]` sequence; rows shorter
/// than `index + 1` give zeros.
pub(super) fn position(
    input: &Column,
    out: &mut Column,
    rows: usize,
    index: usize,
    width: usize,
) -> Result<(), ExtractError> {
    let o = &mut out.dense_mut().values;
    let empty = Values::default();
    let values = input.values().unwrap_or(&empty);
    for r in 0..rows {
        let range = row_range(input, r);
        let start = (range.start + index) * width;
        if index < range.len() && start + width <= values.len() {
            o.extend_from(values, start..start + width);
        } else {
            o.fill(0.0, width);
        }
    }
    Ok(())
}
