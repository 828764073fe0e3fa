//! Numeric operators, element by element over a dense input of any numeric
//! dtype: ln(x + c), clip, z-score, min-max, bucketize, cast, scale, pow.
//! Every case is defined: ln of a non-positive or NaN argument gives `floor`,
//! bucketize puts NaN in bucket 0, casting NaN to an integer gives 0.

use super::TransformKind;
use super::rows::row_of;
use crate::extract::{ExtractError, push_f64};
use crate::proto::fex_v1::{DataType, Tensor};

pub(super) fn apply(
    kind: &TransformKind,
    input: &Tensor,
    out: &mut Tensor,
    dtype: DataType,
    rows: usize,
) -> Result<(), ExtractError> {
    let width = input.row_width();
    out.values.reserve(rows * width * crate::extract::elem_size(dtype));
    for r in 0..rows {
        let base = row_of(input, r) * width;
        for i in base..base + width {
            let y = eval(kind, input.f64_at(i));
            push_f64(&mut out.values, dtype, y);
        }
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
