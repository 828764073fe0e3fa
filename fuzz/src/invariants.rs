//! What every `Ok` extraction must satisfy, checked cheaply: one tensor per
//! output in plan order, the declared layout and dtypes, rows as promised, and
//! buffers whose sizes agree with their shapes and row splits.

use fex::proto::fex_v1::{DataType, Layout, Tensor};
use fex::{Extracted, Plan};

/// Checks an `Ok` result of extracting `rows` rows with `plan`.
pub fn check(plan: &Plan, out: &Extracted, rows: usize) {
    assert_eq!(out.batch_size, rows, "batch_size");
    let tensors = out.tensors();
    assert_eq!(tensors.len(), plan.outputs.len(), "one tensor per output");
    for (output, t) in plan.outputs.iter().zip(&tensors) {
        assert_eq!(t.name, output.name);
        let spec = output.spec();
        assert_eq!((t.layout, t.dtype, t.splits_dtype), (spec.layout, spec.dtype, spec.splits_dtype), "{}", t.name);
        assert!(!t.shared || output.shared_once, "{}: shared without shared: once", t.name);
        let expected_rows = if t.shared { 1 } else { rows };
        assert_eq!(t.shape.first().copied(), Some(expected_rows as i64), "{}: rows", t.name);
        match t.layout() {
            Layout::Dense => check_dense(t),
            Layout::Ragged => check_ragged(t, expected_rows),
            Layout::Strings => check_strings(t, expected_rows),
            other => panic!("{}: unexpected layout {other:?}", t.name),
        }
    }
}

/// Checks, Ok or not, that no buffer grew far past the plan's output limit:
/// `max_output_bytes` exists so that no request can make the extractor
/// allocate without bound. A buffer may pass the limit by what one write adds
/// before the check (at most a few times the input, as when an 8-byte fid
/// comes from a 2-byte empty list), and `Vec` may double that.
pub fn check_capacity(out: &Extracted, limit: usize, longest_input: usize) {
    let bound = 2 * (limit + 8 * longest_input) + 4096;
    for c in &out.columns {
        let capacity = c.column.largest_capacity();
        assert!(
            capacity <= bound,
            "{}: a buffer of {capacity} bytes, past 2 x (limit {limit} + 8 x input {longest_input})",
            c.name
        );
    }
}

/// Bytes per element of a tensor dtype (strings count bytes).
pub fn elem_size(dtype: DataType) -> usize {
    match dtype {
        DataType::F32 | DataType::I32 => 4,
        DataType::F64 | DataType::I64 | DataType::U64 => 8,
        DataType::Bytes | DataType::Unspecified => 1,
    }
}

fn check_dense(t: &Tensor) {
    assert!(t.shape.iter().all(|&d| d >= 0), "{}: shape {:?}", t.name, t.shape);
    let elements: i64 = t.shape.iter().product();
    assert_eq!(t.values.len(), elements as usize * elem_size(t.dtype()), "{}: shape {:?}", t.name, t.shape);
    assert!(t.row_splits.is_empty(), "{}: dense with row_splits", t.name);
}

/// `[rows, -1]` or `[rows, -1, width]`: splits count positions of `width` values.
fn check_ragged(t: &Tensor, rows: usize) {
    assert_eq!(t.shape.get(1), Some(&-1), "{}: shape {:?}", t.name, t.shape);
    assert!(t.shape[2..].iter().all(|&d| d >= 1), "{}: shape {:?}", t.name, t.shape);
    let per_position = t.shape[2..].iter().product::<i64>() as usize * elem_size(t.dtype());
    assert_eq!(t.values.len() % per_position, 0, "{}: {} value bytes", t.name, t.values.len());
    check_splits(t, rows, t.values.len() / per_position);
}

fn check_strings(t: &Tensor, rows: usize) {
    // [rows], or [rows, 1] in compat: monolith.
    assert!(matches!(t.shape[..], [_] | [_, 1]), "{}: shape {:?}", t.name, t.shape);
    assert_eq!(t.splits_dtype(), DataType::I64, "{}", t.name);
    check_splits(t, rows, t.values.len());
}

/// rows + 1 splits, starting at 0, non-decreasing, ending at `count`.
fn check_splits(t: &Tensor, rows: usize, count: usize) {
    let width = elem_size(t.splits_dtype());
    assert!(matches!(width, 4 | 8), "{}: splits dtype {:?}", t.name, t.splits_dtype());
    assert_eq!(t.row_splits.len() % width, 0, "{}: {} split bytes", t.name, t.row_splits.len());
    let splits = t.splits();
    assert_eq!(splits.len(), rows + 1, "{}: splits {splits:?}", t.name);
    assert_eq!(splits[0], 0, "{}: splits {splits:?}", t.name);
    assert!(splits.windows(2).all(|w| w[0] <= w[1]), "{}: splits {splits:?}", t.name);
    assert_eq!(splits[rows], count as i64, "{}: splits {splits:?}", t.name);
}
