//! Checks shared by several kinds and ops: dtypes, splits, shapes, defaults
//! and bounded numbers, each reporting what it found and what is allowed.

use super::Checker;
use crate::config::plan::Compat;
use crate::proto::fex_v1::DataType;

/// Largest number of elements one dense row may declare.
const MAX_ROW_ELEMENTS: i64 = 1 << 20;

impl Checker {
    pub(super) fn dtype(
        &mut self,
        path: &str,
        name: Option<&str>,
        allowed: &[DataType],
        default: DataType,
    ) -> DataType {
        let Some(name) = name else { return default };
        match allowed.iter().find(|d| dtype_name(**d) == name) {
            Some(d) => *d,
            None => {
                let names: Vec<_> = allowed.iter().map(|d| dtype_name(*d)).collect();
                self.error(format!("{path}.dtype"), format!("found {name:?}, expected one of {}", names.join(", ")));
                default
            }
        }
    }

    pub(super) fn splits(&mut self, path: &str, splits: Option<&str>) -> DataType {
        match splits {
            None | Some("i64") => DataType::I64,
            Some("i32") => DataType::I32,
            Some(other) => {
                self.error(format!("{path}.splits"), format!("found {other:?}, expected i32 or i64"));
                DataType::I64
            }
        }
    }

    /// `shared: broadcast` (the default) or `once`.
    pub(super) fn shared_once(&mut self, path: &str, shared: Option<&str>) -> bool {
        match shared {
            None | Some("broadcast") => false,
            Some("once") => true,
            Some(other) => {
                self.error(format!("{path}.shared"), format!("found {other:?}, expected broadcast or once"));
                false
            }
        }
    }

    /// A default value: native mode only, finite.
    pub(super) fn default_value(&mut self, path: &str, value: Option<f64>) -> f64 {
        match value {
            Some(_) if self.compat == Compat::Monolith => {
                self.error(format!("{path}.default"), "explicit defaults need compat: native (Monolith fills 0)");
                0.0
            }
            Some(v) if !v.is_finite() => {
                self.error(format!("{path}.default"), format!("found {v}, expected a finite number"));
                0.0
            }
            Some(v) => v,
            None => 0.0,
        }
    }

    /// A dense shape (default `[1]`) and its elements per row.
    pub(super) fn shape(&mut self, path: &str, shape: Option<&[i64]>) -> (usize, Vec<i64>) {
        let shape = shape.map(<[i64]>::to_vec).unwrap_or_else(|| vec![1]);
        let product = shape.iter().try_fold(1i64, |acc, &d| if d >= 1 { acc.checked_mul(d) } else { None });
        match product {
            Some(n) if !shape.is_empty() && n <= MAX_ROW_ELEMENTS => (n as usize, shape),
            _ => {
                let msg = format!(
                    "found {shape:?}, expected positive dimensions with at most {MAX_ROW_ELEMENTS} elements per row"
                );
                self.error(format!("{path}.shape"), msg);
                (1, vec![1])
            }
        }
    }

    /// A required integer parameter within `range`.
    pub(super) fn required_u64(
        &mut self,
        path: &str,
        key: &str,
        value: Option<u64>,
        range: std::ops::RangeInclusive<u64>,
    ) -> u64 {
        match value {
            Some(v) if range.contains(&v) => v,
            Some(v) => {
                self.error(format!("{path}.{key}"), format!("found {v}, allowed {range:?}"));
                *range.start()
            }
            None => {
                self.error(format!("{path}.{key}"), "missing; required for this op");
                *range.start()
            }
        }
    }

    /// A count in `1..=max`, with an optional default.
    pub(super) fn bounded(
        &mut self,
        path: &str,
        key: &str,
        value: Option<i64>,
        default: Option<i64>,
        max: i64,
    ) -> usize {
        match value.or(default) {
            Some(v) if (1..=max).contains(&v) => v as usize,
            Some(v) => {
                self.error(format!("{path}.{key}"), format!("found {v}, allowed 1..={max}"));
                1
            }
            None => {
                self.error(format!("{path}.{key}"), "missing; required for this kind");
                1
            }
        }
    }

    /// A finite number parameter of op `op`, or `default` when absent.
    pub(super) fn finite(&mut self, path: &str, op: &str, key: &str, value: Option<f64>, default: Option<f64>) -> f64 {
        match value.or(default) {
            Some(x) if x.is_finite() => x,
            Some(x) => {
                self.error(format!("{path}.{key}"), format!("found {x}, expected a finite number"));
                0.0
            }
            None => {
                self.error(format!("{path}.{key}"), format!("missing; required for op {op}"));
                0.0
            }
        }
    }
}

/// The config spelling of a dtype.
pub(super) fn dtype_name(d: DataType) -> &'static str {
    match d {
        DataType::F32 => "f32",
        DataType::F64 => "f64",
        DataType::I32 => "i32",
        DataType::I64 => "i64",
        DataType::U64 => "u64",
        DataType::Bytes => "bytes",
        DataType::Unspecified => "unspecified",
    }
}
