//! Rules of Monolith's kernels that `compat: monolith` reproduces and that
//! several writers share. Each cites the line of
//! `monolith/native_training/data/kernels/parse_example_lib.cc` (K) it follows.

use super::gather::{Cell, Column as GatherColumn};
use super::{Ctx, ExtractError};
use crate::columns::{Column, Values};
use crate::config::{Op, Output};
use crate::error::ErrorKind;
use crate::proto::fex_v1::DataType;
use crate::view::FeatureKind;

/// The variants `BaseParser::FillFeature` writes nothing for, whatever the
/// output (K 167-173): the scalar `*_value` variants, which no branch reads,
/// and the list-of-list variants, which it only logs. Every other list
/// variant either fills the output or, for an output of another type, aborts
/// the kernel (a CHECK on the tensor's dtype or rank), which fex refuses.
pub(super) fn fill_ignores(kind: FeatureKind) -> bool {
    use FeatureKind::*;
    matches!(
        kind,
        Int64Value
            | FloatValue
            | DoubleValue
            | BytesValue
            | FidV2Lists
            | FloatLists
            | DoubleLists
            | Int64Lists
            | BytesLists
            | FidV1Lists
    )
}

/// An output whose list came more than once (batch input): Monolith's
/// ExampleBatchParser fills the output from each copy in turn over the same
/// rows (K 543-615), each Feature writing only what it holds, so a later
/// copy overwrites a prefix of what an earlier one wrote. Labels and weights
/// do the same in their own writers.
pub(super) fn write_repeated(cx: &Ctx<'_, '_>, out: &Output, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let source = cx.source_index(out.source()).expect("a repeated output reads a list");
    match &out.op {
        Op::Dense { dtype, dim, .. } => dense_copies(cx, source, c, rows, *dtype, *dim),
        Op::String { .. } => string_copies(cx, source, c, rows),
        Op::Sparse { .. } => sparse_copies(cx, source, c, rows),
        _ => {
            let col = cx.ix.columns[source];
            let message = "repeated list: compat: monolith applies the copies of a list for sparse, dense, string, \
                           label and instance_weight outputs only";
            let path = format!("named_feature_list[{}]", col.list_index);
            let name = cx.plan.source_names[source].clone();
            Err(ErrorKind::Invalid { path, name, message }.into())
        }
    }
}

/// Every copy of `source`'s list, in wire order.
fn copies(cx: &Ctx<'_, '_>, source: usize) -> Vec<GatherColumn> {
    let earlier = cx.ix.earlier.iter().filter(|(s, _)| *s == source).map(|(_, c)| *c);
    earlier.chain(std::iter::once(cx.ix.columns[source]).filter(|c| c.present)).collect()
}

/// The cell one copy gives `row`: a SHARED copy its Feature 0 for every row
/// (K 603-607), an INDIVIDUAL one its Feature `row`, if it has one.
pub(super) fn cell_at(cx: &Ctx<'_, '_>, col: &GatherColumn, row: usize) -> Option<Cell> {
    let i = match col.shared {
        true if col.len > 0 => col.first,
        false if row < col.len => col.first + row,
        _ => return None,
    };
    Some(cx.ix.cells[i]).filter(|c| !c.is_none())
}

/// Visits the (row, cell) of every copy of `source` in the order Monolith
/// applies them (for each row, earlier copies first); with `earlier_only`,
/// all but the last. Batch: the copies of a list in wire order (K 543).
/// Examples: the features of one name in each Example in order (K 409).
pub(super) fn visit(
    cx: &Ctx<'_, '_>,
    source: usize,
    rows: usize,
    earlier_only: bool,
    mut f: impl FnMut(usize, Cell) -> Result<(), ExtractError>,
) -> Result<(), ExtractError> {
    if cx.is_batch() {
        let all = copies(cx, source);
        let n = if earlier_only { all.len().saturating_sub(1) } else { all.len() };
        for col in &all[..n] {
            for row in 0..rows {
                if let Some(cell) = cell_at(cx, col, row) {
                    f(row, cell)?;
                }
            }
        }
        return Ok(());
    }
    for &(_, row, cell) in cx.ix.example_earlier.iter().filter(|(s, ..)| *s == source) {
        f(row, cell)?;
    }
    if !earlier_only {
        for row in 0..rows {
            if let Some(cell) = cx.cell(source, row) {
                f(row, cell)?;
            }
        }
    }
    Ok(())
}

/// Dense: each copy's values overwrite a prefix of each row it reaches.
fn dense_copies(
    cx: &Ctx<'_, '_>,
    source: usize,
    c: &mut Column,
    rows: usize,
    dtype: DataType,
    dim: usize,
) -> Result<(), ExtractError> {
    let values = &mut c.dense_mut().values;
    values.fill(0.0, rows * dim);
    let mut row_values = Values::new(dtype);
    visit(cx, source, rows, false, |row, cell| {
        row_values.clear();
        let n = super::dense::row_into(cx, &mut row_values, (source, row, cell), dim)?;
        values.overwrite_from(row * dim, &row_values, 0..n);
        Ok(())
    })
}

/// Strings: a copy's bytes_list[0] replaces the row's string.
fn string_copies(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let mut strings: Vec<&[u8]> = vec![&[]; rows];
    visit(cx, source, rows, false, |row, cell| {
        if let Some(v) = super::strings::cell_value(cx, source, row, cell)? {
            strings[row] = v;
        }
        Ok(())
    })?;
    let s = c.strings_mut();
    s.end_row();
    for v in strings {
        s.bytes.extend_from_slice(v);
        s.end_row();
    }
    Ok(())
}

/// Sparse: every copy sets each row's split from the previous one (K 108-119),
/// so the last copy's splits stand, and its ids, written last at those splits
/// (K 621-663; Examples 490-518), cover every earlier copy's. An earlier copy
/// with more ids in a row than the last leaves room for writes past the end
/// of Monolith's values tensor: refused, as is any Feature Monolith aborts on.
fn sparse_copies(cx: &Ctx<'_, '_>, source: usize, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    super::sparse::write(cx, source, c, rows)?;
    let Column::Ragged(r) = &*c else { return Ok(()) };
    let total = r.splits.get(rows);
    let mut ids = Values::new(DataType::U64);
    visit(cx, source, rows, true, |row, cell| {
        ids.clear();
        super::sparse::general_row(cx, source, row, cell, &mut ids)?;
        if r.splits.get(row) + ids.len() > total {
            let message = "an earlier copy of this repeated feature has more ids in the row than the last copy \
                           leaves room for (Monolith writes them past the end of its values tensor)";
            return Err(cx.invalid(source, row, cell, message));
        }
        Ok(())
    })
}
