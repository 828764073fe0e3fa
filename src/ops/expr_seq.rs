//! `expr` per position of float sequences (FG's expr_feature as a
//! sub-feature of a sequence_feature): the positions of every row become
//! one long column, each dense input repeated at every position of its
//! row, and the compiled program runs once over that column as it runs
//! over rows; the result keeps the sequences' positions (`[rows, -1, w]`).
//!
//! fex's rules where FG says nothing beyond "the sub-sequences of one
//! group have the same length": two sequences pair position `i` with
//! position `i`, and a row where they differ in length is a malformed
//! sample (an error, see [`check`]), as a match's two key sequences are.

use super::expr::{Expr, Scratch, gather_inputs, run_into};
use super::ids::{is_sequence, row_range};
use super::rows::row_of;
use super::{Budget, Inputs, unequal_lengths};
use crate::columns::{Column, NamedColumn, elem_size};
use crate::error::ExtractError;

/// Runs `e` over every position of the inputs' sequences into `out`, for
/// the output `name` of `rows` rows.
pub(super) fn apply(
    scratch: &mut Scratch,
    e: &Expr,
    inputs: Inputs<'_>,
    (name, rows): (&str, usize),
    out: &mut Column,
    mut budget: Budget<'_>,
) -> Result<(), ExtractError> {
    let Some(lead) = inputs.iter().find(|i| is_sequence(&i.column)) else {
        return Ok(());
    };
    check(inputs, lead, rows, name)?;
    let lens = |r: usize| row_range(&lead.column, r).len();
    let positions: usize = (0..rows).map(lens).sum();
    // Charged before the buffers are filled: a SHARED sequence against
    // many rows is repeated for each of them.
    budget.charge(positions.saturating_mul(e.width).saturating_mul(elem_size(out.dtype())))?;
    let columns = gather_inputs(scratch, e, inputs, |c, w, v| {
        let Some(values) = c.values() else { return };
        v.reserve(positions * w);
        for r in 0..rows {
            if is_sequence(c) {
                let range = row_range(c, r);
                values.extend_f64(v, range.start * w..range.end * w);
            } else {
                let base = row_of(c, r) * w;
                (0..lens(r)).for_each(|_| values.extend_f64(v, base..base + w));
            }
        }
    })?;
    let o = out.ragged_mut();
    o.width = Some(e.width);
    run_into(scratch, e, columns, positions, &mut o.values);
    o.splits.push(0)?;
    let mut end = 0;
    for r in 0..rows {
        end += lens(r);
        o.splits.push(end)?;
    }
    Ok(())
}

/// Refuses a batch where two sequence inputs differ in length in some row:
/// pairing their positions would pair the wrong values. A sequence
/// returned once (SHARED) counts against every row of the other.
fn check(inputs: Inputs<'_>, lead: &NamedColumn, rows: usize, name: &str) -> Result<(), ExtractError> {
    for r in 0..rows {
        let n = row_range(&lead.column, r).len();
        for other in inputs.iter().filter(|i| is_sequence(&i.column)) {
            let m = row_range(&other.column, r).len();
            if m != n {
                let (a, b) = (("sequence", lead.name.as_str(), n), ("sequence", other.name.as_str(), m));
                return Err(unequal_lengths(name, r, a, b, "an expression's sequences"));
            }
        }
    }
    Ok(())
}
