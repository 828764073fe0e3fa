//! Preparing an output's column for a call and broadcasting a computed row,
//! charged against the output-size budget (`crate::error::charge`).

use super::ExtractError;
use crate::columns::Column;
use crate::config::Output;
pub(crate) use crate::error::charge;

/// Clears `c` for `out`, keeping every buffer's capacity.
pub(crate) fn begin(c: &mut Column, out: &Output) {
    let (layout, dtype, splits) = out.layout();
    c.reset(layout, dtype, splits);
}

/// Repeats the single computed row of `c` until it has `rows` rows: how a
/// SHARED feature reaches every candidate.
pub(crate) fn broadcast(c: &mut Column, rows: usize, budget: &mut usize, limit: usize) -> Result<(), ExtractError> {
    let extra = rows.saturating_sub(1);
    let one = c.byte_len();
    charge(budget, one.saturating_mul(extra), limit)?;
    match c {
        Column::Ragged(r) => {
            let n = r.values.len();
            r.values.repeat_prefix(n, extra);
            let positions = r.splits.get(1);
            r.splits.truncate(1);
            for k in 1..=rows {
                r.splits.push(positions * k)?;
            }
        }
        Column::Dense(d) => {
            d.values.repeat_prefix(d.values.len(), extra);
            d.rows = rows;
        }
        Column::Strings(s) => {
            let n = s.bytes.len();
            crate::columns::repeat_all(&mut s.bytes, extra);
            s.offsets.truncate(1);
            s.offsets.extend((1..=rows).map(|k| (n * k) as i64));
        }
        Column::KeyedJagged(_) => {}
    }
    Ok(())
}
