//! Numeric operators (`ln`, `clip`, `normalize`, `bucketize`, `cast`,
//! `scale`, `pow`): their parameters checked, and the dtype they produce.

use super::Checker;
use crate::config::raw::{RawEntry, RawOp, entries};
use crate::ops::TransformKind as K;
use crate::proto::fex_v1::DataType;

impl Checker {
    /// The operator and its result dtype; `None` for a non-numeric op.
    pub(super) fn numeric(&mut self, e: &RawEntry, op: &RawOp) -> Option<(K, DataType)> {
        let (path, name) = (e.path.as_str(), e.tag.as_str());
        let kind = match op {
            RawOp::Ln(o) => K::Ln {
                c: self.finite(path, name, "c", o.c, Some(1.0)),
                floor: self.finite(path, name, "floor", o.floor, Some(0.0)),
            },
            RawOp::Clip(o) => self.clip(path, o),
            RawOp::Normalize(o) => self.normalize(path, o)?,
            RawOp::Bucketize(o) => self.bucketize(path, o.boundaries.as_deref().unwrap_or_default()),
            RawOp::Cast(o) => {
                let allowed = [DataType::F32, DataType::F64, DataType::I64, DataType::I32];
                return Some((K::Cast, self.dtype(path, o.dtype.as_deref(), &allowed, DataType::F32)));
            }
            RawOp::Scale(o) => K::Scale { factor: self.finite(path, name, "factor", o.factor, None) },
            RawOp::Pow(o) => K::Pow { exponent: self.finite(path, name, "exponent", o.exponent, None) },
            _ => return None,
        };
        let dtype = if matches!(kind, K::Bucketize { .. }) { DataType::I64 } else { DataType::F32 };
        Some((kind, dtype))
    }

    fn clip(&mut self, path: &str, o: &entries::Clip) -> K {
        let (min, max) = (o.min.unwrap_or(f64::NEG_INFINITY), o.max.unwrap_or(f64::INFINITY));
        if o.min.is_none() && o.max.is_none() || min.is_nan() || max.is_nan() || min > max {
            let message = format!("found min {min} and max {max}; give min, max or both with min <= max");
            self.error(format!("{path}.min"), message);
        }
        K::Clip { min, max }
    }

    fn bucketize(&mut self, path: &str, b: &[f64]) -> K {
        if b.is_empty() || b.iter().any(|x| !x.is_finite()) || b.windows(2).any(|w| w[0] >= w[1]) {
            let message = format!("found {b:?}, expected finite numbers in strictly increasing order");
            self.error(format!("{path}.boundaries"), message);
        }
        K::Bucketize { boundaries: b.to_vec() }
    }

    fn normalize(&mut self, path: &str, o: &entries::Normalize) -> Option<K> {
        let op = "normalize";
        match o.method.as_deref() {
            Some("zscore") => {
                let (mean, std) =
                    (self.finite(path, op, "mean", o.mean, None), self.finite(path, op, "std", o.std, None));
                if std <= 0.0 {
                    self.error(format!("{path}.std"), format!("found {std}, expected a positive number"));
                }
                Some(K::ZScore { mean, std })
            }
            Some("minmax") => {
                let (min, max) = (self.finite(path, op, "min", o.min, None), self.finite(path, op, "max", o.max, None));
                if min >= max {
                    self.error(format!("{path}.max"), format!("found min {min} and max {max}, expected min < max"));
                }
                Some(K::MinMax { min, max })
            }
            other => {
                self.error(format!("{path}.method"), format!("found {other:?}, expected zscore or minmax"));
                None
            }
        }
    }
}
