//! Labels and instance weights as Monolith's kernels fill them
//! (`compat: monolith`). K = parse_example_lib.cc, D = data_reader.cc.
//!
//! ExampleBatch (K 543-615): the output starts at 0; `__LABEL__` copies a
//! prefix of each row's float_list, a list named `label` is filled like a
//! dense feature, `instance_weight` writes one row per Feature; every list
//! is applied in wire order over the same rows. Examples: ExtendExample
//! (D 161-195) appends every `__LABEL__` feature's floats to field 101,
//! then the parser (K 409-475) fills the label from `label` features if
//! there are any, else from those labels padded with INVALID_LABEL, and the
//! weight from `instance_weight` features raw if any, else field 102 > 0, else 1.

use super::gather::Cell;
use super::gather::Column as GatherColumn;
use super::monolith::{cell_at, visit};
use super::{Ctx, ExtractError};
use crate::columns::{Column, Values};
use crate::proto::fex_v1::DataType;
use crate::view::{ExampleView, FeatureKind};

/// Monolith's INVALID_LABEL.
const INVALID_LABEL: f32 = f32::MIN;

pub(super) fn write_label(cx: &Ctx<'_, '_>, c: &mut Column, rows: usize, dim: usize) -> Result<(), ExtractError> {
    let values = &mut c.dense_mut().values;
    if cx.is_batch() {
        values.fill(0.0, rows * dim);
        return batch_labels(cx, values, rows, dim);
    }
    let mut row_values = Values::new(DataType::F32);
    for row in 0..rows {
        example_label(cx, values, &mut row_values, row, dim)?;
    }
    Ok(())
}

pub(super) fn write_weight(cx: &Ctx<'_, '_>, c: &mut Column, rows: usize) -> Result<(), ExtractError> {
    let values = &mut c.dense_mut().values;
    let source = cx.plan.weight_source.expect("plans with weights reserve instance_weight");
    if cx.is_batch() {
        // K 588-594: rows past the list keep 0; a SHARED list is not broadcast.
        values.fill(0.0, rows);
        let mut one = Values::new(DataType::F32);
        return visit(cx, source, rows, false, |row, cell| {
            let Some(w) = first_float(cx, source, row, cell)? else {
                // K 589: CHECK_GT(feature.float_list().value_size(), 0).
                return Err(cx.invalid(source, row, cell, "no instance_weight float_list value (Monolith aborts)"));
            };
            one.clear();
            one.push_f64(f64::from(if w > 0.0 { w } else { 1.0 }));
            values.overwrite_from(row, &one, 0..1);
            Ok(())
        });
    }
    let mut row_values = Values::new(DataType::F32);
    for row in 0..rows {
        let example = RowExample::of(cx, row, cx.example_row(row).buf)?;
        // K 420, 466-475: a feature named instance_weight is filled like a
        // dense feature of shape 1 (raw: -1 stays -1, empty gives FLT_MIN);
        // without one, field 102 when positive, else 1.
        let mut w = None;
        example.named(b"instance_weight", |cell| {
            row_values.clear();
            let n = super::dense::row_into(cx, &mut row_values, (source, row, cell), 1)?;
            let v = if n == 1 { row_values.f64_at(0) } else { w.unwrap_or(0.0) };
            w = Some(v);
            Ok(())
        })?;
        // Field 102 as the row holds it: the Example's own, or what a
        // transform set (negative_gen: negative_gen_dataset_kernel.cc lines
        // 216-225 and 493-502, `set_instance_weight`).
        let field = cx.example_row(row).weight;
        let fallback = f64::from(if field > 0.0 { field } else { 1.0 });
        values.push_f64(w.unwrap_or(fallback));
    }
    Ok(())
}

/// ExampleBatch labels: `__LABEL__` and `label` lists, in wire order.
fn batch_labels(cx: &Ctx<'_, '_>, values: &mut Values, rows: usize, dim: usize) -> Result<(), ExtractError> {
    let label = cx.plan.label_source.expect("plans with labels reserve __LABEL__");
    let list = cx.plan.label_list_source.expect("compat: monolith plans with labels reserve label");
    // Each list, and each copy of one, is applied whole, in wire order.
    let mut order: Vec<(usize, usize, GatherColumn)> = Vec::new();
    for source in [label, list] {
        let cols = cx.ix.earlier.iter().filter(|(s, _)| *s == source).map(|(_, c)| *c);
        let cols = cols.chain(std::iter::once(cx.ix.columns[source]).filter(|c| c.present));
        order.extend(cols.map(|c| (c.list_index, source, c)));
    }
    order.sort_unstable_by_key(|(at, ..)| *at);
    let mut row_values = Values::new(DataType::F32);
    for (_, source, col) in order {
        for row in 0..rows {
            let Some(cell) = cell_at(cx, &col, row) else { continue };
            row_values.clear();
            let n = if source == label {
                // K 569-578: a prefix of float_list(), whatever the Feature
                // holds; with shape 1, CHECK_GT that there is one value.
                let n = floats(cx, source, row, cell, &mut row_values, dim)?;
                if n == 0 && dim == 1 {
                    let message = "no __LABEL__ float_list value for a dim-1 label (Monolith aborts)";
                    return Err(cx.invalid(source, row, cell, message));
                }
                n
            } else {
                // K 596-614: `label` is a dense name like any other.
                super::dense::row_into(cx, &mut row_values, (source, row, cell), dim)?
            };
            values.overwrite_from(row * dim, &row_values, 0..n);
        }
    }
    Ok(())
}

/// One Example's label row.
fn example_label(
    cx: &Ctx<'_, '_>,
    values: &mut Values,
    row_values: &mut Values,
    row: usize,
    dim: usize,
) -> Result<(), ExtractError> {
    let example = RowExample::of(cx, row, cx.example_row(row).buf)?;
    let list = cx.plan.label_list_source.expect("compat: monolith plans with labels reserve label");
    // K 415-419: features named `label` fill the label like a dense feature,
    // each in turn; then the Example's own labels are not read.
    let at = values.len();
    let mut filled = false;
    example.named(b"label", |cell| {
        if !filled {
            values.fill(0.0, dim);
            filled = true;
        }
        row_values.clear();
        let n = super::dense::row_into(cx, row_values, (list, row, cell), dim)?;
        values.overwrite_from(at, row_values, 0..n);
        Ok(())
    })?;
    if filled {
        return Ok(());
    }
    let mut labels = Vec::new();
    let relabelled = cx.example_row(row).labels;
    if relabelled != example.buf {
        // A transform rewrote field 101 (it read the labels already
        // extended below, as Monolith's transforms see them): only those.
        let own = RowExample::of(cx, row, relabelled)?;
        own.view.labels(|v| labels.push(v)).map_err(|e| own.error(e))?;
    } else {
        // D 176-181: each `__LABEL__` feature's floats are appended to field
        // 101 (until ExtendExample has seen all three reserved names).
        example.view.labels(|v| labels.push(v)).map_err(|e| example.error(e))?;
        let mut extension = super::gather::Extension::default();
        let label = cx.plan.label_source.expect("plans with labels reserve __LABEL__");
        for entry in example.view.features() {
            let entry = entry.map_err(|e| example.error(e))?;
            if extension.done() {
                break;
            }
            extension.see(entry.name);
            if entry.name == b"__LABEL__" {
                row_values.clear();
                floats(cx, label, row, example.cell(&entry), row_values, usize::MAX)?;
                labels.extend((0..row_values.len()).map(|i| row_values.f64_at(i) as f32));
            }
        }
    }
    // K 439-461: a prefix of the labels, padded with INVALID_LABEL.
    for j in 0..dim {
        values.push_f64(f64::from(labels.get(j).copied().unwrap_or(INVALID_LABEL)));
    }
    Ok(())
}

/// Output row `row`'s Example, read in place from buffer `buf`: after the
/// offline transforms a row's Example need not be in the buffer of the
/// same number (rows dropped, reordered, repeated), so cells name `buf`.
struct RowExample<'a> {
    view: ExampleView<'a>,
    buf: u32,
    row: usize,
}

impl<'a> RowExample<'a> {
    fn of(cx: &Ctx<'_, 'a>, row: usize, buf: u32) -> Result<Self, ExtractError> {
        let view = ExampleView::parse(cx.bufs[buf as usize], 0);
        let e = |e: crate::wire::DecodeError| ExtractError::from(e.within("example", Some(row))).at_row(row);
        Ok(Self { view: view.map_err(e)?, buf, row })
    }

    fn error(&self, e: crate::wire::DecodeError) -> ExtractError {
        ExtractError::from(e.within("example", Some(self.row))).at_row(self.row)
    }

    /// Calls `f` with the cell of every feature named `name`.
    fn named(&self, name: &[u8], mut f: impl FnMut(Cell) -> Result<(), ExtractError>) -> Result<(), ExtractError> {
        for entry in self.view.features() {
            let entry = entry.map_err(|e| self.error(e))?;
            if entry.name == name {
                f(self.cell(&entry))?;
            }
        }
        Ok(())
    }

    fn cell(&self, entry: &crate::view::NamedFeatureEntry<'_>) -> Cell {
        let (body, at) = entry.feature.unwrap_or((&[], 0));
        Cell { buf: self.buf, start: at as u32, end: (at + body.len()) as u32, index: entry.index as u32, list: 0 }
    }
}

/// Appends up to `dim` floats of the Feature's float_list (none when it holds
/// another variant: Monolith reads `float_list()` of any Feature); returns how many.
fn floats(
    cx: &Ctx<'_, '_>,
    source: usize,
    row: usize,
    cell: Cell,
    out: &mut Values,
    dim: usize,
) -> Result<usize, ExtractError> {
    let (f, cell) = cx.parse(source, row, cell)?;
    let mut n = 0;
    if f.kind() == Some(FeatureKind::FloatList) {
        f.float_runs(|run| {
            for c in run.chunks_exact(4) {
                if n < dim {
                    out.push_f64(f64::from(crate::view::le_f32(c)));
                    n += 1;
                }
            }
        })
        .map_err(|e| cx.locate(e, source, row, cell))?;
    }
    Ok(n)
}

/// The first float of the Feature's float_list, if it has one.
fn first_float(cx: &Ctx<'_, '_>, source: usize, row: usize, cell: Cell) -> Result<Option<f32>, ExtractError> {
    let mut one = Values::new(DataType::F32);
    floats(cx, source, row, cell, &mut one, 1)?;
    Ok((!one.is_empty()).then(|| one.f64_at(0) as f32))
}
