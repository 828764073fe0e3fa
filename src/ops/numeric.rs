//! Numeric operators, element by element over a dense input of any numeric
//! dtype: ln(x + c), clip, z-score, min-max, bucketize, cast, scale, pow.
//! Every case is defined: ln of a non-positive or NaN argument gives `floor`,
//! bucketize puts NaN in bucket 0, casting NaN to an integer gives 0.

use super::TransformKind;
use super::rows::row_of;
use crate::columns::Column;
use crate::error::ExtractError;

pub(super) fn apply(kind: &TransformKind, input: &Column, out: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let width = input.row_width();
    let Some(values) = input.values() else { return Ok(()) };
    let out = &mut out.dense_mut().values;
    out.reserve(rows * width);
    for r in 0..rows {
        let base = row_of(input, r) * width;
        for i in base..base + width {
            out.push_f64(eval(kind, values.f64_at(i)));
        }
    }
    Ok(())
}

/// A sequence (`[rows, -1, width]`) of any numeric dtype, element by
/// element: the same positions and width, each value replaced.
pub(super) fn apply_positions(kind: &TransformKind, input: &Column, out: &mut Column) -> Result<(), ExtractError> {
    let (Column::Ragged(i), Column::Ragged(o)) = (input, out) else {
        return Ok(());
    };
    o.width = i.width;
    o.values.reserve(i.values.len());
    for k in 0..i.values.len() {
        o.values.push_f64(eval(kind, i.values.f64_at(k)));
    }
    for k in 0..i.splits.len() {
        o.splits.push(i.splits.get(k))?;
    }
    Ok(())
}

/// One element.
pub fn eval(kind: &TransformKind, x: f64) -> f64 {
    use TransformKind::*;
    match kind {
        Ln { c, floor } => {
            let arg = x + c;
            if arg > 0.0 { arg.ln() } else { *floor }
        }
        Clip { min, max } => x.clamp(*min, *max),
        ZScore { mean, std } => (x - mean) / std,
        MinMax { min, max } => (x - min) / (max - min),
        Bucketize { boundaries } => {
            if x.is_nan() {
                0.0
            } else {
                boundaries.partition_point(|b| *b <= x) as f64
            }
        }
        Scale { factor } => x * factor,
        Pow { exponent } => x.powf(*exponent),
        _ => x,
    }
}
