//! Extraction results as stable text: one header line per output (name,
//! layout, dtype, shape, splits type, shared) and its buffers, row by row.
//! Floats print with `{:?}`, which round-trips exactly (`0.1`, `NaN`, `inf`,
//! `1.1754944e-38`), so equal text means equal bits up to NaN payloads.

use std::fmt::Write;
use std::ops::Range;

use crate::columns::{Column, Dense, KeyedJagged, Ragged, Strings};
use crate::proto::fex_v1::DataType;
use crate::{Extracted, NamedColumn, Values};

/// The text of a whole extraction: `batch_size`, then every output in order.
pub fn render(out: &Extracted) -> String {
    let mut s = format!("batch_size: {}\n", out.batch_size);
    for c in &out.columns {
        column(&mut s, c);
    }
    s
}

/// The text of columns produced outside an extraction (the text readers'
/// batches), each as `render` prints it.
pub fn render_columns(columns: &[NamedColumn]) -> String {
    let mut s = String::new();
    for c in columns {
        column(&mut s, c);
    }
    s
}

/// The text of a failed extraction or a rejected model.
pub fn render_error(e: &dyn std::fmt::Display) -> String {
    format!("error: {e}\n")
}

fn column(s: &mut String, c: &NamedColumn) {
    let shape = list(c.column.shape().iter());
    let _ = write!(s, "{}: {} {} shape={shape}", c.name, layout(&c.column), dtype(c.column.dtype()));
    if let Column::Ragged(r) = &c.column {
        let _ = write!(s, " splits={}", dtype(r.splits.dtype()));
    }
    s.push_str(if c.shared { " shared\n" } else { "\n" });
    match &c.column {
        Column::Ragged(r) => ragged(s, r),
        Column::Dense(d) => dense(s, d),
        Column::Strings(x) => strings(s, x),
        Column::KeyedJagged(k) => keyed_jagged(s, k),
    }
}

fn ragged(s: &mut String, r: &Ragged) {
    let _ = writeln!(s, "  splits: {}", list(r.splits.to_i64().iter()));
    let w = r.width.unwrap_or(1);
    for row in 0..r.splits.len().saturating_sub(1) {
        let span = r.splits.get(row) * w..r.splits.get(row + 1) * w;
        let _ = writeln!(s, "  row {row}: {}", grouped(&r.values, span.clone(), r.width));
        if !r.weights.is_empty() {
            let _ = writeln!(s, "  weights {row}: {}", floats(r.weights.get(span).unwrap_or(&[])));
        }
    }
}

fn dense(s: &mut String, d: &Dense) {
    let w: usize = d.dims.iter().product();
    for row in 0..d.rows {
        let _ = writeln!(s, "  row {row}: {}", values(&d.values, row * w..(row + 1) * w));
    }
}

fn strings(s: &mut String, x: &Strings) {
    let _ = writeln!(s, "  offsets: {}", list(x.offsets.iter()));
    for (row, pair) in x.offsets.windows(2).enumerate() {
        let bytes = x.bytes.get(pair[0] as usize..pair[1] as usize).unwrap_or(&[]);
        let _ = writeln!(s, "  row {row}: \"{}\"", bytes.escape_ascii());
    }
}

fn keyed_jagged(s: &mut String, k: &KeyedJagged) {
    let _ = writeln!(s, "  keys: {}", list(k.keys.iter()));
    let _ = writeln!(s, "  lengths: {}", list(k.lengths.iter()));
    let _ = writeln!(s, "  offsets: {}", list(k.offsets.iter()));
    let _ = writeln!(s, "  values: {}", values(&k.values, 0..k.values.len()));
    if !k.weights.is_empty() {
        let _ = writeln!(s, "  weights: {}", floats(&k.weights));
    }
}

/// Values of one row, in groups of `width` for a sequence.
fn grouped(v: &Values, span: Range<usize>, width: Option<usize>) -> String {
    match width {
        Some(w) if w > 0 => {
            let groups = span.clone().step_by(w).map(|at| values(v, at..(at + w).min(span.end)));
            format!("[{}]", groups.collect::<Vec<_>>().join(", "))
        }
        _ => values(v, span),
    }
}

fn values(v: &Values, span: Range<usize>) -> String {
    match v {
        Values::U64(x) => list(x.get(span).unwrap_or(&[]).iter()),
        Values::I64(x) => list(x.get(span).unwrap_or(&[]).iter()),
        Values::I32(x) => list(x.get(span).unwrap_or(&[]).iter()),
        Values::F32(x) => floats(x.get(span).unwrap_or(&[])),
        Values::F64(x) => debug_list(x.get(span).unwrap_or(&[]).iter()),
    }
}

fn floats(x: &[f32]) -> String {
    debug_list(x.iter())
}

fn list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    format!("[{}]", items.map(|x| x.to_string()).collect::<Vec<_>>().join(", "))
}

fn debug_list<T: std::fmt::Debug>(items: impl Iterator<Item = T>) -> String {
    format!("[{}]", items.map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", "))
}

fn layout(c: &Column) -> &'static str {
    match c {
        Column::Ragged(_) => "ragged",
        Column::Dense(_) => "dense",
        Column::Strings(_) => "strings",
        Column::KeyedJagged(_) => "keyed_jagged",
    }
}

fn dtype(d: DataType) -> &'static str {
    match d {
        DataType::U64 => "u64",
        DataType::I64 => "i64",
        DataType::I32 => "i32",
        DataType::F32 => "f32",
        DataType::F64 => "f64",
        DataType::Bytes => "bytes",
        DataType::Unspecified => "unspecified",
    }
}
